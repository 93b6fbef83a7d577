"""Cost truth from the per-call ledger, and how far each strategy's own token estimate was off.

Tokens billed and dollars disagree once the prompt cache is priced (evaluation.md §D): a
strategy that rewrites an old message breaks the cached prefix, so every later token is written
to the cache again (x1.25 on Anthropic) instead of read (x0.1). This module reports, per
(trace, strategy), dollars with and without the cache, the summarizer's share, the cache-hit
rate, prefix breaks, tokens re-written after a break, and the **false economy** flag (§F.4):
fewer input tokens than ``none`` on the same trace, more dollars.

Estimator vs truth (§F.5): agents trigger on a local estimate (chars/4 and friends); scoring
uses the tokenizer. The ratio estimate/truth at each trigger shows how early or late a strategy
really fires, and a call whose estimate fits the window while the truth does not is an overflow
the agent would not have seen coming.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bench.replay.validity import EVENT_KIND as INVALID
from bench.scoring.metric import Metric
from bench.scoring.stats import QUANTILES, percentiles

BASELINE = "none"
METRICS: tuple[Metric, ...] = (
    Metric("token_saving", "fraction", False, "1 − input tokens / input tokens of `none` on the same trace."),
    Metric("cost_saving", "fraction", False,
           "1 − dollars / dollars of `none` on the same trace, prompt cache priced."),
    Metric("cost_saving_no_cache", "fraction", False,
           "The same saving had every prompt token been billed at the input rate."),
    Metric("rewritten_tokens", "tokens", True,
           "Tokens written to the cache again by agent calls that broke the prefix."),
    Metric("lost_prefix_tokens", "tokens", True,
           "Tokens of the previous request that a prefix-breaking call failed to read back from the cache."),
    Metric("late_triggers", "events", True,
           "Strategy actions taken when the truth was already over the window but the estimate was not."),
    Metric("hidden_overflows", "calls", True, "Calls whose estimate fit the window while the true prompt did not."),
    Metric("trigger_ratio_p50", "ratio", None, "Median of the strategy's estimate / true tokens when it acted."),
)
KEYS = ["trace", "strategy"]
COST_COLUMNS = ("calls", "input_tokens", "cache_read", "cache_write", "uncached", "cost", "cost_no_cache",
                "summarizer_cost", "prefix_breaks", "rewritten_tokens", "lost_prefix_tokens", "cache_hit_rate",
                "summarizer_share", "token_saving", "cost_saving", "cost_saving_no_cache", "false_economy")


def cost_truth(calls: pd.DataFrame, *, baseline: str = BASELINE) -> pd.DataFrame:
    """One row per (trace, strategy) from CallRecord rows (agent and summarizer calls).

    ``rewritten_tokens`` is the cache write of agent calls that broke the prefix (the tail
    written again); ``lost_prefix_tokens`` is how much of the previous agent request's prompt
    that call failed to read back. Savings are relative to ``baseline`` on the same trace.
    """
    if calls.empty:
        return pd.DataFrame(columns=[*KEYS, *COST_COLUMNS])
    c = calls.sort_values([*KEYS, "call", "kind"]).copy()
    agent = c.kind == "agent"
    c["break_write"] = np.where(agent & c.prefix_break, c.cache_write, 0)
    previous_prompt = c[agent].groupby(KEYS).prompt_tokens.shift(1)
    lost = (previous_prompt - c.loc[agent, "cache_read"]).clip(lower=0)
    c["lost_prefix"] = 0.0
    c.loc[lost.index, "lost_prefix"] = np.where(c.loc[lost.index, "prefix_break"], lost.fillna(0), 0)
    c["summ_cost"] = np.where(c.kind == "summarizer", c.cost, 0.0)
    c["agent_call"] = agent
    g = c.groupby(KEYS)
    out = pd.DataFrame({
        "calls": g.agent_call.sum(),
        "input_tokens": g.prompt_tokens.sum(),
        "cache_read": g.cache_read.sum(),
        "cache_write": g.cache_write.sum(),
        "uncached": g.uncached.sum(),
        "cost": g.cost.sum(),
        "cost_no_cache": g.cost_no_cache.sum(),
        "summarizer_cost": g.summ_cost.sum(),
        "prefix_breaks": g.prefix_break.sum(),
        "rewritten_tokens": g.break_write.sum(),
        "lost_prefix_tokens": g.lost_prefix.sum(),
    }).reset_index()
    out["calls"] = out.calls.astype(int)
    out["prefix_breaks"] = out.prefix_breaks.astype(int)
    out["cache_hit_rate"] = _ratio(out.cache_read, out.input_tokens)
    out["summarizer_share"] = _ratio(out.summarizer_cost, out.cost)
    base = out[out.strategy == baseline].set_index("trace")
    none_tokens = out.trace.map(base.input_tokens)
    none_cost = out.trace.map(base.cost)
    none_cost_nc = out.trace.map(base.cost_no_cache)
    out["token_saving"] = 1 - out.input_tokens / none_tokens
    out["cost_saving"] = 1 - out.cost / none_cost
    out["cost_saving_no_cache"] = 1 - out.cost_no_cache / none_cost_nc
    out["false_economy"] = false_economy(out.input_tokens, out.cost, none_tokens, none_cost)
    return out


def false_economy(tokens: pd.Series, cost: pd.Series, none_tokens: pd.Series, none_cost: pd.Series) -> pd.Series:
    """Fewer input tokens than the baseline but more dollars (False where there is no baseline)."""
    return ((tokens < none_tokens) & (cost > none_cost)).fillna(False).astype(bool)


def _ratio(num: pd.Series, den: pd.Series) -> pd.Series:
    return (num / den.where(den != 0)).fillna(0.0)


def chained(events: pd.DataFrame) -> pd.Series:
    """True for an event that continues the previous one's outcome (in record order).

    One outcome can hold several events (Claude Code's summarize then reinject, a mask after a
    summary): each is recorded with the estimate of the context *before the outcome*, while its
    ``tokens_before`` is the truth of the intermediate context the previous event left. Only the
    first event of an outcome compares an estimate and a truth of the same context. An event is
    chained when it shares (trace, strategy, call, hook, estimate_before) with the previous row
    and starts where that row ended (its tokens_before is the previous tokens_after).
    """
    keys = [*KEYS, "call", "hook", "estimate_before"]
    prev = events.shift(1)
    same = pd.Series(True, index=events.index)
    for k in keys:
        same &= events[k].eq(prev[k])
    return (same & events.tokens_before.eq(prev.tokens_after)).fillna(False).astype(bool)


def trigger_gaps(events: pd.DataFrame, window: int) -> pd.DataFrame:
    """Per strategy action: the strategy's estimate over the truth when it acted, and whether the
    truth was already over ``window`` while the estimate was not (a trigger that came too late).

    Events that continue an outcome (``chained``) are left out: their estimate and truth describe
    different contexts (a reinject after a summary would read as a 30x over-count).
    """
    events = events[events.kind != INVALID] if "kind" in events else events  # the replay's flag, not an action
    events = events[~chained(events)] if "tokens_after" in events else events
    e = events[[*KEYS, "call", "hook", "kind", "estimate_before", "tokens_before"]].copy()
    e["ratio"] = _ratio(e.estimate_before.astype(float), e.tokens_before.astype(float))
    e["late"] = (e.tokens_before > window) & (e.estimate_before <= window)
    return e


def hidden_overflows(calls: pd.DataFrame, window: int) -> pd.DataFrame:
    """Agent calls whose estimate (plus output) fits ``window`` but whose truth does not."""
    a = calls[calls.kind == "agent"]
    hidden = (a.estimate_tokens + a.output_tokens <= window) & (a.prompt_tokens + a.output_tokens > window)
    return a[hidden]


def estimator_vs_truth(events: pd.DataFrame, calls: pd.DataFrame, window: int) -> pd.DataFrame:
    """Per strategy: estimate/truth ratio percentiles at its triggers and over its calls, late
    triggers and hidden overflows (see ``trigger_gaps`` and ``hidden_overflows``).

    A ratio under 1 means the strategy under-counts (fires later than it thinks); strategies that
    trigger on the provider's reported usage rather than their estimate show it less.
    """
    gaps = trigger_gaps(events, window) if len(events) else pd.DataFrame(columns=[*KEYS, "ratio", "late"])
    agent = calls[calls.kind == "agent"]
    call_ratio = _ratio(agent.estimate_tokens.astype(float), agent.prompt_tokens.astype(float))
    hidden = hidden_overflows(calls, window)
    rows = []
    for strategy in sorted(set(agent.strategy) | set(gaps.strategy)):
        g = gaps[gaps.strategy == strategy]
        t = percentiles(g.ratio, QUANTILES[:2] + (10,))
        c = percentiles(call_ratio[agent.strategy == strategy], (50,))
        rows.append({"strategy": strategy, "triggers": t["n"], "trigger_ratio_p10": t["p10"],
                     "trigger_ratio_p50": t["p50"], "trigger_ratio_p90": t["p90"],
                     "late_triggers": int(g.late.sum()), "calls": c["n"], "call_ratio_p50": c["p50"],
                     "hidden_overflows": int((hidden.strategy == strategy).sum())})
    return pd.DataFrame(rows)
