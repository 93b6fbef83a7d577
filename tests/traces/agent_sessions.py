"""Hand-built Gemini CLI and Copilot CLI session files, following each tool's public record format.

No real session of either agent with a permissive licence was found, so these are built from the
formats: Gemini CLI's chatRecordingTypes.ts / chatRecordingService.ts (google-gemini/gemini-cli
@5411f113) and Copilot's generated session-events.ts (github/copilot-sdk @cc0438d6). Each builder
returns the records and what an importer must find in them, so tests assert against the records.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SNAPSHOT = ("<state_snapshot>\n<overall_goal>Make the calc tests pass.</overall_goal>\n"
            "<key_knowledge>- tests: `pytest -q`; the bug was in add().</key_knowledge>\n</state_snapshot>")


def _lines(n: int, word: str) -> str:
    return "\n".join(f"{word} line {i}: " + "x" * 60 for i in range(n))


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# --- Gemini CLI ---------------------------------------------------------------------------------------

def _ts(i: int) -> str:
    return f"2026-05-01T10:{i // 60:02d}:{i % 60:02d}.000Z"


def _gemini(mid: str, i: int, text: str = "", calls: list[dict] | None = None, prompt: int = 1000) -> dict:
    rec: dict[str, Any] = {"id": mid, "timestamp": _ts(i), "type": "gemini", "content": text,
                           "thoughts": [{"subject": "Plan", "description": "look first", "timestamp": _ts(i)}],
                           "tokens": {"input": prompt, "output": 20, "cached": prompt // 2, "thoughts": 5,
                                      "tool": 0, "total": prompt + 25},
                           "model": "gemini-2.5-pro"}
    if calls:
        rec["toolCalls"] = calls
    return rec


def _call(cid: str, name: str, output: str, i: int, status: str = "success") -> dict:
    return {"id": cid, "name": name, "args": {"path": f"src/{cid}.py"}, "status": status, "timestamp": _ts(i),
            "result": [{"functionResponse": {"id": cid, "name": name, "response": {"output": output}}}]}


def _user(mid: str, i: int, text: str) -> dict:
    return {"id": mid, "timestamp": _ts(i), "type": "user", "content": [{"text": text}]}


def gemini_session(turns_before: int = 4, turns_after: int = 3, output_lines: int = 40,
                   nudges: bool = False) -> tuple[list[dict], dict]:
    """A JSONL session (2026 format): setup turn, tool-calling turns, a rewind, a compression
    ($set.messages rewrite holding the snapshot), more turns; with ``nudges`` the user types "go on"
    after each tool turn. Returns (records, expected)."""
    recs: list[dict] = [{"sessionId": "gem-1", "projectHash": "p" * 64, "startTime": _ts(0), "lastUpdated": _ts(0),
                         "kind": "main"}]
    setup = [{"id": "env", "timestamp": _ts(0), "type": "user", "content": [{"text": "This is the Gemini CLI. "
                                                                              "Setting up the context."}]},
             {"id": "env-ack", "timestamp": _ts(0), "type": "gemini", "content": [{"text": "Got it. Thanks for the "
                                                                                    "context!"}]}]
    recs.append({"$set": {"messages": setup, "lastUpdated": _ts(0)}})
    recs.append(_user("u0", 1, "Fix the failing tests in calc.py"))
    calls = 0
    i = 2
    prompt = 1000
    for k in range(turns_before):
        cid = f"c{k}"
        g = _gemini(f"g{k}", i, "", [_call(cid, "read_file", _lines(output_lines, f"read{k}"), i)], prompt)
        tokens = g.pop("tokens")
        recs.append(g)  # written first without tokens, then again under the same id with them
        recs.append({**g, "tokens": tokens})
        recs.append({"id": f"fr{k}", "timestamp": _ts(i), "type": "user",  # the same result, logged again
                     "content": [{"functionResponse": {"id": cid, "name": "read_file",
                                                       "response": {"output": _lines(output_lines, f"read{k}")}}}]})
        if nudges:
            recs.append(_user(f"n{k}", i, f"go on with step {k + 1}"))
        calls += 1
        i += 1
        prompt += 1500
    recs.append(_gemini("gdone", i, "The bug is in add().", None, prompt))
    calls += 1
    recs.append({"id": "info1", "timestamp": _ts(i), "type": "info", "content": "Request cancelled."})
    recs.append(_user("u1", i + 1, "Now document it"))
    recs.append(_gemini("grewound", i + 2, "Writing docs (rewound).", None, prompt + 100))
    recs.append({"$rewindTo": "grewound"})
    last_prompt = prompt
    kept = [{"id": "env", "timestamp": _ts(0), "type": "user", "content": setup[0]["content"]},
            {"id": "env-ack", "timestamp": _ts(0), "type": "gemini", "content": setup[1]["content"]},
            {"id": "snap", "timestamp": _ts(i + 3), "type": "user", "content": [{"text": SNAPSHOT}]},
            {"id": "snap-ack", "timestamp": _ts(i + 3), "type": "gemini",
             "content": [{"text": "Got it. Thanks for the additional context!"}]},
            {"id": "u1-copy", "timestamp": _ts(i + 1), "type": "user", "content": [{"text": "Now document it"}]}]
    recs.append({"$set": {"messages": kept, "lastUpdated": _ts(i + 3)}})
    i += 4
    prompt = 800
    for k in range(turns_after):
        cid = f"d{k}"
        recs.append(_gemini(f"h{k}", i, "Editing.", [_call(cid, "replace", _lines(output_lines, f"edit{k}"), i,
                                                           "error" if k == 0 else "success")], prompt))
        calls += 1
        i += 1
        prompt += 1500
    recs.append(_gemini("hdone", i, "Documented.", None, prompt))
    calls += 1
    expected = {"calls": calls, "tool_calls": turns_before + turns_after, "rewound": 1,
                "compaction_call": turns_before + 1, "pre_tokens": last_prompt}
    return recs, expected


def gemini_checkpoint() -> list[dict]:
    """A ``/chat save`` checkpoint (the API history; older ones carry no call ids), compressed once."""
    return [
        {"role": "user", "parts": [{"text": "Set up the project"}]},
        {"role": "model", "parts": [{"text": "Reading.", "thought": True},
                                    {"functionCall": {"name": "read_file", "args": {"path": "a"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": {"output": "A"}}}]},
        {"role": "model", "parts": [{"text": "Done."}]},
        {"role": "user", "parts": [{"text": SNAPSHOT}]},
        {"role": "model", "parts": [{"text": "Got it. Thanks for the additional context!"}]},
        {"role": "user", "parts": [{"text": "Continue"}]},
        {"role": "model", "parts": [{"functionCall": {"id": "x1", "name": "run_shell_command",
                                                      "args": {"command": "ls"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "x1", "name": "run_shell_command",
                                                         "response": {"error": "denied"}}}]},
        {"role": "model", "parts": [{"text": "Listed."}]},
    ]


# --- Copilot CLI --------------------------------------------------------------------------------------

class CopilotLog:
    """events.jsonl: each event links to the one before (parentId)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.clock = 0

    def add(self, kind: str, data: dict[str, Any], **extra: Any) -> dict[str, Any]:
        self.clock += 10
        ev = {"type": kind, "data": data, "id": f"ev-{len(self.events)}",
              "timestamp": f"2026-06-01T09:{self.clock // 60:02d}:{self.clock % 60:02d}.000Z",
              "parentId": self.events[-1]["id"] if self.events else None, **extra}
        self.events.append(ev)
        return ev


