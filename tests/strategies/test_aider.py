"""Aider ChatSummary: the budget clamp, the tail under half the budget, the "I asked you" summary."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

import strategies
from bench.context import Meter
from bench.pricing import profile
from bench.replay import ReplayConfig, replay
from bench.session import Session
from bench.summarizers import Summary, SummaryRequest
from bench.tokens import TokenCounter
from strategies.aider import SUMMARY_PREFIX, Aider, history_budget
from traces.model import Message, ToolResult, ToolUse, Trace, orphans

SONNET = profile("claude-sonnet-4-5")


@dataclass
class Recording:
    name: str = "recording"
    requests: list[SummaryRequest] = field(default_factory=list)

    def summarize(self, request: SummaryRequest) -> Summary:
        self.requests.append(request)
        return Summary(f"I asked you about step {len(self.requests)}.", 0, 8, "stub")


def sized(role: str, i: int) -> Message:
    return Message.text_message(role, "alpha " * 104 + str(i))  # 110 truth tokens each


def test_budget_is_max_input_over_16_clamped_to_1k_8k():
    assert history_budget(replace(SONNET, context_window=200_000, max_input=None)) == 8_192
    assert history_budget(replace(SONNET, context_window=8_000, max_input=None)) == 1_024
    assert history_budget(replace(SONNET, context_window=64_000, max_input=None)) == 4_000
    assert history_budget(replace(SONNET, context_window=400_000, max_input=32_768)) == 2_048
    assert Aider(max_chat_history_tokens=3_000).budget(SONNET) == 3_000


def run(strategy, msgs, counter):
    meter = Meter(counter, strategy.estimator)
    session = Session(SONNET, meter, Recording())
    ctx = meter.context(msgs)
    return ctx, session, strategy.before_call(ctx, session)


def test_tail_under_half_the_budget_is_kept_verbatim(counter):
    done = [sized("user" if i % 2 == 0 else "assistant", i) for i in range(10)]
    assert all(counter.truth(m) == 110 for m in done)
    current = Message.text_message("user", "now rename the helper")
    msgs = (Message.text_message("system", "sys"), *done, current)
    ctx, session, out = run(Aider(max_chat_history_tokens=1_000), msgs, counter)
    # 1,100 > 1,000: the tail grows while under 500 (4 x 110 = 440), the split (6) follows an assistant
    new = out.context.messages
    assert new[1].role == "user" and new[1].text == SUMMARY_PREFIX + "I asked you about step 1."
    assert new[2:6] == tuple(done[6:]) and sum(counter.truth(m) for m in new[2:6]) == 440 < 500
    assert new[6] is current and len(new) == 7  # tail ends with an assistant message: no "Ok."
    assert session.summarizer.requests[0].messages == tuple(done[:6])


def test_a_head_over_max_input_keeps_its_oldest_prefix(counter):
    """At the cited commit the head is cut to the prefix that fits max_input − 512."""
    done = [sized("user" if i % 2 == 0 else "assistant", i) for i in range(10)]
    msgs = (Message.text_message("system", "sys"), *done, Message.text_message("user", "next"))
    small = replace(SONNET, max_input=512 + 330)  # room for exactly three 110-token messages
    meter = Meter(counter, "truth")
    session = Session(small, meter, Recording())
    Aider(max_chat_history_tokens=1_000).before_call(meter.context(msgs), session)
    assert session.summarizer.requests[0].messages == tuple(done[0:3])  # done[3:6] dropped


def test_2024_generation_head_over_max_input_keeps_its_newest_messages(counter):
    """The 2024 code walks the reversed head: what fits max_input − 512 is the part next to the split."""
    done = [sized("user" if i % 2 == 0 else "assistant", i) for i in range(10)]
    msgs = (Message.text_message("system", "sys"), *done, Message.text_message("user", "next"))
    small = replace(SONNET, max_input=512 + 330)  # room for exactly three 110-token messages
    meter = Meter(counter, "truth")
    session = Session(small, meter, Recording())
    strategies.build("aider:2024@max_chat_history_tokens=1000").before_call(meter.context(msgs), session)
    assert session.summarizer.requests[0].messages == tuple(done[3:6])  # done[0:3] silently dropped


@pytest.mark.parametrize("generation", ["2025", "2024"])
def test_recursion_test_counts_the_tail_except_in_the_2024_code(counter, generation):
    """Cited commit: summary + tail under the budget or recurse. 2024: the tail term was read from a
    list already cut to the head (always 0), so a summary under the budget was final."""

    @dataclass
    class Wordy(Recording):
        def summarize(self, request: SummaryRequest) -> Summary:
            self.requests.append(request)
            return Summary("I asked you " + "alpha " * 600, 0, 600, "stub")

    done = [sized("user" if i % 2 == 0 else "assistant", i) for i in range(10)]
    msgs = (Message.text_message("system", "sys"), *done, Message.text_message("user", "next"))
    meter = Meter(counter, "truth")
    session = Session(SONNET, meter, Wordy())
    out = Aider(max_chat_history_tokens=1_000, generation=generation).before_call(meter.context(msgs), session)
    new = out.context.messages
    if generation == "2024":
        assert counter.truth(new[1]) + sum(counter.truth(m) for m in new[2:6]) >= 1_000 > counter.truth(new[1])
        assert len(session.summarizer.requests) == 1 and new[2:6] == tuple(done[6:])
    else:  # 619 + 440 ≥ 1,000: a second pass folds the tail in too
        assert len(session.summarizer.requests) >= 2 and not any(m in new for m in done[6:])


def test_short_history_is_summarized_whole_and_answered_ok(counter):
    done = [sized("user", 0), sized("assistant", 1), sized("user", 2), sized("assistant", 3)]
    msgs = (Message.text_message("system", "sys"), *done, Message.text_message("user", "next"))
    _, _, out = run(Aider(max_chat_history_tokens=300), msgs, counter)
    roles_texts = [(m.role, m.text) for m in out.context.messages[1:3]]
    assert roles_texts == [("user", SUMMARY_PREFIX + "I asked you about step 1."), ("assistant", "Ok.")]
    assert len(out.context) == 4


def test_within_budget_mid_turn_or_single_prompt_nothing_happens(counter):
    done = [sized("user", 0), sized("assistant", 1)]
    within = (Message.text_message("system", "sys"), *done, Message.text_message("user", "next"))
    assert run(Aider(max_chat_history_tokens=1_000), within, counter)[2] is None
    mid_turn = (*within, Message("assistant", (ToolUse("a", "bash", {}),)), Message("user", (ToolResult("a", "ok"),)))
    assert run(Aider(max_chat_history_tokens=100), mid_turn, counter)[2] is None
    single = (Message.text_message("system", "sys"), Message.text_message("user", "task"),
              *[sized("assistant", i) for i in range(30)])
    assert run(Aider(max_chat_history_tokens=1_024), single, counter)[2] is None


def test_replay_end_to_end_over_several_turns():
    msgs = [Message.text_message("system", "sys")]
    for turn in range(8):
        msgs.append(Message.text_message("user", f"request {turn}: edit module m{turn}"))
        for k in range(3):
            msgs.append(Message("assistant", (ToolUse(f"t{turn}k{k}", "read_file", {"path": f"m{turn}.py"}),)))
            msgs.append(Message("user", (ToolResult(f"t{turn}k{k}", "code line\n" * 60),)))
        msgs.append(Message.text_message("assistant", f"done with {turn}"))
    finals = []
    result = replay(Trace("t", tuple(msgs)), strategies.build("aider@max_chat_history_tokens=1024"),
                    ReplayConfig(SONNET), counter=TokenCounter(),
                    observers=(lambda moment, call, ctx: finals.append(ctx) or [],))
    assert len([c for c in result.calls if c.kind == "agent"]) == 32
    assert result.summaries and all(e.hook == "before_call" for e in result.events)
    assert orphans(finals[-1].messages) == (set(), set())
    assert all(m.text.startswith(SUMMARY_PREFIX) for m in finals[-1].messages if m.meta.get("summary"))
