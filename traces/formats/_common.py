"""Small helpers shared by the importers: JSON reading with file:line errors, typed getters.

Why: every importer must turn bad input into a TraceError that names the file and line (never a
bare KeyError), and in lenient mode skip the bad record and count it. Keeping that in one place
keeps the importers short and their errors uniform.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
import urllib.parse
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from itertools import accumulate
from pathlib import Path
from typing import Any

from traces.model import (
    MAX_COUNT,
    MAX_ID,
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
    flag_orphan_results,
)

__all__ = [
    "MAX_COUNT", "MAX_DEPTH", "MAX_ID", "MAX_STRING", "NOT_JSON", "NO_RESULT", "Skips", "TextCheck",
    "anthropic_blocks", "base64_image", "check_trace",
    "checking", "decode", "embedded_json", "fill_missing_results", "finish", "first_json_line", "get_bool",
    "get_dict", "get_int", "get_list", "get_num", "get_str", "image_block", "iter_jsonl", "json_depth", "loads",
    "read_bytes", "read_json", "result_text", "sniff_json", "sqlite_read_only", "too_deep", "ts_seconds",
]


# --- Text validated once on the way in -------------------------------------------------------------
# Why: a JSON escape can smuggle text no encoder accepts (a lone surrogate ``\ud83d``) or a NUL into
# a trace; nesting a thousand levels deep overflows the parser's stack (and any recursive writer's).
# Every importer reads through ``decode`` and ``loads`` below, so those are refused (or, with
# --lenient, repaired and counted) here, naming the file, the line and the record path, before any
# importer, writer or tokenizer sees them. ``check_trace`` re-checks what an importer built.

MAX_DEPTH = 100
"""Deepest nesting of JSON objects and lists in one record (real logs stay under ~15)."""
MAX_STRING = 32 * 1024 * 1024
"""Longest single string, in characters (32 Mi: a large base64 image still fits)."""

_BAD_CHAR = re.compile("[\x00\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_BAD_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_BRACKETS = re.compile(r"[^\[\]{}]+")
_STEP = str.maketrans({"[": "\x01", "{": "\x01", "]": "\x02", "}": "\x02"})
_DELTA = {"\x01": 1, "\x02": -1}


class TextCheck:
    """The validation mode of one read: strict (bad text is a TraceError) or lenient (repaired, counted)."""

    def __init__(self, lenient: bool) -> None:
        self.lenient = lenient
        self.repaired: Counter[str] = Counter()
        """What was repaired, by kind (``lone surrogate``, ``NUL``, ``invalid UTF-8``, ``string over …``)."""

    def note(self, path: str | Path) -> str | None:
        if not self.repaired:
            return None
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.repaired.items()))
        text = any(k in _TEXT_KINDS or k.startswith("string over") for k in self.repaired)
        return f"{path}: repaired {kinds} (--lenient{'; bad text replaced by U+FFFD' if text else ''})"


_TEXT_KINDS = ("lone surrogate", "NUL", "invalid UTF-8")


_CHECK: ContextVar[TextCheck | None] = ContextVar("text_check", default=None)


@contextmanager
def checking(lenient: bool) -> Iterator[TextCheck]:
    """Read in this mode: ``traces.formats.read_path`` wraps every importer in it.

    A context variable, not a parameter, because text is parsed deep inside the importers (tool
    arguments are JSON inside JSON) where the --lenient flag is not passed down. Outside any
    ``checking`` block reading is strict.
    """
    token = _CHECK.set(TextCheck(lenient))
    try:
        yield _CHECK.get()  # type: ignore[misc]
    finally:
        _CHECK.reset(token)


def _repair(kind: str, error: str, *, path: PathLike, line: int | None, at: str | None = None,
            lenient: bool | None = None) -> None:
    """Count a repair in lenient mode; raise the error in strict mode.

    The mode is ``lenient`` when the caller knows it, else that of the enclosing ``checking``.
    """
    mode = _CHECK.get()
    if not (lenient if lenient is not None else mode is not None and mode.lenient):
        raise TraceError(error, **_where(path, line), at=at or None)
    if mode is not None:
        mode.repaired[kind] += 1


def read_bytes(path: str | Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise TraceError(f"cannot read: {e.strerror}", path=str(path)) from None


def decode(data: bytes, *, path: PathLike, line: int | None = None, lenient: bool | None = None) -> str:
    """UTF-8 bytes as text: invalid bytes or a NUL are an error naming the line, or (lenient) U+FFFD, counted.

    ``line`` is the line number of the first byte (for a line of a JSONL file); for a whole file the
    line of the first bad byte is computed.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        at_line = (line or 1) + data[:e.start].count(b"\n")
        _repair("invalid UTF-8", f"not UTF-8 (byte 0x{data[e.start]:02x}: {e.reason})", path=path, line=at_line,
                lenient=lenient)
        text = data.decode("utf-8", errors="replace")
    nul = text.find("\x00")
    if nul >= 0:
        _repair("NUL", "NUL character in the text", path=path, line=(line or 1) + text.count("\n", 0, nul),
                lenient=lenient)
        text = text.replace("\x00", "\ufffd")
    return text


