"""Our prompt-cache split beside the recorded one, on a real session."""

from __future__ import annotations

import pytest

import strategies
from bench.cli.fidelity import recorded_profile
from bench.replay.loop import ReplayConfig, replay
from bench.scoring.ledger_check import ledger_gap
from bench.tokens.attribution import attribute
from bench.tokens.counter import TokenCounter


@pytest.mark.slow
def test_the_split_of_a_claude_code_session_is_near_the_recorded_one(shared_traces):
    from traces.formats import load

    path = shared_traces / "claude-code__marot-spotter" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    trace = next(t for t in load([str(path)]).traces if not t.meta.get("sidechain"))
    counter = TokenCounter()
    counter.adopt_attribution(trace, attribute(trace, counter))
    result = replay(trace, strategies.build("none"), ReplayConfig(recorded_profile(trace)), counter=counter)
    gap = ledger_gap(trace, result)
    assert gap is not None and gap["calls"] == 61
    total_ours = gap["ours_cache_read"] + gap["ours_cache_write"] + gap["ours_uncached"]
    total_rec = gap["recorded_cache_read"] + gap["recorded_cache_write"] + gap["recorded_uncached"]
    assert abs(total_ours - total_rec) <= 0.01 * total_rec  # the same prompts (attribution)
    assert abs(gap["hit_gap"]) < 0.02  # and nearly the same share read from the cache
