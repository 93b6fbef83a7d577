"""`make perf` runs end to end on tiny sizes and prints each of its four measurements."""

from __future__ import annotations

import re

from bench.cli import perf


def test_perf_prints_every_measurement_on_tiny_sizes(capsys):
    assert perf.main(["--no-bench", "--sizes", "10000", "100000", "--strategies", "none", "codex",
                      "--tasks", "10", "20", "--memory-size", "10000"]) == 0
    out = capsys.readouterr().out
    assert "1. floor:" in out and "bench: skipped" in out
    assert "2. replay CPU seconds" in out and "10K->100K" in out
    for name in ("none", "codex"):  # a row each: two sizes, the exponent and the 10x ratio
        assert re.search(rf"\n   {name} +\d+\.\d+ +\d+\.\d+ +-?\d+\.\d+ +\d+\.\dx   \d+/\d+; (-|\d+\.\d\d)", out), out
    assert "of the growth of their work" in out
    assert "along the 100,000-token replay" in out and "within 1.1x along the session" in out
    for name in ("none", "codex"):  # the growth along the session, and the events in its two fifths
        assert re.search(rf"\n   {name} +\d+\.\d\d   events \d+/\d+", out), out
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


def test_along_reads_one_for_constant_work_per_call_and_more_for_a_walk_of_the_history():
    """``along`` over a clock that advances by the work a test strategy says it did: 1 a call
    (``none``-like) reads 1; the whole history a call reads about the ratio of the histories behind
    the two fifths' calls; events are counted in the fifth of their call."""
    from dataclasses import dataclass

    from bench.context.strategy import Outcome, Strategy, event
    from bench.cost.pricing import profile
    from bench.replay.loop import ReplayConfig
    from bench.tokens.counter import TokenCounter
    from traces.synthetic import generate

    work = [0.0]

    @dataclass(frozen=True, kw_only=True)
    class Walks(Strategy):
        name = "walks"
        citation = "test"
        whole_history: bool = False

        def before_call(self, ctx, session):
            work[0] += len(ctx.messages) if self.whole_history else 1
            if session.call_index % 4 == 0:  # an event every fourth call
                return Outcome(ctx, (event("prune", ctx, ctx),))
            return None

    trace = generate("long@tokens=100000", 0)
    counter = TokenCounter()
    counter.prime(trace.messages)
    config = ReplayConfig(profile("claude-sonnet-4-5"))
    flat, early, late = perf.along(trace, Walks(), config, counter, clock=lambda: work[0])
    assert flat == 1.0
    n = trace.n_calls - 1  # per-call times: between one call's start and the next's
    second, last = range(n // 5, 2 * n // 5), range(4 * n // 5, n)
    assert (early, late) == (sum(i % 4 == 0 for i in second), sum(i % 4 == 0 for i in last))
    walked, _, _ = perf.along(trace, Walks(whole_history=True), config, counter, clock=lambda: work[0])
    assert 2.0 < walked < perf.ALONG_HISTORY + 0.5


def test_import_seconds_sums_the_top_level_imports_of_an_importtime_report():
    report = "\n".join([
        "import time: self [us] | cumulative | imported package",
        "import time:       100 |        100 |   encodings.utf_8",  # nested: inside the next one
        "import time:       200 |        300 | encodings",
        "import time:      1000 |     500000 | pandas",
        "not an import line | 5 | x",
    ])
    assert perf.import_seconds(report) == (300 + 500000) / 1e6
    assert perf.import_seconds(report, skip=perf.LATE) == 300 / 1e6  # pandas: paid after the first replay
    assert perf.import_seconds(report, only=perf.LATE) == 500000 / 1e6


def test_floor_vs_bench_prints_the_parts_side_by_side(monkeypatch, capsys):
    """The bench's ratio and its parts over the floor (pre-replay, agent calls, report), from one run:
    the two children (the bench, then its report) are stood in for with fixed CPU figures."""
    import subprocess

    runs = []

    def child(argv):
        runs.append(argv)
        used = 20.0 if "run" in argv else 3.0
        return used, used, subprocess.CompletedProcess(argv, 0, "", "import time: 500000 | 500000 | pandas\n")

    monkeypatch.setattr(perf, "_child", child)
    monkeypatch.setattr(perf, "agent_calls", lambda path: 1_000)
    from traces.synthetic import generate

    small = generate("short@tokens=20000", 0)  # a floor of some milliseconds, never zero
    monkeypatch.setattr(perf, "corpus", lambda seeds: [small])
    perf.floor_vs_bench(1, True)
    out = capsys.readouterr().out
    assert [a[a.index("bench") + 1] for a in runs] == ["run", "report"]
    line = next(x for x in out.splitlines() if "parts over the floor" in x)
    assert "pre-replay" in line and "agent calls" in line and "report" in line and "a call" in line
    assert "the bench with its report (make bench)" in line
    assert re.search(r"report \d+\.\dx \(3\.00 s\)", line) and "a call" in line


def test_per_strategy_prints_each_strategys_cpu_per_call_and_the_sum(capsys):
    assert perf.main(["--per-strategy", "--strategies", "five-layer"]) == 0
    out = capsys.readouterr().out
    pattern = r"\n   (none|five-layer) +(\d+) us  \(([\d,]+) calls"
    rows = {name: (us, calls) for name, us, calls in re.findall(pattern, out)}
    assert set(rows) == {"none", "five-layer"}, out  # `none` is added when not asked for, as in every measurement
    assert re.search(r"all: \d+\.\d\d s for [\d,]+ calls", out) and "1. floor:" not in out


def test_floor_vs_bench_says_what_the_count_cache_held(monkeypatch, capsys, tmp_path):
    """Before the child run, the message counts and the written-text counts kept for the corpus are counted,
    so the figure says whether it tokenized them or read them."""
    import subprocess

    from bench.run.sources import trace_hash
    from bench.tokens import count_cache
    from bench.tokens.counter import TokenCounter
    from traces.synthetic import generate

    monkeypatch.setenv("COMPACTION_BENCH_CACHE", str(tmp_path / "c"))
    monkeypatch.setattr(perf, "_child", lambda argv: (1.0, 1.0, subprocess.CompletedProcess(argv, 0, "", "")))
    monkeypatch.setattr(perf, "agent_calls", lambda path: 10)
    two = [generate("short@tokens=20000", 0), generate("short@tokens=20000", 1)]
    monkeypatch.setattr(perf, "corpus", lambda seeds: two)

    def said() -> str:
        perf.floor_vs_bench(1, True)
        return next(x for x in capsys.readouterr().out.splitlines() if "count cache" in x)

    assert "message counts kept for 0 of 2 traces (cold), written-text counts for 0 of 2 (cold" in said()
    counter = TokenCounter()
    count_cache.prime(counter, trace_hash(two[0]), two[0].messages)
    count_cache.attach_texts(counter, trace_hash(two[0]))
    counter.text("a summary")
    count_cache.keep_texts(counter)
    assert "kept for 1 of 2 traces (partly warm), written-text counts for 1 of 2 (partly warm" in said()
    monkeypatch.setenv("COMPACTION_BENCH_CACHE", "off")
    assert "off (COMPACTION_BENCH_CACHE=off" in said()


def test_bound_is_the_rest_of_the_run_plus_every_call_at_what_none_costs(monkeypatch, capsys):
    """``--bound``: the child's CPU less its replays is the rest of the run; every replayed call at `none`'s
    cost is added to it, over the floor (figures stood in for, so the arithmetic is what is checked)."""
    import json
    import subprocess

    from bench.cli import perf_bound

    figures = {"replays": 12.0, "tasks": 342, "calls": 100_000, "total": 17.0}

    def child(argv):
        assert "--child" in argv
        return 17.0, 17.0, subprocess.CompletedProcess(argv, 0, "noise\n" + perf_bound.MARK + json.dumps(figures), "")

    monkeypatch.setattr(perf_bound, "_none_per_call", lambda traces: (20e-6, 1_637))
    perf_bound.bound(0.5, [], 1, child)
    out = capsys.readouterr().out
    assert "the rest of the run" in out and "5.00 s = 10.0x the floor" in out  # 17 - 12
    assert "7.00 s = 14.0x the floor (target 6x)" in out  # 5 + 100,000 x 20 us
    monkeypatch.setattr(perf_bound, "_none_per_call", lambda traces: (_ for _ in ()).throw(AssertionError("ran")))
    perf_bound.bound(0.5, [], 1, lambda argv: (1.0, 1.0, subprocess.CompletedProcess(argv, 3, "", "boom")))
    assert "the bench failed (exit 3): boom" in capsys.readouterr().out
