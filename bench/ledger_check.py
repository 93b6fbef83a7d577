"""The cache ledger held against reality: our cache-read / write / uncached split of a replay of
``none`` beside the split the provider recorded (Claude Code cache_read / cache_creation, Codex
cached_input_tokens), over the calls before the first recorded compaction (after it the replay
holds what the recorded agent had compacted away).

Measured, not forced to agree. Known systematic gaps: a recorded first call can already read the
cache (the system prompt and tools were cached by an earlier session of the same agent; our ledger
starts empty per trace); OpenAI caches in 128-token blocks (we count the whole common prefix);
Anthropic caches up to the breakpoints the agent placed, we cache the whole common prefix.
"""

from __future__ import annotations

from typing import Any

SPLIT = ("cache_read", "cache_write", "uncached")


def ledger_gap(trace: Any, result: Any) -> dict[str, Any] | None:
    """Sums of ours and the recorded split, and the gap in the cache-hit share; None without usage."""
    from bench.fidelity import recorded_calls

    first = min(recorded_calls(trace), default=trace.n_calls)
    usage = [m.usage for m in trace.messages if m.role == "assistant"]
    ours = dict.fromkeys(SPLIT, 0)
    recorded = dict.fromkeys(SPLIT, 0)
    calls = 0
    for c in result.calls:
        if c.kind != "agent" or c.call >= first or c.call >= len(usage) or usage[c.call] is None:
            continue
        u = usage[c.call]
        calls += 1
        for key, value in zip(SPLIT, (c.cache_read, c.cache_write, c.uncached), strict=True):
            ours[key] += value
        for key, value in zip(SPLIT, (u.cache_read_tokens, u.cache_write_tokens, u.input_tokens), strict=True):
            recorded[key] += value
    if not calls:
        return None
    hit = {side: d["cache_read"] / max(sum(d.values()), 1) for side, d in (("ours", ours), ("recorded", recorded))}
    return {"trace": trace.id, "calls": calls, **{f"ours_{k}": v for k, v in ours.items()},
            **{f"recorded_{k}": v for k, v in recorded.items()},
            "ours_hit": hit["ours"], "recorded_hit": hit["recorded"], "hit_gap": hit["ours"] - hit["recorded"]}
