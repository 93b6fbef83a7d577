"""The shared cutting and quoting helpers on the shapes real logs have (issue 11)."""

from __future__ import annotations

from strategies._tools import (
    QUOTE_LEAD,
    last_human_index,
    latest_human,
    latest_human_text,
    quote_latest_human,
    safe_cut,
    step_start,
    text_user,
    unanswered_start,
    waiting_from,
)
from traces.model import Message, Text, ToolResult, ToolUse

SYS = Message.text_message("system", "sys")
ASK = Message.text_message("user", "look at the logs")
EMPTY = Message("assistant", ())


def call(*ids: str) -> Message:
    return Message("assistant", tuple(ToolUse(i, "bash", {"command": "ls"}) for i in ids))


def result(*ids: str) -> Message:
    return Message("user", tuple(ToolResult(i, "out") for i in ids))


def test_safe_cut_moves_past_a_result_that_an_empty_assistant_message_separates_from_its_call():
    msgs = (SYS, ASK, call("a"), EMPTY, result("a"), call("b"), result("b"))
    assert safe_cut(msgs, 3) == 5  # cutting at the empty message would orphan a's result
    assert safe_cut(msgs, 2) == 2 and safe_cut(msgs, 5) == 5  # clean boundaries stay
    assert safe_cut((SYS, ASK, call("a"), result("a")), 3) == 4  # the usual case, unchanged


def test_step_start_keeps_the_call_when_an_empty_assistant_message_sits_before_its_result():
    assert step_start((SYS, ASK, call("a"), EMPTY, result("a"))) == 2
    assert step_start((SYS, ASK, call("a"), result("a"))) == 2  # the usual case, unchanged
    assert step_start((SYS, ASK, call("a"), result("a"), Message.text_message("assistant", "ok"), ASK)) == 5


def test_step_start_keeps_a_call_still_waiting_for_its_result_with_the_step():
    assert step_start((SYS, ASK, call("a"))) == 2


def test_step_start_on_a_result_whose_call_is_nowhere_falls_back_to_the_last_answer():
    assert step_start((SYS, ASK, Message.text_message("assistant", "ok"), result("ghost"))) == 2


def test_a_quoted_request_is_carried_again_when_its_summary_is_summarized():
    first = text_user("summary one" + QUOTE_LEAD + "the huge request", summary=True)
    msgs = (SYS, ASK, first, call("a"), result("a"))
    assert quote_latest_human("summary two", msgs, (SYS,)).endswith(QUOTE_LEAD + "the huge request")
    assert quote_latest_human("summary two", msgs, (SYS, first)) == "summary two"  # still kept: not repeated
    newer = Message.text_message("user", "a newer request")
    assert quote_latest_human("s", (*msgs, newer), (SYS,)).endswith(QUOTE_LEAD + "a newer request")


def test_an_empty_user_message_after_the_request_is_not_the_request_a_summary_quotes():
    """A log can hold an empty user message (no content, or one empty text) after the real
    request; no agent sends one (the API refuses it), so it is no request: the summary that
    replaces the real one quotes the real one, not nothing."""
    for empty in (Message("user", ()), Message("user", (Text(""),))):
        answer = Message.text_message("assistant", "ok")
        msgs = (SYS, ASK, call("a"), result("a"), answer, empty, call("b"), result("b"))
        assert latest_human_text(msgs) == (ASK, ASK.text)
        assert quote_latest_human("summary", msgs, (SYS,)) == "summary" + QUOTE_LEAD + ASK.text
        assert quote_latest_human("summary", msgs, (SYS, ASK)) == "summary"  # kept: not quoted
        assert latest_human(msgs) is ASK
        assert last_human_index(msgs, skip_empty=True) == 1 and last_human_index(msgs) == 5
    carried = text_user("s1" + QUOTE_LEAD + "the huge request", summary=True)
    assert latest_human_text((SYS, carried, Message("user", ()))) == (carried, "the huge request")


def test_waiting_from_finds_the_first_call_still_waiting_for_its_result():
    thought = Message.text_message("assistant", "and another thought")
    assert waiting_from((SYS, ASK, call("a"), result("a"), call("b"), EMPTY)) == 4
    assert waiting_from((SYS, ASK, call("a"), EMPTY, result("a"))) == 5  # answered: none waits
    assert waiting_from((SYS, ASK, call("a"), result("a"), call("a"), thought)) == 6  # answered earlier in the log


def test_a_compaction_of_everything_keeps_a_call_still_waiting_for_its_result():
    thought = Message.text_message("assistant", "and another thought")
    assert unanswered_start((SYS, ASK, call("a"), thought, thought)) == 2
    assert unanswered_start((SYS, ASK, call("a"), result("a"))) == 4  # answered: nothing kept back
    assert unanswered_start((SYS, call("a"), ASK, thought)) == 4  # before the latest human turn: not looked at


def test_codex_says_so_when_it_cuts_the_latest_user_message_short():
    from bench.context.strategy import CUT_LATEST_HUMAN
    from bench.replay.loop import replay
    from bench.tokens.counter import TokenCounter
    from strategies import build
    from tests.strategies.shapes import huge_text
    from tests.strategies.test_contract import CONFIG
    from traces.model import Trace

    huge = Message.text_message("user", huge_text("request"))
    trace = Trace("t", (SYS, ASK, call("a"), result("a"), huge, Message.text_message("assistant", "ok")))
    r = replay(trace, build("codex"), CONFIG, counter=TokenCounter())
    cut = [e for e in r.events if e.detail.startswith(CUT_LATEST_HUMAN)]
    assert [e.kind for e in cut] == ["truncate"] and "20,000 tokens" in cut[0].detail


def test_clean_cuts_agrees_with_safe_cut_at_every_index_on_any_pairing():
    """Aider's split search reads ``clean_cuts`` where it asked ``safe_cut`` at each index: the two must
    agree on every shape, ids reused, results before their calls, calls never answered included."""
    import random

    from strategies._cuts import clean_cuts

    rng = random.Random(28)
    for _ in range(2_000):
        ids = [f"t{k}" for k in range(rng.randrange(1, 6))]
        msgs = []
        for _ in range(rng.randrange(0, 14)):
            blocks = []
            for _ in range(rng.randrange(0, 3)):
                roll = rng.random()
                blocks.append(ToolUse(rng.choice(ids), "bash", {}) if roll < 0.4
                              else ToolResult(rng.choice(ids), "ok") if roll < 0.8 else Text("t"))
            msgs.append(Message(rng.choice(("user", "assistant")), tuple(blocks)))
        assert clean_cuts(msgs) == [safe_cut(msgs, i) == i for i in range(len(msgs) + 1)], msgs


def test_fast_copies_equal_dataclasses_replace():
    from dataclasses import replace

    from strategies._tools import rewrite_uses, with_blocks, with_content

    r = ToolResult("a", "old", is_error=True)
    assert with_content(r, "new") == replace(r, content="new")
    m = Message("user", (r,), id="m1", timestamp=3.0, meta={"k": 1})
    assert with_blocks(m, (Text("x"),)) == replace(m, blocks=(Text("x"),))
    assert rewrite_uses(call("c1"), lambda u: {"command": "pwd"}) == Message(
        "assistant", (ToolUse("c1", "bash", {"command": "pwd"}),))
