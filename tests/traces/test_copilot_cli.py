"""Copilot CLI importer: events.jsonl with a background compaction, sub-agents, bad input."""

from __future__ import annotations

import json

import pytest

from bench.fidelity import recorded_calls
from tests.traces.agent_sessions import CopilotLog, copilot_session, write_jsonl
from traces.formats import copilot_cli, detect, read_path
from traces.model import TraceError, orphans


@pytest.fixture()
def session(tmp_path):
    events, expected = copilot_session()
    folder = tmp_path / "cop-1"
    folder.mkdir()
    return write_jsonl(folder / "events.jsonl", events), events, expected


def test_events_import_with_the_background_compaction(session):
    path, events, expected = session
    assert detect(path) == "copilot-cli"
    result = read_path(path)
    (trace,) = result.traces
    assert (trace.n_calls, trace.n_tool_calls) == (expected["calls"], expected["tool_calls"])
    main = [e for e in events if e["type"] == "assistant.message" and "agentId" not in e]
    assert trace.n_calls == len(main)  # every main-agent response; the sub-agent's is counted below
    assert trace.agent == "copilot-cli" and trace.id == "cop-1" and trace.meta["version"] == "1.0.48"
    assert trace.model == "claude-sonnet-4.5"
    (c,) = trace.compactions
    assert (c.trigger, c.pre_tokens) == ("threshold", expected["pre_tokens"])
    assert c.summary == "<overview>Refactoring the parser.</overview>"
    assert trace.messages[c.message_index].meta["summary"] is True
    # it started on one call and took effect some calls later
    (start,) = trace.meta["compaction_starts"]
    assert start["call"] == expected["start_call"] and recorded_calls(trace) == (expected["complete_call"],)
    assert (start["system_tokens"], start["conversation_tokens"], start["tool_definitions_tokens"]) == (
        3_000, 40_000, 9_000)
    assert orphans(trace.messages) == (set(), set())
    notes = "\n".join(result.notes)
    assert "1 sub-agent event(s)" in notes and "assistant.usage event(s)" in notes


def test_text_the_model_got_and_tool_failures(session):
    path, _, expected = session
    (trace,) = read_path(path).traces
    first = trace.messages[0]
    assert first.text.startswith("<current_datetime>")  # transformedContent: what was sent
    results = [r for m in trace.messages for r in m.tool_results]
    assert sum(r.is_error for r in results) == expected["failed_tools"]
    assert any(r.content == "no such file" for r in results)
    assert not any("(display only)" in r.content for r in results)  # detailedContent is the UI's
    answer = next(m for m in trace.messages if m.role == "assistant")
    assert [b.type for b in answer.blocks] == ["thinking", "tool_use"] and answer.meta["output_tokens"] == 30
    assert answer.usage is None  # assistant.usage is ephemeral: no prompt size recorded


def test_failed_compaction_is_counted_not_recorded(tmp_path):
    log = CopilotLog()
    log.add("session.start", {"sessionId": "s", "copilotVersion": "1.0.9", "producer": "copilot-agent"})
    log.add("user.message", {"content": "hi"})
    log.add("session.compaction_start", {})
    log.add("assistant.message", {"messageId": "m", "content": "hello", "chunkIndex": 0})
    log.add("assistant.message", {"messageId": "m", "content": " again", "chunkIndex": 1})
    log.add("session.compaction_complete", {"success": False, "error": "empty summary"})
    path = write_jsonl(tmp_path / "events.jsonl", log.events)
    result = read_path(path)
    (trace,) = result.traces
    assert trace.compactions == () and trace.n_calls == 1  # one response written in two chunks
    assert trace.messages[-1].text == "hello\n again"
    assert any("1 failed compaction" in n for n in result.notes)


def test_bad_line_names_file_and_line(session):
    path, events, _ = session
    lines = [json.dumps(e) for e in events]
    lines[2] = lines[2][:30]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=rf"{path.name}:3: "):
        copilot_cli.read_file(path)
    assert copilot_cli.read_file(path, lenient=True).skipped == 1
    events = [dict(e) for e in events]
    events[3] = {**events[3], "data": {**events[3]["data"], "toolRequests": [{"name": "view"}]}}
    write_jsonl(path, events)
    with pytest.raises(TraceError, match=rf"{path.name}:4: .*toolCallId"):
        copilot_cli.read_file(path)


def test_sniff():
    from pathlib import Path

    ok = ('{"type":"session.start","data":{"copilotVersion":"1.0.1","producer":"copilot-agent"},'
          '"id":"a","parentId":null}')
    assert copilot_cli.sniff_file(Path("x"), ok + "\n") is None
    assert copilot_cli.sniff_file(Path("x"), '{"type":"user","sessionId":"s","parentUuid":null}\n') is not None
    assert copilot_cli.sniff_file(Path("x"), '{"sessionId":"s","projectHash":"h"}\n') is not None
