"""Issue 11's importer failures, each from its minimal input: a TraceError naming the file and the line
(or the record path), exit 2 from the CLI, never a traceback; with --lenient, bad text is repaired and counted."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from bench.cli.main import main
from tests.traces.test_opencode import _db, _session, _storage
from traces import native
from traces.formats import amp, claude_code, codex, detect, goose, load
from traces.formats._common import MAX_DEPTH, MAX_STRING, json_depth, loads
from traces.model import TraceError

SURROGATE_CHAT = r'[{"role":"user","content":"hi \ud83d"},{"role":"assistant","content":"ok"}]'
DEEP = '{"a":' * 1000 + "1" + "}" * 1000


def _write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def test_lone_surrogate_is_named_by_record_path_and_repaired_when_lenient(tmp_path):
    path = _write(tmp_path, "s.json", SURROGATE_CHAT)
    with pytest.raises(TraceError, match=r"s\.json: \[0\]\.content: lone surrogate '\\ud83d'"):
        load([str(path)])
    result = load([str(path)], lenient=True)
    assert result.traces[0].messages[0].text == "hi \ufffd"
    assert any("repaired 1 lone surrogate" in n for n in result.notes)
    native.write(result.traces[0], tmp_path / "out.cbt.jsonl")  # what used to die: the UTF-8 encoder
    assert native.read(tmp_path / "out.cbt.jsonl").messages[0].text == "hi \ufffd"


def test_surrogate_in_a_jsonl_line_and_in_tool_arguments_names_the_line(tmp_path):
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": json.dumps({"q": "x"})
                                                      .replace("x", "\\ud800")}}]}
    convo = [{"role": "user", "content": "go"}, call, {"role": "tool", "tool_call_id": "c1", "content": "r"}]
    clean = json.loads(json.dumps(convo).replace("\\\\ud800", "y"))
    path = _write(tmp_path, "c.jsonl", json.dumps({"messages": clean}) + "\n" + json.dumps({"messages": convo}))
    with pytest.raises(TraceError, match=r"c\.jsonl:2: arguments\.q: lone surrogate"):
        load([str(path)])
    assert load([str(path)], lenient=True).traces[1].messages[1].tool_uses[0].input == {"q": "\ufffd"}


def test_nul_and_invalid_utf8_are_named_by_line(tmp_path):
    aider = "# aider chat started at 2024-01-01 00:00:00\n\n#### hi\n\nok \x00 there\n"
    path = _write(tmp_path, "a.md", aider)
    with pytest.raises(TraceError, match=r"a\.md:5: NUL character"):
        load([str(path)])
    assert load([str(path)], lenient=True).traces[0].messages[1].text == "ok \ufffd there"
    nul = _write(tmp_path, "n.json", '[{"role":"user","content":"a\\u0000b"},{"role":"assistant","content":"ok"}]')
    with pytest.raises(TraceError, match=r"n\.json: \[0\]\.content: NUL character"):
        load([str(nul)])


@pytest.mark.parametrize("module", [native, claude_code, codex, goose, amp])
def test_detectors_survive_a_first_line_nested_1000_deep(tmp_path, module):
    path = _write(tmp_path, "deep.jsonl", DEEP + "\n")
    assert isinstance(module.sniff_file(path, DEEP), str)  # declines, no RecursionError
    with pytest.raises(TraceError, match="unknown trace format"):
        detect(path)


def test_deep_line_in_a_jsonl_file_is_named_and_skipped_when_lenient(tmp_path):
    good = {"type": "user", "sessionId": "s", "parentUuid": None, "uuid": "u1",
            "timestamp": "2026-01-01T00:00:00Z", "message": {"role": "user", "content": "hi"}}
    path = _write(tmp_path, "cc.jsonl", json.dumps(good) + "\n" + DEEP + "\n")
    with pytest.raises(TraceError, match=rf"cc\.jsonl:2: JSON record nested 1000 levels deep \(limit {MAX_DEPTH}\)"):
        load([str(path)])
    assert load([str(path)], lenient=True).skipped == 1


def _args_nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def test_tool_arguments_nested_500_deep_never_reach_the_writer(tmp_path):
    """As a JSON string they stay text; as an object (Anthropic input) the record is refused before parsing."""
    convo = [{"role": "user", "content": "go"},
             {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                                   "function": {"name": "f", "arguments": _args_nested(500)}}]},
             {"role": "tool", "tool_call_id": "c1", "content": "r"}]
    trace = load([str(_write(tmp_path, "t.json", json.dumps(convo)))]).traces[0]
    assert trace.messages[1].tool_uses[0].input == {"arguments": _args_nested(500)}
    native.write(trace, tmp_path / "t.cbt.jsonl")
    anthropic = [{"role": "user", "content": "go"},
                 {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "f",
                                                    "input": json.loads(_args_nested(MAX_DEPTH))}]}]
    with pytest.raises(TraceError, match=rf"a\.json: JSON nested {MAX_DEPTH + 4} levels deep"):
        load([str(_write(tmp_path, "a.json", json.dumps(anthropic)))])


def test_tool_arguments_just_under_the_limit_write_and_read_back(tmp_path):
    convo = [{"role": "user", "content": "go"},
             {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                                   "function": {"name": "f", "arguments": _args_nested(90)}}]},
             {"role": "tool", "tool_call_id": "c1", "content": "r"}]
    trace = load([str(_write(tmp_path, "t.json", json.dumps(convo)))]).traces[0]
    out = native.write(trace, tmp_path / "t.cbt.jsonl")
    assert native.read(out).messages[1].tool_uses[0].input == trace.messages[1].tool_uses[0].input


def test_depth_is_counted_outside_strings_and_before_parsing():
    assert json_depth('{"a": "[[[[{{{{"}') == 1
    assert json_depth(" ".join(["{}"] * 500)) == 1
    assert json_depth(DEEP) == 1000
    with pytest.raises(TraceError, match="nested 1000 levels"):
        loads(DEEP, path="x")


def test_a_string_over_the_limit_is_an_error_or_cut_when_lenient(monkeypatch):
    import traces.formats._common as common

    monkeypatch.setattr(common, "MAX_STRING", 10)
    with pytest.raises(TraceError, match=r"x:3: k: a string of 11 characters \(the limit is 10\)"):
        common.loads('{"k": "' + "a" * 11 + '"}', path="x", line=3)
    assert common.loads('{"k": "' + "a" * 11 + '"}', path="x", lenient=True) == {"k": "a" * 10}
    assert MAX_STRING >= 16 * 1024 * 1024


@pytest.mark.parametrize("tokens", ["1.2.3k sent, 5 received.", "12 sent, 5 received. Cost: $1.2.3 request."])
def test_aider_malformed_usage_line_is_kept_as_output(tmp_path, tokens):
    text = f"# aider chat started at 2024-01-01 00:00:00\n\n#### hi\n\nhello\n\n> Tokens: {tokens}\n"
    trace = load([str(_write(tmp_path, "h.md", text))]).traces[0]
    if "1.2.3k" in tokens:  # not a usage line aider writes: kept as its output, not dropped
        assert trace.messages[1].usage is None and "1.2.3k" in trace.messages[2].text
    else:
        assert trace.messages[1].usage is not None and trace.messages[1].usage.output_tokens == 5


def test_opencode_database_invalid_utf8_names_the_row(tmp_path):
    path = _db(tmp_path / "o.db")
    with sqlite3.connect(path) as db:
        db.execute("update message set data = cast(? as blob) where id = 'msg_02'",
                   (b'{"role": "assistant", "modelID": "m\xff"}',))
    with pytest.raises(TraceError, match=r"o\.db: message msg_02:1: not UTF-8 \(byte 0xff"):
        load([str(path)])
    result = load([str(path)], lenient=True)
    assert result.traces and any("repaired 1 invalid UTF-8" in n for n in result.notes)


def test_goose_database_invalid_utf8_and_deep_metadata_name_the_row(tmp_path):
    from tests.traces.test_goose import write_db

    path = write_db(tmp_path / "sessions.db")
    with sqlite3.connect(path) as db:
        db.execute("update messages set content_json = ? where id = 2", (b'[{"type":"text","text":"a\xff"}]',))
        db.execute("update messages set metadata_json = ? where id = 4", ('{"a":' * 200 + "1" + "}" * 200,))
    with pytest.raises(TraceError, match=r"sessions\.db: messages row 2(:1)?: not UTF-8"):
        load([str(path)])
    result = load([str(path)], lenient=True)  # the bad byte repaired, the deep row skipped: both counted
    assert result.skipped == 1 and any("repaired 1 invalid UTF-8" in n for n in result.notes)


def test_opencode_storage_long_id_and_errors_name_the_file_at_fault(tmp_path):
    session = _session()
    session[1][0]["id"] = "msg_" + "x" * 296
    path = _storage(tmp_path / "a", [(i, p) for i, p in session if i["id"] != session[1][0]["id"]])
    long_file = path.parent.parent.parent / "message" / "ses_1" / "msg_long.json"
    long_file.write_text(json.dumps(session[1][0]))
    with pytest.raises(TraceError, match=r"msg_long\.json: id 'msg_x.* is not a storage name"):
        load([str(path)])
    path = _storage(tmp_path / "b")
    part = next((path.parent.parent.parent / "part").rglob("prt_05.json"))
    bad = {**json.loads(part.read_text()), "state": {"status": 7}}
    part.write_text(json.dumps(bad))
    with pytest.raises(TraceError, match=r"prt_05\.json: field 'status' should be a string"):
        load([str(path)])


OH_EVENT = {"id": 1, "source": "agent", "action": "run", "args": {"command": "ls"}, "timestamp": "2025-01-01T00:00:00",
            "tool_call_metadata": {"tool_call_id": "t1", "function_name": "execute_bash",
                                   "model_response": {"id": "r1", "usage": {"prompt_tokens": "12"}}}}


def test_openhands_wrong_typed_usage_is_named_by_file_line_and_event(tmp_path):
    user = {"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}}
    row = {"instance_id": "i1", "history": [user, OH_EVENT]}
    path = _write(tmp_path, "output.jsonl", json.dumps(row) + "\n")
    with pytest.raises(TraceError, match=r"output\.jsonl:1: history\[1\]: field 'prompt_tokens' should be an integer"):
        load([str(path)])
    listed = _write(tmp_path, "events.json", json.dumps([user, OH_EVENT]))
    with pytest.raises(TraceError, match=r"events\.json: \[1\]: field 'prompt_tokens'"):
        load([str(listed)])
    bad_event = _write(tmp_path, "bad.json", json.dumps([user, {"source": "agent", "action": "x"}, 3]))
    with pytest.raises(TraceError, match=r"bad\.json: \[2\]: an event is an object"):
        load([str(bad_event)])


def test_native_wrong_typed_usage_is_named_by_line(tmp_path):
    lines = native.dumps(load([str(_write(tmp_path, "c.json", SURROGATE_CHAT.replace("\\ud83d", "")))]).traces[0])
    records = [json.loads(x) for x in lines.splitlines()]
    records[2]["usage"] = {"input_tokens": "12"}
    path = _write(tmp_path, "u.cbt.jsonl", "\n".join(json.dumps(r) for r in records))
    with pytest.raises(TraceError, match=r"u\.cbt\.jsonl:3: .*'input_tokens' should be an integer"):
        native.read(path)


@pytest.mark.parametrize("command", ["import", "run"])
@pytest.mark.parametrize("name, text", [("s.json", SURROGATE_CHAT), ("deep.jsonl", DEEP)])
def test_cli_exits_2_naming_the_file(tmp_path, capsys, name, text, command):
    path = _write(tmp_path, name, text)
    argv = (["import", str(path), "--out", str(tmp_path / "out")] if command == "import" else
            ["run", "--traces", str(path), "--strategies", "none", "--no-report", "--quiet", "--out", str(tmp_path)])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{path}" in err and "Traceback" not in err
