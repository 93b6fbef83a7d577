"""Cline's VS Code extension context management (``cline-half``, ``cline-quarter``): drop a growing
middle range of the history, after removing duplicate file reads (spec/strategies.md §2.2-2.4).
Source: cline/cline @94f5a47a59d4de809463911aad9b9672ab1cbbbf apps/vscode/src/core/context/
context-management/ContextManager.ts + context-window-utils.ts + core/prompts/responses.ts.

Cline's history has no system message, so Cline index i is our index i + 1: the first user /
assistant pair (Cline 0 and 1) is ours 1 and 2, and the deleted range always starts at Cline 2.
The context holds what Cline sends (the range already applied), so each truncation computes the
next range on what is left, which is the same arithmetic as Cline's over the full history.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from bench.context import (
    SHARE,
    Context,
    Event,
    Image,
    Message,
    Outcome,
    Strategy,
    Text,
    ToolResult,
    ToolUse,
    event,
    render,
)
from strategies._tools import last_human_index, tool_inputs, without_orphan_results
from strategies.cline._common import READ_TOOLS, _path

if TYPE_CHECKING:
    from bench.context import Session

TRUNCATION_NOTICE = (
    "[NOTE] Some previous conversation history with the user has been removed to maintain optimal context "
    "window length. The initial user task has been retained for continuity, while intermediate conversation "
    "history has been removed. Keep this in mind as you continue assisting the user. Pay special attention to "
    "the user's latest messages.")
READ_NOTICE = ("[[NOTE] This file read has been removed to save space in the context window. Refer to the "
               "latest file read for the most up to date version of this file.]")
CONTINUE_NOTICE = "[Continue assisting the user!]"
RESULT_MISSING = "result missing"
HEADER = re.compile(r"^\[(\w+) for '([^']*)'\] Result:")
FINAL_CONTENT = re.compile(r'(<final_file_content path="([^"]*)">)(.*?)(</final_file_content>)', re.S)
MENTION = re.compile(r'(<file_content path="([^"]*)">)(.*?)(</file_content>)', re.S)


def max_allowed_size(window: int) -> int:
    """getContextWindowInfo: exact-match buffers for 64K / 128K / 200K windows, else the larger of
    window - 40K and 80% of the window (the 400K Codex-OAuth case needs a provider we do not model)."""
    window = window or 128_000
    buffers = {64_000: 27_000, 128_000: 30_000, 200_000: 40_000}
    return window - buffers[window] if window in buffers else max(window - 40_000, int(window * 0.8))


def removal_count(remaining: int, keep: str) -> int:
    """getNextTruncationRange's messagesToRemove for ``remaining`` messages after the range."""
    counts = {"none": remaining, "lastTwo": max(remaining - 2, 0), "half": remaining // 4 * 2,
              "quarter": int(remaining * 3 / 4 / 2) * 2}
    return max(counts[keep], 0)


