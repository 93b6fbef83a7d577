"""OpenCode: prune old tool outputs, then compact with an LLM summary (spec/strategies.md §1).

Three generations share one class (``generation``): "classic" (2025 – early 2026: prune on, the
summary replaces everything, triggered over ``limit.input`` or ``context − output``), "overflow"
(1.2 – 1.4: session/overflow.ts's trigger, ``limit.input − min(20K, output)`` counted on the whole
``tokens.total``, prune on, and still a summary that replaces everything) and "tail"
(later: prune off, a token-budgeted tail of recent turns is kept verbatim and only the head is
summarized, merged with the prior summary).

Mapping OpenCode's store onto our message list: one OpenCode assistant message holds its tool
parts (call *and* result), so our tool-result-only user messages belong to the assistant message
before them; only human user messages that say something (``is_prompt``) count as turns: an empty
one (a log can hold it between a call and its results) has no OpenCode message of its own. Prune
runs "at the end of each prompt-loop run": here, in ``before_call`` of the step that brings a new
human turn, over the history that existed before that turn arrived.

A package since issue 24 (one module per part, the same behaviour): ``common`` (prompts and markers),
``trigger`` (each generation's overflow check), ``prune``, ``tail`` (the tail generation's verbatim
tail and transcript) and ``strategy`` (the registered class, its hooks and the compaction). Registry
names: ``opencode``, ``opencode:1.4``, ``opencode:tail`` (strategies/__init__.py).
"""

from strategies.opencode.common import (
    CLASSIC_PROMPT,
    CONTINUE_2026,
    CONTINUE_CLASSIC,
    GENERATIONS,
    OVERFLOW_HEADINGS,
    OVERFLOW_PROMPT,
    PRIOR_PROMPT,
    PRUNED,
    QUESTION,
    TAIL_HEADINGS,
    TAIL_PROMPT,
    TRUNCATED,
    js_round,
)
from strategies.opencode.strategy import OpenCode

__all__ = [
    "CLASSIC_PROMPT", "CONTINUE_2026", "CONTINUE_CLASSIC", "GENERATIONS", "OVERFLOW_HEADINGS", "OVERFLOW_PROMPT",
    "PRIOR_PROMPT", "PRUNED", "QUESTION", "TAIL_HEADINGS", "TAIL_PROMPT", "TRUNCATED", "OpenCode", "js_round",
]
