"""GitHub Copilot CLI session log (``~/.copilot/session-state/<sessionId>/events.jsonl``).

Copilot CLI is closed source. The format comes from the public event schema its SDK is generated
from: github/copilot-sdk @cc0438d6 nodejs/src/generated/session-events.ts (StartData l.1001,
CompactionStartData l.2644, CompactionCompleteData l.2700-2800, UserMessageData, AssistantMessageData
l.3796, AssistantMessageToolRequest l.4045, ToolExecutionCompleteData l.5041, ToolExecutionCompleteResult
l.5111), cross-checked with issues github/copilot-cli#3598 and #4441 (real 1.0.x events.jsonl lines).
Fairly sure of the field names (a generated schema); not sure every version wrote every field.

One event per line: ``{type, data, id, parentId, timestamp, agentId?, ephemeral?}``. Read here:
``session.start`` (copilotVersion, selectedModel), ``session.model_change``, ``user.message``
(``transformedContent`` is what the model got), ``assistant.message`` (one model response: content,
``toolRequests``, ``reasoningText``, ``outputTokens``), ``tool.execution_complete`` (``result.content`` is
the text sent to the model; ``error.message`` on failure), and the background compaction:
``session.compaction_start`` (systemTokens / conversationTokens / toolDefinitionsTokens at the start)
then ``session.compaction_complete`` (success, preCompactionTokens, summaryContent, messagesRemoved).
A successful compaction becomes the summary as a user message where it completed plus a
RecordedCompaction; the call at which it started, with the start's token breakdown, is kept in
``meta["compaction_starts"]``.

``system.message`` is the system prompt the model got (written again at the start of every
interaction; 135 KB, 36,636 of Copilot's tokens in the recorded 1.0.74 session, where its
``compaction_start`` counts it as ``systemTokens``): the first one becomes the trace's system
message, a repeat of the same text is counted, a changed one is counted apart (the first is kept:
a trace has one system prompt). ``system.notification`` (a sub-agent finished, ...) is sent to the
model as a user message: the recorded agent's next call acts on it (reads the agent it names); it
is imported as an injected user message. The context tier (``contextTier`` of ``session.start`` /
``session.model_change``: "default" ~200K or "long_context" 1M, changelog 1.0.52 L992 / 1.0.56 L921)
is kept in ``meta["context_tier"]``, the last one recorded; bench/cost/windows.py windows the session by it.

``assistant.usage`` is ephemeral (never persisted), so a response carries only its output tokens
(``meta["output_tokens"]``); the prompt size is known only at compactions, and a file may hold no
usage at all: its calls import without usage. Kinds that are not model context (hooks, turn
markers, ...) are counted, by kind, in one note per file.

Sub-agents: a ``task`` tool call starts one (``subagent.started``, ``agentId`` = the call's id) whose
own turns are written into the same file, each event carrying ``agentId`` (and ``parentToolCallId``
on messages and tool events) until ``subagent.completed``: seen in a real 1.0.74 file
(../shared/traces copilot-cli__StarCar, two ``car`` agents of 152 responses between them). Each
becomes a sidechain trace of its own, ``<session>/<agentId>`` with ``meta["sidechain"]`` true, as
Claude Code's sidechains do; the main trace keeps the task call and its result.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace as dc_replace
from pathlib import Path
from typing import Any

from traces.formats import ReadResult
from traces.formats._common import (
    Skips,
    finish,
    first_json_line,
    get_bool,
    get_dict,
    get_int,
    get_list,
    get_str,
    iter_jsonl,
    repair_notes,
    ts_seconds,
)
from traces.model import Block, Message, RecordedCompaction, Text, Thinking, ToolResult, ToolUse, Trace, TraceError

NAME = "copilot-cli"
AGENT = "copilot-cli"
READ = ("session.start", "session.model_change", "user.message", "assistant.message", "tool.execution_start",
        "tool.execution_complete", "session.compaction_start", "session.compaction_complete", "subagent.started",
        "subagent.completed", "system.message", "system.notification")
REPEATED_SYSTEM = "system.message (the same prompt again)"
CHANGED_SYSTEM = "system.message with another prompt (the first one kept)"


def sniff_file(path: Path, head: str) -> str | None:
    obj = first_json_line(head)
    if obj is None:
        return "first line is not a JSON object"
    kind, data = obj.get("type"), obj.get("data")
    if isinstance(kind, str) and isinstance(data, dict) and "parentId" in obj and "." in kind:
        if kind == "session.start" and "copilotVersion" not in data and "producer" not in data:
            return "a session.start without copilotVersion or producer"
        return None
    return "no Copilot CLI event ({type: 'x.y', data, id, parentId})"


class _State:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.messages: list[Message] = []
        self.compactions: list[RecordedCompaction] = []
        self.starts: list[dict[str, Any]] = []
        self.start_data: dict[str, Any] | None = None
        self.models: Counter[str] = Counter()
        self.model: str | None = None
        self.by_msg: dict[str, int] = {}
        self.calls: dict[str, str] = {}
        self.skipped: Counter[str] = Counter()
        self.agent: dict[str, Any] = {}
        """A sub-agent's ``subagent.started`` / ``completed`` data (name, model, totals); empty for the main agent."""
        self.system: str | None = None
        """The system prompt (the first ``system.message``), put first in the trace."""
        self.tier: str | None = None
        """The context tier last recorded (``contextTier``)."""

    @property
    def n_calls(self) -> int:
        return sum(1 for m in self.messages if m.role == "assistant")

    def results(self) -> list[Block]:
        """The tool-result message being filled (a new one unless the last message already is one)."""
        if self.messages and self.messages[-1].is_tool_result and not self.messages[-1].meta:
            return list(self.messages.pop().blocks)
        return []


