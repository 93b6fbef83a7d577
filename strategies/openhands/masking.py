"""OpenHands V0 ``ObservationMaskingCondenser`` (OpenHands/OpenHands@d6fab190
openhands/memory/condenser/impl/observation_masking_condenser.py): a sent view in which observations
older than the attention window are masked, kept between calls by ``_MaskView``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from bench.context import Block, Context, Message, Text, ToolResult, derived, starts_with
from strategies.openhands._common import V0, _bump, _ViewCondenser, render

if TYPE_CHECKING:
    from bench.context import Session

MASKED = "<MASKED>"


@dataclass(frozen=True, kw_only=True)
class ObservationMasking(_ViewCondenser):
    """V0 ``ObservationMaskingCondenser``: observations older than the window become "<MASKED>".

    Source: V0 ``observation_masking_condenser.py``. attention_window: 100 in the config
    (default here), 5 in the constructor. An observation at position i < len(view) − window
    becomes an AgentCondensationObservation("<MASKED>"), rendered as a user message; its
    action then never completes, so conversation memory drops the assistant tool call too.
    """

    name = "openhands:masking"
    citation = V0 + " ObservationMaskingCondenser"
    kind = "mask"

    attention_window: int = 100

    def _masked(self, m: Message, session: Session) -> Message:
        """The placeholder for observation ``m``: one object per message, across calls."""
        memo: dict[int, tuple[Message, Message]] = session.state.setdefault("masked", {})
        cached = memo.get(id(m))
        if cached is None or cached[0] is not m:
            others = tuple(b for b in m.blocks if not isinstance(b, ToolResult))
            cached = memo[id(m)] = (m, Message("user", (Text(MASKED), *others), meta={"masked": True}))
        return cached[1]

    def view(self, ctx: Context, session: Session) -> tuple[Message, ...] | None:
        """The from-scratch definition (kept for the cases ``_MaskView`` leaves to it)."""
        cutoff = len(ctx) - self.attention_window
        if not any(m.tool_results for m in ctx.messages[:max(cutoff, 0)]):
            return None
        out = [self._masked(m, session) if i < cutoff and m.tool_results else m for i, m in enumerate(ctx.messages)]
        return render(out, ctx.messages)

    def _sent(self, ctx: Context, session: Session) -> Context:
        """Incremental while the stored history only grows (it always does here): the view of the
        previous call is updated for the appended messages and the observations that left the window
        (``_MaskView``); anything else is rebuilt from scratch by ``view``, with the same result."""
        cached = session.state.get("projection")
        if cached is not None and cached[0] is ctx.messages:
            return cached[1]
        state: _MaskView | None = session.state.get("mask_view")
        if state is None or not state.follows(ctx):
            state = _MaskView(ctx)
        if state.advance(ctx, self.attention_window, lambda m: self._masked(m, session)):
            sent = state.sent
        else:  # the first human turn or the system prompt is itself masked: render re-inserts it
            state = None
            msgs = self.view(ctx, session)
            sent = ctx if msgs is None else ctx.replace(msgs)
        session.state["mask_view"] = state
        session.state["projection"] = (ctx.messages, sent)
        return sent

    def touched(self, ctx: Context, sent: Context, session: Session) -> int:
        state: _MaskView | None = session.state.get("mask_view")
        if state is None or state.messages is not ctx.messages or state.sent is not sent:
            return super().touched(ctx, sent, session)
        return len(ctx) - state.kept


class _MaskView:
    """``ObservationMasking``'s view, kept between calls (in ``session.state``) and moved by what
    changed: the appended messages and the observations that left the attention window.

    ``render`` depends on the whole view only through two id multisets: the results sent
    (``answered``: a call whose results are all there is complete) and the calls of complete
    messages (``calls``: a result without one is stripped). Both are kept as counts; when an id's
    count reaches or leaves zero, only the messages holding that id are looked at again.
    """

    def __init__(self, ctx: Context) -> None:
        self.messages: tuple[Message, ...] = ()
        self.meter = ctx.meter
        self.cutoff = 0
        self.any_masked = False
        self.first_human = -1
        self.pre: list[Message] = []
        """Per stored position: the message after masking (itself, or its placeholder)."""
        self.slots: list[Message | None] = []
        """Per stored position: what is sent for it (None: dropped by ``render``)."""
        self.complete: list[bool] = []
        self.contrib: list[tuple[str, ...]] = []
        """Per position: the call ids it adds to ``calls`` (its uses when complete)."""
        self.answered: dict[str, int] = {}
        self.calls: dict[str, int] = {}
        self.uses_at: dict[str, list[int]] = {}
        self.results_at: dict[str, list[int]] = {}
        self.cuts: dict[int, tuple[Message, tuple[Block, ...], Message]] = {}
        """Position → (message, its blocks left, the message cut to them): results without a call stripped."""
        self.kept = 0
        """Positions sent as the stored message itself (for the event's ``touched``)."""
        self.sending = 0
        """Slots that are not None (the length of the view made from them)."""
        self.estimate = 0
        self.truth = 0
        """Totals of the messages sent (no overhead), moved by each slot that changes."""
        self.sent = ctx.replace(())
        self.from_slots = False
        """Whether ``sent`` was made from the slots (so its head can be told from them)."""

    def follows(self, ctx: Context) -> bool:
        """Is ``ctx`` the history this view was made from, with messages appended, same meter?"""
        old, new = self.messages, ctx.messages
        return ctx.meter is self.meter and starts_with(new, old)

    def advance(self, ctx: Context, window: int, mask: Callable[[Message], Message]) -> bool:
        """Bring the view up to ``ctx``; False when render's re-insertions would apply (left to ``view``)."""
        msgs = ctx.messages
        n_old, n = len(self.messages), len(msgs)
        cutoff = max(self.cutoff, n - window)
        if self.first_human < 0:
            self.first_human = next((i for i in range(n_old, n) if msgs[i].is_human_turn), -1)
        fh = self.first_human
        if (fh >= 0 and fh < cutoff and msgs[fh].tool_results) or (
                n and msgs[0].role == "system" and msgs[0].tool_results and cutoff > 0):
            return False
        flip_answered: set[str] = set()
        dirty: set[int] = set(range(n_old, n))
        for k in range(n_old, n):
            m = msgs[k]
            self.pre.append(m)
            self.slots.append(None)
            self.complete.append(False)
            self.contrib.append(())
            for u in m.tool_uses:
                self.uses_at.setdefault(u.id, []).append(k)
            for r in m.tool_results:
                self.results_at.setdefault(r.tool_use_id, []).append(k)
                if _bump(self.answered, r.tool_use_id, 1):
                    flip_answered.add(r.tool_use_id)
        for k in range(max(self.cutoff, 0), cutoff):
            m = msgs[k]
            if not m.tool_results:
                continue
            self.any_masked = True
            placeholder = self.pre[k] = mask(m)
            for r in m.tool_results:
                if _bump(self.answered, r.tool_use_id, -1):
                    flip_answered.add(r.tool_use_id)
            for u in placeholder.tool_uses:  # a placeholder keeps the message's other blocks
                self.uses_at.setdefault(u.id, []).append(k)
            dirty.add(k)
        self.cutoff = cutoff
        for i in flip_answered:
            dirty.update(self.uses_at.get(i, ()))
        flip_calls: set[str] = set()
        for k in dirty:
            m = self.pre[k]
            answered = self.answered
            complete = not m.tool_uses or all(answered.get(u.id, 0) > 0 for u in m.tool_uses)
            contrib = tuple(u.id for u in m.tool_uses) if complete else ()
            self.complete[k] = complete
            if contrib != self.contrib[k]:
                for i in self.contrib[k]:
                    if _bump(self.calls, i, -1):
                        flip_calls.add(i)
                for i in contrib:
                    if _bump(self.calls, i, 1):
                        flip_calls.add(i)
                self.contrib[k] = contrib
        for i in flip_calls:
            dirty.update(self.results_at.get(i, ()))
        for k in dirty:
            self._settle(k, msgs[k])
        self.messages = msgs
        if not self.any_masked:
            self.sent = ctx
        else:  # totals by difference over the slots that changed, not over a shifted tuple
            meter, before = self.meter, self.sent.messages
            if self.from_slots:  # the slots before the first one settled again are sent as before:
                d = min(dirty, default=len(self.slots))  # their part of ``before`` is reused, not refiltered
                after = tuple(filter(None, self.slots[d:]))
                same = self.sending - len(after)  # the slots sent before d
                sent = before[:same] + after
                derived(sent, before, same)
            else:
                sent = tuple(filter(None, self.slots))
            self.sent = Context(sent, self.estimate, meter.overhead + self.truth, meter)
            self.from_slots = True
        return True

    def _settle(self, k: int, stored: Message) -> None:
        """Position ``k``'s sent message from its masked form, ``complete`` and ``calls``."""
        before = self.slots[k]
        m = self.pre[k] if self.complete[k] else None
        if m is not None and any(self.calls.get(r.tool_use_id, 0) <= 0 for r in m.tool_results):
            calls = self.calls
            blocks = tuple(b for b in m.blocks
                           if not (isinstance(b, ToolResult) and calls.get(b.tool_use_id, 0) <= 0))
            cut = self.cuts.get(k)
            if not blocks:
                m = None
            elif cut is not None and cut[0] is m and cut[1] == blocks:
                m = cut[2]  # the same cut of the same message as before: the same object
            else:
                cut = self.cuts[k] = (m, blocks, replace(m, blocks=blocks))
                m = cut[2]
        self.kept += (m is stored) - (before is stored)
        self.sending += (m is not None) - (before is not None)
        if m is not before:
            meter = self.meter
            if before is not None:
                self.estimate -= meter.estimate(before)
                self.truth -= meter.truth(before)
            if m is not None:
                self.estimate += meter.estimate(m)
                self.truth += meter.truth(m)
        self.slots[k] = m
