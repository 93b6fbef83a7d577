"""SWE-agent LastNObservations: which observations are elided, the exact marker, the cache cost."""

from __future__ import annotations

from dataclasses import replace

import strategies
from bench.context.messages import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.summarizers.extractive import ExtractiveSummarizer
from bench.tokens.counter import TokenCounter
from strategies.swe_agent import LastNObservations, elided, last_n_elided
from traces.model import Message, ToolResult, ToolUse, Trace, orphans

SYSTEM = "You are a coding agent. " * 300  # over the 1,024-token minimum cache prefix
MODEL = replace(profile("claude-sonnet-4-5"), id="small", context_window=50_000, max_output=2_000)


def output(i: int) -> str:
    return "\n".join(f"out {i} line {k}" for k in range(i + 2))  # result i has i + 2 lines


def trace(steps: int, task: bool = True) -> Trace:
    msgs = [Message.text_message("system", SYSTEM)]
    if task:
        msgs.append(Message.text_message("user", "Fix the bug in app.py"))
    for i in range(steps):
        msgs.append(Message("assistant", (ToolUse(f"c{i}", "bash", {"command": f"cat f{i}"}),)))
        msgs.append(Message("user", (ToolResult(f"c{i}", output(i)),)))
    msgs.append(Message.text_message("assistant", "done"))
    return Trace("t", tuple(msgs))


def sent_results(strategy, msgs, counter) -> dict[str, str]:
    meter = Meter(counter, strategy.estimator)
    session = Session(MODEL, meter, ExtractiveSummarizer())
    ctx = meter.context(msgs)
    strategy.before_call(ctx, session)
    sent = strategy.project(ctx, session)
    assert ctx.messages == tuple(msgs), "the stored history is never rewritten"
    return {b.tool_use_id: b.content for m in sent.messages for b in m.tool_results}


def test_keeps_the_last_n_and_elides_the_rest_with_the_exact_marker(counter):
    msgs = trace(8).messages[:-1]  # task + 8 results: K = 9, last_removed = 9 - 5 = 4 -> obs[1:4]
    results = sent_results(LastNObservations(n=5), msgs, counter)
    assert results["c0"] == "Old environment output: (2 lines omitted)"
    assert results["c1"] == "Old environment output: (3 lines omitted)"
    assert results["c2"] == "Old environment output: (4 lines omitted)"
    assert all(results[f"c{i}"] == output(i) for i in range(3, 8))


def test_the_first_observation_is_never_elided(counter):
    msgs = trace(8, task=False).messages[:-1]  # no task message: obs[0] is c0, K = 8 -> obs[1:3]
    results = sent_results(LastNObservations(n=5), msgs, counter)
    assert results["c0"] == output(0)
    assert results["c1"] == elided(output(1)) == "Old environment output: (3 lines omitted)"
    assert results["c2"] == elided(output(2))
    assert all(results[f"c{i}"] == output(i) for i in range(3, 8))


def test_polling_moves_the_boundary_in_steps():
    # n=5, polling=3: last_removed = floor(K / 3) * 3 - 5; K counts the task message
    for steps, expected in ((8, 3), (9, 3), (10, 3), (11, 6)):
        ids = last_n_elided(trace(steps).messages[:-1], 5, 3)
        assert ids == {f"c{i}" for i in range(expected)}, steps


def test_nothing_is_elided_within_the_window():
    assert last_n_elided(trace(5).messages[:-1], 5) == frozenset()
    assert last_n_elided(trace(6).messages[:-1], 5) == {"c0"}


def test_registered_default_is_the_paper_config():
    s = strategies.build("swe-agent")
    assert isinstance(s, LastNObservations) and s.n == 5 and s.polling == 1


def test_replay_end_to_end_masks_every_call_and_breaks_the_cache():
    seen = []

    def observe(moment, call, ctx):
        seen.append(ctx)
        return []

    t = trace(12)
    result = replay(t, strategies.build("swe-agent"), ReplayConfig(MODEL), counter=TokenCounter(), observers=(observe,))
    assert len(result.calls) == t.n_calls == 13
    final = seen[-1].messages
    assert orphans(final) == (set(), set())
    kept = [b.content for m in final for b in m.tool_results if not b.content.startswith("Old environment output")]
    assert len(kept) == 5
    masks = [e for e in result.events if e.kind == "mask"]
    assert len(masks) == 12 - 5  # one more observation elided per call once past the window
    breaks = [c.call for c in result.calls if c.prefix_break]
    none = replay(t, strategies.build("none"), ReplayConfig(MODEL), counter=TokenCounter())
    assert not any(c.prefix_break for c in none.calls)
    assert breaks == list(range(6, 13))  # the rolling rewrite breaks the prompt cache every call
    assert sum(c.prompt_tokens for c in result.calls) < sum(c.prompt_tokens for c in none.calls)


def test_mask_events_match_the_from_scratch_sets_across_a_rewritten_history(counter):
    # the elided ids are kept as a growing list: each event's count must be what the sets give
    # (this call's elided ids minus those of the last event), also after the history is rewritten
    # (a summary: the view starts afresh with fewer ids, and the last event's set is an old view's)
    meter = Meter(counter, "truth")
    session = Session(MODEL, meter, ExtractiveSummarizer())
    s = LastNObservations(n=3)
    msgs = list(trace(30).messages[:-1])
    ctx = meter.context(())
    previous: frozenset[str] = frozenset()
    events = 0
    for k, m in enumerate(msgs):
        if k == 40:  # keep the head and the newest 12 messages, the rest summarized away
            ctx = ctx.replace((*ctx.messages[:2], Message.text_message("user", "summary"), *ctx.messages[-12:]))
        ctx = ctx.append(m)
        if m.role != "user":
            continue
        outcome = s.before_call(ctx, session)
        ids = last_n_elided(ctx.messages, 3)
        if ids - previous:
            assert outcome is not None
            (e,) = outcome.events
            assert e.messages_touched == len(ids - previous)
            assert e.detail.startswith(f"sent view: {len(ids)} old observations elided")
            previous, events = ids, events + 1
        else:
            assert outcome is None
    assert events > 20