def json_depth(text: str) -> int:
    """How deep the JSON text nests objects and lists, counted without parsing (strings skipped)."""
    steps = _BRACKETS.sub("", _JSON_STRING.sub("", text)).translate(_STEP)
    return max(accumulate(map(_DELTA.__getitem__, steps), initial=0))


def too_deep(text: str) -> int:
    """The depth of the JSON text when it is over MAX_DEPTH, else 0 (cheap when there are few brackets)."""
    if text.count("{") + text.count("[") <= MAX_DEPTH:
        return 0
    depth = json_depth(text)
    return depth if depth > MAX_DEPTH else 0


def sniff_json(line: str) -> Any:
    """A line parsed as JSON for sniffing, or None when it is not JSON (or nests past MAX_DEPTH)."""
    if too_deep(line):
        return None
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def loads(text: str | bytes, *, path: PathLike, line: int | None = None, at: str | None = None,
          what: str = "JSON", lenient: bool | None = None) -> Any:
    """One JSON document, with the nesting limit checked before parsing and every string validated.

    Errors name the file, the line (``line`` is where the document starts) and, for bad text, the
    record path inside it (``messages[12].content[0]``), prefixed by ``at`` for JSON inside JSON.
    """
    if isinstance(text, bytes):
        text = decode(text, path=path, line=line, lenient=lenient)
    depth = too_deep(text)
    if depth:
        raise TraceError(f"{what} nested {depth} levels deep (limit {MAX_DEPTH})",
                         **_where(path, line), at=at)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        where = _where(path, (line or 1) + e.lineno - 1 if line or e.lineno > 1 else None)
        raise TraceError(f"bad {what} ({e.msg}, column {e.colno})", **where, at=at) from None
    except (ValueError, RecursionError) as e:
        raise TraceError(f"bad {what} ({e})", **_where(path, line), at=at) from None
    if _suspicious(text):
        value = _clean(value, path=path, line=line, at=at or "", lenient=lenient)
    return value


def _suspicious(text: str) -> bool:
    """Whether parsed JSON text may hold a bad string (cheap: substring tests before any regex)."""
    if len(text) > MAX_STRING or "\x00" in text:
        return True
    if ("\\ud" in text or "\\uD" in text or "\\u0000" in text) and _BAD_ESCAPE.search(text):
        return True
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a raw surrogate
            return True
    return False


def embedded_json(text: str, *, path: PathLike, line: int | None = None, at: str | None = None) -> Any:
    """JSON held in a string (tool-call arguments): its value, or ``_NOT_JSON`` when it does not parse.

    The caller keeps unparsable text as text; parsed values are validated like any record.
    """
    if too_deep(text):
        return NOT_JSON
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return NOT_JSON
    if _suspicious(text):
        value = _clean(value, path=path, line=line, at=at or "")
    return value


NOT_JSON: Any = object()
"""What ``embedded_json`` returns for text that is not JSON."""


