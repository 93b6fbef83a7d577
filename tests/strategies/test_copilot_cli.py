"""Copilot CLI background compaction: starts at 80%, applied when ready with what arrived meanwhile kept."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from bench.context.messages import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.summarizers import Summary, SummaryRequest
from strategies.copilot_cli import CopilotCli, output_speed
from traces.model import Message, Text, ToolResult, ToolUse, Trace, orphans

SONNET = profile("claude-sonnet-4-5")


@dataclass
class Stub:
    name: str = "stub"
    requests: list[SummaryRequest] = field(default_factory=list)

    def summarize(self, request: SummaryRequest) -> Summary:
        self.requests.append(request)
        return Summary("<overview>parser refactor</overview>", 0, 8, "stub")


def rounds(start: int, n: int, size: int) -> list[Message]:
    out = []
    for i in range(start, start + n):
        out += [Message("assistant", (ToolUse(f"c{i}", "view", {"path": f"p{i}"}),)),
                Message("user", (ToolResult(f"c{i}", f"line {i} " * size),))]
    return out


def setup(counter, window: int):
    stub = Stub()
    s = Session(replace(SONNET, context_window=window), Meter(counter, "truth"), stub)
    base = (Message.text_message("system", "sys"), Message.text_message("user", "refactor the parser"))
    return s, stub, base


def test_starts_at_80_percent_and_applies_when_ready_keeping_what_arrived(counter):
    s, stub, base = setup(counter, 5_500)
    ctx = s.meter.context((*base, *rounds(0, 4, 250)))
    strategy = CopilotCli(summary_seconds=30.0)
    assert ctx.truth / 5_500 < 0.8 and strategy.before_call(ctx, s) is None and not stub.requests
    ctx = ctx.append(*rounds(4, 2, 250))
    assert 0.8 <= ctx.truth / 5_500 < 0.95
    s.call_index, s.now = 6, 60.0
    assert strategy.before_call(ctx, s) is None  # started: the summary is requested now, nothing changes yet
    (request,) = stub.requests
    assert request.messages == ctx.messages[1:]
    started_with = len(ctx.messages)
    for call in (7, 8):  # the agent keeps working while the summary is written (30 s; 10 s per call)
        ctx = ctx.append(*rounds(call, 1, 5))
        s.call_index, s.now = call, 60.0 + 10 * (call - 6)
        assert strategy.before_call(ctx, s) is None
    ctx = ctx.append(*rounds(9, 1, 5))
    s.call_index, s.now = 9, 90.0
    out = strategy.before_call(ctx, s)
    new = out.context.messages
    assert new[0] is ctx.messages[0] and new[1].meta["summary"]
    assert new[1].text.startswith("<overview>parser refactor</overview>")
    assert new[2:] == ctx.messages[started_with:]  # what arrived while it ran: kept, verbatim
    assert orphans(new) == (set(), set()) and len(stub.requests) == 1
    (e,) = out.events
    assert e.kind == "summarize" and "started at call 6, applied 3 call(s) later" in e.detail


def test_blocks_at_95_percent_before_the_summary_is_ready(counter):
    s, stub, base = setup(counter, 5_500)
    ctx = s.meter.context((*base, *rounds(0, 6, 250)))
    strategy = CopilotCli(summary_seconds=30.0)
    s.call_index, s.now = 6, 60.0
    assert strategy.before_call(ctx, s) is None
    ctx = ctx.append(*rounds(6, 1, 300))
    assert ctx.truth / 5_500 >= 0.95
    s.call_index, s.now = 7, 70.0  # not ready until 90 s: the agent waits for it
    out = strategy.before_call(ctx, s)
    assert "waited for it at 95%" in out.events[0].detail and out.context.truth < ctx.truth


def test_overflow_forces_it_at_once(counter):
    s, stub, base = setup(counter, 10_000)
    ctx = s.meter.context((*base, *rounds(0, 3, 250)))
    out = CopilotCli().on_overflow(ctx, s)
    assert len(stub.requests) == 1 and out.context.messages[1].meta["summary"]
    assert "context-limit" in out.events[0].detail


def test_replay_compacts_some_calls_after_it_started(counter):
    msgs = [Message.text_message("user", "refactor the parser"), *rounds(0, 30, 120),
            Message("assistant", (Text("done"),))]
    trace = Trace("t", tuple(msgs))
    config = ReplayConfig(replace(SONNET, context_window=12_000), seconds_per_call=10.0)
    result = replay(trace, CopilotCli(summary_seconds=30.0), config, counter=counter)
    assert result.error is None and result.failed is None
    agent = [c for c in result.calls if c.kind == "agent"]
    assert len(agent) == trace.n_calls  # no overflow retries: it always compacted in time
    compactions = [e for e in result.events if e.kind == "summarize"]
    assert compactions and all("applied 3 call(s) later" in e.detail for e in compactions)
    starts = [r.call for r in result.summaries]
    assert [e.call - 3 for e in compactions] == starts[:len(compactions)]  # billed on the start call


@pytest.mark.parametrize("bad", [{"background_threshold": 0.0}, {"background_threshold": 0.97}])
def test_refuses_thresholds_out_of_order(bad):
    with pytest.raises(ValueError):
        CopilotCli(**bad)


def test_the_count_is_system_conversation_and_tool_definitions(counter):
    """Copilot's compaction_start records systemTokens + conversationTokens + toolDefinitionsTokens:
    the tool schemas no message carries (the meter's fixed overhead) count toward the 80%."""
    base = (Message.text_message("system", "sys " * 400), Message.text_message("user", "refactor the parser"),
            *rounds(0, 4, 250))
    bare = Meter(counter, "truth").context(base)
    window = int(bare.truth / 0.78)  # the messages alone: 78%
    with_tools = Meter(counter, "truth", overhead=bare.truth // 20).context(base)  # + 5%: over 80%
    for ctx, starts in ((bare, False), (with_tools, True)):
        stub = Stub()
        s = Session(replace(SONNET, context_window=window), ctx.meter, stub)
        assert CopilotCli().before_call(ctx, s) is None
        assert bool(stub.requests) is starts


def timed_rounds(start: int, n: int, size: int, t0: float, call_seconds: float, out: int) -> list[Message]:
    """``rounds`` on a recorded clock: each answer ``call_seconds`` after the result before it, ``out``
    output tokens each (Copilot's ``assistant.message`` ``outputTokens``), each result 1 s later."""
    msgs, t = [], t0
    for m in rounds(start, n, size):
        if m.role == "assistant":
            t += call_seconds
            msgs.append(replace(m, timestamp=t, meta={"output_tokens": out}))
        else:
            t += 1.0
            msgs.append(replace(m, timestamp=t))
    return msgs


def test_the_summary_takes_its_size_at_the_sessions_output_speed(counter):
    """Issue 24: the compaction is one model call, so it lasts its output tokens at the speed the session's
    own calls show (Σ output / Σ call time: 400 tokens in 8 s = 50/s here): a 1,000-token summary is
    ready 20 s after the request it started at, and is applied at the first request sent after that."""
    @dataclass
    class Sized(Stub):
        def summarize(self, request: SummaryRequest) -> Summary:
            self.requests.append(request)
            return Summary("<overview>parser refactor</overview>", 0, 1_000, "stub", billed=True)

    stub = Sized()
    s = Session(replace(SONNET, context_window=5_500), Meter(counter, "truth"), stub)
    base = (Message.text_message("system", "sys"), Message.text_message("user", "refactor the parser", timestamp=0.0))
    held = (*base, *timed_rounds(0, 6, 250, 0.0, 8.0, 400))
    assert output_speed(held[1:]) == pytest.approx(50.0)
    ctx = s.meter.context(held)
    strategy = CopilotCli()
    started = ctx.messages[-1].timestamp  # 54.0: the request goes out when the last result arrived
    s.call_index, s.now = 6, started + 8.0  # the replay's clock is the answer's: 8 s later
    assert strategy.before_call(ctx, s) is None and len(stub.requests) == 1
    applied = None
    for call in range(7, 12):
        ctx = ctx.append(*timed_rounds(call, 1, 5, ctx.messages[-1].timestamp, 8.0, 400))
        s.call_index, s.now = call, ctx.messages[-1].timestamp + 8.0
        out = strategy.before_call(ctx, s)
        if out is not None:
            applied = (call, ctx.messages[-1].timestamp)
            assert "waited" not in out.events[0].detail, out.events[0].detail
            break
    assert applied is not None and applied[1] >= started + 20.0  # the first request at or after 74 s
    assert applied[1] - 9.0 < started + 20.0  # and not a call later (requests are 9 s apart)
    assert applied[0] == 9
    fixed = CopilotCli(summary_seconds=60.0)
    assert fixed.summary_seconds == 60.0 and CopilotCli().summary_seconds is None


def test_without_timestamps_the_default_speed_and_the_replay_clock(counter):
    s, stub, base = setup(counter, 5_500)
    ctx = s.meter.context((*base, *rounds(0, 6, 250)))
    assert output_speed(ctx.messages) is None  # no recorded clock: 50 tokens/s, the replay's clock
    strategy = CopilotCli(summary_tokens_per_second=1.0)  # the stub's 8 tokens: 8 s
    s.call_index, s.now = 6, 60.0
    assert strategy.before_call(ctx, s) is None
    ctx = ctx.append(*rounds(6, 1, 5))
    s.call_index, s.now = 7, 67.0
    assert strategy.before_call(ctx, s) is None
    ctx = ctx.append(*rounds(7, 1, 5))
    s.call_index, s.now = 8, 68.0
    assert strategy.before_call(ctx, s) is not None
    with pytest.raises(ValueError):
        CopilotCli(summary_tokens_per_second=0.0)
