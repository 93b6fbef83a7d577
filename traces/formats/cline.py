"""Cline: the VS Code extension's task files and the SDK/CLI session files, spec/formats.md §5.

Two shapes share Anthropic content blocks:
- SDK/CLI ``<id>.messages.json`` = ``{version, sessionId, agent, system_prompt?, messages[{id, role,
  ts, content, modelInfo, metrics{inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens},
  metadata?}]}``; a compaction rewrites the list and marks its first user message
  ``metadata.kind = "compaction" | "compaction_summary"`` (cline/cline @ 21cb8d2, sdk/packages/core).
- VS Code ``api_conversation_history.json`` = a bare list of messages with ``metrics.tokens
  {prompt, completion, cached}``; tool results are often *text* ("[read_file for 'a.py'] Result:")
  in the next user message, so they are linked to the calls by position and tool name. Usage
  missing there is taken from the sibling ``ui_messages.json`` (``say: "api_req_started"``).
Companion files (``ui_messages.json``, the SDK ``<id>.json`` metadata) are claimed and yield no
trace, so loading a whole task folder works.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from traces.formats import ReadResult
from traces.formats._common import (
    anthropic_blocks,
    finish,
    get_dict,
    get_int,
    get_list,
    get_str,
    read_json,
    sniff_json,
    ts_seconds,
)
from traces.model import (
    Block,
    Message,
    RecordedCompaction,
    Text,
    ToolResult,
    Trace,
    TraceError,
    Usage,
)

NAME = "cline"
AGENT = "cline"
RESULT_TEXT = re.compile(r"\[(?P<name>[\w.-]+)(?: for [^\]]*)?\] Result:")
NOTICE = "<SYSTEM_NOTICE>"


def sniff_file(path: Path, head: str) -> str | None:
    start = head.lstrip()[:4000]
    if start.startswith("{"):
        if '"sessionId"' in start and '"messages"' in start:
            return None
        if '"session_id"' in start and '"messages_path"' in start:
            return None
        return "JSON object without Cline session keys (sessionId + messages)"
    if start.startswith("["):
        if re.search(r'"type"\s*:\s*"(say|ask)"', start) and '"ts"' in start:
            return None  # ui_messages.json
        roles = set(re.findall(r'"role"\s*:\s*"(\w+)"', start))
        blocky = re.search(r'"content"\s*:\s*\[\s*\{\s*"type"', start)
        marked = re.search(r'"(modelInfo|metrics|conversationHistoryIndex)"|<task>|<environment_details>', start)
        if roles and roles <= {"user", "assistant"} and blocky and marked:
            return None
        return "JSON list that is not a Cline api_conversation_history (Anthropic blocks + Cline markers)"
    return "not a JSON object or list"


def _blocks(content: Any, path: Path, line: int) -> tuple[Block, ...]:
    if isinstance(content, list):  # SDK "file" blocks carry a file's text inline
        content = [{"type": "text", "text": f"<file path=\"{b.get('path', '')}\">\n{b['content']}\n</file>"}
                   if isinstance(b, dict) and b.get("type") == "file" and isinstance(b.get("content"), str) else b
                   for b in content]
    return anthropic_blocks(content, path=path, line=line)


def _sdk_usage(m: dict[str, Any], path: Path, line: int) -> Usage | None:
    """SDK metrics: inputTokens is the whole prompt (cache reads/writes included), as the fixture shows."""
    metrics = m.get("metrics")
    if not isinstance(metrics, dict):
        return None
    g = lambda k: get_int(metrics, k, 0, path=path, line=line)  # noqa: E731
    read, write = g("cacheReadTokens"), g("cacheWriteTokens")
    return Usage(max(g("inputTokens") - read - write, 0), g("outputTokens"), read, write)


def _vscode_usage(m: dict[str, Any], path: Path, line: int) -> Usage | None:
    """Legacy metrics.tokens: 'prompt' includes cached per the docs, but Anthropic providers log the
    uncached part (prompt 10, cached 9573): treat it as uncached when the provider is Anthropic or
    the number cannot be a total."""
    metrics = m.get("metrics")
    tokens = metrics.get("tokens") if isinstance(metrics, dict) else None
    if not isinstance(tokens, dict):
        return None
    g = lambda k: get_int(tokens, k, 0, path=path, line=line)  # noqa: E731
    prompt, cached = g("prompt"), g("cached")
    info = m.get("modelInfo") if isinstance(m.get("modelInfo"), dict) else {}
    anthropic = info.get("providerId") == "anthropic" or prompt < cached
    return Usage(prompt if anthropic else prompt - cached, g("completion"), cached, 0)


def _ui_usages(path: Path) -> list[Usage]:
    """Per-request usage from the sibling ui_messages.json (Anthropic semantics: tokensIn is uncached)."""
    ui = path.with_name("ui_messages.json")
    if not ui.is_file():
        return []
    try:
        items = sniff_json(ui.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return []
    out = []
    for it in items if isinstance(items, list) else []:
        if isinstance(it, dict) and it.get("say") == "api_req_started" and isinstance(it.get("text"), str):
            d = sniff_json(it["text"])
            if isinstance(d, dict):
                keys = ("tokensIn", "tokensOut", "cacheReads", "cacheWrites")
                n = {k: d[k] if isinstance(d.get(k), int) else 0 for k in keys}
                if n["tokensIn"] or n["tokensOut"]:
                    out.append(Usage(n["tokensIn"], n["tokensOut"], n["cacheReads"], n["cacheWrites"]))
    return out


def _link_text_results(messages: list[Message]) -> tuple[list[Message], int]:
    """Turn "[tool for 'x'] Result:" text blocks into tool results of the previous message's calls."""
    out = list(messages)
    linked = 0
    for i in range(len(out) - 1):
        calls, nxt = out[i].tool_uses, out[i + 1]
        if out[i].role != "assistant" or not calls or nxt.role != "user":
            continue
        pending = [u for u in calls if u.id not in {r.tool_use_id for r in nxt.tool_results}]
        results: list[Block] = []
        rest: list[Block] = []
        for b in nxt.blocks:
            m = RESULT_TEXT.match(b.text) if isinstance(b, Text) else None
            use = next((u for u in pending if m and u.name == m.group("name")), pending[0] if m and pending else None)
            if use is not None:
                pending.remove(use)
                results.append(ToolResult(use.id, b.text))  # type: ignore[union-attr]
                linked += 1
            else:
                rest.append(b)
        if results:
            out[i + 1] = nxt.with_blocks(tuple(results) + tuple(rest))
    return out, linked


