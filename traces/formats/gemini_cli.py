"""Gemini CLI sessions and checkpoints (``~/.gemini/tmp/<projectHash>/chats/``, ``checkpoint-<tag>.json``).

Why the work: the session file is an append-only log, not the context. Source: google-gemini/gemini-cli
@5411f113 packages/core/src/services/chatRecordingService.ts (loadConversationRecord l.133-330,
pushMessage l.648, recordToolCalls l.775, updateMessagesFromHistory l.953) and chatRecordingTypes.ts
(MessageRecord, ToolCallRecord, TokensSummary l.19-104). Three shapes are read:

- JSONL session (since f7449135, 2026-04): a metadata line (``sessionId``, ``projectHash``), one line
  per message record (a record written again under the same ``id`` replaces it in place), ``$rewindTo``
  (the user rewound: that message and everything after it is gone) and ``$set`` (metadata; with
  ``messages``, the whole history rewritten: after a chat compression that list starts with the
  ``<state_snapshot>`` summary and the model's "Got it" acknowledgement, then copies of the kept 30%);
- legacy JSON session (2025-08 to 2026-04): one ``ConversationRecord`` object with ``messages``;
  these files never recorded a compression (the summary went straight into the new chat's history);
- ``/chat save`` checkpoint (core/logger.ts l.29, 329): ``{"history": Content[]}`` or a bare
  ``Content[]`` (the API history itself: a compressed one holds the snapshot as a user turn).

A ``gemini`` record is one model response: its tool calls (``toolCalls``) carry their results, which
newer versions also log as a separate user record of ``functionResponse`` parts (read once). Records
of type info / error / warning are UI only and the synthetic "Got it" acknowledgements are not
model calls: both are counted in the notes. A rewound model call is counted in ``skipped_calls``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from traces.formats import ReadResult
from traces.formats._common import (
    Skips,
    base64_image,
    decode,
    finish,
    first_json_line,
    get_dict,
    get_int,
    get_list,
    get_str,
    iter_jsonl,
    read_bytes,
    read_json,
    repair_notes,
    ts_seconds,
)
from traces.model import (
    Block,
    Message,
    RecordedCompaction,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Trace,
    TraceError,
    Usage,
)

NAME = "gemini-cli"
AGENT = "gemini-cli"
SNAPSHOT_TAG = "<state_snapshot>"
COMPRESSION_ACK = "Got it. Thanks for the additional context!"
"""chatCompressionService.ts l.438: the model turn written after the summary."""
ACKS = (COMPRESSION_ACK, "Got it. Thanks for the context!", "Binary content received. Proceeding with analysis.")
"""Model turns the CLI writes itself (compression, environment setup, binary tool output): not calls."""
UI_TYPES = ("info", "error", "warning")


def sniff_file(path: Path, head: str) -> str | None:
    text = head.lstrip("\ufeff \t\r\n")
    if not text.startswith(("{", "[")):
        return "not JSON (does not start with [ or {)"
    first = first_json_line(head)
    if isinstance(first, dict) and all(isinstance(first.get(k), str) for k in ("sessionId", "projectHash")):
        return None
    start = text[:4096]
    if text.startswith("{") and '"projectHash"' in start and '"sessionId"' in start:
        return None
    if '"parts"' in start and ('"role": "model"' in start or '"role":"model"' in start
                               or text.startswith("[") or '"history"' in text[:64]):
        return None
    return "no Gemini CLI session (sessionId + projectHash) or checkpoint (a history of {role, parts})"


# --- parts (the @google/genai Content shape) ----------------------------------------------------------

def _parts(content: Any, path: Path, line: int | None) -> list[Any]:
    """A PartListUnion (a string, a part, or a list of either) as a list of part objects."""
    if content is None:
        return []
    items = content if isinstance(content, list) else [content]
    out = []
    for p in items:
        if isinstance(p, str):
            out.append({"text": p})
        elif isinstance(p, dict):
            out.append(p)
        else:
            raise TraceError(f"a content part should be a string or an object, got {type(p).__name__}",
                             path=str(path), line=line)
    return out


def _response_text(response: Any) -> str:
    """What a functionResponse says: its ``output`` (or ``error``/``content``) string, else its JSON."""
    if isinstance(response, str):
        return response
    if isinstance(response, dict):
        for key in ("output", "error", "content"):
            if isinstance(response.get(key), str):
                return response[key]
    return json.dumps(response, ensure_ascii=False, sort_keys=True, default=str)


class _Ids:
    """Tool-call ids: older checkpoints omit them, so a response pairs with the oldest open call of its name."""

    def __init__(self) -> None:
        self.open: dict[str, list[str]] = {}
        self.n = 0

    def call(self, fc: dict[str, Any], path: Path, line: int | None) -> str:
        name = get_str(fc, "name", path=path, line=line)
        given = get_str(fc, "id", None, path=path, line=line)
        self.n += 1
        cid = given or f"{name}-{self.n}"
        self.open.setdefault(name, []).append(cid)
        return cid

    def response(self, fr: dict[str, Any], path: Path, line: int | None) -> str:
        name = get_str(fr, "name", "unknown", path=path, line=line)
        given = get_str(fr, "id", None, path=path, line=line)
        pending = self.open.get(name, [])
        if given is not None:
            if given in pending:
                pending.remove(given)
            return given
        return pending.pop(0) if pending else f"{name}-response-{line}"


def _blocks(parts: list[Any], ids: _Ids, path: Path, line: int | None) -> list[Block]:
    out: list[Block] = []
    for p in parts:
        if isinstance(p.get("text"), str):
            if p["text"] or p.get("thought") is True:  # an empty text part (a tool-only answer) says nothing
                out.append(Thinking(p["text"]) if p.get("thought") is True else Text(p["text"]))
        elif isinstance(p.get("functionCall"), dict):
            fc = p["functionCall"]
            out.append(ToolUse(ids.call(fc, path, line), get_str(fc, "name", path=path, line=line),
                               get_dict(fc, "args", {}, path=path, line=line)))
        elif isinstance(p.get("functionResponse"), dict):
            fr = p["functionResponse"]
            response = fr.get("response")
            error = isinstance(response, dict) and "error" in response and "output" not in response
            out.append(ToolResult(ids.response(fr, path, line), _response_text(response), error))
        elif isinstance(p.get("inlineData"), dict):
            mime = p["inlineData"].get("mimeType")
            out.append(base64_image(mime if isinstance(mime, str) else "image/png", p["inlineData"].get("data")))
        else:  # fileData, executableCode, …: kept as their JSON (their tokens are real)
            out.append(Text(json.dumps(p, ensure_ascii=False, sort_keys=True, default=str)))
    return out


def _usage(tokens: Any, path: Path, line: int | None) -> Usage | None:
    """TokensSummary (promptTokenCount includes the cached part; thoughts are billed as output)."""
    if not isinstance(tokens, dict):
        return None
    g = lambda k: get_int(tokens, k, 0, path=path, line=line)  # noqa: E731
    cached = g("cached")
    return Usage(max(g("input") - cached, 0), g("output") + g("thoughts"), cached, 0)


# --- building the trace ------------------------------------------------------------------------------

class _Builder:
    """Messages, compactions and counts, in log order."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ids = _Ids()
        self.messages: list[Message] = []
        self.compactions: list[RecordedCompaction] = []
        self.answered: set[str] = set()
        self.skipped: Counter[str] = Counter()
        self.models: Counter[str] = Counter()
        self.last_prompt: int | None = None

    def compaction(self, summary: str, *, timestamp: float | None = None, trigger: str = "unrecorded") -> None:
        self.compactions.append(RecordedCompaction(len(self.messages), trigger, self.last_prompt, summary))
        self.messages.append(Message("user", (Text(summary),), timestamp=timestamp, meta={"summary": True}))

    def user(self, parts: list[Any], *, line: int | None, timestamp: float | None = None,
             mid: str | None = None) -> None:
        blocks = [b for b in _blocks(parts, self.ids, self.path, line)
                  if not (isinstance(b, ToolResult) and b.tool_use_id in self.answered)]
        if not blocks:
            return
        self.answered.update(b.tool_use_id for b in blocks if isinstance(b, ToolResult))
        text = "\n".join(b.text for b in blocks if isinstance(b, Text))
        if SNAPSHOT_TAG in text and all(isinstance(b, Text) for b in blocks):
            self.compaction(text, timestamp=timestamp)
            return
        self.messages.append(Message("user", tuple(blocks), timestamp=timestamp, id=mid))

    def model(self, parts: list[Any], *, line: int | None, thoughts: list[Any] = (), tool_calls: list[Any] = (),
              usage: Usage | None = None, model: str | None = None, timestamp: float | None = None,
              mid: str | None = None) -> None:
        blocks: list[Block] = []
        for t in thoughts:
            if isinstance(t, dict):
                words = [t.get("subject"), t.get("description")]
                blocks.append(Thinking(": ".join(w for w in words if isinstance(w, str) and w)))
        blocks += _blocks(parts, self.ids, self.path, line)
        if not tool_calls and not usage and [type(b) for b in blocks] == [Text] and blocks[0].text.strip() in ACKS:
            self.skipped["synthetic acknowledgement(s) (not model calls)"] += 1
            return
        results: list[ToolResult] = []
        seen = {b.id for b in blocks if isinstance(b, ToolUse)}
        for tc in tool_calls:
            if not isinstance(tc, dict):
                raise TraceError("a tool call record should be an object", path=str(self.path), line=line)
            name = get_str(tc, "name", path=self.path, line=line)
            cid = get_str(tc, "id", path=self.path, line=line)
            if cid not in seen:
                seen.add(cid)
                blocks.append(ToolUse(cid, name, get_dict(tc, "args", {}, path=self.path, line=line)))
            if tc.get("result") is not None and cid not in self.answered:
                parts_r = _parts(tc["result"], self.path, line)
                text = "\n".join(_response_text(p["functionResponse"].get("response"))
                                 if isinstance(p.get("functionResponse"), dict)
                                 else p["text"] if isinstance(p.get("text"), str)
                                 else json.dumps(p, ensure_ascii=False, sort_keys=True, default=str) for p in parts_r)
                results.append(ToolResult(cid, text, tc.get("status") in ("error", "cancelled")))
                self.answered.add(cid)
        if model:
            self.models[model] += 1
        if usage is not None and usage.prompt_tokens:
            self.last_prompt = usage.prompt_tokens
        self.messages.append(Message("assistant", tuple(blocks), usage=usage, timestamp=timestamp, id=mid,
                                     meta={"model": model} if model else {}))
        if results:
            self.messages.append(Message("user", tuple(results), timestamp=timestamp))

    def record(self, rec: dict[str, Any], line: int | None) -> None:
        """One MessageRecord of a session file."""
        kind = get_str(rec, "type", path=self.path, line=line)
        parts = _parts(rec.get("content"), self.path, line)
        ts = ts_seconds(rec.get("timestamp"))
        mid = get_str(rec, "id", None, path=self.path, line=line)
        if kind == "user":
            self.user(parts, line=line, timestamp=ts, mid=mid)
        elif kind == "gemini":
            self.model(parts, line=line, thoughts=get_list(rec, "thoughts", [], path=self.path, line=line),
                       tool_calls=get_list(rec, "toolCalls", [], path=self.path, line=line),
                       usage=_usage(rec.get("tokens"), self.path, line),
                       model=get_str(rec, "model", None, path=self.path, line=line), timestamp=ts, mid=mid)
        elif kind in UI_TYPES:
            self.skipped[f"{kind} record(s) (UI only, not sent to the model)"] += 1
        else:
            raise TraceError(f"unknown message type {kind!r}", path=str(self.path), line=line)


