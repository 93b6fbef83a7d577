"""The cache ledger held against reality: our cache-read / write / uncached split of a replay beside
the split the provider recorded (Claude Code cache_read / cache_creation, Codex cached_input_tokens),
over the calls before the first recorded compaction and before the replay's own first compaction
(after either, the two sides no longer send the same prompt).

Measured, not forced to agree. One gap is modelled here, because the recordings show it exactly:
OpenAI reports cached input in whole 128-token blocks, and nothing below 1,024 tokens (OpenAI
cookbook, "Prompt Caching 201" §1.1, openai/openai-cookbook examples/Prompt_Caching_201.ipynb: hits
need an exact prefix of at least 1,024 tokens and come in 128-token increments; every one of the 402
cached_input_tokens values in ../shared/traces/codex__madshn-localpush is a multiple of 128). For
OpenAI-family traces our read is rounded down to whole blocks, the rest counted as uncached.

Known and left measured: a recorded first call that already reads the cache (``recorded_first_read``).
The provider keeps a prefix across transcripts: a Claude Code subagent's or compaction call's own
transcript starts on the parent's cached conversation, and a Codex session starts on the system
prompt and tools an earlier session cached; our ledger starts empty per trace. Anthropic caches up
to the breakpoints the agent placed (Claude Code: the last message, so a few tokens stay uncached per
call), we cache the whole common prefix.
"""

from __future__ import annotations

from typing import Any

SPLIT = ("cache_read", "cache_write", "uncached")
BLOCK_TOKENS = 128
"""OpenAI's cache granularity: cached_tokens is a whole number of these."""
MIN_CACHED_TOKENS = 1_024
"""OpenAI caches nothing of a prefix shorter than this."""


def cached_blocks(read: int) -> int:
    """What OpenAI would report as cached of a common prefix of ``read`` tokens."""
    return read // BLOCK_TOKENS * BLOCK_TOKENS if read >= MIN_CACHED_TOKENS else 0


def in_blocks(trace: Any) -> bool:
    """Whether the trace's provider caches in 128-token blocks (OpenAI models, Codex)."""
    from bench.tokens.calibration import family_of

    return family_of(trace.model) == "openai" or trace.agent == "codex"


def _first_compaction(result: Any) -> int | None:
    """The call of the replay's first event that changed the context."""
    calls = [e.call for e in result.events if e.tokens_after != e.tokens_before]
    return min(calls, default=None)


def ledger_gap(trace: Any, result: Any) -> dict[str, Any] | None:
    """Sums of ours and the recorded split, and the gap in the cache-hit share; None without usage."""
    from traces.model import recorded_calls

    first = min(recorded_calls(trace), default=trace.n_calls)
    replayed = _first_compaction(result)
    if replayed is not None:
        first = min(first, replayed)
    blocks = in_blocks(trace)
    usage = [m.usage for m in trace.messages if m.role == "assistant"]
    ours = dict.fromkeys(SPLIT, 0)
    recorded = dict.fromkeys(SPLIT, 0)
    firsts: tuple[int, int] | None = None
    calls = 0
    for c in result.calls:
        if c.kind != "agent" or c.call >= first or c.call >= len(usage) or usage[c.call] is None:
            continue
        u = usage[c.call]
        calls += 1
        read, write, uncached = c.cache_read, c.cache_write, c.uncached
        if blocks:
            read, uncached = cached_blocks(read), uncached + read - cached_blocks(read)
        if firsts is None:
            firsts = (read, u.cache_read_tokens)
        for key, value in zip(SPLIT, (read, write, uncached), strict=True):
            ours[key] += value
        for key, value in zip(SPLIT, (u.cache_read_tokens, u.cache_write_tokens, u.input_tokens), strict=True):
            recorded[key] += value
    if not calls or firsts is None:
        return None
    hit = {side: d["cache_read"] / max(sum(d.values()), 1) for side, d in (("ours", ours), ("recorded", recorded))}
    return {"trace": trace.id, "strategy": getattr(result, "strategy", None), "agent": trace.agent,
            "model": trace.model, "subagent": bool(trace.meta.get("sidechain")), "blocks": blocks, "calls": calls,
            **{f"ours_{k}": v for k, v in ours.items()}, **{f"recorded_{k}": v for k, v in recorded.items()},
            "ours_hit": hit["ours"], "recorded_hit": hit["recorded"], "hit_gap": hit["ours"] - hit["recorded"],
            "ours_first_read": firsts[0], "recorded_first_read": firsts[1]}


def ledger_rows(trace: Any, result: Any) -> list[dict[str, Any]]:
    """The run's ledger table rows for one task: one row where the trace records usage, else none."""
    row = ledger_gap(trace, result)
    return [row] if row is not None else []
