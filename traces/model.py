"""The trace model: what an agent session is, independent of the agent that recorded it.

A trace is an ordered tuple of messages (system, user, assistant) whose content is a tuple of
blocks, in the Anthropic Messages shape that most agents map onto (spec/strategies.md §0). Tool
calls and their results are linked by id. A *step* is everything appended before one model call;
the assistant message that follows is what the recorded agent answered.

Everything here is a frozen dataclass: strategies build new messages, they never edit old ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, ClassVar, Literal

Role = Literal["system", "user", "assistant"]
ROLES: tuple[str, ...] = ("system", "user", "assistant")


class TraceError(ValueError):
    """A trace that cannot be read or is not well formed; the message names the file and line."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 at: str | None = None) -> None:
        """``at`` is the record path inside the file (``messages[12].content[0]``) when there is one."""
        where = f"{path}:{line}: " if path is not None and line is not None else (f"{path}: " if path else "")
        super().__init__(where + (f"{at}: " if at else "") + message)
        self.reason = message
        """The message without the place (so a caller can add to it and raise it again)."""
        self.path = path
        self.line = line
        self.at = at


MAX_COUNT = 2**53
"""Token counts, sizes and windows are whole numbers in [0, MAX_COUNT) (and windows above 0).

Why 2^53: every integer below it is exact in a float64, so sums, ratios and prices computed from
counts stay exact, and it is far inside Parquet's int64 (a count of 2^63 or 1e300 overflowed the
task store's write). ``traces.formats._common`` enforces it on the way in (``get_int`` for each
field read, ``check_trace`` for every trace an importer built)."""
MAX_ID = 4096
"""Longest id, tool name, agent or model name, in characters. Real ids are under 100 (a Claude Code
``toolu_…`` is 30, an OpenCode part id 30, a Codex call id 40); a 5-million-character tool id made
a run peak at 5.7 GB, as every event and request row repeats it."""


@dataclass(frozen=True)
class Text:
    text: str
    type: ClassVar[str] = "text"


@dataclass(frozen=True)
class Thinking:
    """Model reasoning; agents differ on whether it is resent, so it is kept and counted."""

    text: str
    type: ClassVar[str] = "thinking"


