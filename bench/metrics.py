"""Per-(trace, strategy) metrics derived from the call and event rows.

Each metric declares its name, unit, direction and one-sentence meaning here, next to its code;
the printed table, the report's arrows and the README glossary come from ``METRICS``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from bench.records import TaskResult

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
           "For a real trace with a recorded compaction and the matching strategy, driven by the recorded usage: "
           "replayed minus recorded call of the first compaction (0 = fired where the real agent did)."),
    Metric("false_economy", "flag", True,
           "Bills fewer input tokens than `none` on the same trace but costs more dollars "
           "(the prompt cache was broken)."),
)
METRIC_BY_NAME = {m.name: m for m in METRICS}


def frames(results: Iterable[TaskResult]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(calls, events) as DataFrames from the raw records."""
    results = list(results)
    calls = pd.DataFrame([asdict(c) for r in results for c in r.calls])
    events = pd.DataFrame([asdict(e) for r in results for e in r.events])
    if calls.empty:
        calls = pd.DataFrame(columns=["trace", "strategy", "call", "kind", "prompt_tokens", "cost"])
    if events.empty:
        events = pd.DataFrame(columns=["trace", "strategy", "call", "kind"])
    return calls, events


FIDELITY_COLUMNS = ("recorded_call", "replayed_call", "call_delta", "recorded_pre_tokens", "recorded_pre_truth",
                    "replayed_pre_tokens", "recorded_post_tokens", "replayed_post_tokens")
"""bench.fidelity's columns for the first recorded compaction, prefixed ``fidelity_`` in results.csv:
``recorded_pre_tokens`` is the provider's count, the others our tokenizer's (see ``fidelity_rows``)."""


def _scores(r: TaskResult, agent: pd.DataFrame, events: pd.DataFrame, window: int | None) -> dict[str, object]:
    """Retention, estimator and fidelity columns of one task (empty values where they do not apply)."""
    from bench.probes import cliff_rounds, false_positive_rate, retention

    out: dict[str, object] = {"retention": np.nan, "llm_recall": np.nan, "cliff_round": pd.NA,
                              "false_positive_rate": np.nan}
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


def results_table(results: Iterable[TaskResult], *, window: int | None = None) -> pd.DataFrame:
    """One row per (trace, strategy) with every metric in METRICS (``window`` for hidden overflows)."""
    results = list(results)
    calls, events = frames(results)
    rows = []
    for r in results:
        c = calls[(calls.trace == r.trace) & (calls.strategy == r.strategy)]
        agent = c[c.kind == "agent"]
        summ = c[c.kind == "summarizer"]
        e = events[(events.trace == r.trace) & (events.strategy == r.strategy)]
        prompt = int(c.prompt_tokens.sum())
        cost = float(c.cost.sum())
        rows.append({
            "trace": r.trace,
            "strategy": r.strategy,
            "calls": len(agent),
            "input_tokens": prompt,
            "peak_context": int(agent.prompt_tokens.max()) if len(agent) else 0,
            "mean_context": float(agent.prompt_tokens.mean()) if len(agent) else 0.0,
            "compactions": int(e.kind.isin(COMPACTION_KINDS).sum()),
            "events": len(e),
            "overflows": int(agent.overflow.sum()) if len(agent) else 0,
            "cost": cost,
            "cost_no_cache": float(c.cost_no_cache.sum()) if len(c) else 0.0,
            "cache_hit_rate": float(c.cache_read.sum() / prompt) if prompt else 0.0,
            "prefix_breaks": int(agent.prefix_break.sum()) if len(agent) else 0,
            "unseen_references": int(agent.unseen_refs.sum()) if len(agent) and "unseen_refs" in agent else 0,
            "summarizer_cost_share": float(summ.cost.sum() / cost) if cost else 0.0,
            "failed": r.failed or "",
            "error": r.error or "",
            **_scores(r, agent, e, window),
        })
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    base = table[table.strategy == BASELINE].set_index("trace")
    none_tokens = table.trace.map(base.input_tokens) if len(base) else pd.Series(np.nan, index=table.index)
    none_cost = table.trace.map(base.cost) if len(base) else pd.Series(np.nan, index=table.index)
    table["saving_vs_none"] = 1 - table.input_tokens / none_tokens
    table["false_economy"] = (table.input_tokens < none_tokens) & (table.cost > none_cost)
    fidelity = [f"fidelity_{c}" for c in FIDELITY_COLUMNS if c != "call_delta"]
    return table[["trace", "strategy", *(m.name for m in METRICS), *fidelity, "failed", "error"]]


def by_strategy(table: pd.DataFrame) -> pd.DataFrame:
    """Totals over traces per strategy (the printed table), sorted by cost."""
    if table.empty:
        return table
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
    if BASELINE in out.index:
        out["saving_vs_none"] = 1 - out.input_tokens / out.loc[BASELINE, "input_tokens"]
    return out.sort_values("cost").reset_index()


def glossary() -> str:
    """The metric glossary as a Markdown table (for the README and the report)."""
    arrow = {True: "lower", False: "higher", None: "—"}
    lines = ["| metric | unit | better | meaning |", "|---|---|---|---|"]
    lines += [f"| `{m.name}` | {m.unit} | {arrow[m.lower_is_better]} | {m.description} |" for m in METRICS]
    return "\n".join(lines)
