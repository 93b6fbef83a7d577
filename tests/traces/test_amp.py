"""Amp threads, hand-built from the shape the public readers cited in traces/formats/amp.py agree on
(no real Amp thread with a permissive licence was found)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.scoring.fidelity import matching_strategy
from tests.traces._fuzz import only_trace_errors
from traces.formats import amp, detect, read_path
from traces.model import Image, Thinking, ToolResult, ToolUse, TraceError, Usage, recorded_calls

ROOT = Path(__file__).resolve().parents[2]
TID = "T-019b9d03-62e3-772f-9780-3e637f90eaec"
SUMMARY = "The user wants calc fixed; add() subtracted. Fixed; tests pass."


def _usage(inp: int, out: int, read: int = 0, write: int = 0) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "inputTokens": inp, "outputTokens": out, "cacheReadInputTokens": read,
            "cacheCreationInputTokens": write, "totalInputTokens": inp + read + write,
            "timestamp": "2026-01-08T10:00:05Z"}


def thread() -> dict[str, Any]:
    """Two calls with tools, a summary (info message), a cancelled call, an unknown block type."""
    image = {"type": "image", "source": {"type": "base64", "mediaType": "image/png", "data": "A" * 400}}
    msgs = [
        {"role": "user", "messageId": 0, "content": [{"type": "text", "text": "fix calc.py"}, image],
         "meta": {"sentAt": 1767865803494}},
        {"role": "assistant", "messageId": 1, "content": [
            {"type": "thinking", "thinking": "look first", "signature": "s"},
            {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"path": "calc.py"}}],
         "usage": _usage(1200, 40, 800, 100), "state": {"type": "complete", "stopReason": "tool_use"}},
        {"role": "user", "messageId": 2, "content": [
            {"type": "tool_result", "toolUseID": "toolu_01",
             "run": {"status": "done", "result": "def add(a, b): return a - b"}}]},
        {"role": "assistant", "messageId": 3, "content": [
            {"type": "tool_use", "id": "toolu_02", "name": "Bash", "input": {"cmd": "pytest -q"}}],
         "usage": _usage(300, 30, 2000), "state": {"type": "complete", "stopReason": "tool_use"}},
        {"role": "user", "messageId": 4, "content": [
            {"type": "tool_result", "toolUseID": "toolu_02",
             "run": {"status": "error", "error": {"message": "exit 1"}}}]},
        {"role": "info", "messageId": 5,
         "content": [{"type": "summary", "summary": {"type": "message", "summary": SUMMARY}}]},
        {"role": "user", "messageId": 6, "content": [{"type": "text", "text": "run them again"},
                                                     {"type": "hologram", "x": 1}]},
        {"role": "assistant", "messageId": 7, "content": [
            {"type": "redacted_thinking", "data": "b64=="},
            {"type": "tool_use", "id": "toolu_03", "name": "Bash", "input": {"cmd": "pytest"}}],
         "usage": _usage(500, 20, 1000), "state": {"type": "complete", "stopReason": "tool_use"}},
        {"role": "user", "messageId": 8, "content": [
            {"type": "tool_result", "toolUseID": "toolu_03", "run": {"status": "rejected-by-user"}}]},
        {"role": "assistant", "messageId": 9, "content": [{"type": "text", "text": "Stopped."}],
         "usage": _usage(50, 5, 1500), "state": {"type": "cancelled"}},
    ]
    return {"v": 12, "id": TID, "created": 1767865803494, "title": "fix calc", "agentMode": "smart",
            "env": {"initial": {"trees": [{"displayName": "calc", "uri": "file:///home/u/calc"}],
                                "platform": {"os": "linux", "client": "CLI", "clientVersion": "0.0.1767865000"}}},
            "messages": msgs, "nextMessageId": 10,
            "relationships": [{"threadID": "T-00000000-parent", "type": "handoff", "role": "child"}]}


def write(path: Path, data: dict[str, Any] | None = None) -> Path:
    path.write_text(json.dumps(thread() if data is None else data, indent=2), encoding="utf-8")
    return path


def test_thread_maps_messages_tools_usage_and_the_summary(tmp_path):
    path = write(tmp_path / f"{TID}.json")
    assert detect(path) == "amp"
    result = read_path(path)
    (t,) = result.traces
    assert t.id == TID and t.agent == "amp" and t.model == "claude-sonnet-4-5"
    assert t.meta["version"] == "0.0.1767865000" and t.meta["relationships"][0]["type"] == "handoff"
    m = t.messages
    assert [x.role for x in m] == ["user", "assistant", "user", "assistant", "user", "user", "user", "assistant",
                                   "user", "assistant"]
    assert m[0].blocks[1] == Image("image/png", 300) and m[0].timestamp == pytest.approx(1767865803.494)
    assert isinstance(m[1].blocks[0], Thinking)
    assert m[1].tool_uses[0] == ToolUse("toolu_01", "Read", {"path": "calc.py"})
    assert m[1].usage == Usage(1200, 40, 800, 100)  # inputTokens is the uncached part
    assert m[2].blocks == (ToolResult("toolu_01", "def add(a, b): return a - b"),)
    assert m[4].blocks == (ToolResult("toolu_02", "exit 1", True),)
    assert m[5].text == SUMMARY and m[5].meta == {"summary": True}
    (rc,) = t.compactions
    assert rc.message_index == 5 and rc.trigger == "unrecorded" and rc.pre_tokens == 2300 and rc.summary == SUMMARY
    assert recorded_calls(t) == (2,)
    assert m[8].blocks == (ToolResult("toolu_03", "rejected by user", True),)
    assert m[9].meta["state"] == "cancelled"
    note = " ".join(result.notes)
    assert "1 user block(s) of type 'hologram'" in note and "1 assistant message(s) in state 'cancelled'" in note
    assert matching_strategy(t) == "amp"


def test_object_results_are_kept_as_json_and_unknown_statuses_counted(tmp_path):
    data = thread()
    data["messages"][2]["content"][0]["run"] = {"status": "done", "result": {"output": "ok", "exitCode": 0}}
    data["messages"][4]["content"][0]["run"] = {"status": "blocked-on-user"}
    result = read_path(write(tmp_path / "t.json", data))
    m = result.traces[0].messages
    assert json.loads(m[2].blocks[0].content) == {"output": "ok", "exitCode": 0}
    assert json.loads(m[4].blocks[0].content) == {"status": "blocked-on-user"}
    assert any("run status 'blocked-on-user'" in n for n in result.notes)


def test_bad_json_and_wrong_types_are_named(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(thread(), indent=2)[:300])
    with pytest.raises(TraceError) as e:
        read_path(path, fmt="amp")
    assert str(path) in str(e.value) and len(str(e.value).splitlines()) <= 2
    data = thread()
    data["messages"][2]["content"][0]["run"] = "done"
    bad = write(tmp_path / "w.json", data)
    with pytest.raises(TraceError, match=r"messages\[2\]"):
        read_path(bad)
    assert read_path(bad, lenient=True).skipped == 1
    only_trace_errors(amp.read_file, bad)


def test_chat_files_are_not_claimed(tmp_path):
    chat = tmp_path / "c.json"
    chat.write_text(json.dumps({"id": "conv-1", "messages": [{"role": "user", "content": "hi"},
                                                            {"role": "assistant", "content": "ok"}]}))
    assert detect(chat) == "chat"


def test_run_replays_an_amp_thread(tmp_path):
    path = write(tmp_path / f"{TID}.json")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "bench", "run", "--traces", str(path), "--model", "recorded",
                           "--no-report", "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert TID in next(out.rglob("results.csv")).read_text()
