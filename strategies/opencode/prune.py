"""OpenCode's prune: clear old tool outputs outside the last turns (sst/opencode compaction.ts ``prune()``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from strategies._tools import is_prompt, rewrite_results, tool_names
from strategies.opencode.common import PRUNED, js_round

if TYPE_CHECKING:
    from bench.context import Context, Session


class Prune:
    """Mixed into ``OpenCode``; reads ``prune_protect``, ``prune_minimum``, ``protected_tools``,
    ``protected_turns`` and ``estimator``."""

    def output_estimate(self, text: str, session: Session) -> int:
        if self.estimator == "truth":
            return session.meter.counter.text(text)
        return js_round(len(text) / 4)

    def pruned(self, ctx: Context, *, end: int, session: Session) -> tuple[Context, int]:
        """Clear outputs older than the newest ``prune_protect`` tokens of them, all or nothing."""
        msgs = ctx.messages
        names = tool_names(msgs)
        turns = total = freed = 0
        queued: set[str] = set()
        for i in range(end - 1, 0, -1):
            m = msgs[i]
            if is_prompt(m):
                turns += 1
            if turns < self.protected_turns:
                continue
            if m.role == "assistant" and m.meta.get("summary"):
                break
            for r in reversed(m.tool_results):
                if r.is_error or names.get(r.tool_use_id) in self.protected_tools:
                    continue  # errors are not "completed" parts; skill outputs are never pruned
                if r.content == PRUNED:
                    break
                size = self.output_estimate(r.content, session)
                total += size
                if total > self.prune_protect:
                    freed += size
                    queued.add(r.tool_use_id)
            else:
                continue
            break  # an already-compacted output: everything older was handled before
        if freed <= self.prune_minimum:
            return ctx, 0
        out = [rewrite_results(m, lambda r: PRUNED if r.tool_use_id in queued else None) for m in msgs]
        touched = sum(1 for a, b in zip(out, msgs, strict=True) if a is not b)
        return ctx.replace(out), touched
