"""Codex CLI rollout JSONL (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``), spec/formats.md §4.

Each line is ``{timestamp, type, payload}``. The model context is the ``response_item`` lines
(Responses-API items); ``event_msg`` lines only give usage (``token_count``) and markers. One API
call writes several items (reasoning, messages, calls) and then one ``token_count``, so a fresh
cumulative total closes an assistant message and carries its ``last_token_usage`` (OpenAI
semantics, cached ⊂ input, converted to ours). A ``compacted`` line (+ ``context_compacted``)
becomes a RecordedCompaction, and its summary (when the rollout holds it) a summary message; see
``_summary`` for where Codex keeps it. Strings redacted as ``[REDACTED_… len=N sha=…]`` become N
characters of filler so token counts stay realistic. Each answer's meta keeps what Codex's
auto-compaction count needs beyond the usage (context_manager/history.rs
``get_non_last_reasoning_items_tokens``): ``reasoning_encrypted_lengths`` (each reasoning item's
``encrypted_content`` length, a ``len=N`` marker's N), ``reasoning_encrypted_unsized`` (items whose
blob a bare ``REDACTED`` replaced) and the call's ``reasoning_output_tokens``.
Source: openai/codex codex-rs/protocol (RolloutItem, ResponseItem); checked on cli 0.104.0-alpha.1
and 0.77.0 files (madshn/localpush @ 219b539, simonw/claude-code-transcripts @ 871966d), and on
0.119, 0.125 and 0.142 files stored by the Entire CLI (../shared/traces MANIFEST §9, §10).

Sub-agents: a rollout forked from another thread (a spawned sub-agent given its parent's history)
begins with its own ``session_meta`` and then holds the parent's rollout items copied in as they
were, the parent's ``session_meta`` among them (openai/codex codex-rs/core/src/agent/control.rs,
the fork's rollout filter keeps ``RolloutItem::SessionMeta(_) => true``; the session's
``InitialHistory::Forked`` branch persists the forked items "as-is" after the recorder has written
the new thread's own meta). So the first ``session_meta`` names the trace; a later one with
another id is kept in ``meta["forked_from"]`` and counted in a note. Fairly sure (source read, no
real forked rollout seen).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from traces.formats import ReadResult
from traces.formats._common import (
    Skips,
    embedded_json,
    finish,
    get_dict,
    get_int,
    get_list,
    get_str,
    iter_jsonl_joined,
    sniff_json,
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

NAME = "codex"
AGENT = "codex"
LINE_TYPES = ("session_meta", "response_item", "compacted", "turn_context", "event_msg")
REDACTED = re.compile(r"\[REDACTED_[A-Z_]+ len=(\d+)(?: sha=([0-9a-f]+))?\]")
FILLER = ("def load_config(path: str) -> dict[str, Any]:\n    data = json.loads(Path(path).read_text())  # see #4127\n"
          "    return {k: v for k, v in data.items() if v is not None}\n")
"""Stands in for redacted text: code-like, 3.2 characters a cl100k token. Calibrated on the recorded
sessions themselves (bench.scoring.fidelity.usage_ratio: the provider's prompt growth between calls over our
count of the same items): with it the three Codex sessions with enough steps read 0.94-1.10, as
o200k against cl100k on code should; English filler (lorem ipsum, 6.5 characters a token) read
1.84-2.12, half the tokens the sessions really had."""
OUTPUT_SIDE = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
SUMMARY_HEAD = "Another language model started to solve this problem and produced a summary"
"""How a local compaction's summary message begins: Codex writes ``SUMMARY_PREFIX + "\n" + summary``
(openai/codex codex-rs/core/templates/compact/summary_prefix.md; compact.rs ``is_summary_message``)."""
UNSIZED = re.compile(r"\[?REDACTED\]?", re.IGNORECASE)
"""An encrypted item whose content a sanitiser replaced by a bare marker (the Entire CLI writes
``"REDACTED"``): the item was there, its size is lost."""
UNSIZED_LENGTH = -1
"""``encrypted_length`` of an encrypted item whose size a sanitiser removed."""


def encrypted_length(value: Any) -> int | None:
    """Length of a reasoning item's ``encrypted_content`` as Codex sees it: None when there is none
    (Codex counts only reasoning items that carry one), the recorded length (a real blob, or the
    ``len=N`` of a ``[REDACTED_… len=N]`` marker), or ``UNSIZED_LENGTH`` when a bare ``REDACTED``
    marker replaced it (the Entire CLI's copies)."""
    if not isinstance(value, str):
        return None
    m = REDACTED.fullmatch(value)
    if m is not None:
        return int(m.group(1))
    if not value.strip() or UNSIZED.fullmatch(value.strip()):
        return UNSIZED_LENGTH
    return len(value)


def sniff_file(path: Path, head: str) -> str | None:
    lines = [line for line in head.split("\n") if line.strip()][:2]
    first = lines[0] if lines else ""
    rec = sniff_json(first)
    if rec is None:
        if re.match(r'\{"timestamp":"[^"]*","type":"(session_meta|response_item)","payload":\{', first):
            return None
        # a garbage first line is the reader's to report, by line, when the next one is Codex's
        rec = sniff_json(lines[1]) if len(lines) > 1 else None
        if rec is None:
            return "first line is not JSON"
    if isinstance(rec, dict) and rec.get("type") in LINE_TYPES and isinstance(rec.get("payload"), dict):
        return None
    return "first line is not a Codex rollout item ({timestamp, type: session_meta|…, payload})"


class _Filler:
    """Replaces redaction markers by filler of the original length, counting them."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, s: str) -> str:
        m = REDACTED.fullmatch(s)
        if m is None:
            return s
        self.count += 1
        return filler(int(m.group(1)), m.group(2) or "")


def filler(n: int, sha: str = "") -> str:
    """n characters of ``FILLER``, led by the hash when known, so equal originals stay equal (dedup
    strategies still see the duplicates) and different ones differ."""
    text = (f"{sha} " if sha else "") + FILLER * (n // len(FILLER) + 1)
    return text[:n]


def _image(url: str, fill: _Filler) -> Image:
    m = REDACTED.fullmatch(url)
    if m is not None:
        fill.count += 1
        return Image("image/png", int(m.group(1)) * 3 // 4)
    d = re.match(r"data:([\w/+.-]+);base64,", url)
    return Image(d.group(1), (len(url) - d.end()) * 3 // 4) if d else Image("image/png", 0)


def _content(payload: dict[str, Any], fill: _Filler, path: Path, line: int) -> tuple[Block, ...]:
    content = payload.get("content")
    if isinstance(content, str):
        return (Text(fill(content)),)
    blocks: list[Block] = []
    for part in get_list(payload, "content", [], path=path, line=line):
        kind = get_str(part, "type", path=path, line=line)
        if kind in ("input_image", "image"):
            blocks.append(_image(get_str(part, "image_url", "", path=path, line=line), fill))
        elif kind == "refusal":
            blocks.append(Text(fill(get_str(part, "refusal", "", path=path, line=line))))
        else:
            blocks.append(Text(fill(get_str(part, "text", "", path=path, line=line))))
    return tuple(blocks)


def _output(value: Any, fill: _Filler) -> str:
    if isinstance(value, str):
        return fill(value)
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return fill(value["content"])
    if isinstance(value, list):
        return "\n".join(fill(p["text"]) if isinstance(p, dict) and isinstance(p.get("text"), str)
                         else json.dumps(p, default=str) for p in value)
    return "" if value is None else json.dumps(value, default=str)


def _call(p: dict[str, Any], kind: str, fill: _Filler, path: Path, line: int) -> Block:
    """An assistant-side item as one block."""
    if kind == "reasoning":
        parts = get_list(p, "summary", [], path=path, line=line) or get_list(p, "content", [], path=path, line=line) \
            or []
        texts = [fill(s["text"]) for s in parts if isinstance(s, dict) and isinstance(s.get("text"), str)]
        return Thinking("\n".join(texts))
    if kind == "web_search_call":
        action = p.get("action") if isinstance(p.get("action"), dict) else {}
        query = action.get("query") if isinstance(action.get("query"), str) else ""
        return Text(f"[web search: {fill(query)}]")
    call_id = get_str(p, "call_id", None, path=path, line=line) or get_str(p, "id", path=path, line=line)
    if kind == "local_shell_call":
        return ToolUse(call_id, "local_shell", get_dict(p, "action", {}, path=path, line=line))
    name = get_str(p, "name", path=path, line=line)
    m = REDACTED.fullmatch(name)
    name = f"redacted_{m.group(2) or m.group(1)}" if m else name
    if kind == "custom_tool_call":
        return ToolUse(call_id, name, {"input": fill(get_str(p, "input", "", path=path, line=line))})
    raw = get_str(p, "arguments", "", path=path, line=line)
    args = embedded_json(raw, path=path, line=line, at="payload.arguments") if raw.strip() else {}
    return ToolUse(call_id, name, args if isinstance(args, dict) else {"arguments": fill(raw)})


def _usage(info: dict[str, Any], prev_total: dict[str, Any] | None, path: Path, line: int) -> Usage:
    last = info.get("last_token_usage")
    if not isinstance(last, dict):  # only cumulative numbers: diff consecutive snapshots
        total = get_dict(info, "total_token_usage", path=path, line=line)
        last = {k: get_int(total, k, 0, path=path, line=line) - get_int(prev_total or {}, k, 0, path=path, line=line)
                for k in ("input_tokens", "cached_input_tokens", "output_tokens")}
    g = lambda k: get_int(last, k, 0, path=path, line=line)  # noqa: E731
    cached = g("cached_input_tokens")
    return Usage(max(g("input_tokens") - cached, 0), g("output_tokens"), cached, 0)


def _reasoning_tokens(info: dict[str, Any], prev_total: dict[str, Any] | None) -> int | None:
    """The call's ``reasoning_output_tokens`` (already inside its output tokens), None when not reported."""
    last = info.get("last_token_usage")
    if isinstance(last, dict):
        value = last.get("reasoning_output_tokens")
        return value if isinstance(value, int) and value >= 0 else None
    total = info.get("total_token_usage")
    if not isinstance(total, dict) or not isinstance(total.get("reasoning_output_tokens"), int):
        return None
    before = (prev_total or {}).get("reasoning_output_tokens")
    return max(total["reasoning_output_tokens"] - (before if isinstance(before, int) else 0), 0)


class _Builder:
    """Accumulates items into messages: assistant-side items until a usage snapshot, results together."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.answer: list[Block] = []
        self.results: list[Block] = []
        self.ts: float | None = None
        self.model: str | None = None
        self.window: int | None = None
        """The model_context_window Codex reported (token_count info): the window it compacts against."""
        self.unpriced: int | None = None
        """The last answer closed before its usage came (0.142 writes a call's tool outputs before the
        call's ``token_count``: the tool ran while the response streamed), waiting for it."""
        self.encrypted: list[int] = []
        """``encrypted_length`` of each reasoning item of the open answer that carries encrypted content."""
        self.reasoning_tokens: int | None = None
        """The ``reasoning_output_tokens`` of the usage snapshot being given out."""

    def usage_meta(self) -> dict[str, Any]:
        """What Codex's trigger needs of a call besides its usage: the window it compacted against and
        the reasoning output it reported (the stand-in for reasoning blobs whose size is lost)."""
        meta: dict[str, Any] = {"context_window": self.window} if self.window else {}
        if self.reasoning_tokens is not None:
            meta["reasoning_output_tokens"] = self.reasoning_tokens
        return meta

    def close_answer(self, usage: Usage | None = None) -> None:
        if self.answer:
            meta: dict[str, Any] = {"model": self.model} if self.model else {}
            meta.update(self.usage_meta() if usage is not None else
                        ({"context_window": self.window} if self.window else {}))
            # Codex estimates every encrypted reasoning item it holds (context_manager/history.rs
            # get_non_last_reasoning_items_tokens): keep each one's size, or that it had one.
            sized = [n for n in self.encrypted if n != UNSIZED_LENGTH]
            if sized:
                meta["reasoning_encrypted_lengths"] = sized
            if len(sized) < len(self.encrypted):
                meta["reasoning_encrypted_unsized"] = len(self.encrypted) - len(sized)
            self.unpriced = None if usage is not None else len(self.messages)
            self.messages.append(Message("assistant", tuple(self.answer), usage=usage, timestamp=self.ts, meta=meta))
            self.answer, self.encrypted = [], []

    def price(self, usage: Usage) -> None:
        """Give a fresh usage snapshot to the answer it belongs to: the open one, else the last one
        closed without usage (its outputs came first); a snapshot with neither is a call with no
        recorded items, left out."""
        if self.answer:
            self.close_answer(usage)
        elif self.unpriced is not None:
            m = self.messages[self.unpriced]
            self.messages[self.unpriced] = replace(m, usage=usage, meta={**m.meta, **self.usage_meta()})
            self.unpriced = None

    def close_results(self) -> None:
        if self.results:
            self.messages.append(Message("user", tuple(self.results), timestamp=self.ts))
            self.results = []

    def close(self) -> None:
        self.close_answer()
        self.close_results()


def _message_text(item: Any) -> str | None:
    """The text of a replacement-history user message, or None when the item is not one."""
    if not (isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "user"):
        return None
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = [c["text"] for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)] \
        if isinstance(content, list) else []
    return "\n".join(parts)


def _summary(p: dict[str, Any], history: list[Any], fill: _Filler, path: Path, line: int) -> tuple[str, str]:
    """(summary text, where it came from) of a ``compacted`` record; ("", why) when it is not recorded.

    After a compaction Codex's context *is* the record's ``replacement_history`` when there is one
    (openai/codex@023cedaa codex-rs/core/src/codex/rollout_reconstruction.rs: ``history.replace``;
    only without one is it rebuilt from ``message`` by ``build_compacted_history``). Of that
    history, the kept user and developer messages are already in the trace; what is new is the
    summary, found as:
    - ``message``: a local compaction before mid-2026 (compact.rs@0100b103 ``run_compact_task_inner``
      writes the prefixed summary there);
    - a user message in the history that begins with ``SUMMARY_HEAD``: a local compaction since
      openai/codex PR #27016 (June 2026: ``message`` is written empty, the history is the only
      record);
    - the history's ``compaction`` item: a remote compaction (compact_remote.rs@001cb8e2: ``message``
      empty, the server's history holds one encrypted item), kept as filler of its plain-text size
      (3/4 of the encrypted length, or of a ``[REDACTED_… len=N]`` marker's N).
    A bare redaction marker, an empty item or no summary at all leaves nothing to put in the
    context: no message is made for it (an empty one would make every later request invalid).
    """
    message = fill(get_str(p, "message", "", path=path, line=line))  # may be a redacted empty string
    if message.strip():
        return message, "message"
    for item in reversed(history):
        text = _message_text(item)
        if text is not None and text.startswith(SUMMARY_HEAD):
            return fill(text), "replacement_history"
    opaque = [h for h in history if isinstance(h, dict) and h.get("type") in ("compaction", "compaction_summary")]
    if not opaque:
        return "", "no summary in the record"
    enc = opaque[-1].get("encrypted_content")
    m = REDACTED.fullmatch(enc) if isinstance(enc, str) else None
    if m is not None:
        return filler(int(m.group(1)) * 3 // 4, m.group(2) or ""), "encrypted"
    if not isinstance(enc, str) or not enc.strip() or UNSIZED.fullmatch(enc.strip()):
        return "", "encrypted, its size not recorded"
    return filler(len(enc) * 3 // 4), "encrypted"


def read_file(path: Path, *, lenient: bool = False) -> ReadResult:
    path = Path(path)
    skips, joined, fill, b = Skips(), Skips(), _Filler(), _Builder()
    meta: dict[str, Any] = {}
    forked_from: list[str] = []
    unrecorded: Counter[str] = Counter()
    compactions: list[RecordedCompaction] = []
    prev_total: dict[str, Any] | None = None
    last_prompt: int | None = None
    system: Message | None = None
    pending_marker = False
    for line, rec in iter_jsonl_joined(path, lenient, skips, joined):
        try:
            kind = get_str(rec, "type", path=path, line=line)
            p = get_dict(rec, "payload", path=path, line=line)
            b.ts = ts_seconds(rec.get("timestamp")) or b.ts
            if kind == "session_meta":
                own = meta.get("id")
                if own is not None:  # a fork's copy of its parent's meta: the first one is this thread's
                    other = p.get("id")
                    if isinstance(other, str) and other != own and other not in forked_from:
                        forked_from.append(other)
                    continue
                keep = ("id", "cli_version", "originator", "model_provider")
                meta.update({k: p[k] for k in keep if isinstance(p.get(k), str)})
                meta.setdefault("id", "")
                if isinstance(p.get("model_provider"), str):
                    meta["provider"] = p["model_provider"]
                base = p.get("base_instructions")
                text = base.get("text") if isinstance(base, dict) else p.get("instructions")
                if isinstance(text, str) and text and system is None:
                    system = Message.text_message("system", fill(text))
            elif kind == "turn_context":
                b.model = get_str(p, "model", b.model, path=path, line=line)
            elif kind == "response_item":
                item = get_str(p, "type", path=path, line=line)
                if item == "message":
                    role = get_str(p, "role", path=path, line=line)
                    blocks = _content(p, fill, path, line)
                    if role == "assistant":
                        b.close_results()
                        b.answer.extend(blocks)
                    else:
                        b.close()
                        b.messages.append(Message("user", blocks, timestamp=b.ts,
                                                  meta={} if role == "user" else {"role": role}))
                elif item in OUTPUT_SIDE:
                    b.close_answer()
                    call_id = get_str(p, "call_id", path=path, line=line)
                    b.results.append(ToolResult(call_id, _output(p.get("output"), fill)))
                elif item in ("reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
                    b.close_results()
                    b.answer.append(_call(p, item, fill, path, line))
                    size = encrypted_length(p.get("encrypted_content")) if item == "reasoning" else None
                    if size is not None:
                        b.encrypted.append(size)
            elif kind == "event_msg" and p.get("type") == "token_count" and isinstance(p.get("info"), dict):
                info = p["info"]
                if isinstance(info.get("model_context_window"), int) and info["model_context_window"] > 0:
                    b.window = info["model_context_window"]
                total = info.get("total_token_usage")
                if total != prev_total or not isinstance(total, dict):
                    usage = _usage(info, prev_total, path, line)
                    b.reasoning_tokens = _reasoning_tokens(info, prev_total)
                    prev_total = total if isinstance(total, dict) else prev_total
                    if usage.prompt_tokens or usage.output_tokens:
                        last_prompt = usage.prompt_tokens
                        b.price(usage)
            elif kind == "compacted" or (kind == "event_msg" and p.get("type") == "context_compacted"):
                if kind == "event_msg" and pending_marker:
                    pending_marker = False
                    continue
                b.close()
                history = get_list(p, "replacement_history", [], path=path, line=line) if kind == "compacted" else []
                summary, source = (_summary(p, history, fill, path, line) if kind == "compacted"
                                   else ("", "a context_compacted event without its compacted record"))
                compactions.append(RecordedCompaction(len(b.messages), "auto", last_prompt, summary))
                if summary:
                    b.messages.append(Message.text_message("user", summary, timestamp=b.ts, meta={
                        "summary": True, "replacement_history_items": len(history), "opaque": source == "encrypted",
                        "summary_source": source}))
                else:
                    unrecorded[source] += 1
                pending_marker = kind == "compacted"
        except TraceError:
            if not lenient:
                raise
            skips.count += 1
    b.close()
    shift = 1 if system else 0
    compactions = [replace(c, message_index=c.message_index + shift) for c in compactions]
    messages = ([system] if system else []) + b.messages
    if not messages:
        if lenient:
            return ReadResult([], skips.count)
        raise TraceError("no session_meta or response_item in a Codex rollout", path=str(path))
    at_end = {i for i, c in enumerate(compactions) if c.message_index >= len(messages)}
    messages, recorded, filled, orphans = finish(messages, compactions)
    # a compaction recorded last (nothing after it) stays after every message, repaired ones included
    recorded = tuple(replace(c, message_index=len(messages)) if i in at_end else c for i, c in enumerate(recorded))
    notes = [f"{path}: {n} {what}" for n, what in (
        (fill.count, "redacted string(s) replaced by filler of the recorded length"),
        (filled, "tool call(s) without a recorded output got a flagged error result"),
        (orphans, "orphan tool output(s) kept as flagged text"),
        (joined.count, "line(s) holding more than one JSON record (each record read)"),
        (len(forked_from), "session_meta record(s) of another thread (a fork's copied parent history; "
                           "the trace is named by its first session_meta)")) if n]
    notes += [f"{path}: {n} recorded compaction(s) with no summary message ({why})"
              for why, n in sorted(unrecorded.items())]
    if forked_from:
        meta["forked_from"] = forked_from
    if not meta.get("id"):
        meta.pop("id", None)
    seen = Counter(m.meta.get("model") for m in messages if m.role == "assistant" and m.meta.get("model"))
    trace = Trace(id=str(meta.get("id") or path.stem), messages=tuple(messages), agent=AGENT,
                  model=(seen.most_common(1)[0][0] if seen else b.model), source=str(path),
                  compactions=recorded, meta=meta)
    return ReadResult([trace], skips.count, notes)
