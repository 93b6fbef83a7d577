"""goose sessions: sessions.db, legacy JSONL and export JSON, hand-built from goose's schema and serde
shapes (traces/formats/goose.py cites them); no real goose session with a permissive licence was found."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.traces._fuzz import only_trace_errors
from traces.formats import detect, goose, load, read_path
from traces.model import Image, Thinking, ToolResult, ToolUse, TraceError, recorded_calls

ROOT = Path(__file__).resolve().parents[2]
CONTINUATION = ("Your context was compacted. The previous message contains a summary of the conversation so far.\n"
                "Do not mention that you read a summary or that conversation summarization occurred.\n"
                "Just continue the conversation naturally based on the summarized context.")
SUMMARY = "## Goal\nMake the calc tests pass.\n## Progress\nadd() fixed in calc.py."
HIDDEN = {"userVisible": True, "agentVisible": False}
GONE = {"userVisible": False, "agentVisible": False}
AGENT_ONLY = {"userVisible": False, "agentVisible": True}


def _text(text: str, **kw: Any) -> dict[str, Any]:
    return {"type": "text", "text": text, **kw}


def _msg(role: str, created: int, content: list[dict[str, Any]], metadata: dict[str, Any] | None = None,
         mid: str | None = None) -> dict[str, Any]:
    m: dict[str, Any] = {"role": role, "created": created, "content": content}
    if mid:
        m["id"] = mid
    if metadata is not None:
        m["metadata"] = metadata
    return m


def _request(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "toolRequest", "id": cid, "toolCall": {"status": "success", "value": {"name": name,
                                                                                        "arguments": args}}}


def session_messages() -> list[dict[str, Any]]:
    """A session with one automatic compaction (context_mgmt/mod.rs compact_messages): the first seven
    messages made agent-invisible, the summary (user, agent-only), the continuation note (assistant,
    agent-only), a fresh copy of the last user text; then two more calls, a user-only notification and
    a user message with a content type this importer does not know."""
    inference = {"provider": "anthropic", "requestedModel": "claude-sonnet-4-5"}
    return [
        _msg("user", 1_700_000_000, [_text("Fix the failing test in calc.py")], HIDDEN, "m1"),
        _msg("assistant", 1_700_000_005, [
            {"type": "thinking", "thinking": "read it first", "signature": "sig"},
            _text("Reading calc.py."),
            _request("t1", "developer__text_editor", {"command": "view", "path": "calc.py"})],
            HIDDEN),
        _msg("user", 1_700_000_006, [{"type": "toolResponse", "id": "t1", "toolResult": {"status": "success", "value": {
            "content": [_text("def add(a, b):\n    return a - b\n", annotations={"audience": ["assistant"]}),
                        _text("(shown to the user)", annotations={"audience": ["user"], "priority": 0.0})],
            "isError": False}}}], HIDDEN),
        _msg("assistant", 1_700_000_010, [_request("t2", "developer__shell", {"command": "pytest -q"})], HIDDEN),
        _msg("user", 1_700_000_011, [{"type": "toolResponse", "id": "t2",
                                      "toolResult": {"status": "error", "error": "Execution failed: exit 1"}}], HIDDEN),
        _msg("assistant", 1_700_000_015, [_text("Fixed add().")], HIDDEN),
        _msg("user", 1_700_000_020, [_text("Now run the tests")], GONE),
        _msg("user", 1_700_000_030, [_text(SUMMARY)], AGENT_ONLY),
        _msg("assistant", 1_700_000_030, [_text(CONTINUATION)], AGENT_ONLY),
        _msg("user", 1_700_000_030, [_text("Now run the tests")], {"userVisible": True, "agentVisible": True}),
        _msg("assistant", 1_700_000_040, [_request("t3", "developer__shell", {"command": "pytest -q"})],
             {"userVisible": True, "agentVisible": True, "inference": inference}),
        _msg("user", 1_700_000_041, [{"type": "toolResponse", "id": "t3",
                                      "toolResult": {"status": "success", "value": [_text("3 passed")]}}]),
        _msg("assistant", 1_700_000_045, [_text("All pass.")],
             {"userVisible": True, "agentVisible": True,
              "inference": {**inference, "resolvedModel": "claude-sonnet-4-5-20250929"}}),
        _msg("assistant", 1_700_000_046, [{"type": "systemNotification", "notificationType": "inlineMessage",
                                           "msg": "Context compacted"}], {"userVisible": True, "agentVisible": False}),
        _msg("user", 1_700_000_050, [{"type": "holographicPrompt", "hue": 7}, _text("thanks"),
                                     {"type": "image", "data": "A" * 400, "mimeType": "image/jpeg"}]),
    ]


METADATA = {"working_dir": "/home/u/calc", "description": "fix calc", "schedule_id": None, "message_count": 15,
            "total_tokens": 41_000, "input_tokens": 40_000, "output_tokens": 1_000,
            "accumulated_total_tokens": 90_000, "accumulated_input_tokens": 86_000, "accumulated_output_tokens": 4_000}


def write_jsonl(path: Path, messages: list[dict[str, Any]] | None = None, metadata: bool = True) -> Path:
    lines = ([METADATA] if metadata else []) + (session_messages() if messages is None else messages)
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    return path


SCHEMA = """
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE sessions (id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
  user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user', working_dir TEXT NOT NULL,
  created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  extension_data TEXT DEFAULT '{}', total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
  accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER, accumulated_output_tokens INTEGER,
  schedule_id TEXT, recipe_json TEXT, user_recipe_values_json TEXT, provider_name TEXT, model_config_json TEXT,
  goose_mode TEXT NOT NULL DEFAULT 'auto');
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
  role TEXT NOT NULL, content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
  timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT, message_id TEXT);
