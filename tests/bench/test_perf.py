"""`make perf` runs end to end on tiny sizes and prints each of its four measurements."""

from __future__ import annotations

import re

from bench import perf


def test_perf_prints_every_measurement_on_tiny_sizes(capsys):
    assert perf.main(["--no-bench", "--sizes", "10000", "100000", "--strategies", "none", "codex",
                      "--tasks", "10", "20", "--memory-size", "10000"]) == 0
    out = capsys.readouterr().out
    assert "1. floor:" in out and "bench: skipped" in out
    assert "2. replay CPU seconds" in out and "10K->100K" in out
    for name in ("none", "codex"):  # a row each: two sizes, the exponent and the 10x ratio
        assert re.search(rf"\n   {name} +\d+\.\d+ +\d+\.\d+ +-?\d+\.\d+ +\d+\.\dx   \d+/\d+; (-|\d+\.\d\d)", out), out
    assert "of the growth of their work" in out
    assert "3. aggregation" in out and "exponent" in out
    assert "4. peak memory" in out


def test_best_keeps_the_least_time_of_short_runs_and_one_run_of_long_ones(monkeypatch):
    times = iter([0.3, 0.1, 0.2, 0.9])
    monkeypatch.setattr(perf, "cpu", lambda fn: next(times))
    assert perf.best(lambda: None) == 0.1  # 0.3 < REPEAT_UNDER: two more runs, the least kept
    assert perf.best(lambda: None) == 0.9  # 0.9 >= REPEAT_UNDER: one run


def test_work_grows_as_the_larger_of_calls_and_events():
    assert perf.work_ratio((100, 1000), (0, 0)) == 10  # never compacted: the calls
    assert perf.work_ratio((100, 1000), (2, 40)) == 20  # compacted 20x as often: the events
    assert perf.work_ratio((100, 1000), (10, 50)) == 10
    assert perf.work_ratio((100, 1000), (0, 5)) is None  # the shorter one never compacted: no cost to scale
