"""Charts of the scoring layer: paired intervals, retention classes and rounds, estimator ratios,
and the cost-against-retention chart of threshold sweeps.

Same conventions as ``reports.charts`` (fixed size, no metadata, no pyplot): one function per PNG.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import ticker
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from bench.decide.verdict import feasible_mask
from reports.charts import BASELINE, _empty, _figure, _place_labels, family, legend_outside, style_of
from reports.scoring import CLASSES, CLIFF, COMPARED_TITLES, DEFAULT, LOWER_IS_BETTER, Sweep, pareto_front

CLASS_COLORS = {"retained-verbatim": "#2e9e4f", "recovered-by-reread": "#b8a1d9", "recoverable-by-reference": "#7fb7e6",
                "stale": "#f0a030",
                "missing": "#d9534f"}
FRONT_COLOR = "#1a7f37"


CLIP_QUANTILE = 0.8
"""A relative panel's x-axis reaches 1.5× this quantile of the interval ends (when an outlier lies far
beyond): the strategies near the reference are what the chart is for, a +700% outlier squeezed them
into a line; an interval runs to the edge, and a mean beyond it is written there."""


def paired_ci(comparisons: pd.DataFrame, order: Sequence[str], path: Path, *, reference: str = BASELINE,
              runner_up: str | None = None) -> Path:
    """One panel per metric: each strategy's mean difference from ``reference`` with its 95% interval.

    The report passes the verdict's choice as ``reference`` (and its runner-up, drawn first and in
    bold): against ``none``, which overflows and keeps everything, every strategy was "significant"
    and the chart said nothing about the choice; against the choice, a grey interval is an equal
    alternative. Cost and tokens are relative to the reference's mean so the panels share a scale;
    retention in percentage points. Grey = the interval holds zero (not significant).
    """
    with _figure(path, rect=(0, 0.03, 1, 1)) as (fig, ax):  # room for the colour note at the foot
        title = ("Paired difference from never compacting" if reference == BASELINE else
                 f"Paired difference from the verdict's choice, {reference}") + " (mean over traces, 95% CI)"
        metrics = [m for m in COMPARED_TITLES if len(comparisons) and (comparisons.metric == m).any()]
        if not metrics:
            _empty(ax, title, f"no `{reference}` to pair with or too few traces to compare")
            return path
        ax.remove()
        axes = fig.subplots(1, len(metrics), sharey=True, squeeze=False)[0]
        present = set(comparisons.strategy)
        first = [runner_up] if runner_up in present else []
        rows = (first + [s for s in order if s in present and s not in first])[::-1]
        for a, metric in zip(axes, metrics, strict=True):
            c = comparisons[comparisons.metric == metric].set_index("strategy").reindex(rows)
            if metric == "retention":
                mid, low, high = c.mean_diff * 100, c.ci_low * 100, c.ci_high * 100
            else:  # relative to the reference: the mean ratio and its own resampled interval (never under −100%)
                mid = c.mean_diff * 100 / c.mean_baseline.abs().replace(0, np.nan)
                if "rel_low" in c:
                    low, high = c.rel_low * 100, c.rel_high * 100
                else:  # a comparisons table written before the ratio interval existed
                    low, high = (c.ci_low * 100 / c.mean_baseline.abs(), c.ci_high * 100 / c.mean_baseline.abs())
            ends = pd.concat([low, high]).dropna()
            lo_lim, hi_lim = (float(ends.min()), float(ends.max())) if len(ends) else (-1.0, 1.0)
            if metric != "retention" and len(ends) >= 4:
                cap = 1.5 * max(float(ends.abs().quantile(CLIP_QUANTILE)), 1.0)
                lo_lim, hi_lim = max(lo_lim, -cap), min(hi_lim, cap)
            pad = 0.06 * max(hi_lim - lo_lim, 1.0)
            lo_lim, hi_lim = min(lo_lim, 0.0) - pad, max(hi_lim, 0.0) + pad
            for y, s in enumerate(rows):
                if pd.isna(mid[s]):
                    continue
                verdict = c.verdict[s]
                good = (verdict == "lower") == LOWER_IS_BETTER[metric]
                color = "#9a9a9a" if verdict in ("not significant", "too few pairs") else (
                    "#1a7f37" if good else "#b42318")
                x0, x1, xm = (float(np.clip(v, lo_lim, hi_lim)) for v in (low[s], high[s], mid[s]))
                a.plot([x0, x1], [y, y], color=color, lw=3.2 if s == runner_up else 2.4, solid_capstyle="round")
                a.scatter(xm, y, color=color, s=36, zorder=3, edgecolor="white", lw=0.8)
                if mid[s] > hi_lim or mid[s] < lo_lim:  # the mean off the axis: written at the edge
                    edge = hi_lim if mid[s] > hi_lim else lo_lim
                    a.annotate(f"{mid[s]:+,.0f}%", (edge, y), xytext=(-3 if edge == hi_lim else 3, 0),
                               textcoords="offset points", ha="right" if edge == hi_lim else "left", va="center",
                               fontsize=7, color=color, bbox={"boxstyle": "round,pad=0.1", "fc": "white",
                                                              "ec": "none", "alpha": 0.85})
            a.set_xlim(lo_lim, hi_lim)
            a.axvline(0, color="#555555", lw=0.9)
            a.set_title(COMPARED_TITLES[metric], fontsize=10)
            unit = "pp" if metric == "retention" else "%"
            a.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _, u=unit: f"{v:+.0f}{u}"))
            a.xaxis.set_major_locator(ticker.MaxNLocator(nbins=4))  # a third of the width: fewer ticks
            a.grid(axis="y", visible=False)
            who = reference if reference == BASELINE else "the choice"  # a long spec overran the next panel
            a.set_xlabel(f"percentage points vs {who}" if metric == "retention" else f"% of {who}'s mean", fontsize=8)
        axes[0].set_yticks(range(len(rows)), [f"{s}  (runner-up)" if s == runner_up else s for s in rows])
        for label in axes[0].get_yticklabels():
            if label.get_text().endswith("(runner-up)"):
                label.set_fontweight("bold")
        axes[0].set_ylim(-0.6, len(rows) - 0.4)
        fig.suptitle(title, x=0.01, ha="left", fontsize=12, fontweight="bold")
        fig.text(0.99, 0.01, f"green: significantly better than {reference} · red: significantly worse · "
                 "grey: interval holds 0 (as good, on these traces)", ha="right", fontsize=8, color="#666666")
    return path


def retention_classes(overall: pd.DataFrame, order: Sequence[str], path: Path) -> Path:
    """Stacked shares of the four needle classes per strategy when the traces ended."""
    with _figure(path) as (_, ax):
        title = "What became of each needle by the end of the trace"
        rows = [s for s in order if s in set(overall.strategy)][::-1]
        if not rows:
            _empty(ax, title, "no needle probes in this run")
            return path
        o = overall.set_index("strategy").reindex(rows)
        left = np.zeros(len(rows))
        for cls in CLASSES:
            share = o[cls].fillna(0).to_numpy(dtype=float)
            ax.barh(range(len(rows)), share, left=left, color=CLASS_COLORS[cls], height=0.62, label=cls)
            for y, (x0, w) in enumerate(zip(left, share, strict=True)):
                if w >= 0.07:
                    ax.text(x0 + w / 2, y, f"{w:.0%}", ha="center", va="center", fontsize=8, color="white")
            left += share
        for y, s in enumerate(rows):
            ax.text(1.01, y, f"n={int(o.n[s])}", va="center", fontsize=8, color="#555555")
        ax.set_yticks(range(len(rows)), rows)
        ax.set_xlim(0, 1.08)
        ax.set_xticks(np.linspace(0, 1, 6))
        ax.xaxis.set_major_formatter(ticker.PercentFormatter(1.0))
        ax.grid(axis="y", visible=False)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=4)
        ax.set_title(title)
    return path


SMALL_MULTIPLES = 12
"""More lines than this on one axis are a tangle: one small panel per agent family instead."""
ROUNDS_SPREAD = 4
"""When one strategy compacts more than this many times as often as another (gemini-cli's 160 rounds
against a handful), a shared x-axis squeezes the others into a smear at its left edge: panels then,
each with its own x-axis."""


def _round_lines(ax: Axes, rows: pd.DataFrame, colors: Mapping[str, str], *, label: Callable[[str], str]) -> int:
    """Each strategy's retention by round on ``ax`` (its style), its cliff ringed; the last round."""
    top = 1
    for _, r in rows.iterrows():
        rounds = sorted(r.retention_by_round.items())
        xs, ys = [k for k, _ in rounds], [v for _, v in rounds]
        top = max(top, *xs)
        st = style_of(colors, r.strategy)
        ax.plot(xs, ys, marker=st.marker, color=st.color, ls=st.linestyle, lw=1.6, markersize=4.5,
                label=label(r.strategy))
        if not pd.isna(r.cliff_round):
            ax.scatter([r.cliff_round], [r.retention_by_round[int(r.cliff_round)]], s=120, facecolor="none",
                       edgecolor="#b42318", lw=1.5, zorder=4)
    ax.axhline(CLIFF, color="#b42318", lw=1, ls=":")
    ax.set_ylim(-0.03, 1.05)
    ax.yaxis.set_major_formatter(ticker.PercentFormatter(1.0))
    return top


