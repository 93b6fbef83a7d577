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
    from traces.formats import unique_ids

    clash = [Trace("x", trace.messages), Trace("x", trace.messages), Trace("x#2", trace.messages)]
    assert [t.id for t in unique_ids(clash)[0]] == ["x", "x#3", "x#2"]  # never two traces with one id


def test_a_garbage_first_line_is_a_bad_record_not_an_unknown_format(tmp_path):
    import json

    import pytest

    from traces.formats import detect, load
    from traces.model import TraceError

    claude = [{"type": "user", "sessionId": "s", "parentUuid": None, "uuid": "u1", "timestamp": "2026-01-01T00:00:00Z",
               "message": {"role": "user", "content": "hi"}},
              {"type": "assistant", "sessionId": "s", "parentUuid": "u1", "uuid": "u2",
               "timestamp": "2026-01-01T00:00:01Z",
               "message": {"id": "m", "role": "assistant", "content": [{"type": "text", "text": "hello"}]}}]
    codex = [{"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "c"}},
             {"timestamp": "2026-01-01T00:00:01Z", "type": "response_item",
              "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}}]
    for fmt, records in (("claude-code", claude), ("codex", codex)):
        path = tmp_path / f"{fmt}.jsonl"
        path.write_text('{"type": "us\n' + "".join(json.dumps(r) + "\n" for r in records))
        assert detect(path) == fmt
        with pytest.raises(TraceError, match=f"{fmt}.jsonl:1: bad JSON record"):
            load([str(path)])
        result = load([str(path)], lenient=True)
        assert result.skipped == 1 and len(result.traces) == 1
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    with pytest.raises(TraceError, match="unknown trace format"):
        detect(tmp_path / "x.csv")


def test_cached_message_properties_belong_to_their_object():
    """``is_tool_result``, ``is_human_turn`` and ``input_json`` are computed once per object: a copy with
    other blocks (``with_blocks``, ``replace``) answers for its own blocks, and a pickled copy keeps them."""
    import pickle
    from dataclasses import replace as dc_replace

    from traces.model import Message, Text, ToolResult, ToolUse

    result = Message("user", (ToolResult("t1", "ok"),))
    assert (result.is_tool_result, result.is_human_turn) == (True, False)
    turn = result.with_blocks((ToolResult("t1", "ok"), Text("and now?")))
    assert (turn.is_tool_result, turn.is_human_turn) == (False, True)
    assert (result.is_tool_result, result.is_human_turn) == (True, False)
    empty = dc_replace(result, blocks=())
    assert (empty.is_tool_result, empty.is_human_turn) == (False, True)
    answer = dc_replace(result, role="assistant")
    assert (answer.is_tool_result, answer.is_human_turn) == (False, False)
    use = ToolUse("t1", "Read", {"b": 1, "a": "é"})
    assert use.input_json() == '{"a": "é", "b": 1}' == pickle.loads(pickle.dumps(use)).input_json()
    assert dc_replace(use, input={"c": 2}).input_json() == '{"c": 2}'
    again = pickle.loads(pickle.dumps(result))
    assert (again.is_tool_result, again.is_human_turn, again == result) == (True, False, True)
