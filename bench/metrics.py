"""Per-(trace, strategy) metrics derived from the call and event rows.

Each metric declares its name, unit, direction and one-sentence meaning here, next to its code;
the printed table, the report's arrows and the README glossary come from ``METRICS``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bench.records import CallRecord, EventRecord, TaskResult, columns
from bench.validity import EVENT_KIND as INVALID

COMPACTION_KINDS = ("summarize", "handoff")
BASELINE = "none"


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    lower_is_better: bool | None
    """None where neither direction is better (a count of what happened)."""
    description: str


METRICS: tuple[Metric, ...] = (
    Metric("calls", "calls", None, "Agent model calls replayed (summarizer calls not included)."),
    Metric("input_tokens", "tokens", True,
           "Prompt tokens billed over the run: every agent call plus every summarizer call (truth tokenizer)."),
    Metric("saving_vs_none", "fraction", False,
           "1 − input_tokens / input_tokens of `none` on the same trace; "
           "negative means more tokens than never compacting."),
    Metric("peak_context", "tokens", True, "Largest prompt sent in one agent call."),
    Metric("mean_context", "tokens", True, "Mean prompt size over the agent calls."),
    Metric("compactions", "count", None, "Summarize and handoff events (LLM-backed rewrites of the history)."),
    Metric("events", "count", None, "All strategy events (prune, truncate, mask, drop, dedup, summarize, ...)."),
    Metric("overflows", "calls", True,
           "Agent calls whose prompt still did not fit the model's window after the strategy's reactive path."),
    Metric("invalid_requests", "calls", True,
           "Agent calls whose request the API would reject (a tool result without its call or a call without "
           "its result, a reused tool id, an empty message): recorded, with an `invalid` event saying why."),
    Metric("cost", "USD", True,
           "Dollars with the prompt cache (reads, 5-min writes, uncached input, output, summarizer calls)."),
    Metric("cost_no_cache", "USD", True, "Dollars had every prompt token been billed at the plain input rate."),
    Metric("cache_hit_rate", "fraction", False, "Share of prompt tokens read from the prompt cache."),
    Metric("prefix_breaks", "calls", True,
           "Agent calls that re-used less of the cached prefix than the previous request had written."),
    Metric("summarizer_cost_share", "fraction", True, "Share of `cost` spent on summarizer calls."),
    Metric("retention", "fraction", False,
           "Share of needles (planted, or derived from a real trace) whose answer is verbatim in the last "
           "request sent; never-stated control needles excluded."),
    Metric("llm_recall", "fraction", False,
           "With `--probe anthropic`: share of stated needles a real model answered correctly from the last "
           "request sent (empty otherwise); the gap to `retention` is what is present but not recalled."),
    Metric("unseen_references", "calls", True,
           "Recorded tool calls that named a file, or quoted text to edit, that the session had shown but the "
           "context sent no longer held: a live agent would have had to look again (a re-read proxy; 0 for `none`)."),
    Metric("cliff_round", "round", False,
           "First compaction round after which retention fell below 50% (empty: it never did)."),
    Metric("false_positive_rate", "fraction", True,
           "Share of never-stated control needles found in the context anyway (should be 0)."),
    Metric("estimate_ratio", "ratio", None,
           "Median of the strategy's own token estimate over the truth when it acted; under 1 it under-counts "
           "and fires later than it believes."),
    Metric("hidden_overflows", "calls", True,
           "Agent calls the strategy's estimate said fit the window while the truth did not."),
    Metric("fidelity_call_delta", "calls", None,
           "For a real trace with a recorded compaction and the matching strategy, replayed on provider counts: "
           "replayed minus recorded call of the first compaction (0 = fired where the real agent did)."),
    Metric("false_economy", "flag", True,
           "Bills fewer input tokens than `none` on the same trace but costs more dollars "
           "(the prompt cache was broken)."),
)
METRIC_BY_NAME = {m.name: m for m in METRICS}


def frames(results: Iterable[TaskResult]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(calls, events) as DataFrames from the raw records (flat columns, no deep copies)."""
    results = list(results)
    calls = _frame([c for r in results for c in r.calls], CallRecord)
    events = _frame([e for r in results for e in r.events], EventRecord)
    if calls.empty:
        calls = pd.DataFrame(columns=["trace", "strategy", "call", "kind", "prompt_tokens", "cost"])
    if events.empty:
        events = pd.DataFrame(columns=["trace", "strategy", "call", "kind"])
    return calls, events


