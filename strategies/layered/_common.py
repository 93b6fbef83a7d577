"""What the five layers (and Claude Code's configuration of them) share: the texts they write
(Claude Code's summary sections, services/compact/prompt.ts, per spec/strategies.md §4.1; the cleared
and persisted markers) and small helpers.
"""

from __future__ import annotations

from bench.context import Context, Outcome, ToolResult, ToolUse, event

PERSIST_DIR = "/tmp/agent/tool-results"
CLEARED = "[Old tool result content cleared]"
SETTLED = ("[Tool result", CLEARED)
"""L2 leaves an output starting with either as it is (one it cleared, or one L1 persisted)."""
SUMMARY_SECTIONS = (
    "Primary Request and Intent", "Key Technical Concepts", "Files and Code Sections", "Errors and fixes",
    "Problem Solving", "All user messages", "Pending Tasks", "Current Work", "Optional Next Step",
)
# Our instructions around Claude Code's nine section headings (services/compact/prompt.ts).
SUMMARY_PROMPT = (
    "Write a detailed summary of this conversation so far, so the work can go on without it. "
    "Think it through in <analysis> tags, then give the summary in <summary> tags with these "
    "sections:\n" + "\n".join(f"{i}. {s}" for i, s in enumerate(SUMMARY_SECTIONS, 1))
    + "\nQuote the user's messages and the most recent work directly where it matters."
)
CONTINUATION = ("This session is being continued from a previous conversation that ran out of context. "
                "The summary below covers the earlier portion of the conversation.\n\n")
CONTINUE_AUTO = ("\n\nContinue with the last task you were asked to work on, from where it was left, "
                 "without asking the user any further questions.")


def _block_id(b: object) -> str | None:
    if isinstance(b, ToolUse):
        return b.id
    if isinstance(b, ToolResult):
        return b.tool_use_id
    return None


def _touched(before: Context, after: Context) -> int:
    ids = {id(m) for m in before.messages}
    return sum(1 for m in after.messages if id(m) not in ids)


def _fail(ctx: Context, reason: str) -> Outcome:
    return Outcome(ctx, (event("fail", ctx, ctx, detail=reason),), fail=reason)