def retention_by_round(cliffs: pd.DataFrame, colors: Mapping[str, str], path: Path) -> Path:
    """Retention at each compaction round, with the 50% cliff line and each strategy's cliff marked.

    Up to ``SMALL_MULTIPLES`` strategies share one plot; beyond, one panel per family (the
    variants of one agent together, each in its own style), so no line hides another.
    """
    with _figure(path) as (fig, ax):
        title = "Retention after each compaction round (the cliff: first round under 50%)"
        have = cliffs[cliffs.rounds.fillna(0) > 0] if len(cliffs) else cliffs
        if have.empty:
            _empty(ax, title, "no strategy compacted while needles were probed")
            return path
        last = have.retention_by_round.map(lambda r: max(r, default=1))
        if len(have) > SMALL_MULTIPLES or (len(have) > 1 and last.max() > ROUNDS_SPREAD * max(1, last.min())):
            _round_panels(fig, ax, have, colors, title)
            return path
        top = _round_lines(ax, have, colors, label=str)
        ax.annotate("cliff 50%", (0, CLIFF), xycoords=("axes fraction", "data"), xytext=(4, 4),
                    textcoords="offset points", fontsize=8, color="#b42318")
        ax.set_xlim(0.5, top + 0.5)
        ax.set_xticks(range(1, top + 1) if top <= 20 else ticker.MaxNLocator(integer=True).tick_values(1, top))
        ax.set_xlabel("compaction round (probed right after the strategy compacted)")
        ax.set_ylabel("share of stated needles retained verbatim")
        legend_outside(ax, title="red ring = cliff", title_fontsize=8)
        ax.set_title(title)
    return path


