"""Copilot CLI importer: events.jsonl with a background compaction, sub-agents, bad input."""

from __future__ import annotations

import json

import pytest

from tests.traces.agent_sessions import CopilotLog, copilot_session, write_jsonl
from traces.formats import copilot_cli, detect, read_path
from traces.model import TraceError, orphans, recorded_calls


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
    trace, sub = result.traces
    assert (trace.n_calls, trace.n_tool_calls) == (expected["calls"], expected["tool_calls"])
    main = [e for e in events if e["type"] == "assistant.message" and "agentId" not in e]
    assert trace.n_calls == len(main)  # every main-agent response; the sub-agent's is its own trace
    assert sub.id == "cop-1/sub-1" and sub.meta["sidechain"] is True and not trace.meta["sidechain"]
    assert [m.text for m in sub.messages] == ["sub-agent work"] and sub.meta["subagent"]["agentName"] == "explore"
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
    (passed,) = [n for n in result.notes if "passed over" in n]  # one line, every kind on it
    assert f"{expected['calls'] - 1} assistant.usage" in passed and "assistant.turn_start" in passed
    assert "sub-agent" not in passed


def test_text_the_model_got_and_tool_failures(session):
    path, _, expected = session
    trace = read_path(path).traces[0]
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


def test_events_without_usage_import_as_calls_without_usage(tmp_path, counter):
    """A file with no assistant.usage event and no outputTokens (assistant.usage is ephemeral)."""
    from bench.cost.pricing import profile
    from bench.replay.loop import ReplayConfig, replay
    from strategies import build

    log = CopilotLog()
    log.add("session.start", {"sessionId": "s", "copilotVersion": "1.0.74", "producer": "copilot-agent"})
    log.add("user.message", {"content": "list the files"})
    log.add("assistant.message", {"messageId": "m1", "content": "", "model": "claude-fable-5",
                                  "toolRequests": [{"toolCallId": "t1", "name": "ls", "arguments": {}}]})
    log.add("tool.execution_complete", {"toolCallId": "t1", "success": True, "result": {"content": "a.py"}})
    log.add("assistant.message", {"messageId": "m2", "content": "One file.", "toolRequests": []})
    result = read_path(write_jsonl(tmp_path / "events.jsonl", log.events))
    (trace,) = result.traces
    assert trace.n_calls == 2 and all(m.usage is None for m in trace.messages if m.role == "assistant")
    assert trace.model == "claude-fable-5" and result.notes == []
    run = replay(trace, build("none"), ReplayConfig(profile("claude-sonnet-4-5")), counter=counter)
    assert run.failed is None and len(run.calls) == 2


def test_a_sub_agent_is_a_sidechain_of_its_own(tmp_path):
    """A task call's sub-agent (1.0.74): its turns carry agentId / parentToolCallId until
    subagent.completed; the main trace keeps the task call and its result."""
    log = CopilotLog()
    log.add("session.start", {"sessionId": "s", "copilotVersion": "1.0.74", "producer": "copilot-agent"})
    log.add("user.message", {"content": "fix it"})
    log.add("assistant.message", {"messageId": "m1", "content": "", "model": "claude-fable-5",
                                  "toolRequests": [{"toolCallId": "task1", "name": "task", "arguments": {}}]})
    log.add("hook.start", {"hookType": "preToolUse"})
    log.add("subagent.started", {"toolCallId": "task1", "agentName": "car", "model": "claude-sonnet-5"},
            agentId="task1")
    log.add("user.message", {"content": "You are Car 1", "transformedContent": "<t/>\n\nYou are Car 1"},
            agentId="task1")
    log.add("tool.execution_complete", {"toolCallId": "task1", "success": True,
                                        "result": {"content": "Agent started in background"}})
    log.add("assistant.message", {"messageId": "s1", "content": "", "model": "claude-sonnet-5",
                                  "parentToolCallId": "task1",
                                  "toolRequests": [{"toolCallId": "x1", "name": "powershell", "arguments": {}}]},
            agentId="task1")
    log.add("tool.execution_complete", {"toolCallId": "x1", "success": True, "result": {"content": "ok"},
                                        "parentToolCallId": "task1"}, agentId="task1")
    log.add("assistant.message", {"messageId": "s2", "content": "Fixed.", "parentToolCallId": "task1",
                                  "toolRequests": []}, agentId="task1")
    log.add("subagent.completed", {"toolCallId": "task1", "agentName": "car", "totalToolCalls": 1},
            agentId="task1")
    log.add("assistant.message", {"messageId": "m2", "content": "The car fixed it.", "toolRequests": []})
    result = read_path(write_jsonl(tmp_path / "events.jsonl", log.events))
    main, car = result.traces
    assert main.id == "s" and [m.role for m in main.messages] == ["user", "assistant", "user", "assistant"]
    assert main.messages[2].tool_results[0].content == "Agent started in background"
    assert car.id == "s/task1" and car.meta["sidechain"] is True and car.meta["agent_id"] == "task1"
    assert car.model == "claude-sonnet-5" and car.n_calls == 2 and car.messages[0].text.endswith("You are Car 1")
    assert car.meta["subagent"] == {"agentName": "car", "model": "claude-sonnet-5", "totalToolCalls": 1}
    assert orphans(car.messages) == (set(), set()) and orphans(main.messages) == (set(), set())
    assert result.notes == [f"{tmp_path / 'events.jsonl'}: passed over 1 event(s) that are not model context: "
                            "1 hook.start"]