"""
"""goose's tables (session_manager.rs ``create`` at schema 5, plus migrations 6-8 of migrations.rs)."""


def write_db(path: Path) -> Path:
    """Two sessions (the compacted one and a short one on another model) and an empty third one."""
    with sqlite3.connect(path) as db:
        db.executescript(SCHEMA)
        db.execute("insert into schema_version (version) values (8)")
        config = json.dumps({"model_name": "claude-sonnet-4-5", "context_limit": 200_000, "temperature": None})
        db.execute("insert into sessions (id, name, working_dir, created_at, total_tokens, input_tokens, output_tokens,"
                   " provider_name, model_config_json) values (?,?,?,?,?,?,?,?,?)",
                   ("20251127_1", "fix calc", "/home/u/calc", "2025-11-27 10:00:00", 41_000, 40_000, 1_000,
                    "anthropic", config))
        db.execute("insert into sessions (id, name, working_dir, created_at, session_type, model_config_json)"
                   " values (?,?,?,?,?,?)", ("20251127_2", "hello", "/home/u", "2025-11-27 11:00:00", "sub_agent",
                                             json.dumps({"model_name": "gpt-4o"})))
        db.execute("insert into sessions (id, working_dir, created_at) values (?,?,?)",
                   ("20251127_3", "/tmp", "2025-11-27 12:00:00"))
        rows = [("20251127_1", m) for m in session_messages()]
        rows += [("20251127_2", _msg("user", 1_700_100_000, [_text("hello")])),
                 ("20251127_2", _msg("assistant", 1_700_100_002, [_text("Hi! How can I help?")]))]
        for n, (sid, m) in enumerate(rows):
            db.execute("insert into messages (session_id, role, content_json, created_timestamp, metadata_json,"
                       " message_id) values (?,?,?,?,?,?)",
                       (sid, m["role"], json.dumps(m["content"]), m["created"],
                        json.dumps(m.get("metadata", {"userVisible": True, "agentVisible": True})), f"msg_{n}"))
    return path


