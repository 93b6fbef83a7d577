"""Codex's local compaction: the session's model writes the summary, Codex rebuilds the history.

openai/codex @0100b103625752f6a10c21b79a8c423761dc4c6a codex-rs/core/src/compact.rs
(``build_compacted_history``, ``COMPACT_USER_MESSAGE_MAX_TOKENS``); ``history_form="bridge"`` is the
Sept-Oct 2025 generation (``codex:2025``: templates/compact/history_bridge.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.context import CUT_LATEST_HUMAN, Event, Outcome, event
from strategies._tools import drop_range, text_user
from strategies.codex.common import (
    BRIDGE_LEAD,
    COMPACT_PROMPT,
    SUMMARY_PREFIX,
    approx_tokens,
    middle_truncate,
    new_turn_input,
    user_messages,
)

if TYPE_CHECKING:
    from bench.context import Context, Session


class LocalCompaction:
    """``compact`` (local, or handed to ``remote_compact`` for ``engine="remote"``); mixed into ``Codex``."""

    def compact(self, ctx: Context, session: Session, *, pre_turn: bool = False) -> Outcome | None:
        """Compact now; ``pre_turn``: a new turn's input after the last answer is left out of it and
        appended after the new history (it was not recorded yet when Codex checked)."""
        if self.engine == "remote":
            return self.remote_compact(ctx, session, pre_turn=pre_turn)
        system, held = ctx.messages[0], ctx.messages[1:]
        cut = new_turn_input(held) if pre_turn else len(held)
        history, pending = held[:cut], held[cut:]  # a pre-turn compaction: the new input comes after
        if not history:
            return None
        fixed = ctx.tok(system) + session.meter.counter.text(COMPACT_PROMPT)
        request, trimmed = history, 0
        # the compaction request itself over the window: drop the oldest item (with its pair), retry
        while len(request) > 1 and not session.model.fits(fixed + sum(ctx.tok(m) for m in request), 0):
            request, trimmed = drop_range(request, 0, 1), trimmed + 1
        summary = session.summarize((system, *request), prompt=COMPACT_PROMPT,
                                    max_tokens=session.model.max_output)
        text = f"{SUMMARY_PREFIX}\n{summary.text or '(no summary available)'}"
        texts = user_messages(history)
        kept = self.recent_user_messages(texts)
        if self.history_form == "bridge":  # Sept-Oct 2025: one user message carries it all
            bridge = "\n\n".join((BRIDGE_LEAD, "\n\n".join(kept) or "(none)", text))
            after = ctx.replace((system, text_user(bridge, summary=True), *pending))
        else:
            after = ctx.replace((system, *(text_user(t) for t in kept), text_user(text, summary=True), *pending))
        events: tuple[Event, ...] = (event("summarize", ctx, after, touched=len(history),
                                           summary_tokens=summary.output_tokens,
                                           detail=f"trimmed {trimmed} oldest item(s)" if trimmed else ""),)
        if texts and kept[-1:] != texts[-1:]:  # Codex's own cut, recorded rather than hidden (issue 11)
            events += (event("truncate", after, after, touched=1,
                             detail=f"{CUT_LATEST_HUMAN}: over {self.user_message_max_tokens:,} tokens, "
                                    f"middle-truncated"),)
        return Outcome(after, events)

    def recent_user_messages(self, texts: list[str]) -> list[str]:
        """Newest first within the budget; the first that does not fit is cut to what is left
        and the walk stops there (an older, smaller message is not taken)."""
        remaining, kept = self.user_message_max_tokens, []
        for text in reversed(texts):
            if remaining <= 0:
                break
            size = approx_tokens(text)
            if size <= remaining:
                kept.append(text)
                remaining -= size
            else:
                kept.append(middle_truncate(text, remaining * 4))
                break
        return kept[::-1]
