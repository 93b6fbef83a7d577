"""goose sessions (block/goose): the SQLite ``sessions.db`` (v1.10 on), the older per-session JSONL files
and ``goose session export`` JSON.

Where they are: goose's data dir (``~/.local/share/goose/sessions/`` on Linux and macOS, the etcetera
app strategy; ``%APPDATA%\\Block\\goose\\data\\sessions`` on Windows). Read from the source, through the
stored-file reader (the repository snapshot is over the fetch limit, so functions are the anchors):

- ``sessions.db``: block/goose@0164300649 crates/goose/src/session/session_manager.rs ``SessionStorage::create``
  (tables ``sessions`` and ``messages``: ``messages(id autoincrement, session_id, role, content_json,
  created_timestamp, timestamp, tokens, metadata_json)``), ``add_message`` / ``replace_conversation``
  (one row per message, in conversation order: a compaction rewrites the session's rows, so the row id
  is the order), and block/goose@865e4a030a crates/goose/src/session/migrations.rs (schema 13: v6
  ``sessions.provider_name`` / ``model_config_json``, v7 ``messages.message_id``, v8 ``goose_mode``, v10
  the ``threads`` tables, v13 ``accumulated_cost``). Columns are read by name where present, so every
  schema version reads. Opened read-only (``mode=ro``): the user's database is never written.
- JSONL (before v1.10): block/goose@01a262b229 crates/goose/src/session/storage.rs (first line
  ``SessionMetadata``: working_dir, description, schedule_id, message_count and the six token fields;
  a file whose first line is not metadata starts with a message), then one ``Message`` a line.
- ``Message`` / ``MessageContent``: block/goose@865e4a030a crates/goose/src/conversation/message/mod.rs
  and content_types.rs (``{id?, role, created, content: [...], metadata: {userVisible, agentVisible,
  inference?: {provider, requestedModel, resolvedModel?}}}``; content tagged by ``type`` in camelCase:
  text, image, toolRequest ``{id, toolCall}``, toolResponse ``{id, toolResult}``, toolConfirmationRequest,
  actionRequired, frontendToolRequest, thinking, redactedThinking, systemNotification; the legacy
  ``reasoning`` is read as thinking, as goose's own deserializer migrates it), block/goose@0513296606
  crates/goose/src/conversation/tool_result_serde.rs (``{status: "success", value}`` or ``{status:
  "error", error}``; a response value is an MCP ``CallToolResult`` ``{content, isError?}`` or, in old
  sessions, the content list itself).

Mapping: text → Text (an item whose ``annotations.audience`` leaves out "assistant" is not sent to the
model, ``agent_visible_content``: counted), image → Image (its size from the base64 length),
toolRequest and frontendToolRequest (a tool the UI runs, still the model's call) → ToolUse, toolResponse
→ ToolResult (the text of its content items the model gets; an error as its error text, flagged),
thinking / reasoning → Thinking, redactedThinking → an empty Thinking. UI-only content
(toolConfirmationRequest, actionRequired, systemNotification, the old summarizationRequested /
contextLengthExceeded / conversationCompacted markers) and unknown types are counted in one note.
Consecutive assistant rows are one call (goose merges them before a request; before the streaming fix
noted in crates/goose/src/bin/README.md each streamed chunk was a row): merges are counted.

Recorded compactions. Since the visibility metadata (block/goose@0036b819 crates/goose/src/context_mgmt/
mod.rs ``compact_messages``) goose keeps every message: the compacted ones are marked agent-invisible,
then it appends the summary (a *user* message, agent-only), an agent-only assistant continuation note
("Your context was compacted…"; "…at the user's request" for a manual /compact) and, for an automatic
compaction, a fresh copy of the latest text-only user message. Read here: that summary is a user message
with ``meta["summary"]`` and a RecordedCompaction where it sits (trigger auto / manual from the note);
the note is not a model call (counted); the fresh copy carries ``meta["compaction"]``. The messages made
agent-invisible before it stay in the trace: the recorded agent saw them before it compacted. An
agent-invisible message with no agent-only message after it was never sent to the model: counted, not
imported. ``summarize_tool_call`` (behind a feature flag, off at 0036b819) hides one tool call and
response and appends an agent-only user summary of them: that summary carries ``meta["compaction"]``
(goose's context management, not the user's words; replays leave it out as they do a summary).
Before the visibility metadata, goose replaced the history (the desktop's ``ContextManager``, its tests in
ui/desktop/src/components/context_management/__tests__/ContextManager.test.tsx): a ``summarizationRequested``
marker message, then the summary (an assistant text), then a note "The previous message contains a
summary…": read the same way (the summary as a user message), trigger "unrecorded" (the marker does not
say). The history before it is gone from such a file, so the compaction is usually at message 0.

Not recorded by goose, so not in the trace: the system prompt and tool definitions, per-call token
usage (the ``messages.tokens`` column is never written by the code read; the session's last-call and
accumulated totals go in ``meta["session_tokens"]``), the goose version (``meta["version"]`` stays
None: the current goose generation replays it), a compaction's token count before it (``pre_tokens``).
Model: ``metadata.inference`` per answer when present (resolved, else requested model), else the
session's ``model_config_json.model_name``; its ``context_limit`` (the window goose compacts against)
is each answer's ``meta["context_window"]``. The ``threads`` / ``thread_messages`` tables (a UI thread
over sessions) are not read: their sessions' messages are in ``messages``. Later goose versions are said
(third-party readers, e.g. RandomCodeSpace/aiusage-core adapter/goose) to keep a ``usage_ledger`` table of
per-call usage; it is not in the goose source read here, so it is not read (a note says it is there).
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from contextlib import closing
from dataclasses import dataclass, field
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
    loads,
    read_json,
    repair_notes,
    sqlite_read_only,
    ts_seconds,
)
from traces.model import (
    Block,
    Image,
    Message,
    RecordedCompaction,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Trace,
    TraceError,
)

NAME = "goose"
AGENT = "goose"
SQLITE_MAGIC = "SQLite format 3\x00"
METADATA_KEYS = frozenset({"working_dir", "description", "message_count", "schedule_id", "total_tokens",
                           "input_tokens", "output_tokens", "accumulated_total_tokens",
                           "accumulated_input_tokens", "accumulated_output_tokens"})
"""SessionMetadata's fields (storage.rs): the first line of a JSONL session."""
CONTENT_TYPES = frozenset({"text", "image", "toolRequest", "toolResponse", "toolConfirmationRequest",
                           "actionRequired", "frontendToolRequest", "thinking", "redactedThinking",
                           "systemNotification", "reasoning", "summarizationRequested", "contextLengthExceeded",
                           "conversationCompacted", "contextPaths"})