def _round_panels(fig: Figure, ax: Axes, have: pd.DataFrame, colors: Mapping[str, str], title: str) -> None:
    """Small multiples: one panel per family, each panel's legend naming its variants.

    The y-axis (share retained) is shared; each panel has its own x-axis, from round 1 to its own
    last round: a shared 0–160 (gemini-cli compacts every few calls) left the panels of the agents
    that compact a handful of times as smears at x≈0."""
    families = sorted(dict.fromkeys(family(s) for s in have.strategy))
    ncols = int(np.ceil(np.sqrt(len(families) * 1.7)))
    nrows = int(np.ceil(len(families) / ncols))
    ax.remove()
    axes = fig.subplots(nrows, ncols, sharey=True, squeeze=False).ravel()
    for a, fam in zip(axes, families, strict=False):
        rows = have[have.strategy.map(family) == fam]
        alone = len(rows) == 1  # the panel's title names it in full
        top = _round_lines(a, rows, colors, label=str if alone else lambda s, f=fam: s[len(f):].lstrip(":@") or f)
        a.set_xlim(0.5, top + 0.5)
        a.xaxis.set_major_locator(ticker.MaxNLocator(integer=True, nbins=4, min_n_ticks=1))
        a.set_title(rows.strategy.iloc[0] if alone else fam, fontsize=9, loc="left", fontweight="bold")
        if len(rows) > 1:
            a.legend(loc="best", fontsize=6.5, handlelength=2.2, borderaxespad=0.2, frameon=True, framealpha=0.85,
                     edgecolor="#e6e6e6")
        a.tick_params(labelsize=7)
    for a in axes[len(families):]:
        a.set_visible(False)
    fig.suptitle(title + ", one panel per agent", x=0.01, ha="left", fontsize=12, fontweight="bold")
    fig.supxlabel("compaction round (probed right after it compacted; each panel to its own last round); "
                  "dotted: the 50% cliff, red ring: each strategy's cliff", fontsize=8)
    fig.supylabel("needles retained verbatim", fontsize=8)