def _agent(obj: dict[str, Any], data: dict[str, Any], path: Path, line: int) -> str | None:
    """The sub-agent an event belongs to (its ``agentId``, else its ``parentToolCallId``); None for the main agent."""
    return (get_str(obj, "agentId", None, path=path, line=line)
            or get_str(data, "parentToolCallId", None, path=path, line=line) or None)


def _event(s: _State, obj: dict[str, Any], line: int, skipped: Counter[str]) -> None:
    p = s.path
    kind = get_str(obj, "type", path=p, line=line)
    data = get_dict(obj, "data", {}, path=p, line=line)
    ts = ts_seconds(obj.get("timestamp"))
    if kind not in READ:
        skipped[kind] += 1
        return
    if kind in ("subagent.started", "subagent.completed"):
        s.agent.update({k: v for k, v in data.items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)})
        if kind == "subagent.started":
            s.model = get_str(data, "model", s.model, path=p, line=line)
        return
    if kind == "session.start":
        s.start_data = data
        s.model = get_str(data, "selectedModel", None, path=p, line=line)
        s.tier = get_str(data, "contextTier", None, path=p, line=line) or s.tier
    elif kind == "session.model_change":
        s.model = get_str(data, "newModel", s.model, path=p, line=line)
        s.tier = get_str(data, "contextTier", None, path=p, line=line) or s.tier
    elif kind == "system.message":
        text = get_str(data, "content", path=p, line=line)
        if s.system is None:
            s.system = text
        else:
            skipped[REPEATED_SYSTEM if text == s.system else CHANGED_SYSTEM] += 1
    elif kind == "system.notification":
        text = get_str(data, "content", path=p, line=line)
        s.messages.append(Message("user", (Text(text),), timestamp=ts, id=get_str(obj, "id", None, path=p, line=line),
                                  meta={"injected": True, "notification": True}))
    elif kind == "user.message":
        text = data.get("transformedContent")
        if not isinstance(text, str):
            text = get_str(data, "content", path=p, line=line)
        s.messages.append(Message("user", (Text(text),), timestamp=ts, id=get_str(obj, "id", None, path=p, line=line),
                                  meta={"injected": True} if data.get("isAutopilotContinuation") is True else {}))
    elif kind == "assistant.message":
        mid = get_str(data, "messageId", path=p, line=line)
        blocks: list[Block] = []
        reasoning = get_str(data, "reasoningText", None, path=p, line=line)
        if reasoning:
            blocks.append(Thinking(reasoning))
        content = get_str(data, "content", "", path=p, line=line)
        if content:
            blocks.append(Text(content))
        for req in get_list(data, "toolRequests", [], path=p, line=line):
            cid = get_str(req, "toolCallId", path=p, line=line)
            args = req.get("arguments") if isinstance(req, dict) else None
            blocks.append(ToolUse(cid, get_str(req, "name", path=p, line=line),
                                  args if isinstance(args, dict) else {} if args is None else {"arguments": args}))
            s.calls[cid] = mid
        model = get_str(data, "model", None, path=p, line=line) or s.model
        out = get_int(data, "outputTokens", None, path=p, line=line)
        meta: dict[str, Any] = {"model": model} if model else {}
        if out is not None:
            meta["output_tokens"] = out
        if mid in s.by_msg:  # a response written in chunks (chunkIndex): one call
            i = s.by_msg[mid]
            old = s.messages[i]
            s.messages[i] = Message("assistant", old.blocks + tuple(blocks), timestamp=old.timestamp, id=mid,
                                    meta={**old.meta, **meta})
            return
        if model:
            s.models[model] += 1
        s.by_msg[mid] = len(s.messages)
        s.messages.append(Message("assistant", tuple(blocks), timestamp=ts, id=mid, meta=meta))
    elif kind == "tool.execution_complete":
        cid = get_str(data, "toolCallId", path=p, line=line)
        ok = get_bool(data, "success", True, path=p, line=line)
        result = data.get("result")
        error = data.get("error")
        if isinstance(result, dict) and isinstance(result.get("content"), str):
            text = result["content"]
        elif isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        else:
            text = ""
        blocks = s.results()
        blocks.append(ToolResult(cid, text, not ok))
        s.messages.append(Message("user", tuple(blocks), timestamp=ts))
    elif kind == "session.compaction_start":
        g = lambda k: get_int(data, k, None, path=p, line=line)  # noqa: E731
        s.starts.append({"call": s.n_calls, "system_tokens": g("systemTokens"),
                         "conversation_tokens": g("conversationTokens"),
                         "tool_definitions_tokens": g("toolDefinitionsTokens"), "token_limit": g("tokenLimit")})
    elif kind == "session.compaction_complete":
        if not get_bool(data, "success", path=p, line=line):
            skipped["failed compaction(s)"] += 1
            return
        summary = get_str(data, "summaryContent", "", path=p, line=line)
        pre = get_int(data, "preCompactionTokens", None, path=p, line=line)
        trigger = get_str(data, "trigger", "threshold", path=p, line=line)
        s.compactions.append(RecordedCompaction(len(s.messages), trigger, pre, summary))
        if summary:
            s.messages.append(Message("user", (Text(summary),), timestamp=ts, meta={"summary": True}))