def copilot_session(calls_before: int = 6, calls_during: int = 2, calls_after: int = 3,
                    output_lines: int = 40) -> tuple[list[dict], dict]:
    """A session with one background compaction: it starts after ``calls_before`` calls, the agent
    makes ``calls_during`` more before it completes, then ``calls_after``. Returns (events, expected)."""
    log = CopilotLog()
    log.add("session.start", {"sessionId": "cop-1", "version": 1, "producer": "copilot-agent",
                              "copilotVersion": "1.0.48", "startTime": "2026-06-01T09:00:00.000Z",
                              "context": {"cwd": "/repo"}, "selectedModel": "claude-sonnet-4.5"})
    log.add("user.message", {"content": "refactor the parser", "transformedContent":
                             "<current_datetime>2026-06-01</current_datetime>\n\nrefactor the parser"})
    n = 0

    def tool_call(final: bool = False) -> None:
        nonlocal n
        log.add("assistant.turn_start", {"turnId": str(n)})
        if final:
            log.add("assistant.message", {"messageId": f"m{n}", "content": "Done with this step.",
                                          "toolRequests": [], "outputTokens": 12})
        else:
            cid = f"t{n}"
            log.add("assistant.message", {"messageId": f"m{n}", "content": "", "reasoningText": "Look at it.",
                                          "toolRequests": [{"toolCallId": cid, "name": "view",
                                                            "arguments": {"path": f"src/p{n}.py"}}],
                                          "outputTokens": 30})
            log.add("tool.execution_start", {"toolCallId": cid, "toolName": "view", "arguments": {}})
            log.add("assistant.usage", {"model": "claude-sonnet-4.5", "inputTokens": 1}, ephemeral=True)
            log.add("tool.execution_complete", {"toolCallId": cid, "success": n % 5 != 3,
                                                "result": {"content": _lines(output_lines, f"view{n}"),
                                                           "detailedContent": "(display only)"}}
                    if n % 5 != 3 else {"toolCallId": cid, "success": False, "error": {"message": "no such file"}})
        log.add("assistant.turn_end", {"turnId": str(n)})
        n += 1

    for _ in range(calls_before):
        tool_call()
    start_call = n
    log.add("session.compaction_start", {"systemTokens": 3_000, "conversationTokens": 40_000,
                                         "toolDefinitionsTokens": 9_000})
    for _ in range(calls_during):
        tool_call()
    log.add("subagent.started", {"agentName": "explore"}, agentId="sub-1")
    log.add("assistant.message", {"messageId": "sub-m", "content": "sub-agent work", "toolRequests": []},
            agentId="sub-1")
    log.add("session.compaction_complete", {
        "success": True, "preCompactionTokens": 52_000, "postCompactionTokens": 6_000, "tokensRemoved": 46_000,
        "systemTokens": 3_000, "conversationTokens": 2_000, "toolDefinitionsTokens": 9_000,
        "summaryContent": "<overview>Refactoring the parser.</overview>", "messagesRemoved": 11,
        "preCompactionMessagesLength": 12, "trigger": "threshold", "checkpointNumber": 1})
    complete_call = n
    log.add("user.message", {"content": "also add tests"})
    for _ in range(calls_after - 1):
        tool_call()
    tool_call(final=True)
    expected = {"calls": n, "tool_calls": n - 1, "start_call": start_call, "complete_call": complete_call,
                "pre_tokens": 52_000, "failed_tools": sum(1 for k in range(n - 1) if k % 5 == 3)}
    return log.events, expected
