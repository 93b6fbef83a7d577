"""Aider ChatSummary: the budget clamp, the tail under half the budget, the "I asked you" summary."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

import strategies
from bench.context.messages import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.summarizers import Summary, SummaryRequest
from bench.tokens.counter import TokenCounter
from strategies.aider import SUMMARY_PREFIX, Aider, history_budget
from tests.strategies.test_contract import check_strategy
from traces.model import Message, Text, ToolResult, ToolUse, Trace, orphans

SONNET = profile("claude-sonnet-4-5")


@dataclass
class Recording:
    name: str = "recording"
    requests: list[SummaryRequest] = field(default_factory=list)

    def summarize(self, request: SummaryRequest) -> Summary:
        self.requests.append(request)
        return Summary(f"I asked you about step {len(self.requests)}.", 0, 8, "stub")


def sized(role: str, i: int) -> Message:
    return Message.text_message(role, "alpha " * 97 + str(i))  # 103 truth tokens, 110 as Aider counts


FRAMING = 7
"""json.dumps framing (11 tokens) less the 4-token message overhead a truth count holds."""
EDITED = Message.text_message("user", "Applied edit to m.py", meta={"aider_output": True})  # 16 as Aider counts


def asize(counter, m: Message) -> int:
    """A message as Aider's ``token_count`` sizes it: the tokens of its json.dumps."""
    return counter.truth(m) + FRAMING


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
    done = [*(sized("user" if i % 2 == 0 else "assistant", i) for i in range(10)), EDITED]
    assert [asize(counter, m) for m in done] == [110] * 10 + [16]
    current = Message.text_message("user", "now rename the helper")
    msgs = (Message.text_message("system", "sys"), *done, current)
    ctx, session, out = run(Aider(max_chat_history_tokens=1_000), msgs, counter)
    # 1,116 > 1,000: the tail grows while under 500 (16 + 4 x 110 = 456), the split (6) follows an assistant
    new = out.context.messages
    assert new[1].role == "user" and new[1].text == SUMMARY_PREFIX + "I asked you about step 1."
    assert new[2:7] == tuple(done[6:]) and sum(asize(counter, m) for m in new[2:7]) == 456 < 500
    assert (new[7].role, new[7].text) == ("assistant", "Ok.")  # the tail ended with a user message
    assert new[8] is current and len(new) == 9
    assert session.summarizer.requests[0].messages == tuple(done[:6])


def test_a_head_over_max_input_keeps_its_oldest_prefix(counter):
    """At the cited commit the head is cut to the prefix that fits max_input − 512."""
    done = [*(sized("user" if i % 2 == 0 else "assistant", i) for i in range(10)), EDITED]
    msgs = (Message.text_message("system", "sys"), *done, Message.text_message("user", "next"))
    small = replace(SONNET, max_input=512 + 330)  # room for exactly three 110-token messages
    meter = Meter(counter, "truth")
    session = Session(small, meter, Recording())
    Aider(max_chat_history_tokens=1_000).before_call(meter.context(msgs), session)
    assert session.summarizer.requests[0].messages == tuple(done[0:3])  # done[3:6] dropped


def test_2024_generation_head_over_max_input_keeps_its_newest_messages(counter):
    """The 2024 code walks the reversed head: what fits max_input − 512 is the part next to the split."""
    done = [*(sized("user" if i % 2 == 0 else "assistant", i) for i in range(10)), EDITED]
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

    done = [*(sized("user" if i % 2 == 0 else "assistant", i) for i in range(10)), EDITED]
    msgs = (Message.text_message("system", "sys"), *done, Message.text_message("user", "next"))
    meter = Meter(counter, "truth")
    session = Session(SONNET, meter, Wordy())
    out = Aider(max_chat_history_tokens=1_000, generation=generation).before_call(meter.context(msgs), session)
    new = out.context.messages
    if generation == "2024":
        assert asize(counter, new[1]) + sum(asize(counter, m) for m in new[2:7]) >= 1_000 > asize(counter, new[1])
        assert len(session.summarizer.requests) == 1 and new[2:7] == tuple(done[6:])
    else:  # 626 + 456 ≥ 1,000: a second pass folds the tail in too
        assert len(session.summarizer.requests) >= 2 and not any(m in new for m in done[6:])


def test_short_history_is_summarized_whole_and_answered_ok(counter):
    done = [sized("user", 0), sized("assistant", 1), sized("user", 2), sized("assistant", 3), EDITED]
    msgs = (Message.text_message("system", "sys"), *done, Message.text_message("user", "next"))
    _, _, out = run(Aider(max_chat_history_tokens=300), msgs, counter)
    roles_texts = [(m.role, m.text) for m in out.context.messages[1:3]]
    assert roles_texts == [("user", SUMMARY_PREFIX + "I asked you about step 1."), ("assistant", "Ok.")]
    assert len(out.context) == 4


