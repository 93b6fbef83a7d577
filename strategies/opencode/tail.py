"""OpenCode's tail generation: which recent turns stay verbatim, and the head as the text transcript
the summarizer reads (sst/opencode session/compaction.ts @3df4a25506fb)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from bench.context import Image, Message, Text, Thinking, ToolResult, ToolUse
from strategies._tools import is_prompt, safe_cut, text_assistant, text_user
from strategies.opencode.common import TRUNCATED

if TYPE_CHECKING:
    from bench.context import Context


class TailCompaction:
    """Mixed into ``OpenCode``; reads ``tool_output_max_chars``."""

    def tail_start(self, ctx: Context, msgs: tuple[Message, ...], budget: int) -> int:
        """Index where the verbatim tail starts; len(msgs) when there is no tail (nothing kept, or
        everything fits: the spec then summarizes everything)."""
        size = [ctx.meter.counter.estimate(m, "chars/4-json") for m in msgs]
        starts = [i for i, m in enumerate(msgs) if is_prompt(m)]
        if not starts or starts[0] != 0:
            starts.insert(0, 0)
        bounds = list(zip(starts, [*starts[1:], len(msgs)], strict=True))
        remaining, start = budget, len(msgs)
        for lo, hi in reversed(bounds):
            turn = sum(size[lo:hi])
            if turn <= remaining:
                remaining, start = remaining - turn, lo
                continue
            # split the turn: the earliest whole-message suffix (no orphaned result) that fits; the
            # suffix only shrinks as j grows, so safe_cut (O(j)) runs only where the size fits
            suffix = turn - size[lo]
            for j in range(lo + 1, hi):
                if suffix <= remaining and safe_cut(msgs, j) == j:
                    start = j
                    break
                suffix -= size[j]
            break
        return len(msgs) if start == 0 else start

    def serialized(self, head: tuple[Message, ...]) -> tuple[Message, ...]:
        """The head as OpenCode's text transcript, one text message per OpenCode message.

        The real request joins these lines into one user message; keeping one message per turn
        lets a summarizer tell the user's requests apart (same text, +4 tokens per message).
        """
        results = {r.tool_use_id: r for m in head for r in m.tool_results}
        out: list[Message] = []
        for m in head:
            lines: list[str] = []
            for b in m.blocks:
                if isinstance(b, Text) and b.text.strip():
                    lines.append(f"[{'User' if m.role == 'user' else 'Assistant'}]: {b.text}")
                elif isinstance(b, Thinking):
                    lines.append(f"[Assistant reasoning]: {b.text}")
                elif isinstance(b, Image):
                    lines.append(f"[Attached {b.media_type}: image]")
                elif isinstance(b, ToolUse):
                    lines.append(f"[Assistant tool call]: {b.name}({json.dumps(dict(b.input), default=str)})")
                    if (r := results.get(b.id)) is not None:
                        lines.append(f"[Tool {'error' if r.is_error else 'result'}]: {self.clip(r)}")
            if lines:
                out.append(text_user("\n".join(lines)) if m.role == "user" else text_assistant("\n".join(lines)))
        return tuple(out)

    def clip(self, r: ToolResult) -> str:
        text = r.content
        return text if len(text) <= self.tool_output_max_chars else text[: self.tool_output_max_chars] + TRUNCATED
