"""Plain chat logs: OpenAI chat-completions or Anthropic Messages message lists (spec/formats.md §1, §2).

Why: many tools (and the Hugging Face trajectory datasets) store a session as the bare request
body, ``[{role, content}, ...]`` or ``{"messages": [...]}``. One conversation per JSON file, or
per JSONL line; a JSONL file whose lines are single messages is one conversation. This module
also holds the OpenAI converter that the SWE-agent, mini-swe-agent and dataset importers share.
It is sniffed last: it is the least specific format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from traces.formats import ReadResult
from traces.formats._common import (
    NOT_JSON,
    anthropic_blocks,
    decode,
    embedded_json,
    fill_missing_results,
    get_dict,
    get_int,
    get_list,
    get_str,
    loads,
    read_bytes,
    repair_notes,
    sniff_json,
    ts_seconds,
)
from traces.model import (
    Block,
    Image,
    Message,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Trace,
    TraceError,
    Usage,
    flag_orphan_results,
)

NAME = "chat"
OPENAI, ANTHROPIC = "openai-chat", "anthropic-messages"
SYSTEM_ROLES = ("system", "developer")
ANTHROPIC_ONLY = ("tool_use", "tool_result", "thinking", "redacted_thinking")
_ROLE = r'"role"\s*:\s*"(?:system|developer|user|assistant|tool)"'


class Ids:
    """Synthesises stable tool-call ids ("call-1", "call-2", ...) for formats that have none."""

    def __init__(self) -> None:
        self.n = 0

    def next(self) -> str:
        self.n += 1
        return f"call-{self.n}"


def _where(path: Any, line: int | None) -> dict[str, Any]:
    return {"path": None if path is None else str(path), "line": line}


def openai_usage(u: Any, *, path: Any = None, line: int | None = None) -> Usage | None:
    """OpenAI/litellm usage (cached ⊂ prompt) as our Usage (input = the uncached part)."""
    if not isinstance(u, dict) or "prompt_tokens" not in u:
        return None
    prompt = get_int(u, "prompt_tokens", 0, path=path, line=line)
    details = u.get("prompt_tokens_details") if isinstance(u.get("prompt_tokens_details"), dict) else {}
    cached = get_int(details, "cached_tokens", 0, path=path, line=line) or \
        get_int(u, "cache_read_input_tokens", 0, path=path, line=line)
    written = get_int(u, "cache_creation_input_tokens", 0, path=path, line=line)
    return Usage(max(prompt - cached - written, 0), get_int(u, "completion_tokens", 0, path=path, line=line),
                 cached, written)


def anthropic_usage(u: Any, *, path: Any = None, line: int | None = None) -> Usage | None:
    if not isinstance(u, dict) or "input_tokens" not in u:
        return None
    g = lambda k: get_int(u, k, 0, path=path, line=line)  # noqa: E731
    return Usage(g("input_tokens"), g("output_tokens"), g("cache_read_input_tokens"), g("cache_creation_input_tokens"))


def any_usage(u: Any, *, path: Any = None, line: int | None = None) -> Usage | None:
    return openai_usage(u, path=path, line=line) or anthropic_usage(u, path=path, line=line)


def image_from_url(url: Any) -> Image:
    """A data-URL image as its media type and decoded size (a remote URL has size 0)."""
    m = re.match(r"data:([\w/+.-]+);base64,", url) if isinstance(url, str) else None
    if m is None:
        return Image()
    return Image(m.group(1), (len(url) - m.end()) * 3 // 4)


def openai_content(content: Any, *, path: Any = None, line: int | None = None) -> tuple[Block, ...]:
    """OpenAI ``content`` (a string, null, or a list of parts) as blocks."""
    if content is None:
        return ()
    if isinstance(content, str):
        return (Text(content),) if content else ()
    if not isinstance(content, list):
        raise TraceError(f"message content should be a string or a list, got {type(content).__name__}",
                         **_where(path, line))
    out: list[Block] = []
    for part in content:
        if isinstance(part, str):
            out.append(Text(part))
        elif not isinstance(part, dict):
            raise TraceError(f"content part should be an object, got {type(part).__name__}", **_where(path, line))
        elif isinstance(part.get("text"), str):
            out.append(Text(part["text"]))
        elif part.get("type") == "image_url":
            ref = part.get("image_url")
            out.append(image_from_url(ref.get("url") if isinstance(ref, dict) else ref))
        else:
            out.append(Text(json.dumps(part, ensure_ascii=False, sort_keys=True, default=str)))
    return tuple(out)


def parse_arguments(raw: Any, *, path: Any = None, line: int | None = None) -> dict[str, Any]:
    """Tool-call arguments (a JSON string, usually) as a dict; malformed JSON is kept as text."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        value = embedded_json(raw, path=path, line=line, at="arguments") if raw.strip() else {}
        if value is NOT_JSON:
            return {"arguments": raw}
        return value if isinstance(value, dict) else {"arguments": value}
    return {} if raw is None else {"arguments": raw}


