"""Runs that outgrow one machine: the Parquet task store, executors, shards, signals, planning."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from bench.cli.main import main
from bench.run import executors, sources, store
from bench.run.runner import Budget, RunConfig, run
from bench.run.store import TaskOutput

REPO = Path(__file__).resolve().parents[2]
SMALL = ("--traces", "synthetic:short", "--seeds", "2", "--strategies", "none", "opencode")


def _run(tmp_path: Path, name: str, *extra: str) -> Path:
    args = ["run", *SMALL, "--name", name, "--out", str(tmp_path), "--quiet", "--no-report", *extra]
    assert main(args) == 0
    return tmp_path / name


def test_tasks_stream_into_batches_and_resume(tmp_path, monkeypatch, capsys):
    """One batch per task at batch size 1: the parent never holds two finished tasks; a re-run resumes all."""
    monkeypatch.setattr(store, "BATCH_TASKS", 1)
    held = []
    real_add = store.Store.add

    def spy(self, out):
        real_add(self, out)
        held.append(self.pending)

    monkeypatch.setattr(store.Store, "add", spy)
    run_dir = _run(tmp_path, "b", "--executor", "local")
    assert held == [0, 0, 0, 0]
    assert len(list((run_dir / "data" / "results").glob("part-*.parquet"))) == 4
    assert not (run_dir / "tasks").exists()
    capsys.readouterr()
    _run(tmp_path, "b", "--executor", "local")
    assert "4 tasks (4 resumed)" in capsys.readouterr().out
    assert len(list((run_dir / "data" / "results").glob("part-*.parquet"))) == 4


def test_process_pool_equals_local_and_exports_match(tmp_path):
    local = _run(tmp_path, "l", "--executor", "local")
    pool = _run(tmp_path, "p", "--executor", "process", "--workers", "2", "--csv", "no")
    assert not (pool / "calls.csv").exists()
    assert main(["export", str(pool)]) == 0
    for name in ("results.csv", "calls.csv", "events.jsonl", "summaries.jsonl", "probes.csv"):
        assert (local / name).read_bytes() == (pool / name).read_bytes(), name
    calls = store.load_table(pool, "calls")
    assert len(calls) == len(pd.read_csv(local / "calls.csv")) and "key" not in calls


def test_detail_summary_keeps_results_only(tmp_path):
    run_dir = _run(tmp_path, "s", "--executor", "local", "--detail", "summary")
    assert sorted(p.name for p in (run_dir / "data").iterdir()) == ["plan.parquet", "results"]
    results = pd.read_csv(run_dir / "results.csv")
    assert len(results) == 4 and results.calls.gt(0).all()
    assert store.load_table(run_dir, "calls").empty


def test_sharded_then_merged_equals_unsharded(tmp_path, capsys):
    whole = _run(tmp_path, "whole", "--executor", "local")
    shards = [_run(tmp_path, f"s{i}", "--executor", "local", "--shard", f"{i}/2") for i in range(2)]
    counts = [len(pd.read_csv(s / "results.csv")) if (s / "results.csv").stat().st_size > 1 else 0 for s in shards]
    assert sum(counts) == 4
    assert main(["merge", *map(str, shards), "--out", str(tmp_path / "merged")]) == 0
    for name in ("results.csv", "calls.csv", "events.jsonl", "probes.csv"):
        assert (whole / name).read_bytes() == (tmp_path / "merged" / name).read_bytes(), name


def test_shard_split_is_a_partition():
    shas = [sources.trace_hash(t) for t in sources.stream(["synthetic:short"], seeds=6)]
    for n in (2, 3):
        owners = [[i for i in range(n) if sources.in_shard(h, (i, n))] for h in shas]
        assert all(len(o) == 1 for o in owners)
    with pytest.raises(ValueError, match="0 <= i < N"):
        sources.parse_shard("2/2")


def test_interleave_alternates_long_and_short_and_keeps_positions():
    traces = list(sources.stream(["synthetic:short", "synthetic:long"], seeds=2))
    out = list(sources.interleave(enumerate(traces), window=4))
    assert sorted(p for p, _ in out) == [0, 1, 2, 3]
    sizes = [len(t.messages) for _, t in out]
    assert sizes[0] == max(sizes) and sizes[1] == min(sizes)


def test_budget_stops_before_the_cap():
    budget = Budget(RunConfig(summarizer="anthropic", max_cost=1.0))
    assert budget.allows(1)
    budget.finished(TaskOutput("k", {"cost": 2.0, "summarizer_cost_share": 0.2}))  # $0.40 of API calls
    assert budget.allows(1)  # 0.40 + 0.40 × 1
    assert not budget.allows(1)  # 0.40 + 0.40 × 2 in flight > 1.00
    assert "stopped after $0.40" in budget.stopped
    assert Budget(RunConfig(max_cost=0.0)).allows(5)  # offline: nothing is spent


def test_plan_counts_tasks_and_estimates(tmp_path, capsys):
    assert main(["plan", *SMALL, "--sample", "1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "4 tasks: 2 traces" in out and "estimated time" in out and "estimated output" in out
    assert not any(tmp_path.iterdir())


def _slow(job, seconds, started):
    key = job.tasks[0][0]
    Path(started, key).touch()  # the test waits for the slow task to really run, not just be queued
    time.sleep(seconds[key])
    return [TaskOutput(key, {"error": ""})]


def test_a_second_ctrl_c_keeps_the_finished_tasks(tmp_path):
    """Interrupted while waiting for a slow task, the executor still hands over the fast one."""
    pool = executors.ProcessExecutor(_slow, ({"fast": 0.0, "slow": 30.0}, str(tmp_path)), workers=2)
    saved = []
    # Ctrl-C must raise here as it does in a terminal, whatever handler an earlier test left
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        jobs = [executors.Job(None, None, ((k, None),)) for k in ("slow", "fast")]
        for job in jobs:
            pool.pending.add(pool.pool.submit(pool.fn, job, *pool.args))
        deadline = time.time() + 60  # spawned workers start slowly on a loaded machine
        while time.time() < deadline and not (
                (tmp_path / "slow").exists() and any(f.done() for f in pool.pending)):
            time.sleep(0.05)
        assert (tmp_path / "slow").exists(), "the slow task never started (workers did not come up in 60 s)"
        assert [f.exception() for f in pool.pending if f.done()] == [None], "the fast task failed"
        timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            pool.interrupt(lambda outs: saved.extend(o.key for o in outs))
    finally:
        signal.signal(signal.SIGINT, handler)
        pool.kill()
    assert saved == ["fast"]


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "bench.cli.main", *args]


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


BUSY = ("--traces", "synthetic:long", "--seeds", "12", "--strategies", "none", "opencode", "codex", "amp",
        "--workers", "2", "--quiet", "--no-report")
BUSY_TASKS = 48
"""Long enough that an interrupt lands mid-run however fast the replay gets (24 tasks finished in
under 2 s once the replay got faster)."""


@pytest.mark.slow
def test_interrupted_twice_then_resumed_equals_an_uninterrupted_run(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(_cli("run", *BUSY, "--name", "i", "--out", str(tmp_path)), cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while len(_children(proc.pid)) < 2 and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(1.5)  # the workers have finished a few of the tasks (the whole run takes ~8 s idle)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    # 130 when the second Ctrl-C lands while the first is being handled; when it lands after, while
    # the process is already on its way out, Python dies of the signal itself (-2, 130 in a shell)
    assert proc.wait(60) in (130, -signal.SIGINT), proc.stderr.read()
    assert "finished tasks are saved" in proc.stderr.read()
    kept = store.Store(tmp_path / "i").done()
    resumed = subprocess.run(_cli("run", *BUSY, "--name", "i", "--out", str(tmp_path)), cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert len(kept) < BUSY_TASKS  # interrupted mid-run
    assert f"{BUSY_TASKS} tasks ({len(kept)} resumed)" in resumed.stdout
    whole = run(RunConfig(traces=("synthetic:long",), seeds=12, strategies=("none", "opencode", "codex", "amp"),
                          executor="local", name="w", out=str(tmp_path)), progress=False)
    assert (whole.run_dir / "results.csv").read_bytes() == (tmp_path / "i" / "results.csv").read_bytes()
    assert (whole.run_dir / "calls.csv").read_bytes() == (tmp_path / "i" / "calls.csv").read_bytes()


@pytest.mark.slow
def test_sigkill_of_the_main_process_leaves_no_worker(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(_cli("run", *BUSY, "--name", "k", "--out", str(tmp_path)), cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    children: list[int] = []
    while len(children) < 2 and time.time() < deadline:
        children = _children(proc.pid)
        time.sleep(0.1)
    assert len(children) >= 2, "the pool never started"
    time.sleep(1)
    children = _children(proc.pid)
    proc.kill()
    proc.wait()
    deadline = time.time() + 8
    while any(map(_alive, children)) and time.time() < deadline:
        time.sleep(0.2)
    assert not [c for c in children if _alive(c)]


def test_the_report_reads_the_parquet_store_when_no_csv_was_written(tmp_path):
    import reports

    exported = reports.load(_run(tmp_path, "c", "--executor", "local"))
    stored = reports.load(_run(tmp_path, "n", "--executor", "local", "--csv", "no"))
    assert not (tmp_path / "n" / "calls.csv").exists()
    pd.testing.assert_frame_equal(exported.calls.per_task, stored.calls.per_task, check_dtype=False)
    assert stored.events.rows == exported.events.rows and stored.probes.rows == exported.probes.rows > 0
    pd.testing.assert_frame_equal(stored.events.kinds, exported.events.kinds, check_dtype=False)
    def cells(c: pd.DataFrame) -> pd.DataFrame:  # the same cells, whatever order the batches came in
        c = c.astype(str)
        return c.sort_values(list(c.columns)).reset_index(drop=True)

    pd.testing.assert_frame_equal(cells(stored.probes.counts), cells(exported.probes.counts))


def _pandas_scores(rows: list[dict]) -> dict:
    """The per-task scores as bench.scoring.probes computes them for many tasks (the reference)."""
    import math

    from bench.scoring.probes import RULE_KINDS, cliff_rounds, false_positive_rate, retention, rule_retention

    frame = pd.DataFrame(rows)
    rules = rule_retention(frame) if "strategy" in frame else rule_retention(pd.DataFrame())
    ret, fpr, cliff = retention(frame), false_positive_rate(frame), cliff_rounds(frame)
    first = cliff.cliff_round.iloc[0] if len(cliff) else pd.NA
    after = frame[(frame.moment == "compaction") & (frame.needle_kind != "control")]
    after = after[after["round"].notna() & after.retained.notna()]
    constraints = after[after.needle_kind == "constraint"]
    return {"retention": float(ret.retention.iloc[0]) if len(ret) else math.nan,
            "compaction_retention": float(after.retained.astype(bool).mean()) if len(after) else math.nan,
            "constraint_retention": (float(constraints.retained.astype(bool).mean()) if len(constraints)
                                     else math.nan),
            "false_positive_rate": float(fpr.false_positive_rate.iloc[0]) if len(fpr) else math.nan,
            "cliff_round": None if first is pd.NA else int(first),
            **{col: float(rules[rules.kind == kind].retention.iloc[0]) if (rules.kind == kind).any() else math.nan
               for kind, col in RULE_KINDS.items()}}


def _same(a: dict, b: dict) -> bool:
    import math

    return all((isinstance(a[k], float) and isinstance(b[k], float) and math.isnan(a[k]) and math.isnan(b[k]))
               or a[k] == b[k] for k in a) and a.keys() == b.keys()


def test_one_pass_probe_scores_equal_the_pandas_ones():
    """bench.scoring.probes.probe_scores (the worker's fast path) gives bench.scoring.probes' floats on real
    replays and edge cases."""
    import math

    import strategies
    from bench.replay.provider import shipped_counts
    from bench.run.runner import run_task, shared_counter
    from bench.scoring.probes import probe_scores
    from bench.tokens.counter import TokenCounter
    from traces.synthetic import generate

    config = RunConfig(strategies=("none", "opencode", "codex", "observation-masking"))
    checked = 0
    for scenario in ("short", "reads"):
        trace = generate(scenario, seed=3)
        counts = shipped_counts(trace, TokenCounter(), model=config.model, truth=config.truth)
        counter = shared_counter(trace, counts)
        for spec in map(strategies.parse_spec, config.strategies):
            rows = run_task(trace, counter, spec, config).probes
            assert rows, (scenario, spec.label)
            fast, slow = probe_scores(rows), _pandas_scores(rows)
            assert _same(fast, slow), (scenario, spec.label, fast, slow)
            checked += any(r["moment"] == "compaction" for r in rows)
    assert checked  # some replay compacted, so the cliff path ran on real rows
    row = {"strategy": "s", "trace": "t", "needle": "n", "planted": 0}
    cases = [
        [{**row, "moment": "end", "needle_kind": "fact", "cls": "stale", "retained": False, "round": 0}],
        [{**row, "moment": "end", "needle_kind": "control", "cls": "false-positive", "retained": False, "round": 0},
         {**row, "moment": "end", "needle_kind": "control", "cls": "absent", "retained": False, "round": 0},
         {**row, "moment": "end", "needle_kind": "control", "cls": "absent", "retained": False, "round": 0}],
        [{**row, "moment": "compaction", "needle_kind": "fact", "cls": c, "retained": c == "retained-verbatim",
          "round": r} for r, c in ((2, "retained-verbatim"), (1, "missing"), (1, "retained-verbatim"),
                                   (2, "stale"), (3, "missing"))]
        + [{**row, "moment": "end", "needle_kind": "fact", "cls": "retained-verbatim", "retained": True, "round": 0}],
    ]
    for rows in cases:
        assert _same(probe_scores(rows), _pandas_scores(rows)), rows
    assert probe_scores(cases[2])["cliff_round"] == 3 and probe_scores(cases[1])["false_positive_rate"] == 1 / 3
    assert probe_scores(cases[2])["compaction_retention"] == 2 / 5  # pooled over rounds, not a mean of rounds
    assert math.isnan(probe_scores(cases[0])["compaction_retention"])  # never compacted


# `make perf-scale` (bench.cli.perf_scale): the tool's plumbing at tiny N.

def test_perf_scale_bins_weigh_each_agent_alike():
    from bench.cli import perf_scale as ps

    # 90 one-call Aider chats of 1,000 chars beside 10 long Claude Code sessions of 500K chars
    lengths = [("aider", 1, 1_000)] * 90 + [("claude-code", 200, 500_000)] * 10
    by_session = ps.bins(lengths, k=10, weight="session")
    by_agent = ps.bins(lengths, k=10, weight="agent")
    assert sum(b.chars == 500_000 for b in by_session) == 1  # one bin in ten: 10 % of the sessions
    assert sum(b.chars == 500_000 for b in by_agent) == 5  # half the weight: one agent of two
    assert [b.calls for b in by_agent] == [1] * 5 + [200] * 5
    with pytest.raises(ValueError, match="cannot fill 10"):
        ps.bins(lengths[:3], k=10)


def test_perf_scale_sources_are_distinct_resolvable_and_sized_by_the_bin():
    from bench.cli import perf_scale as ps
    from traces.scenarios import resolve

    srcs = ps.sources((ps.Bin(1, 100), ps.Bin(1, 200), ps.Bin(300, 900_000)))
    assert len(set(srcs)) == 3  # two bins below the floor still make two sources (one token apart)
    specs = [resolve(s.removeprefix("synthetic:")) for s in srcs]
    assert [s.tokens for s in specs] == [ps.MIN_TOKENS, ps.MIN_TOKENS + 1, 250_000]
    assert specs[2].turns == 10 and specs[0].turns == 1
    assert ps.distribution(None) == (ps.FALLBACK_BINS, ps.distribution(None)[1])
    assert len(ps.FALLBACK_BINS) == ps.BINS


def test_perf_scale_derives_the_bins_from_the_real_traces(shared_traces):
    from bench.cli import perf_scale as ps

    dist, origin = ps.distribution(shared_traces)
    assert len(dist) == ps.BINS and "weighted per agent" in origin
    assert [b.chars for b in dist] == sorted(b.chars for b in dist)


def test_perf_scale_extrapolation_and_estimate_arithmetic():
    from bench.cli import perf_scale as ps

    r = {"executor": "process", "cpu_s_per_task": 0.36, "main_cpu_s_per_task": 0.0036, "traces": 100,
         "seconds": 60.0, "load_mean": 2.0}
    lines = ps.extrapolate(r, 10_000, 40, (1, 10), cores=2)
    assert "400,000 tasks" in lines[0]
    assert "20.00 h /   20.00 h" in lines[1]  # 400,000 × 0.36 s / 2 cores
    assert "2.00 h /    2.00 h" in lines[2]  # ten machines (the main process's floor is 0.40 h)
    assert "0.02 h /    0.40 h" in ps.extrapolate(r, 10_000, 40, (1000,), cores=2)[1]  # one main: its floor
    assert "under 0.40 h" in lines[3]  # the main process's own CPU
    assert "about 100 min" in ps.estimate(r, 10_000)  # 100 × 60 s


def test_perf_scale_measures_a_tiny_process_pool_run(tmp_path):
    """One 2K-token session × 8 strategies on 2 pool workers: the figures come from the run's tree."""
    from bench.cli import perf_scale as ps

    src = ["synthetic:" + ps.Bin(1, 100).scenario]
    r = ps.measure(1, "process", 2, tmp_path, src, interval=0.05)
    assert r["traces"] == 1 and r["tasks"] == len(ps.STRATEGIES) == 8
    assert r["main_mb"] > 30 and r["workers"] >= 1 and r["worker_mb"] > 30
    assert r["workers_mb"] >= r["worker_mb"] and r["output_mb"] > 0 and r["cpu_s_per_task"] > 0
    assert len(pd.read_parquet(tmp_path / "scale-process-1" / "data" / "results")) == 8
    assert "tasks/s" in ps.HEADER and ps.row(r).startswith("process")
    cut = ps.measure(1, "process", 2, tmp_path, src, interval=0.05, max_seconds=0.01)
    assert cut["executor"] == "process (partial)" and cut["tasks"] <= 8  # stopped at once, measured anyway
