"""OpenCode sessions: the SQLite ``opencode.db``, the older JSON ``storage/`` tree, and
``opencode export`` output, spec/formats.md §6 (anomalyco/opencode packages/opencode/src/session).

A message's ``info`` and its ``parts`` are stored apart (``message.data`` / ``part.data`` JSON, or one
file each). A tool call and its result are the *same* part (``state.input`` / ``state.output``), so
each becomes a ToolUse in the assistant message and a ToolResult in the user message after it. An
assistant message may span several model calls (``step-start`` … ``step-finish`` with its tokens):
each step is one of our assistant messages. A ``compaction`` part (sent as "What did we do so
far?") answered by a ``summary: true`` message is a RecordedCompaction (that answer is the compaction
agent's call: ``meta["summarizer"]``, so the context after is the agent's next request); pruned outputs
(``state.time.compacted``) are sent as "[Old tool result content cleared]", as OpenCode does.

Each call keeps the provider that served it (``providerID``: ``meta["provider"]``, and the session's
most used one as ``trace.meta["provider"]``): OpenCode takes a model's limits from models.dev *per
provider*, and a model served through ``github-copilot`` has a smaller window there than its maker
gives it (session/overflow.ts, provider/models.ts).
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from traces.formats import ReadResult
from traces.formats._common import (
    decode,
    finish,
    get_dict,
    get_int,
    get_list,
    get_str,
    loads,
    read_json,
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
    Usage,
)

NAME = "opencode"
AGENT = "opencode"
CLEARED = "[Old tool result content cleared]"
INTERRUPTED = "[Tool execution was interrupted]"
COMPACTION_PROMPT = "What did we do so far?"
SQLITE_MAGIC = "SQLite format 3"

Raw = tuple[dict[str, Any], list[dict[str, Any]]]
"""One message as stored: its info and its parts (sorted by id)."""
FROM = "\x00from"
"""Key under which a stored info or part dict carries where it came from (its file, or database row),
so an error names that record rather than the session file."""
SAFE_ID = re.compile(r"[A-Za-z0-9_.-]{1,200}")
"""An id that is used as a file name in the storage tree."""


def sniff_file(path: Path, head: str) -> str | None:
    if head.startswith(SQLITE_MAGIC):
        try:
            with sqlite_read_only(path) as db:
                names = {r[0] for r in db.execute("select name from sqlite_master where type='table'")}
        except (sqlite3.Error, UnicodeDecodeError):  # a damaged schema's names are decoded by sqlite3
            return "SQLite file that cannot be opened"
        return None if {"session", "message", "part"} <= names else "SQLite without session/message/part tables"
    start = head.lstrip()[:2000]
    if not start.startswith("{"):
        return "not a JSON object or an SQLite database"
    if '"id"' in start and any(f'"{p}_' in start for p in ("ses", "msg", "prt")) and (
            '"sessionID"' in start or '"projectID"' in start or '"messageID"' in start or '"info"' in start):
        return None
    return "JSON without OpenCode ids (ses_/msg_/prt_ with sessionID/projectID)"


def _part_blocks(part: dict[str, Any], where: dict[str, Any]) -> tuple[list[Block], list[Block]]:
    """(blocks the model wrote or was sent, tool results that follow) for one part."""
    kind = get_str(part, "type", **where)
    if kind == "text":
        if part.get("ignored") is True:
            return [], []
        return [Text(get_str(part, "text", **where))], []
    if kind == "reasoning":
        return [Thinking(get_str(part, "text", "", **where))], []
    if kind == "compaction":
        return [Text(COMPACTION_PROMPT)], []
    if kind == "file":
        mime = get_str(part, "mime", "application/octet-stream", **where)
        url = get_str(part, "url", "", **where)
        if mime.startswith("image/"):
            return [Image(mime, len(url.split(",", 1)[-1]) * 3 // 4 if url.startswith("data:") else 0)], []
        return [Text(f"[file {get_str(part, 'filename', url, **where)} ({mime})]")], []
    if kind == "subtask":
        return [Text(get_str(part, "prompt", "", **where))], []
    if kind != "tool":
        return [], []  # step-start/-finish, snapshot, patch, agent, retry: not model context
    call_id = get_str(part, "callID", **where)
    state = get_dict(part, "state", **where)
    status = get_str(state, "status", **where)
    use = ToolUse(call_id, get_str(part, "tool", **where), get_dict(state, "input", {}, **where))
    if status == "completed":
        time = get_dict(state, "time", {}, **where)
        out = CLEARED if time.get("compacted") else get_str(state, "output", "", **where)
        return [use], [ToolResult(call_id, out)]
    if status == "error":
        return [use], [ToolResult(call_id, get_str(state, "error", "", **where), True)]
    return [use], [ToolResult(call_id, INTERRUPTED, True)]


def _usage(tokens: Any, where: dict[str, Any]) -> Usage | None:
    """OpenCode tokens: input excludes cache reads/writes (Anthropic-like); reasoning is billed as output."""
    if not isinstance(tokens, dict):
        return None
    cache = get_dict(tokens, "cache", {}, **where)
    g = lambda d, k: get_int(d, k, 0, **where)  # noqa: E731
    return Usage(g(tokens, "input"), g(tokens, "output") + g(tokens, "reasoning"), g(cache, "read"), g(cache, "write"))


def _convert(session: dict[str, Any], raws: list[Raw], source: str) -> tuple[Trace, list[str]]:
    messages: list[Message] = []
    compactions: list[RecordedCompaction] = []
    models: Counter[str] = Counter()
    providers: Counter[str] = Counter()
    pending_compaction: str | None = None
    last_prompt: int | None = None
    for info, parts in raws:
        where = {"path": info.get(FROM, source), "line": None}
        role = get_str(info, "role", **where)
        mid = get_str(info, "id", None, **where)
        ts = ts_seconds(get_dict(info, "time", {}, **where).get("created"))
        if role == "user":
            if isinstance(info.get("system"), str) and info["system"] and not messages:
                messages.append(Message.text_message("system", info["system"]))
            own: list[Block] = []
            added: list[Block] = []  # synthetic parts: what OpenCode wrote into the message (an @file's read)
            for p in parts:
                (added if p.get("type") == "text" and p.get("synthetic") is True else own).extend(
                    _part_blocks(p, _from(p, where))[0])
            comp = next((p for p in parts if p.get("type") == "compaction"), None)
            if comp is not None:
                pending_compaction = "auto" if comp.get("auto") is True else "manual"
            # The compaction request ("What did we do so far?") and synthetic parts are OpenCode's words, not
            # the user's: flagged as a strategy's are (``compaction``, ``synthetic``). Synthetic parts beside
            # the user's own (an @file mention's "Called the Read tool ..." and the file) follow as a message
            # of their own, so the user's request is what they typed; right after a summary, a synthetic-only
            # message ("Continue if you have next steps") is part of the compaction too (compaction.ts).
            if comp is not None:
                own, added = own + added, []
            flags: dict[str, Any] = {"compaction": True} if comp is not None else {}
            if own:
                messages.append(Message("user", tuple(own), timestamp=ts, id=mid, meta=flags))
            if added:
                after_summary = not own and bool(messages) and bool(messages[-1].meta.get("summary"))
                messages.append(Message("user", tuple(added), timestamp=ts, id=mid if not own else None,
                                        meta={"synthetic": True, **({"compaction": True} if after_summary else {})}))
            continue
        if role != "assistant":
            raise TraceError(f"message {mid}: unknown role {role!r}", **where)
        model = get_str(info, "modelID", None, **where)
        provider = get_str(info, "providerID", None, **where)
        if model:
            models[model] += 1
        if provider:
            providers[provider] += 1
        meta: dict[str, Any] = {"model": model} if model else {}
        if provider:
            meta["provider"] = provider
        if info.get("summary") is True:  # the compaction agent's answer: a summarizer call, not an agent turn
            meta["summary"] = True
            meta["summarizer"] = True
        steps: list[tuple[list[Block], list[Block], Usage | None]] = [([], [], None)]
        for p in parts:
            if p.get("type") == "step-start" and (steps[-1][0] or steps[-1][2]):
                steps.append(([], [], None))
            elif p.get("type") == "step-finish":
                steps[-1] = (steps[-1][0], steps[-1][1], _usage(p.get("tokens"), _from(p, where)))
            else:
                said, results = _part_blocks(p, _from(p, where))
                steps[-1][0].extend(said)
                steps[-1][1].extend(results)
        if len(steps) == 1 and steps[0][2] is None:
            steps[0] = (steps[0][0], steps[0][1], _usage(info.get("tokens"), where))
        for said, results, usage in steps:
            if not said:
                continue
            if meta.get("summary") and not any(c.message_index == len(messages) for c in compactions):
                text = "\n".join(b.text for b in said if isinstance(b, Text))
                compactions.append(RecordedCompaction(len(messages), pending_compaction or "auto", last_prompt, text))
                pending_compaction = None
            messages.append(Message("assistant", tuple(said), usage=usage, timestamp=ts, id=mid, meta=meta))
            if results:
                messages.append(Message("user", tuple(results), timestamp=ts))
            if usage is not None and usage.prompt_tokens:
                last_prompt = usage.prompt_tokens
    messages, recorded, filled, orphans = finish(messages, compactions)
    notes = [f"{source}: {n} {w}" for n, w in ((filled, "tool call(s) without a result got a flagged error result"),
                                              (orphans, "orphan tool result(s) kept as flagged text")) if n]
    sid = get_str(session, "id", "opencode-session", path=source)
    meta = {k: session[k] for k in ("title", "directory", "version", "parentID") if isinstance(session.get(k), str)}
    if providers:
        meta["provider"] = providers.most_common(1)[0][0]
    return Trace(sid, tuple(messages), AGENT, models.most_common(1)[0][0] if models else None, source,
                 compactions=recorded, meta=meta), notes


def _from(record: dict[str, Any], where: dict[str, Any]) -> dict[str, Any]:
    return {"path": record.get(FROM, where["path"]), "line": None}


def _row(path: Path, table: str, rid: Any, data: Any, lenient: bool) -> dict[str, Any]:
    """A message or part row's JSON (read as bytes: invalid UTF-8 is named, or repaired with --lenient)."""
    name = rid.decode("utf-8", "replace") if isinstance(rid, bytes) else str(rid)
    where = f"{path}: {table} {name}"
    text = data if isinstance(data, bytes) else str(data or "").encode()
    d = loads(decode(text, path=where, lenient=lenient), path=where, lenient=lenient)
    if not isinstance(d, dict):
        raise TraceError("data is not a JSON object", path=where)
    return {**d, "id": name, FROM: where}