UI_ONLY = frozenset({"toolConfirmationRequest", "actionRequired", "systemNotification", "summarizationRequested",
                     "contextLengthExceeded", "conversationCompacted", "contextPaths"})
"""Content goose shows the user but never sends to the model (counted in a note)."""
MARKERS = frozenset({"summarizationRequested", "conversationCompacted"})
"""The pre-visibility compaction markers: the message after one is the summary."""
CONTINUATION = ("Your context was compacted", "The previous message contains a summary")
"""How goose's continuation notes begin (context_mgmt/mod.rs constants; the older desktop text)."""
MANUAL = "at the user's request"
TOKEN_FIELDS = ("total_tokens", "input_tokens", "output_tokens", "accumulated_total_tokens",
                "accumulated_input_tokens", "accumulated_output_tokens")
INVALID_CALL = "invalid_tool_call"
"""The name a tool request gets when goose recorded it as an error (the model's call did not parse)."""


# --- sniffing ------------------------------------------------------------------------------------------

def _goose_tables(path: Path) -> str | None:
    try:
        with closing(sqlite_read_only(path)) as db:
            tables = {r[0] for r in db.execute("select name from sqlite_master where type='table'")}
            if not {"sessions", "messages"} <= tables:
                return "SQLite without goose's sessions/messages tables"
            columns = {r[1] for r in db.execute("pragma table_info(messages)")}
    except (sqlite3.Error, UnicodeDecodeError):  # a damaged schema's names are decoded by sqlite3
        return "SQLite file that cannot be opened"
    return None if {"session_id", "role", "content_json"} <= columns else "SQLite messages table not goose's"


