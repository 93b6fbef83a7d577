"""Claude Code 2.1.21 on: the 2.0 rules with the reserve capped, then the safety rules added since.

==================  ===============  =========================================================
variant             versions         what changes (the field, its default there)
==================  ===============  =========================================================
claude-code:2.1.21  [2.1.21, 2.1.76) reserve min(max output, 20K) (L4238, 2.1.21: "auto-compact
                                     triggering too early on models with large output token
                                     limits") -> 167,000; the 2.1.22 session reached 155,808
                                     without compacting. Invoked skills re-injected.
claude-code:2.1.76  [2.1.76, 2.1.89) ``max_autocompact_failures=3`` (L3485: circuit breaker after
                                     3 consecutive failed auto-compactions; before, every turn
                                     retried).
claude-code:2.1.89  [2.1.89, 2.1.142) ``thrash_limit=3`` (L3099: context back at the limit right
                                     after compacting, three times in a row -> stop with an error).
claude-code         2.1.142 on       ``reactive_fit=True`` (L2024: on prompt_too_long the first
                                     summarize request is already cut to fit from the reported
                                     overflow).
==================  ===============  =========================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from bench.context import Context, Event, Message, Outcome
from strategies.claude_code.v2_0 import Rules20
from strategies.layered._common import SUMMARY_PROMPT, _fail

if TYPE_CHECKING:
    from bench.context import Session


class Rules21(Rules20):
    """The circuit breaker (2.1.76), thrash detection (2.1.89) and the reactive cut (2.1.142)."""

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        st = session.state
        if self.thrash_limit is not None and st.get("compacted_at") == session.call_index - 1:
            # the first check after a compaction: is the context already back at the threshold?
            refilled = self.count(ctx, session, "usage_stale" not in st) >= self.autocompact_threshold(session)
            st["refills"] = st.get("refills", 0) + 1 if refilled else 0
            if st["refills"] >= self.thrash_limit:
                return _fail(ctx, f"autocompact thrash: the context was back at the threshold right after "
                                  f"{st['refills']} compactions in a row")
        return super().before_call(ctx, session)


    def _auto_failed(self, done: object, still_over: bool) -> bool:
        return done is None


    def _compact(self, ctx: Context, session: Session, label: str) -> tuple[Context, list[Event]] | None:
        out = super()._compact(ctx, session, label)
        if out is not None:
            session.state["compacted_at"] = session.call_index
        return out


    def _summary_input(self, history: Sequence[Message], session: Session, label: str
                       ) -> tuple[Sequence[Message], str]:
        """The reactive (L4) summarize request cut to fit the window with the summary's output room:
        whole API rounds (an answer and the results after it) dropped oldest first until the
        overflow is covered, the last round always kept (Claude Code's ``truncateHeadForPTLRetry``,
        services/compact/compact.ts in the 2026 source-map analyses: grouped by API round, at least one
        group kept). From 2.1.142 the cut is made before the first request, from the
        overflow the API reported; before, a first request with everything overflowed and the
        retry dropped the oldest rounds (spec §4.1). An overflowed request is not billed and the
        replay has no latency per request, so both leave the same summary; the event says which.
        Not modelled: the user marker it puts first when the kept part starts with an answer, and
        the failed compaction when even the last round alone does not fit."""
        if not label.startswith("L4"):
            return history, ""
        meter = session.meter
        sizes = [meter.truth(m) for m in history]
        budget = session.model.context_window - self.summary_max_tokens - meter.counter.text(SUMMARY_PROMPT)
        over = meter.overhead + sum(sizes) - budget
        if over <= 0:
            return history, ""
        # API rounds: each starts at an assistant message and holds the results after it. The last round
        # always stays (``truncateHeadForPTLRetry`` keeps at least one group): cutting into it sent its
        # results without their calls, a request the API refuses.
        starts = [i for i in range(1, len(history)) if history[i].role == "assistant"]
        start = dropped = 0
        for nxt in starts:
            if dropped >= over:
                break
            dropped += sum(sizes[start:nxt])
            start = nxt
        how = (f"request cut by the reported overflow ({over} tokens)" if self.reactive_fit
               else f"first request overflowed by {over} tokens, retried")
        return history[start:], f"; {how} without the {start} oldest messages"
