"""Anthropic API server-side context editing: ``clear_tool_uses_20250919``.

The edit runs on the server before the model reads the prompt; the client keeps and resends its
full history. So this strategy never changes the stored context: ``project`` edits what is sent,
and ``before_call`` only records an event when the set of cleared tool uses grows (each new
activation moves the cleared prefix and so breaks the prompt cache from the first newly cleared
result on, which is what ``clear_at_least`` exists to make worthwhile).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.context import Context
from strategies._tools import rewrite_results, rewrite_uses
from strategies.base import Outcome, Strategy, event
from traces.model import Message, ToolUse

if TYPE_CHECKING:
    from bench.session import Session

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

    def _edited(self, ctx: Context, memo: dict | None = None) -> tuple[Context, frozenset[str]]:
        """What the server sends on to the model, and the ids of the cleared tool uses.

        ``memo`` (original message id → (original, cleared ids in it, edited copy)) hands back
        the same edited object while a message's cleared set is unchanged, so its token counts
        stay cached instead of being recounted on every call.
        """
        if self.trigger_type == "input_tokens" and ctx.truth <= self.trigger:
            return ctx, frozenset()  # the running total decides; no walk over the history
        uses = [b for m in ctx.messages for b in m.blocks if isinstance(b, ToolUse)]
        if self.trigger_type == "tool_uses" and len(uses) <= self.trigger:
            return ctx, frozenset()
        kept = {u.id for u in uses[max(0, len(uses) - self.keep):]} if self.keep > 0 else set()
        clear = frozenset(u.id for u in uses if u.id not in kept and u.name not in self.exclude_tools)
        if not clear:
            return ctx, clear
        memo = {} if memo is None else memo
        out: list[Message] = []
        for m in ctx.messages:
            ids = frozenset(b.id if isinstance(b, ToolUse) else b.tool_use_id
                            for b in (*m.tool_uses, *m.tool_results)) & clear
            if not ids:
                out.append(m)
                continue
            cached = memo.get(id(m))
            if cached is None or cached[0] is not m or cached[1] != ids:
                new = rewrite_results(m, lambda r, ids=ids: self.placeholder if r.tool_use_id in ids else None)
                if self.clear_tool_inputs:
                    new = rewrite_uses(new, lambda u, ids=ids: {} if u.id in ids else None)
                cached = memo[id(m)] = (m, ids, new)
            out.append(cached[2])
        edited = ctx.replace(out)
        if ctx.truth - edited.truth < self.clear_at_least:
            return ctx, frozenset()
        return edited, clear

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        sent, cleared = self._edited(ctx, session.state.setdefault("edits", {}))
        session.state["projection"] = (ctx.messages, sent)
        previous: frozenset[str] = session.state.get("cleared", frozenset())
        if not cleared - previous:
            return None
        session.state["cleared"] = cleared
        detail = (f"server-side edit (sent only): cleared_tool_uses={len(cleared)} "
                  f"cleared_input_tokens={ctx.truth - sent.truth} placeholder={self.placeholder!r}")
        touched = sum(1 for a, b in zip(ctx.messages, sent.messages, strict=True) if a is not b)
        return Outcome(ctx, (event("prune", ctx, sent, touched=touched, detail=detail),))

    def project(self, ctx: Context, session: Session) -> Context:
        cached = session.state.get("projection")
        if cached is not None and cached[0] is ctx.messages:
            return cached[1]
        return self._edited(ctx, session.state.setdefault("edits", {}))[0]
