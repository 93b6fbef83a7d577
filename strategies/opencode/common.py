"""OpenCode: the texts (prompts, markers, headings) every generation shares, and OpenCode's rounding."""

from __future__ import annotations

import math

PRUNED = "[Old tool result content cleared]"
QUESTION = "What did we do so far?"
CONTINUE_CLASSIC = "Continue if you have next steps"
CONTINUE_2026 = ("Continue if you have next steps, or stop and ask for clarification if you are unsure "
                 "how to proceed.")
TRUNCATED = "\n[truncated]"
OVERFLOW_HEADINGS = ("## Goal", "## Instructions", "## Discoveries", "## Accomplished",
                     "## Relevant files / directories")
OVERFLOW_PROMPT = (
    "Summarize our conversation above so that another agent, who will not see it, can carry on the work: "
    "what we did, what we are doing, which files we work on and what comes next. Do not call tools; answer "
    "with the summary only, in the language of the user's messages, following this template:\n"
    + "\n".join(OVERFLOW_HEADINGS))
TAIL_HEADINGS = ("## Objective", "## Important Details", "## Work State", "### Completed", "### Active",
                 "### Blocked", "## Next Move", "## Relevant Files")

CLASSIC_PROMPT = (
    "Write a detailed prompt that would let a fresh session carry on our conversation above: it will "
    "not see this conversation. Cover what we did, what we are doing now, which files we are working "
    "on, and what we are going to do next.")
TAIL_PROMPT = (
    "Here is the conversation so far, as text inside <conversation> tags. Write a summary that lets "
    "the work continue, using exactly this template:\n\n" + "\n".join(TAIL_HEADINGS) + "\n\n"
    "Keep every section and write (none) when one is empty. Use terse bullets. Keep exact paths, "
    "commands and identifiers. Do not mention that a summary or compaction happened.")
PRIOR_PROMPT = (
    "\n\nA summary of the earlier part is in <prior-summary> tags. Update it: carry forward what is "
    "still open, let the conversation win where they conflict, and move finished work to Completed."
    "\n<prior-summary>\n{summary}\n</prior-summary>")


GENERATIONS = ("classic", "overflow", "tail")


def js_round(x: float) -> int:
    """JavaScript's Math.round (half up), which OpenCode's token estimate uses."""
    return math.floor(x + 0.5)
