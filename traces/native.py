"""Our own trace format: JSONL, a header line with the schema version, then one message a line.

Schema history (bump SCHEMA_VERSION and add an ``_upgrade_from_N`` when the shape changes):
  1. first version: header {format, schema_version, id, agent, model, source, meta, needles,
     compactions}; message lines {role, blocks, usage?, timestamp?, id?, meta?}.

A file written by a newer version is refused: reading it with older code would silently drop
what we do not know about.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traces.model import (
    Block,
    Image,
    Message,
    Needle,
    RecordedCompaction,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Trace,
    TraceError,
    Usage,
)

FORMAT = "compaction-bench-trace"
SCHEMA_VERSION = 1
SUFFIX = ".cbt.jsonl"

if TYPE_CHECKING:
    from traces.formats import ReadResult


def block_to_dict(b: Block) -> dict[str, Any]:
    """Shallow on purpose: ``asdict`` would deep-copy a tool's input, one Python frame per nesting level."""
    return {"type": b.type, **{f.name: getattr(b, f.name) for f in fields(b)}}


def block_from_dict(d: dict[str, Any]) -> Block:
    """A block record, its field types checked (a wrong type is a TraceError, not a later crash)."""
    from traces.formats._common import get_bool, get_dict, get_int, get_str

    kind = get_str(d, "type")
    if kind == "text":
        return Text(get_str(d, "text"))
    if kind == "thinking":
        return Thinking(get_str(d, "text"))
    if kind == "tool_use":
        return ToolUse(get_str(d, "id"), get_str(d, "name"), get_dict(d, "input", {}))
    if kind == "tool_result":
        return ToolResult(get_str(d, "tool_use_id"), get_str(d, "content"), get_bool(d, "is_error", False))
    if kind == "image":
        return Image(get_str(d, "media_type", "image/png"), get_int(d, "size_bytes", 0))
    raise ValueError(f"unknown block type {kind!r}")


def message_to_dict(m: Message) -> dict[str, Any]:
    d: dict[str, Any] = {"role": m.role, "blocks": [block_to_dict(b) for b in m.blocks]}
    if m.usage is not None:
        d["usage"] = asdict(m.usage)
    if m.timestamp is not None:
        d["timestamp"] = m.timestamp
    if m.id is not None:
        d["id"] = m.id
    if m.meta:
        d["meta"] = dict(m.meta)
    return d


def message_from_dict(d: dict[str, Any]) -> Message:
    """A message record, its field types checked (a wrong type is a TraceError, not a later crash)."""
    from traces.formats._common import get_dict, get_int, get_list, get_num, get_str

    role = get_str(d, "role")
    if role not in ("system", "user", "assistant"):
        raise ValueError(f"unknown role {role!r}")
    usage = get_dict(d, "usage", {})
    unknown = set(usage) - {f.name for f in fields(Usage)}
    if unknown:
        raise ValueError(f"unknown usage field(s) {sorted(unknown)}")
    return Message(
        role=role,
        blocks=tuple(block_from_dict(b) for b in get_list(d, "blocks")),
        usage=Usage(**{k: get_int(usage, k) for k in usage if usage[k] is not None}) if usage else None,
        timestamp=get_num(d, "timestamp", None),
        id=get_str(d, "id", None),
        meta=get_dict(d, "meta", {}),
    )


def header(trace: Trace) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "id": trace.id,
        "agent": trace.agent,
        "model": trace.model,
        "source": trace.source,
        "meta": dict(trace.meta),
        "needles": [asdict(n) for n in trace.needles],
        "compactions": [asdict(c) for c in trace.compactions],
    }


def dumps(trace: Trace) -> str:
    lines = [header(trace), *(message_to_dict(m) for m in trace.messages)]
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)


def write(trace: Trace, path: str | Path) -> Path:
    """Write atomically (temp file + rename), so a crash never leaves half a trace."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(dumps(trace), encoding="utf-8")
    tmp.replace(path)
    return path


def sniff(first_line: str) -> bool:
    """True when a file's first line is our header."""
    from traces.formats._common import sniff_json

    head = sniff_json(first_line)
    return isinstance(head, dict) and head.get("format") == FORMAT


def loads(text: str, *, path: str = "<string>") -> Trace:
    return _load(text.splitlines(), path, lenient=False)[0]


def _load(lines: list[str | bytes], path: str, *, lenient: bool) -> tuple[Trace, int]:
    """The trace of these lines and how many records were skipped.

    ``lenient`` skips bad message records and counts them; the header is never skipped. Lines are
    decoded and parsed through traces.formats._common (bad text named by line, or repaired).
    """
    from traces.formats._common import loads as parse

    if not lines:
        raise TraceError("empty file", path=path)
    head = parse(lines[0], path=path, line=1, what="header", lenient=lenient)
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise TraceError(f"not a {FORMAT} file (no header)", path=path, line=1)
    version = head.get("schema_version")
    if not isinstance(version, int):
        raise TraceError("header has no integer schema_version", path=path, line=1)
    if version > SCHEMA_VERSION:
        raise TraceError(
            f"written by a newer compaction-bench (schema {version}; this one reads up to "
            f"{SCHEMA_VERSION}): upgrade compaction-bench to read it",
            path=path,
            line=1,
        )
    messages, skipped = [], 0
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            record = parse(line, path=path, line=lineno, what="message record", lenient=lenient)
            messages.append(message_from_dict(record))
        except TraceError as e:
            if lenient:
                skipped += 1
                continue
            raise e if e.path else TraceError(f"bad message record: {e}", path=path, line=lineno) from None
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            if lenient:
                skipped += 1
                continue
            raise TraceError(f"bad message record: {type(e).__name__}: {e}", path=path, line=lineno) from None
    try:
        return Trace(
            id=str(head["id"]),
            messages=tuple(messages),
            agent=head.get("agent") or "unknown",
            model=head.get("model"),
            source=head.get("source"),
            needles=tuple(Needle(**n) for n in head.get("needles") or ()),
            compactions=tuple(RecordedCompaction(**c) for c in head.get("compactions") or ()),
            meta=dict(head.get("meta") or {}),
        ), skipped
    except (KeyError, TypeError, ValueError) as e:
        raise TraceError(f"bad header: {type(e).__name__}: {e}", path=path, line=1) from None


def _lines(path: Path) -> list[bytes]:
    """The file's lines, undecoded: each is decoded as it is parsed, so a bad one is named by line."""
    from traces.formats._common import read_bytes

    return read_bytes(path).split(b"\n")


def read(path: str | Path) -> Trace:
    path = Path(path)
    return _load(_lines(path), str(path), lenient=False)[0]


def write_many(traces: Iterable[Trace], folder: str | Path) -> list[Path]:
    folder = Path(folder)
    return [write(t, folder / f"{safe_name(t.id)}{SUFFIX}") for t in traces]


def safe_name(trace_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in trace_id)[:120]


# The importer interface (traces/formats): sniff a file, read its traces.
NAME = "native"


def sniff_file(path: Path, head: str) -> str | None:
    """None when the file is ours; otherwise why not."""
    first = head.split("\n", 1)[0]
    return None if sniff(first) else f"first line is not a {FORMAT} header"


def read_file(path: Path, *, lenient: bool = False) -> ReadResult:
    from traces.formats import ReadResult

    trace, skipped = _load(_lines(path), str(path), lenient=lenient)
    return ReadResult([trace], skipped)
