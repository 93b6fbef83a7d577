"""Per-(trace, strategy) metrics derived from the call and event rows.

Each metric declares its name, unit, direction and one-sentence meaning here, next to its code;
the printed table, the report's arrows and the README glossary come from ``METRICS``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from bench.replay.records import CALL_FIELDS, CallRow, EventRecord, TaskResult, columns
from bench.replay.validity import EVENT_KIND as INVALID
from bench.scoring.detectors import (
    COMPACTION_KINDS,  # noqa: F401 - one definition, re-exported here
    findings,
)
from bench.scoring.detectors import counts as detector_counts
from bench.scoring.metric import Metric

if TYPE_CHECKING:  # numpy and pandas are imported where used: the replay path never loads them
    import pandas as pd

BASELINE = "none"


METRICS: tuple[Metric, ...] = (
    Metric("calls", "calls", None, "Agent model calls replayed (summarizer calls not included)."),
    Metric("input_tokens", "tokens", True,
           "Prompt tokens billed over the run: every agent call, summarizer call and simulated re-read call "
           "(truth tokenizer)."),
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
           "Dollars with the prompt cache (reads, 5-min writes, uncached input, output, summarizer calls, and the "
           "simulated re-reads: see `cost_open_loop`)."),
    Metric("cost_no_cache", "USD", True, "Dollars had every prompt token been billed at the plain input rate."),
    Metric("cost_open_loop", "USD", True,
           "`cost` of the same replay without re-reads (`--open-loop`): the recorded future as it was, where "
           "forgetting a file costs nothing."),
    Metric("input_tokens_open_loop", "tokens", True, "`input_tokens` of the same replay without re-reads."),
    Metric("rereads", "files", True,
           "Files the agent had to read again (simulated): a recorded call acted on a file the session had shown "
           "that the context sent no longer held, so a read call and its result came first, billed (0 for `none`)."),
    Metric("reread_tokens", "tokens", True,
           "Tokens the simulated re-reads (their calls and results) added to the context."),
    Metric("cache_hit_rate", "fraction", False, "Share of prompt tokens read from the prompt cache."),
    Metric("prefix_breaks", "calls", True,
           "Agent calls that re-used less of the cached prefix than the previous request had written."),
    Metric("summarizer_cost_share", "fraction", True, "Share of `cost` spent on summarizer calls."),
    Metric("retention", "fraction", False,
           "Share of needles (planted, or derived from a real trace) whose answer is verbatim in the last "
           "request sent; never-stated control needles excluded."),
    Metric("compaction_retention", "fraction", False,
           "Share of the needles already stated that were verbatim in the context right after each compaction, "
           "pooled over the compactions (empty when the strategy never compacted on the trace): what a summary "
           "or a cut kept, where `retention` is often saved by a needle that is still in the recent tail."),
    Metric("instructions", "fraction", False,
           "Share of the instruction file's rules (CLAUDE.md, AGENTS.md: planted by the `instructions` scenarios) "
           "verbatim in the context right after each compaction and in the last request sent, pooled; kept by "
           "the strategy or re-injected by the agent (empty on traces without rules)."),
    Metric("skills", "fraction", False,
           "The same for the rules of skills loaded mid-session (Claude Code re-injects invoked skills after "
           "compacting, up to 5K tokens each and 25K in all; empty on traces without skills)."),
    Metric("llm_recall", "fraction", False,
           "With `--probe anthropic`: share of stated needles a real model answered correctly from the last "
           "request sent (empty otherwise); the gap to `retention` is what is present but not recalled."),
    Metric("constraint_retention", "fraction", False,
           "Share of the user's constraint statements (only / never / always / must / don't, planted or derived) "
           "verbatim in the context right after each compaction, pooled over the compactions."),
    Metric("next_action_agreement", "fraction", False,
           "With `--probe anthropic`: share of compactions after which a real model names the same next step "
           "(tool and target file or command) on the compacted context as on the full context (empty otherwise)."),
    Metric("next_action_recorded_agreement", "fraction", False,
           "With `--probe anthropic`: share of compactions after which the step named on the compacted context is "
           "the one the recorded session took next (tool and target)."),
    Metric("constraint_obedience", "fraction", False,
           "With `--probe anthropic`: share of forced choices (per only / never / always rule, after each "
           "compaction) where the model, asked on the compacted context, picked the step that keeps the rule."),
    Metric("constraint_obedience_full", "fraction", False,
           "`constraint_obedience` asked on the full (never compacted) context: the no-compaction baseline."),
    Metric("constraint_obedience_restated", "fraction", False,
           "`constraint_obedience` asked on the compacted context with the user's rule sentences restated in the "
           "question: the upper bound (COMPINT's rule re-presented after compaction)."),
    Metric("constraint_obedience_unstated", "fraction", None,
           "`constraint_obedience` asked on the full context with the rule sentences cut out: the floor, what the "
           "model picks with no rule (COMPINT's uninjected baseline)."),
    Metric("constraint_effect_retention", "fraction", False,
           "COMPINT's effect retention: (`constraint_obedience` − floor) / (upper bound − floor), 1 lossless, "
           "0 all lost; empty when the upper bound is not above the floor (the rule changes nothing)."),
    Metric("constraint_judge_agreement", "fraction", False,
           "With `--probe anthropic`: share of rules after each compaction on which the two retention judges agree, "
           "the exact-presence probe and the model asked whether the context states the rule."),
    Metric("behaviour_probes_paid", "requests", None,
           "With `--probe anthropic`: behaviour-probe requests answered by the API (not its disk cache)."),
    Metric("behaviour_probes_skipped", "requests", None,
           "With `--probe anthropic`: behaviour-probe requests not sent because `--max-cost` was reached (their "
           "rows say not asked)."),
    Metric("behaviour_probe_cost", "USD", True,
           "With `--probe anthropic`: dollars those behaviour-probe requests cost (counted against `--max-cost`)."),
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
           "replayed minus recorded call of the first automatic compaction (0 = fired where the real agent did)."),
    Metric("false_economy", "flag", True,
           "Bills fewer input tokens than `none` on the same trace but costs more dollars "
           "(the prompt cache was broken)."),
    Metric("runaway_compactions", "calls", True,
           "Compactions on the call right after another, or beyond 3 in 10 calls (claude-code#24179)."),
    Metric("ineffective_compactions", "calls", True,
           "Compactions that did not shrink the context or were followed by another on the next call "
           "(copilot-cli#3621)."),
    Metric("model_switch_compactions", "calls", True,
           "Compactions at the first call after the model or its window changed (codex#33833)."),
    Metric("late_trigger", "calls", True,
           "1 if the first compaction fired above 80% of a window larger than 200K tokens (cline#14329)."),
    Metric("overhead_fills_window", "calls", True,
           "1 if the first request already took more than half its window (copilot-cli#3539)."),
)
METRIC_BY_NAME = {m.name: m for m in METRICS}


def frames(results: Iterable[TaskResult]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(calls, events) as DataFrames from the raw records (flat columns, no deep copies)."""
    import pandas as pd
    results = list(results)
    calls = pd.DataFrame({name: [v for r in results for v in r.calls.column(name)] for name in CALL_FIELDS}) \
        if any(r.calls for r in results) else pd.DataFrame()
    events = _frame([e for r in results for e in r.events], EventRecord)
    if calls.empty:
        calls = pd.DataFrame(columns=["trace", "strategy", "call", "kind", "prompt_tokens", "cost"])
    if events.empty:
        events = pd.DataFrame(columns=["trace", "strategy", "call", "kind"])
    return calls, events


