"""Tiered placeholders: tier 1 at 60%, tier 1.5 at 70%, tier 2 at 85%; essential tools untouched."""

from __future__ import annotations

from dataclasses import replace

import strategies
from bench.context.messages import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.summarizers.extractive import ExtractiveSummarizer
from bench.tokens.counter import TokenCounter
from strategies.tiered import CLEARED, TieredPlaceholders, placeholder
from traces.model import Message, Text, Thinking, ToolResult, ToolUse, Trace, orphans

SONNET = profile("claude-sonnet-4-5")
BODY = ("x" * 99 + "\n") * 40  # 4,000 chars, 40 lines: ~1,000 tokens by chars/4


def pair(i: int, tool: str, output: str, think: str = "", **inp: str) -> list[Message]:
    blocks = ((Thinking(think),) if think else ()) + (ToolUse(f"c{i}", tool, inp or {"path": f"/src/f{i}.py"}),)
    return [Message("assistant", blocks), Message("user", (ToolResult(f"c{i}", output),))]


def context(*pairs: list[Message]) -> tuple[Message, ...]:
    return (Message.text_message("system", "sys"), Message.text_message("user", "Task: fix the importer"),
            *[m for p in pairs for m in p])


def run(msgs, share: float, counter):
    """before_call with a window sized so the context is at ``share`` of it."""
    s = TieredPlaceholders()
    meter = Meter(counter, s.estimator)
    ctx = meter.context(msgs)
    model = replace(SONNET, context_window=int(ctx.estimate / share))
    out = s.before_call(ctx, Session(model, meter, ExtractiveSummarizer()))
    return ctx, out


def results(out) -> dict[str, str]:
    return {b.tool_use_id: b.content for m in out.context.messages for b in m.tool_results}


MIXED = context(pair(0, "read_file", BODY), pair(1, "todo_write", BODY, todos="a"),
                pair(2, "bash", BODY, command="make"), pair(3, "read_file", "short"),
                pair(4, "read_file", BODY), pair(5, "read_file", BODY))


def test_below_60_percent_nothing_happens(counter):
    assert run(MIXED, 0.599, counter)[1] is None


def test_tier_1_at_60_percent_leaves_recent_and_essential_outputs(counter):
    ctx, out = run(MIXED, 0.60, counter)
    assert [e.detail.split(":")[0] for e in out.events] == ["tier 1"]
    got = results(out)
    assert got["c0"] == (f"{CLEARED} Output of `read_file` (40 lines, ~1000 tokens) removed. "
                         'To see it again, re-run `read_file {"path": "/src/f0.py"}`.')
    assert got["c2"].endswith('re-run `bash {"command": "make"}` if still needed (it may have side effects).')
    assert got["c1"] == BODY  # essential tool (whitelist): never replaced
    assert got["c3"] == "short"  # under min_output_tokens
    assert got["c4"] == got["c5"] == BODY and got["c3"] == "short"  # the newest 3 results are kept
    assert out.context.estimate < ctx.estimate


def test_placeholder_for_a_write_points_at_the_file():
    use = ToolUse("w", "write_file", {"path": "/src/a.py", "content": "x"})
    assert placeholder(use, "ok\n") == (f"{CLEARED} Output of `write_file` (1 lines, ~1 tokens) removed. "
                                        "To see it again, read /src/a.py to see its current state.")


THINKING = context(pair(0, "read_file", BODY, think="t" * 12_000),
                   pair(1, "edit_file", "ok", path="/src/f1.py", content="y" * 8_000),
                   pair(2, "read_file", "short"), pair(3, "read_file", "short"), pair(4, "read_file", BODY))


def test_tier_1_5_at_70_percent_clears_old_reasoning_and_inputs(counter):
    ctx, out = run(THINKING, 0.69, counter)
    assert [e.detail.split(":")[0] for e in out.events] == ["tier 1"]  # tier 1 brings it under 70%
    ctx, out = run(THINKING, 0.95, counter)
    assert [e.detail.split(":")[0] for e in out.events] == ["tier 1", "tier 1.5"]
    msgs = out.context.messages
    assert not any(isinstance(b, Thinking) for b in msgs[2].blocks)
    cleared = f"{CLEARED} input of 8037 chars removed"  # 8,000 + 37 chars of JSON
    assert msgs[4].tool_uses[0].input == {"path": "/src/f1.py", "cleared": cleared}
    assert orphans(msgs) == (set(), set())


BIG = ("y" * 99 + "\n") * 120  # ~3,000 tokens
PROTECTED = context(pair(0, "todo_write", "- [ ] parse dates\n- [x] read csv", todos="t"), pair(1, "grep", "hit"),
                    pair(2, "read_file", BIG), pair(3, "read_file", BIG), pair(4, "read_file", BIG))


def test_tier_2_at_85_percent_summarizes_and_reinjects_essential_outputs(counter):
    assert run(PROTECTED, 0.84, counter)[1] is None  # nothing clearable, and under 85%
    ctx, out = run(PROTECTED, 0.85, counter)
    assert [e.kind for e in out.events] == ["summarize"]
    msgs = out.context.messages
    assert msgs[0] is PROTECTED[0] and msgs[2:] == PROTECTED[-6:]
    assert '<essential tool="todo_write">\n- [ ] parse dates\n- [x] read csv\n</essential>' in msgs[1].text
    assert "Task: fix the importer" in msgs[1].text


def test_replay_end_to_end():
    msgs = [Message.text_message("system", "sys"), Message.text_message("user", "Task: port the module")]
    for i in range(40):
        msgs += pair(i, "todo_write" if i % 3 == 0 else "read_file", BODY, think="plan " * 50)
    msgs.append(Message("assistant", (Text("done"),)))
    finals = []
    model = replace(SONNET, context_window=16_000, max_output=1_000)
    result = replay(Trace("t", tuple(msgs)), strategies.build("tiered-placeholders"), ReplayConfig(model),
                    counter=TokenCounter(), observers=(lambda moment, call, ctx: finals.append(ctx) or [],))
    tiers = {e.detail.split(":")[0] for e in result.events}
    assert {"tier 1", "tier 2"} <= tiers
    assert not any(c.overflow for c in result.calls) and result.failed is None
    assert orphans(finals[-1].messages) == (set(), set())
