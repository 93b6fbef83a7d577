"""L1 of the five-layer defense: persist tool results over ``persist_min_chars`` to disk, a pointer
with a preview left in their place ("Harness engineering from CC" ch. 9: over 50,000 chars, a
2,000-char preview). ``Persist`` is ``FiveLayer``'s, on its ``persist_*`` / ``preview_chars`` fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from bench.context import Context, Event, Message, ToolResult, event, starts_with
from strategies._tools import rewrite_results
from strategies.layered._common import PERSIST_DIR, _touched


class Persist:
    """L1, persist large tool results (``FiveLayer``'s fields set it)."""

    if TYPE_CHECKING:
        persist_min_chars: int
        preview_chars: int

    def _pointer(self, r: ToolResult) -> str | None:
        """L1's rewrite of one output: a pointer to where it was persisted, with a preview."""
        if len(r.content) <= self.persist_min_chars:
            return None
        return (f"[Tool result persisted to disk: {PERSIST_DIR}/{r.tool_use_id}.txt ({len(r.content)} chars). "
                f"Preview (first {self.preview_chars} chars):]\n{r.content[:self.preview_chars]}")

    def _persist(self, ctx: Context) -> tuple[Context, Event | None]:
        """L1 from scratch (``_persist_since`` is the same, looking at what changed only)."""
        new = ctx.replace(rewrite_results(m, self._pointer) for m in ctx.messages)
        return self._persisted(ctx, new, _touched(ctx, new))

    def _persisted(self, ctx: Context, new: Context, touched: int) -> tuple[Context, Event | None]:
        if not touched:
            return ctx, None
        detail = f"L1 persist: outputs over {self.persist_min_chars} chars moved to disk"
        return new, event("persist", ctx, new, touched=touched, detail=detail)

    def _persist_since(self, ctx: Context, state: dict) -> tuple[Context, Event | None]:
        """``_persist`` when ``state["persisted"]`` holds a history with no output over the limit
        (L1 left it so, and the later layers kept it so) and ``ctx`` extends it: only the appended
        messages can hold one. Anything else runs ``_persist`` over the whole history."""
        clean: tuple[Message, ...] | None = state.get("persisted")
        msgs = ctx.messages
        if clean is None or not starts_with(msgs, clean):
            new, ev = self._persist(ctx)
            seen = {id(m) for m in msgs}
            changed: Sequence[Message] = [m for m in new.messages if id(m) not in seen]
        else:
            out = list(msgs)
            changed = []
            for k in range(len(clean), len(msgs)):
                m = rewrite_results(msgs[k], self._pointer)
                if m is not msgs[k]:
                    out[k] = m
                    changed.append(m)
            new, ev = self._persisted(ctx, ctx.replace(out) if changed else ctx, len(changed))
        # a pointer longer than the limit (a long preview) would be persisted again next call
        fixed = all(len(r.content) <= self.persist_min_chars for m in changed for r in m.tool_results)
        state["persisted"] = new.messages if fixed else None
        return new, ev