def _frame(records: list, cls: type) -> pd.DataFrame:
    import pandas as pd
    return pd.DataFrame(columns(records, cls)) if records else pd.DataFrame()


FIDELITY_COLUMNS = ("recorded_call", "replayed_call", "call_delta", "recorded_pre_tokens", "recorded_pre_truth",
                    "replayed_pre_tokens", "recorded_post_tokens", "replayed_post_tokens")
"""bench.scoring.fidelity's columns for the first recorded automatic compaction
(bench.scoring.fidelity.first_automatic), prefixed ``fidelity_`` in results.csv: ``recorded_pre_tokens``
is the provider's count, the others our tokenizer's (see ``fidelity_rows``)."""


def _sum(values: list) -> float:
    """A float column's total as pandas takes it (numpy's pairwise summation; Python's ``sum``
    adds left to right and can differ in the last bit), so results.csv stays byte-identical."""
    import numpy as np
    return float(np.asarray(values, dtype=np.float64).sum()) if values else 0.0


def _chained(events: list[EventRecord]) -> list[bool]:
    """``bench.scoring.economics.chained`` on one task's events, without a frame: an event continues the
    previous one's outcome (same call, hook and estimate; it starts where that one ended)."""
    out = [False] * len(events)
    for i in range(1, len(events)):
        a, b = events[i - 1], events[i]
        out[i] = (b.trace == a.trace and b.strategy == a.strategy and b.call == a.call and b.hook == a.hook
                  and b.estimate_before == a.estimate_before and b.tokens_before == a.tokens_after)
    return out


