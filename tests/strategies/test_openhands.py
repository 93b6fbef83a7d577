"""OpenHands condensers, one event = one message (system 0, task 1, then action/observation pairs)."""

from __future__ import annotations

from dataclasses import replace

import pytest

import strategies
from bench.context import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from bench.replay import ReplayConfig, replay
from bench.summarizers.extractive import ExtractiveSummarizer
from bench.tokens import TokenCounter
from strategies.openhands.amortized import AmortizedForgetting
from strategies.openhands.masking import MASKED, ObservationMasking
from strategies.openhands.recent import RecentEvents
from strategies.openhands.summarizing import LLMSummarizing
from traces.model import Message, Text, ToolResult, ToolUse, Trace, orphans

MODEL = replace(profile("claude-sonnet-4-5"), id="small", context_window=100_000, max_output=2_000)


def pairs(n: int, start: int = 0, size: int = 20) -> list[Message]:
    out = []
    for i in range(start, start + n):
        out.append(Message("assistant", (ToolUse(f"c{i}", "bash", {"command": f"run {i}"}),)))
        out.append(Message("user", (ToolResult(f"c{i}", f"output {i} " * size),)))
    return out


def history(n_pairs: int, *extra: Message) -> tuple[Message, ...]:
    return (Message.text_message("system", "sys"), Message.text_message("user", "Task: fix bug 12"),
            *pairs(n_pairs), *extra)


def run(strategy, msgs, counter, hook="before_call"):
    meter = Meter(counter, strategy.estimator)
    session = Session(MODEL, meter, ExtractiveSummarizer())
    ctx = meter.context(msgs)
    out = getattr(strategy, hook)(ctx, session)
    return ctx, session, out


def test_defaults_follow_the_spec_config_not_the_constructors():
    assert (LLMSummarizing().max_size, LLMSummarizing().keep_first) == (240, 2)  # V1 SDK
    v0 = strategies.build("openhands:v0")
    assert (v0.generation, v0.max_size, v0.keep_first) == ("v0", 120, 4)  # V0 server pipeline
    assert ObservationMasking().attention_window == 100  # constructor: 5
    assert RecentEvents().max_events == 100 and RecentEvents().keep_first == 1  # constructor: 10
    assert AmortizedForgetting().keep_first == 1 and AmortizedForgetting().max_size == 100  # constructor: 0
    with pytest.raises(ValueError):
        LLMSummarizing(max_size=10, keep_first=4)


def test_v1_condenses_past_max_size_keeping_head_and_a_snapped_tail(counter):
    msgs = history(120)  # 242 events > 240: suffix = 240 // 2 - 2 - 1 = 117
    assert run(LLMSummarizing(), msgs[:240], counter)[2] is None
    ctx, _, out = run(LLMSummarizing(), msgs, counter)
    new = out.context.messages
    # forgetting end 242 - 117 = 125 is an observation: snapped forward to 126 -> 116 events kept
    assert new[:2] == msgs[:2] and new[2].meta.get("summary") and new[2].role == "user"
    assert new[3:] == msgs[126:] and len(new) == 2 + 1 + 116
    assert orphans(new) == (set(), set())


def test_v1_small_max_size(counter):
    msgs = history(10)  # 22 events > 20: suffix 20 // 2 - 2 - 1 = 7, end 15 -> 16
    _, _, out = run(LLMSummarizing(max_size=20), msgs, counter)
    assert out.context.messages[3:] == msgs[16:] and len(out.context) == 9


def test_v1_token_reason_keeps_the_suffix_after_the_big_event(counter):
    big = pairs(1, 0, size=4000)  # one observation of ~8,000 tokens
    msgs = (*history(0), *big, *pairs(4, 1))
    ctx, _, out = run(LLMSummarizing(max_tokens=6_000), msgs, counter)
    assert ctx.truth > 6_000 and len(ctx) < 240
    # tokens to free = total - 3,000: the shortest prefix over that ends with the big observation
    assert out.context.messages[3:] == msgs[4:]
    assert out.context.truth < 3_000


def test_v1_counts_one_event_per_parallel_call_and_result(counter):
    """Parallel calls are several events: 6 steps of 3 calls are 36 events (+2), over max_size 20
    although only 14 messages; the kept suffix is 20 // 2 − 2 − 1 = 7 events: the last step (6)."""
    msgs = [Message.text_message("system", "sys"), Message.text_message("user", "Task: fix bug 12")]
    for k in range(6):
        ids = [f"c{k}_{j}" for j in range(3)]
        msgs += [Message("assistant", tuple(ToolUse(i, "bash", {"command": i}) for i in ids)),
                 Message("user", tuple(ToolResult(i, f"output {i}") for i in ids))]
    from strategies.openhands.summarizing import event_count
    assert sum(event_count(m) for m in msgs) == 38 and len(msgs) == 14
    _, _, out = run(LLMSummarizing(max_size=20), tuple(msgs), counter)
    new = out.context.messages
    assert new[:2] == tuple(msgs[:2]) and new[2].meta.get("summary") and new[3:] == tuple(msgs[-2:])
    assert run(LLMSummarizing(max_size=40), tuple(msgs), counter)[2] is None


