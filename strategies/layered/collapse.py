"""L5 of the five-layer defense, context collapse ("Harness engineering from CC" ch. 12): a read-time
view of what is sent, the stored history unchanged; armed by a failed L4 only (``FiveLayer.on_overflow``).
"""

from __future__ import annotations

from bench.context import Context, ToolResult, ToolUse, orphans
from strategies._tools import latest_human, text_user
from strategies.layered._common import _block_id


class Collapse:
    """L5, the sent view under context collapse."""

    def _collapsed(self, ctx: Context, budget: int) -> Context:
        """What is sent under L5: system, summaries, the latest human turn, and the newest
        whole rounds that fit the budget; older messages stay stored but are not sent."""
        msgs, head = ctx.messages, (1 if ctx.system else 0)
        human = latest_human(msgs)
        keep = [i for i in range(head, len(msgs)) if msgs[i] is human or msgs[i].meta.get("summary")]
        first = (max(keep) if keep else head - 1) + 1
        pairs: dict[str, list[int]] = {}
        for i, m in enumerate(msgs):
            for b in m.blocks:
                if isinstance(b, (ToolUse, ToolResult)):
                    pairs.setdefault(_block_id(b), []).append(i)
        split = {c for ix in pairs.values() for c in range(min(ix) + 1, max(ix) + 1)}
        fixed = sum(ctx.tok(msgs[i]) for i in (*range(head), *keep)) + 16
        suffix = [0] * (len(msgs) + 1)
        for i in range(len(msgs) - 1, -1, -1):
            suffix[i] = suffix[i + 1] + ctx.tok(msgs[i])
        fitting = (c for c in range(first, len(msgs) + 1) if c not in split and fixed + suffix[c] <= budget)
        cut = next(fitting, len(msgs))
        sent = [*msgs[:head], *(msgs[i] for i in keep)]
        sent += [text_user(f"[Context collapse: {cut - len(keep) - head} earlier messages not sent]", synthetic=True)]
        sent += msgs[cut:]
        _, stray = orphans(sent)
        if stray:
            def keep_block(b: object) -> bool:
                return not (isinstance(b, ToolResult) and b.tool_use_id in stray)
            sent = [m.with_blocks(tuple(filter(keep_block, m.blocks))) for m in sent]
            sent = [m for m in sent if m.blocks]
        return ctx.replace(sent)