@dataclass(frozen=True)
class ToolUse:
    id: str
    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    type: ClassVar[str] = "tool_use"

    def input_json(self) -> str:
        return self._input_json

    @cached_property
    def _input_json(self) -> str:
        """Serialized once per call block (inputs are never edited in place): every count, index and
        probe renders the message holding it again."""
        return json.dumps(self.input, sort_keys=True, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class ToolResult:
    tool_use_id: str
    content: str
    is_error: bool = False
    type: ClassVar[str] = "tool_result"


@dataclass(frozen=True)
class Image:
    """An image is kept as its size only: the pixels never matter to compaction, the tokens do."""

    media_type: str = "image/png"
    size_bytes: int = 0
    type: ClassVar[str] = "image"


Block = Text | Thinking | ToolUse | ToolResult | Image


@dataclass(frozen=True)
class Usage:
    """Provider-reported usage of one recorded call, normalised to Anthropic semantics.

    ``input_tokens`` is the uncached part only; the whole prompt is ``prompt_tokens``. Importers of
    OpenAI-style logs (where cached tokens are a subset of input) convert on the way in.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


@dataclass(frozen=True)
class Message:
    role: Role
    blocks: tuple[Block, ...]
    usage: Usage | None = None
    """Recorded usage of the call that produced this (assistant) message, when the log has it."""
    timestamp: float | None = None
    """Seconds since the epoch, when recorded; drives the prompt-cache lifetime."""
    id: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    """Free-form flags (e.g. ``{"summary": True}`` on a compaction summary, ``{"orphan": True}``)."""

    @staticmethod
    def text_message(role: Role, text: str, **kw: Any) -> Message:
        return Message(role=role, blocks=(Text(text),), **kw)

    @property
    def text(self) -> str:
        """The plain text of the message's text blocks."""
        return "\n".join(b.text for b in self.blocks if isinstance(b, Text))

    @cached_property
    def tool_uses(self) -> tuple[ToolUse, ...]:
        """Computed once per message (messages are immutable; replays ask on every call)."""
        return tuple(b for b in self.blocks if isinstance(b, ToolUse))

    @cached_property
    def tool_results(self) -> tuple[ToolResult, ...]:
        return tuple(b for b in self.blocks if isinstance(b, ToolResult))

    @cached_property
    def is_tool_result(self) -> bool:
        """A user message that only carries tool results (not a human turn). Cached like ``tool_uses``:
        strategies ask it of every message at every call (Codex's turn boundaries, a million times a bench)."""
        return self.role == "user" and bool(self.blocks) and all(
            isinstance(b, ToolResult) for b in self.blocks
        )

    @cached_property
    def is_human_turn(self) -> bool:
        """A user message with something other than tool results in it."""
        return self.role == "user" and not self.is_tool_result

    def with_blocks(self, blocks: tuple[Block, ...]) -> Message:
        return replace(self, blocks=blocks)


NEEDLE_KINDS: tuple[str, ...] = (
    "fact", "error", "artifact", "constraint", "decision", "update", "control",
)


@dataclass(frozen=True)
class Needle:
    """A fact the agent was told, with the question that probes it and the expected answer.

    ``kind`` is one of NEEDLE_KINDS. An ``update`` supersedes ``old_answer``; a ``control`` was
    never stated (``message_index`` is -1), so finding it measures false positives.
    """

    id: str
    kind: str
    text: str
    question: str
    answer: str
    message_index: int
    old_answer: str | None = None
    reference: str | None = None
    """A file path or command that would recover the fact (recoverable-by-reference)."""


@dataclass(frozen=True)
class RecordedCompaction:
    """A compaction that the recorded agent itself performed (for fidelity checks)."""

    message_index: int
    """Index of the first message after the compaction (the summary, usually); 0 when the log begins
    with the compaction (its pre-compaction part is not in it), so no recorded call precedes it."""
    trigger: str = "auto"
    pre_tokens: int | None = None
    summary: str = ""
    call_usage: Usage | None = None
    """Recorded usage of the summarizer call itself, when the agent logged it apart (Claude Code's
    ``subagents/agent-acompact-*.jsonl`` beside the session); None when the log has no such call."""


@dataclass(frozen=True)
class Step:
    """What is appended before one model call, and the answer the recorded agent gave."""

    index: int
    inputs: tuple[Message, ...]
    answer: Message | None


@dataclass(frozen=True)
class Trace:
    id: str
    messages: tuple[Message, ...]
    agent: str = "unknown"
    model: str | None = None
    source: str | None = None
    needles: tuple[Needle, ...] = ()
    compactions: tuple[RecordedCompaction, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)

    def steps(self) -> Iterator[Step]:
        """Split the messages into calls: each assistant message closes one step."""
        pending: list[Message] = []
        index = 0
        for m in self.messages:
            if m.role == "assistant":
                yield Step(index, tuple(pending), m)
                pending = []
                index += 1
            else:
                pending.append(m)
        if pending:
            yield Step(index, tuple(pending), None)

    @property
    def n_calls(self) -> int:
        return sum(1 for m in self.messages if m.role == "assistant")

    @property
    def n_tool_calls(self) -> int:
        return sum(len(m.tool_uses) for m in self.messages)


def orphans(messages: tuple[Message, ...] | list[Message]) -> tuple[set[str], set[str]]:
    """Return (tool_use ids with no result, tool_result ids with no call) in a message list."""
    uses: set[str] = set()
    results: set[str] = set()
    for m in messages:
        for b in m.blocks:
            if isinstance(b, ToolUse):
                uses.add(b.id)
            elif isinstance(b, ToolResult):
                results.add(b.tool_use_id)
    return uses - results, results - uses


def flag_orphan_results(messages: list[Message]) -> tuple[list[Message], int]:
    """Turn tool results whose call is missing into flagged text, so no API would reject them.

    Importers call this: a real log can start mid-session or lose a line, and an orphan result
    must be kept (its tokens are real) but not presented as a tool result.
    """
    seen: set[str] = set()
    out: list[Message] = []
    flagged = 0
    for m in messages:
        seen.update(b.id for b in m.tool_uses)
        if not any(isinstance(b, ToolResult) and b.tool_use_id not in seen for b in m.blocks):
            out.append(m)
            continue
        blocks: list[Block] = []
        for b in m.blocks:
            if isinstance(b, ToolResult) and b.tool_use_id not in seen:
                blocks.append(Text(f"[orphan tool result {b.tool_use_id}]\n{b.content}"))
                flagged += 1
            else:
                blocks.append(b)
        out.append(replace(m, blocks=tuple(blocks), meta={**m.meta, "orphan": True}))
    return out, flagged


def render(m: Message) -> str:
    """The text a model sees for one message; what both counters measure."""
    parts: list[str] = []
    for b in m.blocks:
        if isinstance(b, (Text, Thinking)):
            parts.append(b.text)
        elif isinstance(b, ToolUse):
            parts.append(f"{b.name} {b.input_json()}")
        elif isinstance(b, ToolResult):
            parts.append(b.content)
    return "\n".join(parts)


_NUMBER = re.compile(r"\d+")


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """``"1.0.43"`` → (1, 0, 43); ``"v0.140.2-alpha"`` → (0, 140, 2); None when there are no digits."""
    if not text:
        return None
    core = re.split(r"[-+ ]", text.strip().lstrip("vV"), maxsplit=1)[0]
    parts = _NUMBER.findall(core)
    return tuple(int(p) for p in parts) or None


def recorded_calls(trace: Trace) -> tuple[int, ...]:
    """The call index at which each recorded compaction took effect (answers before it)."""
    answers = [i for i, m in enumerate(trace.messages) if m.role == "assistant"]
    return tuple(sum(1 for i in answers if i < rc.message_index) for rc in trace.compactions)
