"""OpenHands V0 ``AmortizedForgettingCondenser`` (OpenHands/OpenHands@d6fab190
openhands/memory/condenser/impl/amortized_forgetting_condenser.py): past max_size, forget down to half.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.context import Context, Outcome, Strategy, event
from strategies.openhands._common import V0, around_waiting, keep_indices, waits

if TYPE_CHECKING:
    from bench.context import Session

@dataclass(frozen=True, kw_only=True)
class AmortizedForgetting(Strategy):
    """V0 ``AmortizedForgettingCondenser``: past max_size, forget down to half, no summary.

    Source: V0 ``amortized_forgetting_condenser.py``; config max_size 100, keep_first 1
    (constructor 0). When len > max_size, or on a condensation request (V0's controller adds one
    when the LLM call overflows, ``enable_history_truncation`` being on by default): keep
    view[:keep_first] + the last max_size//2 − keep_first events and forget the rest (one id
    range), if that forgets anything; rolling, stored. The latest human turn is kept (harness
    contract). Version 2: an overflow is such a request (version 1 ignored it). Version 3: an
    empty user message is not that latest turn (version 2 kept it instead of the real request),
    and nothing is forgotten while a call waits for its result (``waits``: version 2 stored a view
    without the call, and its result came back alone); a request meanwhile forgets only what
    precedes the waiting calls.
    """

    name = "openhands:amortized"
    citation = V0 + " AmortizedForgettingCondenser"
    version = 3

    estimator: str = "truth"
    max_size: int = 100
    keep_first: int = 1

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        if len(ctx) <= self.max_size or waits(ctx):
            return None
        return self._forget(ctx, f"{len(ctx)} events > max_size {self.max_size}")

    def on_overflow(self, ctx: Context, session: Session) -> Outcome | None:
        return around_waiting(ctx, lambda c: self._forget(c, "condensation request (context window exceeded)"))

    def _forget(self, ctx: Context, why: str) -> Outcome | None:
        n = len(ctx)
        tail = self.max_size // 2 - self.keep_first
        if n <= self.keep_first + tail:  # nothing to forget
            return None
        after = ctx.replace(keep_indices(ctx, {*range(self.keep_first), *range(n - tail, n)}))
        return Outcome(after, (event("drop", ctx, after, touched=n - len(after),
                                     detail=f"{why}: forgot down to {len(after)}"),))