def _fix_string(s: str, where: str, *, path: PathLike, line: int | None, lenient: bool | None) -> str:
    surrogate = _SURROGATE.search(s)
    if surrogate:
        _repair("lone surrogate", f"lone surrogate {surrogate.group()!r} in a string", path=path, line=line, at=where,
                lenient=lenient)
    if "\x00" in s:
        _repair("NUL", "NUL character in a string", path=path, line=line, at=where, lenient=lenient)
    if surrogate or "\x00" in s:
        s = _BAD_CHAR.sub("\ufffd", s)
    if len(s) > MAX_STRING:
        _repair(f"string over {MAX_STRING:,} characters (cut)",
                f"a string of {len(s):,} characters (the limit is {MAX_STRING:,})", path=path, line=line, at=where,
                lenient=lenient)
        s = s[:MAX_STRING]
    return s


def _clean(value: Any, *, path: PathLike, line: int | None, at: str, lenient: bool | None = None) -> Any:
    """Walk a parsed document (iteratively) and validate every string, key or value, in place."""
    if isinstance(value, str):
        return _fix_string(value, at or "(the value)", path=path, line=line, lenient=lenient)
    stack: list[tuple[Any, str]] = [(value, at)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            for k in list(node):
                v = node[k]
                key = k
                sub = f"{where}.{k}" if where else str(k)
                if _bad_text(k):
                    key = _fix_string(k, sub, path=path, line=line, lenient=lenient)
                    del node[k]
                    node[key] = v
                if isinstance(v, str):
                    node[key] = _fix_string(v, sub, path=path, line=line, lenient=lenient) if _bad_text(v) else v
                elif isinstance(v, (dict, list)):
                    stack.append((v, sub))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                sub = f"{where}[{i}]"
                if isinstance(v, str):
                    if _bad_text(v):
                        node[i] = _fix_string(v, sub, path=path, line=line, lenient=lenient)
                elif isinstance(v, (dict, list)):
                    stack.append((v, sub))
    return value


def _bad_text(s: str) -> str | None:
    """What is wrong with a string (cheap when nothing is: no regex unless it has non-ASCII)."""
    if len(s) > MAX_STRING:
        return "over-long string"
    if "\x00" in s:
        return "NUL"
    if not s.isascii():
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            return "lone surrogate"
    return None


def check_trace(trace: Any, *, path: PathLike) -> Trace:
    """The last check on what an importer built, shared by every importer (``read_path`` calls it):
    no bad text, no over-deep tool input, and every number and id in range, whatever it parsed.

    Why: ``loads`` and ``get_int`` guard what is read through them; this catches values an importer
    took from elsewhere (a database column, a regex over Aider's text, a difference of cumulative
    totals) so that no writer, tokenizer, price or Parquet column downstream meets them. Bad text is
    always an error; a number or id out of range is an error naming the message and field, or under
    --lenient (the enclosing ``checking``) a counted repair: the trace returned is the repaired one.
    """
    def walk(value: Any, where: str) -> None:
        stack: list[tuple[Any, int]] = [(value, 0)]
        while stack:
            node, depth = stack.pop()
            if isinstance(node, str):
                what = _bad_text(node)
                if what:
                    raise TraceError(f"{what} in the imported trace", **_where(path, None), at=where)
            elif isinstance(node, (Mapping, list, tuple)):
                if depth >= MAX_DEPTH:
                    raise TraceError(f"nested over {MAX_DEPTH} levels deep", **_where(path, None), at=where)
                items = node.items() if isinstance(node, Mapping) else enumerate(node)
                stack += [(x, depth + 1) for kv in items for x in kv]

    walk([trace.id, trace.agent, trace.model, trace.source, trace.meta], "trace header")
    for i, m in enumerate(trace.messages):
        walk([m.id, m.meta], f"message {i}")
        for j, b in enumerate(m.blocks):
            walk([getattr(b, name, None) for name in ("text", "content", "id", "name", "tool_use_id", "input")],
                 f"message {i}, block {j}")
    return _check_values(trace, path)


def _count_ok(value: Any, lo: int = 0) -> bool:
    return type(value) is int and lo <= value < MAX_COUNT  # type(...) is int: a bool is refused


def _id(value: Any, field: str, where: str, path: PathLike, *, optional: bool = False) -> Any:
    """An id or name: a string of at most MAX_ID characters (lenient: a longer one is cut to a prefix
    plus a digest of the whole, so two ids that differed still differ and a call still finds its result)."""
    if (optional and value is None) or (isinstance(value, str) and len(value) <= MAX_ID):
        return value
    if not isinstance(value, str):
        _repair("id not a string (made one)", f"{field} is {_show(value)}: expected a string", path=path,
                line=None, at=where)
        value = str(value)
        if len(value) <= MAX_ID:
            return value
    _repair(f"id over {MAX_ID:,} characters (cut)",
            f"{field} is {len(value):,} characters long (the limit is {MAX_ID:,})", path=path, line=None, at=where)
    return value[:MAX_ID - 18] + "…" + hashlib.sha256(value.encode("utf-8", "replace")).hexdigest()[:16]


def _number_ok(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
        and abs(value) < MAX_COUNT


def _check_message(m: Message, i: int, path: PathLike) -> Message:
    """One message's numbers and ids checked (repaired under --lenient); the same object when all is well."""
    where = f"message {i}"
    changes: dict[str, Any] = {}
    u = m.usage
    if u is not None:
        names = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
        values = [getattr(u, n) for n in names]
        if not all(map(_count_ok, values)):
            fixed = [v if _count_ok(v) else _bad_count(f"usage.{n}", v, 0, 0, path=path, line=None, at=where)
                     for n, v in zip(names, values, strict=True)]
            changes["usage"] = Usage(*fixed)
    if m.timestamp is not None and not _number_ok(m.timestamp):
        _repair("timestamp not a finite number (dropped)", f"timestamp is {_show(m.timestamp)}: expected seconds "
                "since the epoch", path=path, line=None, at=where)
        changes["timestamp"] = None
    new_id = _id(m.id, "id", where, path, optional=True)
    if new_id is not m.id:
        changes["id"] = new_id
    meta = m.meta
    if "context_window" in meta and meta["context_window"] is not None and not _count_ok(meta["context_window"], 1):
        _bad_count("context_window", meta["context_window"], 1, None, path=path, line=None, at=where)
        meta = {k: v for k, v in meta.items() if k != "context_window"}
    if "model" in meta and meta["model"] is not None and not (isinstance(meta["model"], str)
                                                              and len(meta["model"]) <= MAX_ID):
        _repair("model name not a short string (dropped)", f"model is {_show(meta['model'])}: expected a name of "
                f"at most {MAX_ID:,} characters", path=path, line=None, at=where)
        meta = {k: v for k, v in meta.items() if k != "model"}
    if meta is not m.meta:
        changes["meta"] = meta
    blocks: list[Block] = []
    for j, b in enumerate(m.blocks):
        at = f"{where}, block {j}"
        if isinstance(b, ToolUse):
            uid, name = _id(b.id, "tool call id", at, path), _id(b.name, "tool name", at, path)
            b = b if uid is b.id and name is b.name else replace(b, id=uid, name=name)
        elif isinstance(b, ToolResult):
            uid = _id(b.tool_use_id, "tool_use_id", at, path)
            b = b if uid is b.tool_use_id else replace(b, tool_use_id=uid)
        elif isinstance(b, Image) and not _count_ok(b.size_bytes):
            b = replace(b, size_bytes=_bad_count("size_bytes", b.size_bytes, 0, 0, path=path, line=None, at=at))
        blocks.append(b)
    if any(x is not y for x, y in zip(blocks, m.blocks, strict=True)):
        changes["blocks"] = tuple(blocks)
    return replace(m, **changes) if changes else m


def _check_values(trace: Trace, path: PathLike) -> Trace:
    """Every number and id of a trace in range (``check_trace``'s second half)."""
    changes: dict[str, Any] = {}
    for name, optional in (("id", False), ("agent", False), ("model", True), ("source", True)):
        value = getattr(trace, name)
        new = _id(value, name, "trace header", path, optional=optional)
        if new is not value:
            changes[name] = new
    messages = [_check_message(m, i, path) for i, m in enumerate(trace.messages)]
    if any(x is not y for x, y in zip(messages, trace.messages, strict=True)):
        changes["messages"] = tuple(messages)
    compactions = []
    for k, c in enumerate(trace.compactions):
        at = f"compaction {k}"
        if not _count_ok(c.message_index):
            raise TraceError(f"message_index is {_show(c.message_index)}: expected a message position",
                             **_where(path, None), at=at)
        for name in ("trigger", "summary"):
            value = getattr(c, name)
            if not isinstance(value, str):
                _repair(f"compaction {name} not text (made text)", f"{name} is {_show(value)}: expected text",
                        path=path, line=None, at=at)
                c = replace(c, **{name: "" if value is None else str(value)})
        if c.pre_tokens is not None and not _count_ok(c.pre_tokens):
            c = replace(c, pre_tokens=_bad_count("pre_tokens", c.pre_tokens, 0, None, path=path, line=None,
                                                 at=f"compaction {k}"))
        compactions.append(c)
    if any(x is not y for x, y in zip(compactions, trace.compactions, strict=True)):
        changes["compactions"] = tuple(compactions)
    return replace(trace, **changes) if changes else trace


class Skips:
    """A counter of bad records skipped in lenient mode (a mutable box passed into generators)."""

    def __init__(self) -> None:
        self.count = 0

    def __int__(self) -> int:
        return self.count


def iter_jsonl(path: str | Path, lenient: bool, skips: Skips | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line of a JSONL file.

    A line that is not a JSON object raises TraceError(path, line); with ``lenient`` it is
    skipped and counted in ``skips``. Bad text (invalid UTF-8, lone surrogates, NUL) is an error,
    or with --lenient (``checking``) a counted repair; a line nested past MAX_DEPTH is a bad line.
    """
    yield from jsonl_records(enumerate(read_bytes(path).split(b"\n"), start=1), path, lenient, skips)


def jsonl_records(lines: Iterable[tuple[int, bytes]], path: str | Path, lenient: bool,
                  skips: Skips | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """``iter_jsonl``'s rules over (line number, raw line) pairs from any source (a whole file's bytes,
    or a file read line by line so that nothing holds it whole)."""
    for lineno, raw in lines:
        if not raw.strip():
            continue
        try:
            obj = loads(raw, path=path, line=lineno, what="JSON record", lenient=lenient)
            if not isinstance(obj, dict):
                raise TraceError(f"bad JSON record (expected a JSON object, got {type(obj).__name__})",
                                 path=str(path), line=lineno)
        except TraceError:
            if lenient:
                if skips is not None:
                    skips.count += 1
                continue
            raise
        yield lineno, obj


def read_json(path: str | Path) -> Any:
    """Parse a whole JSON file; errors name the file and the line or the record path."""
    return loads(read_bytes(path), path=path)


def first_json_line(head: str) -> dict[str, Any] | None:
    """The first non-blank line of a file head as a JSON object, or None (for sniffing)."""
    for line in head.split("\n"):
        if line.strip():
            obj = sniff_json(line)
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


def get_int(d: Any, key: str, default: Any = _MISSING, *, path: PathLike = None, line: int | None = None,
            lo: int = 0) -> Any:
    """``d[key]`` as a count: a whole number in [lo, 2^53) (floats with integral values are accepted,
    bools and strings are not).

    Every importer reads token counts, sizes and windows through here, so this is the edge where a
    count of 1e300, 2^63 or -5 is refused (strict: a TraceError naming the file, line and field) or,
    under --lenient, repaired and counted: a negative count is set to ``lo``, one past 2^53 is dropped
    (the field's default, or ``lo`` when it has none). See traces.model.MAX_COUNT for why 2^53.
    """
    value = _get(d, key, (int, float), "an integer", default, path, line)
    if isinstance(value, float):
        if not value.is_integer():
            raise TraceError(f"field {key!r} should be an integer, got {value!r}", **_where(path, line))
        value = int(value)
    if value is default or lo <= value < MAX_COUNT:
        return value
    return _bad_count(key, value, lo, default, path=path, line=line)


def _show(value: Any) -> str:
    """A value for an error message, short whatever its size (a 300-digit int, a 5M-character id)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:24]}… ({len(text):,} characters)"


def _bad_count(key: str, value: Any, lo: int, default: Any, *, path: PathLike, line: int | None,
               at: str | None = None) -> Any:
    """A count out of range (or not a count): the strict error, or the lenient repair (counted)."""
    negative = isinstance(value, (int, float)) and not isinstance(value, bool) and value < lo
    kind = f"count below {lo} (set to {lo})" if negative else "count out of range (dropped)"
    _repair(kind, f"field {key!r} is {_show(value)}: a count is a whole number in [{lo}, 2^53)",
            path=path, line=line, at=at)
    if negative or default is _MISSING:
        return lo
    return default


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


def base64_image(media: str, data: Any) -> Image:
    """An image given as base64 ``data`` (anything else: size unknown, 0), sized as its decoded bytes."""
    return Image(media, len(data) * 3 // 4 if isinstance(data, str) else 0)


def image_block(b: Mapping[str, Any]) -> Image:
    """An Anthropic image block as its media type and (decoded) size."""
    source = b.get("source") if isinstance(b.get("source"), Mapping) else {}
    media = source.get("media_type")
    return base64_image(media if isinstance(media, str) else "image/png", source.get("data"))


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


def repair_notes(where: object, filled: int, orphans: int) -> list[str]:
    """The notes every importer gives for what :func:`finish` repaired (nothing is mended silently)."""
    notes = []
    if filled:
        notes.append(f"{where}: {filled} tool call(s) without a recorded result got a flagged error result")
    if orphans:
        notes.append(f"{where}: {orphans} orphan tool result(s) kept as flagged text")
    return notes


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


def iter_jsonl_joined(path: str | Path, lenient: bool, skips: Skips | None = None,
                      joined: Skips | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """``iter_jsonl``, except that a line holding several JSON objects back to back (``{...}{...}``,
    as two writers appending to one file at once leave it) yields each of them, counted in ``joined``.

    Why not in ``iter_jsonl``: most formats never write such a line, and for them it is a bad line.
    A line that parses whole costs nothing extra; only a line that fails is split, and each piece
    goes through ``loads`` (nesting limit, text validation) like any record. A line that is not
    wholly JSON objects gets the error (or, lenient, the counted skip) that ``iter_jsonl`` gives.
    """
    decoder = json.JSONDecoder()

    def split(raw: bytes, lineno: int) -> list[Any] | None:
        try:
            text = decode(raw, path=path, line=lineno, lenient=lenient)
        except TraceError:
            return None
        if too_deep(text):
            return None
        spans, at, end = [], 0, len(text)
        while at < end:
            while at < end and text[at].isspace():
                at += 1
            if at == end:
                break
            if text[at] != "{":
                return None
            try:
                _, stop = decoder.raw_decode(text, at)
            except (ValueError, RecursionError):
                return None
            spans.append((at, stop))
            at = stop
        if len(spans) < 2:
            return None
        try:
            return [loads(text[a:b], path=path, line=lineno, what="JSON record", lenient=lenient) for a, b in spans]
        except TraceError:
            return None

    for lineno, raw in enumerate(read_bytes(path).split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            records = [loads(raw, path=path, line=lineno, what="JSON record", lenient=lenient)]
        except TraceError:
            pieces = split(raw, lineno)
            if pieces is None:
                if not lenient:
                    raise
                if skips is not None:
                    skips.count += 1
                continue
            records = pieces
            if joined is not None:
                joined.count += 1
        bad = next((r for r in records if not isinstance(r, dict)), None)
        if bad is not None:
            if not lenient:
                raise TraceError(f"bad JSON record (expected a JSON object, got {type(bad).__name__})",
                                 path=str(path), line=lineno)
            if skips is not None:
                skips.count += 1
            continue
        for record in records:
            yield lineno, record


def sqlite_read_only(path: str | Path) -> sqlite3.Connection:
    """An SQLite file opened to read it, writing nothing in its folder.

    Why not ``mode=ro`` alone: goose (sqlx) and OpenCode keep their databases in WAL mode, and a read-only
    connection to a WAL database with no ``-wal`` file beside it creates ``-wal`` and ``-shm`` files next
    to the user's database and leaves them there. With no ``-wal`` file the database file holds every
    committed change, so it is opened ``immutable`` (no locks, no side files). While the agent runs (a
    ``-wal`` file is there) it is opened ``mode=ro`` and reads the latest commits through that agent's
    own WAL index. The path is quoted, so ``?``, ``#`` or ``%`` in it cannot change the URI.
    """
    p = Path(path).absolute()
    uri = f"file:{urllib.parse.quote(str(p))}?mode=ro"
    if not Path(f"{p}-wal").exists():
        uri += "&immutable=1"
    return sqlite3.connect(uri, uri=True)