def _is_message(obj: dict[str, Any]) -> bool:
    content = obj.get("content")
    return (obj.get("role") in ("user", "assistant") and isinstance(obj.get("created"), (int, float))
            and isinstance(content, list)
            and all(isinstance(c, dict) and isinstance(c.get("type"), str) for c in content)
            and (any(c["type"] in CONTENT_TYPES and c["type"] != "text" for c in content)
                 or isinstance(obj.get("metadata"), dict) or "id" in obj or bool(content)))


def sniff_file(path: Path, head: str) -> str | None:
    if head.startswith(SQLITE_MAGIC):
        return _goose_tables(path)
    obj = first_json_line(head)
    if obj is not None:
        if "message_count" in obj and ("description" in obj or "working_dir" in obj) and "messages" not in obj:
            return None
        if _is_message(obj):
            return None
        return "first line is neither goose session metadata nor a goose message ({role, created, content})"
    start = head.lstrip()[:65536]
    if start.startswith("{") and '"working_dir"' in start and '"extension_data"' in start:
        return None  # goose session export (one pretty-printed Session)
    return "not a goose session (JSONL metadata line, message line, export JSON or sessions.db)"


# --- one message ---------------------------------------------------------------------------------------

@dataclass
class _Raw:
    """One stored message before conversion, and where it came from (for errors)."""

    role: str
    content: list[Any]
    created: float | None
    metadata: dict[str, Any]
    mid: str | None
    where: dict[str, Any]


@dataclass
class _Msg:
    role: str
    blocks: list[Block]
    agent_visible: bool
    user_visible: bool
    markers: set[str]
    created: float | None
    mid: str | None
    inference: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "\n".join(b.text for b in self.blocks if isinstance(b, Text))

    @property
    def text_only(self) -> bool:
        """Some text and no tool content (goose's ``has_text_only``; thinking or an image may sit beside it)."""
        return any(isinstance(b, Text) for b in self.blocks) and not any(
            isinstance(b, (ToolUse, ToolResult)) for b in self.blocks)

    @property
    def agent_only(self) -> bool:
        return self.agent_visible and not self.user_visible

    @property
    def tools(self) -> bool:
        return any(isinstance(b, (ToolUse, ToolResult)) for b in self.blocks)


def _for_model(item: dict[str, Any]) -> bool:
    """An MCP content item the model gets: no audience, or one that names the assistant."""
    annotations = item.get("annotations")
    audience = annotations.get("audience") if isinstance(annotations, dict) else None
    return not isinstance(audience, list) or "assistant" in audience


def _image(item: dict[str, Any], where: dict[str, Any]) -> Image:
    return base64_image(get_str(item, "mimeType", "image/png", **where), item.get("data"))


def _result_text(items: list[Any], where: dict[str, Any], passed: Counter[str]) -> str:
    """The text a tool response puts before the model: its items for the assistant, images as a line."""
    parts = []
    for item in items:
        if not isinstance(item, dict):
            raise TraceError(f"tool response content item is a {type(item).__name__}, not an object", **where)
        if not _for_model(item):
            passed["tool response item(s) for the user only"] += 1
            continue
        kind = item.get("type")
        if kind == "text":
            parts.append(get_str(item, "text", **where))
        elif kind == "image":
            img = _image(item, where)
            parts.append(f"[image {img.media_type}, {img.size_bytes} bytes]")
        elif kind == "resource":
            res = get_dict(item, "resource", {}, **where)
            text = res.get("text")
            parts.append(text if isinstance(text, str) else f"[resource {get_str(res, 'uri', '', **where)}]")
        else:
            passed[f"tool response item(s) of type {str(kind)[:40]!r} (kept as JSON)"] += 1
            parts.append(json.dumps(item, ensure_ascii=False, sort_keys=True, default=str))
    return "\n".join(parts)


