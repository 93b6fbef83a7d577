"""Claude Code's microcompact as the transcript records it: old tool outputs cleared before a
call, without a summary (``system`` record ``microcompact_boundary``).

What the agent did: Claude Code 2.x ran a "legacy" microcompact before each request. When the
count passed the warning threshold (autocompact threshold − 20,000: WARNING_THRESHOLD_BUFFER_TOKENS,
``src/services/compact/autoCompact.ts`` L63, L107-110 in the 2026 source published as
DroxKiwi/claude-code-leak-packaged @ fb1320d) it replaced the outputs of older Read, Bash, Grep,
Glob, WebSearch, WebFetch, Edit and Write calls by "[Old tool result content cleared]"
(COMPACTABLE_TOOLS and TIME_BASED_MC_CLEARED_MESSAGE, ``microCompact.ts`` L31-45 there), provided
that saved at least 20,000 tokens (a de-minification of the 2.0.76 bundle, function ``Vd``:
min savings 20,000, keep the newest 3). That source also says the legacy path was later removed
(``microCompact.ts`` L273: "Legacy microcompact path removed"); the CHANGELOG has no entry for
either change, so the versions are known only from transcripts: 2.1.17, 2.1.20 and 2.1.22 record
``microcompact_boundary`` (``microcompactMetadata.compactedToolIds``).

Which outputs it picks is not reproducible from the published descriptions (in the recorded
sessions it skips the oldest 1-12 outputs and clears a contiguous run of the next ones until
~20K is saved), so the replay does not guess: the importer attaches the recorded ids to the
message the boundary follows (``meta["microcompact"]``, traces/formats/claude_code.py) and the
strategy clears exactly those before the next call. An output that a replayed compaction already
summarized is simply no longer there. The autocompact check that follows still counts with the
last usage, as Claude Code did (its count after a microcompact is the pre-clearing usage plus
the estimate of what is newer: session 25/730c662552 cleared ~38K and compacted at the same
check with preTokens 176,700).
"""

from __future__ import annotations

from bench.context import Context, Event, ToolResult, event
from strategies._tools import rewrite_results
from strategies.layered._common import CLEARED


def recorded_microcompact(ctx: Context) -> tuple[Context, Event] | None:
    """Clear the tool outputs the agent cleared before this call: the ids recorded on the
    messages since the last answer (O(step)). None when nothing is left to clear."""
    msgs = ctx.messages
    start = len(msgs)
    while start > 0 and msgs[start - 1].role != "assistant":
        start -= 1
    ids = {i for m in msgs[max(0, start - 1):] for i in m.meta.get("microcompact", ())}
    if not ids:
        return None
    cleared: list[str] = []

    def marker(r: ToolResult) -> str | None:
        if r.tool_use_id in ids and r.content != CLEARED:
            cleared.append(r.tool_use_id)
            return CLEARED
        return None

    out = [rewrite_results(m, marker) for m in msgs]
    if not cleared:
        return None
    new = ctx.replace(out)
    touched = sum(1 for a, b in zip(msgs, out, strict=True) if a is not b)
    return new, event("prune", ctx, new, touched=touched,
                      detail=f"L2 microcompact (recorded): {len(cleared)} outputs cleared")
