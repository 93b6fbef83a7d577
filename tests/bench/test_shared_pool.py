"""One process pool per command (bench.run.executors.shared_pools): started once for a run and its
robustness replays, and a worker that served one run's jobs serves the next run's with that run's own
prices (issue 28)."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pandas as pd

from bench.cost import pricing
from bench.run import executors, runner
from bench.run.runner import RunConfig

SMALL = '[models."claude-sonnet-4-5"]\ncontext_window = 20000\noutput = 150.0\n'
"""A --prices file that shrinks the synthetic traces' model (DEFAULT_MODEL) and makes its output dearer."""


def _config(tmp_path, name: str, **changes) -> RunConfig:
    return RunConfig(traces=("synthetic:tiny",), seeds=4, strategies=("none", "observation-masking"),
                     out=str(tmp_path), name=name, csv="no", detail="summary", workers=2, **changes)


def _rows(config: RunConfig, executor: executors.ProcessExecutor | executors.LocalExecutor) -> pd.DataFrame:
    """Every task's row of ``config`` as ``executor`` computes it, in task order."""
    specs = runner.strategy_specs(config)
    traces = enumerate(runner.load_traces(config).traces)
    jobs = runner.plan_jobs(config, specs, traces, set(), runner.Planned())
    rows = [out.row for batch in executor.results(jobs) for out in batch]
    executor.close()
    return pd.DataFrame(rows).sort_values(["trace", "strategy"]).reset_index(drop=True)


def _windows(run_dir) -> set[int]:
    """The windows a run's stored rows were replayed with (results.csv leaves them out)."""
    from bench.run import store

    return set(store.read_parts(store._parts(run_dir / "data", "results"), ["window"]).to_pandas().window)


def _restoring_prices():
    saved = dict(pricing._EXTRA)

    def restore() -> None:
        pricing._EXTRA.clear()
        pricing._EXTRA.update(saved)
        pricing.changed()
    return restore


def test_a_worker_carries_no_run_s_prices_into_the_next_run_s_jobs(tmp_path):
    """One worker, two runs: the first priced with an extra file, the second without; the second's rows
    are a fresh process's (without use_prices in run_job, its window would be the file's 20,000)."""
    small = tmp_path / "small.toml"
    small.write_text(SMALL, encoding="utf-8")
    priced, plain = _config(tmp_path, "a", prices=(str(small),)), _config(tmp_path, "b")
    fresh = _rows(plain, executors.LocalExecutor(runner.run_job, (plain, None)))
    started = executors.STARTED[0]
    with executors.shared_pools() as pools:
        first = _rows(priced, executors.ProcessExecutor(runner.run_job, (priced, None), 1, pools))
        second = _rows(plain, executors.ProcessExecutor(runner.run_job, (plain, None), 1, pools))
        again = _rows(priced, executors.ProcessExecutor(runner.run_job, (priced, None), 1, pools))
    assert executors.STARTED[0] - started == 1  # one worker served all three runs
    assert set(first.window) == {20_000} and set(again.window) == {20_000}  # the file reached the worker
    assert set(fresh.window) == {200_000}
    assert second.equals(fresh)
    assert not first.cost.equals(fresh.cost)


def test_two_runs_sharing_the_pool_equal_fresh_runs(tmp_path):
    """run() twice in one process and one pool of two workers, as robustness does (its --prices added to
    the parent's table and restored after); the second run's table is the one a fresh run gives."""
    small = tmp_path / "small.toml"
    small.write_text(SMALL, encoding="utf-8")
    fresh = runner.run(replace(_config(tmp_path, "fresh"), executor="local"), progress=False).table
    started = executors.STARTED[0]
    restore = _restoring_prices()
    with executors.shared_pools():
        try:
            first = runner.run(_config(tmp_path, "a", prices=(str(small),)), progress=False).table
        finally:
            restore()
        second = runner.run(_config(tmp_path, "b"), progress=False).table
    assert executors.STARTED[0] - started == 1
    assert _windows(tmp_path / "a") == {20_000} and not first.cost.equals(fresh.cost)
    assert _windows(tmp_path / "b") == {200_000}
    assert second.equals(fresh)


def test_a_command_that_replays_robustness_starts_one_pool(tmp_path, monkeypatch, capsys):
    """``compaction-bench run`` with its window and cache-TTL replays on the pool (not in this process):
    one pool start for the three sweeps, each replay with its own prices, no worker left after."""
    from bench.cli.main import main
    from bench.run import robustness

    monkeypatch.setattr(robustness, "SMALL_REPLAY", 0)  # the replays are small: make them use the pool
    pids: list[int] = []
    real = executors.Pools.get

    def get(self, workers):
        pool = real(self, workers)
        pids.extend(p.pid for p in (getattr(pool, "_processes", None) or {}).values())
        return pool

    monkeypatch.setattr(executors.Pools, "get", get)
    started = executors.STARTED[0]
    args = ["run", "--traces", "synthetic:tiny", "--seeds", "3", "--strategies", "none", "observation-masking",
            "--workers", "2", "--no-report", "--quiet", "--out", str(tmp_path), "--name", "r"]
    assert main(args) == 0
    assert executors.STARTED[0] - started == 1
    replays = tmp_path / "r" / "robustness"
    for name, window in (("ttl-1h", 200_000), ("window-1m", 1_000_000)):
        info = json.loads((replays / name / "run.json").read_text(encoding="utf-8"))
        assert info["config"]["executor"] == "process" and info["config"]["workers"] == 2
        assert _windows(replays / name) == {window}, name
    assert pids and not [pid for pid in set(pids) if _alive(pid)]  # the pool was ended with the command


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_killed_or_broken_shared_pool_is_replaced():
    """After a second Ctrl-C (kill) the next run gets a new pool, not the dead one."""
    with executors.shared_pools() as pools:
        ex = executors.ProcessExecutor(_square, (), 2, pools)
        assert list(ex.results([executors.Job(None, None, ((3, None),))])) == [[9]]
        ex.kill()
        ex.close()
        again = executors.ProcessExecutor(_square, (), 2, pools)
        assert again.pool is not ex.pool
        assert list(again.results([executors.Job(None, None, ((4, None),))])) == [[16]]
        again.close()
        assert executors.ProcessExecutor(_square, (), 2, pools).pool is again.pool  # shared while it lives


def _square(job: executors.Job) -> list[int]:
    return [job.tasks[0][0] ** 2]


def test_a_prices_change_forgets_the_profiles_a_replay_remembers(tmp_path):
    """bench.replay.loop.recorded_profile memoizes profiles: a --prices change (add_prices, use_prices, the
    restore after a robustness replay) must reach it, or a worker or a --workers 1 run keeps the old window."""
    from bench.replay.loop import recorded_profile

    small = tmp_path / "small.toml"
    small.write_text(SMALL, encoding="utf-8")
    restore = _restoring_prices()
    try:
        pricing.use_prices(())
        assert recorded_profile("claude-sonnet-4-5").context_window == 200_000
        pricing.add_prices(str(small))
        assert recorded_profile("claude-sonnet-4-5").context_window == 20_000
        pricing.use_prices((str(small),))  # unchanged: nothing re-read or forgotten
        assert recorded_profile("claude-sonnet-4-5").context_window == 20_000
        pricing.use_prices(())
        assert recorded_profile("claude-sonnet-4-5").context_window == 200_000 and not pricing._EXTRA
    finally:
        restore()
