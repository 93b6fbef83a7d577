"""Counterfactual re-reads: what a live agent does when its next call needs a file it no longer sees.

A replay keeps the recorded future, so a strategy that summarized a file away looks cheap: the
recorded agent, which still had the file, never read it again. This module closes that part of the
loop (issue 25, "The cost of forgetting"). Stage: replay.

At each call, every tool call of the recorded answer that acts on a file (an edit, a write, any call
that is not itself a look: ``strategies._tools.is_read_only``) names it by a path input, or quotes the
text it replaces. When the session had shown that file through a read tool (its result: the whole
file, or the part a ranged read showed) and the context the strategy sent no longer holds that
content, the agent would have read it again before acting. The replay then

1. bills the call that asks for it: the request the strategy sent, answered with a read call (its
   output sized from the trace's own read calls: ``ReadOutput``);
2. appends that call and its result, the content the session last showed (only that part for a file
   shown in part), to the strategy's context, where they stay and count toward its next compaction;
3. goes on with the recorded answer.

Not simulated (counted, or not seen at all): what cannot be fetched again (a search, a command's
output: still counted by ``unseen_references``), a file read through a shell command (Codex ``cat``/
``sed``), a file shown only by the agent's own write, another path the agent might have taken, asking
the user again, and the longer trajectories that follow a bad summary.

Cost per call: what the session showed of each file is indexed as the history grows
(``FileViews.follow``, the new messages only); whether the last shown content is still sent is
answered first by identity (its recorded message, or a re-read result, in the view that
``bench.replay.references.ReferenceCheck`` moves by what changed) and only then by a text search of the
messages the strategy wrote itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import median

from bench.replay.references import EDIT_KEYS, MIN_QUOTE, ReferenceCheck
from bench.tokens import TokenCounter
from strategies._files import READ_TOOLS, file_path, is_read_only
from traces.model import Message, ToolResult, ToolUse, Trace

META = "reread"
"""``Message.meta`` flag of the messages a re-read inserted (the probes score what only they hold apart)."""
PARTIAL_KEYS = ("offset", "limit", "view_range", "start_line", "end_line", "line_start", "line_end", "lines",
                "range")
"""Read inputs that ask for part of a file (Claude Code offset/limit, OpenHands view_range, ...)."""
PARTS_KEPT = 16
"""Ranged reads of one file remembered (a full read replaces them all)."""


def is_read(use: ToolUse) -> bool:
    """A tool call that shows a file's content (``strategies._tools`` names the read tools)."""
    return use.name.lower() in READ_TOOLS or use.input.get("command") == "view"


def _partial(use: ToolUse) -> bool:
    return any(use.input.get(k) not in (None, "", 0) for k in PARTIAL_KEYS)


def _quote(use: ToolUse) -> str | None:
    """The longest line an edit quotes from the file (what ``bench.replay.references`` takes as its reference)."""
    best = ""
    for key in EDIT_KEYS:
        value = use.input.get(key)
        if isinstance(value, str):
            best = max((best, *(x.strip() for x in value.splitlines())), key=len)
    return best if len(best) >= MIN_QUOTE else None


@dataclass
class Shown:
    """One read result of the recorded session: the file, the call that read it and what it showed."""

    path: str
    use: ToolUse
    content: str
    carrier: Message
    """The recorded message holding the result."""
    partial: bool
    copies: list[Message] = field(default_factory=list)
    """Re-read results this replay inserted with the same content (held as well as ``carrier``)."""