def test_v1_request_on_overflow_halves_the_view(counter):
    msgs = history(10)  # 22 events: request suffix 22 // 2 - 2 - 1 = 8, end 14 (an action)
    _, _, out = run(LLMSummarizing(), msgs, counter, hook="on_overflow")
    assert out.context.messages[3:] == msgs[14:] and len(out.context) == 11


def test_v0_rebuilt_view_is_head_summary_and_55(counter):
    msgs = history(60, Message.text_message("user", "also update the docs"))  # 123 events > 120
    _, _, out = run(strategies.build("openhands:v0"), msgs, counter)
    new = out.context.messages
    assert new[:4] == msgs[:4] and new[4].meta.get("summary")
    assert new[5:] == msgs[-55:] and len(new) == 4 + 1 + 55  # spec: 120 / 4 -> 60


def test_v0_condensation_request_keeps_max_size_half_not_half_the_view(counter):
    """A standalone V0 LLMSummarizingCondenser on a context-window error: the tail is max_size // 2 −
    keep_first − 1 events even when the view is shorter than max_size (80 events: 60 − 4 − 1 = 55
    kept, not 80 // 2 − 5 = 35)."""
    msgs = history(39)  # 80 messages
    alone = strategies.build("openhands:v0@conversation_window=False")
    _, _, out = run(alone, msgs, counter, hook="on_overflow")
    new = out.context.messages
    assert new[4].meta.get("summary") and new[5:] == msgs[-54:]  # 55 kept; render drops the orphan result


def test_v0_server_pipeline_hands_a_condensation_request_to_the_conversation_window(counter):
    """openhands:v0 is the server's default pipeline (server/session/session.py l.219-249 @d6fab190):
    ConversationWindow comes first and alone condenses on a request, so a context-window error halves
    the other events, keeps the system prompt and the task, and makes no summary call; the summary of
    an earlier condensation stays (view.py l.61-78). The old path kept 55 events whatever their size:
    on a short view that forgot 2 events a call while the view stayed over the window (issue 27)."""
    summary = Message.text_message("user", "USER_CONTEXT: fix bug 12", meta={"summary": True})
    msgs = (*history(0), summary, *pairs(31))  # 65 events: 63 besides system + task -> newest 31
    v0 = strategies.build("openhands:v0")
    ctx, session, out = run(v0, msgs, counter, hook="on_overflow")
    new = out.context.messages
    # the newest 31 start at 34, an observation: dropped as leading, 30 kept from the action at 35
    assert new == (msgs[0], msgs[1], summary, *msgs[35:])
    assert [e.kind for e in out.events] == ["drop"] and out.context.truth < ctx.truth / 2
    assert orphans(new) == (set(), set())
    # a second request halves again: the window shrinks geometrically, never by 2 events
    again = v0.on_overflow(out.context, session).context.messages
    assert again[:3] == new[:3] and len(again) <= 3 + (len(new) - 2) // 2


def test_v0_cuts_an_observation_to_max_message_chars_as_it_arrives(counter):
    """V0 sends no observation over LLMConfig.max_message_chars (30,000), head and tail half each with
    V0's marker (events/serialization/event.py truncate_content l.167-178 @d6fab190); V1 is not cut."""
    from strategies.openhands.summarizing import TRUNCATION_MARK, truncate_observation
    log = "".join(f"line {i}\n" for i in range(20_000))  # ~180,000 characters
    msgs = (*history(0), Message("assistant", (ToolUse("big", "bash", {"command": "pytest"}),)),
            Message("user", (ToolResult("big", log),)))
    _, _, out = run(strategies.build("openhands:v0"), msgs, counter, hook="on_tool_result")
    (cut,) = out.context.messages[-1].tool_results
    assert cut.content == log[:15_000] + TRUNCATION_MARK + log[-15_000:] == truncate_observation(log, 30_000)
    assert out.context.messages[:-1] == msgs[:-1] and [e.kind for e in out.events] == ["truncate"]
    assert run(strategies.build("openhands:v0"), msgs[:-1], counter, hook="on_tool_result")[2] is None
    assert run(LLMSummarizing(), msgs, counter, hook="on_tool_result")[2] is None  # V1
    assert truncate_observation("short", 30_000) == "short"


