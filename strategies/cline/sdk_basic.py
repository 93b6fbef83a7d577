"""The Cline SDK's basic compaction, its overflow path (``ClineSdk.on_overflow``), apart from the agentic
one in ``sdk``. Source: cline/cline @21cb8d2525bcedf1f4b6890b27a74a14fe7451e4
sdk/packages/core/src/extensions/context/basic-compaction.ts (runBasicCompaction L452) and
compaction-shared.ts (isTurnStartMessage L265).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from bench.context import Context, Message, Outcome, Text, Thinking, event
from strategies._tools import without_orphan_results
from strategies.cline._common import _path

PRESERVED = "cline_sdk.preserved"
"""Meta flag of a message basic compaction kept (Cline's ``compaction: preserved`` marker): frozen afterwards."""
PRESERVED_ASSISTANT_TEXTS = 3
COMMAND_KEYS = ("command", "cmd", "commands")


def is_turn_start(m: Message) -> bool:
    """isTurnStartMessage: a user message that is neither tool results only nor a compaction summary."""
    return m.is_human_turn and not m.meta.get("summary")


class BasicCompaction:
    """runBasicCompaction, the part of ``ClineSdk`` that the overflow error runs (its fields name the
    read, write and command tools)."""

    if TYPE_CHECKING:
        read_tools: tuple[str, ...]
        write_tools: tuple[str, ...]
        command_tools: tuple[str, ...]

    def basic(self, ctx: Context, target: float) -> Outcome | None:
        """runBasicCompaction (the overflow_recovery path): keep typed prompts, the newest messages of
        the latest turn that fit and older turns' final answers; fold dropped work into notices."""
        first = 1 if ctx.system else 0
        msgs = ctx.messages
        h = msgs[first:]
        if len(h) < 2:
            return None
        typed = [i for i, m in enumerate(h) if is_turn_start(m) and m.blocks  # an empty message types nothing
                 and (m.text.strip() or len(m.blocks) > 1 or not isinstance(m.blocks[0], Text))]
        if not typed:
            return None
        latest = typed[-1]
        total = sum(ctx.est(h[i]) for i in typed)
        frozen = {i for i, m in enumerate(h) if m.meta.get(PRESERVED) and i not in typed}
        total += sum(ctx.est(h[i]) for i in frozen)
        start, acc = len(h), 0
        for i in range(len(h) - 1, latest, -1):
            if i in frozen:
                break
            cost = ctx.est(h[i])
            if total + acc + cost > target:
                break
            acc, start = acc + cost, i
        while start < len(h) and h[start].role != "assistant":
            start += 1
        extra = set(range(start, len(h)))
        total += sum(ctx.est(h[i]) for i in extra)
        finals: dict[int, Message] = {}
        for b in range(len(typed) - 2, -1, -1):
            for i in range(typed[b + 1] - 1, typed[b], -1):
                if i in frozen:
                    break
                m = h[i]
                if m.role != "assistant" or m.tool_uses:
                    continue
                kept_blocks = tuple(x for x in m.blocks if not isinstance(x, Thinking))
                if any(isinstance(x, Text) and x.text.strip() for x in kept_blocks):
                    final = replace(m, blocks=kept_blocks)
                    if total + ctx.est(final) <= target:
                        finals[i] = final
                        total += ctx.est(final)
                break
        kept: list[tuple[int, Message]] = []
        for i, m in enumerate(h):
            if i in typed or i in frozen or i in extra:
                kept.append((i, m))
            elif i in finals:
                kept.append((i, finals[i]))
        merged = self._merged(kept, h)
        if [id(m) for m in merged] == [id(m) for m in h]:
            return None
        marked = [m if is_turn_start(m) or m.meta.get(PRESERVED) else replace(m, meta={**m.meta, PRESERVED: True})
                  for m in merged]
        kept_at = {j for j, _ in kept}  # once: a set built per message made basic O(history²)
        dropped = [m for i, m in enumerate(h) if i not in kept_at]
        out = without_orphan_results((*msgs[:first], *marked), dropped)
        after = ctx.replace(out)
        return Outcome(after, (event("drop", ctx, after, touched=len(h) - len(merged), detail="basic"),))

    def _merged(self, kept: list[tuple[int, Message]], h: tuple[Message, ...]) -> list[Message]:
        """mergeAdjacentUserTurns: runs of typed prompts become one message with the dropped work
        between them as a notice; work dropped after a typed prompt is appended to it."""
        texts = [i for i in range(len(h) - 1, -1, -1) if h[i].role == "assistant" and h[i].text.strip()]
        recent = set(texts[:PRESERVED_ASSISTANT_TEXTS])
        out: list[tuple[int, int, Message, bool]] = []  # first, last original index, message, typed
        k = 0
        while k < len(kept):
            i, m = kept[k]
            if not is_turn_start(m):
                out.append((i, i, m, False))
                k += 1
                continue
            blocks = list(m.blocks)
            end = k
            while end + 1 < len(kept) and is_turn_start(kept[end + 1][1]):
                prev, cur = kept[end][0], kept[end + 1][0]
                if cur > prev + 1 and (notice := self._notice(h[prev + 1:cur], prev + 1, recent, h)):
                    blocks.append(notice)
                blocks.extend(kept[end + 1][1].blocks)
                end += 1
            out.append((i, kept[end][0], replace(m, blocks=tuple(blocks)) if end > k else m, True))
            k = end + 1
        result: list[Message] = []
        for n, (_, last, m, is_typed) in enumerate(out):
            gap_end = out[n + 1][0] if n + 1 < len(out) else len(h)
            if is_typed and gap_end > last + 1 and (notice := self._notice(h[last + 1:gap_end], last + 1, recent, h)):
                m = replace(m, blocks=(*m.blocks, notice))
            result.append(m)
        return result

    def _notice(self, span: tuple[Message, ...], offset: int, recent: set[int], h: tuple[Message, ...]) -> Text | None:
        """buildDroppedWorkSummaryBlock over summarizeToolActivity of the dropped span."""
        read: dict[str, None] = {}
        edited: dict[str, None] = {}
        commands: dict[str, None] = {}
        for u in (u for m in span for u in m.tool_uses):
            path = _path(u)
            if path and u.name in self.read_tools:
                read.setdefault(path, None)
            elif path and u.name in self.write_tools:
                edited.setdefault(path, None)
            elif u.name in self.command_tools:
                cmd = next((v for k in COMMAND_KEYS if isinstance(v := u.input.get(k), str) and v), None)
                if cmd:
                    commands.setdefault(cmd, None)
        responses = [h[offset + j].text.strip() for j in range(len(span)) if offset + j in recent]
        if not (read or edited or commands or responses):
            return None
        body = (f"Files read:\n{chr(10).join(read)}\n\nFiles edited:\n{chr(10).join(edited)}\n\n"
                f"Commands ran:\n{chr(10).join(commands)}")
        if responses:
            body += "\n\nYour recent responses:\n" + "\n---\n".join(responses)
        return Text("<SYSTEM_NOTICE>\nEarlier context was compacted. Summary of your actions after the request "
                    f"above:\n{body}</SYSTEM_NOTICE>")
