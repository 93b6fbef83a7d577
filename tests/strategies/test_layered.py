"""The five-layer defense (strategies/layered/) and Claude Code's configuration of it."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

import strategies
from bench.context import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from bench.replay import ReplayConfig, replay
from bench.summarizers.extractive import ExtractiveSummarizer
from strategies.layered._common import CLEARED, SUMMARY_SECTIONS
from strategies.layered.five_layer import FiveLayer
from traces.model import Message, Text, ToolResult, ToolUse, Trace, Usage, orphans

W = " abc"  # one cl100k token per 4 chars, so chars/4 estimate ≈ truth
DIGITS = " 7"  # two tokens per 2 chars: chars/4 under-counts it 4x
MODEL = replace(profile("claude-sonnet-4-5"), max_output=20_000)  # effective window 180K
ClaudeCode = strategies.resolve("claude-code")[0]  # by its registry name, wherever its module lives


class Recording:
    """Delegates to a strategy and keeps every request it sends."""

    def __init__(self, inner: strategies.Strategy) -> None:
        self.inner, self.name, self.estimator, self.sent = inner, inner.name, inner.estimator, []

    def __getattr__(self, hook: str):
        return getattr(self.inner, hook)

    def project(self, ctx, session):
        out = self.inner.project(ctx, session)
        self.sent.append(out.messages)
        return out


def tool_step(i: int, content: str, name: str = "bash", **inp) -> list[Message]:
    return [Message("assistant", (ToolUse(f"t{i}", name, inp),)), Message("user", (ToolResult(f"t{i}", content),))]


def growing_trace() -> Trace:
    """Tool outputs (one over 50K chars), then talk L2 cannot clear, then output chars/4 under-counts."""
    msgs = [Message.text_message("system", W * 1000), Message.text_message("user", "Task: grow the context")]
    for k in range(12):
        msgs += tool_step(k, W * (15_000 if k == 2 else 10_000))
    for k in range(6):
        msgs += [Message.text_message("assistant", W * 20_000), Message.text_message("user", f"continue {k}")]
    for k in range(6):
        msgs += tool_step(100 + k, DIGITS * 20_000)
    msgs.append(Message.text_message("assistant", "done"))
    return Trace("grow", tuple(msgs))


def session(counter, model=MODEL, **kw) -> Session:
    return Session(model, Meter(counter, "chars/4"), ExtractiveSummarizer(), **kw)


def layer(detail: str) -> str:
    return detail.split(" ", 1)[0]


def test_layers_escalate_in_order_on_a_growing_trace_each_at_most_once_per_call(counter):
    rec = Recording(FiveLayer())
    result = replay(growing_trace(), rec, ReplayConfig(MODEL), counter=counter)
    first = {}
    for e in result.events:
        first.setdefault(layer(e.detail), (e.call, e.hook, e.kind))
    assert [first[k][0] for k in ("L1", "L2", "L3", "L4")] == [12, 15, 18, 23]
    assert first["L1"][1:] == ("before_call", "persist")
    assert first["L2"][1:] == ("before_call", "prune")
    assert first["L3"][1:] == ("before_call", "summarize")
    assert first["L4"][1:] == ("on_overflow", "summarize")
    per_call = Counter((e.call, layer(e.detail)) for e in result.events)
    assert max(per_call.values()) == 1
    # L1 left a pointer with a path; the 413 was rescued, so no call overflowed and none failed
    l1 = next(e for e in result.events if layer(e.detail) == "L1")
    assert l1.tokens_before - l1.tokens_after > 14_000
    assert result.failed is None and not any(c.overflow for c in result.calls)
    assert all(orphans(sent) == (set(), set()) for sent in rec.sent)


def test_persisted_output_keeps_a_pointer_with_a_path(counter):
    msgs = [Message.text_message("system", "sys"), Message.text_message("user", "go"), *tool_step(1, W * 15_000)]
    ctx = Meter(counter, "chars/4").context(msgs)
    new, ev = FiveLayer()._persist(ctx)
    pointer = new.messages[-1].tool_results[0].content
    assert pointer.startswith("[Tool result persisted to disk: /tmp/agent/tool-results/t1.txt (60000 chars).")
    assert pointer.endswith((W * 15_000)[:2_000]) and ev.kind == "persist"


def test_microcompact_names_the_tool_and_size_and_removes_old_read_only_calls(counter):
    msgs = [Message.text_message("system", "sys"), Message.text_message("user", "go")]
    msgs += tool_step(1, W * 100, "read_file", path="/a.py") + tool_step(2, W * 100, "bash")
    for k in range(3, 8):
        msgs += tool_step(k, "recent", "bash")
    new, ev = FiveLayer()._microcompact(Meter(counter, "chars/4").context(msgs))
    ids = {r.tool_use_id: r.content for m in new.messages for r in m.tool_results}
    assert "t1" not in ids and not any(u.id == "t1" for m in new.messages for u in m.tool_uses)
    assert ids["t2"] == "[Tool result cleared: bash, 100 tokens]"
    assert all(ids[f"t{k}"] == "recent" for k in range(3, 8))
    assert orphans(new.messages) == (set(), set()) and ev.detail.startswith("L2")


def breaker_trace() -> Trace:
    """A human paste whose chars/4 estimate is small but whose real size is over the window."""
    msgs = [Message.text_message("system", "You are an agent."), Message.text_message("user", "Task: fix it"),
            *tool_step(1, W * 500), Message.text_message("assistant", "Fixed."),
            Message.text_message("user", "Now read this log:" + DIGITS * 105_000),
            Message.text_message("assistant", "ok")]
    return Trace("paste", tuple(msgs))


def test_circuit_breaker_fails_gracefully_after_one_reactive_attempt(counter):
    result = replay(breaker_trace(), FiveLayer(), ReplayConfig(MODEL), counter=counter)
    assert result.failed is not None and result.failed.startswith("call 2: ")
    assert [c.call for c in result.calls if c.kind == "agent"] == [0, 1]  # earlier calls kept
    overflow = [(e.kind, layer(e.detail)) for e in result.events if e.hook == "on_overflow"]
    assert overflow == [("summarize", "L4"), ("fail", "L4")]


def test_breaker_refuses_a_second_consecutive_reactive_attempt(counter):
    msgs = [Message.text_message("system", "s"), Message.text_message("user", "go")]
    ctx = Meter(counter, "chars/4").context(msgs)
    out = FiveLayer().on_overflow(ctx, session(counter, state={"reactive_attempts": 1}))
    assert out.fail and [e.kind for e in out.events] == ["fail"] and out.context is ctx


def test_collapse_is_a_projection_that_leaves_the_stored_context(counter):
    msgs = [Message.text_message("system", "s"), Message.text_message("user", "Task: look")]
    for k in range(12):
        msgs += tool_step(k, DIGITS * 10_000)  # 20K real tokens each
    ctx = Meter(counter, "chars/4").context(msgs)
    strat, sess = FiveLayer(), session(counter)
    sent = strat._collapsed(ctx, strat.effective_window(sess))
    assert sent.truth <= 180_000 < ctx.truth
    assert sent.messages[:2] == ctx.messages[:2] and sent.messages[-1] is ctx.messages[-1]
    assert orphans(sent.messages) == (set(), set())
    assert strat.project(ctx, sess) is ctx  # not armed: nothing collapses


def test_claude_code_trigger_is_167k_for_a_200k_64k_model(counter):
    sonnet = profile("claude-sonnet-4-5")
    assert (sonnet.context_window, sonnet.max_output) == (200_000, 64_000)
    sess = session(counter, sonnet)
    assert ClaudeCode().autocompact_threshold(sess) == 167_000
    assert FiveLayer().autocompact_threshold(sess) == 162_000


@pytest.mark.parametrize(("newest_chars", "compacts"), [(4 * 11_249, False), (4 * 11_250, True)])
def test_claude_code_counts_last_usage_plus_four_thirds_of_newer_estimates(counter, newest_chars, compacts):
    msgs = [Message.text_message("system", "s"), Message.text_message("user", "go"), *tool_step(1, "x"),
            Message.text_message("assistant", "next"), Message.text_message("user", "a" * newest_chars)]
    ctx = Meter(counter, "chars/4").context(msgs)
    sess = session(counter, profile("claude-sonnet-4-5"), last_usage=Usage(140_000, 2_000, 10_000, 0))
    # 150,000 + 2,000 + round(11,250 × 4/3) = 167,000: the threshold, compared with >=
    assert ClaudeCode().count(ctx, sess, True) == (167_000 if compacts else 166_999)
    out = ClaudeCode().before_call(ctx, sess)
    assert (out is not None) == compacts
    if compacts:
        text = out.context.messages[1].text
        assert text.startswith("This session is being continued from a previous conversation that ran out of context.")
        assert out.events[0].kind == "summarize"


def test_claude_code_summary_prompt_has_the_nine_sections():
    from strategies.layered._common import SUMMARY_PROMPT

    assert len(SUMMARY_SECTIONS) == 9 and all(f"{i}. {s}" in SUMMARY_PROMPT for i, s in enumerate(SUMMARY_SECTIONS, 1))


def test_claude_code_rereads_five_recent_files_within_budget(counter):
    sizes = {"/a": 1_000, "/b": 2_000, "/c": 3_000, "/d": 6_000, "/e": 4_000, "/f": 2_500, "/g": 1_500}
    msgs = [Message.text_message("system", "s"), Message.text_message("user", "read them")]
    strat, sess = ClaudeCode(restore_total_tokens=8_000), session(counter)
    meter = Meter(counter, "chars/4")
    for k, (path, tokens) in enumerate(sizes.items()):
        msgs += tool_step(k, path[1] * (4 * tokens - 8), "Read", file_path=path)
    msgs.append(Message.text_message("user", "go on"))
    new, events = strat._compact(meter.context(msgs), sess, "L3 auto-compact")
    restored = [m.text for m in new.messages if m.meta.get("synthetic")]
    # newest first: g, f, e, d, c; e no longer fits the 8K total (left out, as Claude Code filters
    # over-budget files), d is over 5K (path only), c still fits
    assert [t.split("\n")[0][:40] for t in restored] == [
        'Re-read after compaction (Read {"file_pa', 'Re-read after compaction (Read {"file_pa',
        "Note: /d was read before this summary; i", 'Re-read after compaction (Read {"file_pa']
    assert ['"/g"' in restored[0], '"/f"' in restored[1], '"/c"' in restored[3]] == [True] * 3
    assert restored[0].endswith("g" * 100) and [e.kind for e in events] == ["summarize", "reinject"]
    assert new.messages[-1:] == (msgs[-1],)  # the step's own new prompt stays; no earlier step is kept
    kept, _ = ClaudeCode(keep_step_in_flight=True)._compact(meter.context(msgs), sess, "L3 auto-compact")
    assert kept.messages[-3:] == tuple(msgs[-3:])  # version 2's behaviour, kept as a parameter
    default = ClaudeCode()
    assert (default.restore_files, default.restore_file_tokens, default.restore_total_tokens) == (5, 5_000, 50_000)


def test_claude_code_summarizes_the_step_in_flight_like_the_recorded_sessions(counter):
    """Recorded Claude Code (claude-code__marot-spotter 258c7280): compact_boundary after the last
    tool result, then the summary, then straight the next assistant message."""
    msgs = [Message.text_message("system", "s"), Message.text_message("user", "fix it")]
    for k in range(4):
        msgs += tool_step(k, "x" * 4_000, "Bash", command=f"run {k}")
    for name in ("claude-code", "five-layer"):
        new, events = strategies.build(name)._compact(Meter(counter, "chars/4").context(msgs), session(counter),
                                                      "L3 auto-compact")
        assert [m.role for m in new.messages] == ["system", "user"] and new.messages[1].meta["summary"]
        assert orphans(new.messages) == (set(), set()) and events[0].kind == "summarize"


def test_claude_code_time_based_microcompact_after_an_hour_idle_is_a_flagged_variant(counter):
    msgs = [Message.text_message("system", "s"), Message.text_message("user", "go")]
    for k in range(7):
        msgs += tool_step(k, f"output {k}")
    ctx = Meter(counter, "chars/4").context(msgs)
    assert ClaudeCode().before_call(ctx, session(counter, now=9_000.0, state={"last_call_time": 0.0})) is None
    strat = strategies.build("claude-code:microcompact")
    assert strat.before_call(ctx, session(counter, now=3_000.0, state={"last_call_time": 0.0})) is None
    out = strat.before_call(ctx, session(counter, now=3_601.0, state={"last_call_time": 0.0}))
    contents = [r.content for m in out.context.messages for r in m.tool_results]
    assert contents == [CLEARED, CLEARED] + [f"output {k}" for k in range(2, 7)]


def test_claude_code_autocompact_stops_after_three_consecutive_failures(counter):
    msgs = [Message.text_message("system", "s"), Message.text_message("user", "x" * 4 * 200_000)]
    ctx = Meter(counter, "chars/4").context(msgs)
    sess = session(counter, profile("claude-sonnet-4-5"), state={"autocompact_failures": 2})
    ClaudeCode().before_call(ctx, sess)  # nothing to summarize: a third failure
    assert sess.state["autocompact_failures"] == 3
    assert ClaudeCode().before_call(ctx, sess) is None and sess.state["autocompact_failures"] == 3


@pytest.mark.parametrize("name", ["five-layer", "claude-code"])
def test_replays_end_to_end_without_orphans(counter, name):
    tiny = replace(profile("claude-sonnet-4-5"), context_window=30_000, max_output=2_000)
    msgs = [Message.text_message("system", "You are an agent."), Message.text_message("user", "Task: ship it")]
    for k in range(14):
        msgs += tool_step(k, W * 2_500, "Read" if k % 2 else "bash", file_path=f"/f{k % 3}.py")
    msgs.append(Message.text_message("assistant", "shipped"))
    rec = Recording(strategies.build(name))
    result = replay(Trace("small", tuple(msgs)), rec, ReplayConfig(tiny), counter=counter)
    assert result.failed is None and len([c for c in result.calls if c.kind == "agent"]) == 15
    assert {"five-layer": "prune", "claude-code": "summarize"}[name] in {e.kind for e in result.events}
    assert all(orphans(sent) == (set(), set()) for sent in rec.sent)
    assert all(sent[0] is msgs[0] for sent in rec.sent)


EMPTY_USER = (Message("user", ()), Message("user", (Text(""),)))
"""An empty user message: no content, or one empty text (the slow contract suite's ``empty_messages``)."""


@pytest.mark.parametrize("name", ["claude-code", "five-layer"])
@pytest.mark.parametrize("empty", EMPTY_USER)
def test_an_empty_user_message_between_a_call_and_its_results_is_no_turn_to_keep_from(counter, name, empty):
    # the failing example the slow contract suite found: the empty message was taken for the prompt
    # that opens the step, so the compaction kept it and its results but summarized their call
    msgs = [Message.text_message("system", "s"), Message.text_message("user", "fix it"), *tool_step(0, "x" * 4_000),
            Message("assistant", (ToolUse("t9", "Bash", {"command": "make"}),)), empty,
            Message("user", (ToolResult("t9", "ok"),))]
    meter, strat = Meter(counter, "chars/4"), strategies.build(name)
    new, _ = strat._compact(meter.context(msgs), session(counter), "L3 auto-compact")
    assert [m.role for m in new.messages] == ["system", "user"] and new.messages[1].meta["summary"]  # before: 4
    assert orphans(new.messages) == (set(), set())
    prompt = Message.text_message("user", "go on")  # a real prompt still opens the step and is kept
    new, _ = strat._compact(meter.context([*msgs, prompt]), session(counter), "L3 auto-compact")
    assert new.messages[2:] == (prompt,)
    # the result not in yet (an answer comes first): the walk back for calls in flight goes on past
    # the empty message, and the call stays (before: it stopped there and the call was summarized)
    new, _ = strat._compact(meter.context(msgs[:-1]), session(counter), "L3 auto-compact")
    assert new.messages[2:] == tuple(msgs[-3:-1])


@pytest.mark.parametrize("name", ["claude-code", "claude-code:microcompact"])
@pytest.mark.parametrize("empty", EMPTY_USER)
def test_a_replay_with_an_empty_user_message_before_the_results_adds_no_orphan(name, empty):
    from tests.strategies.test_contract import check_strategy  # the contract's own checks, on a fixed trace

    def call(i: str) -> Message:
        return Message("assistant", (ToolUse(i, "bash", {"command": f"run {i}"}),))

    trace = Trace("empty-between", (
        Message.text_message("system", "You are a coding agent."), Message.text_message("user", "Task: fix it"),
        call("a"), Message("user", (ToolResult("a", W * 2_000),)), call("b"), empty,
        Message("user", (ToolResult("b", W * 2_000),)), Message.text_message("assistant", "done")))
    check_strategy(name, trace)  # before: "before_call outcome (call 2): the strategy added orphan_result b"