def _session_log(items: list[tuple[int | None, dict[str, Any]]], path: Path) -> tuple[list[tuple[str, Any, int | None]],
                                                                                     dict[str, Any], int, Counter[str]]:
    """Replay the log's own rules: (entries in order, metadata, rewound model calls, other counts).

    An entry is ("message", record), ("copy", record): a history rewrite's copy of a kept message,
    or ("compaction", summary text). Unlike the CLI's loader, history before a rewrite is kept: it
    is what the agent sent before compressing.
    """
    log: dict[str, tuple[str, Any, int | None]] = {}
    meta: dict[str, Any] = {}
    rewound = 0
    counts: Counter[str] = Counter()
    n = 0
    for line, rec in items:
        if isinstance(rec.get("$rewindTo"), str):
            keys = list(log)
            target = rec["$rewindTo"]
            cut = keys.index(target) if target in log else 0
            for k in keys[cut:]:
                kind, body, _ = log.pop(k)
                rewound += kind == "message" and body.get("type") == "gemini"
        elif isinstance(rec.get("$set"), dict):
            update = rec["$set"]
            history = update.get("messages")
            if isinstance(history, list):
                fresh = not any(kind == "message" for kind, _, _ in log.values())
                for m in history:
                    if not isinstance(m, dict) or not isinstance(m.get("id"), str):
                        raise TraceError("a message in $set.messages has no string id", path=str(path), line=line)
                    if m["id"] in log:
                        continue  # the same message, maybe masked since: the log keeps what was sent
                    text = " ".join(p.get("text", "") for p in _parts(m.get("content"), path, line)
                                    if isinstance(p.get("text"), str))
                    if fresh:
                        log[m["id"]] = ("message", m, line)
                    elif m.get("type") == "user" and SNAPSHOT_TAG in text:
                        log[m["id"]] = ("compaction", text, line)
                    elif m.get("type") == "gemini" and text.strip() in ACKS:
                        log[m["id"]] = ("copy", m, line)
                        counts["synthetic acknowledgement(s) (not model calls)"] += 1
                    else:
                        log[m["id"]] = ("copy", m, line)
                        counts["message(s) a history rewrite copied (kept once)"] += 1
            meta.update({k: v for k, v in update.items() if k != "messages"})
        elif isinstance(rec.get("id"), str):
            log[rec["id"]] = ("message", rec, line)  # written again under its id: replaced in place
        elif isinstance(rec.get("sessionId"), str):
            meta.update({k: v for k, v in rec.items() if k != "messages"})
            if isinstance(rec.get("messages"), list):  # the legacy one-object file
                for m in rec["messages"]:
                    if not isinstance(m, dict) or not isinstance(m.get("id"), str):
                        raise TraceError("a message has no string id", path=str(path), line=line)
                    log[m["id"]] = ("message", m, line)
        else:
            n += 1
    if n:
        counts["record(s) of no known kind"] += n
    return list(log.values()), meta, rewound, counts


