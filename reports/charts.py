"""The report's charts: one function per PNG, each drawn from the run's tables only.

Every chart has the same fixed size and DPI and is saved without metadata (no software version,
no timestamp), so the same run always gives byte-identical files. Figures are built with
``matplotlib.figure.Figure`` (the Agg canvas) and never through pyplot, so rendering a report
changes no global matplotlib state of the caller.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib import patches, ticker
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.text import Annotation, Text

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


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "*", "p")
LINESTYLES = ("-", "--", "-.", ":")
SHADES = (0.0, 0.45, -0.35, 0.2, -0.55, 0.6)
"""Lightness steps of a family's hue for its variants: >0 towards white, <0 towards black."""


@dataclass(frozen=True)
class Style:
    """How one strategy is drawn: colour for every chart, marker and line style where lines or
    points share an axis, so that no two series look alike even when colours run short."""

    color: str
    marker: str
    linestyle: str


def family(strategy: str) -> str:
    """The agent a strategy belongs to: its name before a variant (``:``) or settings (``@``)."""
    return re.split(r"[:@]", strategy, maxsplit=1)[0]


def styles(strategies: Sequence[str]) -> dict[str, Style]:
    """A distinct (colour, marker, line style) per strategy, the same whatever order it is given in.

    One hue per family (tab10 without its grey, then tab20's light shades once the families
    outnumber those), a lighter or darker shade of it per variant (in name order), a line style per
    variant and a marker per family (two families of like hue still differ); ``none`` is always
    dark grey, dashed, a diamond. Where a colour repeats (more than 18 families, or more than six
    variants of one), the marker and line style still tell the series apart: the triple is unique.
    """
    names = sorted(dict.fromkeys(strategies))
    tab10 = [h for h in (matplotlib.colormaps["tab10"](i) for i in range(10)) if to_hex(h) != "#7f7f7f"]
    tab20 = matplotlib.colormaps["tab20"]
    hues = [*tab10, *(h for h in (tab20(i) for i in range(1, 20, 2)) if to_hex(h) != "#c7c7c7")]
    families = list(dict.fromkeys(family(s) for s in names if s != BASELINE))
    out: dict[str, Style] = {}
    used: set[tuple[str, str, str]] = {(BASELINE_COLOR, "D", "--")}
    for fi, fam in enumerate(families):
        base = np.array(hues[fi % len(hues)][:3])
        variants = [s for s in names if s != BASELINE and family(s) == fam]
        for vi, s in enumerate(variants):
            shade = SHADES[vi % len(SHADES)]
            rgb = base + (1 - base) * shade if shade >= 0 else base * (1 + shade)
            color = to_hex(np.clip(rgb, 0, 1))
            ls = LINESTYLES[vi % len(LINESTYLES)]
            marker = MARKERS[(fi + vi // len(SHADES)) % len(MARKERS)]
            k = 0
            while (color, marker, ls) in used:  # a repeat: the next marker (then line style) still free
                k += 1
                marker = MARKERS[(MARKERS.index(marker) + 1) % len(MARKERS)]
                ls = LINESTYLES[(LINESTYLES.index(ls) + k // len(MARKERS)) % len(LINESTYLES)]
            used.add((color, marker, ls))
            out[s] = Style(color, marker, ls)
    if BASELINE in names:
        out[BASELINE] = Style(BASELINE_COLOR, "D", "--")
    return out


class Palette(dict[str, str]):
    """Strategy → colour (what bar charts need), keeping each strategy's full ``Style``."""

    def __init__(self, styles: Mapping[str, Style]) -> None:
        super().__init__({s: st.color for s, st in styles.items()})
        self.styles = dict(styles)


def style_of(colors: Mapping[str, str], strategy: str) -> Style:
    """The strategy's style from a ``Palette``; a plain colour mapping gives circles and solid lines."""
    found = getattr(colors, "styles", {}).get(strategy)
    return found or Style(colors.get(strategy, "#333333"), "o", "-")


def palette(strategies: Sequence[str]) -> Palette:
    """One style per strategy, the same in every chart of a run; the baseline is always dark grey."""
    return Palette(styles(strategies))


@contextmanager
def _figure(path: Path, rect: tuple[float, float, float, float] | None = None) -> Iterator[tuple[Figure, Axes]]:
    """A chart's figure, laid out (within ``rect``, figure fractions, when a footer needs room) and saved."""
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=SIZE_INCHES, dpi=DPI)
        FigureCanvasAgg(fig)  # a renderer to measure text with (label placement), as savefig uses
        ax = fig.add_subplot()
        yield fig, ax
        fig.tight_layout(rect=rect)
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
                       path: Path, *, window: int | None = None, recorded: Sequence[tuple[int, str]] = (),
                       own: str | None = None) -> Path:
    """The sawtooth: the prompt sent at each agent call of one trace, one line per strategy.

    On a recorded session, ``own`` (the re-implementation of the agent that recorded it) is drawn
    thicker and labelled, and ``recorded`` ((call, trigger) of each compaction the agent itself made)
    is marked by a band at that call: whether the replay of the agent's own strategy compacts where
    the agent did is the first thing a reader of a real session asks."""
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
            base, mine = s == BASELINE, s == own
            st = style_of(colors, s)
            ax.plot(r.call, r.prompt_tokens, color=st.color, label=f"{s} (the agent's own)" if mine else s,
                    lw=2.6 if mine else 2.2 if base else 1.4, ls="-" if mine else st.linestyle,
                    zorder=4 if mine else 3 if base else 2, marker=st.marker, markevery=max(1, len(r) // 20),
                    markersize=4)
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
        for k, (call, trigger) in enumerate(recorded):
            ax.axvspan(call - 0.5, call + 0.5, color="#c0392b", alpha=0.18, lw=0, zorder=1,
                       label="recorded compaction" if k == 0 else None)
            ax.annotate(f"recorded ({trigger})", (call, 1.0), xycoords=("data", "axes fraction"), xytext=(3, -3),
                        textcoords="offset points", rotation=90, ha="left", va="top", fontsize=7.5, color="#8e2a1f")
        if window:
            ax.axhline(window, color="#c0392b", lw=1, ls=":")
            ax.annotate(f"context window {window / 1000:,.0f}K", (0, window), xytext=(4, 4),
                        textcoords="offset points", color="#c0392b", fontsize=8, zorder=5,  # boxed: legible
                        bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85})
        ax.set_title(title)
        ax.set_xlabel("agent call")
        ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
        ax.set_ylabel("prompt tokens sent")
        _kilo(ax)
        legend_outside(ax, title="red × = overflow", title_fontsize=8)
    return path


def legend_outside(ax: Axes, **kwargs: object) -> None:
    """A legend right of the axes that names every series: more columns once one column would run
    past the figure's height (about 24 entries at the legend's font size), never a cut-off list."""
    n = len(ax.get_legend_handles_labels()[1])
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), ncols=max(1, -(-n // 24)), **kwargs)


def _free(box: np.ndarray, taken: list[tuple[float, float, float, float]]) -> np.ndarray:
    """For candidate boxes (K × 4: x0, y0, x1, y1) whether each misses every taken box."""
    if not taken:
        return np.ones(len(box), bool)
    t = np.asarray(taken)
    miss = ((box[:, None, 2] < t[None, :, 0]) | (box[:, None, 0] > t[None, :, 2])
            | (box[:, None, 3] < t[None, :, 1]) | (box[:, None, 1] > t[None, :, 3]))
    return miss.all(axis=1)


SPOT_CHUNK = 256
"""Candidates tested against the taken boxes at a time (nearest first): the first free one is the
answer, and it is almost always among the first few, so testing all ~13,000 was wasted work."""


def _first_free(box: np.ndarray, inside: np.ndarray, taken: list[tuple[float, float, float, float]]) -> int:
    """The first candidate (in order) inside the frame that misses every taken box, else 0 (nowhere
    free, not seen in practice: beside the point): ``flatnonzero(inside & _free(box, taken))[0]``, in
    chunks of candidates, stopping at the first chunk that holds one."""
    candidates = np.flatnonzero(inside)
    for start in range(0, len(candidates), SPOT_CHUNK):
        chunk = candidates[start:start + SPOT_CHUNK]
        ok = chunk[_free(box[chunk], taken)]
        if len(ok):
            return int(ok[0])
    return 0


LEADER_PX = 45.0
"""A label further than this from its point counts as far; more than ``FAR_LABELS`` far labels and
the chart numbers its points instead, with a key beside the plot (a tangle of leaders is unreadable)."""
FAR_LABELS = 4
KEY_LINES = 44


def _spots(ax: Axes, points: np.ndarray, labels: Sequence[str], taken: list[tuple[float, float, float, float]]
           ) -> list[tuple[float, float, bool]]:
    """Greedy placement in display pixels: per label (in the given order), its offset from the point
    and whether it needs a leader. ``taken`` gains every box placed."""
    renderer = ax.get_figure().canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    pad = 2.0
    near = np.array([(8, -6), (-8, -6), (8, 6), (-8, 6), (8, 0), (-8, 0)], float)
    xs, ys = np.arange(-frame.width, frame.width, 12.0), np.arange(-frame.height, frame.height, 7.0)
    grid = np.column_stack([np.repeat(xs, len(ys)), np.tile(ys, len(xs))]).astype(float)  # each x with every y
    offsets = np.vstack([near, grid[np.argsort(np.hypot(grid[:, 0], grid[:, 1] * 1.6), kind="stable")]])
    left = offsets[:, 0] < 0
    out: list[tuple[float, float, bool]] = []
    for (px, py), label in zip(points.tolist(), labels, strict=True):
        probe = ax.text(0, 0, label, fontsize=8)
        extent = probe.get_window_extent(renderer)
        probe.remove()
        width, height = extent.width + 2 * pad, extent.height + 2 * pad
        x0 = px + offsets[:, 0] - np.where(left, extent.width, 0) - pad
        box = np.column_stack([x0, py + offsets[:, 1] - height / 2, x0 + width, py + offsets[:, 1] + height / 2])
        inside = (box[:, 0] >= frame.x0) & (box[:, 2] <= frame.x1) & (box[:, 1] >= frame.y0) & (box[:, 3] <= frame.y1)
        pick = _first_free(box, inside, taken)
        taken.append(tuple(box[pick]))
        out.append((float(offsets[pick][0]), float(offsets[pick][1]), pick >= len(near)))
    return out


def _place_labels(ax: Axes, xs: Sequence[float], ys: Sequence[float], labels: Sequence[str],
                  avoid: Sequence[Text] = ()) -> list[Annotation]:
    """Label points without overlaps, greedily: each label takes the nearest free spot.

    Call it once the chart is otherwise complete: it lays the figure out first, and its labels stay
    out of the layout, so the final ``tight_layout`` moves nothing. Sizes are measured with the
    figure's renderer, not guessed. Obstacles are the labels already placed, every point, the
    ``avoid`` texts and the legend; candidates run from beside the point out over the whole plot,
    nearest first, and a label set away from its point gets a leader line. Where too many labels
    would sit far from their points (a crowded corner), points get numbers and a key beside the
    plot names each (every label is still shown). Returns the annotations on the plot.
    """
    fig = ax.get_figure()
    fig.tight_layout()
    renderer = fig.canvas.get_renderer()
    legend = ax.get_legend()
    best = legend is not None and getattr(legend, "_loc", None) == 0  # matplotlib's code for "best"

    def pin() -> None:  # where "best" puts it now: drawn later, "best" would flee the labels
        if best:
            legend.set_loc("best")
            box = legend.get_window_extent(renderer)
            legend.set_loc(tuple(ax.transAxes.inverted().transform((box.x0, box.y0))))

    pin()
    order = sorted(range(len(labels)), key=lambda i: (-float(ys[i]), float(xs[i])))

    def obstacles() -> tuple[np.ndarray, list[tuple[float, float, float, float]]]:
        points = ax.transData.transform(np.column_stack([np.asarray(xs, float)[order],
                                                         np.asarray(ys, float)[order]])) \
            if order else np.zeros((0, 2))
        taken = [*(tuple(t.get_window_extent(renderer).extents) for t in avoid),
                 *((px - 6, py - 6, px + 6, py + 6) for px, py in points.tolist())]
        if legend is not None:
            taken.append(tuple(legend.get_window_extent(renderer).extents))
        return points, taken

    texts = [labels[i] for i in order]
    points, taken = obstacles()
    spots = _spots(ax, points, texts, taken)
    far = sum(1 for (dx, dy, leader) in spots if leader and np.hypot(dx, dy) > LEADER_PX)
    if far > FAR_LABELS:
        numbers = {i: n for n, i in enumerate(sorted(range(len(labels)), key=lambda i: float(xs[i])), start=1)}
        key = [f"{numbers[i]:>2}  {labels[i]}" for i in sorted(numbers, key=numbers.get)]
        columns = [key[c:c + KEY_LINES] for c in range(0, len(key), KEY_LINES)]
        offset = 6.0
        for lines in columns:
            t = ax.annotate("\n".join(lines), (1.0, 1.0), xycoords="axes fraction", xytext=(offset, 0),
                            textcoords="offset points", va="top", ha="left", fontsize=7, color="#333333",
                            linespacing=1.15)
            offset += t.get_window_extent(renderer).width * 72 / fig.dpi + 8
        fig.tight_layout()
        pin()  # the plot got narrower: place the legend again
        texts = [str(numbers[i]) for i in order]
        points, taken = obstacles()
        spots = _spots(ax, points, texts, taken)
    out = []
    for (px, py), text, (dx, dy, leader) in zip(points.tolist(), texts, spots, strict=True):
        ann = ax.annotate(text, ax.transData.inverted().transform((px, py)), xytext=(dx, dy),
                          textcoords="offset pixels", fontsize=8, color="#222222",
                          ha="right" if dx < 0 else "left", va="center", zorder=4,
                          arrowprops={"arrowstyle": "-", "color": "#8a8a8a", "lw": 0.6, "shrinkA": 0,
                                      "shrinkB": 4} if leader else None)
        ann.set_in_layout(False)
        out.append(ann)
    return out


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
        corners = [ax.text(fx, fy, label, transform=ax.transAxes, ha=ha, va=va, fontsize=8.5, color="#666666",
                           style="italic", zorder=1) for fx, fy, label, ha, va in corner_labels]
        ax.axhline(1, color="#888888", lw=0.8)
        ax.axvline(0, color="#888888", lw=0.8)
        for s, xi, yi in zip(have.strategy, x, ratio, strict=True):
            st = style_of(colors, s)
            ax.scatter(xi, yi, color=st.color, marker=st.marker, s=80 if s == BASELINE else 50, edgecolor="white",
                       lw=0.8, zorder=3)
        ax.set_title(title)
        ax.set_xlabel("input-token saving vs none  →  fewer tokens")
        ax.set_ylabel("cost vs none (log scale)  ↑ more dollars")
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:+.0f}%"))
        ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 7.5)))
        ax.yaxis.set_minor_locator(ticker.NullLocator())
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v - 1:+.0%}" if abs(v - 1) > 1e-9 else "±0%"))
        _place_labels(ax, x, ratio, have.strategy.tolist(), corners)
    return path


