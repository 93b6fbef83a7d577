"""Every real trace in ../shared/traces imports and replays through every registered strategy.

What a provider would reject is asserted on every request sent: a tool result without its call,
or a call without its result.
"""

from __future__ import annotations

import pytest

import strategies
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.tokens.counter import TokenCounter
from traces.formats import load
from traces.model import orphans


@pytest.fixture(scope="module")
def real_traces(shared_traces):
    result = load([str(shared_traces)])
    counters = {t.id: TokenCounter() for t in result.traces}
    return result, counters


def test_every_real_file_imports(real_traces):
    result, _ = real_traces
    agents = {t.agent for t in result.traces}
    assert {"claude-code", "codex", "cline", "swe-agent", "mini-swe-agent", "openhands", "aider"} <= agents
    assert result.skipped == 0
    assert any("passed over" in n and "MANIFEST.md" in n for n in result.notes)


class NoOrphans:
    """Delegates to a strategy and checks every request it sends."""

    def __init__(self, inner):
        self.inner, self.name, self.estimator = inner, inner.name, inner.estimator

    def on_tool_result(self, ctx, session):
        return self.inner.on_tool_result(ctx, session)

    def before_call(self, ctx, session):
        return self.inner.before_call(ctx, session)

    def on_overflow(self, ctx, session):
        return self.inner.on_overflow(ctx, session)

    def project(self, ctx, session):
        sent = self.inner.project(ctx, session)
        missing_results, missing_calls = orphans(sent.messages)
        assert not missing_results and not missing_calls, f"call {session.call_index}: orphans in the request"
        return sent


@pytest.mark.parametrize("name", strategies.names())
def test_every_real_trace_replays(real_traces, name):
    result, counters = real_traces
    config = ReplayConfig(profile("claude-sonnet-4-5"))
    for trace in result.traces:
        out = replay(trace, NoOrphans(strategies.build(name)), config, counter=counters[trace.id])
        assert out.error is None
        assert len([c for c in out.calls if c.kind == "agent"]) == trace.n_calls or out.failed, trace.id
