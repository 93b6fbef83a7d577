"""Amp threads (ampcode.com, Sourcegraph): one JSON document per thread,
``~/.local/share/amp/threads/T-<uuid>.json`` (``$XDG_DATA_HOME/amp/threads``; the VS Code extension's older
copies under ``globalStorage/sourcegraph.amp/threads3/``).

Amp is closed source and documents no file format, so this reads the shape three independent public
readers of these files agree on, not Amp's own code:

- AprilNEA/BYOKEY @46dad830 crates/ampcode/src/types/thread.rs: ``{v, id, created (epoch ms), title?,
  agentMode?, messages, relationships?, env?, nextMessageId}``; a message ``{role: user|assistant|info,
  messageId, content, usage?, state?}``; blocks ``text``, ``thinking``, ``redacted_thinking``, ``tool_use {id,
  name, input}``, ``tool_result {toolUseID, run: {status: done|error|cancelled|rejected-by-user|
  blocked-on-user, result?, error?}}``; usage ``{model, inputTokens, outputTokens, cacheCreationInputTokens,
  cacheReadInputTokens, totalInputTokens}`` (its test: input 100 + creation 10 + read 5 = total 115, so
  ``inputTokens`` is the uncached part, Anthropic's meaning); relationships ``{threadID, type: handoff|fork|
  mention, role: parent|child}``.
- jonathan-kellerai/cross_agent_session_resumer @ec0eab96 src/providers/amp.rs: the storage paths, user
  timestamps in ``meta.sentAt`` (epoch ms), ``run.progress`` on results, and ``info`` messages holding a
  ``summary`` block (``summary: {type: "message", summary: text}`` or ``{type: "thread", thread: id}``).
- skillsynchq/txcript @31312813 src/harness/amp.rs: the same document is what ``amp threads export``
  prints; assistant timestamps in ``usage.timestamp``; ``image`` blocks ``{source: {type, mediaType,
  data}}``; ``env.initial.platform.clientVersion``; current CLIs keep threads on the server and no
  longer write ``threads/`` (export a thread to read it).

How sure: medium for messages, blocks, tool pairing and usage (three readers agree); low for the
``info`` summary as Amp's compaction record (one reader, and no thread with one was seen) and for what
text of a tool result the model gets (``run.result`` is an object for most tools: kept as its JSON).

Mapping: user/assistant messages as they are, tool_use → ToolUse, tool_result → ToolResult (a string
result as is, another result as JSON; error / cancelled / rejected-by-user flagged, with the error or
reason), thinking → Thinking, redacted_thinking → an empty Thinking, image → Image (size from the
base64 length); usage per assistant message (a call) with its model. An ``info`` message with a
``message`` summary is a user message with ``meta["summary"]`` and a RecordedCompaction there (trigger
"unrecorded": the file does not say whether the user or a threshold started it; ``pre_tokens`` is the
prompt of the call before, as recorded). Other info content, a ``thread`` summary (a pointer to
another thread), unknown roles and block types are counted in one note per file. ``clientVersion``
is ``meta["version"]``; ``relationships`` (handoff / fork links) go in ``meta``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from traces.formats import ReadResult
from traces.formats._common import (
    base64_image,
    finish,
    get_dict,
    get_int,
    get_list,
    get_str,
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

NAME = "amp"
AGENT = "amp"
THREAD_ID = re.compile(r'"id"\s*:\s*"T-[0-9A-Za-z-]{8,}"')
FAILED = {"error": "error", "cancelled": "cancelled", "rejected-by-user": "rejected by user"}
"""Run statuses that end a call without its result (flagged ``is_error``), and the text when no reason is given."""


def sniff_file(path: Path, head: str) -> str | None:
    text = head.lstrip("\ufeff \t\r\n")
    if not text.startswith("{"):
        return "not a JSON object"
    if THREAD_ID.search(text) and ('"messages"' in text or '"created"' in text):
        return None
    return "no Amp thread ({id: 'T-…', created, messages})"


def _result_text(run: dict[str, Any], where: dict[str, Any], passed: Counter[str]) -> tuple[str, bool]:
    status = get_str(run, "status", "", **where)
    if status == "done":
        result = run.get("result")
        if isinstance(result, str):
            return result, False
        if result is None and isinstance(run.get("progress"), str):
            return run["progress"], False
        return json.dumps(result, ensure_ascii=False, default=str), False
    if status in FAILED:
        error = run.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"], True
        if isinstance(error, str):
            return error, True
        reason = run.get("reason")
        return (reason if isinstance(reason, str) and reason else FAILED[status]), True
    passed[f"tool result(s) with run status {status[:40]!r} (kept as the run's JSON)"] += 1
    return json.dumps(run, ensure_ascii=False, default=str), False


def _blocks(content: list[Any], role: str, where: dict[str, Any], passed: Counter[str]) -> list[Block]:
    out: list[Block] = []
    for b in content:
        if not isinstance(b, dict):
            raise TraceError(f"content block is a {type(b).__name__}, not an object", **where)
        kind = get_str(b, "type", **where)
        if kind == "text":
            out.append(Text(get_str(b, "text", **where)))
        elif kind == "thinking":
            out.append(Thinking(get_str(b, "thinking", "", **where)))
        elif kind == "redacted_thinking":
            out.append(Thinking(""))
        elif kind == "tool_use":
            args = b.get("input")
            out.append(ToolUse(get_str(b, "id", **where), get_str(b, "name", **where),
                               args if isinstance(args, dict) else {} if args is None else {"input": args}))
        elif kind == "tool_result":
            text, error = _result_text(get_dict(b, "run", **where), where, passed)
            out.append(ToolResult(get_str(b, "toolUseID", **where), text, error))
        elif kind == "image":
            source = get_dict(b, "source", {}, **where)
            out.append(base64_image(get_str(source, "mediaType", "image/png", **where), source.get("data")))
        else:
            passed[f"{role} block(s) of type {kind[:40]!r}"] += 1
    return out


def _usage(usage: dict[str, Any], where: dict[str, Any]) -> Usage | None:
    g = lambda k: get_int(usage, k, 0, **where)  # noqa: E731
    counts = Usage(g("inputTokens"), g("outputTokens"), g("cacheReadInputTokens"), g("cacheCreationInputTokens"))
    return counts if counts.prompt_tokens or counts.output_tokens else None


def _summary(content: list[Any], where: dict[str, Any], passed: Counter[str]) -> str | None:
    """The text of an info message's ``message`` summary; other info content is counted."""
    text = None
    for b in content:
        if not isinstance(b, dict):
            raise TraceError(f"content block is a {type(b).__name__}, not an object", **where)
        summary = b.get("summary") if b.get("type") == "summary" else None
        if isinstance(summary, dict) and summary.get("type") == "message" and text is None:
            text = get_str(summary, "summary", **where)
        elif isinstance(summary, dict) and summary.get("type") == "thread":
            passed["info summaries pointing to another thread"] += 1
        else:
            passed[f"info block(s) of type {str(b.get('type'))[:40]!r}"] += 1
    return text