def _call(c: dict[str, Any], key: str, where: dict[str, Any], passed: Counter[str]) -> ToolUse:
    cid = get_str(c, "id", **where)
    call = get_dict(c, key, **where)
    if call.get("status") == "error" or "value" not in call:
        passed["tool request(s) goose recorded as an error (kept, named invalid_tool_call)"] += 1
        return ToolUse(cid, INVALID_CALL, {"error": get_str(call, "error", "", **where)})
    value = get_dict(call, "value", **where)
    args = value.get("arguments")
    return ToolUse(cid, get_str(value, "name", **where),
                   args if isinstance(args, dict) else {} if args is None else {"arguments": args})


def _response(c: dict[str, Any], where: dict[str, Any], passed: Counter[str]) -> ToolResult:
    cid = get_str(c, "id", **where)
    result = get_dict(c, "toolResult", **where)
    if result.get("status") == "error" or "value" not in result:
        return ToolResult(cid, get_str(result, "error", "", **where), True)
    value = result["value"]
    if isinstance(value, list):  # before CallToolResult: the content list itself
        return ToolResult(cid, _result_text(value, where, passed))
    if not isinstance(value, dict):
        raise TraceError(f"toolResult value is a {type(value).__name__}, not an object or a list", **where)
    error = value.get("isError") is True
    return ToolResult(cid, _result_text(get_list(value, "content", [], **where), where, passed), error)


def _convert_message(raw: _Raw, passed: Counter[str]) -> _Msg:
    where = raw.where
    blocks: list[Block] = []
    markers: set[str] = set()
    for c in raw.content:
        if not isinstance(c, dict):
            raise TraceError(f"content item is a {type(c).__name__}, not an object", **where)
        kind = get_str(c, "type", **where)
        if kind == "text":
            if _for_model(c):
                blocks.append(Text(get_str(c, "text", **where)))
            else:
                passed["text item(s) for the user only"] += 1
        elif kind == "image":
            blocks.append(_image(c, where))
        elif kind in ("toolRequest", "frontendToolRequest"):  # a tool the UI runs is still the model's call
            blocks.append(_call(c, "toolCall", where, passed))
        elif kind == "toolResponse":
            blocks.append(_response(c, where, passed))
        elif kind == "thinking":
            blocks.append(Thinking(get_str(c, "thinking", "", **where)))
        elif kind == "reasoning":
            blocks.append(Thinking(get_str(c, "text", "", **where)))
        elif kind == "redactedThinking":
            blocks.append(Thinking(""))
        elif kind in UI_ONLY:
            passed[f"{kind} item(s) (shown to the user, not sent to the model)"] += 1
            if kind in MARKERS:
                markers.add(kind)
        else:
            passed[f"item(s) of unknown type {kind[:40]!r}"] += 1
    meta = raw.metadata
    agent_visible = meta.get("agentVisible") if isinstance(meta.get("agentVisible"), bool) else True
    user_visible = meta.get("userVisible") if isinstance(meta.get("userVisible"), bool) else True
    inference = meta.get("inference") if isinstance(meta.get("inference"), dict) else {}
    return _Msg(raw.role, blocks, agent_visible, user_visible, markers, raw.created, raw.mid, inference)


# --- a session -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Session:
    """What goose recorded about a session besides its messages."""

    id: str
    source: str
    meta: dict[str, Any]
    model: str | None = None
    window: int | None = None


