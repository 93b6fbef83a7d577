"""OpenHands V0 ``RecentEventsCondenser`` (OpenHands/OpenHands@d6fab190
openhands/memory/condenser/impl/recent_events_condenser.py): a sent view of the first and the newest
events, kept between calls by ``_RecentView``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from bench.context import Block, Context, Message, ToolResult, starts_with
from strategies._tools import latest_human_index
from strategies.openhands._common import V0, _bump, _ViewCondenser, keep_indices

if TYPE_CHECKING:
    from bench.context import Session

@dataclass(frozen=True, kw_only=True)
class RecentEvents(_ViewCondenser):
    """V0 ``RecentEventsCondenser``: view = the first keep_first events + the newest ones.

    Source: V0 ``recent_events_condenser.py``; config defaults keep_first 1, max_events 100
    (constructor 10). Applied every step. Deviations: a view already within max_events is left
    as is (the code's slices overlap there and would repeat the head), and the latest human turn
    is kept (harness contract). Version 2: an empty user message after that turn is none (a log
    can hold one; no agent sends it), which version 1 kept instead of the real request.
    """

    name = "openhands:recent"
    citation = V0 + " RecentEventsCondenser"
    version = 2

    keep_first: int = 1
    max_events: int = 100

    def view(self, ctx: Context, session: Session) -> tuple[Message, ...] | None:
        """The from-scratch definition (kept for the cases ``_RecentView`` leaves to it)."""
        n = len(ctx)
        if n <= self.max_events:
            return None
        tail = max(0, self.max_events - self.keep_first)
        indices = {*range(self.keep_first), *range(n - tail if tail else n, n)}
        return keep_indices(ctx, indices, _latest_human(ctx.messages, session.state))

    def _sent(self, ctx: Context, session: Session) -> Context:
        """Incremental once the view is active (the stored history only grows here): the previous
        call's view moved by the messages entering and leaving it (``_RecentView``); a view without
        a head (``keep_first=0``) or a tail, or anything unexpected, is rebuilt by ``view``."""
        st = session.state
        cached = st.get("projection")
        if cached is not None and cached[0] is ctx.messages:
            return cached[1]
        tail = max(0, self.max_events - self.keep_first)
        if len(ctx) <= self.max_events or self.keep_first < 1 or not tail:
            return super()._sent(ctx, session)
        state: _RecentView | None = st.get("recent_view")
        if state is None or not state.follows(ctx) or not state.advance(ctx):
            state = _RecentView(ctx, self.keep_first, tail)
            state.advance(ctx)
        st["recent_view"] = state
        st["projection"] = (ctx.messages, state.sent)
        return state.sent

    def touched(self, ctx: Context, sent: Context, session: Session) -> int:
        state: _RecentView | None = session.state.get("recent_view")
        if state is None or state.messages is not ctx.messages or state.sent is not sent:
            return super().touched(ctx, sent, session)
        return len(ctx) - state.kept


FIRST_USER = -1
"""``_RecentView``'s key for the first human turn when ``render`` puts it back (it is not kept)."""


class _RecentView:
    """``RecentEvents``' view (``keep_first`` ≥ 1 and a tail), kept between calls in
    ``session.state`` and moved by what changed: the messages entering the tail window and leaving
    it, the latest human turn when it moves, and the first human turn when ``render`` must put it back.

    ``render`` depends on the whole view only through two id multisets, the results sent
    (``answered``) and the calls of complete messages (``calls``), kept as counts; when an id's count
    reaches or leaves zero, only the members holding that id are looked at again (as ``_MaskView``).
    Members are keyed by stored position (``FIRST_USER`` for the put-back first human turn).
    """

    def __init__(self, ctx: Context, keep_first: int, tail: int) -> None:
        self.messages: tuple[Message, ...] = ()
        self.meter = ctx.meter
        self.keep_first, self.tail = keep_first, tail
        self.first_user: Message | None = None
        self.scanned = 0
        """Positions looked at for the first human turn while there was none."""
        self.latest_human = -1
        """``latest_human_index`` of the history, an empty user message skipped (found among the appended messages)."""
        self.start = 0
        """Where the tail window began (it ends at ``len(messages)``)."""
        self.human = -1
        """The latest human turn's position when it is a member apart from the head and the window."""
        self.members: dict[int, Message] = {}
        self.first_user_members = 0
        """Members that are the first human turn's message (so ``render`` need not put it back)."""
        self.complete: dict[int, bool] = {}
        self.contrib: dict[int, tuple[str, ...]] = {}
        self.slots: dict[int, Message | None] = {}
        """Per member: what is sent for it (None: dropped by ``render``)."""
        self.window: list[Message | None] = []
        """Per stored position: its slot while in the window (else anything), sliced into the view."""
        self.answered: dict[str, int] = {}
        self.calls: dict[str, int] = {}
        self.uses_at: dict[str, set[int]] = {}
        self.results_at: dict[str, set[int]] = {}
        self.cuts: dict[int, tuple[Message, tuple[Block, ...], Message]] = {}
        self.kept = 0
        """Members sent as the stored message itself (for the event's ``touched``)."""
        self.estimate = 0
        self.truth = 0
        self.sent = ctx

    def follows(self, ctx: Context) -> bool:
        old, new = self.messages, ctx.messages
        return ctx.meter is self.meter and starts_with(new, old)

    def _is_member(self, k: int, start: int, n: int, human: int) -> bool:
        return k < self.keep_first or k == human or start <= k < n

    def advance(self, ctx: Context) -> bool:
        """Bring the view up to ``ctx``; False when the first human turn appeared in a view already
        made (then the caller starts a new one)."""
        msgs = ctx.messages
        n, n_old = len(msgs), len(self.messages)
        new_human = latest_human_index(msgs[n_old:], skip_empty=True)
        latest_human = self.latest_human = n_old + new_human if new_human >= 0 else self.latest_human
        if self.first_user is None:
            found = next((k for k in range(self.scanned, n) if msgs[k].is_human_turn), -1)
            self.scanned = n
            if found >= 0:
                if self.members:
                    return False
                self.first_user = msgs[found]
        start, kf = n - self.tail, self.keep_first
        human = latest_human if latest_human >= kf and not start <= latest_human < n else -1
        leaving = [k for k in range(self.start, min(n_old, start)) if not self._is_member(k, start, n, human)]
        if self.human >= 0 and not self._is_member(self.human, start, n, human):
            leaving.append(self.human)
        entering = [k for k in (*range(min(kf, n)), *((human,) if human >= 0 else ()), *range(max(start, n_old), n))
                    if k not in self.members]
        self.window.extend([None] * (n - len(self.window)))
        self.messages, self.start, self.human = msgs, start, human
        flip_answered: set[str] = set()
        flip_calls: set[str] = set()
        for k in leaving:
            self._leave(k, flip_answered, flip_calls)
        for k in entering:
            self._enter(k, msgs[k], flip_answered)
        needs_first_user = self.first_user is not None and not self.first_user_members
        if needs_first_user and FIRST_USER not in self.members:
            entering.append(FIRST_USER)
            self._enter(FIRST_USER, self.first_user, flip_answered)  # type: ignore[arg-type]
        elif not needs_first_user and FIRST_USER in self.members:
            self._leave(FIRST_USER, flip_answered, flip_calls)
        dirty = set(entering)
        for i in flip_answered:
            dirty.update(self.uses_at.get(i, ()))
        for k in dirty:
            m = self.members[k]
            complete = not m.tool_uses or all(self.answered.get(u.id, 0) > 0 for u in m.tool_uses)
            contrib = tuple(u.id for u in m.tool_uses) if complete else ()
            self.complete[k] = complete
            if contrib != self.contrib.get(k, ()):
                for i in self.contrib.get(k, ()):
                    if _bump(self.calls, i, -1):
                        flip_calls.add(i)
                for i in contrib:
                    if _bump(self.calls, i, 1):
                        flip_calls.add(i)
            self.contrib[k] = contrib
        for i in flip_calls:
            dirty.update(self.results_at.get(i, ()))
        for k in dirty:
            self._settle(k)
        self._send(ctx)
        return True

    def _enter(self, k: int, m: Message, flip_answered: set[str]) -> None:
        self.members[k] = m
        self.slots[k] = None
        self.contrib[k] = ()
        self.first_user_members += m is self.first_user and k != FIRST_USER
        for u in m.tool_uses:
            self.uses_at.setdefault(u.id, set()).add(k)
        for r in m.tool_results:
            self.results_at.setdefault(r.tool_use_id, set()).add(k)
            if _bump(self.answered, r.tool_use_id, 1):
                flip_answered.add(r.tool_use_id)

    def _leave(self, k: int, flip_answered: set[str], flip_calls: set[str]) -> None:
        m = self.members.pop(k)
        self.first_user_members -= m is self.first_user and k != FIRST_USER
        for u in m.tool_uses:
            self.uses_at[u.id].discard(k)
        for r in m.tool_results:
            self.results_at[r.tool_use_id].discard(k)
            if _bump(self.answered, r.tool_use_id, -1):
                flip_answered.add(r.tool_use_id)
        for i in self.contrib.pop(k):
            if _bump(self.calls, i, -1):
                flip_calls.add(i)
        self.complete.pop(k)
        self._slot(k, m, self.slots.pop(k), None)

    def _settle(self, k: int) -> None:
        """Member ``k``'s sent message from ``complete`` and ``calls`` (``render``'s last loop)."""
        stored = self.members[k]
        m: Message | None = stored if self.complete[k] else None
        if m is not None and any(self.calls.get(r.tool_use_id, 0) <= 0 for r in m.tool_results):
            calls = self.calls
            blocks = tuple(b for b in m.blocks if not (isinstance(b, ToolResult) and calls.get(b.tool_use_id, 0) <= 0))
            cut = self.cuts.get(k)
            if not blocks:
                m = None
            elif cut is not None and cut[0] is m and cut[1] == blocks:
                m = cut[2]
            else:
                cut = self.cuts[k] = (m, blocks, replace(m, blocks=blocks))
                m = cut[2]
        self._slot(k, stored, self.slots[k], m)
        self.slots[k] = m

    def _slot(self, k: int, stored: Message, before: Message | None, after: Message | None) -> None:
        """Move the totals and ``kept`` by a member's slot changing from ``before`` to ``after``."""
        if k >= 0:
            self.window[k] = after
        if before is after:
            return
        self.kept += (after is stored) - (before is stored)
        meter = self.meter
        if before is not None:
            self.estimate -= meter.estimate(before)
            self.truth -= meter.truth(before)
        if after is not None:
            self.estimate += meter.estimate(after)
            self.truth += meter.truth(after)

    def _send(self, ctx: Context) -> None:
        """The view in ``render``'s order: the first human turn put back after the system prompt (or
        first), then the members by position."""
        slots, kf = self.slots, self.keep_first
        head = [slots[k] for k in range(min(kf, len(ctx)))]
        if FIRST_USER in slots:
            head.insert(1 if self.messages[0].role == "system" else 0, slots[FIRST_USER])
        if self.human >= 0:
            head.append(slots[self.human])
        msgs = tuple(filter(None, [*head, *self.window[self.start:len(ctx)]]))
        self.sent = Context(msgs, self.estimate, self.meter.overhead + self.truth, self.meter)


def _latest_human(messages: tuple[Message, ...], state: dict) -> int:
    """``latest_human_index(messages, skip_empty=True)``, walking back only over the messages appended since the last
    call when they extend the history it last saw (a sent-only view never changes the stored one)."""
    known: tuple[tuple[Message, ...], int] | None = state.get("latest_human")
    if known is not None and starts_with(messages, known[0]):
        new = latest_human_index(messages[len(known[0]):], skip_empty=True)
        human = len(known[0]) + new if new >= 0 else known[1]
    else:
        human = latest_human_index(messages, skip_empty=True)
    state["latest_human"] = (messages, human)
    return human