def _finish(b: _Builder, path: Path, trace_id: str, meta: dict[str, Any], skipped: Counter[str],
            rewound: int) -> tuple[Trace, list[str]]:
    messages, recorded, filled, orphans = finish(b.messages, b.compactions)
    notes = [f"{path}: {n} {what}" for what, n in sorted((b.skipped + skipped).items())]
    if rewound:
        notes.append(f"{path}: skipped {rewound} model call(s) the user rewound ($rewindTo)")
    notes += repair_notes(path, filled, orphans)
    trace = Trace(id=trace_id, messages=tuple(messages), agent=AGENT,
                  model=b.models.most_common(1)[0][0] if b.models else None, source=str(path),
                  compactions=recorded, meta={**meta, "skipped_calls": rewound})
    return trace, notes


def _checkpoint(history: list[Any], path: Path) -> tuple[Trace, list[str]]:
    b = _Builder(path)
    for i, c in enumerate(history):
        if not isinstance(c, dict):
            raise TraceError(f"history item {i} should be an object", path=str(path))
        role = get_str(c, "role", path=path)
        parts = _parts(get_list(c, "parts", [], path=path), path, None)
        if role == "user":
            b.user(parts, line=None)
        elif role == "model":
            b.model(parts, line=None)
        else:
            raise TraceError(f"history item {i}: unknown role {role!r}", path=str(path))
    name = path.stem.removeprefix("checkpoint-")
    return _finish(b, path, f"gemini-checkpoint/{name}", {"format": "checkpoint"}, Counter(), 0)