def _compactions(msgs: list[_Msg]) -> dict[int, tuple[str, int | None]]:
    """Index of each summary message → (trigger, index of its continuation note or None)."""
    found: dict[int, tuple[str, int | None]] = {}
    for i, m in enumerate(msgs):
        nxt = msgs[i + 1] if i + 1 < len(msgs) else None
        note = nxt is not None and nxt.role == "assistant" and nxt.text_only and nxt.text.startswith(CONTINUATION)
        if m.role == "user" and m.agent_only and m.text_only and note and nxt is not None:
            found[i] = ("manual" if MANUAL in nxt.text[:200] else "auto", i + 1)
        elif m.markers and i not in found:
            j = next((k for k in range(i + 1, len(msgs)) if msgs[k].blocks), None)
            if j is not None and msgs[j].text_only and not msgs[j].markers:
                after = msgs[j + 1] if j + 1 < len(msgs) else None
                old_note = (after is not None and after.text_only and after.text.startswith(CONTINUATION))
                found[j] = ("unrecorded", j + 1 if old_note else None)
    return found


def _convert(raws: list[_Raw], session: _Session, passed: Counter[str]) -> tuple[Trace, list[str]]:
    msgs: list[_Msg] = []
    for raw in raws:
        if raw.role not in ("user", "assistant"):
            passed[f"message(s) with role {raw.role[:40]!r}"] += 1
            continue
        msgs.append(_convert_message(raw, passed))
    found = _compactions(msgs)
    notes_of = {j for _, j in found.values() if j is not None}
    # An agent-invisible message was sent, then hidden, when goose later wrote an agent-only message (a
    # summary) after it; one with none after it was never sent to the model.
    last_summary = max([*found, *(i for i, m in enumerate(msgs) if m.role == "user" and m.agent_only)], default=-1)
    hidden_tools = False  # tool messages hidden since the last agent-only message: a tool-pair summary follows
    messages: list[Message] = []
    compactions: list[RecordedCompaction] = []
    models: Counter[str] = Counter()
    providers: Counter[str] = Counter()
    merged = 0
    copy_of: str | None = None  # after a summary: the text of the user message goose copies after it
    latest_user = ""
    for i, m in enumerate(msgs):
        if i in notes_of:
            passed["compaction continuation note(s) (agent-only, not a model call)"] += 1
            continue
        if i in found:
            trigger = found[i][0]
            compactions.append(RecordedCompaction(len(messages), trigger, None, m.text))
            messages.append(Message("user", (Text(m.text),), timestamp=m.created, id=m.mid, meta={"summary": True}))
            copy_of = latest_user if trigger != "manual" else None
            hidden_tools = False
            continue
        if not m.agent_visible and i > last_summary:
            passed["message(s) never sent to the model (agentVisible false, no summary after them)"] += 1
            continue
        if not m.agent_visible and m.tools:
            hidden_tools = True
        if not m.blocks:
            passed["message(s) with no model content"] += 1
            continue
        if m.role == "user":
            meta: dict[str, Any] = {}
            if copy_of is not None and m.text_only and m.text == copy_of and m.agent_visible:
                meta = {"compaction": True}
                copy_of = None
            elif m.agent_only and hidden_tools and m.text_only:  # summarize_tool_call's summary of a hidden pair
                meta = {"compaction": True, "injected": True, "tool_pair_summary": True}
                passed["tool-pair summaries (agent-only; the pair before it hidden)"] += 1
                hidden_tools = False
            elif m.agent_only:
                meta = {"injected": True}
                passed["agent-only user message(s) (imported, flagged injected)"] += 1
            if m.text_only and not meta:
                latest_user = m.text
            messages.append(Message("user", tuple(m.blocks), timestamp=m.created, id=m.mid, meta=meta))
            continue
        model = _inferred(m.inference, "resolvedModel", passed) or _inferred(m.inference, "requestedModel", passed) \
            or session.model
        provider = _inferred(m.inference, "provider", passed)
        ameta: dict[str, Any] = {"model": model} if model else {}
        if provider:
            ameta["provider"] = provider
            providers[provider] += 1
        if session.window:
            ameta["context_window"] = session.window
        if messages and messages[-1].role == "assistant":  # one call written as several rows
            old = messages.pop()
            messages.append(Message("assistant", old.blocks + tuple(m.blocks), timestamp=old.timestamp, id=old.id,
                                    meta={**old.meta, **ameta}))
            merged += 1
            continue
        if model:
            models[model] += 1
        messages.append(Message("assistant", tuple(m.blocks), timestamp=m.created, id=m.mid, meta=ameta))
    if merged:
        passed["assistant row(s) merged into the call before (consecutive assistant messages)"] += merged
    out, recorded, filled, orphans = finish(messages, compactions)
    meta = dict(session.meta)
    meta.setdefault("version", None)
    if providers:
        meta["provider"] = providers.most_common(1)[0][0]
    model = models.most_common(1)[0][0] if models else session.model
    trace = Trace(session.id, tuple(out), AGENT, model, session.source, compactions=recorded, meta=meta)
    return trace, repair_notes(f"{session.source} ({session.id})" if session.source.endswith(".db")
                               else session.source, filled, orphans)