def _check_session(trace) -> None:
    """The compacted session as every container must give it."""
    assert trace.agent == "goose"
    roles = [m.role for m in trace.messages]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant", "user", "user", "user",
                     "assistant", "user", "assistant", "user"]
    m = trace.messages
    assert isinstance(m[1].blocks[0], Thinking) and m[1].blocks[0].text == "read it first"
    assert m[1].tool_uses[0] == ToolUse("t1", "developer__text_editor", {"command": "view", "path": "calc.py"})
    # Only the items for the assistant go to the model (agent_visible_content).
    assert m[2].blocks == (ToolResult("t1", "def add(a, b):\n    return a - b\n"),)
    assert m[4].blocks == (ToolResult("t2", "Execution failed: exit 1", True),)
    # The summary, where goose put it; the continuation note is no call; the fresh copy is flagged.
    assert m[7].text == SUMMARY and m[7].meta.get("summary") is True
    assert m[8].text == "Now run the tests" and m[8].meta.get("compaction") is True
    assert m[6].text == "Now run the tests" and not m[6].meta
    assert not any(CONTINUATION in x.text for x in m)
    (rc,) = trace.compactions
    assert rc.message_index == 7 and rc.trigger == "auto" and rc.summary == SUMMARY
    assert recorded_calls(trace) == (3,)
    assert m[10].blocks == (ToolResult("t3", "3 passed"),)  # the legacy content list
    assert m[11].meta["model"] == "claude-sonnet-4-5-20250929" and m[9].meta["model"] == "claude-sonnet-4-5"
    assert m[12].blocks[0].text == "thanks" and m[12].blocks[1] == Image("image/jpeg", 300)
    assert trace.n_calls == 5


def test_jsonl_session_maps_messages_tools_and_the_recorded_compaction(tmp_path):
    path = write_jsonl(tmp_path / "20251127_101500.jsonl")
    assert detect(path) == "goose"
    result = read_path(path)
    (trace,) = result.traces
    _check_session(trace)
    assert trace.id == "20251127_101500" and trace.meta["working_dir"] == "/home/u/calc"
    assert trace.meta["session_tokens"]["accumulated_input_tokens"] == 86_000
    assert trace.meta["version"] is None  # goose does not record its version
    note = " ".join(result.notes)
    assert "1 item(s) of unknown type 'holographicPrompt'" in note
    assert "1 compaction continuation note(s)" in note
    assert "1 message(s) never sent to the model" in note
    assert "1 tool response item(s) for the user only" in note


