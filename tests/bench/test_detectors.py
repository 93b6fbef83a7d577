"""Failure detectors (bench/scoring/detectors.py): each fires on a hand-built session that has the failure
and stays silent on bench scenarios that do not."""

from __future__ import annotations

import pytest

import strategies
from bench.replay.records import CallRecord, EventRecord, TaskResult
from bench.run.runner import RunConfig, run_task
from bench.scoring import detectors as d
from bench.scoring.metrics import METRIC_BY_NAME, results_table, task_row
from bench.tokens import TokenCounter
from traces.synthetic import generate

WIN = 200_000


def call(i: int, prompt: int = 10_000, *, model: str = "m", window: int = WIN, kind: str = "agent") -> CallRecord:
    return CallRecord("t", "s", i, kind, 3, prompt, prompt, 0, 0, prompt, 100, 0.0, 0.0, False, False, float(i),
                      model=model, window=window)


def compaction(i: int, before: int = 170_000, after: int = 20_000, kind: str = "summarize") -> EventRecord:
    return EventRecord("t", "s", i, "before_call", kind, before, after, before, 5, 1_000, "")


def detect(calls, events, window=None) -> dict[str, int]:
    return d.counts(d.findings("t", "s", calls, events, window))


def quiet(**fired: int) -> dict[str, int]:
    return {name: fired.get(name, 0) for name in d.DETECTORS}


def test_runaway_fires_on_consecutive_compactions():
    calls = [call(i) for i in range(12)]
    assert detect(calls, [compaction(3), compaction(4)])["runaway_compactions"] == 1
    # a compaction every other call: the fourth within ten calls fires, the three before it do not
    found = d.runaway(calls, [compaction(i) for i in (0, 2, 4, 6, 8)])
    assert [c for c, _ in found] == [6, 8] and "4 compactions within 10 calls" in found[0][1]
    # two compactions on one call (a summarize chained with a handoff) are one compacting call
    assert detect(calls, [compaction(3), compaction(3, 20_000, 15_000, "handoff")])["runaway_compactions"] == 0


def test_runaway_counts_positions_among_agent_calls_not_reread_rows():
    calls = [call(0), call(1), call(1, kind="reread"), call(5), call(6)]  # recorded indices may skip
    assert d.runaway(calls, [compaction(1), compaction(5)])[0][0] == 5  # 5 is the agent call after 1


def test_ineffective_fires_when_the_context_is_not_reduced_or_compacts_again():
    calls = [call(i) for i in range(6)]
    found = d.ineffective(calls, [compaction(2, 170_000, 171_000)])
    assert found == [(2, "context 170,000 -> 171,000 tokens: not reduced")]
    # copilot-cli#3621: instructions above the trigger, so the next turn compacts again
    found = d.ineffective(calls, [compaction(2, 170_000, 160_000), compaction(3, 172_000, 160_000)])
    assert [c for c, _ in found] == [2] and "compacted again at call 3" in found[0][1]
    assert d.ineffective(calls, [compaction(1), compaction(4)]) == []


def test_model_switch_fires_at_the_first_call_on_the_new_model():
    calls = [call(0), call(1), call(2, model="other"), call(3, model="other"), call(4, model="other", window=WIN * 2)]
    assert [c for c, _ in d.model_switch(calls, [compaction(2)])] == [2]
    assert [c for c, _ in d.model_switch(calls, [compaction(4)])] == [4]  # the window changed
    assert d.model_switch(calls, [compaction(3)]) == []  # a compaction later on the same model
    old_rows = [call(0, model=""), call(1, model="other")]  # rows without a model never fire
    assert d.model_switch(old_rows, [compaction(1)]) == []


def test_late_trigger_fires_on_a_share_of_a_large_window_only():
    big = [call(i, window=1_000_000) for i in range(4)]
    found = d.late_trigger(big, [compaction(2, 810_000), compaction(3, 900_000)])
    assert found == [(2, "first compaction at 810,000 tokens, 81% of a 1,000,000-token window")]
    assert d.late_trigger(big, [compaction(2, 150_000)]) == []  # a trigger fixed in tokens
    small = [call(i) for i in range(4)]
    assert d.late_trigger(small, [compaction(2, 190_000)]) == []  # 95% of 200K: the usual design
    # rows without a window take the run's
    assert len(d.late_trigger([call(2, window=0)], [compaction(2, 810_000)], window=1_000_000)) == 1


def test_overhead_fills_window_on_the_first_request():
    assert d.overhead_fills_window([call(0, 146_000), call(1, 150_000)]) == [
        (0, "first request 146,000 tokens, 73% of a 200,000-token window")]
    assert d.overhead_fills_window([call(0, 20_000), call(1, 150_000)]) == []
    assert d.overhead_fills_window([call(0, 20_000, window=0)], window=32_000) != []


def test_each_detector_is_a_results_column():
    r = TaskResult("t", "s", calls=[call(0, 146_000), call(1), call(2)], events=[compaction(1), compaction(2)])
    row = task_row(r)
    assert {k: row[k] for k in d.DETECTORS} == quiet(runaway_compactions=1, ineffective_compactions=1,
                                                      overhead_fills_window=1)
    assert all(name in METRIC_BY_NAME for name in d.DETECTORS)
    table = results_table([r, TaskResult("t", "none", calls=[call(0)])])
    assert list(table.overhead_fills_window) == [1, 0]


@pytest.fixture(scope="module")
def bench_rows() -> list[dict[str, object]]:
    counter = TokenCounter()
    rows = []
    for scenario in ("short", "long"):
        trace = generate(scenario, seed=0)
        for name in ("codex", "claude-code", "opencode"):
            rows.append(task_row(run_task(trace, counter, strategies.parse_spec(name), RunConfig())))
    return rows


def test_detectors_stay_silent_on_bench_scenarios(bench_rows):
    assert any(r["compactions"] for r in bench_rows)  # the strategies did compact
    for r in bench_rows:
        assert r["error"] == "" and {k: r[k] for k in d.DETECTORS} == quiet(), (r["trace"], r["strategy"])


def test_the_replay_records_each_calls_model_and_window():
    trace = generate("short", seed=0)
    r = run_task(trace, TokenCounter(), strategies.parse_spec("none"), RunConfig(model="claude-sonnet-4-5"))
    agent = [c for c in r.calls if c.kind == "agent"]
    assert agent and all(c.model == "claude-sonnet-4-5" and c.window >= 200_000 for c in agent)


def test_the_report_says_which_detector_fired_on_which_strategy():
    import pandas as pd

    from reports.tables import detector_lines

    rows = pd.DataFrame({"trace": ["a", "b", "a"], "strategy": ["x", "x", "y"], "error": ["", "", ""],
                         **{k: [0, 0, 0] for k in d.DETECTORS}})
    assert detector_lines(rows) == []
    rows.loc[[0, 1], "runaway_compactions"] = [2, 1]
    assert detector_lines(rows) == ["Runaway compaction (on consecutive calls, or more than 3 in 10 calls; "
                                    "claude-code#24179): <b>x</b> (3 calls, 2 traces)."]
    assert detector_lines(rows.drop(columns=list(d.DETECTORS))) == []  # a run from before the detectors
