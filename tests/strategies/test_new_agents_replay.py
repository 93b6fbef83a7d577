"""Gemini CLI and Copilot CLI sessions import, replay through every registered strategy, and their
recorded compactions reach the fidelity rows beside the matching strategy's own."""

from __future__ import annotations

from dataclasses import replace

import pytest

import strategies
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.scoring.fidelity import MATCHING_STRATEGY, check_trace
from tests.traces.agent_sessions import copilot_session, gemini_session, write_jsonl
from tests.traces.test_shared_replay import NoOrphans
from traces.formats import read_path

SMALL = ReplayConfig(replace(profile("claude-sonnet-4-5"), context_window=12_000, max_output=2_000))


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    folder = tmp_path_factory.mktemp("agents")
    g_recs, _ = gemini_session(turns_before=8, turns_after=6, output_lines=120, nudges=True)
    c_events, _ = copilot_session(calls_before=8, calls_during=2, calls_after=6, output_lines=120)
    out = []
    for name, recs in (("session-gem.jsonl", g_recs), ("events.jsonl", c_events)):
        main = [t for t in read_path(write_jsonl(folder / name, recs)).traces if not t.meta.get("sidechain")]
        out += main  # a Copilot sub-agent run is a sidechain trace of its own
    return out


@pytest.mark.parametrize("name", strategies.names())
def test_every_strategy_replays_both_agents(traces, name, counter):
    for trace in traces:
        result = replay(trace, NoOrphans(strategies.build(name)), SMALL, counter=counter)
        assert result.error is None, (name, trace.agent)
        assert len([c for c in result.calls if c.kind == "agent"]) == trace.n_calls or result.failed


def test_their_compactions_appear_in_the_fidelity_rows(traces, counter):
    for trace in traces:
        assert MATCHING_STRATEGY[trace.agent] == trace.agent
        rows = check_trace(trace, SMALL, counter=counter)
        assert len(rows) == len(trace.compactions) == 1
        (row,) = rows
        assert row["strategy"] == trace.agent and row["recorded_pre_tokens"] == trace.compactions[0].pre_tokens
        assert row["replayed_call"] is not None and row["replayed_summary_tokens"]  # ours compacted too