def _inferred(inference: dict[str, Any], key: str, passed: Counter[str]) -> str | None:
    """A string of ``metadata.inference``; another type is counted and left out (it only names the model)."""
    value = inference.get(key)
    if value is None or isinstance(value, str):
        return value or None
    passed[f"metadata.inference.{key} value(s) that are not text (left out)"] += 1
    return None


def _passed_note(where: str, passed: Counter[str]) -> list[str]:
    if not passed:
        return []
    kinds = ", ".join(f"{n:,} {kind}" for kind, n in sorted(passed.items(), key=lambda kv: (-kv[1], kv[0])))
    return [f"{where}: passed over or folded: {kinds}"]


def _tokens(obj: dict[str, Any], where: dict[str, Any]) -> dict[str, int]:
    out = {}
    for k in TOKEN_FIELDS:
        v = get_int(obj, k, None, **where)
        if v is not None:
            out[k] = v
    return out


def _raw(obj: Any, where: dict[str, Any]) -> _Raw:
    if not isinstance(obj, dict):
        raise TraceError(f"a goose message is a JSON object, not a {type(obj).__name__}", **where)
    created = obj.get("created")
    meta = obj.get("metadata")
    return _Raw(get_str(obj, "role", **where), get_list(obj, "content", **where),
                ts_seconds(created) if isinstance(created, (int, float)) else None,
                meta if isinstance(meta, dict) else {}, get_str(obj, "id", None, **where), where)


# --- the three containers ------------------------------------------------------------------------------

def _from_jsonl(path: Path, lenient: bool) -> ReadResult:
    skips = Skips()
    raws: list[_Raw] = []
    first: dict[str, Any] | None = None
    seen = False
    for line, obj in iter_jsonl(path, lenient, skips):
        where = {"path": str(path), "line": line}
        try:
            if not seen and "message_count" in obj and "role" not in obj:
                first = obj
                seen = True
                continue
            seen = True
            raws.append(_raw(obj, where))
        except TraceError:
            if not lenient:
                raise
            skips.count += 1
    meta: dict[str, Any] = {"session_id": path.stem}
    if first is not None:
        where = {"path": str(path), "line": 1}
        for k in ("working_dir", "description", "schedule_id"):
            if isinstance(first.get(k), str):
                meta[k] = first[k]
        tokens = _tokens(first, where)
        if tokens:
            meta["session_tokens"] = tokens
    return _finish_one(path, raws, _Session(path.stem, str(path), meta), skips.count, lenient)


