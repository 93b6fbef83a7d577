"""The failure scenarios (traces/scenarios.py FAILURES): each detector (bench/scoring/detectors.py) fires in a
run on the scenario that has its failure, for the strategies whose agent has it, and stays silent where the
agent's rule does not produce it. Each run is the run's own path (``run_task`` then ``task_row``: the
results columns), seed 0, a few strategies."""

from __future__ import annotations

import pytest

import strategies
from bench.run.runner import RunConfig, run_task
from bench.scoring import detectors as d
from bench.scoring.metrics import task_row
from bench.tokens import TokenCounter
from traces.scenarios import DEFAULT_BENCH, FAILURES, SCENARIOS
from traces.synthetic import generate


def run(scenario: str, names: tuple[str, ...]) -> dict[str, dict[str, object]]:
    trace, counter = generate(scenario, seed=0), TokenCounter()
    rows = {}
    for name in names:
        result = run_task(trace, counter, strategies.parse_spec(name), RunConfig())  # --model recorded
        row = task_row(result)
        assert row["error"] == "", (scenario, name, row["error"])
        rows[name] = row | {"_calls": [c for c in result.calls if c.kind == "agent"]}
    return rows


def fired(row: dict[str, object]) -> dict[str, int]:
    return {k: int(row[k]) for k in d.DETECTORS if row[k]}


def test_the_failure_scenarios_are_opt_in_and_record_their_models():
    assert not set(FAILURES) & set(DEFAULT_BENCH)
    assert SCENARIOS["window-1m"].model == "claude-sonnet-4-5[1m]"
    switch = generate("model-switch", 0)
    models = [m.meta["model"] for m in switch.messages if m.role == "assistant"]
    assert switch.model == "gpt-4.1" and models[0] == "gpt-4.1" and models[-1] == "gpt-5"
    k = models.index("gpt-5")
    assert set(models[:k]) == {"gpt-4.1"} and set(models[k:]) == {"gpt-5"} and 0.5 < k / len(models) < 0.95
    # scenarios without a model record none: the bench's traces are what they were
    assert generate("short", 0).model is None
    assert not any("model" in m.meta for m in generate("short", 0).messages)


def test_a_heavy_instruction_file_keeps_its_rules_first_and_fills_the_window():
    trace = generate("heavy-instructions", 0)
    system = trace.messages[0].text
    assert len(system) > 560_000 and "Instructions from: " in system
    rules = [n for n in trace.needles if n.kind == "instruction"]
    start = system.index("Instructions from: ")  # the rules head the file; the notes follow them
    assert len(rules) == 5 and all(n.message_index == 0 and 0 < system.index(n.answer) - start < 2_000 for n in rules)
    assert len([n for n in trace.needles if n.kind == "skill"]) == 6


@pytest.fixture(scope="module")
def heavy() -> dict[str, dict[str, object]]:
    return run("heavy-instructions", ("gemini-cli", "amp", "codex", "swe-agent"))


def test_overhead_fills_window_fires_on_the_heavy_instruction_file(heavy):
    """copilot-cli#3539: the first request is the fixed part, above half the 200K window, whatever the strategy."""
    for name, row in heavy.items():
        assert row["overhead_fills_window"] == 1, name
        first = row["_calls"][0]
        assert first.window == 200_000 and first.prompt_tokens > 0.6 * first.window


def test_runaway_and_ineffective_fire_where_the_instructions_sit_above_the_trigger(heavy):
    """Gemini CLI compresses at half the window: the 135K system prompt alone is above it, so it compresses on
    every call (copilot-cli#3621's loop); Amp's trigger is as low. Codex (90%) compacts a few times, spaced:
    silent; SWE-agent's observation window never compacts: silent."""
    for name in ("gemini-cli", "amp"):
        assert heavy[name]["runaway_compactions"] > 10 and heavy[name]["ineffective_compactions"] > 10, name
    assert heavy["codex"]["compactions"] >= 2
    assert fired(heavy["codex"]) == fired(heavy["swe-agent"]) == {"overhead_fills_window": 1}


def test_model_switch_fires_where_the_strategy_compacts_on_the_smaller_window():
    """Codex compacts before sampling when the new model's window is smaller and the usage is over its limit
    (openai/codex PR #11403); a strategy that never compacts (SWE-agent) stays silent."""
    rows = run("model-switch", ("codex", "claude-code", "swe-agent"))
    for name in ("codex", "claude-code"):
        assert rows[name]["model_switch_compactions"] == 1, (name, fired(rows[name]))
        calls = rows[name]["_calls"]
        assert {(c.model, c.window) for c in calls} == {("gpt-4.1", 1_047_576), ("gpt-5", 272_000)}
    assert fired(rows["swe-agent"]) == {}


@pytest.fixture(scope="module")
def window_1m() -> dict[str, dict[str, object]]:
    return run("window-1m", ("cline-half", "claude-code", "anthropic-clear-tool-uses", "swe-agent"))


def test_late_trigger_fires_on_the_1m_window(window_1m):
    """cline#14329: Cline's context manager triggers at max(window − 40K, 80%) = 960K on a 1M window and
    answers by dropping half the history; Claude Code's share-of-the-window trigger is as late."""
    for name in ("cline-half", "claude-code"):
        row = window_1m[name]
        assert row["late_trigger"] == 1, (name, fired(row))
        assert {c.window for c in row["_calls"]} == {1_000_000}
    assert window_1m["cline-half"]["compactions"] == 0  # a drop, not a summary: late_trigger counts it anyway


def test_triggers_fixed_in_tokens_stay_silent_on_the_1m_window(window_1m):
    """Clearing tool uses at 100K tokens, and a fixed observation window, never wait for 800K."""
    for name in ("anthropic-clear-tool-uses", "swe-agent"):
        assert fired(window_1m[name]) == {}, name


def test_the_instructions_scenario_of_make_bench_fires_no_detector():
    """The rule-bearing scenario `make bench` now runs has a small instruction file on a 200K window and one
    model: the switch, late-trigger and overhead detectors stay silent for every kind of strategy."""
    rows = run("instructions", ("claude-code", "codex", "cline-half", "opencode"))
    assert any(r["compactions"] for r in rows.values())
    for name, row in rows.items():
        assert fired(row) == {}, (name, fired(row))