def read_file(path: Path, *, lenient: bool = False) -> ReadResult:
    path = Path(path)
    skips = Skips()
    s = _State(path)
    subs: dict[str, _State] = {}
    skipped: Counter[str] = Counter()
    for line, obj in iter_jsonl(path, lenient, skips):
        try:
            data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
            agent = _agent(obj, data, path, line)
            if agent is not None and agent not in subs:
                subs[agent] = _State(path)
                subs[agent].model = s.model
            _event(subs[agent] if agent is not None else s, obj, line, skipped)
        except TraceError:
            if not lenient:
                raise
            skips.count += 1
    if not any(m.role in ("user", "assistant") for m in s.messages) and not lenient:
        raise TraceError("no user or assistant message in a Copilot CLI events.jsonl", path=str(path))
    start = s.start_data or {}
    session = start.get("sessionId") if isinstance(start.get("sessionId"), str) else path.parent.name or path.stem
    version = start.get("copilotVersion")
    notes: list[str] = []
    if skipped:  # one line however many kinds: the details are the kinds and counts on it
        kinds = ", ".join(f"{n:,} {kind}" for kind, n in sorted(skipped.items(), key=lambda kv: (-kv[1], kv[0])))
        notes.append(f"{path}: passed over {sum(skipped.values()):,} event(s) that are not model context: {kinds}")
    traces = []
    for agent, state in [(None, s), *subs.items()]:
        if agent is not None and not state.messages:
            continue  # a sub-agent that wrote no message: listed in a note below
        messages, recorded, filled, orphans = finish(state.messages, state.compactions)
        if state.system is not None:  # the system prompt first; every recorded position moves by one
            messages = [Message.text_message("system", state.system), *messages]
            recorded = [dc_replace(c, message_index=c.message_index + 1) for c in recorded]
        where = path if agent is None else f"{path} (sub-agent {agent})"
        notes += repair_notes(where, filled, orphans)
        meta: dict[str, Any] = {"session_id": session, "version": version, "compaction_starts": state.starts,
                                "sidechain": agent is not None}
        if state.tier is not None:
            meta["context_tier"] = state.tier
        if agent is not None:  # subagent.started / completed: name, description, model, totals
            meta.update(agent_id=agent, subagent={k: v for k, v in state.agent.items() if k != "toolCallId"})
        traces.append(Trace(
            id=session if agent is None else f"{session}/{agent}", messages=tuple(messages), agent=AGENT,
            model=state.models.most_common(1)[0][0] if state.models else state.model, source=str(path),
            compactions=recorded, meta=meta))
    empty = [a for a, st in subs.items() if not st.messages]
    if empty:
        notes.append(f"{path}: {len(empty)} sub-agent(s) wrote no message: {', '.join(empty)}")
    return ReadResult(traces, skips.count, notes)
