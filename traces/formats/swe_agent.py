"""SWE-agent ``.traj`` files (spec/formats.md §7), v0.x text actions and v1.x function calling.

Why the work: ``history`` is the message list last sent to the model, so it is the trace; the
per-step ``trajectory[k].messages`` is what each query really held after history processors (kept
only as a fallback when ``history`` is absent). v0 runs write the action as a fenced command in
the assistant text and the observation as the next user message: we turn that pair into a tool
call named by the command word (``{"command": ...}``, id ``call-<n>``) and its result, so
strategies that prune tool output see it. v1 runs are OpenAI messages with ``tool_call_ids``.
Usage is only an aggregate (``info.model_stats``), kept in Trace.meta.
Checked against SWE-agent/SWE-agent @ 3ea751c (tests/test_data/trajectories, trajectories/demonstrations).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from traces.formats import ReadResult
from traces.formats._common import read_json, sniff_json
from traces.formats.chat import Ids, finish, openai_messages
from traces.model import Trace, TraceError

NAME = "swe-agent"
AGENT = "swe-agent"
ROLES = ("system", "user", "assistant", "tool")
_FENCE = re.compile(r"```[^\n`]*\n(.*?)\n?```", re.S)

Extract = Callable[[dict[str, Any]], "tuple[str, str, str] | None"]
"""From an assistant message: (text, tool name, command), or None when it holds no action."""


def last_fenced(content: Any) -> tuple[str, str] | None:
    """(text without it, command) for the last fenced block of an assistant reply, if any."""
    if not isinstance(content, str):
        return None
    found = list(_FENCE.finditer(content))
    if not found or not found[-1].group(1).strip():
        return None
    m = found[-1]
    return (content[:m.start()] + content[m.end():]).strip(), m.group(1).strip()


def command_action(m: dict[str, Any]) -> tuple[str, str, str] | None:
    """A v0 reply's (thought, command word, action): the ``action`` field when recorded, else the last fence."""
    action, thought = m.get("action"), m.get("thought")
    if isinstance(action, str):
        text = (thought if isinstance(thought, str) else str(m.get("content") or "")).strip()
    else:
        found = last_fenced(m.get("content"))
        if found is None:
            return None
        text, action = found
    action = action.strip()
    return (text, action.split()[0], action) if action else None


def with_text_actions(raw: list[Any], extract: Extract, ids: Ids) -> list[Any]:
    """Rewrite text-action replies as OpenAI tool calls and the next user message as their result."""
    out: list[Any] = []
    pending: str | None = None
    for m in raw:
        if not isinstance(m, dict):
            out.append(m)
            continue
        role = m.get("role")
        if pending is not None and role == "user":
            out.append({**m, "role": "tool", "tool_call_id": pending})
            pending = None
            continue
        pending = None
        found = extract(m) if role == "assistant" and not m.get("tool_calls") else None
        if found is not None:
            text, name, command = found
            pending = ids.next()
            call = {"id": pending, "function": {"name": name, "arguments": {"command": command}}}
            out.append({**m, "content": text, "tool_calls": [call]})
        else:
            out.append(m)
    return out


def demos_as_context(raw: list[Any]) -> list[Any]:
    """Demonstration turns are prompt text, not calls: fold them into user messages."""
    out = []
    for m in raw:
        if isinstance(m, dict) and m.get("is_demo") is True and m.get("role") != "system":
            content = m.get("content")
            out.append({"role": "user", "content": content if isinstance(content, (str, list)) else str(content)})
        else:
            out.append(m)
    return out


def _history(d: dict[str, Any], path: Path) -> list[Any]:
    history = d.get("history")
    if isinstance(history, list) and history:
        return history
    steps = d.get("trajectory")
    last = steps[-1] if isinstance(steps, list) and steps and isinstance(steps[-1], dict) else {}
    if isinstance(last.get("messages"), list):
        answer = {"role": "assistant", "content": last.get("response", ""),
                  "thought": last.get("thought", ""), "action": last.get("action", "")}
        return [*last["messages"], answer]
    raise TraceError("no history and no per-step messages in the trajectory", path=str(path))


def _model(d: dict[str, Any]) -> str | None:
    config = d.get("replay_config")
    if isinstance(config, str):
        config = sniff_json(config)
    try:
        name = config["agent"]["model"]["name"]  # type: ignore[index]
    except (KeyError, TypeError, IndexError):
        return None
    return name if isinstance(name, str) else None


def sniff_file(path: Path, head: str) -> str | None:
    text = head.lstrip("\ufeff \t\r\n")
    if not text.startswith("{"):
        return "not a JSON object"
    if not re.search(r'"trajectory"\s*:\s*\[', text):
        return "no \"trajectory\" list"
    if re.search(r'"history"\s*:\s*\[', text) or (re.search(r'"observation"\s*:', text)
                                                 and re.search(r'"action"\s*:', text)):
        return None
    return "no SWE-agent \"history\" or action/observation steps"


def read_file(path: Path, *, lenient: bool = False) -> ReadResult:
    path = Path(path)
    d = read_json(path)
    if not isinstance(d, dict):
        raise TraceError(f"a .traj file holds a JSON object, got {type(d).__name__}", path=str(path))
    raw = _history(d, path)
    skipped = 0
    if lenient:
        good = [m for m in raw if isinstance(m, dict) and m.get("role") in ROLES]
        skipped, raw = len(raw) - len(good), good
    ids = Ids()
    try:
        messages = openai_messages(with_text_actions(demos_as_context(raw), command_action, ids), path=path, ids=ids)
    except TraceError:
        if not lenient:
            raise
        return ReadResult([], skipped + 1)
    notes: list[str] = []
    info = d.get("info") if isinstance(d.get("info"), dict) else {}
    function_calling = any(isinstance(m, dict) and m.get("tool_calls") for m in raw)
    trace = Trace(
        id=path.name.removesuffix(".traj").removesuffix(".json"), messages=finish(messages, str(path), notes),
        agent=AGENT, model=_model(d), source=str(path),
        meta={"format": "v1-function-calling" if function_calling else "v0-text-actions",
              "exit_status": info.get("exit_status"), "model_stats": info.get("model_stats") or {}},
    )
    return ReadResult([trace], skipped, notes)
