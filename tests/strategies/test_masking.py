"""The Complexity Trap strategies: observation masking (M=10), LLM summary (N=21, M=10), hybrid."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import strategies
from bench.context.messages import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.summarizers import Summary, SummaryRequest
from bench.tokens.counter import TokenCounter
from strategies.masking import Hybrid, LLMSummary, ObservationMasking
from traces.model import Message, ToolResult, ToolUse, Trace, orphans

SYSTEM = "You are a coding agent. " * 300  # over the 1,024-token minimum cache prefix
MODEL = replace(profile("claude-sonnet-4-5"), id="small", context_window=100_000, max_output=2_000)
MARK = "Old environment output: "


@dataclass
class Recording:
    """A summarizer stub that remembers what it was asked to summarize."""

    name: str = "recording"
    requests: list[SummaryRequest] = field(default_factory=list)

    def summarize(self, request: SummaryRequest) -> Summary:
        self.requests.append(request)
        return Summary(f"summary #{len(self.requests)}", 0, 5, "stub")


def output(i: int) -> str:
    return "\n".join(f"result {i} row {k}" for k in range(3))


def messages(turns: int) -> tuple[Message, ...]:
    msgs = [Message.text_message("system", SYSTEM), Message.text_message("user", "Fix issue #7 in app.py")]
    for i in range(turns):
        msgs.append(Message("assistant", (ToolUse(f"c{i}", "bash", {"command": f"step {i}"}),)))
        msgs.append(Message("user", (ToolResult(f"c{i}", output(i)),)))
    return tuple(msgs)


def trace(turns: int) -> Trace:
    return Trace("t", (*messages(turns), Message.text_message("assistant", "done")))


def session_for(strategy, counter, summarizer=None):
    meter = Meter(counter, strategy.estimator)
    return meter, Session(MODEL, meter, summarizer or Recording())


def test_observation_masking_keeps_exactly_the_last_10_observations(counter):
    s = strategies.build("observation-masking")
    assert isinstance(s, ObservationMasking) and s.n == 10
    meter, session = session_for(s, counter)
    ctx = meter.context(messages(14))
    s.before_call(ctx, session)
    results = [b.content for m in s.project(ctx, session).messages for b in m.tool_results]
    # the task is observation 0, then c0..c13: K = 15, obs[1:5] elided -> c0..c3
    assert results[:4] == ["Old environment output: (3 lines omitted)"] * 4
    assert results[4:] == [output(i) for i in range(4, 14)]
    assert s.project(ctx, session).messages[1].text == "Fix issue #7 in app.py"


def test_llm_summary_fires_at_n_plus_m_turns_and_keeps_m(counter):
    s = strategies.build("llm-summary")
    assert isinstance(s, LLMSummary) and (s.n, s.keep_last_m_turns) == (21, 10)
    meter, session = session_for(s, counter)
    assert s.before_call(meter.context(messages(30)), session) is None
    ctx = meter.context(messages(31))
    out = s.before_call(ctx, session)
    assert out is not None and [e.kind for e in out.events] == ["summarize"]
    new = out.context.messages
    assert new[:2] == ctx.messages[:2]
    assert new[2].role == "assistant" and new[2].text == "Checkpoint for the last 21 turns:\nsummary #1"
    assert new[3:] == ctx.messages[2 + 2 * 21:]  # the last 10 turns verbatim
    assert len(new) == 3 + 2 * 10
    summarized = session.summarizer.requests[0].messages
    assert summarized[0].text == "Fix issue #7 in app.py"  # the problem statement as context
    assert len(summarized) == 1 + 2 * 21


def test_llm_summary_next_checkpoint_after_another_n_turns(counter):
    s = LLMSummary()
    meter, session = session_for(s, counter)
    first = s.before_call(meter.context(messages(31)), session).context
    grown = first.messages + messages(51)[2 + 2 * 31:]  # 20 more turns: 30 unprocessed
    assert s.before_call(meter.context(grown), session) is None
    grown = first.messages + messages(52)[2 + 2 * 31:]  # 21 more: 31 unprocessed
    second = s.before_call(meter.context(grown), session).context.messages
    assert second[2].text == "Checkpoint for the last 21 turns:\nsummary #2"
    assert len(second) == 3 + 2 * 10
    assert session.summarizer.requests[1].messages[0] is first.messages[2]  # previous checkpoint as context


def test_hybrid_summarizes_unmasked_turns_and_masks_what_is_sent(counter):
    s = strategies.build("hybrid")
    assert isinstance(s, Hybrid) and (s.n, s.keep_last_m_turns, s.window) == (43, 10, 10)
    meter, session = session_for(s, counter)
    early = meter.context(messages(52))
    out = s.before_call(early, session)
    assert [e.kind for e in out.events] == ["mask"] and out.context is early
    ctx = meter.context(messages(53))
    out = s.before_call(ctx, session)
    assert [e.kind for e in out.events] == ["summarize"]  # the 10 kept turns are within the window
    request = session.summarizer.requests[0]
    assert len(request.messages) == 1 + 2 * 43
    assert not any(MARK in b.content for m in request.messages for b in m.tool_results)
    assert out.context.messages[2].text.startswith("Checkpoint for the last 43 turns:\n")
    grown = meter.context(out.context.messages + messages(58)[2 + 2 * 53:])  # 15 turns after the checkpoint
    s.before_call(grown, session)
    sent = [b.content for m in s.project(grown, session).messages for b in m.tool_results]
    assert sum(MARK in c for c in sent) == 5 and sent[5:] == [output(i) for i in range(48, 58)]


def test_replays_end_to_end_without_orphans():
    for name, turns, summaries in (("observation-masking", 20, 0), ("llm-summary", 45, 1), ("hybrid", 60, 1)):
        finals: list = []
        result = replay(trace(turns), strategies.build(name), ReplayConfig(MODEL), counter=TokenCounter(),
                        observers=(lambda moment, call, ctx, finals=finals: finals.append(ctx) or [],))
        assert len([c for c in result.calls if c.kind == "agent"]) == turns + 1, name
        assert len(result.summaries) == summaries, name
        assert orphans(finals[-1].messages) == (set(), set()), name
        if name != "llm-summary":
            assert any(c.prefix_break for c in result.calls if c.kind == "agent"), name