def read_file(path: Path, *, lenient: bool = False) -> ReadResult:
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict):
        raise TraceError("an Amp thread is a JSON object", path=str(path))
    top = {"path": str(path), "line": None}
    tid = get_str(data, "id", path.stem, **top)
    raw = get_list(data, "messages", **top)
    passed: Counter[str] = Counter()
    messages: list[Message] = []
    compactions: list[RecordedCompaction] = []
    models: Counter[str] = Counter()
    skipped = 0
    last_prompt: int | None = None
    for i, m in enumerate(raw):
        where = {"path": f"{path}: messages[{i}]", "line": None}
        try:
            if not isinstance(m, dict):
                raise TraceError(f"message is a {type(m).__name__}, not an object", **where)
            role = get_str(m, "role", **where)
            content = m.get("content")
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            elif not isinstance(content, list):
                content = get_list(m, "content", [], **where)
            mid = m.get("messageId")
            ident = str(mid) if isinstance(mid, (int, str)) and not isinstance(mid, bool) else None
            if role == "info":
                text = _summary(content, where, passed)
                if text is not None:
                    compactions.append(RecordedCompaction(len(messages), "unrecorded", last_prompt, text))
                    messages.append(Message("user", (Text(text),), id=ident, meta={"summary": True}))
                continue
            if role not in ("user", "assistant"):
                passed[f"message(s) with role {role[:40]!r}"] += 1
                continue
            blocks = _blocks(content, role, where, passed)
            if role == "user":
                sent = get_dict(m, "meta", {}, **where).get("sentAt")
                if blocks:
                    messages.append(Message("user", tuple(blocks), timestamp=ts_seconds(sent), id=ident))
                else:
                    passed["user message(s) with no model content"] += 1
                continue
            usage_obj = get_dict(m, "usage", {}, **where)
            usage = _usage(usage_obj, where) if usage_obj else None
            model = get_str(usage_obj, "model", None, **where) if usage_obj else None
            state = get_dict(m, "state", {}, **where)
            meta: dict[str, Any] = {"model": model} if model else {}
            if get_str(state, "type", "complete", **where) != "complete":
                meta["state"] = state.get("type")
                passed[f"assistant message(s) in state {str(state.get('type'))[:40]!r} (kept)"] += 1
            if model:
                models[model] += 1
            if usage is not None and usage.prompt_tokens:
                last_prompt = usage.prompt_tokens
            messages.append(Message("assistant", tuple(blocks), usage=usage, id=ident, meta=meta,
                                    timestamp=ts_seconds(usage_obj.get("timestamp")) if usage_obj else None))
        except TraceError:
            if not lenient:
                raise
            skipped += 1
    if not any(m.role == "assistant" for m in messages) and not any(m.role == "user" for m in messages) and not lenient:
        raise TraceError("no user or assistant message in an Amp thread", path=str(path))
    out, recorded, filled, orphans = finish(messages, compactions)
    env = data.get("env") if isinstance(data.get("env"), dict) else {}
    initial = env.get("initial") if isinstance(env.get("initial"), dict) else {}
    platform = initial.get("platform") if isinstance(initial.get("platform"), dict) else {}
    version = platform.get("clientVersion")
    meta: dict[str, Any] = {"thread_id": tid, "version": version if isinstance(version, str) else None}
    for key in ("title", "agentMode"):
        if isinstance(data.get(key), str):
            meta[key] = data[key]
    if isinstance(platform.get("client"), str):
        meta["client"] = platform["client"]
    links = [{k: r[k] for k in ("threadID", "type", "role") if isinstance(r.get(k), str)}
             for r in data.get("relationships") or [] if isinstance(r, dict)] \
        if isinstance(data.get("relationships"), list) else []
    if links:
        meta["relationships"] = links
    notes = repair_notes(path, filled, orphans)
    if passed:
        kinds = ", ".join(f"{n:,} {kind}" for kind, n in sorted(passed.items(), key=lambda kv: (-kv[1], kv[0])))
        notes.append(f"{path}: passed over or kept as noted: {kinds}")
    trace = Trace(tid, tuple(out), AGENT, models.most_common(1)[0][0] if models else None, str(path),
                  compactions=recorded, meta=meta)
    return ReadResult([trace], skipped, notes)