def _tool_use(call: Any, ids: Ids, path: Any, line: int | None) -> ToolUse:
    fn = get_dict(call, "function", path=path, line=line)
    call_id = get_str(call, "id", "", path=path, line=line) or ids.next()
    return ToolUse(call_id, get_str(fn, "name", path=path, line=line),
                   parse_arguments(fn.get("arguments"), path=path, line=line))


def openai_messages(raw: Any, *, path: Any = None, line: int | None = None, ids: Ids | None = None) -> list[Message]:
    """OpenAI chat messages as ours: leading system/developer messages become one system message,
    ``tool`` messages become tool results (consecutive ones share one user message), and a result
    without an id answers the oldest unanswered call. SWE-agent's plural ``tool_call_ids`` is read too.
    """
    if not isinstance(raw, list):
        raise TraceError(f"messages should be a list, got {type(raw).__name__}", **_where(path, line))
    ids = ids or Ids()
    out: list[Message] = []
    unanswered: list[str] = []
    for m in raw:
        role = get_str(m, "role", path=path, line=line)
        ts = ts_seconds(m.get("timestamp"))
        if role in SYSTEM_ROLES:
            blocks = openai_content(m.get("content"), path=path, line=line)
            if all(x.role == "system" for x in out):
                text = "\n\n".join(t for t in (out[0].text if out else "", Message("system", blocks).text) if t)
                out[:1] = [Message.text_message("system", text)]
            else:
                out.append(Message("user", blocks or (Text(""),), timestamp=ts, meta={"role": role}))
        elif role == "user":
            out.append(Message("user", openai_content(m.get("content"), path=path, line=line) or (Text(""),),
                               timestamp=ts))
        elif role == "assistant":
            blocks: list[Block] = []
            if isinstance(m.get("reasoning_content"), str) and m["reasoning_content"]:
                blocks.append(Thinking(m["reasoning_content"]))
            blocks += openai_content(m.get("content"), path=path, line=line)
            calls = get_list(m, "tool_calls", [], path=path, line=line)
            uses = [_tool_use(c, ids, path, line) for c in calls]
            if isinstance(m.get("function_call"), dict):
                uses.append(_tool_use({"function": m["function_call"]}, ids, path, line))
            unanswered = [u.id for u in uses]
            out.append(Message("assistant", tuple(blocks + uses) or (Text(""),), timestamp=ts,
                               usage=any_usage(m.get("usage"), path=path, line=line)))
        elif role in ("tool", "function"):
            call_ids = m.get("tool_call_ids") if isinstance(m.get("tool_call_ids"), list) else [m.get("tool_call_id")]
            call_ids = [c for c in call_ids if isinstance(c, str) and c] or \
                [unanswered[0] if unanswered else ids.next()]
            text = "\n".join(b.text if isinstance(b, Text) else f"[image {b.media_type}]"  # type: ignore[union-attr]
                             for b in openai_content(m.get("content"), path=path, line=line))
            results = tuple(ToolResult(c, text if i == 0 else "") for i, c in enumerate(call_ids))
            unanswered = [u for u in unanswered if u not in call_ids]
            if out and out[-1].is_tool_result:
                out[-1] = Message("user", out[-1].blocks + results, timestamp=out[-1].timestamp)
            else:
                out.append(Message("user", results, timestamp=ts))
        else:
            raise TraceError(f"unknown message role {role!r}", **_where(path, line))
    return out


def anthropic_messages(raw: Any, system: Any = None, *, path: Any = None, line: int | None = None) -> list[Message]:
    """Anthropic Messages (top-level ``system`` plus user/assistant block lists) as ours."""
    if not isinstance(raw, list):
        raise TraceError(f"messages should be a list, got {type(raw).__name__}", **_where(path, line))
    out: list[Message] = []
    if system:
        out.append(Message("system", anthropic_blocks(system, path=path, line=line)))
    for m in raw:
        role = get_str(m, "role", path=path, line=line)
        if role not in ("system", "user", "assistant"):
            raise TraceError(f"unknown message role {role!r}", **_where(path, line))
        blocks = anthropic_blocks(m.get("content", ""), path=path, line=line)
        if role == "system" and out:
            out.append(Message("user", blocks, meta={"role": "system"}))
            continue
        out.append(Message(role, blocks or (Text(""),), timestamp=ts_seconds(m.get("timestamp")),
                           usage=any_usage(m.get("usage"), path=path, line=line) if role == "assistant" else None))
    return out