def _from_db(path: Path, lenient: bool) -> ReadResult:
    result = ReadResult([])
    try:
        db = sqlite_read_only(path)
        db.text_factory = bytes  # decoded by us, so a bad byte names its row
        with db:
            sessions = db.execute("select id from session order by id").fetchall()
            for (sid,) in sessions:
                raws: list[Raw] = []
                rows = db.execute("select id, data from message where cast(session_id as blob)=? order by id", (sid,))
                for mid, data in rows.fetchall():
                    try:
                        info = _row(path, "message", mid, data, lenient)
                        parts = [_row(path, "part", pid, d, lenient) for pid, d in db.execute(
                            "select id, data from part where cast(message_id as blob)=? order by id", (mid,))]
                    except TraceError:
                        if not lenient:
                            raise
                        result.skipped += 1
                        continue
                    raws.append((info, parts))
                session = {"id": decode(sid, path=f"{path}: session", lenient=lenient)
                           if isinstance(sid, bytes) else str(sid)}
                trace, notes = _convert(session, raws, str(path))
                result.traces.append(trace)
                result.notes += notes
        db.close()
    except (sqlite3.Error, UnicodeDecodeError) as e:  # a damaged schema: names sqlite3 decodes itself
        raise TraceError(f"cannot read OpenCode database: {e}", path=str(path)) from None
    return result


