"""bench.scoring.metrics.task_row, computed from the records without a frame, gives the frame's numbers to the bit."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

import strategies
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.replay.records import CallRecord, EventRecord, TaskResult, columns
from bench.replay.validity import EVENT_KIND as INVALID
from bench.scoring.economics import chained
from bench.scoring.metrics import task_row
from bench.scoring.probes import needle_observer
from traces.synthetic import generate


def _frame_numbers(r: TaskResult, window: int | None) -> dict[str, object]:
    """The float and count columns as the frame-based task_row took them (pandas sums and medians)."""
    c = pd.DataFrame(columns(r.calls, CallRecord))
    agent, summ = c[c.kind == "agent"], c[c.kind == "summarizer"]
    e = pd.DataFrame(columns([x for x in r.events if x.kind != INVALID], EventRecord))
    cost = float(c.cost.sum())
    acted = e[(e.tokens_before > 0) & ~chained(e)] if len(e) else e
    return {
        "input_tokens": int(c.prompt_tokens.sum()),
        "mean_context": float(agent.prompt_tokens.mean()),
        "cost": cost,
        "cost_no_cache": float(c.cost_no_cache.sum()),
        "cache_hit_rate": float(c.cache_read.sum() / c.prompt_tokens.sum()),
        "summarizer_cost_share": float(summ.cost.sum() / cost) if cost else 0.0,
        "estimate_ratio": float((acted.estimate_before / acted.tokens_before).median()) if len(acted) else np.nan,
        "hidden_overflows": int(((agent.estimate_tokens + agent.output_tokens <= window)
                                 & (agent.prompt_tokens + agent.output_tokens > window)).sum()) if window else 0,
        "compactions": int(e.kind.isin(("summarize", "handoff")).sum()) if len(e) else 0,
        "overflows": int(agent.overflow.sum()),
    }


@pytest.mark.parametrize("name", ["none", "codex", "claude-code", "five-layer", "openhands", "gemini-cli", "swe-agent"])
def test_task_row_equals_the_frame_numbers_on_replays(name, counter):
    trace = generate("short", 0)
    r = replay(trace, strategies.build(name), ReplayConfig(profile("claude-sonnet-4-5")), counter=counter,
               observers=(needle_observer(trace),))
    for window in (None, 30_000):
        row = task_row(r, window)
        for key, value in _frame_numbers(r, window).items():
            assert repr(row[key]) == repr(value), key  # NaN included, to the last bit
            assert type(row[key]) is type(value), key


def _call(i: int, cost: float, prompt: int, kind: str = "agent") -> CallRecord:
    return CallRecord("t", "s", i, kind, 3, prompt, prompt - 7, prompt // 3, 0, prompt - prompt // 3, 50, cost,
                      cost * 1.5, False, False, float(i))


def test_float_totals_are_summed_pairwise_as_pandas_does():
    rng = random.Random(7)
    costs = [rng.uniform(0.0001, 0.3) for _ in range(2_000)]
    assert sum(costs) != float(np.sum(costs))  # left-to-right and pairwise differ here: the test can fail
    calls = [_call(i, c, rng.randrange(1_000, 90_000), "summarizer" if i % 9 == 0 else "agent")
             for i, c in enumerate(costs)]
    r = TaskResult("t", "s", calls)
    row = task_row(r)
    assert row["cost"] == float(pd.Series(costs).sum())
    assert row["mean_context"] == float(pd.Series([c.prompt_tokens for c in calls if c.kind == "agent"]).mean())
    for key, value in _frame_numbers(r, None).items():
        assert repr(row[key]) == repr(value), key


def test_a_chained_event_is_left_out_of_the_estimate_ratio():
    def ev(call: int, before: int, after: int, estimate: int, kind: str = "prune") -> EventRecord:
        return EventRecord("t", "s", call, "before_call", kind, before, after, estimate, 1, None, "")

    # call 3: a summary then a re-inject on its result (chained: same estimate, starts where it ended)
    events = [ev(1, 1_000, 500, 800), ev(3, 2_000, 400, 1_000, "summarize"), ev(3, 400, 900, 1_000),
              ev(4, 0, 0, 50), ev(5, 1_500, 700, 3_000, INVALID), ev(6, 1_200, 600, 600)]
    r = TaskResult("t", "s", [_call(i, 0.01, 2_000) for i in range(7)], events)
    row = task_row(r)
    # median of 0.8, 0.5 and 0.5; with the chained one (2.5) it would be 0.65, with the flag (2.0) too
    assert row["estimate_ratio"] == 0.5
    assert row["compactions"] == 1 and row["events"] == 5
    assert repr(row["estimate_ratio"]) == repr(_frame_numbers(r, None)["estimate_ratio"])