def _frame(records: list, cls: type) -> pd.DataFrame:
    return pd.DataFrame(columns(records, cls)) if records else pd.DataFrame()


FIDELITY_COLUMNS = ("recorded_call", "replayed_call", "call_delta", "recorded_pre_tokens", "recorded_pre_truth",
                    "replayed_pre_tokens", "recorded_post_tokens", "replayed_post_tokens")
"""bench.fidelity's columns for the first recorded compaction, prefixed ``fidelity_`` in results.csv:
``recorded_pre_tokens`` is the provider's count, the others our tokenizer's (see ``fidelity_rows``)."""


def _scores(r: TaskResult, agent: pd.DataFrame, events: pd.DataFrame, window: int | None) -> dict[str, object]:
    """Retention, estimator and fidelity columns of one task (empty values where they do not apply)."""
    from bench.probes import cliff_rounds, false_positive_rate, probe_scores, retention

    out: dict[str, object] = {"retention": np.nan, "llm_recall": np.nan, "cliff_round": pd.NA,
                              "false_positive_rate": np.nan}
    probes = pd.DataFrame()
    if r.probes and not any("llm_recalled" in p for p in r.probes):  # one pass, no frames
        out.update(probe_scores(r.probes))
        out["cliff_round"] = pd.NA if out["cliff_round"] is None else out["cliff_round"]
    elif r.probes:
        probes = pd.DataFrame(r.probes)
    if not probes.empty:
        ret = retention(probes)
        out["retention"] = float(ret.retention.iloc[0]) if len(ret) else np.nan
        if "llm_recalled" in probes:
            asked = probes[(probes.moment == "end") & (probes.needle_kind != "control")].llm_recalled.dropna()
            out["llm_recall"] = float(asked.astype(bool).mean()) if len(asked) else np.nan
        cliff = cliff_rounds(probes)
        out["cliff_round"] = cliff.cliff_round.iloc[0] if len(cliff) else pd.NA
        fpr = false_positive_rate(probes)
        out["false_positive_rate"] = float(fpr.false_positive_rate.iloc[0]) if len(fpr) else np.nan
    if len(events):
        from bench.economics import chained

        acted = events[(events.tokens_before > 0) & ~chained(events)]
    else:
        acted = events
    out["estimate_ratio"] = float((acted.estimate_before / acted.tokens_before).median()) if len(acted) else np.nan
    out["hidden_overflows"] = int(((agent.estimate_tokens + agent.output_tokens <= window)
                                   & (agent.prompt_tokens + agent.output_tokens > window)).sum()) \
        if window and len(agent) else 0
    first = r.fidelity[0] if r.fidelity else {}
    for col in FIDELITY_COLUMNS:
        out[f"fidelity_{col}"] = first.get(col)
    return out


def task_row(r: TaskResult, window: int | None = None) -> dict[str, object]:
    """One task's metrics from its own rows (run in the worker: no scan of other tasks' rows).

    Missing values are None or NaN (never ``pd.NA``), so the row stores as is in Parquet.
    """
    c = _frame(r.calls, CallRecord)
    if c.empty:
        c = pd.DataFrame({k: pd.Series(dtype=t) for k, t in (("kind", object), ("prompt_tokens", "int64"),
                                                              ("cost", float), ("cost_no_cache", float),
                                                              ("cache_read", "int64"))})
    agent = c[c.kind == "agent"]
    summ = c[c.kind == "summarizer"]
    e = _frame([x for x in r.events if x.kind != INVALID], EventRecord)  # the replay's flag, not an action
    if e.empty:
        e = pd.DataFrame(columns=["trace", "strategy", "call", "kind"])
    prompt = int(c.prompt_tokens.sum())
    cost = float(c.cost.sum())
    row = {
        "trace": r.trace,
        "strategy": r.strategy,
        "calls": len(agent),
        "input_tokens": prompt,
        "peak_context": int(agent.prompt_tokens.max()) if len(agent) else 0,
        "mean_context": float(agent.prompt_tokens.mean()) if len(agent) else 0.0,
        "compactions": int(e.kind.isin(COMPACTION_KINDS).sum()),
        "events": len(e),
        "overflows": int(agent.overflow.sum()) if len(agent) else 0,
        "invalid_requests": int((agent.invalid > 0).sum()) if len(agent) and "invalid" in agent else 0,
        "cost": cost,
        "cost_no_cache": float(c.cost_no_cache.sum()) if len(c) else 0.0,
        "cache_hit_rate": float(c.cache_read.sum() / prompt) if prompt else 0.0,
        "prefix_breaks": int(agent.prefix_break.sum()) if len(agent) else 0,
        "unseen_references": int(agent.unseen_refs.sum()) if len(agent) and "unseen_refs" in agent else 0,
        "summarizer_cost_share": float(summ.cost.sum() / cost) if cost else 0.0,
        "failed": r.failed or "",
        "error": r.error or "",
        **_scores(r, agent, e, window),
    }
    if row["cliff_round"] is pd.NA:
        row["cliff_round"] = None
    elif row["cliff_round"] is not None:
        row["cliff_round"] = int(row["cliff_round"])
    return row


