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


def test_a_repeated_trace_id_is_renamed_not_merged(tmp_path):
    from traces import native
    from traces.formats import load
    from traces.model import Message, Trace

    trace = Trace("same", (Message.text_message("user", "hi"), Message.text_message("assistant", "hello")))
    a = native.write(trace, tmp_path / "a.cbt.jsonl")
    b = native.write(trace, tmp_path / "b.cbt.jsonl")
    result = load([str(a), str(b), str(a)])
    assert [t.id for t in result.traces] == ["same", "same#2", "same#3"]
    assert any("renamed 'same#2'" in n for n in result.notes)
