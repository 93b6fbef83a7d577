"""Anthropic API server-side context editing: ``clear_tool_uses_20250919``.

The edit runs on the server before the model reads the prompt; the client keeps and resends its
full history. So this strategy never changes the stored context: ``project`` edits what is sent,
and ``before_call`` only records an event when the set of cleared tool uses grows (each new
activation moves the cleared prefix and so breaks the prompt cache from the first newly cleared
result on, which is what ``clear_at_least`` exists to make worthwhile).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.context import Context, Message, Outcome, Strategy, ToolUse, event, starts_with
from strategies._tools import rewrite_results, rewrite_uses

if TYPE_CHECKING:
    from bench.context import Session

PLACEHOLDER = "[cleared]"
"""The API does not document its placeholder; LangChain's mirror of this edit uses "[cleared]"."""


@dataclass(frozen=True, kw_only=True)
class AnthropicClearToolUses(Strategy):
    """Clear the oldest tool results once the prompt exceeds a trigger, keeping the newest uses.

    Source: Anthropic Messages API, context editing beta ``context-management-2025-06-27``,
    edit type ``clear_tool_uses_20250919`` (docs "Context editing"; spec/strategies.md §4.2).
    Defaults are the documented ones: trigger 100,000 input tokens, keep 3 tool uses, no
    ``clear_at_least``, no excluded tools, inputs kept. Algorithm: when the prompt is over the
    trigger, clear tool results oldest first until only ``keep`` uses remain uncleared (excluded
    tools are never cleared); if that frees fewer than ``clear_at_least`` tokens, clear nothing.
    ``keep`` counts the newest tool uses of any tool. Token counts are the server's (truth).
    """

    name = "anthropic-clear-tool-uses"
    citation = "Anthropic API context editing, clear_tool_uses_20250919 (beta context-management-2025-06-27)"
    tuning = {"trigger": (50_000, 75_000, 100_000, 125_000, 150_000)}
    """Around the documented 100,000: above 150,000 one large tool result can overflow a 200K window before the
    next check; below 50,000 clearing (which rewrites the cached prefix) comes every few calls."""

    estimator: str = "truth"
    trigger_type: str = "input_tokens"
    """``input_tokens`` (prompt size) or ``tool_uses`` (number of tool uses in the prompt)."""
    trigger: int = 100_000
    keep: int = 3
    """Newest tool uses (with their results) never cleared."""
    clear_at_least: int = 0
    """Minimum tokens one activation must free, else nothing is cleared (0 = no minimum)."""
    exclude_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool = False
    placeholder: str = PLACEHOLDER

    def _edited(self, ctx: Context, memo: dict, state: dict) -> tuple[Context, set[str]]:
        """What the server sends on to the model, and the ids of the cleared tool uses (the
        session's running set, read-only to the caller; empty when nothing is cleared).

        ``memo`` (original message id → (original, cleared ids in it, edited copy)) hands back
        the same edited object while a message's cleared set is unchanged, so its token counts
        stay cached instead of being recounted on every call. ``state`` (the session's) keeps the
        tool uses seen so far, the cleared set and the last edited view (``_Index``): while the
        history only grows, only the new messages and those holding an id whose clearing may have
        changed are looked at, the set moves by those ids, and the view's totals by the difference.
        """
        if self.trigger_type == "input_tokens" and ctx.truth <= self.trigger:
            return ctx, _NONE  # the running total decides; no walk over the history
        index = _Index.of(ctx.messages, state, self.exclude_tools)
        uses = index.uses
        if self.trigger_type == "tool_uses" and len(uses) <= self.trigger:
            return ctx, _NONE
        start = max(0, len(uses) - self.keep) if self.keep > 0 else len(uses)
        # the uses before the kept ones that no excluded tool made, minus any id a kept use reuses
        clear = index.move(bisect_left(index.clearable_at, start), {u.id for u in uses[start:]})
        if not clear:
            return ctx, _NONE
        msgs = ctx.messages
        base = index.view
        if base is None:
            base, todo = ctx.replace(()), range(len(msgs))
        else:
            todo = {k for i in index.unsent for k in index.where.get(i, ())} | set(range(len(base), len(msgs)))
        index.unsent.clear()
        n_old, before = len(base), base.messages
        changes: dict[int, Message] = {}  # positions of the last view that change, then what is new
        added = list(msgs[n_old:])
        for k in todo:
            m = msgs[k]
            was = k < n_old and before[k] is not m
            ids = index.ids[k] & clear
            if ids:
                cached = memo.get(id(m))
                if cached is None or cached[0] is not m or cached[1] != ids:
                    new = rewrite_results(m, lambda r, ids=ids: self.placeholder if r.tool_use_id in ids else None)
                    if self.clear_tool_inputs:
                        new = rewrite_uses(new, lambda u, ids=ids: {} if u.id in ids else None)
                    cached = memo[id(m)] = (m, ids, new)
                m = cached[2]
            index.edited += (m is not msgs[k]) - was
            if k < n_old:
                changes[k] = m
            else:
                added[k - n_old] = m
        edited = base.patch(changes, tuple(added))
        index.view = edited
        if ctx.truth - edited.truth < self.clear_at_least:
            return ctx, _NONE
        return edited, clear

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        sent, cleared = self._edited(ctx, session.state.setdefault("edits", {}), session.state)
        session.state["projection"] = (ctx.messages, sent)
        index: _Index | None = session.state.get("clear_index")
        if not cleared or index is None or not index.announce():
            return None  # no id cleared that the last event had not
        detail = (f"server-side edit (sent only): cleared_tool_uses={len(cleared)} "
                  f"cleared_input_tokens={ctx.truth - sent.truth} placeholder={self.placeholder!r}")
        return Outcome(ctx, (event("prune", ctx, sent, touched=index.edited, detail=detail),))

    def project(self, ctx: Context, session: Session) -> Context:
        cached = session.state.get("projection")
        if cached is not None and cached[0] is ctx.messages:
            return cached[1]
        return self._edited(ctx, session.state.setdefault("edits", {}), session.state)[0]