@dataclass(frozen=True, kw_only=True)
class Cline(Strategy):
    """Cline's default context management: file-read dedup, then middle-out truncation keeping ½
    (or ¼) of the messages after the first pair. Source: cline/cline @94f5a47a59d4
    apps/vscode/src/core/context/context-management/ContextManager.ts, context-window-utils.ts,
    core/prompts/responses.ts (same logic at @9ee61811 src/core/context/context-management/).

    Trigger: the previous request's usage (tokensIn + tokensOut + cache writes + reads) ≥
    maxAllowedSize, so the decision comes one call late; "quarter" when usage / 2 > budget and
    always on an overflow error (which skips the dedup and also puts "[Continue assisting the
    user!]" into the first user message). The range is inclusive, starts at Cline index 2 and
    only grows; the notice goes into the first assistant message once.

    Deviations: (1) the latest human request is kept (its text, after the first pair) when the
    range would delete it, and the overflow path never overwrites it when it is the first user
    message (harness contract); (2) dedup looks at every tool_result block of a user message, not
    only block 0 (our traces batch parallel calls in one message), and every text block among
    blocks 0-2 for @-mentions; (3) a message left empty by removing orphaned results is not sent
    (Cline would keep an empty one), so a later range counts one message fewer; (4) not modelled:
    the 400K Codex-OAuth budget (no provider in our profiles) and the auto-condense path
    (``useAutoCondense`` defaults to false). Version 2: the message after the cut keeps its
    non-result blocks (Cline strips only the orphaned tool_result blocks). Version 3: the notices
    only replace a text block 0; a first message opening with a tool call (or thinking) is left
    without one, as in Cline (it no longer gets a text block inserted). Version 4: the dedup
    savings share divides by text, tool-result and image characters only, and only block 0 of
    each user message (calculateContextOptimizationMetrics), not the whole rendered history.
    Version 5: the latest request deviation (1) skips an empty user message (a log can hold one;
    Cline sends none: the API refuses it), which version 4 kept instead of the real request.
    """

    name = "cline"
    citation = ("cline/cline @94f5a47a59d4de809463911aad9b9672ab1cbbbf apps/vscode/src/core/context/"
                "context-management/ContextManager.ts + context-window-utils.ts + core/prompts/responses.ts")
    version = 5

    ranges = {"dedup_threshold": SHARE}
    """The share of characters a deduplication must save (0: any saving)."""

    estimator: str = "truth"
    """Cline decides on the provider-reported usage of the previous request, not a local estimate."""
    keep: str = "half"
    """The usual mode; "quarter" is also chosen when usage / 2 exceeds the budget and on overflow."""
    dedup_threshold: float = 0.30
    read_tools: tuple[str, ...] = READ_TOOLS

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        usage = session.last_usage
        if usage is None:
            return None
        total = usage.prompt_tokens + usage.output_tokens  # tokensIn + tokensOut + cache writes + reads
        budget = max_allowed_size(session.model.context_window)
        if total < budget:
            return None
        keep = "quarter" if total / 2 > budget else self.keep
        deduped, touched, saved = self.deduplicated(ctx.messages)
        events: list[Event] = []
        new = ctx
        if touched:
            new = ctx.replace(deduped)
            events.append(event("dedup", ctx, new, touched=touched, detail=f"{saved:.0%} of chars"))
            if saved >= self.dedup_threshold:
                return Outcome(new, tuple(events))
        return self.truncated(new, session, keep, tuple(events))

    def on_overflow(self, ctx: Context, session: Session) -> Outcome | None:
        return self.truncated(ctx, session, "quarter", (), overflow=True)

    def truncated(self, ctx: Context, session: Session, keep: str, events: tuple[Event, ...],
                  *, overflow: bool = False) -> Outcome | None:
        msgs = ctx.messages
        start = 3  # Cline index 2
        end = start + removal_count(len(msgs) - start, keep) - 1  # inclusive, as in Cline
        if end < len(msgs) and end >= start and msgs[end].role != "assistant":
            end -= 1
        if end < start:
            return Outcome(ctx, events) if events else None
        cut = end + 1
        # Cline's cut: the range ends on an assistant message; results of its calls leave what follows
        kept = without_orphan_results((*msgs[:start], *msgs[cut:]), msgs[start:cut])
        human = last_human_index(msgs, skip_empty=True)  # an empty user message is no request
        if start <= human < cut:  # deviation: keep the latest human request (contract invariant 2)
            text = tuple(b for b in msgs[human].blocks if not isinstance(b, ToolResult))
            kept.insert(start, replace(msgs[human], blocks=text))
        kept = self.paired(kept)
        if msgs[2].role == "assistant" and not session.state.get("cline.notice"):
            kept[2] = _with_first_text(kept[2], TRUNCATION_NOTICE)
            session.state["cline.notice"] = True
        if overflow and msgs[1].is_human_turn and human != 1:  # deviation: never the latest request
            kept[1] = _with_first_text(kept[1], CONTINUE_NOTICE)
        previous = session.state.get("cline.range", (2, 1))
        session.state["cline.range"] = (2, previous[1] + cut - start)  # Cline's end, never widened
        after = ctx.replace(kept)
        detail = f"{keep}: range {session.state['cline.range']}"
        return Outcome(after, (*events, event("drop", ctx, after, touched=cut - start + 1, detail=detail)))

    @staticmethod
    def paired(msgs: list[Message]) -> list[Message]:
        """Cline's tool pairing repair for the first assistant message: its calls whose results were
        removed get a ``result missing`` result in the next user message."""
        answered = {r.tool_use_id for m in msgs for r in m.tool_results}
        missing = tuple(ToolResult(u.id, RESULT_MISSING) for u in msgs[2].tool_uses if u.id not in answered)
        if not missing or msgs[2].role != "assistant":
            return msgs
        if len(msgs) > 3 and msgs[3].role == "user":
            msgs[3] = replace(msgs[3], blocks=(*missing, *msgs[3].blocks))
        else:
            msgs.insert(3, Message("user", missing))
        return msgs

    def deduplicated(self, msgs: tuple[Message, ...]) -> tuple[tuple[Message, ...], int, float]:
        """Replace every read of a file but the newest with Cline's notice (§2.4).

        Returns the messages, how many were rewritten, and the share of characters saved.
        """
        uses = tool_inputs(msgs)
        reads: dict[str, list[tuple[int, int]]] = {}  # path -> (message, block) in order
        for i in range(3, len(msgs)):
            m = msgs[i]
            if m.role != "user":
                continue
            for bi, b in enumerate(m.blocks):
                found: list[str] = []
                if isinstance(b, ToolResult):
                    u = uses.get(b.tool_use_id)
                    if u is not None and u.name in self.read_tools and (path := _path(u)):
                        found = [path]
                    else:
                        found = [p for _, p, _, _ in FINAL_CONTENT.findall(b.content)]
                elif isinstance(b, Text) and bi < 3:
                    found = [p for _, p, _, _ in MENTION.findall(b.text)]
                for path in dict.fromkeys(found):
                    reads.setdefault(path, []).append((i, bi))
        stale: dict[tuple[int, int], set[str]] = {}
        for path, where in reads.items():
            for key in where[:-1]:
                stale.setdefault(key, set()).add(path)
        if not stale:
            return msgs, 0, 0.0
        out = list(msgs)
        for i in sorted({i for i, _ in stale}):
            blocks = list(out[i].blocks)
            for bi in sorted(bi for j, bi in stale if j == i):
                blocks[bi] = self._notice_block(blocks[bi], stale[(i, bi)], uses)
            out[i] = replace(out[i], blocks=tuple(blocks))
        total = sum(_counted_chars(m) for m in msgs[1:])
        saved = sum(_counted_chars(a, every_block=True) - _counted_chars(b, every_block=True)
                    for a, b in zip(msgs, out, strict=True) if a is not b)
        touched = sum(1 for a, b in zip(msgs, out, strict=True) if render(a) != render(b))
        return tuple(out), touched, saved / total if total else 0.0

    def _notice_block(self, b: object, paths: set[str], uses: dict[str, ToolUse]) -> object:
        def inner(match: re.Match[str]) -> str:
            return f"{match[1]} {READ_NOTICE} {match[4]}" if match[2] in paths else match[0]

        if isinstance(b, Text):
            return replace(b, text=MENTION.sub(lambda m: m[1] + READ_NOTICE + m[4] if m[2] in paths else m[0], b.text))
        assert isinstance(b, ToolResult)
        u = uses.get(b.tool_use_id)
        if u is not None and u.name in self.read_tools:
            header = HEADER.match(b.content)
            return replace(b, content=f"{header[0]}\n{READ_NOTICE}" if header else READ_NOTICE)
        return replace(b, content=FINAL_CONTENT.sub(inner, b.content))


def _counted_chars(m: Message, *, every_block: bool = False) -> int:
    """calculateContextOptimizationMetrics' character count: text, tool-result and image
    characters only, and of a user message only content block 0 (ContextManager.ts). The savings
    side counts every rewritten block (our deviation 2 rewrites results beyond block 0)."""
    blocks = m.blocks if every_block or m.role != "user" else m.blocks[:1]
    n = 0
    for b in blocks:
        if isinstance(b, Text):
            n += len(b.text)
        elif isinstance(b, ToolResult):
            n += len(b.content)
        elif isinstance(b, Image):
            n += math.ceil(b.size_bytes * 4 / 3)  # the base64 data Cline measures
    return n


def _with_first_text(m: Message, text: str) -> Message:
    """Cline's edit of content block 0: its text is replaced only when block 0 is a non-empty text
    block (``applyContextHistoryUpdates`` skips any other block type, and the first-user-message
    replacement needs some text); a message opening with a tool call or thinking stays as is."""
    if m.blocks and isinstance(m.blocks[0], Text) and m.blocks[0].text:
        return replace(m, blocks=(Text(text), *m.blocks[1:]))
    return m
