"""Aider's markdown transcript, ``.aider.chat.history.md`` (spec/formats.md §9).

Why the work: the transcript is the only record aider keeps, and it is markdown, not data. Each
``# aider chat started at`` line opens a session (one trace each); ``#### `` lines are the user's
input, ``> `` lines are aider's own output, everything else is the model's reply. The
``> Tokens: N sent, [C cache write,] [H cache hit,] M received. Cost: ...`` line after a reply is
that call's usage ("sent" is the whole prompt, so the uncached part is sent − hit − write). The
startup banner (before the first input) is metadata (model name); later ``>`` blocks are kept as
user messages flagged ``aider_output`` (environment feedback: edits applied, lint and test output),
since aider can add them to the chat. Aider has no tool ids and records no compaction.
Checked against Aider-AI/aider @ 5dc9490 (tests/fixtures/chat-history.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from traces.formats import ReadResult
from traces.formats._common import decode, read_bytes
from traces.model import Message, Trace, TraceError, Usage

NAME = "aider"
AGENT = "aider"
HEADER = re.compile(r"^# aider chat started at (.+?)\s*$")
MODEL = re.compile(r"^(?:Main model|Models?): (\S+)")
NUMBER = r"(\d[\d,]*(?:\.\d+)?)"
"""A count as aider prints it (``12,566``, ``1.2``): a line with anything else (``1.2.3k``) is not a usage line."""
TOKENS = re.compile(r"^Tokens: (.+?) received[.,](.*)$")
COUNT = re.compile(rf"^{NUMBER}([kKmM]?) (sent|cache write|cache hit|cached)$")
COST = re.compile(rf"Cost: \${NUMBER} (?:request|message)")


def parse_count(number: str, suffix: str) -> int:
    value = float(number.replace(",", ""))
    return round(value * {"": 1, "k": 1_000, "m": 1_000_000}[suffix.lower()])


def parse_tokens(line: str) -> tuple[Usage, float | None] | None:
    """A ``Tokens: ...`` line (without the ``> ``) as Usage and the request cost, or None."""
    m = TOKENS.match(line)
    if m is None:
        return None
    joined = [p.strip() for p in m.group(1).split(", ")]  # "12,566 sent, 84": thousands have no space
    counts: dict[str, int] = {}
    for p in joined[:-1]:
        c = COUNT.match(p)
        if c is None:
            return None
        counts[c.group(3)] = parse_count(c.group(1), c.group(2))
    last = re.fullmatch(rf"{NUMBER}([kKmM]?)", joined[-1]) if joined else None
    if last is None or "sent" not in counts:
        return None
    hit = counts.get("cache hit", counts.get("cached", 0))
    write = counts.get("cache write", 0)
    usage = Usage(max(counts["sent"] - hit - write, 0), parse_count(last.group(1), last.group(2)), hit, write)
    cost = COST.search(m.group(2))
    return usage, float(cost.group(1).replace(",", "")) if cost else None


@dataclass
class _Session:
    started: str | None
    messages: list[Message] = field(default_factory=list)
    banner: list[str] = field(default_factory=list)
    model: str | None = None
    unattached_usage: int = 0


def _emit(s: _Session, kind: str, lines: list[str]) -> None:
    if kind == "user":
        s.messages.append(Message.text_message("user", "\n".join(lines).strip("\n")))
    elif kind == "assistant":
        text = "\n".join(lines).strip()
        if text:
            s.messages.append(Message.text_message("assistant", text))
    elif kind == "tool":
        _tool_block(s, lines)


def _tool_block(s: _Session, lines: list[str]) -> None:
    kept = []
    for line in lines:
        parsed = parse_tokens(line)
        if parsed is None:
            kept.append(line)
            continue
        last = next((i for i in range(len(s.messages) - 1, -1, -1) if not s.messages[i].meta.get("aider_output")), None)
        if last is not None and s.messages[last].role == "assistant" and s.messages[last].usage is None:
            usage, cost = parsed
            m = s.messages[last]
            s.messages[last] = Message("assistant", m.blocks, usage=usage, meta={"cost": cost} if cost else {})
        else:
            s.unattached_usage += 1
    if not s.messages:
        s.banner += kept
        found = next((MODEL.match(x) for x in kept if MODEL.match(x)), None)
        s.model = s.model or (found.group(1) if found else None)
        return
    text = "\n".join(kept).strip("\n")
    if not text.strip():
        return
    if s.messages[-1].meta.get("aider_output"):
        text = s.messages[-1].text + "\n" + text
        s.messages.pop()
    s.messages.append(Message.text_message("user", text, meta={"aider_output": True}))


def _classify(line: str) -> tuple[str, str]:
    if line.startswith("#### ") or line.rstrip() == "####":
        return "user", line[5:].rstrip()
    if line.startswith("> ") or line.rstrip() == ">":
        return "tool", line[2:].rstrip()
    return ("blank", "") if not line.strip() else ("assistant", line)


def sessions(text: str) -> list[_Session]:
    out = [_Session(None)]
    kind, buf = "", []
    for n, line in enumerate(text.split("\n")):
        if n == 0 and re.match(r"^\s*-\*-.*-\*-\s*$", line):
            continue
        header = HEADER.match(line)
        if header:
            _emit(out[-1], kind, buf)
            out.append(_Session(header.group(1)))
            kind, buf = "", []
            continue
        new, body = _classify(line)
        if new == "blank":
            if kind == "assistant":
                buf.append("")
            elif kind == "user":
                _emit(out[-1], kind, buf)
                kind, buf = "", []
            continue
        if new != kind:
            _emit(out[-1], kind, buf)
            kind, buf = new, []
        buf.append(body)
    _emit(out[-1], kind, buf)
    return out


def sniff_file(path: Path, head: str) -> str | None:
    if any(HEADER.match(line) for line in head.split("\n")):
        return None
    return "no \"# aider chat started at\" line"


def read_file(path: Path, *, lenient: bool = False) -> ReadResult:
    path = Path(path)
    text = decode(read_bytes(path), path=path, lenient=lenient)
    result = ReadResult([])
    empty = 0
    for n, s in enumerate(sessions(text)):
        typed = any(m.role == "user" and not m.meta.get("aider_output") for m in s.messages)
        if not typed or not any(m.role == "assistant" for m in s.messages):
            empty += n > 0
            continue
        meta: dict[str, Any] = {"started_at": s.started, "banner": "\n".join(s.banner)}
        if s.unattached_usage:
            meta["unattached_usage_lines"] = s.unattached_usage
        result.traces.append(Trace(id=f"{path.stem}#{n}", messages=tuple(s.messages), agent=AGENT, model=s.model,
                                   source=str(path), meta=meta))
    if empty:
        result.notes.append(f"{path}: {empty} session(s) without both user input and a reply skipped")
    if not result.traces and not lenient:
        raise TraceError("no aider session with a model reply", path=str(path))
    return result
