"""Anthropic clear_tool_uses_20250919, server-side (strategies/anthropic_clear.py)."""

from __future__ import annotations

import strategies
from bench.context.messages import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.summarizers.extractive import ExtractiveSummarizer
from strategies.anthropic_clear import PLACEHOLDER, AnthropicClearToolUses
from traces.model import Message, ToolResult, ToolUse, Trace, orphans

W = " abc"


def session(counter) -> Session:
    return Session(profile("claude-sonnet-4-5"), Meter(counter, "truth"), ExtractiveSummarizer())


def history(counter, sizes, names=None):
    msgs = [Message.text_message("system", "sys"), Message.text_message("user", "Task: audit")]
    for i, size in enumerate(sizes):
        name = names[i] if names else "bash"
        msgs += [Message("assistant", (ToolUse(f"t{i}", name, {"cmd": f"run {i}"}),)),
                 Message("user", (ToolResult(f"t{i}", W * size),))]
    return Meter(counter, "truth").context(msgs)


def outputs(ctx):
    results = [r.content for m in ctx.messages for r in m.tool_results]
    return [c if c == PLACEHOLDER else len(c) // 4 for c in results]


def test_defaults():
    s = AnthropicClearToolUses()
    assert (s.trigger_type, s.trigger, s.keep, s.clear_at_least, s.exclude_tools, s.clear_tool_inputs) == (
        "input_tokens", 100_000, 3, 0, (), False)
    assert PLACEHOLDER == "[cleared]"


def test_keeps_the_three_newest_and_clears_oldest_first_over_100k(counter):
    ctx = history(counter, [20_000] * 6)  # ~120K tokens
    sent = AnthropicClearToolUses().project(ctx, session(counter))
    assert outputs(sent) == [PLACEHOLDER] * 3 + [20_000] * 3
    assert outputs(ctx) == [20_000] * 6  # the client's history is untouched
    assert orphans(sent.messages) == (set(), set())
    below = history(counter, [20_000] * 4)  # ~80K: under the trigger
    assert AnthropicClearToolUses().project(below, session(counter)) is below


def test_clear_at_least_is_all_or_nothing(counter):
    ctx = history(counter, [20_000, 20_000, 20_000, 20_000, 20_000, 20_000])
    freed = ctx.truth - AnthropicClearToolUses().project(ctx, session(counter)).truth
    assert 59_900 < freed < 60_000
    assert AnthropicClearToolUses(clear_at_least=60_000).project(ctx, session(counter)) is ctx
    enough = AnthropicClearToolUses(clear_at_least=50_000).project(ctx, session(counter))
    assert outputs(enough)[:3] == [PLACEHOLDER] * 3


def test_excluded_tools_are_never_cleared(counter):
    names = ["bash", "memory", "bash", "bash", "bash", "bash"]
    ctx = history(counter, [20_000] * 6, names)
    sent = AnthropicClearToolUses(exclude_tools=("memory",)).project(ctx, session(counter))
    assert outputs(sent) == [PLACEHOLDER, 20_000, PLACEHOLDER] + [20_000] * 3


def test_clear_tool_inputs_blanks_the_calls_too(counter):
    ctx = history(counter, [30_000] * 4)
    sent = AnthropicClearToolUses(clear_tool_inputs=True).project(ctx, session(counter))
    inputs = [dict(u.input) for m in sent.messages for u in m.tool_uses]
    assert inputs == [{}, {"cmd": "run 1"}, {"cmd": "run 2"}, {"cmd": "run 3"}]


def test_tool_uses_trigger(counter):
    ctx = history(counter, [10] * 5)
    assert outputs(AnthropicClearToolUses(trigger_type="tool_uses", trigger=4).project(ctx, session(counter))) == [
        PLACEHOLDER, PLACEHOLDER, 10, 10, 10]
    assert AnthropicClearToolUses(trigger_type="tool_uses", trigger=5).project(ctx, session(counter)) is ctx


def test_before_call_records_each_new_activation_without_storing_it(counter):
    strat, sess = AnthropicClearToolUses(), session(counter)
    ctx = history(counter, [20_000] * 6)
    out = strat.before_call(ctx, sess)
    assert out.context is ctx and [e.kind for e in out.events] == ["prune"]
    assert "cleared_tool_uses=3" in out.events[0].detail and "(sent only)" in out.events[0].detail
    assert strat.project(ctx, sess).truth == out.events[0].tokens_after
    assert strat.before_call(ctx, sess) is None  # same cleared set: no new activation


def test_replays_end_to_end_without_orphans(counter):
    strat = strategies.build("anthropic-clear-tool-uses@trigger=2000")
    msgs = [Message.text_message("system", "sys"), Message.text_message("user", "Task: audit")]
    for i in range(10):
        msgs += [Message("assistant", (ToolUse(f"t{i}", "grep", {"q": i}),)),
                 Message("user", (ToolResult(f"t{i}", W * 500),))]
    msgs.append(Message.text_message("assistant", "done"))
    sent = []

    class Recording:
        name, estimator = strat.name, strat.estimator

        def __getattr__(self, hook):
            return getattr(strat, hook)

        def project(self, ctx, sess):
            out = strat.project(ctx, sess)
            sent.append(out)
            return out

    config = ReplayConfig(profile("claude-sonnet-4-5"))
    result = replay(Trace("clear", tuple(msgs)), Recording(), config, counter=counter)
    assert result.failed is None and sum(e.kind == "prune" for e in result.events) >= 3
    assert all(orphans(c.messages) == (set(), set()) for c in sent)
    last = sent[-1]
    assert outputs(last)[-3:] == [500] * 3 and PLACEHOLDER in outputs(last)
    # editing old results breaks the cached prefix: some agent call reports a prefix break
    assert any(c.prefix_break for c in result.calls if c.kind == "agent")
