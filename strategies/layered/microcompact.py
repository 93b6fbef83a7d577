"""L2 of the five-layer defense, microcompact (no LLM): old tool outputs cleared to a marker and old
read-only calls removed, the newest ``microcompact_keep`` results kept (spec/strategies.md §4.1's
``[Old tool result content cleared]``). ``Microcompact`` is ``FiveLayer``'s; ``_Settled`` lets it look
only at the part of the history it can still change.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import is_
from typing import TYPE_CHECKING

from bench.context import Context, Event, Message, ToolResult, ToolUse, event, starts_with
from strategies._files import is_read_only
from strategies._tools import rewrite_results, tool_inputs
from strategies.layered._common import SETTLED, _block_id, _touched


class Microcompact:
    """L2, microcompact (``FiveLayer``'s ``microcompact_*`` fields set it)."""

    if TYPE_CHECKING:
        microcompact_keep: int
        microcompact_drop_read_only: bool
        microcompact_marker: str | None
        persist_min_chars: int

    def _clear_old(self, msgs: Sequence[Message]) -> tuple[list[Message], list[str], set[str]]:
        """L2 over ``msgs``: the messages left, the ids of the outputs cleared and of the read-only
        calls removed."""
        uses = tool_inputs(msgs)
        ids = [r.tool_use_id for m in msgs for r in m.tool_results]
        old = set(ids[: max(0, len(ids) - self.microcompact_keep)])
        drop = {i for i in old if self.microcompact_drop_read_only and i in uses and is_read_only(uses[i])}

        cleared: list[str] = []

        def marker(r: ToolResult) -> str | None:
            if r.tool_use_id not in old or r.tool_use_id in drop or r.content.startswith(SETTLED):
                return None
            cleared.append(r.tool_use_id)
            if self.microcompact_marker is not None:
                return self.microcompact_marker
            name = uses[r.tool_use_id].name if r.tool_use_id in uses else "tool"
            return f"[Tool result cleared: {name}, {round(len(r.content) / 4)} tokens]"
        out: list[Message] = []
        for m in msgs:
            m = rewrite_results(m, marker)
            if drop and any(isinstance(b, (ToolUse, ToolResult)) and _block_id(b) in drop for b in m.blocks):
                blocks = tuple(b for b in m.blocks if _block_id(b) not in drop)
                if not blocks:
                    continue
                m = m.with_blocks(blocks)
            out.append(m)
        return out, cleared, drop

    def _microcompact(self, ctx: Context) -> tuple[Context, Event | None]:
        """L2 from scratch (``_microcompact_since`` is the same, looking at what changed only)."""
        out, cleared, drop = self._clear_old(ctx.messages)
        if len(out) == len(ctx) and all(a is b for a, b in zip(out, ctx.messages, strict=True)):
            return ctx, None
        new = ctx.replace(out)
        return new, self._prune_event(ctx, new, _touched(ctx, new) + len(ctx) - len(new), cleared, drop)

    def _prune_event(self, ctx: Context, new: Context, touched: int, cleared: list[str], drop: set[str]) -> Event:
        detail = f"L2 microcompact: {len(cleared)} outputs cleared, {len(drop)} read-only calls removed"
        return event("prune", ctx, new, touched=touched, detail=detail)

    def _microcompact_since(self, ctx: Context, state: dict) -> tuple[Context, Event | None]:
        """``_microcompact``, run over the tail of the history that can still change (``_Settled``)
        when ``ctx`` extends the previous L2 output; anything else runs it over the whole history.
        A history L1 left clean stays clean when L2's markers are short, so L1 keeps skipping it."""
        msgs = ctx.messages
        settled: _Settled | None = state.get("microcompacted")
        fixed_marker = self.microcompact_marker is None or self.microcompact_marker.startswith(SETTLED)
        if (settled is None or not fixed_marker or settled.keep != self.microcompact_keep
                or not settled.extend(msgs)):
            new, ev = self._microcompact(ctx)
            state["microcompacted"] = _Settled.of(new.messages, self.microcompact_keep)
            changed: Sequence[Message] = new.messages
        else:
            q = settled.q
            tail = msgs[q:]
            out, cleared, drop = self._clear_old(tail)
            if len(out) == len(tail) and all(map(is_, out, tail)):
                new, ev, changed = ctx, None, ()
            else:
                new = ctx.replace((*msgs[:q], *out))
                seen = {id(m) for m in tail}
                changed = [m for m in out if id(m) not in seen]
                ev = self._prune_event(ctx, new, len(changed) + len(tail) - len(out), cleared, drop)
            settled.advance(new.messages, q)
        if ev is not None and state.get("persisted") is msgs and all(
                len(r.content) <= self.persist_min_chars for m in changed for r in m.tool_results):
            state["persisted"] = new.messages
        return new, ev


class _Settled:
    """Where L2 can still change the history it last left (kept in ``session.state``).

    After L2 ran, every output but the newest ``keep`` is settled: cleared or persisted (so L2 skips
    it), or removed with its read-only call. While the history grows by appending, later runs can
    change only the newest outputs, their calls, the calls still waiting for a result and what was
    appended: all at or after ``q``. Running L2 over ``messages[q:]`` gives the same result as over
    the whole history as long as every id has one call and one result, the call first (``simple``;
    else the whole history is run, as before).
    """

    def __init__(self, messages: tuple[Message, ...], keep: int) -> None:
        self.messages = messages
        self.keep = keep
        self.q = 0
        self.uses: set[str] = set()
        self.results: set[str] = set()
        self.simple = True

    @staticmethod
    def of(messages: tuple[Message, ...], keep: int) -> _Settled:
        """The index of an L2 output (a walk over all of it)."""
        index = _Settled(messages, keep)
        index.simple = index._add(messages)
        index.q = index._boundary(messages, 0)
        return index

    def _add(self, msgs: Sequence[Message]) -> bool:
        """Record the ids ``msgs`` bring; False if one repeats an id or answers no earlier call."""
        uses, results, simple = self.uses, self.results, True
        for m in msgs:
            for u in m.tool_uses:
                simple = simple and u.id not in uses and u.id not in results
                uses.add(u.id)
            for r in m.tool_results:
                simple = simple and r.tool_use_id not in results and r.tool_use_id in uses
                results.add(r.tool_use_id)
        return simple

    def extend(self, messages: tuple[Message, ...]) -> bool:
        """Take in the messages appended to the history last left; False when ``messages`` does not
        extend it or the ids stop being simple (then the caller runs the whole history)."""
        old = self.messages
        if not self.simple or not starts_with(messages, old):
            return False
        self.simple = self._add(messages[len(old):])
        self.messages = messages
        return self.simple

    def advance(self, messages: tuple[Message, ...], q: int) -> None:
        """L2 left ``messages``, the same as before up to ``q``."""
        self.messages = messages
        self.q = self._boundary(messages, q)

    def _boundary(self, messages: tuple[Message, ...], start: int) -> int:
        """The first position L2 may still change: the newest ``keep`` outputs and their calls, and
        the calls with no result yet (all at or after ``start``)."""
        results: list[tuple[int, str]] = []
        calls: dict[str, int] = {}
        for k in range(start, len(messages)):
            m = messages[k]
            for u in m.tool_uses:
                calls[u.id] = k
            results.extend((k, r.tool_use_id) for r in m.tool_results)
        newest = results[max(0, len(results) - self.keep):] if self.keep > 0 else []
        answered = {i for _, i in results}
        q = min((k for k, _ in newest), default=len(messages))
        q = min(q, min((calls[i] for _, i in newest if i in calls), default=q))
        return min(q, min((k for i, k in calls.items() if i not in answered), default=q))
