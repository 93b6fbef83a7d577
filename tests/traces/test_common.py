"""Normalisation shared by the importers."""

from __future__ import annotations

from traces.formats._common import results_before_text
from traces.model import Message, ToolResult, ToolUse, orphans


def test_user_text_sent_mid_call_moves_after_the_results():
    call = Message("assistant", (ToolUse("a", "bash", {}), ToolUse("b", "bash", {})))
    steer = Message.text_message("user", "also run the linter")
    first = Message("user", (ToolResult("a", "ok"),))
    second = Message("user", (ToolResult("b", "ok"),))
    answer = Message.text_message("assistant", "done")
    out = results_before_text([call, steer, first, second, answer])
    assert out == [call, first, second, steer, answer]
    assert orphans(out) == (set(), set())


def test_text_is_kept_in_place_when_no_call_is_pending():
    msgs = [Message.text_message("user", "hi"), Message.text_message("assistant", "hello"),
            Message.text_message("user", "bye")]
    assert results_before_text(msgs) == msgs
