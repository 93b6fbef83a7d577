"""Copilot CLI background compaction: starts at 80%, applied when ready with what arrived meanwhile kept."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from bench.context.messages import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.summarizers import Summary, SummaryRequest
from strategies.copilot_cli import CopilotCli
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
    strategy = CopilotCli()
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
    strategy = CopilotCli()
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
    result = replay(trace, CopilotCli(), config, counter=counter)
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