def _trace(raw: list[Any], path: Path, *, sdk: bool, system: str | None, tid: str) -> tuple[Trace, list[str]]:
    messages: list[Message] = [Message.text_message("system", system)] if system else []
    compactions: list[RecordedCompaction] = []
    ui = [] if sdk else _ui_usages(path)
    n_answers = 0
    for i, m in enumerate(raw):
        line = i + 1  # position in the list: the best "line" a JSON array offers
        role = get_str(m, "role", path=path, line=line)
        if role not in ("user", "assistant"):
            raise TraceError(f"message {i}: unknown role {role!r}", path=str(path), line=line)
        blocks = _blocks(m.get("content"), path, line)
        meta: dict[str, Any] = {}
        info = get_dict(m, "modelInfo", {}, path=path, line=line)
        model = info.get("id") or info.get("modelId")
        if isinstance(model, str):
            meta["model"] = model
        md = get_dict(m, "metadata", {}, path=path, line=line)
        if md.get("compaction") == "preserved":
            meta["preserved"] = True
        if md.get("kind") in ("compaction", "compaction_summary"):
            meta["summary"] = True
            notices = [b.text for b in blocks if isinstance(b, Text) and NOTICE in b.text]
            summary = md.get("summary") if isinstance(md.get("summary"), str) else "\n".join(notices)
            before = md.get("tokensBefore")
            reason = str(md.get("reason") or "")
            compactions.append(RecordedCompaction(
                len(messages), "manual" if reason.startswith("manual") else "auto",
                before if isinstance(before, int) and not isinstance(before, bool) else None, summary))
        usage = (_sdk_usage if sdk else _vscode_usage)(m, path, line) if role == "assistant" else None
        if role == "assistant":
            if usage is None and n_answers < len(ui):
                usage = ui[n_answers]
            n_answers += 1
        messages.append(Message(role, blocks, usage=usage, timestamp=ts_seconds(m.get("ts")),
                                id=m.get("id") if isinstance(m.get("id"), str) else None, meta=meta))
    notes: list[str] = []
    messages, linked = _link_text_results(messages)
    messages, recorded, filled, orphans = finish(messages, compactions)
    for n, what in ((linked, "text tool result(s) linked to their calls by position"),
                    (filled, "tool call(s) without a recorded result got a flagged error result"),
                    (orphans, "orphan tool result(s) kept as flagged text")):
        if n:
            notes.append(f"{path}: {n} {what}")
    models = [m.meta["model"] for m in messages if m.role == "assistant" and "model" in m.meta]
    trace = Trace(tid, tuple(messages), AGENT, max(set(models), key=models.count) if models else None,
                  str(path), compactions=recorded, meta={"format": "sdk" if sdk else "vscode"})
    return trace, notes


def read_file(path: Path, *, lenient: bool = False) -> ReadResult:
    path = Path(path)
    data = read_json(path)
    if isinstance(data, dict) and "messages_path" in data and "messages" not in data:
        return ReadResult([], 0, [f"{path}: Cline session metadata; its messages file holds the trace"])
    if isinstance(data, list) and data and all(isinstance(d, dict) and d.get("type") in ("say", "ask") for d in data):
        return ReadResult([], 0, [f"{path}: Cline ui_messages; read with api_conversation_history.json"])
    if isinstance(data, dict):
        raw = get_list(data, "messages", path=path)
        system = get_str(data, "system_prompt", None, path=path)
        tid = get_str(data, "sessionId", path.stem, path=path)
        sdk = True
    elif isinstance(data, list):
        raw, system, tid, sdk = data, None, path.parent.name or path.stem, False
    else:
        raise TraceError("a Cline file holds a JSON object or list", path=str(path))
    skipped = 0
    if lenient:  # drop bad messages one by one, keeping the rest
        kept = []
        for m in raw:
            try:
                _trace([m], path, sdk=sdk, system=None, tid=tid)
                kept.append(m)
            except TraceError:
                skipped += 1
        raw = kept
    trace, notes = _trace(raw, path, sdk=sdk, system=system, tid=tid)
    return ReadResult([trace], skipped, notes)