def test_the_real_1_0_74_session_keeps_its_sub_agents(shared_traces):
    path = next(shared_traces.glob("copilot-cli__StarCar/*.jsonl"))
    result = read_path(path)
    main, *subs = result.traces
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    responses = {e["data"]["messageId"]: e.get("agentId") for e in events if e["type"] == "assistant.message"}
    assert main.n_calls == sum(1 for a in responses.values() if a is None) == 70
    assert sorted((s.id.split("/")[1], s.n_calls) for s in subs) == sorted(
        (a, sum(1 for x in responses.values() if x == a)) for a in {a for a in responses.values() if a})
    assert all(s.meta["sidechain"] and s.messages[0].role == "user" for s in subs)
    (c,) = main.compactions
    assert c.pre_tokens == 160_095 and len(c.summary) == 11_516
    (passed,) = [n for n in result.notes if "passed over" in n]
    assert "483 hook.start" in passed and len(result.notes) == 1


def _system_log(prompt: str, *, tier: str | None = "default") -> CopilotLog:
    """A 1.0.74 log whose system.message is written again at the next interaction, once changed,
    with a sub-agent's notification in between (as the real StarCar file has them)."""
    log = CopilotLog()
    log.add("session.start", {"sessionId": "s", "copilotVersion": "1.0.74", "producer": "copilot-agent",
                              "contextTier": None})
    log.add("session.model_change", {"newModel": "claude-fable-5", **({"contextTier": tier} if tier else {})})
    log.add("system.message", {"role": "system", "content": prompt})
    log.add("user.message", {"content": "go"})
    log.add("assistant.message", {"messageId": "m1", "content": "Started the car.", "toolRequests": []})
    log.add("system.message", {"role": "system", "content": prompt})
    log.add("system.notification", {"content": "<system_notification>Agent \"car-1\" is idle.</system_notification>",
                                    "kind": {"type": "agent_idle", "agentId": "car-1"}})
    log.add("assistant.message", {"messageId": "m2", "content": "Reading car-1.", "toolRequests": []})
    log.add("system.message", {"role": "system", "content": prompt + " (changed)"})
    return log


def test_the_system_prompt_and_notifications_are_model_context(tmp_path):
    """system.message is the system prompt the model got (the first is kept, repeats counted);
    system.notification reaches the model as a user message; the context tier is kept."""
    path = write_jsonl(tmp_path / "events.jsonl", _system_log("You are the GitHub Copilot CLI.").events)
    result = read_path(path)
    (trace,) = result.traces
    assert [m.role for m in trace.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert trace.messages[0].text == "You are the GitHub Copilot CLI."
    note = trace.messages[3]
    assert "car-1" in note.text and note.meta == {"injected": True, "notification": True}
    assert trace.meta["context_tier"] == "default"
    (passed,) = result.notes
    assert "1 system.message (the same prompt again)" in passed
    assert "1 system.message with another prompt (the first one kept)" in passed
    assert "system.notification" not in passed
    no_tier = read_path(write_jsonl(tmp_path / "b.jsonl", _system_log("p", tier=None).events)).traces[0]
    assert "context_tier" not in no_tier.meta


def test_a_compaction_stays_on_its_message_after_the_system_prompt(tmp_path):
    events, expected = copilot_session()
    events.insert(1, {"type": "system.message", "data": {"role": "system", "content": "sys"}, "id": "sys",
                      "parentId": events[0]["id"], "timestamp": events[0]["timestamp"]})
    trace = read_path(write_jsonl(tmp_path / "events.jsonl", events)).traces[0]
    (c,) = trace.compactions
    assert trace.messages[0].role == "system" and trace.messages[c.message_index].meta["summary"] is True
    assert recorded_calls(trace) == (expected["complete_call"],)


def test_the_system_prompt_counts_toward_the_80_percent(tmp_path, counter):
    """Copilot compares system + conversation (+ tools) with 80% of the tier's window: a session
    whose conversation alone stays under it starts a compaction because of its system prompt."""
    from dataclasses import replace

    from bench.cost.pricing import profile
    from bench.replay.loop import ReplayConfig, replay
    from strategies import build

    def run(with_system: bool) -> list[str]:
        log = CopilotLog()
        log.add("session.start", {"sessionId": "s", "copilotVersion": "1.0.74", "producer": "copilot-agent"})
        if with_system:
            log.add("system.message", {"role": "system", "content": "Rules of the house. " * 700})
        log.add("user.message", {"content": "work"})
        for i in range(12):
            log.add("assistant.message", {"messageId": f"m{i}", "content": "", "toolRequests": [
                {"toolCallId": f"t{i}", "name": "view", "arguments": {"path": f"f{i}"}}]})
            log.add("tool.execution_complete", {"toolCallId": f"t{i}", "success": True,
                                                "result": {"content": f"line {i} " * 120}})
        log.add("assistant.message", {"messageId": "end", "content": "Done.", "toolRequests": []})
        (trace,) = read_path(write_jsonl(tmp_path / f"{with_system}.jsonl", log.events)).traces
        model = replace(profile("claude-sonnet-4-5"), context_window=9_000)
        result = replay(trace, build("copilot-cli"), ReplayConfig(model), counter=counter)
        return [e.detail for e in result.events if e.kind == "summarize"]

    assert run(with_system=False) == []
    assert run(with_system=True)