def estimate_ratio(gaps: pd.DataFrame, order: Sequence[str], colors: Mapping[str, str], path: Path,
                   exact: pd.DataFrame | None = None) -> Path:
    """Each strategy's own estimate over the true tokens at every point it acted.

    ``exact`` (``reports.eventstats``' trigger table) gives each strategy's n and p10/p50/p90 when
    ``gaps`` holds only a sample of its points."""
    with _figure(path) as (_, ax):
        title = "Strategy's own token estimate / true tokens, at each point it acted"
        rows = [s for s in order if len(gaps) and (gaps.strategy == s).any()][::-1]
        if not rows:
            _empty(ax, title, "no strategy acted on a measured context in this run")
            return path
        data = [gaps.loc[gaps.strategy == s, "ratio"].to_numpy(dtype=float) for s in rows]
        jitter = np.random.default_rng(0)
        for y, (s, d) in enumerate(zip(rows, data, strict=True)):
            ax.scatter(d, y + jitter.uniform(-0.18, 0.18, len(d)), s=14, alpha=0.7, color=colors.get(s, "#333333"))
            n, (q10, q50, q90) = len(d), np.percentile(d, [10, 50, 90])
            if exact is not None and s in set(exact.strategy):
                row = exact[exact.strategy == s].iloc[0]
                n, q10, q50, q90 = (int(row["triggers"]), row["trigger_ratio_p10"], row["trigger_ratio_p50"],
                                    row["trigger_ratio_p90"])
            ax.plot([q10, q90], [y, y], color="#222222", lw=1.2)
            ax.plot([q50], [y], marker="|", markersize=16, color="#222222", mew=2)
            ax.text(1.01, y, f"n={n}  p50 {q50:.2f}", transform=ax.get_yaxis_transform(), va="center",
                    fontsize=7.5, color="#555555")
        ax.axvline(1.0, color="#b42318", lw=1, ls=":")
        ax.set_yticks(range(len(rows)), rows)
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.grid(axis="y", visible=False)
        ax.set_xlabel("estimate / truth   (< 1: under-counts, fires later than it believes;  "
                      "bar = p10–p90, | = median)")
        ax.set_title(title)
    return path


