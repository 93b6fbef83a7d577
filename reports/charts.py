"""The report's charts: one function per PNG, each drawn from the run's tables only.

Every chart has the same fixed size and DPI and is saved without metadata (no software version,
no timestamp), so the same run always gives byte-identical files. Figures are built with
``matplotlib.figure.Figure`` (the Agg canvas) and never through pyplot, so rendering a report
changes no global matplotlib state of the caller.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib import patches, ticker
from matplotlib.axes import Axes
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

SIZE_INCHES = (10.0, 6.0)
DPI = 100
SIZE_PIXELS = (int(SIZE_INCHES[0] * DPI), int(SIZE_INCHES[1] * DPI))
_MPL = tuple(int(part) for part in matplotlib.__version__.split(".")[:2])
HORIZONTAL = {"orientation": "horizontal"} if _MPL >= (3, 10) else {"vert": False}
"""``vert=`` is deprecated from matplotlib 3.11; ``orientation=`` only exists from 3.10."""
BASELINE = "none"
BASELINE_COLOR = "#4a4a4a"
AGE_EDGES = (0, 2_000, 8_000, 32_000, 128_000, np.inf)
AGE_LABELS = ("< 2K", "2K–8K", "8K–32K", "32K–128K", "≥ 128K")
STYLE = {
    "font.size": 9, "axes.titlesize": 12, "axes.titleweight": "bold", "axes.titlelocation": "left",
    "axes.spines.top": False, "axes.spines.right": False, "axes.edgecolor": "#9a9a9a",
    "axes.grid": True, "grid.color": "#e6e6e6", "grid.linewidth": 0.8, "axes.axisbelow": True,
    "xtick.color": "#444444", "ytick.color": "#444444", "axes.labelcolor": "#333333",
    "legend.frameon": False, "legend.fontsize": 8, "svg.hashsalt": "compaction-bench",
}


def palette(strategies: Sequence[str]) -> dict[str, str]:
    """One colour per strategy, the same in every chart; the baseline is always dark grey."""
    others = [s for s in strategies if s != BASELINE]
    if len(others) <= 10:
        hues = [matplotlib.colormaps["tab10"](i) for i in range(10)]
    else:  # the dark shade of every hue first: tab20 pairs a dark and a light shade of each
        tab20 = matplotlib.colormaps["tab20"]
        hues = [tab20(i) for i in (*range(0, 20, 2), *range(1, 20, 2))]
    hues = [h for h in hues if to_hex(h) != "#7f7f7f"]  # tab10 grey would read as the baseline
    colors = {s: to_hex(hues[i % len(hues)]) for i, s in enumerate(others)}
    return {BASELINE: BASELINE_COLOR, **colors}


@contextmanager
def _figure(path: Path) -> Iterator[tuple[Figure, Axes]]:
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=SIZE_INCHES, dpi=DPI)
        ax = fig.add_subplot()
        yield fig, ax
        fig.tight_layout()
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fig.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None})
        tmp.replace(path)


def _empty(ax: Axes, title: str, note: str) -> None:
    ax.set_title(title)
    ax.text(0.5, 0.5, note, ha="center", va="center", transform=ax.transAxes, color="#666666", fontsize=11)
    ax.set_axis_off()


def _kilo(ax: Axes, axis: str = "y") -> None:
    def kilo(v: float, _: object) -> str:
        return (f"{v / 1000:,.1f}".rstrip("0").rstrip(".") + "K") if abs(v) >= 1000 else f"{v:,.0f}"

    fmt = ticker.FuncFormatter(kilo)
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(fmt)


def context_over_calls(calls: pd.DataFrame, trace: str, strategies: Sequence[str], colors: Mapping[str, str],
                       path: Path, *, window: int | None = None) -> Path:
    """The sawtooth: the prompt sent at each agent call of one trace, one line per strategy."""
    rows = calls[(calls.trace == trace) & (calls.kind == "agent") & calls.strategy.isin(strategies)]
    with _figure(path) as (_, ax):
        title = f"Context sent per call — trace {trace}"
        if rows.empty:
            _empty(ax, title, "no agent calls recorded for this trace")
            return path
        for s in strategies:
            r = rows[rows.strategy == s].sort_values("call")
            if r.empty:
                continue
            base = s == BASELINE
            ax.plot(r.call, r.prompt_tokens, color=colors[s], label=s, lw=2.2 if base else 1.4,
                    ls="--" if base else "-", zorder=3 if base else 2, marker="o" if len(r) <= 40 else None,
                    markersize=3.5)
            over = r[r.overflow.astype(bool)]
            ax.scatter(over.call, over.prompt_tokens, marker="x", color="#c0392b", s=36, zorder=4)
        # A baseline that never compacts can run to many times the window and flatten every
        # other line: clip the axis just above the window and the compacting strategies.
        others = rows[rows.strategy != BASELINE].prompt_tokens
        ceiling = 1.2 * max(window or 0, int(others.max()) if len(others) else 0)
        if ceiling and rows.prompt_tokens.max() > ceiling * 1.05:
            ax.set_ylim(0, ceiling)
            ax.annotate(f"off the chart: up to {rows.prompt_tokens.max() / 1000:,.0f}K", (1.0, 1.0),
                        xycoords="axes fraction", xytext=(-4, -4), textcoords="offset points", ha="right", va="top",
                        fontsize=8, color="#c0392b")
        else:
            ax.set_ylim(bottom=0)
        if window:
            ax.axhline(window, color="#c0392b", lw=1, ls=":")
            ax.annotate(f"context window {window / 1000:,.0f}K", (0, window), xytext=(4, 4),
                        textcoords="offset points", color="#c0392b", fontsize=8)
        ax.set_title(title)
        ax.set_xlabel("agent call")
        ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
        ax.set_ylabel("prompt tokens sent")
        _kilo(ax)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), title="red × = overflow", title_fontsize=8)
    return path


def _place_labels(ax: Axes, xs: Sequence[float], ys: Sequence[float], labels: Sequence[str],
                  avoid: Sequence[tuple[float, float, float, float]] = ()) -> None:
    """Label points without overlaps: try offsets from near to far, keep the first free one.

    Labels, points and the ``avoid`` boxes (display pixels) are obstacles; a label moved away
    from its point gets a leader line.
    """
    near = [(8, -6), (-8, -6), (8, 6), (-8, 6)]
    far = [(dx, dy) for r in (18, 30, 44, 60, 78) for dy in (r, -r) for dx in (10, -10, 40, -40)]
    points = ax.transData.transform(np.column_stack([xs, ys]))
    placed = [*avoid, *((px - 6, py - 6, px + 6, py + 6) for px, py in points.tolist())]
    frame = ax.get_window_extent()
    for (px, py), label in sorted(zip(points.tolist(), labels, strict=True), key=lambda p: (-p[0][1], p[0][0])):
        width, height = 6.2 * len(label), 12.0
        for dx, dy in (*near, *far):
            x0 = px + dx if dx > 0 else px + dx - width
            box = (x0, py + dy - height / 2, x0 + width, py + dy + height / 2)
            inside = frame.x0 <= box[0] and box[2] <= frame.x1 and frame.y0 <= box[1] and box[3] <= frame.y1
            if inside and all(box[2] < b[0] or box[0] > b[2] or box[3] < b[1] or box[1] > b[3] for b in placed):
                break
        placed.append(box)
        ax.annotate(label, ax.transData.inverted().transform((px, py)), xytext=(dx, dy), textcoords="offset pixels",
                    fontsize=8, color="#222222", ha="left" if dx > 0 else "right", va="center", zorder=4,
                    arrowprops=None if (dx, dy) in near else
                    {"arrowstyle": "-", "color": "#8a8a8a", "lw": 0.6, "shrinkA": 0, "shrinkB": 4})


def cost_vs_saving(totals: pd.DataFrame, colors: Mapping[str, str], path: Path) -> Path:
    """Token saving against cost change, both relative to ``none``: the false-economy quadrant.

    Cost is on a log scale of its ratio to ``none`` so that halving and doubling sit at equal
    distances and one outlier does not flatten every other strategy onto the axis. The axes
    zoom on the points but always keep both sides of zero, so every quadrant stays in view.
    """
    with _figure(path) as (fig, ax):
        title = "Tokens saved vs dollars saved (relative to never compacting)"
        have = totals.dropna(subset=["saving_vs_none", "cost_vs_none"]) if "cost_vs_none" in totals else totals[:0]
        if have.empty:
            _empty(ax, title, "no `none` baseline in this run: nothing to compare against")
            return path
        x = have.saving_vs_none.to_numpy() * 100
        ratio = np.clip(have.cost_vs_none.to_numpy() + 1, 1e-3, None)
        pad_x = max(4.0, float(np.ptp(x)) * 0.12)
        left, right = min(float(x.min()) - pad_x, -pad_x), max(float(x.max()) + pad_x, pad_x)
        right = min(right, 100 + pad_x)
        log_r = np.log(ratio)
        pad_y = max(0.12, float(np.ptp(log_r)) * 0.12)
        bottom, top = np.exp(min(float(log_r.min()) - pad_y, -pad_y)), np.exp(max(float(log_r.max()) + pad_y, pad_y))
        ax.set_yscale("log")
        ax.set_xlim(left, right)
        ax.set_ylim(bottom, top)
        quadrants = [(0, 1, right, top - 1, "#fbe3e0"), (0, bottom, right, 1 - bottom, "#e2f3e5"),
                     (left, 1, -left, top - 1, "#eeeeee"), (left, bottom, -left, 1 - bottom, "#e3eef9")]
        for qx, qy, w, h, color in quadrants:
            ax.add_patch(patches.Rectangle((qx, qy), w, h, color=color, zorder=0, lw=0))
        corner_labels = [(0.985, 0.975, "false economy: fewer tokens, more dollars", "right", "top"),
                         (0.985, 0.025, "saves tokens and dollars", "right", "bottom")]
        fig.tight_layout()
        avoid = []
        for fx, fy, label, ha, va in corner_labels:
            ax.text(fx, fy, label, transform=ax.transAxes, ha=ha, va=va, fontsize=8.5, color="#666666",
                    style="italic", zorder=1)
            px, py = ax.transAxes.transform((fx, fy))
            width = 6.0 * len(label)
            avoid.append((px - width, py - 14 if va == "top" else py, px, py if va == "top" else py + 14))
        ax.axhline(1, color="#888888", lw=0.8)
        ax.axvline(0, color="#888888", lw=0.8)
        for s, xi, yi in zip(have.strategy, x, ratio, strict=True):
            ax.scatter(xi, yi, color=colors[s], s=80 if s == BASELINE else 50, edgecolor="white", lw=0.8, zorder=3)
        ax.set_title(title)
        ax.set_xlabel("input-token saving vs none  →  fewer tokens")
        ax.set_ylabel("cost vs none (log scale)  ↑ more dollars")
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:+.0f}%"))
        ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 7.5)))
        ax.yaxis.set_minor_locator(ticker.NullLocator())
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v - 1:+.0%}" if abs(v - 1) > 1e-9 else "±0%"))
        _place_labels(ax, x, ratio, have.strategy.tolist(), avoid)
    return path


def cost_with_without_cache(totals: pd.DataFrame, colors: Mapping[str, str], path: Path) -> Path:
    """Dollars with the prompt cache beside dollars had every prompt token been billed in full."""
    t = totals.sort_values("cost", ascending=False)
    with _figure(path) as (_, ax):
        y = np.arange(len(t))
        bar_colors = [colors[s] for s in t.strategy]
        ax.barh(y + 0.2, t.cost_no_cache, height=0.38, color=bar_colors, alpha=0.3)
        ax.barh(y - 0.2, t.cost, height=0.38, color=bar_colors)
        top = float(t.cost_no_cache.max() or 1.0)
        for yi, (c, nc) in zip(y, zip(t.cost, t.cost_no_cache, strict=True), strict=True):
            ax.text(c + top * 0.01, yi - 0.2, f"${c:,.2f}", va="center", fontsize=7.5)
            ax.text(nc + top * 0.01, yi + 0.2, f"${nc:,.2f}", va="center", fontsize=7.5, color="#777777")
        ax.set_yticks(y, t.strategy)
        ax.set_xlim(0, top * 1.15)
        ax.grid(axis="y", visible=False)
        ax.set_title("Cost with the prompt cache (solid) and without it (pale), cheapest first")
        ax.set_xlabel("USD over all traces; pale = every prompt token billed at the plain input rate")
    return path


def summary_sizes(summaries: pd.DataFrame, strategies: Sequence[str], colors: Mapping[str, str],
                  path: Path) -> Path:
    """Distribution of summary lengths (output tokens) per strategy that wrote summaries."""
    with _figure(path) as (_, ax):
        title = "Summary sizes (output tokens per summary)"
        present = [s for s in strategies if not summaries.empty and (summaries.strategy == s).any()]
        if not present:
            _empty(ax, title, "no strategy wrote a summary in this run")
            return path
        present = present[::-1]
        data = [summaries.loc[summaries.strategy == s, "tokens"].to_numpy() for s in present]
        ax.boxplot(data, **HORIZONTAL, widths=0.55, showfliers=False, medianprops={"color": "#222222"},
                   boxprops={"color": "#888888"}, whiskerprops={"color": "#888888"}, capprops={"color": "#888888"})
        jitter = np.random.default_rng(0)
        for i, (s, d) in enumerate(zip(present, data, strict=True), start=1):
            ax.scatter(d, i + jitter.uniform(-0.18, 0.18, len(d)), s=12, color=colors[s], alpha=0.75, zorder=3)
            ax.text(1.01, i, f"n={len(d)}  median {np.median(d):,.0f}", transform=ax.get_yaxis_transform(),
                    va="center", fontsize=7.5, color="#555555")
        ax.set_yticks(range(1, len(present) + 1), present)
        ax.set_xlim(left=0)
        _kilo(ax, "x")
        ax.grid(axis="y", visible=False)
        ax.set_title(title)
        ax.set_xlabel("tokens")
    return path


def retention_by_age(probes: pd.DataFrame, strategies: Sequence[str], path: Path) -> Path:
    """Share of needles still present verbatim when the trace ended, by strategy and needle age.

    Only end-of-trace probes (when the file says which): a strategy probed after each of its
    compactions would otherwise be scored on more, and different, rows than ``none``.
    """
    p = probes[probes.needle_kind != "control"] if "needle_kind" in probes else probes
    p = p[p.moment == "end"] if "moment" in p else p
    with _figure(path) as (fig, ax):
        title = "Needle retention at the end of the trace, by needle age"
        if p.empty:
            _empty(ax, title, "no needle probes in this run")
            return path
        bins = pd.cut(p.age_tokens, AGE_EDGES, labels=AGE_LABELS, right=False)
        cols = [c for c in AGE_LABELS if (bins == c).any()]
        rows = [s for s in strategies if (p.strategy == s).any()]
        verbatim = np.full((len(rows), len(cols)), np.nan)
        by_ref = np.zeros_like(verbatim)
        for i, s in enumerate(rows):
            for j, c in enumerate(cols):
                cell = p[(p.strategy == s) & (bins == c)]
                if len(cell):
                    verbatim[i, j] = (cell.cls == "retained-verbatim").mean()
                    by_ref[i, j] = (cell.cls == "recoverable-by-reference").mean()
        image = ax.imshow(verbatim, cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
        for i in range(len(rows)):
            for j in range(len(cols)):
                if np.isnan(verbatim[i, j]):
                    continue
                ref = f"  +{by_ref[i, j]:.0%} ref" if by_ref[i, j] > 0 else ""
                dark = 0.25 < verbatim[i, j] < 0.8
                ax.text(j, i, f"{verbatim[i, j]:.0%}{ref}", ha="center", va="center", fontsize=8,
                        color="#222222" if dark else "white")
        counts = [int((bins == c).sum()) for c in cols]
        ax.set_xticks(range(len(cols)), [f"{c}\n(n={n})" for c, n in zip(cols, counts, strict=True)])
        ax.set_yticks(range(len(rows)), rows)
        ax.grid(False)
        ax.set_xlabel("needle age when probed (tokens since it was stated)\n"
                      "colour and % = retained verbatim;  +x% ref = also recoverable through a path or command")
        ax.set_title(title)
        fig.colorbar(image, ax=ax, fraction=0.03, pad=0.02, format=ticker.PercentFormatter(1.0))
    return path


def cache_hit_rate(totals: pd.DataFrame, colors: Mapping[str, str], path: Path) -> Path:
    """Share of prompt tokens read from the cache, with the number of calls that broke the prefix."""
    t = totals.sort_values("cache_hit_rate")
    with _figure(path) as (_, ax):
        y = np.arange(len(t))
        ax.barh(y, t.cache_hit_rate, color=[colors[s] for s in t.strategy], height=0.6)
        for yi, (rate, breaks) in enumerate(zip(t.cache_hit_rate, t.prefix_breaks, strict=True)):
            ax.text(rate + 0.01, yi, f"{rate:.0%}   ({int(breaks)} prefix breaks)", va="center", fontsize=7.5)
        ax.set_yticks(y, t.strategy)
        ax.set_xlim(0, 1.22)
        ax.set_xticks(np.linspace(0, 1, 6))
        ax.xaxis.set_major_formatter(ticker.PercentFormatter(1.0))
        ax.grid(axis="y", visible=False)
        ax.set_title("Prompt-cache hit rate (share of prompt tokens read from the cache)")
        ax.set_xlabel("cache reads / prompt tokens, agent and summarizer calls")
    return path
