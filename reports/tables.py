"""The report's tables: per-strategy totals, per-trace rows, and their HTML.

Directions (lower or higher is better), units and the one-line meanings in header tooltips
come from ``bench.scoring.metrics.METRICS``, so the report, the printed table and the README agree.
Cells are shaded within their column from the best value (green) to the worst (red).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bench.scoring.metrics import METRIC_BY_NAME, METRICS
from reports import callstats
from reports.callstats import CallStats

BASELINE = "none"


def _tokens(v: float) -> str:
    if abs(v) >= 1e6:
        return f"{v / 1e6:,.2f}M"
    return f"{v / 1e3:,.1f}K" if abs(v) >= 1e4 else f"{v:,.0f}"


def usd(v: float) -> str:
    return f"${v:,.2f}" if abs(v) >= 1 else f"${v:,.4f}"


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    fmt: Callable[[float], str]


COLUMNS: tuple[Column, ...] = (
    Column("cost", "cost", usd),
    Column("cost_open_loop", "cost without re-reads", usd),
    Column("cost_no_cache", "cost without cache", usd),
    Column("input_tokens", "input tokens", _tokens),
    Column("saving_vs_none", "tokens saved vs none", lambda v: f"{v:+.1%}"),
    Column("cache_hit_rate", "cache-hit rate", lambda v: f"{v:.0%}"),
    Column("prefix_breaks", "prefix breaks", lambda v: f"{v:,.0f}"),
    Column("peak_context", "peak context", _tokens),
    Column("mean_context", "mean context", _tokens),
    Column("compactions", "compactions", lambda v: f"{v:,.0f}"),
    Column("overflows", "overflows", lambda v: f"{v:,.0f}"),
    Column("unseen_references", "re-reads needed", lambda v: f"{v:,.0f}"),
    Column("retention", "needle retention", lambda v: f"{v:.1%}"),
    Column("instructions", "instruction rules kept", lambda v: f"{v:.1%}"),
    Column("skills", "skill rules kept", lambda v: f"{v:.1%}"),
    Column("llm_recall", "LLM recall", lambda v: f"{v:.1%}"),
    Column("summarizer_cost_share", "summarizer share of cost", lambda v: f"{v:.1%}"),
    Column("calls", "calls", lambda v: f"{v:,.0f}"),
)
BY_CONSTRUCTION = frozenset({"saving_vs_none", "retention", "instructions", "skills", "llm_recall", "unseen_references",
                             "compactions",
                             "summarizer_cost_share"})
"""Columns whose value for `none` is fixed by what it is (it never compacts), so not a result to shade."""
SUMMARY_COLUMNS = tuple(c.key for c in COLUMNS if c.key not in ("mean_context", "calls"))
"""The strategy table leaves out what only matters per trace (the per-trace tables keep them)."""


def _call_stats(calls: pd.DataFrame | CallStats, keys: list[str]) -> pd.DataFrame:
    """Cache hits, prefix breaks and summarizer cost from the calls, grouped by ``keys``: from the
    per-task sums ``reports.callstats`` streamed (a frame of calls is folded the same way)."""
    stats = calls if isinstance(calls, CallStats) else callstats.from_frame(calls)
    g = stats.per_task.groupby(keys)
    out = pd.DataFrame({
        "cache_read": g.cache_read.sum(), "prompt": g.prompt_tokens.sum(),
        "prefix_breaks": g.agent_breaks.sum(), "summarizer_cost": g.summarizer_cost.sum(), "all_cost": g.cost.sum(),
    })
    out["cache_hit_rate"] = (out.cache_read / out.prompt.replace(0, np.nan)).fillna(0.0)
    return out.reset_index()


def trace_rows(results: pd.DataFrame, calls: pd.DataFrame) -> pd.DataFrame:
    """results.csv, completed with what older or leaner runners left out (taken from calls.csv)."""
    rows = results.copy()
    stats = _call_stats(calls, ["trace", "strategy"])
    for col in ("cache_hit_rate", "prefix_breaks"):
        if col not in rows:
            rows = rows.merge(stats[["trace", "strategy", col]], on=["trace", "strategy"], how="left")
    for col in ("failed", "error"):
        rows[col] = rows[col].astype(object).where(rows[col].notna(), "").astype(str) if col in rows else ""
    return rows


def strategy_totals(rows: pd.DataFrame, calls: pd.DataFrame) -> pd.DataFrame:
    """One row per strategy summed over traces, sorted by cost (cheapest first).

    Tasks that ended in a harness error have no numbers (zero calls, zero dollars) and are left
    out, or a strategy that crashed would look cheapest; the report lists them separately. Tasks
    a strategy's own circuit breaker ended (``failed``) are real outcomes and count.
    """
    rows = rows[rows.error == ""]
    g = rows.groupby("strategy")
    totals = pd.DataFrame({
        "traces": g.size(), "calls": g.calls.sum(), "input_tokens": g.input_tokens.sum(),
        "peak_context": g.peak_context.max(), "mean_context": g.mean_context.mean(),
        "compactions": g.compactions.sum(), "overflows": g.overflows.sum(),
        "cost": g.cost.sum(), "cost_no_cache": g.cost_no_cache.sum(),
        "failed": g.failed.apply(lambda f: int((f != "").sum())),
    })
    for col in ("unseen_references", "cost_open_loop"):
        if col in rows:
            totals[col] = g[col].sum()
    for col in ("retention", "llm_recall"):  # the mean over traces, as the paired comparisons use
        if col in rows:
            totals[col] = g[col].mean()
    for col in ("instructions", "skills"):  # shown only when the run planted rules (an empty column is left out)
        if col in rows and rows[col].notna().any():
            totals[col] = g[col].mean()
    stats = _call_stats(calls, ["strategy"]).set_index("strategy")
    totals["cache_hit_rate"] = (stats.cache_read / stats.prompt.replace(0, np.nan)).reindex(totals.index).fillna(0.0)
    totals["prefix_breaks"] = stats.prefix_breaks.reindex(totals.index).fillna(0).astype(int)
    share = stats.summarizer_cost / stats.all_cost.replace(0, np.nan)
    totals["summarizer_cost_share"] = share.reindex(totals.index).fillna(0.0)
    totals["saving_vs_none"] = np.nan
    totals["cost_vs_none"] = np.nan
    totals["false_economy"] = False
    if BASELINE in totals.index:
        # Compare on the traces both ran, so a strategy that failed on one is not flattered.
        base = rows[rows.strategy == BASELINE].set_index("trace")
        for s, r in rows.groupby("strategy"):
            common = r[r.trace.isin(base.index)]
            if common.empty:
                continue
            none_tokens = base.input_tokens.reindex(common.trace).sum()
            none_cost = base.cost.reindex(common.trace).sum()
            totals.loc[s, "saving_vs_none"] = 1 - common.input_tokens.sum() / none_tokens if none_tokens else np.nan
            totals.loc[s, "cost_vs_none"] = common.cost.sum() / none_cost - 1 if none_cost else np.nan
        totals["false_economy"] = (totals.saving_vs_none > 0) & (totals.cost_vs_none > 0)
    return totals.sort_values(["cost", "input_tokens"]).reset_index()


def _shade(values: pd.Series, lower_is_better: bool | None) -> list[str]:
    """A background colour per cell: green for the column's best, red for its worst.

    By rank, not by value: one outlier (a strategy that costs 5x) would otherwise wash every
    other cell of the column into the same shade.
    """
    v = values.astype(float)
    if lower_is_better is None or v.nunique(dropna=True) < 2:
        return [""] * len(v)
    rank = v.rank(method="min", ascending=lower_is_better)
    score = (len(v.dropna()) - rank) / (len(v.dropna()) - 1)
    return ["" if np.isnan(s) else f"background:hsl({s * 125:.0f},62%,{88 - 4 * abs(s - 0.5):.0f}%)" for s in score]


def _header(col: Column) -> str:
    metric = METRIC_BY_NAME.get(col.key)
    arrow, tip = "", col.label
    if metric is not None:
        arrow = {True: " ↓", False: " ↑", None: ""}[metric.lower_is_better]
        tip = f"{metric.description} ({metric.unit})"
    return f'<th class="num" title="{html.escape(tip)}">{html.escape(col.label)}{arrow}</th>'


def _records(rows: pd.DataFrame) -> list[dict[str, object]]:
    """``rows``' rows as ``iterrows`` gives their values (its ``values``, one object row each), without a
    Series per row (the report's per-trace tables make one for each of 540 × 45 rows). ``iterrows``
    keeps that object row as it is unless every value in it is text (pandas then infers a string dtype
    and turns None into NaN): a numeric column rules that out; without one, ``iterrows`` itself is used."""
    columns = rows.columns.tolist()
    if not any(t.kind in "biufc" for t in rows.dtypes if isinstance(t, np.dtype)):
        return [{c: r[c] for c in columns} for _, r in rows.iterrows()]
    return [dict(zip(columns, v, strict=True)) for v in rows.values]


def table_html(rows: pd.DataFrame, *, css_class: str = "results", keys: Sequence[str] | None = None,
               links: dict[str, str] | None = None) -> str:
    """An HTML table of ``rows`` (one per strategy, in the given order) with shaded metric cells;
    ``links`` maps a strategy to the page of its compactions."""
    measured = set(rows.columns[rows.notna().any().to_numpy()]) if len(rows.columns) else set()
    cols = [c for c in COLUMNS if c.key in measured and (keys is None or c.key in keys)]
    shades = {c.key: _shade(rows[c.key], METRIC_BY_NAME[c.key].lower_is_better if c.key in METRIC_BY_NAME
                                          else None) for c in cols}
    base = (rows.strategy == BASELINE).to_numpy()
    if base.any():  # none's saving, retention, re-reads... hold by construction: no colour, and not ranked
        for c in cols:
            if c.key in BY_CONSTRUCTION:
                lower = METRIC_BY_NAME[c.key].lower_is_better if c.key in METRIC_BY_NAME else None
                others = _shade(rows[c.key][~base], lower)
                it = iter(others)
                shades[c.key] = ["" if b else next(it) for b in base]
    head = "<tr><th>strategy</th>" + "".join(_header(c) for c in cols) + "</tr>"
    body = []
    for i, r in enumerate(_records(rows)):
        name = html.escape(str(r["strategy"]))
        badges = []
        if r["strategy"] == BASELINE:
            badges.append('<span class="badge base">baseline</span>')
        if bool(r.get("false_economy", False)):
            badges.append('<span class="badge warn" title="fewer input tokens than none, yet more dollars">'
                          "false economy</span>")
        failed = r.get("failed", "")
        if r.get("error", ""):
            badges.append(f'<span class="badge fail" title="{html.escape(r["error"])}">error</span>')
        if isinstance(failed, str) and failed:
            badges.append(f'<span class="badge fail" title="{html.escape(failed)}">failed</span>')
        elif isinstance(failed, int | np.integer) and failed:
            badges.append(f'<span class="badge fail">failed on {int(failed)}</span>')
        if links and r["strategy"] in links:
            badges.append(f'<a class="view" href="{html.escape(links[r["strategy"]])}" '
                          'title="what each of its compactions did, per trace">compactions</a>')
        cells = [f'<td class="name">{name} {" ".join(badges)}</td>']
        for c in cols:
            v = r[c.key]
            text = "—" if pd.isna(v) else c.fmt(float(v))
            if c.key == "cost" and not pd.isna(r.get("cost_vs_none", np.nan)) and r["strategy"] != BASELINE:
                text += f' <span class="delta">{r["cost_vs_none"]:+.0%}</span>'
            style = f' style="{shades[c.key][i]}"' if shades[c.key][i] else ""
            cells.append(f'<td class="num"{style}>{text}</td>')
        body.append(f'<tr class="{"baseline" if r["strategy"] == BASELINE else ""}">' + "".join(cells) + "</tr>")
    return f'<table class="{css_class}"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>'


def headline(totals: pd.DataFrame, errors: int = 0) -> list[str]:
    """Plain sentences for the top of the report (HTML-escaped)."""
    out: list[str] = [f"{errors} task(s) ended in a harness error and are left out of the totals "
                      "(listed under “Failed or interrupted tasks”)."] if errors else []
    if totals.empty:
        return [*out, "No results in this run."]
    # "Cheapest" is said only of a strategy that never overflowed: a refused call costs nothing here
    clean = totals[pd.to_numeric(totals.overflows, errors="coerce").fillna(0) == 0] if "overflows" in totals \
        else totals
    if len(clean):
        cheapest = clean.iloc[0]
        line = f"Cheapest that never overflowed: <b>{html.escape(cheapest.strategy)}</b> at {usd(cheapest.cost)}"
        if not pd.isna(cheapest.cost_vs_none) and cheapest.strategy != BASELINE:
            line += f" ({cheapest.cost_vs_none:+.1%} vs none)"
        out.append(line + ".")
    else:
        out.append("Every strategy overflowed the window: none is the cheapest that works.")
    if totals.saving_vs_none.notna().any():
        best = totals.loc[totals.saving_vs_none.idxmax()]
        out.append(f"Fewest input tokens: <b>{html.escape(best.strategy)}</b>, {best.saving_vs_none:.1%} fewer "
                   f"than none, at {best.cost_vs_none:+.1%} in dollars.")
    false_economy = totals[totals.false_economy].strategy.tolist()
    if false_economy:
        out.append("False economy — fewer tokens than none but more dollars (broken prompt cache): "
                   + ", ".join(f"<b>{html.escape(s)}</b>" for s in false_economy) + ".")
    overflowing = totals[totals.overflows > 0]
    if len(overflowing):
        out.append("Overflowed the window: " + ", ".join(
            f"<b>{html.escape(r.strategy)}</b> ({int(r.overflows)} call{'' if int(r.overflows) == 1 else 's'})"
            for _, r in overflowing.iterrows()) + ".")
    return out


DETECTOR_LINES = {
    "runaway_compactions": "Runaway compaction (on consecutive calls, or more than 3 in 10 calls; claude-code#24179)",
    "ineffective_compactions": "Compaction that left the context above its trigger (copilot-cli#3621)",
    "model_switch_compactions": "Compaction on a model switch (codex#33833)",
    "late_trigger": "First compaction above 80% of a window over 200K (cline#14329)",
    "overhead_fills_window": "First request over half its window (copilot-cli#3539)",
}
"""The failure detectors' report lines (bench/scoring/detectors.py), each said only when it fired."""


def detector_lines(rows: pd.DataFrame) -> list[str]:
    """One sentence per failure detector that fired: the strategies, with their calls and traces.

    Runs written before the detectors (no such column) say nothing."""
    out = []
    ok = rows[rows.error == ""] if "error" in rows else rows
    for col, label in DETECTOR_LINES.items():
        if col not in ok:
            continue
        hit = ok[pd.to_numeric(ok[col], errors="coerce").fillna(0) > 0]
        if hit.empty:
            continue
        parts = [f"<b>{html.escape(str(s))}</b> ({int(r[col].sum())} call{'' if int(r[col].sum()) == 1 else 's'}, "
                 f"{r.trace.nunique()} trace{'' if r.trace.nunique() == 1 else 's'})"
                 for s, r in hit.groupby("strategy", sort=True)]
        out.append(f"{label}: " + ", ".join(parts) + ".")
    return out


def _code(text: str) -> str:
    """Escape, then show `backticked` names as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def glossary_html(keys: Sequence[str] | None = None) -> str:
    arrow = {True: "lower", False: "higher", None: "—"}
    rows = "".join(
        f"<tr><td><code>{m.name}</code></td><td>{html.escape(m.unit)}</td><td>{arrow[m.lower_is_better]}</td>"
        f"<td>{_code(m.description)}</td></tr>"
        for m in METRICS if keys is None or m.name in keys
    )
    return ('<table class="glossary"><thead><tr><th>metric</th><th>unit</th><th>better</th><th>meaning</th>'
            f"</tr></thead><tbody>{rows}</tbody></table>")