def cost_with_without_cache(totals: pd.DataFrame, colors: Mapping[str, str], path: Path) -> Path:
    """Dollars with the prompt cache, one bar per strategy, and what the cache saved it, in words.

    The no-cache figure is text, not a bar: drawn, ``none``'s no-cache bar (some 30× the cheapest
    strategy's cached cost on ``make bench``) set the axis and left the bars of interest as slivers.
    A cached bar still far beyond the rest is cut at the axis' edge and says so."""
    t = totals.sort_values("cost", ascending=True).iloc[::-1]  # cheapest at the top
    with _figure(path) as (_, ax):
        title = "Cost with the prompt cache, and what the cache saved (cheapest first)"
        if t.empty:
            _empty(ax, title, "no finished task")
            return path
        y = np.arange(len(t))
        cost = t.cost.astype(float).to_numpy()
        lim = float(np.nanmax(cost)) if len(cost) else 1.0
        if len(cost) >= 4 and lim > 2.5 * float(np.nanquantile(cost, 0.75)):  # an outlier: cut, not squeeze
            lim = 2.5 * float(np.nanquantile(cost, 0.75))
        lim = lim or 1.0
        ax.barh(y, np.minimum(cost, lim), height=0.62, color=[colors[s] for s in t.strategy])
        for yi, c, nc in zip(y, cost, t.cost_no_cache.astype(float), strict=True):
            saved = f", {1 - c / nc:.0%} saved" if nc > 0 and np.isfinite(nc) else ""
            cut = " (bar cut)" if c > lim else ""
            ax.text(min(c, lim) + lim * 0.01, yi, rf"\${c:,.2f}{cut}   ·  \${nc:,.2f} without the cache{saved}",
                    va="center", fontsize=7.5)
        ax.set_yticks(y, t.strategy)
        ax.set_xlim(0, lim * 1.75)
        ax.grid(axis="y", visible=False)
        ax.set_title(title)
        ax.set_xlabel("USD over all traces with the prompt cache; the label adds the cost had every prompt token "
                      "been billed at the plain input rate")
    return path


