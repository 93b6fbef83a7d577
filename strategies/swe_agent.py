"""SWE-agent's LastNObservations history processor: keep the newest n observations verbatim.

SWE-agent keeps the full history and runs its processors over it before every query, so the
elision is a view of what is sent, recomputed each call. With ``polling=1`` the boundary moves
by one observation per call: each request rewrites the oldest still-visible output, which is
exactly the rolling rewrite that breaks the prompt cache from that point on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.context import Context, Message, Outcome, Strategy, ToolResult, event, starts_with
from strategies._tools import rewrite_results

if TYPE_CHECKING:
    from bench.context import Session


def elided(content: str) -> str:
    """The marker SWE-agent puts in place of an old observation (its line count, verbatim)."""
    return f"Old environment output: ({len(content.splitlines())} lines omitted)"


def observation_ids(messages: tuple[Message, ...]) -> list[str | None]:
    """Observations in order: the task message (``None``, SWE-agent's instance template) when it
    comes before the first answer, then one tool_use id per tool result."""
    obs: list[str | None] = []
    first_answer = next((i for i, m in enumerate(messages) if m.role == "assistant"), len(messages))
    if any(m.is_human_turn for m in messages[:first_answer]):
        obs.append(None)
    obs.extend(b.tool_use_id for m in messages for b in m.blocks if isinstance(b, ToolResult))
    return obs


def last_n_elided(messages: tuple[Message, ...], n: int, polling: int = 1) -> frozenset[str]:
    """Tool-use ids whose output LastNObservations elides: ``obs[1:last_removed]``."""
    obs = observation_ids(messages)
    last_removed = max(0, (len(obs) // polling) * polling - n)
    return frozenset(i for i in obs[1:last_removed] if i is not None)


@dataclass(frozen=True, kw_only=True)
class LastNObservations(Strategy):
    """SWE-agent ``LastNObservations``: elide all observations but the first and the last ``n``.

    Source: SWE-agent/SWE-agent @ 3ea751c087f32b16e039a2233dd6eefecef325d5,
    ``sweagent/agent/history_processors.py`` (spec/strategies.md §9). ``n`` is required there;
    the default 5 is the SWE-agent 0.7 paper config. Observations are indexed over the history
    (the task message is observation 0, then every tool result); ``last_removed =
    max(0, floor(K / polling) * polling - n)`` and ``obs[1:last_removed]`` become
    "Old environment output: (N lines omitted)". Human turns after the task are not
    environment output and are never elided (SWE-agent has none). Not modelled: the
    keep/remove tags (TagToolCallObservations tags the action, so it never reaches this
    processor anyway) and the " (M images omitted)" suffix (our tool results hold text only).
    """

    name = "swe-agent"
    citation = "SWE-agent/SWE-agent@3ea751c0 sweagent/agent/history_processors.py LastNObservations"

    estimator: str = "truth"
    n: int = 5
    polling: int = 1

    def __post_init__(self) -> None:
        if self.n <= 0 or self.polling <= 0:
            raise ValueError("n and polling must be positive integers")

    def masked(self, ctx: Context, session: Session) -> tuple[Context, _View]:
        """The view sent this call and what it elides (message objects reused across calls).

        Incremental while the stored history only grows (as it does here): the previous view is
        kept in ``session.state``, and only the new messages and those holding a newly elided
        output are rewritten; the view's totals move by the difference. Anything else (a summary
        rewrote the history) recomputes the view from scratch, with the same result. The elided
        ids grow in place (``_View.order``): a new set each call was a pass over all of them.
        """
        view: _View | None = session.state.get("last_n_view")
        msgs = ctx.messages
        if view is None or not view.follows(msgs):
            view = _View.start(msgs, ctx)
        obs = view.obs
        for k in range(len(view.messages), len(msgs)):
            for r in msgs[k].tool_results:
                obs.append(r.tool_use_id)
                view.where.setdefault(r.tool_use_id, []).append(k)
        last_removed = max(0, (len(obs) // self.polling) * self.polling - self.n)
        ids, order = view.ids, view.order
        newly = [i for i in obs[max(1, view.removed):last_removed] if i is not None]
        for i in newly:
            if i not in ids:
                ids.add(i)
                order.append(i)
        n_old = len(view.messages)
        touched = {k for i in newly for k in view.where[i]} | set(range(n_old, len(msgs)))
        changes: dict[int, Message] = {}  # positions of the previous view that change
        added = list(msgs[n_old:])
        memo: dict[int, tuple[Message, frozenset[str], Message]] = session.state.setdefault("elided", {})
        for k in touched:
            m = msgs[k]
            mine = frozenset(r.tool_use_id for r in m.tool_results if r.tool_use_id in ids)
            if mine:
                cached = memo.get(id(m))
                if cached is None or cached[0] is not m or cached[1] != mine:
                    masked = rewrite_results(m, lambda r, mine=mine: elided(r.content) if r.tool_use_id in mine
                                             else None)
                    cached = (m, mine, masked)
                    memo[id(m)] = cached
                m = cached[2]
            if k < n_old:
                changes[k] = m
            else:
                added[k - n_old] = m
        sent = view.sent.patch(changes, tuple(added)) if ids else ctx
        view = _View(msgs, obs, view.where, max(view.removed, last_removed), ids, order, sent, view.fixed)
        session.state["last_n_view"] = view
        return sent, view

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        sent, view = self.masked(ctx, session)
        session.state["projection"] = (ctx.messages, sent)
        ids = view.order
        # the elided ids at the last event, as (order, its length then): within one view they are
        # a prefix of ``order``, so what was elided since is its tail, with no pass over the rest
        previous: tuple[list[str], int] | None = session.state.get("masked_ids")
        if previous is not None and previous[0] is ids:
            fresh = ids[previous[1]:]
        else:  # the view started afresh since (or never fired): compare the sets
            before = frozenset(previous[0][:previous[1]]) if previous is not None else frozenset()
            fresh = [i for i in ids if i not in before]
        if not fresh:
            return None
        session.state["masked_ids"] = (ids, len(ids))
        detail = f"sent view: {len(ids)} old observations elided, newest {self.n} kept (+ the first)"
        return Outcome(ctx, (event("mask", ctx, sent, touched=len(fresh), detail=detail),))

    def project(self, ctx: Context, session: Session) -> Context:
        cached = session.state.get("projection")
        if cached is not None and cached[0] is ctx.messages:
            return cached[1]
        return self.masked(ctx, session)[0]


@dataclass(frozen=True)
class _View:
    """What ``LastNObservations.masked`` remembers between calls (in ``session.state``)."""

    messages: tuple[Message, ...]
    """The stored history the view was made from."""
    obs: list[str | None]
    """Its observations in order (``observation_ids``), extended in place as the history grows."""
    where: dict[str, list[int]]
    """Tool-use id → positions of the messages holding its result."""
    removed: int
    """``last_removed`` of that call: ``obs[1:removed]`` are elided."""
    ids: set[str]
    """The elided ids (``obs[1:removed]``), added to in place."""
    order: list[str]
    """The same ids in the order they were first elided: a previous call's set is a prefix of it."""
    sent: Context
    """The view sent."""

    fixed: bool
    """An answer is in the history, so observation 0 (the task, or not) is settled."""

    @staticmethod
    def start(messages: tuple[Message, ...], ctx: Context) -> _View:
        """A view of nothing yet, whose observation 0 is the task when a human turn comes before
        the first answer (``observation_ids``)."""
        first_answer = next((i for i, m in enumerate(messages) if m.role == "assistant"), None)
        head = messages if first_answer is None else messages[:first_answer]
        obs: list[str | None] = [None] if any(m.is_human_turn for m in head) else []
        return _View((), obs, {}, 0, set(), [], ctx.replace(()), first_answer is not None)

    def follows(self, messages: tuple[Message, ...]) -> bool:
        """Is ``messages`` this view's history with messages appended (and observation 0 settled)?"""
        return self.fixed and starts_with(messages, self.messages)
