"""A re-read proxy: what the recorded agent went on to use that a strategy had taken out of view.

A replay cannot show the extra work a live agent does after losing something (the replay
limitation), but it can count where that work would have been needed. At each call, every tool
call of the recorded answer names what it relied on: the file it reads or edits (a path input)
and, for an edit, the text it replaces (the edit must quote the file as it is). When such a
reference was in the session before the call, the real agent had seen it; when the context the
strategy sent no longer holds it, the agent would have had to look it up again (re-read the
file, re-run the search) before it could make that call. `none` sends everything, so it scores 0.

Exact substrings of the rendered messages, like needle retention: an upper bound on what the
agent could use, and a lower bound on the re-reads a live agent would need.
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.tokens import render
from traces.model import Message, ToolUse

PATH_KEYS = ("file_path", "path", "filePath", "filename", "file", "target_file", "notebook_path")
EDIT_KEYS = ("old_string", "old_str", "old_text", "oldString")
"""Edit inputs that quote the text being replaced (Claude Code, OpenHands, ours, OpenCode)."""
MIN_QUOTE = 16
"""A quoted line shorter than this (a brace, `return x`) proves nothing about what was seen."""


def references(use: ToolUse) -> tuple[str, ...]:
    """What a tool call relies on having seen: its path input and the longest line it quotes to edit."""
    refs = [v for k in PATH_KEYS if isinstance(v := use.input.get(k), str) and v.strip()][:1]
    for key in EDIT_KEYS:
        value = use.input.get(key)
        if isinstance(value, str):
            line = max((x.strip() for x in value.splitlines()), key=len, default="")
            if len(line) >= MIN_QUOTE:
                refs.append(line)
    return tuple(refs)


class ReferenceCheck:
    """Counts, per call, the recorded tool calls that relied on something seen but no longer sent.

    One per replay. Most of what a strategy sends is the recorded messages themselves (the same
    objects), so a reference is looked for in the recorded history newest first and checked by
    identity against what was sent: usually the newest message holding it was sent, and the walk
    stops there. Only the messages a strategy wrote itself (summaries, placeholders, rewritten
    outputs) are searched as text, and only when no recorded carrier was sent.
    """

    def __init__(self) -> None:
        self._texts: dict[int, tuple[Message, str]] = {}
        self._recorded: set[int] = set()
        self._seen = 0

    def _text(self, m: Message) -> str:
        hit = self._texts.get(id(m))
        if hit is None or hit[0] is not m:
            hit = (m, render(m))
            self._texts[id(m)] = hit
        return hit[1]

    def unseen(self, history: Sequence[Message], sent: Sequence[Message], answer: Message) -> int:
        """Tool calls of ``answer`` with a reference that ``history`` (the recorded session so far,
        append-only) holds and ``sent`` (the context as sent) does not."""
        uses = [refs for use in answer.tool_uses if (refs := references(use))]
        if not uses:
            return 0
        self._recorded.update(id(m) for m in history[self._seen:])
        self._seen = len(history)
        sent_ids = {id(m) for m in sent}

        def lost(ref: str) -> bool:
            carriers = (m for m in reversed(history) if ref in self._text(m))
            seen_before = False
            for m in carriers:
                if id(m) in sent_ids:
                    return False
                seen_before = True
            return seen_before and not any(ref in self._text(m) for m in sent if id(m) not in self._recorded)

        return sum(1 for refs in uses if any(lost(ref) for ref in refs))