def test_a_file_without_the_metadata_line_starts_with_a_message(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", metadata=False)
    assert detect(path) == "goose"
    _check_session(read_path(path).traces[0])


def test_db_gives_one_trace_per_session_with_model_and_window(tmp_path):
    path = write_db(tmp_path / "sessions.db")
    assert detect(path) == "goose"
    result = read_path(path)
    first, second = result.traces
    _check_session(first)
    assert first.id == "20251127_1" and first.meta["provider"] == "anthropic"
    assert first.meta["session_tokens"] == {"total_tokens": 41_000, "input_tokens": 40_000, "output_tokens": 1_000}
    assert all(m.meta.get("context_window") == 200_000 for m in first.messages if m.role == "assistant")
    assert first.messages[0].id == "msg_0"
    assert second.id == "20251127_2" and second.model == "gpt-4o" and second.meta["sidechain"] is True
    assert [m.text for m in second.messages] == ["hello", "Hi! How can I help?"]
    assert any("1 session(s) without messages: 20251127_3" in n for n in result.notes)


def test_a_usage_ledger_table_is_named_as_not_read(tmp_path):
    path = write_db(tmp_path / "sessions.db")
    with sqlite3.connect(path) as db:
        db.execute("create table usage_ledger (id integer primary key, session_id text, input_tokens integer)")
    assert any("usage_ledger table" in n and "not read" in n for n in read_path(path).notes)


@pytest.mark.parametrize("wal", [False, True])
def test_db_is_opened_read_only(tmp_path, wal):
    """goose's sqlx pool keeps the database in WAL mode: reading it must not leave -wal / -shm files."""
    path = write_db(tmp_path / "sessions.db")
    if wal:
        with sqlite3.connect(path) as db:
            assert db.execute("pragma journal_mode=wal").fetchone()[0] == "wal"
        db.close()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    stamp = path.stat().st_mtime_ns
    read_path(path)
    load([str(tmp_path)])
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before and path.stat().st_mtime_ns == stamp
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sessions.db"]  # no -journal, -wal or -shm left


def test_a_running_goose_s_uncheckpointed_rows_are_read_and_odd_paths_work(tmp_path):
    folder = tmp_path / "odd ?#% name"
    folder.mkdir()
    path = write_db(folder / "sessions.db")
    writer = sqlite3.connect(path)
    try:
        writer.execute("pragma journal_mode=wal")
        writer.execute("insert into messages (session_id, role, content_json, created_timestamp) values (?,?,?,?)",
                       ("20251127_2", "user", json.dumps([_text("one more")]), 1_700_100_003))
        writer.commit()
        assert (folder / "sessions.db-wal").exists()  # goose still has it open: the row is only in the WAL
        (_, second) = read_path(path).traces
        assert second.messages[-1].text == "one more"
    finally:
        writer.close()


def test_folder_import_finds_sessions_db_and_jsonl(tmp_path):
    write_db(tmp_path / "sessions.db")
    write_jsonl(tmp_path / "old.jsonl")
    (tmp_path / "README.txt").write_text("not a session")
    result = load([str(tmp_path)])
    assert sorted(t.id for t in result.traces) == ["20251127_1", "20251127_2", "old"]
    assert any("README.txt" in n for n in result.notes)


def test_empty_sessions_and_stray_rows_are_noted_not_fatal(tmp_path):
    """goose writes a session's metadata line (or row) before its first message."""
    empty = write_jsonl(tmp_path / "empty.jsonl", [])
    assert detect(empty) == "goose"
    result = read_path(empty)
    assert result.traces == [] and any("no user or assistant message" in n for n in result.notes)
    path = write_db(tmp_path / "sessions.db")
    with sqlite3.connect(path) as db:
        db.execute("insert into messages (session_id, role, content_json, created_timestamp)"
                   " values ('gone', 'user', '[]', 1)")
    assert any("1 message row(s) of no session" in n for n in read_path(path).notes)
    assert len(load([str(tmp_path)]).traces) == 2


def test_consecutive_assistant_rows_are_one_call(tmp_path):
    msgs = [_msg("user", 1, [_text("hi")]), _msg("assistant", 2, [_text("Hel")]), _msg("assistant", 3, [_text("lo")])]
    result = read_path(write_jsonl(tmp_path / "s.jsonl", msgs))
    (trace,) = result.traces
    assert trace.n_calls == 1 and [b.text for b in trace.messages[1].blocks] == ["Hel", "lo"]
    assert any("1 assistant row(s) merged" in n for n in result.notes)


def test_marker_era_compaction_is_recorded(tmp_path):
    """Desktop before the visibility metadata: marker, summary (an assistant text), the old note."""
    msgs = [_msg("assistant", 1, [{"type": "summarizationRequested", "msg": "Conversation compacted and summarized"}]),
            _msg("assistant", 1, [_text("Summary: the user wants calc fixed.")]),
            _msg("assistant", 1, [_text("The previous message contains a summary that was prepared because a "
                                        "context limit was reached.")]),
            _msg("user", 2, [_text("go on")]), _msg("assistant", 3, [_text("Done.")])]
    (trace,) = read_path(write_jsonl(tmp_path / "s.jsonl", msgs)).traces
    assert [m.role for m in trace.messages] == ["user", "user", "assistant"]
    assert trace.messages[0].meta == {"summary": True}
    (rc,) = trace.compactions
    assert rc.message_index == 0 and rc.trigger == "unrecorded" and rc.summary.startswith("Summary:")


def test_manual_compaction_keeps_no_copy(tmp_path):
    note = "Your context was compacted at the user's request. The previous message contains a summary."
    msgs = [_msg("user", 1, [_text("hi")], HIDDEN), _msg("assistant", 2, [_text("hello")], HIDDEN),
            _msg("user", 3, [_text("S")], AGENT_ONLY), _msg("assistant", 3, [_text(note)], AGENT_ONLY),
            _msg("user", 4, [_text("hi")]), _msg("assistant", 5, [_text("again")])]
    (trace,) = read_path(write_jsonl(tmp_path / "s.jsonl", msgs)).traces
    assert trace.compactions[0].trigger == "manual"
    assert not trace.messages[3].meta  # a new turn of the user, not goose's copy


def test_bad_json_names_file_and_line_in_two_lines_at_most(tmp_path):
    path = tmp_path / "s.jsonl"
    write_jsonl(path)
    lines = path.read_text().splitlines()
    lines[3] = lines[3][:20]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError) as e:
        read_path(path, fmt="goose")
    assert f"{path}:4:" in str(e.value) and len(str(e.value).splitlines()) <= 2
    assert read_path(path, lenient=True, fmt="goose").skipped == 1


