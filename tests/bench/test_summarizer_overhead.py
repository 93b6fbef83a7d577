"""A summarizer call is billed with the request's fixed overhead (system prompt and tool schemas), as a
real agent's compaction turn is sent with them (bench/replay/loop.py ``bill_summary``)."""

from __future__ import annotations

from dataclasses import dataclass

import strategies
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.replay.provider import ProviderView, shipped_counts
from bench.run.runner import shared_counter
from bench.tokens.counter import TokenCounter
from strategies.codex import Codex
from traces.synthetic import generate


@dataclass(frozen=True, kw_only=True)
class OwnPromptCodex(Codex):
    """The same compaction, asked with the summarizer's own short prompt (no agent overhead)."""

    summary_overhead = False


def _replay(strategy):
    trace = generate("short", seed=0)
    counter = shared_counter(trace, shipped_counts(trace, TokenCounter(), model="claude-sonnet-4-5",
                                                   truth="provider"))
    overhead = ProviderView(trace, counter).overhead_at(0)
    result = replay(trace, strategy, ReplayConfig(profile("claude-sonnet-4-5")), counter=counter)
    return overhead, [c for c in result.calls if c.kind == "summarizer"]


def test_a_summarizer_call_is_billed_with_the_overhead_and_reads_the_agents_prefix() -> None:
    overhead, calls = _replay(strategies.build(strategies.parse_spec("codex@limit_fraction=0.1")))
    assert overhead > 0 and calls  # the calibrated Claude overhead; the low limit makes codex compact
    for c in calls:
        assert c.prompt_tokens >= overhead
        assert c.cache_read >= overhead  # the overhead is the agent's cached prefix, as in a real turn
    _, without = _replay(OwnPromptCodex(limit_fraction=0.1))
    assert [c.call for c in without] == [c.call for c in calls]
    assert [a.prompt_tokens - b.prompt_tokens for a, b in zip(calls, without, strict=True)] == [overhead] * len(calls)