def _from_storage(path: Path, session: dict[str, Any], lenient: bool) -> ReadResult:
    """``storage/session/<project>/<id>.json``: messages in ``storage/message/<id>/``, parts in
    ``storage/part/<message id>/``."""
    root = path.parent.parent.parent
    sid = _file_id(session, path)
    raws: list[Raw] = []
    skipped = 0
    for mfile in sorted((root / "message" / sid).glob("*.json")):
        try:
            info = read_json(mfile)
            if not isinstance(info, dict):
                raise TraceError("message file is not a JSON object", path=str(mfile))
            parts = []
            for pfile in sorted((root / "part" / _file_id(info, mfile)).glob("*.json")):
                part = read_json(pfile)
                if not isinstance(part, dict):
                    raise TraceError("part file is not a JSON object", path=str(pfile))
                parts.append({**part, FROM: str(pfile)})
        except TraceError:
            if not lenient:
                raise
            skipped += 1
            continue
        raws.append(({**info, FROM: str(mfile)}, sorted(parts, key=lambda p: str(p.get("id", "")))))
    raws.sort(key=lambda r: str(r[0].get("id", "")))
    trace, notes = _convert(session, raws, str(path))
    return ReadResult([trace], skipped, notes)


def _file_id(record: dict[str, Any], path: Path) -> str:
    """A session's or message's id, which names a folder of the storage tree: a plain, short name."""
    ident = get_str(record, "id", path=path)
    if not SAFE_ID.fullmatch(ident):
        raise TraceError(f"id {ident[:40]!r}{'…' if len(ident) > 40 else ''} is not a storage name "
                         "(letters, digits, _ . -, at most 200)", path=str(path))
    return ident


def read_file(path: Path, *, lenient: bool = False) -> ReadResult:
    path = Path(path)
    try:
        with path.open("rb") as f:
            magic = f.read(len(SQLITE_MAGIC))
    except OSError as e:
        raise TraceError(f"cannot read: {e.strerror}", path=str(path)) from None
    if magic == SQLITE_MAGIC.encode():
        return _from_db(path, lenient)
    data = read_json(path)
    if not isinstance(data, dict):
        raise TraceError("an OpenCode file holds a JSON object", path=str(path))
    if isinstance(data.get("info"), dict) and "messages" in data:  # opencode export
        raws = []
        for i, m in enumerate(get_list(data, "messages", path=path)):
            info, parts = get_dict(m, "info", path=path, line=i + 1), get_list(m, "parts", [], path=path, line=i + 1)
            raws.append((info, [p for p in parts if isinstance(p, dict)]))
        trace, notes = _convert(data["info"], raws, str(path))
        return ReadResult([trace], 0, notes)
    ident = get_str(data, "id", "", path=path)
    if ident.startswith("ses_"):
        return _from_storage(path, data, lenient)
    return ReadResult([], 0, [f"{path}: OpenCode message/part file; read through its session file"])
