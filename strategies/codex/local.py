"""Codex's local compaction: the session's model writes the summary, Codex rebuilds the history.

openai/codex @0100b103625752f6a10c21b79a8c423761dc4c6a codex-rs/core/src/compact.rs
(``build_compacted_history``, ``COMPACT_USER_MESSAGE_MAX_TOKENS``); ``history_form="bridge"`` is the
Sept-Oct 2025 generation (``codex:2025``: templates/compact/history_bridge.md).

The initial context (developer instructions, the AGENTS.md message, the environment context) always
comes back, in every version; only where it goes changed (issue 27). 2025 (@0100b103 compact.rs:165-166,
``run_compact_task_inner``): ``build_initial_context`` heads the new history. 2026
(@e06dd0e5d5694c24968bf49b62466cdedae04aaa compact.rs:35-49 ``InitialContextInjection``, :255-262 and
``insert_initial_context_before_last_real_user_or_summary`` :323-366): a mid-turn compaction puts it just
above the last kept real user message (else above the summary); a pre-turn one leaves it out and clears
``reference_context_item``, so the next turn's ``record_context_updates_and_set_reference_context_item``
(codex.rs) writes the whole set again before the turn's input. A loaded skill's ``<skill>`` body is
not a user message for Codex (``common.contextual``) and is not rebuilt: it is gone after a compaction
unless the summary carries it.
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
    initial_context_item,
    latest_initial_context,
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
        context = latest_initial_context(history)
        if self.history_form == "bridge":  # Sept-Oct 2025: one user message carries it all, context first
            bridge = "\n\n".join((BRIDGE_LEAD, "\n\n".join(kept) or "(none)", text))
            after = ctx.replace((system, *context, text_user(bridge, summary=True), *pending))
        elif pending:  # 2026 pre-turn (DoNotInject): the next turn writes the initial context again
            if any(initial_context_item(m) for m in pending):  # the trace recorded it: not twice
                context = ()
            after = ctx.replace((system, *(text_user(t) for t in kept), text_user(text, summary=True),
                                 *context, *pending))
        else:  # 2026 mid-turn (BeforeLastUserMessage): above the last real user message, else the summary
            users = [text_user(t) for t in kept]
            after = ctx.replace((system, *users[:-1], *context, *users[-1:], text_user(text, summary=True)))
        notes = [f"trimmed {trimmed} oldest item(s)"] if trimmed else []
        if context:
            notes.append(f"{len(context)} initial-context item(s) re-injected")
        events: tuple[Event, ...] = (event("summarize", ctx, after, touched=len(history),
                                           summary_tokens=summary.output_tokens, detail="; ".join(notes)),)
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