def read_file(path: Path, *, lenient: bool = False) -> ReadResult:
    path = Path(path)
    text = decode(read_bytes(path), path=path).lstrip("\ufeff \t\r\n")
    if not text:
        raise TraceError("empty file: no Gemini CLI session", path=str(path))
    skips = Skips()
    if text.startswith("[") or first_json_line(text) is None:  # one JSON document (maybe pretty-printed)
        doc = read_json(path)
        if isinstance(doc, list) or (isinstance(doc, dict) and isinstance(doc.get("history"), list)):
            trace, notes = _checkpoint(doc if isinstance(doc, list) else doc["history"], path)
            return ReadResult([trace], 0, notes)
        if not isinstance(doc, dict):
            raise TraceError("expected a session object or a checkpoint", path=str(path))
        items: list[tuple[int | None, dict[str, Any]]] = [(None, doc)]
        shape = "session-json"
    else:
        items = list(iter_jsonl(path, lenient, skips))
        shape = "session-jsonl"
    entries, meta, rewound, counts = _session_log(items, path)
    b = _Builder(path)
    for kind, body, line in entries:
        if kind == "compaction":
            b.compaction(body)
        elif kind == "message":
            try:
                b.record(body, line)
            except TraceError:
                if not lenient:
                    raise
                skips.count += 1
    session = meta.get("sessionId") if isinstance(meta.get("sessionId"), str) else path.stem
    kind = meta.get("kind")
    trace, notes = _finish(b, path, session if kind != "subagent" else f"{session}/subagent",
                           {"session_id": session, "version": None, "format": shape,
                            "sidechain": kind == "subagent"}, counts, rewound)
    if not any(m.role in ("user", "assistant") for m in trace.messages) and not lenient:
        raise TraceError("no user or model message in a Gemini CLI session", path=str(path))
    return ReadResult([trace], skips.count, notes)
