"""Codex CLI: local compaction to recent user messages + a summary (spec/strategies.md §3).

At 90% of the window (2026; a flat 256K in mid-2025) the whole history is summarized, and the new
history is the initial context, the newest user messages within 20K tokens (bytes/4) and one user
message holding the summary behind Codex's "another language model" prefix. Every assistant
message, tool call and tool output is gone. Tool outputs are cut at record time (§3.5).

A package since issue 24 (one module per part, the same behaviour): ``common`` (prompts, text
helpers, history predicates), ``trigger`` (what Codex counts and compares), ``local`` (the local
compaction and the 2025 history bridge), ``remote`` (the server's compaction) and ``strategy`` (the
registered class and its options). Registry names: ``codex``, ``codex:2025``, ``codex:0.140``,
``codex:remote``, ``codex:0.125-remote``, ``codex:0.140-remote`` (strategies/__init__.py).
"""

from strategies.codex.common import (
    BRIDGE_LEAD,
    COMPACT_PROMPT,
    CONTEXTUAL_MARKERS,
    REASONING_META,
    SESSION_PREFIXES,
    SUMMARY_PREFIX,
    approx_tokens,
    checked_end,
    context_kind,
    contextual,
    initial_context_item,
    latest_initial_context,
    middle_truncate,
    new_turn_input,
    recorded_window,
    remote_kept,
    turn_boundary,
    user_messages,
)
from strategies.codex.strategy import Codex

__all__ = [
    "BRIDGE_LEAD", "COMPACT_PROMPT", "CONTEXTUAL_MARKERS", "REASONING_META", "SESSION_PREFIXES", "SUMMARY_PREFIX",
    "Codex",
    "approx_tokens", "checked_end", "context_kind", "contextual", "initial_context_item",
    "latest_initial_context", "middle_truncate",
    "new_turn_input", "recorded_window", "remote_kept", "turn_boundary", "user_messages",
]
