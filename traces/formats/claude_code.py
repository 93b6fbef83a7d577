"""Claude Code session JSONL (``~/.claude/projects/<slug>/<sessionId>.jsonl``), spec/formats.md §3.

Why the work: the file is a log, not the context. Records form a tree (``uuid``/``parentUuid``)
that can branch after rewinds, parallel tool results hang off side branches, one API response is
written as one line per content block (shared ``message.id``), and most lines are ``progress`` or
``file-history-snapshot`` noise. We walk the chain from the last record, regroup each response,
attach every tool result to its call, and keep the agent's own compaction (``compact_boundary`` +
``isCompactSummary``) as a RecordedCompaction. Subagent (sidechain) records become their own traces.
Checked against Claude Code v2.1.38–39 files (marot/spotter @ 8cc42b0, test/fixtures/transcripts).
Claude Code 1.0.x (2025) wrote no boundary: its summary is a root record (``parentUuid`` null) in the
same file, and the chain goes on to the records before it in file order. A model call that is not on
the chain (a rewound branch) is counted in ``meta["skipped_calls"]`` and the notes, never lost silently.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from traces.formats import ReadResult
from traces.formats._common import (
    Skips,
    anthropic_blocks,
    finish,
    get_dict,
    get_int,
    get_str,
    iter_jsonl,
    repair_notes,
    too_deep,
    ts_seconds,
)
from traces.model import (
    Block,
    Message,
    RecordedCompaction,
    ToolResult,
    Trace,
    TraceError,
    Usage,
)

NAME = "claude-code"
AGENT = "claude-code"
CONTENT_TYPES = ("user", "assistant", "system")
NOISE_TYPES = ("progress", "file-history-snapshot", "queue-operation", "summary")


@dataclass
class _Rec:
    """One parsed user/assistant/system/progress record (progress only links the tree)."""

    line: int
    kind: str
    uuid: str
    parent: str | None
    logical_parent: str | None
    side: str
    timestamp: float | None = None
    blocks: tuple[Block, ...] = ()
    msg_id: str | None = None
    model: str | None = None
    usage: Usage | None = None
    subtype: str | None = None
    compact_summary: bool = False
    compact_meta: dict[str, Any] = field(default_factory=dict)
    is_meta: bool = False


def sniff_file(path: Path, head: str) -> str | None:
    lines = head.split("\n")
    complete = lines if len(head) < 64 * 1024 else lines[:-1]
    bad = 0
    for line in complete[:50]:
        if not line.strip():
            continue
        try:
            if too_deep(line):  # parsing it would overflow the stack
                raise ValueError("nested too deep")
            rec = json.loads(line)
        except ValueError:  # one bad line (truncated, garbage) is the reader's to report, by line
            bad += 1
            if bad > 1:
                return "lines are not JSON"
            continue
        if not isinstance(rec, dict):
            return "lines are not JSON objects"
        kind = rec.get("type")
        if kind in CONTENT_TYPES + ("progress",) and "sessionId" in rec and "parentUuid" in rec:
            return None
        if kind not in NOISE_TYPES:
            return "no Claude Code record (type user/assistant/system with sessionId and parentUuid)"
    if lines and re.search(r'"parentUuid":', lines[0]) and re.search(r'"sessionId":', lines[0]):
        return None
    if bad:
        return "a line is not JSON"
    return "no Claude Code record (type user/assistant/system with sessionId and parentUuid)"


def _usage(u: Any, path: Path, line: int) -> Usage | None:
    if not isinstance(u, dict):
        return None
    g = lambda k: get_int(u, k, 0, path=path, line=line)  # noqa: E731
    return Usage(g("input_tokens"), g("output_tokens"), g("cache_read_input_tokens"),
                 g("cache_creation_input_tokens"))


def _parse(obj: dict[str, Any], path: Path, line: int) -> _Rec | None:
    kind = get_str(obj, "type", path=path, line=line)
    if kind not in CONTENT_TYPES and not isinstance(obj.get("uuid"), str):
        return None  # snapshots, queue operations: not part of the tree
    uuid = get_str(obj, "uuid", path=path, line=line)
    side = get_str(obj, "agentId", "sidechain", path=path, line=line) if obj.get("isSidechain") is True else ""
    rec = _Rec(line, kind, uuid, get_str(obj, "parentUuid", None, path=path, line=line),
               get_str(obj, "logicalParentUuid", None, path=path, line=line), side, ts_seconds(obj.get("timestamp")))
    if kind in ("user", "assistant"):
        message = get_dict(obj, "message", path=path, line=line)
        rec.blocks = anthropic_blocks(message.get("content"), path=path, line=line)
        rec.is_meta = obj.get("isMeta") is True
        rec.compact_summary = obj.get("isCompactSummary") is True
        if kind == "assistant":
            rec.msg_id = get_str(message, "id", uuid, path=path, line=line)
            rec.model = get_str(message, "model", None, path=path, line=line)
            rec.usage = _usage(message.get("usage"), path, line)
    elif kind == "system":
        rec.subtype = get_str(obj, "subtype", None, path=path, line=line)
        rec.compact_meta = get_dict(obj, "compactMetadata", {}, path=path, line=line)
    return rec


def _chain(recs: list[_Rec]) -> tuple[list[_Rec], int]:
    """The records on the path from the root to the last content record, and how many links broke.

    A parent that is absent (a lost line, or a boundary whose logical parent was never written)
    is bridged to the nearest earlier record in file order, so no history is silently dropped.
    Claude Code 1.0.x writes no ``compact_boundary``: its summary record (``isCompactSummary``) has
    ``parentUuid`` null, and the pre-compaction records precede it in the same file; the walk goes
    on through it the same way (not counted as a broken link).
    """
    by_uuid = {r.uuid: r for r in recs}
    pos = {id(r): i for i, r in enumerate(recs)}
    leaves = [r for r in recs if r.kind in CONTENT_TYPES]
    cur: _Rec | None = leaves[-1] if leaves else None
    out: list[_Rec] = []
    seen: set[str] = set()
    breaks = 0
    while cur is not None and cur.uuid not in seen:
        seen.add(cur.uuid)
        out.append(cur)
        link = cur.parent or cur.logical_parent
        if link is None and not cur.compact_summary:
            break
        nxt = by_uuid.get(link) if link is not None else None
        if nxt is None or nxt.uuid in seen:
            # A lost parent, or a 1.0.x compaction summary (a root: ``parentUuid`` null, no boundary):
            # what came before is the nearest earlier record in file order.
            i = pos[id(cur)] - 1
            while i >= 0 and recs[i].uuid in seen:
                i -= 1
            nxt = recs[i] if i >= 0 else None
            breaks += nxt is not None and link is not None and cur.subtype != "compact_boundary"
        cur = nxt
    out.reverse()
    return out, breaks


def _assistant(lines: list[_Rec]) -> Message:
    blocks: list[Block] = []
    use_ids: set[str] = set()
    for r in lines:
        for b in r.blocks:
            if b.type == "tool_use":
                if b.id in use_ids:  # type: ignore[union-attr]
                    continue
                use_ids.add(b.id)  # type: ignore[union-attr]
            blocks.append(b)
    usage = next((r.usage for r in reversed(lines) if r.usage is not None), None)
    model = lines[-1].model
    return Message("assistant", tuple(blocks), usage=usage, timestamp=lines[0].timestamp, id=lines[0].msg_id,
                   meta={"model": model} if model else {})


def _trace(recs: list[_Rec], path: Path, session: str, side: str, version: str | None) -> tuple[Trace, list[str]]:
    chain, breaks = _chain(recs)
    groups: dict[str, list[_Rec]] = {}
    results: dict[str, tuple[ToolResult, _Rec]] = {}
    for r in recs:
        if r.kind == "assistant":
            groups.setdefault(r.msg_id or r.uuid, []).append(r)
        elif r.kind == "user":
            for b in r.blocks:
                if isinstance(b, ToolResult):
                    results.setdefault(b.tool_use_id, (b, r))
    messages: list[Message] = []
    compactions: list[RecordedCompaction] = []
    emitted: set[str] = set()
    attached: set[str] = set()
    boundary: _Rec | None = None
    for r in chain:
        if r.kind == "assistant" and (r.msg_id or r.uuid) not in emitted:
            emitted.add(r.msg_id or r.uuid)
            answer = _assistant(groups[r.msg_id or r.uuid])
            messages.append(answer)
            found = [results[u.id] for u in answer.tool_uses if u.id in results]
            if found:
                attached.update(b.tool_use_id for b, _ in found)
                stamps = [s.timestamp for _, s in found if s.timestamp is not None]
                messages.append(Message("user", tuple(b for b, _ in found), timestamp=max(stamps, default=None)))
        elif r.kind == "system" and r.subtype == "compact_boundary":
            boundary = r
        elif r.kind == "user":
            blocks = tuple(b for b in r.blocks if not (isinstance(b, ToolResult) and b.tool_use_id in attached))
            if not blocks:
                continue
            meta: dict[str, Any] = {"injected": True} if r.is_meta else {}
            if r.compact_summary or boundary is not None:
                cm = boundary.compact_meta if boundary is not None else {}
                pre = cm.get("preTokens")
                text = Message("user", blocks).text if r.compact_summary else ""
                compactions.append(RecordedCompaction(  # 1.0.x: no boundary, so no trigger recorded
                    len(messages), str(cm.get("trigger") or ("auto" if boundary is not None else "unrecorded")),
                    pre if isinstance(pre, int) and not isinstance(pre, bool) else None, text))
                if r.compact_summary:
                    meta["summary"] = True
                boundary = None
            messages.append(Message("user", blocks, timestamp=r.timestamp, id=r.uuid, meta=meta))
    notes = []
    messages, recorded, filled, orphans = finish(messages, compactions)
    notes += repair_notes(path, filled, orphans)
    if breaks:
        notes.append(f"{path}: {breaks} broken parentUuid link(s) bridged in file order")
    off_chain = sum(1 for k in groups if k not in emitted)
    if off_chain:  # every model call is imported or counted here: rewound / abandoned branches
        notes.append(f"{path}: skipped {off_chain} model call(s) on branches off the main chain (rewinds)")
    models = Counter(m.meta.get("model") for m in messages
                     if m.role == "assistant" and m.meta.get("model") not in (None, "<synthetic>"))
    trace = Trace(
        id=f"{session}/{side}" if side else session, messages=tuple(messages), agent=AGENT,
        model=models.most_common(1)[0][0] if models else None, source=str(path),
        compactions=recorded,
        meta={"session_id": session, "version": version, "sidechain": bool(side), "skipped_calls": off_chain,
              **({"agent_id": side} if side else {})},
    )
    return trace, notes


def read_file(path: Path, *, lenient: bool = False) -> ReadResult:
    path = Path(path)
    skips = Skips()
    parts: dict[str, list[_Rec]] = {}
    session: str | None = None
    version: str | None = None
    for lineno, obj in iter_jsonl(path, lenient, skips):
        try:
            rec = _parse(obj, path, lineno)
        except TraceError:
            if not lenient:
                raise
            skips.count += 1
            continue
        if rec is None:
            continue
        if session is None and isinstance(obj.get("sessionId"), str):
            session = obj["sessionId"]
        if isinstance(obj.get("version"), str):
            version = obj["version"]
        parts.setdefault(rec.side, []).append(rec)
    result = ReadResult([], skips.count)
    for side, recs in parts.items():
        if not any(r.kind in ("user", "assistant") for r in recs):
            continue
        trace, notes = _trace(recs, path, session or path.stem, side, version)
        result.traces.append(trace)
        result.notes += notes
    if not result.traces and not lenient:
        raise TraceError("no user or assistant record in a Claude Code file", path=str(path))
    return result