NULLABLE_INT = ("cliff_round",)
"""Integer columns that may be empty: kept integers (``Int64``) whatever the storage did to them."""


def finish_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Task rows (``task_row``) → the results table: the paired columns against ``none``, in order.

    Linear in tasks: one lookup of each trace's baseline, no per-task filtering.
    """
    table = rows.reset_index(drop=True)
    if table.empty:
        return table
    for col in NULLABLE_INT:  # ints and pd.NA in an object column, as a frame of task rows has them
        table[col] = pd.Series([pd.NA if v is None or pd.isna(v) else int(v) for v in table[col]],
                               index=table.index, dtype=object)
    base = table[table.strategy == BASELINE].drop_duplicates("trace", keep="last").set_index("trace")
    none_tokens = table.trace.map(base.input_tokens) if len(base) else pd.Series(np.nan, index=table.index)
    none_cost = table.trace.map(base.cost) if len(base) else pd.Series(np.nan, index=table.index)
    table["saving_vs_none"] = 1 - table.input_tokens / none_tokens
    table["false_economy"] = (table.input_tokens < none_tokens) & (table.cost > none_cost)
    fidelity = [f"fidelity_{c}" for c in FIDELITY_COLUMNS if c != "call_delta"]
    return table[["trace", "strategy", *(m.name for m in METRICS), *fidelity, "failed", "error"]]


def results_table(results: Iterable[TaskResult], *, window: int | None = None) -> pd.DataFrame:
    """One row per (trace, strategy) with every metric in METRICS (``window`` for hidden overflows)."""
    return finish_table(pd.DataFrame([task_row(r, window) for r in results]))


def by_strategy(table: pd.DataFrame) -> pd.DataFrame:
    """Totals over traces per strategy (the printed table), sorted by cost."""
    if table.empty:
        return table
    # A task that raised has no numbers (zero calls, $0.00): it is counted under `errors`, never summed,
    # and a strategy with any errored task sorts after every other one, never first.
    errored = table.error.fillna("").astype(str) != "" if "error" in table else pd.Series(False, index=table.index)
    errors = errored.groupby(table.strategy).sum()
    all_strategies = errors.index
    table = table[~errored]
    g = table.groupby("strategy")
    out = pd.DataFrame({
        "traces": g.size(),
        "calls": g.calls.sum(),
        "input_tokens": g.input_tokens.sum(),
        "peak_context": g.peak_context.max(),
        "compactions": g.compactions.sum(),
        "overflows": g.overflows.sum(),
        "cost": g.cost.sum(),
        "cost_no_cache": g.cost_no_cache.sum(),
        "false_economy": g.false_economy.sum(),
        "unseen_references": g.unseen_references.sum(),
        "retention": g.retention.mean(),
    })
    if table.llm_recall.notna().any():
        out["llm_recall"] = g.llm_recall.mean()
    if "invalid_requests" in table and table.invalid_requests.any():  # only when there are some
        out["invalid_requests"] = g.invalid_requests.sum()
    if BASELINE in out.index:
        out["saving_vs_none"] = 1 - out.input_tokens / out.loc[BASELINE, "input_tokens"]
    out = out.reindex(all_strategies)
    out["errors"] = errors.astype(int)
    out.index.name = "strategy"
    return out.assign(_failed=out.errors > 0).sort_values(["_failed", "cost"]).drop(columns="_failed").reset_index()


def glossary() -> str:
    """The metric glossary as a Markdown table (for the README and the report)."""
    arrow = {True: "lower", False: "higher", None: "—"}
    lines = ["| metric | unit | better | meaning |", "|---|---|---|---|"]
    lines += [f"| `{m.name}` | {m.unit} | {arrow[m.lower_is_better]} | {m.description} |" for m in METRICS]
    return "\n".join(lines)