def summary_sizes(summaries: pd.DataFrame, strategies: Sequence[str], colors: Mapping[str, str],
                  path: Path, exact: pd.DataFrame | None = None) -> Path:
    """Distribution of summary lengths (output tokens) per strategy that wrote summaries.

    ``exact`` (``bench.scoring.stats.summary_sizes``'s table) gives each strategy's n and median when
    ``summaries`` holds only a sample of its points (``reports.summarystats``)."""
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
            n, median = len(d), np.median(d)
            if exact is not None and s in set(exact.strategy):
                row = exact[exact.strategy == s].iloc[0]
                n, median = int(row["n"]), float(row["p50"])
            ax.text(1.01, i, f"n={n}  median {median:,.0f}", transform=ax.get_yaxis_transform(),
                    va="center", fontsize=7.5, color="#555555")
        ax.set_yticks(range(1, len(present) + 1), present)
        ax.set_xlim(left=0)
        _kilo(ax, "x")
        ax.grid(axis="y", visible=False)
        ax.set_title(title)
        ax.set_xlabel("tokens")
    return path


def retention_by_age_grid(grid, path: Path) -> Path:
    """``retention_by_age`` drawn from its grid (``reports.probestats.age_grid``: counts, not rows)."""
    with _figure(path) as (fig, ax):
        title = "Needle retention at the end of the trace, by needle age"
        if grid.empty:
            _empty(ax, title, "no needle probes in this run")
            return path
        rows, cols, verbatim, by_ref = grid.rows, grid.cols, grid.verbatim, grid.by_ref
        image = ax.imshow(verbatim, cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
        for i in range(len(rows)):
            for j in range(len(cols)):
                if np.isnan(verbatim[i, j]):
                    continue
                ref = f"  +{by_ref[i, j]:.0%} ref" if by_ref[i, j] > 0 else ""
                dark = 0.25 < verbatim[i, j] < 0.8
                ax.text(j, i, f"{verbatim[i, j]:.0%}{ref}", ha="center", va="center", fontsize=8,
                        color="#222222" if dark else "white")
        ax.set_xticks(range(len(cols)), [f"{c}\n(n={n})" for c, n in zip(cols, grid.counts, strict=True)])
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
