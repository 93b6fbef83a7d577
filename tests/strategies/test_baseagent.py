"""BaseAgent: truncation at arrival, prune, then summary (strategies/baseagent.py).

Contexts are built from " abc" runs: 4 chars and one cl100k token each, so the chars/4
estimate BaseAgent decides with is exact and the truth is within a few tokens per message.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

import strategies
from bench.context.messages import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.summarizers.extractive import ExtractiveSummarizer
from strategies._tools import rewrite_results
from strategies.baseagent import PRUNE_MARKER, SUMMARY_PREFIX, TRUNCATION_MARKER, BaseAgent, middle_out
from traces.model import Message, Text, ToolResult, ToolUse, Trace, orphans

W = " abc"


def text(role: str, tokens: int) -> Message:
    return Message(role, (Text(W * tokens),))


def call(i: int, tokens: int = 2) -> Message:
    """An assistant message with one tool call, estimated at exactly ``tokens`` (≥ 2)."""
    pad = (Text(W * (tokens - 2)),) if tokens > 2 else ()
    return Message("assistant", (*pad, ToolUse(f"t{i}", "bash", {})))


def result(i: int, tokens: int) -> Message:
    return Message("user", (ToolResult(f"t{i}", W * tokens),))


def session(counter) -> Session:
    return Session(profile("claude-sonnet-4-5"), Meter(counter, "chars/4"), ExtractiveSummarizer())


def context(counter, msgs):
    return Meter(counter, "chars/4").context(msgs)


def test_usable_context_and_threshold(counter):
    sess = session(counter)
    assert BaseAgent().usable(sess) == 168_000
    assert BaseAgent().usable(sess) * BaseAgent().threshold == pytest.approx(142_800)
    small = context(counter, [text("system", 100_000), text("user", 42_800)])
    assert small.estimate == 142_800 and BaseAgent().before_call(small, sess) is None  # strictly above


def test_worked_example_150k_to_60k(counter):
    """The docs' picture: 5K system, 1K task, three 10K calls, outputs 50K + 40K (old) and 24K
    (recent). Two short human turns after the outputs let the walk reach them (it skips
    everything after the second-newest user turn); the task shrinks by their 750 tokens."""
    msgs = [text("system", 5_000), text("user", 250), call(1, 10_000), result(1, 50_000),
            call(2, 10_000), result(2, 40_000), call(3, 10_000), result(3, 24_000),
            text("user", 250), text("assistant", 250), text("user", 250)]
    ctx = context(counter, msgs)
    assert ctx.estimate == 150_000
    sess = session(counter)
    out = BaseAgent().before_call(ctx, sess)
    (ev,) = out.events
    assert ev.kind == "prune"
    assert ev.detail.startswith("Pruning sufficient: 150000 -> 60016 tokens")  # 2 markers × 8 tokens
    assert ev.detail.endswith("(scan 114000, prunable 90000)")
    assert abs(ev.tokens_before - 150_000) < 100 and abs(ev.tokens_after - 60_000) < 100
    assert out.context is ctx  # a per-call view: the stored history keeps every output
    sent = BaseAgent().project(out.context, sess)
    contents = [r.content for m in sent.messages for r in m.tool_results]
    assert contents == [PRUNE_MARKER, PRUNE_MARKER, W * 24_000]


def test_pruning_sufficient_148000_to_93000_without_ai_compaction(counter):
    """The docs' log: "Prune scan: 95000 total tokens, 55000 prunable", 12 outputs pruned,
    "Pruning sufficient: 148000 -> 93000 tokens" (ours adds the 12 markers' 8 tokens each)."""
    older = [4_583] * 11 + [4_587]
    msgs = [text("system", 50_000), text("user", 2_674)]
    for i, size in enumerate(older):
        msgs += [call(i), result(i, size)]
    msgs += [call(12), result(12, 40_000), text("user", 100), text("assistant", 100), text("user", 100)]
    ctx = context(counter, msgs)
    assert ctx.estimate == 148_000
    calls = []
    sess = session(counter)
    sess.on_summary = lambda req, s: calls.append(req)
    out = BaseAgent().before_call(ctx, sess)
    assert [e.kind for e in out.events] == ["prune"] and calls == []
    assert out.events[0].detail == "Pruning sufficient: 148000 -> 93096 tokens (scan 95000, prunable 55000)"
    assert out.context.estimate == 148_000 and BaseAgent().project(out.context, sess).estimate == 93_096


def test_prune_is_a_per_call_view_the_next_call_prunes_again(counter):
    """manage_context returns the list for this call; the loop keeps it only when shorter (a
    compaction), so the outputs are whole in the stored history and pruned again on each call."""
    msgs = [text("system", 50_000), text("user", 2_674)]
    for i, size in enumerate([4_583] * 11 + [4_587]):
        msgs += [call(i), result(i, size)]
    msgs += [call(12), result(12, 40_000), text("user", 100), text("assistant", 100), text("user", 100)]
    strategy, sess = BaseAgent(), session(counter)
    ctx = context(counter, msgs)
    first = strategy.before_call(ctx, sess).context
    grown = first.append(text("assistant", 100), text("user", 100))
    again = strategy.before_call(grown, sess)
    assert again is not None and again.events[0].detail.startswith("Pruning sufficient: 148200 -> ")
    assert PRUNE_MARKER not in [r.content for m in again.context.messages for r in m.tool_results]
    assert PRUNE_MARKER in [r.content for m in strategy.project(again.context, sess).messages
                            for r in m.tool_results]


def test_prune_spares_the_last_two_user_turns_and_needs_20k(counter):
    msgs = [text("system", 10), text("user", 10), call(1), result(1, 30_000), call(2), result(2, 40_000),
            text("user", 10), call(3), result(3, 200_000), text("user", 10)]
    ctx = context(counter, msgs)
    pruned, scanned, prunable = BaseAgent().prune(ctx)
    # t3 is after the second-newest user turn: never counted; t2 fills the 40K protection exactly
    assert (scanned, prunable) == (70_000, 30_000)
    assert [r.content for m in pruned.messages for r in m.tool_results][0] == PRUNE_MARKER
    assert BaseAgent(prune_minimum=30_000).prune(ctx)[0] is ctx  # 30,000 is not > 30,000


def test_prune_stops_at_an_already_pruned_output(counter):
    msgs = [text("system", 10), text("user", 10), call(1), result(1, 90_000), call(2),
            Message("user", (ToolResult("t2", PRUNE_MARKER),)), call(4), result(4, 25_000), call(3), result(3, 40_000),
            text("user", 10), text("assistant", 10), text("user", 10)]
    pruned, scanned, prunable = BaseAgent().prune(context(counter, msgs))
    # the output that crosses the 40K protection goes whole; t1 is behind the marker: not scanned
    assert (scanned, prunable) == (65_000, 25_000)
    assert [r.content[:8] for m in pruned.messages for r in m.tool_results] == [W * 2, PRUNE_MARKER[:8],
                                                                             PRUNE_MARKER[:8], W * 2]


def test_insufficient_prune_falls_back_to_ai_compaction(counter):
    msgs = [text("system", 1_000), text("user", 120_000), call(1), result(1, 30_000), call(2), result(2, 30_000),
            text("user", 10), text("assistant", 10), text("user", 20)]
    ctx = context(counter, msgs)
    out = BaseAgent().before_call(ctx, session(counter))
    assert [e.kind for e in out.events] == ["prune", "summarize"]
    assert out.events[0].detail.startswith("Pruning insufficient")
    system, summary = out.context.messages
    assert system is msgs[0] and summary.role == "user" and summary.text.startswith(SUMMARY_PREFIX)
    assert msgs[-1].text in summary.text  # the latest request survives, quoted


def test_middle_out_keeps_head_and_tail():
    body = "HEAD-" + "x" * 20_000 + "-TAIL"
    cut = middle_out(body, 2_500)
    keep = 2_500 * 4 // 2 - 50
    assert cut == body[:keep] + TRUNCATION_MARKER + body[-keep:]
    assert cut.startswith("HEAD-") and cut.endswith("-TAIL") and len(cut) == 2 * keep + len(TRUNCATION_MARKER)
    assert middle_out("x" * 10_000, 2_500) is None  # exactly 10,000 chars fits


def test_each_output_is_truncated_on_arrival(counter):
    msgs = [text("system", 10), text("user", 10), call(1), Message("user", (ToolResult("t1", "A" * 30_000 + "Z"),))]
    out = BaseAgent().on_tool_result(context(counter, msgs), session(counter))
    content = out.context.messages[-1].tool_results[0].content
    assert content.startswith("A" * 4_950) and content.endswith("A" * 4_949 + "Z") and TRUNCATION_MARKER in content
    assert out.events[0].kind == "truncate"
    assert BaseAgent().on_tool_result(context(counter, msgs[:3] + [result(1, 100)]), session(counter)) is None


@pytest.mark.parametrize(("name", "threshold", "protect"), [
    ("baseagent", 0.85, 40_000), ("baseagent:long-tasks", 0.70, 30_000), ("baseagent:complex-tasks", 0.90, 60_000)])
def test_tuning_presets(name, threshold, protect):
    s = strategies.build(name)
    assert (s.threshold, s.prune_protect, s.prune_minimum) == (threshold, protect, 20_000)


def test_long_tasks_preset_triggers_at_70_percent(counter):
    ctx = context(counter, [text("system", 100_000), text("user", 17_601)])  # 117,601 > 0.70 × 168K
    assert strategies.build("baseagent").before_call(ctx, session(counter)) is None
    out = strategies.build("baseagent:long-tasks").before_call(ctx, session(counter))
    assert [e.kind for e in out.events] == ["summarize"]


def test_replays_end_to_end_without_orphans(counter):
    strat = BaseAgent(context_limit=20_000, output_reserve=2_000, prune_protect=2_000, prune_minimum=1_000)
    tiny = replace(profile("claude-sonnet-4-5"), context_window=20_000, max_output=2_000)
    msgs = [text("system", 200), text("user", 20)]
    for i in range(16):
        msgs += [call(i), Message("user", (ToolResult(f"t{i}", W * 3_000),))]
        if i % 4 == 3:
            msgs += [text("assistant", 10), text("user", 10)]
    msgs.append(text("assistant", 5))
    sent = []

    class Recording:
        name, estimator = strat.name, strat.estimator

        def __getattr__(self, hook):
            return getattr(strat, hook)

        def project(self, ctx, sess):
            sent.append(ctx.messages)
            return ctx

    result = replay(Trace("small", tuple(msgs)), Recording(), ReplayConfig(tiny), counter=counter)
    kinds = {e.kind for e in result.events}
    assert {"truncate", "prune"} <= kinds and result.failed is None
    assert all(orphans(m) == (set(), set()) and m[0] is msgs[0] for m in sent)


def reference_prune(strategy: BaseAgent, ctx) -> tuple[tuple[Message, ...], int, int]:
    """The prune as version 3 first wrote it: a walk back over every message (messages, scanned, prunable)."""
    msgs = ctx.messages
    total = pruned = turns = 0
    queued: set[tuple[int, str]] = set()
    for i in range(len(msgs) - 1, -1, -1):
        m = msgs[i]
        turns += m.is_human_turn
        if turns < strategy.protect_turns:
            continue
        stopped = False
        for b in reversed(m.blocks):
            if isinstance(b, ToolResult):
                if b.content == PRUNE_MARKER:
                    stopped = True
                    break
                total += len(b.content) // 4
                if total > strategy.prune_protect:
                    pruned += len(b.content) // 4
                    queued.add((i, b.tool_use_id))
        if stopped:
            break
    if pruned <= strategy.prune_minimum:
        return msgs, total, pruned
    ids = {i: {u for j, u in queued if j == i} for i, _ in queued}
    out = tuple(rewrite_results(m, lambda r, i=i: PRUNE_MARKER if r.tool_use_id in ids.get(i, ()) else None)
                for i, m in enumerate(msgs))
    return out, total, pruned


@pytest.mark.parametrize(("seed", "protect_turns"), [(0, 2), (1, 2), (2, 1), (3, 0)])
def test_the_per_call_prune_from_the_index_equals_the_walk_over_the_history(counter, seed, protect_turns):
    """The prune is found on an index of the outputs extended by each call's new messages, and the
    view patched from the last one (issue 14: each call walked the whole history): the same view,
    sizes and touched count as the walk, call by call on a growing history with parallel outputs,
    human turns that carry results, outputs already pruned in the log, and a compaction."""
    rng = random.Random(seed)
    strategy = BaseAgent(prune_protect=3_000, prune_minimum=1_000, protect_turns=protect_turns)
    sess = session(counter)
    ctx = context(counter, [text("system", 10), text("user", 10)])
    views = 0
    for step in range(160):
        k = rng.randrange(1, 4)
        ids = [f"s{step}_{j}" for j in range(k)]
        new = [Message("assistant", tuple(ToolUse(i, "bash", {}) for i in ids))]
        outputs = tuple(ToolResult(i, PRUNE_MARKER if rng.random() < 0.02 else W * rng.randrange(0, 900)) for i in ids)
        if rng.random() < 0.1:
            new.append(Message("user", (*outputs, Text("and also this"))))  # a human turn with results
        else:
            new.append(Message("user", outputs))
        if rng.random() < 0.3:
            new += [text("assistant", 5), text("user", rng.randrange(1, 20))]
        ctx = ctx.append(*new)
        if step == 100:  # a compaction: the history no longer grows from what was indexed
            ctx = context(counter, [ctx.messages[0], text("user", 30), *ctx.messages[-40:]])
        want, scanned, prunable = reference_prune(strategy, ctx)
        view, total, pruned, touched = strategy._view(ctx, sess)
        assert (total, pruned) == (scanned, prunable)
        assert view.messages == want and (view is ctx) == (want is ctx.messages)
        assert touched == sum(1 for a, b in zip(ctx.messages, view.messages, strict=True) if a is not b)
        assert (view.estimate, view.truth) == (context(counter, want).estimate, context(counter, want).truth)
        assert strategy.prune(ctx)[0].messages == want
        views += view is not ctx
    assert views > 50