class FileViews:
    """What the recorded session has shown of each file so far, followed as the history grows."""

    def __init__(self) -> None:
        self._seen = 0
        self._calls: dict[str, ToolUse] = {}
        """Read calls still waiting for their result, by id."""
        self._shown: dict[str, list[Shown]] = {}
        """Path → its read results, oldest first (the last full read and the ranged reads since)."""

    def follow(self, history: Sequence[Message]) -> None:
        """Index the messages added to ``history`` (append-only) since the last call."""
        for m in history[self._seen:]:
            for use in m.tool_uses:
                if is_read(use) and file_path(use):
                    self._calls[use.id] = use
            for r in m.tool_results:
                asked = self._calls.pop(r.tool_use_id, None)  # not ``use``: a compiled build types names once
                if asked is not None and not r.is_error and r.content.strip():
                    path = file_path(asked)  # indexed above only when it names one
                    assert path is not None
                    self._add(Shown(path.strip(), asked, r.content, m, _partial(asked)))
        self._seen = len(history)

    def _add(self, shown: Shown) -> None:
        parts = self._shown.setdefault(shown.path, [])
        if not shown.partial:
            parts.clear()
        else:  # the same range read again: the newer result replaces it
            parts[:] = [p for p in parts if p.use.input != shown.use.input][-(PARTS_KEPT - 1):]
        parts.append(shown)

    def needed(self, use: ToolUse) -> Shown | None:
        """What ``use`` relies on having seen: the newest part of its file holding the text it quotes,
        else the newest part; for an edit that names no path, the newest part holding its quote."""
        quote = _quote(use)
        path = file_path(use)
        if path is not None:
            parts = self._shown.get(path.strip())
            if not parts:
                return None
            if quote is not None:
                hit = next((p for p in reversed(parts) if quote in p.content), None)
                if hit is not None:
                    return hit
            return parts[-1]
        if quote is None:
            return None
        return next((p for parts in self._shown.values() for p in reversed(parts) if quote in p.content), None)


class ReadOutput:
    """Output tokens of one read call: the median the trace's own read-only answers spent per call
    (their recorded usage, else their count), found once per replay; ``fallback`` when it has none."""

    def __init__(self, trace: Trace, count: Callable[[Message], int]) -> None:
        sizes = [(m.usage.output_tokens if m.usage and m.usage.output_tokens else count(m)) / len(m.tool_uses)
                 for m in trace.messages
                 if m.role == "assistant" and m.tool_uses and all(is_read(u) for u in m.tool_uses)]
        self.per_read: int | None = max(1, round(median(sizes))) if sizes else None


@dataclass(frozen=True)
class Reread:
    """One inserted re-read: the call asking for the files and their results."""

    call: Message
    result: Message
    parts: tuple[Shown, ...]


class Rereads:
    """Decides, per call, which files the agent must read again, and builds the messages that do it."""

    def __init__(self, trace: Trace, references: ReferenceCheck) -> None:
        self.views = FileViews()
        self.references = references
        self.trace = trace
        self._output: ReadOutput | None = None

    def lost(self, history: Sequence[Message], sent: tuple[Message, ...], answer: Message) -> list[Shown]:
        """The file contents ``answer``'s calls act on that ``history`` showed and ``sent`` no longer holds."""
        self.views.follow(history)
        out: list[Shown] = []
        for use in answer.tool_uses:
            if is_read_only(use) or is_read(use):  # a look: the recorded call fetches it itself
                continue
            part = self.views.needed(use)
            if part is None or any(p is part for p in out):
                continue
            if not self.references.holds(part.content, history, sent, (part.carrier, *part.copies)):
                out.append(part)
        return out

    def insert(self, parts: Sequence[Shown], call: int, counter: TokenCounter) -> Reread:
        """The read call asking for ``parts`` (the tool and arguments that showed each) and its results,
        both flagged ``META``; each result is remembered as a copy of what it shows."""
        ids = [f"reread_{call}_{k}" for k in range(len(parts))]
        asked = Message("assistant", tuple(ToolUse(i, p.use.name, dict(p.use.input)) for i, p in zip(ids, parts,
                                                                                                       strict=True)),
                        meta={META: True})
        shown = Message("user", tuple(ToolResult(i, p.content) for i, p in zip(ids, parts, strict=True)),
                        meta={META: True})
        if len(parts) == 1 and len(parts[0].carrier.blocks) == 1:
            # the same content as the recorded result: its count (the provider's, where attributed)
            counter.adopt([shown], [counter.truth(parts[0].carrier)])
        for p in parts:
            p.copies.append(shown)
            del p.copies[:-4]  # the latest few: an older copy that is still sent is found by its text
        return Reread(asked, shown, tuple(parts))

    def output_tokens(self, reread: Reread, count: Callable[[Message], int]) -> int:
        """Billed output of the call that asked: the trace's typical read call per file, else the count
        of the call message itself."""
        if self._output is None:
            self._output = ReadOutput(self.trace, count)
        per = self._output.per_read
        return per * len(reread.parts) if per is not None else count(reread.call)