def test_within_budget_mid_turn_or_single_prompt_nothing_happens(counter):
    done = [sized("user", 0), sized("assistant", 1), EDITED]
    within = (Message.text_message("system", "sys"), *done, Message.text_message("user", "next"))
    assert run(Aider(max_chat_history_tokens=1_000), within, counter)[2] is None
    assert run(Aider(max_chat_history_tokens=200), within, counter)[2] is not None  # control: 236 > 200
    mid_turn = (*within, Message("assistant", (ToolUse("a", "bash", {}),)), Message("user", (ToolResult("a", "ok"),)))
    assert run(Aider(max_chat_history_tokens=100), mid_turn, counter)[2] is None
    single = (Message.text_message("system", "sys"), Message.text_message("user", "task"),
              *[sized("assistant", i) for i in range(30)])
    assert run(Aider(max_chat_history_tokens=1_024), single, counter)[2] is None


def test_turns_that_edited_nothing_stay_in_cur_messages(counter):
    """base_coder.py:1585-1594 @5dc9490b: only a turn whose reply was applied as an edit moves
    cur_messages (every turn since the last move) into done_messages."""
    talk = [sized("user" if i % 2 == 0 else "assistant", i) for i in range(10)]
    current = Message.text_message("user", "and now?")
    chat = (Message.text_message("system", "sys"), *talk, current)
    assert run(Aider(max_chat_history_tokens=300), chat, counter)[2] is None  # 1,100 tokens, no edit
    # turn 2 (talk[2:4]) edited: turns 0-2 are done; turns 3 and 4 edited nothing and stay verbatim
    edited = (Message.text_message("system", "sys"), *talk[:4], EDITED, *talk[4:], current)
    _, session, out = run(Aider(max_chat_history_tokens=300), edited, counter)
    assert session.summarizer.requests[0].messages[-1] in (talk[3], EDITED)
    assert all(m not in session.summarizer.requests[0].messages for m in talk[4:])
    assert out.context.messages[-7:] == (*talk[4:], current)


def test_an_edit_in_a_tool_calling_trace_is_a_call_that_does_more_than_read(counter):
    def turn(k: int, tool: str) -> list[Message]:
        return [sized("user", k), Message("assistant", (ToolUse(f"c{k}", tool, {"path": "m.py"}),)),
                Message("user", (ToolResult(f"c{k}", "ok"),)), sized("assistant", k + 1)]

    current = Message.text_message("user", "next")
    reads = (Message.text_message("system", "sys"), *turn(0, "read_file"), *turn(2, "grep"), current)
    assert run(Aider(max_chat_history_tokens=300), reads, counter)[2] is None
    writes = (Message.text_message("system", "sys"), *turn(0, "read_file"), *turn(2, "edit_file"), current)
    assert run(Aider(max_chat_history_tokens=300), writes, counter)[2] is not None


def test_messages_are_sized_as_their_json_dumps(counter):
    """history.py:15-25 sizes each message dict with Model.token_count, which tokenizes
    json.dumps(message) (models.py:650-670): 7 tokens more than a truth count per message."""
    done = [sized("user", 0), sized("assistant", 1), sized("user", 2), sized("assistant", 3), EDITED]
    msgs = (Message.text_message("system", "sys"), *done, Message.text_message("user", "next"))
    assert sum(counter.truth(m) for m in done) == 421 and sum(asize(counter, m) for m in done) == 456
    assert run(Aider(max_chat_history_tokens=440), msgs, counter)[2] is not None  # 421 would not be over
    assert run(Aider(max_chat_history_tokens=456), msgs, counter)[2] is None


def test_replay_end_to_end_over_several_turns():
    msgs = [Message.text_message("system", "sys")]
    for turn in range(8):
        msgs.append(Message.text_message("user", f"request {turn}: edit module m{turn}"))
        for k in range(3):
            tool = "edit_file" if k == 2 else "read_file"
            msgs.append(Message("assistant", (ToolUse(f"t{turn}k{k}", tool, {"path": f"m{turn}.py"}),)))
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


@pytest.mark.parametrize("name", ["aider", "aider:2024"])
def test_an_empty_user_message_between_a_call_and_its_results_opens_no_turn(name):
    # Found by the slow contract suite (empty_messages): version 4 took the empty message for a new
    # turn, summarized the call before it, and its results came back without it.
    msgs = [Message.text_message("system", "You are a coding agent."), Message.text_message("user", "Task: fix app.py")]
    for k in range(4):
        msgs += [Message("assistant", (ToolUse(f"e{k}", "edit_file", {"path": f"/src/f{k}.py"}),)),
                 Message("user", (ToolResult(f"e{k}", "applied edit " * 400),))]
    msgs += [Message("assistant", (ToolUse("s3t0", "edit_file", {"path": "/src/app.py"}),)),
             Message("user", (Text(""),)), Message("assistant", ()),
             Message("user", (ToolResult("s3t0", "applied edit " * 400),)),
             Message.text_message("user", "Now run the tests."), Message.text_message("assistant", "Done.")]
    check_strategy(name, Trace("empty-between", tuple(msgs)))
