"""Small helpers shared by the importers: JSON reading with file:line errors, typed getters.

Why: every importer must turn bad input into a TraceError that names the file and line (never a
bare KeyError), and in lenient mode skip the bad record and count it. Keeping that in one place
keeps the importers short and their errors uniform.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from traces.model import (
    Block,
    Image,
    Message,
    RecordedCompaction,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    TraceError,
    flag_orphan_results,
)

__all__ = [
    "NO_RESULT", "Skips", "anthropic_blocks", "fill_missing_results", "finish", "first_json_line",
    "get_bool", "get_dict", "get_int", "get_list", "get_num", "get_str", "image_block", "iter_jsonl",
    "read_json", "result_text", "ts_seconds",
]


class Skips:
    """A counter of bad records skipped in lenient mode (a mutable box passed into generators)."""

    def __init__(self) -> None:
        self.count = 0

    def __int__(self) -> int:
        return self.count


def iter_jsonl(path: str | Path, lenient: bool, skips: Skips | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line of a JSONL file.

    A line that is not a JSON object raises TraceError(path, line); with ``lenient`` it is
    skipped and counted in ``skips``. A file that is not UTF-8 is an error in both modes.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise TraceError(f"cannot read: {e.strerror}", path=str(path)) from None
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw.decode("utf-8"))
            if not isinstance(obj, dict):
                raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
        except (ValueError, RecursionError) as e:
            if lenient:
                if skips is not None:
                    skips.count += 1
                continue
            raise TraceError(f"bad JSON record ({e})", path=str(path), line=lineno) from None
        yield lineno, obj


def read_json(path: str | Path) -> Any:
    """Parse a whole JSON file; errors name the file and (for syntax errors) the line."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except OSError as e:
        raise TraceError(f"cannot read: {e.strerror}", path=str(path)) from None
    except UnicodeDecodeError as e:
        raise TraceError(f"not UTF-8 ({e.reason})", path=str(path)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise TraceError(f"bad JSON ({e.msg})", path=str(path), line=e.lineno) from None
    except (ValueError, RecursionError) as e:
        raise TraceError(f"bad JSON ({e})", path=str(path)) from None


def first_json_line(head: str) -> dict[str, Any] | None:
    """The first non-blank line of a file head as a JSON object, or None (for sniffing)."""
    for line in head.split("\n"):
        if line.strip():
            try:
                obj = json.loads(line)
            except ValueError:
                return None
            return obj if isinstance(obj, dict) else None
    return None


def _where(path: str | Path | None, line: int | None) -> dict[str, Any]:
    return {"path": None if path is None else str(path), "line": line}


def _get(d: Any, key: str, kinds: type | tuple[type, ...], what: str, default: Any,
         path: str | Path | None, line: int | None) -> Any:
    if not isinstance(d, Mapping):
        raise TraceError(f"expected an object holding {key!r}, got {type(d).__name__}", **_where(path, line))
    value = d.get(key, _MISSING)
    if value is _MISSING or value is None:
        if default is not _MISSING:
            return default
        raise TraceError(f"missing field {key!r}", **_where(path, line))
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise TraceError(f"field {key!r} should be {what}, got {type(value).__name__}", **_where(path, line))
    return value


_MISSING: Any = object()
PathLike = str | Path | None


def get_str(d: Any, key: str, default: Any = _MISSING, *, path: PathLike = None, line: int | None = None) -> Any:
    """``d[key]`` as a str; TraceError naming the field when missing (and no default) or mistyped."""
    return _get(d, key, str, "a string", default, path, line)


def get_int(d: Any, key: str, default: Any = _MISSING, *, path: PathLike = None, line: int | None = None) -> Any:
    """``d[key]`` as an int (floats with integral values are accepted, bools are not)."""
    value = _get(d, key, (int, float), "an integer", default, path, line)
    if isinstance(value, float):
        if not value.is_integer():
            raise TraceError(f"field {key!r} should be an integer, got {value!r}", **_where(path, line))
        return int(value)
    return value


def get_num(d: Any, key: str, default: Any = _MISSING, *, path: PathLike = None, line: int | None = None) -> Any:
    return _get(d, key, (int, float), "a number", default, path, line)


def get_bool(d: Any, key: str, default: Any = _MISSING, *, path: PathLike = None, line: int | None = None) -> Any:
    return _get(d, key, bool, "a boolean", default, path, line)


def get_dict(d: Any, key: str, default: Any = _MISSING, *, path: PathLike = None, line: int | None = None) -> Any:
    return _get(d, key, dict, "an object", default, path, line)


def get_list(d: Any, key: str, default: Any = _MISSING, *, path: PathLike = None, line: int | None = None) -> Any:
    return _get(d, key, list, "a list", default, path, line)


def ts_seconds(value: Any) -> float | None:
    """A timestamp (ISO-8601 string, or epoch seconds / milliseconds) as epoch seconds; None if unreadable."""
    from datetime import datetime

    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value / 1000.0 if value > 1e11 else float(value)
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def anthropic_blocks(content: Any, *, path: str | Path | None = None, line: int | None = None) -> tuple[Block, ...]:
    """Anthropic Messages content (a string or a list of blocks) as our blocks.

    Unknown block types are kept as their JSON text (their tokens are real); a block that is not
    an object, or a known block missing its required field, is a TraceError.
    """
    if isinstance(content, str):
        return (Text(content),)
    if not isinstance(content, list):
        raise TraceError(f"message content should be a string or a list, got {type(content).__name__}",
                         **_where(path, line))
    out: list[Block] = []
    for b in content:
        kind = get_str(b, "type", path=path, line=line)
        if kind == "text":
            out.append(Text(get_str(b, "text", path=path, line=line)))
        elif kind == "thinking":
            out.append(Thinking(get_str(b, "thinking", "", path=path, line=line)))
        elif kind == "redacted_thinking":
            out.append(Thinking(""))
        elif kind in ("tool_use", "server_tool_use"):
            out.append(ToolUse(get_str(b, "id", path=path, line=line), get_str(b, "name", path=path, line=line),
                               get_dict(b, "input", {}, path=path, line=line)))
        elif kind == "tool_result":
            out.append(ToolResult(get_str(b, "tool_use_id", path=path, line=line),
                                  result_text(b.get("content"), path=path, line=line),
                                  get_bool(b, "is_error", False, path=path, line=line)))
        elif kind == "image":
            out.append(image_block(b))
        else:
            out.append(Text(json.dumps(b, ensure_ascii=False, sort_keys=True)))
    return tuple(out)


def image_block(b: Mapping[str, Any]) -> Image:
    """An Anthropic image block as its media type and (decoded) size."""
    source = b.get("source") if isinstance(b.get("source"), Mapping) else {}
    data = source.get("data")
    media = source.get("media_type")
    return Image(media if isinstance(media, str) else "image/png",
                 len(data) * 3 // 4 if isinstance(data, str) else 0)


def result_text(content: Any, *, path: str | Path | None = None, line: int | None = None) -> str:
    """A tool result's content (a string or a list of text/image blocks) as one string."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise TraceError(f"tool result content should be a string or a list, got {type(content).__name__}",
                         **_where(path, line))
    parts = []
    for b in content:
        if isinstance(b, str):
            parts.append(b)
        elif isinstance(b, Mapping) and isinstance(b.get("text"), str):
            parts.append(b["text"])
        elif isinstance(b, Mapping) and b.get("type") == "image":
            img = image_block(b)
            parts.append(f"[image {img.media_type}, {img.size_bytes} bytes]")
        else:
            parts.append(json.dumps(b, ensure_ascii=False, sort_keys=True, default=str))
    return "\n".join(parts)


NO_RESULT = "[no tool result recorded]"


def fill_missing_results(messages: list[Message]) -> tuple[list[Message], int]:
    """Give every tool call that the log left unanswered a flagged error result.

    Why: an interrupted call can lose its result line; an API would reject the next request, and
    a replay would see a dangling call. The last message (a call still in flight) is left alone.
    """
    out: list[Message] = []
    added = 0
    for i, m in enumerate(messages):
        out.append(m)
        if m.role != "assistant" or not m.tool_uses or i == len(messages) - 1:
            continue
        answered: set[str] = set()
        for later in messages[i + 1:]:
            if later.role == "assistant":
                break
            answered.update(r.tool_use_id for r in later.tool_results)
        missing = [u.id for u in m.tool_uses if u.id not in answered]
        if missing:
            added += len(missing)
            out.append(Message("user", tuple(ToolResult(uid, NO_RESULT, True) for uid in missing),
                               timestamp=m.timestamp, meta={"synthetic": True}))
    return out, added


def results_before_text(messages: list[Message]) -> list[Message]:
    """Move a user's text that arrived while tool calls were running to after their results.

    Codex lets the user steer mid-call, so a rollout can hold call → user text → result; every
    provider API wants the results right after the calls, and so do the strategies' cuts.
    """
    out: list[Message] = []
    held: list[Message] = []
    pending: set[str] = set()
    for m in messages:
        if m.role == "assistant":
            out += held
            held = []
            pending = {u.id for u in m.tool_uses}
            out.append(m)
        elif m.tool_results:
            pending -= {r.tool_use_id for r in m.tool_results}
            out.append(m)
            if not pending:
                out += held
                held = []
        elif pending and m.role == "user":
            held.append(m)
        else:
            out.append(m)
    return out + held


def finish(messages: list[Message], compactions: list[RecordedCompaction]) -> tuple[
        list[Message], tuple[RecordedCompaction, ...], int, int]:
    """Close unanswered calls and flag orphan results, keeping compaction indices on their messages.

    Returns (messages, compactions, calls given a flagged result, orphan results flagged).
    """
    filled, n_filled = fill_missing_results(results_before_text(messages))
    where = {id(m): j for j, m in enumerate(filled)}
    moved = tuple(replace(c, message_index=where[id(messages[c.message_index])])
                  if 0 <= c.message_index < len(messages) else c for c in compactions)
    flagged, n_orphans = flag_orphan_results(filled)
    return flagged, moved, n_filled, n_orphans