def _finish_one(path: Path, raws: list[_Raw], session: _Session, skipped: int, lenient: bool) -> ReadResult:
    passed: Counter[str] = Counter()
    try:
        trace, notes = _convert(raws, session, passed)
    except TraceError:
        if not lenient:
            raise
        return ReadResult([], skipped + 1, [f"{path}: a goose session that could not be read, skipped"])
    if not trace.messages:  # goose writes a session file before its first message: common, not an error
        return ReadResult([], skipped, notes + _passed_note(str(path), passed)
                          + [f"{path}: a goose session with no user or assistant message: nothing to replay"])
    return ReadResult([trace], skipped, notes + _passed_note(str(path), passed))


def _from_export(path: Path, lenient: bool) -> ReadResult:
    data = read_json(path)
    if not isinstance(data, dict):
        raise TraceError("a goose session export is a JSON object", path=str(path))
    where = {"path": str(path), "line": None}
    conversation = data.get("conversation")
    if isinstance(conversation, dict):  # a Conversation serialized as an object holding its messages
        conversation = conversation.get("messages")
    if not isinstance(conversation, list):
        raise TraceError("goose session export without a conversation list", path=str(path))
    raws, skipped = [], 0
    for i, m in enumerate(conversation):
        try:
            raws.append(_raw(m, {"path": f"{path}: conversation[{i}]", "line": None}))
        except TraceError:
            if not lenient:
                raise
            skipped += 1
    sid = get_str(data, "id", path.stem, **where)
    meta = {"session_id": sid, **_session_fields(data, where)}
    model, window = _model_config(data.get("model_config"), where)
    return _finish_one(path, raws, _Session(sid, str(path), meta, model, window), skipped, lenient)