def cost_vs_retention(points: pd.DataFrame, sweeps: Sequence[Sweep], colors: Mapping[str, str], path: Path, *,
                      y: str = "retention") -> Path:
    """Cost against retention (or ``y``), one point per strategy; a sweep's settings joined in
    parameter order and labelled with their values; the Pareto front drawn as a staircase.
    Costs spread over more than 4x go on a log axis, or one dear outlier crowds the rest."""
    with _figure(path) as (fig, ax):
        axis = {"retention": "needle retention (verbatim at the end of the traces)",
                "saving_vs_none": "input-token saving vs none"}.get(y, y)
        what = "retention" if y == "retention" else "token saving"
        title = f"Cost against {what}: " + ("what each setting buys" if sweeps else "the strategies nothing beats")
        have = points.assign(**{y: pd.to_numeric(points[y], errors="coerce")}).dropna(subset=["cost", y]) \
            if y in points else points[:0]
        if have.empty:
            _empty(ax, title, f"no {axis} to plot in this run")
            return path
        # The front is drawn over the feasible set: a strategy that overflowed the window is never on it.
        ok = feasible_mask(have)
        have = have.assign(front=False)
        have.loc[ok, "front"] = pareto_front(have[ok], "cost", y)
        have = have.set_index("strategy")
        front = have[have.front].sort_values(["cost", y])
        out = have[~ok.to_numpy()]
        if len(out):
            ax.scatter(out.cost, out[y], marker="x", s=110, color="#b42318", lw=2, zorder=4,
                       label="overflowed the window: left off the front")
        ax.step(front.cost, front[y], where="post", color=FRONT_COLOR, lw=7, alpha=0.22, solid_capstyle="round",
                zorder=1, label="Pareto front (nothing both cheaper and higher)")
        ax.scatter(front.cost, front[y], s=110, facecolor="none", edgecolor=FRONT_COLOR, lw=1.3, zorder=2)
        labels: dict[str, str] = {}
        for sweep in sweeps:
            members = [s for s in sweep.rows.strategy if s in have.index]
            if not members:
                continue
            color = colors.get(members[0], "#333333")
            rows = sweep.rows.set_index("strategy").loc[members]
            # A setting left at the strategy's default has no known place in the parameter order.
            default = rows[[f"param:{k}" for k in sweep.keys]].eq(DEFAULT).any(axis=1)
            line, alone = have.loc[rows.index[~default]], have.loc[rows.index[default]]
            ax.plot(line.cost, line[y], color=color, lw=1.6, marker="o", markersize=6, markeredgecolor="white",
                    zorder=3, label=f"{sweep.family} by {', '.join(sweep.keys)}")
            ax.scatter(alone.cost, alone[y], color=color, s=40, edgecolor="white", lw=0.8, zorder=3)
            for i, (_, row) in enumerate(sweep.rows[sweep.rows.strategy.isin(members)].iterrows()):
                value = sweep.setting(row)
                labels[row.strategy] = f"{sweep.keys[0]}={value}" if i == 0 and len(sweep.keys) == 1 else value
        for s, row in have.iterrows():
            if s in labels:
                continue
            base = s == BASELINE
            st = style_of(colors, s)
            ax.scatter(row.cost, row[y], color=st.color, s=80 if base else 50, edgecolor="white",
                       lw=0.8, zorder=3, marker=st.marker)
            labels[s] = s
        ax.margins(y=0.1)
        positive = have.cost[have.cost > 0]
        if len(positive) and positive.max() > 4 * positive.min():
            ax.set_xscale("log")
            ax.set_xlim(float(positive.min()) / 1.25, float(positive.max()) * 1.25)
            ax.xaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        else:
            ax.set_xlim(0, float(have.cost.max()) * 1.08 or 1.0)
        ax.set_title(title)
        ax.set_xlabel("cost over all traces (USD, with the prompt cache)  ← cheaper")
        ax.set_ylabel(f"{axis}  ↑ better")
        money = ticker.FuncFormatter(lambda v, _: f"${v:,.0f}" if v >= 10 else f"${v:,.2g}")
        ax.xaxis.set_major_formatter(money)
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
        ax.yaxis.set_major_formatter(ticker.PercentFormatter(1.0))
        ax.legend(loc="best", framealpha=0.9, frameon=True, edgecolor="#e6e6e6")
        names = list(labels)
        _place_labels(ax, have.loc[names].cost.tolist(), have.loc[names, y].tolist(), [labels[n] for n in names])
    return path