def is_anthropic(messages: list[Any], holder: Any = None) -> bool:
    """Anthropic when there is a top-level system or any Anthropic-only block."""
    if isinstance(holder, dict) and "system" in holder:
        return True
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        for b in content if isinstance(content, list) else ():
            kind = b.get("type") if isinstance(b, dict) else None
            if kind in ANTHROPIC_ONLY or (kind == "image" and "source" in b):
                return True
    return False


def conversation(obj: Any, path: Path, line: int | None, name: str) -> Trace:
    """One conversation (a message list, or an object holding ``messages``) as a Trace."""
    holder = obj if isinstance(obj, dict) else None
    raw = get_list(obj, "messages", path=path, line=line) if holder is not None else obj
    if not isinstance(raw, list):
        raise TraceError(f"a conversation is a list of messages, got {type(raw).__name__}", path=str(path), line=line)
    if is_anthropic(raw, holder):
        agent, messages = ANTHROPIC, anthropic_messages(raw, holder.get("system") if holder else None,
                                                       path=path, line=line)
    else:
        agent, messages = OPENAI, openai_messages(raw, path=path, line=line)
    model = holder.get("model") if holder else None
    trace_id = holder.get("id") if holder and isinstance(holder.get("id"), str) else name
    return Trace(id=trace_id, messages=tuple(messages), agent=agent, model=model if isinstance(model, str) else None,
                 source=str(path))


def finish(messages: list[Message], where: str, notes: list[str]) -> tuple[Message, ...]:
    """Answer unanswered calls with a flagged error and flag orphan results, noting both."""
    messages, filled = fill_missing_results(messages)
    messages, flagged = flag_orphan_results(messages)
    notes += repair_notes(where, filled, flagged)
    return tuple(messages)


def _lines(text: str) -> Iterator[tuple[int, str]]:
    for n, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield n, line


def _units(path: Path, text: str, lenient: bool) -> tuple[list[tuple[int | None, Any]], int]:
    """The file as (line, conversation) units, and how many bad lines were skipped."""
    numbered = list(_lines(text))
    if len(numbered) > 1:
        jsonl = sniff_json(numbered[0][1]) is not None
        if jsonl:
            units, bad = [], 0
            for n, line in numbered:
                try:
                    units.append((n, loads(line, path=path, line=n, what="JSON line", lenient=lenient)))
                except TraceError:
                    if not lenient:
                        raise
                    bad += 1
            if units and all(isinstance(o, dict) and "role" in o and "messages" not in o for _, o in units):
                return [(units[0][0], [o for _, o in units])], bad
            return units, bad
    obj = loads(text, path=path)
    if isinstance(obj, list) and obj and all(isinstance(o, (dict, list)) and (isinstance(o, list) or "messages" in o)
                                             for o in obj):
        return [(None, o) for o in obj], 0
    return [(None, obj)], 0


def sniff_file(path: Path, head: str) -> str | None:
    text = head.lstrip("\ufeff \t\r\n")
    if not text.startswith(("[", "{")):
        return "not JSON (does not start with [ or {)"
    obj = sniff_json(text.split("\n", 1)[0])
    if isinstance(obj, dict) and ("messages" in obj or ("role" in obj and "content" in obj)):
        return None
    if isinstance(obj, list) and obj and isinstance(obj[0], dict) and "role" in obj[0]:
        return None
    if text.startswith("[") and re.match(r"\[\s*\{[^{}]{0,4000}?" + _ROLE, text):
        return None
    if text.startswith("{") and re.search(r'"messages"\s*:\s*\[\s*\{', text) and re.search(_ROLE, text):
        return None
    return "no chat message list (a list of {role, content} or an object with \"messages\")"


def read_file(path: Path, *, lenient: bool = False) -> ReadResult:
    path = Path(path)
    text = decode(read_bytes(path), path=path, lenient=lenient)
    units, skipped = _units(path, text, lenient)
    result = ReadResult([], skipped)
    for i, (line, obj) in enumerate(units):
        name = path.stem if len(units) == 1 else f"{path.stem}#{i + 1}"
        try:
            trace = conversation(obj, path, line, name)
        except TraceError:
            if not lenient:
                raise
            result.skipped += 1
            continue
        where = f"{path}:{line}" if line else str(path)
        result.traces.append(replace(trace, messages=finish(list(trace.messages), where, result.notes)))
    if not result.traces and not lenient:
        raise TraceError("no conversation found", path=str(path))
    return result