def _scores(r: TaskResult, agent: list[CallRow], events: list[EventRecord], window: int | None
            ) -> dict[str, object]:
    """Retention, estimator and fidelity columns of one task (empty values where they do not apply)."""
    import numpy as np
    import pandas as pd

    from bench.scoring.probes import (
        RULE_KINDS,
        cliff_rounds,
        false_positive_rate,
        probe_scores,
        retention,
        rule_retention,
    )

    out: dict[str, object] = {"retention": np.nan, "compaction_retention": np.nan, "llm_recall": np.nan,
                              "cliff_round": pd.NA, "false_positive_rate": np.nan, "constraint_retention": np.nan,
                              "instructions": np.nan, "skills": np.nan}
    out.update(behaviour_scores(r.probes or []))
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
        after = probes[(probes.moment == "compaction") & (probes.needle_kind != "control")]
        after = after[after["round"].notna() & after.retained.notna()] if "round" in after else after.iloc[:0]
        out["compaction_retention"] = float(after.retained.astype(bool).mean()) if len(after) else np.nan
        rules = after[after.needle_kind == "constraint"]
        out["constraint_retention"] = float(rules.retained.astype(bool).mean()) if len(rules) else np.nan
        fpr = false_positive_rate(probes)
        out["false_positive_rate"] = float(fpr.false_positive_rate.iloc[0]) if len(fpr) else np.nan
        if "strategy" in probes:
            rules = rule_retention(probes)
            for kind, col in RULE_KINDS.items():
                hit = rules[rules.kind == kind]
                out[col] = float(hit.retention.iloc[0]) if len(hit) else np.nan
    acted = [e for e, chained in zip(events, _chained(events), strict=True) if e.tokens_before > 0 and not chained]
    if acted:  # int64 / int64 then the median, as pandas computed it from the frame
        ratios = (np.asarray([e.estimate_before for e in acted], dtype=np.int64)
                  / np.asarray([e.tokens_before for e in acted], dtype=np.int64))
        out["estimate_ratio"] = float(np.nanmedian(ratios))
    else:
        out["estimate_ratio"] = np.nan
    out["hidden_overflows"] = sum(1 for c in agent if c.estimate_tokens + c.output_tokens <= window
                                  < c.prompt_tokens + c.output_tokens) if window else 0
    from bench.scoring.fidelity import first_automatic  # here: the report reads metrics without loading the replay

    first = first_automatic(r.fidelity or [])
    for col in FIDELITY_COLUMNS:
        out[f"fidelity_{col}"] = first.get(col)
    return out