def test_bad_db_row_names_the_row(tmp_path):
    path = write_db(tmp_path / "sessions.db")
    with sqlite3.connect(path) as db:
        db.execute("update messages set content_json = '[{\"type\": \"text\"' where id = 5")
    with pytest.raises(TraceError) as e:
        read_path(path)
    assert "messages row 5" in str(e.value) and str(path) in str(e.value) and len(str(e.value).splitlines()) <= 2
    lenient = read_path(path, lenient=True)
    assert lenient.skipped == 1 and len(lenient.traces) == 2


def test_wrong_types_are_trace_errors(tmp_path):
    msgs = session_messages()
    msgs[2]["content"][0]["toolResult"]["value"]["content"] = "not a list"
    only_trace_errors(goose.read_file, write_jsonl(tmp_path / "a.jsonl", msgs))
    msgs = session_messages()
    msgs[1]["content"][2]["toolCall"] = ["x"]
    only_trace_errors(goose.read_file, write_jsonl(tmp_path / "b.jsonl", msgs))
    msgs = session_messages()
    msgs[0]["role"] = "tool"  # an unknown role is counted, not an error
    result = goose.read_file(write_jsonl(tmp_path / "c.jsonl", msgs))
    assert any("1 message(s) with role 'tool'" in n for n in result.notes)


def test_export_json_reads_like_the_db(tmp_path):
    export = {"id": "20251127_1", "working_dir": "/home/u/calc", "name": "fix calc", "session_type": "user",
              "created_at": "2025-11-27T10:00:00Z", "updated_at": "2025-11-27T10:05:00Z", "extension_data": {},
              "total_tokens": 41_000, "conversation": session_messages(), "message_count": 15}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export, indent=2))
    assert detect(path) == "goose"
    _check_session(read_path(path).traces[0])


def test_other_formats_are_not_claimed(tmp_path):
    chat = tmp_path / "c.json"
    chat.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]))
    assert detect(chat) == "chat"
    oc = tmp_path / "o.db"
    with sqlite3.connect(oc) as db:
        db.execute("create table session (id text)")
    assert isinstance(goose.sniff_file(oc, oc.read_bytes().decode("utf-8", "replace")), str)


def test_run_replays_a_goose_session_end_to_end(tmp_path):
    path = write_db(tmp_path / "sessions.db")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "bench", "run", "--traces", str(path), "--model", "recorded",
                           "--no-report", "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = list(out.rglob("results.csv"))
    assert results, proc.stdout[-2000:]
    text = results[0].read_text()
    assert "20251127_1" in text and "goose" in text


def test_tool_pair_summary_is_flagged_and_its_pair_kept(tmp_path):
    """summarize_tool_call: the pair made agent-invisible, an agent-only user summary appended after."""
    msgs = [_msg("user", 1, [_text("list files")]),
            _msg("assistant", 2, [_request("c1", "shell", {"command": "ls"})], HIDDEN),
            _msg("user", 3, [{"type": "toolResponse", "id": "c1", "toolResult": {"status": "success", "value": {
                "content": [_text("a.py\nb.py")]}}}], HIDDEN),
            _msg("user", 3, [_text("A call to shell listed two files.")], AGENT_ONLY),
            _msg("assistant", 4, [_text("Two files.")]),
            _msg("user", 5, [_text("draft, never sent")], {"userVisible": True, "agentVisible": False})]
    result = read_path(write_jsonl(tmp_path / "s.jsonl", msgs))
    (trace,) = result.traces
    assert [m.role for m in trace.messages] == ["user", "assistant", "user", "user", "assistant"]
    assert trace.messages[3].meta["compaction"] is True and not trace.compactions
    assert trace.messages[2].tool_results[0].content == "a.py\nb.py"
    note = " ".join(result.notes)
    assert "1 tool-pair summaries" in note and "1 message(s) never sent to the model" in note