def _session_fields(row: dict[str, Any], where: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for k in ("working_dir", "name", "description", "session_type", "schedule_id", "provider_name", "goose_mode",
              "created_at", "updated_at"):
        if isinstance(row.get(k), str) and row[k]:
            meta[k] = row[k]
    tokens = _tokens(row, where)
    if tokens:
        meta["session_tokens"] = tokens
    if meta.get("session_type") == "sub_agent":
        meta["sidechain"] = True
    if "provider_name" in meta:
        meta["provider"] = meta["provider_name"]
    return meta


def _model_config(value: Any, where: dict[str, Any]) -> tuple[str | None, int | None]:
    """(model name, context limit) from a session's ModelConfig (JSON text in the db, an object in an export)."""
    if isinstance(value, str) and value:
        try:
            value = loads(value, path=where["path"])
        except TraceError:
            return None  # unreadable: the model comes from the messages, the window from the model, None
    if not isinstance(value, dict):
        return None, None
    window = get_int(value, "context_limit", None, **where)
    return get_str(value, "model_name", None, **where), window if window else None


def _db_text(value: Any, where: str, lenient: bool) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return decode(value, path=where, lenient=lenient)
    return str(value)


def _from_db(path: Path, lenient: bool) -> ReadResult:
    result = ReadResult([])
    empty: list[str] = []
    stray = 0
    try:
        db = sqlite_read_only(path)
        db.text_factory = bytes  # decoded by us, so a bad byte names its row
        try:
            tables = {r[0].decode() if isinstance(r[0], bytes) else r[0]
                      for r in db.execute("select name from sqlite_master where type='table'")}
            if "usage_ledger" in tables:
                result.notes.append(f"{path}: its usage_ledger table (per-call usage, in goose versions after the "
                                    "source read here) is not read: calls import without usage")
            scols = [r[1].decode() if isinstance(r[1], bytes) else r[1]
                     for r in db.execute("pragma table_info(sessions)")]
            mcols = {r[1].decode() if isinstance(r[1], bytes) else r[1]
                     for r in db.execute("pragma table_info(messages)")}
            order = "created_at, id" if "created_at" in scols else "id"
            sessions = db.execute(f"select * from sessions order by {order}").fetchall()  # noqa: S608 (known columns)
            stray = db.execute("select count(*) from messages where session_id not in (select id from sessions)"
                               ).fetchone()[0]
            wanted = [c for c in ("id", "role", "content_json", "created_timestamp", "metadata_json", "message_id")
                      if c in mcols]
            query = f"select {', '.join(wanted)} from messages where cast(session_id as blob)=? order by id"  # noqa: S608
            for srow in sessions:
                row = dict(zip(scols, srow, strict=False))
                sid_raw = row.get("id")
                sid = _db_text(sid_raw, f"{path}: sessions row", lenient) or ""
                swhere = {"path": f"{path}: sessions {sid[:80]!r}", "line": None}
                texts = {k: _db_text(v, swhere["path"], lenient) if isinstance(v, bytes) else v for k, v in row.items()}
                raws: list[_Raw] = []
                for mrow in db.execute(query, (sid_raw if isinstance(sid_raw, bytes) else str(sid_raw).encode(),)):
                    m = dict(zip(wanted, mrow, strict=False))
                    mwhere = {"path": f"{path}: messages row {m.get('id')}", "line": None}
                    try:
                        raws.append(_db_raw(m, mwhere, lenient))
                    except TraceError:
                        if not lenient:
                            raise
                        result.skipped += 1
                if not raws:
                    empty.append(sid)
                    continue
                model, window = _model_config(texts.get("model_config_json"), swhere)
                meta = {"session_id": sid, **_session_fields(texts, swhere)}
                part = _finish_one(path, raws, _Session(sid, str(path), meta, model, window), 0, lenient)
                result.traces += part.traces
                result.skipped += part.skipped
                result.notes += [n.replace(f"{path}:", f"{path} ({sid}):", 1) for n in part.notes]
        finally:
            db.close()
    except (sqlite3.Error, UnicodeDecodeError) as e:  # a damaged schema: names sqlite3 decodes itself
        raise TraceError(f"cannot read goose database: {e}", path=str(path)) from None
    if empty:
        result.notes.append(f"{path}: {len(empty)} session(s) without messages: "
                            + ", ".join(empty[:10]) + (" …" if len(empty) > 10 else ""))
    if stray:
        result.notes.append(f"{path}: {stray:,} message row(s) of no session in the sessions table, not read")
    return result


def _db_raw(m: dict[str, Any], where: dict[str, Any], lenient: bool) -> _Raw:
    place = where["path"]
    role = _db_text(m.get("role"), place, lenient) or ""
    content_text = _db_text(m.get("content_json"), place, lenient)
    if content_text is None:
        raise TraceError("content_json is empty", path=place)
    content = loads(content_text, path=place, lenient=lenient)
    if not isinstance(content, list):
        raise TraceError(f"content_json is a {type(content).__name__}, not a list", path=place)
    meta_text = _db_text(m.get("metadata_json"), place, lenient)
    meta: Any = loads(meta_text, path=place, lenient=lenient) if meta_text else {}
    created = m.get("created_timestamp")
    mid = _db_text(m.get("message_id"), place, lenient)
    return _Raw(role, content, ts_seconds(created) if isinstance(created, (int, float)) else None,
                meta if isinstance(meta, dict) else {}, mid, where)


def read_file(path: Path, *, lenient: bool = False) -> ReadResult:
    path = Path(path)
    try:
        with path.open("rb") as f:
            head = f.read(65536)
    except OSError as e:
        raise TraceError(f"cannot read: {e.strerror}", path=str(path)) from None
    if head.startswith(SQLITE_MAGIC.encode()):
        return _from_db(path, lenient)
    text = head.decode("utf-8", errors="replace")
    obj = first_json_line(text)
    if obj is None and text.lstrip().startswith("{") and '"working_dir"' in text:
        return _from_export(path, lenient)
    return _from_jsonl(path, lenient)
