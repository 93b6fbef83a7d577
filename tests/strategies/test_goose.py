"""Goose: the 80% trigger, summary + continuation + latest user text, middle-out fallback."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import strategies
from bench.context.messages import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.summarizers import Summary, SummaryRequest
from bench.tokens.counter import TokenCounter
from strategies.goose import CONVERSATION_CONTINUATION_TEXT, TOOL_LOOP_CONTINUATION_TEXT, Goose, middle_out
from traces.model import Message, Text, ToolResult, ToolUse, Trace, Usage, orphans

SONNET = profile("claude-sonnet-4-5")


@dataclass
class Recording:
    name: str = "recording"
    requests: list[SummaryRequest] = field(default_factory=list)

    def summarize(self, request: SummaryRequest) -> Summary:
        self.requests.append(request)
        return Summary("## Goal\nfix the bug", 0, 6, "stub")


def conversation(n: int, size: int = 10) -> list[Message]:
    msgs = [Message.text_message("system", "sys"), Message.text_message("user", "Task: fix the parser")]
    for i in range(n):
        msgs.append(Message("assistant", (ToolUse(f"c{i}", "bash", {"command": f"run {i}"}),)))
        msgs.append(Message("user", (ToolResult(f"c{i}", f"out{i} " * size),)))
    return msgs


def removed(n_tools: int, percent: int) -> list[int]:
    msgs = tuple(conversation(n_tools))
    kept = middle_out(msgs, percent)
    return [i for i in range(n_tools) if msgs[3 + 2 * i] not in kept]


def test_middle_out_removal_percentages():
    assert removed(10, 0) == []
    assert removed(10, 10) == [4]
    assert removed(10, 20) == [4, 5]
    assert removed(10, 50) == [2, 3, 4, 5, 6]
    assert removed(10, 100) == list(range(10))
    assert removed(3, 10) == [0]  # at least one; middle = 1 -> the one just before it
    assert removed(5, 100) == [0, 1, 2, 3]  # Goose's loop never reaches the last of an odd count


def session_for(model, counter, last: Usage | None = None):
    s = Session(model, Meter(counter, "truth"), Recording())
    s.last_usage = last
    return s


def test_trigger_is_over_80_percent_of_the_window(counter):
    g = Goose()
    ctx = Meter(counter, "truth").context([*conversation(2), Message.text_message("user", "now the tests")])
    at = session_for(SONNET, counter, Usage(input_tokens=150_000, output_tokens=10_000))  # exactly 0.8
    assert g.before_call(ctx, at) is None
    over = session_for(SONNET, counter, Usage(input_tokens=150_000, output_tokens=10_001))
    assert g.before_call(ctx, over) is not None
    assert Goose(threshold=1.0).before_call(ctx, over) is None  # >= 1 disables auto-compact
    tiny = replace(SONNET, context_window=100)
    first_call = session_for(tiny, counter)  # no usage yet: a tokenizer count of the messages
    assert g.before_call(ctx, first_call) is not None


def test_the_check_runs_once_per_user_message_not_inside_the_tool_loop(counter):
    """agent.rs: reply() checks at the start of a reply; reply_internal's loop compacts only on a
    context-length error (our on_overflow)."""
    g = Goose()
    over = session_for(SONNET, counter, Usage(input_tokens=190_000))
    mid_loop = Meter(counter, "truth").context(conversation(3))  # the step adds a tool result
    assert g.before_call(mid_loop, over) is None
    assert g.on_overflow(mid_loop, over) is not None
    opening = mid_loop.append(Message("assistant", (ToolUse("x", "bash", {}),)),
                              Message("user", (ToolResult("x", "ok"), )), Message.text_message("user", "next"))
    assert g.before_call(opening, over) is not None  # a user message in the step: a new reply


def test_compacted_view_is_summary_continuation_and_latest_user_text(counter):
    meter = Meter(counter, "truth")
    msgs = conversation(3)
    ctx = meter.context(msgs)
    out = Goose().compact(ctx, session_for(SONNET, counter))
    new = out.context.messages
    assert new[0] is msgs[0]
    assert (new[1].role, new[1].text) == ("user", "## Goal\nfix the bug")
    assert (new[2].role, new[2].text) == ("assistant", TOOL_LOOP_CONTINUATION_TEXT)
    assert (new[3].role, new[3].text) == ("user", "Task: fix the parser") and len(new) == 4
    ended = meter.context((*msgs, Message.text_message("user", "and add a test")))
    new = Goose().compact(ended, session_for(SONNET, counter)).context.messages
    assert new[2].text == CONVERSATION_CONTINUATION_TEXT and new[3].text == "and add a test"


def test_summary_request_over_the_window_retries_middle_out(counter):
    meter = Meter(counter, "truth")
    ctx = meter.context(conversation(10, size=200))  # ten 405-token tool responses
    # the request is 4,270 tokens with all of them, 3,460 without 20%, 2,245 without 50%, 220 without all
    model = replace(SONNET, context_window=4_096 + 3_000)
    session = session_for(model, counter)
    out = Goose().compact(ctx, session)
    sent = session.summarizer.requests[0].messages
    dropped = [i for i in range(10) if ctx.messages[3 + 2 * i] not in sent]
    assert dropped == [2, 3, 4, 5, 6] and "50%" in out.events[0].detail
    failing = session_for(replace(SONNET, context_window=4_096 + 200), counter)
    out = Goose().compact(ctx, failing)
    assert out.fail and out.fail.startswith("Failed to compact") and [e.kind for e in out.events] == ["fail"]


def test_a_single_prompt_tool_loop_compacts_only_on_the_context_length_error():
    msgs = conversation(70, size=150)
    msgs.append(Message.text_message("assistant", "fixed"))
    model = replace(SONNET, context_window=12_000, max_output=1_000)
    result = replay(Trace("t", tuple(msgs)), strategies.build("goose@summary_max_tokens=1000"),
                    ReplayConfig(model), counter=TokenCounter())
    agent = [c for c in result.calls if c.kind == "agent"]
    assert result.failed is None and len(result.summaries) >= 1
    assert max(c.prompt_tokens for c in agent) > 0.8 * 12_000 + 400  # the loop ran past 80% ...
    assert not any(c.overflow for c in agent)  # ... and the 413 path compacted it in time


def test_replay_end_to_end():
    msgs = conversation(0)
    for i in range(70):  # a user message every step: each reply opens with the 80% check
        msgs += [Message("assistant", (ToolUse(f"c{i}", "bash", {"command": f"run {i}"}),)),
                 Message("user", (ToolResult(f"c{i}", f"out{i} " * 150),)),
                 Message("assistant", (Text(f"step {i} done"),)), Message.text_message("user", f"go on {i}")]
    msgs.append(Message.text_message("assistant", "fixed"))
    finals = []
    model = replace(SONNET, context_window=12_000, max_output=1_000)
    result = replay(Trace("t", tuple(msgs)), strategies.build("goose@summary_max_tokens=1000"),
                    ReplayConfig(model), counter=TokenCounter(),
                    observers=(lambda moment, call, ctx: finals.append(ctx) or [],))
    assert result.failed is None and len(result.summaries) >= 2
    assert not any(c.overflow for c in result.calls)
    assert orphans(finals[-1].messages) == (set(), set())
    assert all(c.prompt_tokens <= 0.8 * 12_000 + 400 for c in result.calls if c.kind == "agent")


def test_summary_request_leaves_thinking_out_and_threshold_zero_disables_only_the_check(counter):
    """mod.rs format_message_for_compacting omits thinking; check_if_compaction_needed returns
    false for a threshold <= 0, while agent.rs's context-length arm still compacts."""
    from traces.model import Thinking

    msgs = [*conversation(2), Message("assistant", (Thinking("secret plan"), Text("on it"))),
            Message.text_message("user", "continue")]
    ctx = Meter(counter, "truth").context(msgs)
    over = session_for(SONNET, counter, Usage(input_tokens=190_000))
    assert Goose(threshold=0.0).before_call(ctx, over) is None
    out = Goose(threshold=0.0).on_overflow(ctx, over)
    assert out is not None and [e.kind for e in out.events] == ["summarize"]
    sent = over.summarizer.requests[0].messages
    assert not any(isinstance(b, Thinking) for m in sent for b in m.blocks)
    assert any(m.text == "on it" for m in sent)