def test_observation_masking_masks_outside_the_window_and_drops_their_actions(counter):
    msgs = history(5)  # 12 events, window 4: observations at 3, 5, 7 (< 8) are masked
    s = ObservationMasking(attention_window=4)
    ctx, session, out = run(s, msgs, counter)
    sent = s.project(ctx, session).messages
    assert out.context is ctx and [e.kind for e in out.events] == ["mask"]
    assert [m.text for m in sent[2:5]] == [MASKED] * 3 and all(m.role == "user" for m in sent[2:5])
    assert sent[:2] == msgs[:2] and sent[5:] == msgs[8:]  # the masked observations' actions are gone
    assert orphans(sent) == (set(), set())


def test_recent_events_keeps_head_and_tail_and_restores_the_task(counter):
    msgs = history(5)  # head [system], tail = the last 5 events (7..11); 7 is an orphan observation
    s = RecentEvents(max_events=6)
    ctx, session, _ = run(s, msgs, counter)
    sent = s.project(ctx, session).messages
    assert sent == (msgs[0], msgs[1], *msgs[8:])
    assert ctx.messages == msgs


def test_amortized_forgetting_forgets_down_to_half(counter):
    msgs = history(5)  # 12 > 10: keep view[:1] + the last 10 // 2 - 1 = 4 events (+ the task)
    _, _, out = run(AmortizedForgetting(max_size=10), msgs, counter)
    assert out.context.messages == (msgs[0], msgs[1], *msgs[8:])
    assert [e.kind for e in out.events] == ["drop"]
    assert run(AmortizedForgetting(max_size=12), msgs, counter)[2] is None


def test_amortized_forgetting_handles_the_overflow_condensation_request(counter):
    """V0's controller turns a context-window error into a CondensationRequestAction, and the
    amortized condenser condenses on an unhandled request even below max_size."""
    msgs = history(5)  # 12 events <= max_size 20: no condensation before the call
    assert run(AmortizedForgetting(max_size=20), msgs, counter)[2] is None
    _, _, out = run(AmortizedForgetting(max_size=10), msgs[:10], counter, hook="on_overflow")
    # 10 events: keep view[:1] + the last 10 // 2 - 1 = 4 (+ the task)
    assert out.context.messages == (msgs[0], msgs[1], *msgs[6:10])
    assert [e.kind for e in out.events] == ["drop"]
    # 5 events <= keep_first 1 + 4: nothing to forget, no condensation available
    assert run(AmortizedForgetting(max_size=10), msgs[:5], counter, hook="on_overflow")[2] is None


@pytest.mark.parametrize("name", ["openhands@max_size=20", "openhands:v0@max_size=20,keep_first=2",
                                  "openhands:masking@attention_window=6", "openhands:recent@max_events=10",
                                  "openhands:amortized@max_size=12", "openhands"])
def test_replay_end_to_end(name):
    trace = Trace("t", (*history(30), Message.text_message("assistant", "done")))
    finals = []
    result = replay(trace, strategies.build(name), ReplayConfig(MODEL), counter=TokenCounter(),
                    observers=(lambda moment, call, ctx: finals.append(ctx) or [],))
    assert len([c for c in result.calls if c.kind == "agent"]) == 31 and result.failed is None
    assert orphans(finals[-1].messages) == (set(), set())
    if name != "openhands":
        assert result.events
        assert max(c.prompt_tokens for c in result.calls) < sum(TokenCounter().truth(m) for m in trace.messages)


def test_v1_event_count_kept_between_calls_matches_a_count_from_scratch(counter):
    # the count moves by the appended messages, and starts afresh after each condensation
    from strategies.openhands.summarizing import event_count
    s = LLMSummarizing(max_size=20)
    meter = Meter(counter, s.estimator)
    session = Session(MODEL, meter, ExtractiveSummarizer())
    ctx = meter.context(history(0))
    condensed = 0
    for k in range(40):
        ids = [f"c{k}_{j}" for j in range(1 + k % 3)]  # parallel calls: several events a message
        ctx = ctx.append(Message("assistant", tuple(ToolUse(i, "bash", {"command": i}) for i in ids)))
        ctx = ctx.append(Message("user", (*(ToolResult(i, f"output {i}") for i in ids),
                                          *((Text("note"),) if k % 4 == 0 else ()))))
        over = sum(event_count(m) for m in ctx.messages) > s.max_size
        assert ("events" in s._reasons(ctx, session)) == over
        out = s.before_call(ctx, session)
        assert (out is not None) == over
        if out is not None:
            ctx, condensed = out.context, condensed + 1
    assert condensed > 5