_NONE: set[str] = set()
"""The empty cleared set (never filled)."""


class _Index:
    """The tool uses of a growing history, where each id occurs, the cleared set and the last
    edited view, kept between calls in ``session.state``.

    The cleared set is ``clearable[:n] − kept``: ``n`` only grows while the history does, and
    ``kept`` is a handful of ids, so each call moves the set by the ids newly clearable and those
    entering or leaving ``kept``. Those ids are remembered until the view is next rebuilt
    (``unsent``) and until the next event (``unannounced``), so neither has to diff whole sets.
    """

    def __init__(self, exclude: tuple[str, ...]) -> None:
        self.messages: tuple[Message, ...] = ()
        self.exclude = exclude
        self.uses: list[ToolUse] = []
        self.clearable: list[str] = []
        """Ids of the uses no excluded tool made, in order, and their positions in ``uses``."""
        self.clearable_at: list[int] = []
        self.ids: list[frozenset[str]] = []
        """Per message: the ids of its tool uses and tool results."""
        self.where: dict[str, list[int]] = {}
        self.n = 0
        self.old: set[str] = set()
        """``set(clearable[:n])``."""
        self.kept: set[str] = set()
        self.clear: set[str] = set()
        """``old − kept``: the ids cleared when the trigger holds."""
        self.unsent: set[str] = set()
        """Ids whose clearing may have changed since ``view`` was made."""
        self.announced: set[str] = set()
        """The cleared set the last event reported, and the ids that may differ from it since."""
        self.unannounced: set[str] = set()
        self.view: Context | None = None
        """The last edited view (of a prefix of ``messages``), and how many of its messages are edited."""
        self.edited = 0

    @staticmethod
    def of(messages: tuple[Message, ...], state: dict, exclude: tuple[str, ...]) -> _Index:
        """The index of ``messages``: the session's, extended, when they extend what it indexed."""
        index = old = state.get("clear_index")
        if index is None or index.exclude != exclude or not starts_with(messages, index.messages):
            index = _Index(exclude)
            if old is not None:  # the last event's set still stands, and every id of it may differ now
                index.announced, index.unannounced = old.announced, old.announced | old.unannounced
        for k in range(len(index.messages), len(messages)):
            m = messages[k]
            for u in m.tool_uses:
                if u.name not in exclude:
                    index.clearable.append(u.id)
                    index.clearable_at.append(len(index.uses))
                index.uses.append(u)
            ids = frozenset(b.id if isinstance(b, ToolUse) else b.tool_use_id for b in (*m.tool_uses, *m.tool_results))
            index.ids.append(ids)
            for i in ids:
                index.where.setdefault(i, []).append(k)
        index.messages = messages
        state["clear_index"] = index
        return index

    def move(self, n: int, kept: set[str]) -> set[str]:
        """The cleared set for ``clearable[:n]`` less ``kept`` (``n`` never below the last one)."""
        added = self.clearable[self.n:n]
        self.old.update(added)
        self.n = n
        touched = {*added, *self.kept, *kept}
        self.kept = kept
        old, clear = self.old, self.clear
        for i in touched:
            if i in old and i not in kept:
                clear.add(i)
            else:
                clear.discard(i)
        self.unsent |= touched
        self.unannounced |= touched
        return clear

    def announce(self) -> bool:
        """Whether the cleared set holds an id the last event's did not; if so it becomes that set."""
        clear, announced = self.clear, self.announced
        if not any(i in clear and i not in announced for i in self.unannounced):
            return False
        for i in self.unannounced:
            if i in clear:
                announced.add(i)
            else:
                announced.discard(i)
        self.unannounced.clear()
        return True
