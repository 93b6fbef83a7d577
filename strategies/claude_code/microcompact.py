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

Which outputs it picks: at first read as "skips the oldest 1-12 outputs and clears a contiguous run
of the next ones until ~20K is saved", it is the rule ``legacy_microcompact`` models (the newest 40K
tokens of compactable outputs kept, all older ones cleared when that saves 20K): the "skipped" oldest
were Task/Skill outputs (never cleared) or, in the 2.1.17 session, outputs already cleared by a
microcompact the transcript did not record. The importer attaches the recorded ids to the message
the boundary follows (``meta["microcompact"]``, traces/formats/claude_code.py) and the strategy
clears exactly those before the next call, besides the modelled rule in the generation that ran it
(``claude-code:2.1.17``). An output that a replayed compaction already summarized is simply no
longer there. The autocompact check that follows still counts with the last usage, as Claude Code
did (its count after a microcompact is the pre-clearing usage plus the estimate of what is newer:
session 25/730c662552 cleared ~38K and compacted at the same check with preTokens 176,700).
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


COMPACTABLE = frozenset({"read", "bash", "grep", "glob", "websearch", "webfetch", "edit", "write"})
"""The tools whose outputs microcompact clears (COMPACTABLE_TOOLS, ``microCompact.ts`` L38-47 in
DroxKiwi/claude-code-leak-packaged @ fb1320d: Read, the shell tools, Grep, Glob, WebSearch, WebFetch,
Edit, Write). Task, Skill, TodoWrite and MCP outputs are never cleared (the 2.1.22 session's list skips
six Task outputs older than the ones it clears)."""
KEEP_RECENT_TOKENS = 40_000
"""The newest tool outputs kept, by Claude Code's rough count (chars/4): ``apiMicrocompact.ts`` L17
there, "Keep last 40k tokens like client-side" (DEFAULT_TARGET_INPUT_TOKENS)."""
MIN_SAVING_TOKENS = 20_000
"""No clearing that saves less (the 2.0.76 bundle's microcompact, function ``Vd``: min savings 20,000)."""
WARNING_BUFFER = 20_000
"""It runs once the count is over the warning threshold, the autocompact threshold less
WARNING_THRESHOLD_BUFFER_TOKENS (``autoCompact.ts`` L63, L107-110 there)."""


def _rough(text: str) -> int:
    """Claude Code's ``roughTokenCountEstimation``: characters / 4."""
    return round(len(text) / 4)


def legacy_microcompact(ctx: Context, count: int, threshold: int) -> tuple[Context, Event] | None:
    """The legacy microcompact of Claude Code 2.1.17-2.1.22, modelled: when ``count`` is over
    ``threshold`` − 20K, every output of a compactable tool older than the newest 40K tokens of such
    outputs becomes ``[Old tool result content cleared]``, if that saves at least 20K tokens
    (chars/4 throughout, as the agent estimated). None when it does not run or saves too little.

    Checked on every recorded ``microcompact_boundary`` (five, three sessions): the rule picks the
    same outputs (2.1.20: 29 and 37 of 29 and 37; 2.1.22: 5 of 5; 2.1.17: 8 and 19 where the record
    says 9 and 18) within a call of the recorded one. It also predicts the clearing the 2.1.17
    session (fdd24234) made before its call 30 without writing a boundary: its 12 oldest outputs
    (31,797 chars/4, ~44K provider tokens), exactly what its recorded prompt lost there
    (138,395 -> 95,864) and the outputs both of its recorded lists pass over as already cleared.
    The same rule would have fired in the 2.1.7 (call 48), 2.1.36-37 (call 223) and 2.1.39 (calls
    46, 87) sessions, whose prompts show no such drop: it ran in 2.1.17-2.1.22 only (the registry's
    ``legacy_microcompact``)."""
    if count < threshold - WARNING_BUFFER:
        return None
    msgs = ctx.messages
    names = {u.id: u.name.lower() for m in msgs if m.role == "assistant" for u in m.tool_uses}
    outputs = [(r.tool_use_id, _rough(r.content)) for m in msgs for r in m.tool_results
               if names.get(r.tool_use_id) in COMPACTABLE and isinstance(r.content, str) and r.content != CLEARED]
    kept, k = 0, len(outputs)
    while k > 0 and kept + outputs[k - 1][1] <= KEEP_RECENT_TOKENS:
        kept += outputs[k - 1][1]
        k -= 1
    older = outputs[:k]
    saving = sum(size for _, size in older)
    if saving < MIN_SAVING_TOKENS:
        return None
    ids = {i for i, _ in older}
    out = [rewrite_results(m, lambda r: CLEARED if r.tool_use_id in ids else None) for m in msgs]
    new = ctx.replace(out)
    touched = sum(1 for a, b in zip(msgs, out, strict=True) if a is not b)
    return new, event("prune", ctx, new, touched=touched,
                      detail=f"L2 microcompact (modelled, 2.1.17-2.1.22): {len(ids)} outputs older than the "
                             f"newest {kept} tokens cleared, ~{saving} tokens by chars/4")