def _share(values: list[Any]) -> float:
    asked = [bool(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(asked) / len(asked) if asked else math.nan


def behaviour_scores(rows: Iterable[dict[str, Any]]) -> dict[str, object]:
    """The behaviour-probe columns (bench/scoring/action_probe.py) from one task's probe rows."""
    rows = [p for p in rows if p.get("moment") == "behaviour"]
    nxt = [p for p in rows if p.get("probe") == "next_action"]
    meta = next((p for p in reversed(rows) if p.get("probe") == "prober"), {})
    choice = [p for p in rows if p.get("probe") == "constraint_choice"]
    kept = {arm: _share([p.get(field) for p in choice]) for arm, field in (
        ("", "obeyed"), ("_full", "obeyed_full"), ("_restated", "obeyed_restated"), ("_unstated", "obeyed_unstated"))}
    effect = judged = math.nan
    if choice:  # numpy only where there are choices (--probe anthropic)
        from bench.scoring.stats import agreement, effect_retention

        effect = effect_retention(kept[""], kept["_unstated"], kept["_restated"])
        judged = agreement([p.get("retained_exact") for p in choice], [p.get("retained_judged") for p in choice]).share
    return {"next_action_agreement": _share([p.get("agrees_full") for p in nxt]),
            "next_action_recorded_agreement": _share([p.get("agrees_recorded") for p in nxt]),
            **{f"constraint_obedience{arm}": v for arm, v in kept.items()},
            "constraint_effect_retention": effect,
            "constraint_judge_agreement": judged,
            "behaviour_probes_paid": meta.get("paid", 0 if rows else math.nan),
            "behaviour_probes_skipped": meta.get("skipped", 0 if rows else math.nan),
            "behaviour_probe_cost": meta.get("cost", 0.0 if rows else math.nan)}


def task_row(r: TaskResult, window: int | None = None) -> dict[str, object]:
    """One task's metrics from its own rows (run in the worker: no scan of other tasks' rows).

    Straight from the records, no frame (a frame per task cost ~12 ms, as much as some replays);
    float totals and means are taken with numpy as pandas took them, so the values are the same
    to the bit. Missing values are None or NaN (never ``pd.NA``), so the row stores as is in Parquet.
    """
    import numpy as np
    import pandas as pd
    calls = r.calls
    agent = [c for c in calls.rows() if c.kind == "agent"]
    kind, costs = calls.column("kind"), calls.column("cost")
    events = [x for x in r.events if x.kind != INVALID]  # the replay's flag, not an action
    prompt = sum(calls.column("prompt_tokens"))
    cost = _sum(costs)
    agent_prompts = [c.prompt_tokens for c in agent]
    open_loop = r.open_loop or {}
    row = {
        "trace": r.trace,
        "strategy": r.strategy,
        "calls": len(agent),
        "input_tokens": prompt,
        "peak_context": max(agent_prompts) if agent else 0,
        "mean_context": float(np.asarray(agent_prompts, dtype=np.int64).sum(dtype=np.float64) / len(agent))
        if agent else 0.0,
        "compactions": sum(1 for e in events if e.kind in COMPACTION_KINDS),
        "events": len(events),
        "overflows": sum(1 for c in agent if c.overflow),
        "invalid_requests": sum(1 for c in agent if c.invalid > 0),
        "cost": cost,
        "cost_no_cache": _sum(calls.column("cost_no_cache")),
        "cost_open_loop": float(open_loop.get("cost", cost)),
        "input_tokens_open_loop": open_loop.get("input_tokens", prompt),
        "rereads": sum(calls.column("rereads")),
        "reread_tokens": sum(calls.column("reread_tokens")),
        "cache_hit_rate": sum(calls.column("cache_read")) / prompt if prompt else 0.0,
        "prefix_breaks": sum(1 for c in agent if c.prefix_break),
        "unseen_references": sum(c.unseen_refs for c in agent),
        "summarizer_cost_share": _sum([c for c, k in zip(costs, kind, strict=True) if k == "summarizer"]) / cost
        if cost else 0.0,
        "failed": r.failed or "",
        "error": r.error or "",
        **_scores(r, agent, events, window),
        **detector_counts(findings(r.trace, r.strategy, agent, events, window)),  # they read agent rows only
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
    import numpy as np
    import pandas as pd
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
    import pandas as pd
    return finish_table(pd.DataFrame([task_row(r, window) for r in results]))


BEHAVIOUR_SHARES = ("next_action_agreement", "next_action_recorded_agreement", "constraint_obedience",
                    "constraint_obedience_full", "constraint_obedience_restated", "constraint_obedience_unstated",
                    "constraint_judge_agreement")
"""The behaviour-probe shares (``--probe anthropic``) that ``by_strategy`` gives with ``_low`` / ``_high``."""


def mean_ci(values: Any) -> tuple[float, float]:
    """The 95% bootstrap interval of a strategy's mean over traces of a per-trace share, traces resampled
    (bench.scoring.stats.paired_bootstrap against zero; NaN for fewer than two traces). results.csv holds
    no per-trace probe counts, so this is the traces' spread alone; the report's behaviour lines
    (bench.scoring.behaviour, from probes.csv) also resample the probes within each trace."""
    if len(values) < 2:
        return math.nan, math.nan
    from bench.scoring.stats import paired_bootstrap

    c = paired_bootstrap([0.0] * len(values), values)  # the mean of the values, resampled by trace
    return c.ci_low, c.ci_high


def by_strategy(table: pd.DataFrame) -> pd.DataFrame:
    """Totals over traces per strategy (the printed table), sorted by cost."""
    import pandas as pd
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
        "cost_open_loop": g.cost_open_loop.sum(),
        "rereads": g.rereads.sum(),
        "false_economy": g.false_economy.sum(),
        "unseen_references": g.unseen_references.sum(),
        "retention": g.retention.mean(),
        "compaction_retention": g.compaction_retention.mean(),
    })
    for col in ("instructions", "skills"):  # only when the run planted rules
        if col in table and table[col].notna().any():
            out[col] = g[col].mean()
    if table.llm_recall.notna().any():
        out["llm_recall"] = g.llm_recall.mean()
    if table.constraint_retention.notna().any():
        out["constraint_retention"] = g.constraint_retention.mean()
    for col in BEHAVIOUR_SHARES:  # --probe anthropic only: the mean over traces, and its interval over them
        if col in table and table[col].notna().any():
            out[col] = g[col].mean()
            ci = {s: mean_ci(v.dropna().to_numpy(dtype=float)) for s, v in g[col]}
            out[f"{col}_low"] = pd.Series({s: c[0] for s, c in ci.items()})
            out[f"{col}_high"] = pd.Series({s: c[1] for s, c in ci.items()})
    if {"constraint_obedience", "constraint_obedience_restated", "constraint_obedience_unstated"} <= set(out):
        from bench.scoring.stats import effect_retention

        out["constraint_effect_retention"] = [  # of the strategy's means, as COMPINT takes it per compactor
            effect_retention(r.constraint_obedience, r.constraint_obedience_unstated, r.constraint_obedience_restated)
            for r in out.itertuples()]
    if table.behaviour_probes_paid.notna().any():
        out["behaviour_probes_paid"] = g.behaviour_probes_paid.sum()
        out["behaviour_probes_skipped"] = g.behaviour_probes_skipped.sum()
        out["behaviour_probe_cost"] = g.behaviour_probe_cost.sum()
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
