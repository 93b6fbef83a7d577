"""Cost truth from the call ledger, the false-economy flag, and estimator-vs-truth gaps."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd
import pytest

import strategies
from bench.context.strategy import Outcome, Strategy, event
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.replay.records import CallRecord, EventRecord
from bench.scoring.economics import cost_truth, estimator_vs_truth, hidden_overflows, trigger_gaps
from bench.scoring.metrics import frames
from bench.tokens.counter import TokenCounter
from traces.model import Message, ToolResult, ToolUse, Trace


def call(strategy, n, kind, prompt, read, write, cost, no_cache, brk, trace="t", estimate=None, output=0):
    return CallRecord(trace, strategy, n, kind, 3, prompt, prompt if estimate is None else estimate, read, write,
                      prompt - read - write, output, cost, no_cache, brk, False, 0.0)


def test_cost_truth_hand_values_and_false_economy():
    rows = [
        call("s", 0, "agent", 1_000, 0, 1_000, 1.0, 0.8, False),
        call("s", 1, "agent", 1_500, 1_000, 500, 0.5, 1.2, False),
        call("s", 1, "summarizer", 1_500, 1_000, 500, 0.5, 0.5, False),
        call("s", 2, "agent", 800, 200, 600, 1.0, 0.64, True),
        call("none", 0, "agent", 5_000, 0, 5_000, 2.0, 4.0, False),
    ]
    out = cost_truth(pd.DataFrame([asdict(r) for r in rows])).set_index("strategy")
    s = out.loc["s"]
    assert s.calls == 3 and s.input_tokens == 4_800 and s.cost == pytest.approx(3.0)
    assert s.cache_hit_rate == pytest.approx(2_200 / 4_800)
    assert s.summarizer_share == pytest.approx(0.5 / 3.0)
    assert s.prefix_breaks == 1 and s.rewritten_tokens == 600
    assert s.lost_prefix_tokens == 1_300  # the previous agent request was 1,500 tokens; 200 read back
    assert s.token_saving == pytest.approx(0.04) and s.cost_saving == pytest.approx(-0.5)
    assert s.false_economy and not out.loc["none", "false_economy"]


PROFILE = profile("claude-sonnet-4-5")


def growing_trace(steps: int = 8) -> Trace:
    msgs = [Message.text_message("system", "rule " * 1_500), Message.text_message("user", "context " * 3_000)]
    for i in range(steps):
        msgs.append(Message("assistant", (ToolUse(f"c{i}", "bash", {"command": f"cat log{i}"}),)))
        msgs.append(Message("user", (ToolResult(f"c{i}", f"line{i} " * 1_500),)))
    msgs.append(Message.text_message("assistant", "done"))
    return Trace("grow", tuple(msgs))


@dataclass(frozen=True, kw_only=True)
class TrimEarly(Strategy):
    """Rewrites the early user message on every call, differently each time: the prefix breaks."""

    name = "trim-early"

    def before_call(self, ctx, session):
        m = ctx.messages
        new = ctx.replace((m[0], Message.text_message("user", f"[context trimmed at call {session.call_index}]"),
                           *m[2:]))
        return Outcome(new, (event("truncate", ctx, new, touched=1),))


def test_pruning_that_breaks_the_prefix_every_call_is_a_false_economy():
    trace, counter = growing_trace(), TokenCounter()
    both = (strategies.build("none"), TrimEarly())
    results = [replay(trace, s, ReplayConfig(PROFILE), counter=counter) for s in both]
    calls, _ = frames(results)
    out = cost_truth(calls).set_index("strategy")
    trim, none = out.loc["trim-early"], out.loc["none"]
    assert trim.input_tokens < none.input_tokens and trim.cost > none.cost
    assert trim.cost_no_cache < none.cost_no_cache  # without the cache it really would save
    assert trim.false_economy and not none.false_economy
    assert trim.prefix_breaks == trim.calls - 1 == 8 and none.prefix_breaks == 0
    assert none.cache_hit_rate > 0.7 and trim.cache_hit_rate < 0.4 and trim.rewritten_tokens > 0
    # by hand: after the rewrite only the system prompt is still a shared prefix, so every later call
    # reads exactly that from the cache and writes the rest again at 1.25x ($3.75 vs $0.30 per MTok)
    system = counter.truth(trace.messages[0])
    agent = calls[(calls.strategy == "trim-early") & (calls.kind == "agent")].sort_values("call")
    later = agent[agent.call > 0]
    assert (later.cache_read == system).all() and (later.cache_write == later.prompt_tokens - system).all()
    assert trim.rewritten_tokens == later.prompt_tokens.sum() - 8 * system
    hand = (later.cache_read * 0.30 + later.cache_write * 3.75 + later.output_tokens * 15.0) / 1e6
    assert later.cost.tolist() == pytest.approx(hand.tolist())


def test_trigger_gaps_and_hidden_overflows():
    events = pd.DataFrame([asdict(e) for e in (
        EventRecord("t", "s", 3, "before_call", "summarize", 100, 20, 90, 5, 10, ""),
        EventRecord("t", "s", 7, "before_call", "summarize", 210, 30, 150, 5, 10, ""),
    )])
    gaps = trigger_gaps(events, window=200)
    assert gaps.ratio.tolist() == pytest.approx([0.9, 150 / 210])
    assert gaps.late.tolist() == [False, True]  # truth 210 > 200 while the estimate said 150
    calls = pd.DataFrame([asdict(c) for c in (
        call("s", 0, "agent", 100, 0, 0, 0.1, 0.1, False, estimate=80, output=10),
        call("s", 1, "agent", 195, 0, 0, 0.1, 0.1, False, estimate=150, output=10),  # 205 > 200, estimate 160
        call("s", 2, "agent", 250, 0, 0, 0.1, 0.1, False, estimate=240, output=10),  # both over: not hidden
    )])
    assert hidden_overflows(calls, window=200).call.tolist() == [1]
    row = estimator_vs_truth(events, calls, window=200).set_index("strategy").loc["s"]
    assert row.triggers == 2 and row.late_triggers == 1 and row.hidden_overflows == 1
    assert row.call_ratio_p50 == pytest.approx(0.8)  # median of 80/100, 150/195, 240/250


def test_an_empty_ledger_gives_an_empty_table_with_the_columns():
    calls, _ = frames([])
    out = cost_truth(calls)
    assert out.empty and {"cost", "false_economy", "rewritten_tokens"} <= set(out.columns)


def test_only_the_first_event_of_an_outcome_is_a_trigger():
    # call 5: one outcome = summarize (168K → 5K) then reinject (5K → 9K), both recorded with the
    # estimate of the context before the outcome (132K). The reinject's 132K / 5K = 26.4 compares
    # two different contexts; only 132K / 168K is the strategy's estimate against the truth.
    # call 9: a separate action on a new context (its estimate differs) counts again.
    events = pd.DataFrame([asdict(e) for e in (
        EventRecord("t", "s", 5, "before_call", "summarize", 168_000, 5_000, 132_000, 40, 900, ""),
        EventRecord("t", "s", 5, "before_call", "reinject", 5_000, 9_000, 132_000, 2, None, ""),
        EventRecord("t", "s", 9, "before_call", "prune", 30_000, 20_000, 24_000, 3, None, ""),
    )])
    gaps = trigger_gaps(events, window=200_000)
    assert gaps.kind.tolist() == ["summarize", "prune"]
    assert gaps.ratio.tolist() == pytest.approx([132 / 168, 0.8])
    calls = pd.DataFrame([asdict(call("s", 5, "agent", 9_000, 0, 0, 0.1, 0.1, False))])
    row = estimator_vs_truth(events, calls, window=200_000).set_index("strategy").loc["s"]
    assert row.triggers == 2 and row.trigger_ratio_p90 < 1
