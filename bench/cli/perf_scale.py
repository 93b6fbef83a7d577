"""`make perf-scale`: a big synthetic run, to show memory stays bounded as the trace count grows.

Runs ``compaction-bench run`` in a child process on N synthetic traces (``synthetic:short`` and
``synthetic:reads``, N/2 seeds each) × 4 strategies with ``--detail calls`` and no CSV export or
report, and reports for each N: the main process's peak resident memory (VmHWM, polled from
/proc), wall time, tasks per second and the size of out/<run>/ per trace. Not a timed test: a
benchmark, whose figures go in the README with the machine's load. CPU ms per task (the run and its
workers, user + system) is the figure a busy machine changes least: tasks/s on an idle machine with
W cores is about W × 1000 / that.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STRATEGIES = ("none", "opencode", "codex", "observation-masking")


def _hwm_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def measure(traces: int, workers: int, out: Path, executor: str = "process") -> dict[str, float]:
    seeds = max(1, traces // 2)
    cmd = [sys.executable, "-m", "bench.cli.main", "run", "--traces", "synthetic:short", "synthetic:reads",
           "--seeds", str(seeds), "--strategies", *STRATEGIES, "--detail", "calls", "--csv", "no",
           "--workers", str(workers), "--executor", executor, "--name", f"scale{traces}", "--out", str(out),
           "--quiet", "--no-report"]
    start, cpu_before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _hwm_kb(proc.pid))
        time.sleep(0.5)
    seconds = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the run and its pool's workers (all reaped)
    cpu = usage.ru_utime + usage.ru_stime - cpu_before.ru_utime - cpu_before.ru_stime
    if proc.returncode:
        raise SystemExit(f"run failed ({proc.returncode}): {proc.stderr.read()[-2000:]}")
    run_dir = out / f"scale{traces}"
    size = sum(p.stat().st_size for p in run_dir.rglob("*") if p.is_file())
    files = sum(1 for p in run_dir.rglob("*") if p.is_file())
    tasks = 2 * seeds * len(STRATEGIES)
    return {"traces": 2 * seeds, "tasks": tasks, "seconds": seconds, "tasks_per_s": tasks / seconds,
            "peak_mb": peak / 1024, "bytes_per_trace": size / (2 * seeds), "files": files,
            "cpu_ms_per_task": cpu / tasks * 1000, "load": os.getloadavg()[0]}


def aggregation(traces: int, strategies: int, out: Path) -> dict[str, float]:
    """Seconds to aggregate ``traces × strategies`` stored task rows (synthetic rows, real code path):
    read the results parts, order them by the plan, add the paired columns (bench.scoring.metrics.finish_table)."""
    import numpy as np
    import pandas as pd

    from bench.replay.records import CallRecord, TaskResult
    from bench.run.runner import aggregate
    from bench.run.store import Store, TaskOutput, write_plan
    from bench.scoring.metrics import task_row

    call = CallRecord("t", "s", 0, "agent", 10, 1000, 1000, 0, 1000, 0, 100, 0.01, 0.01, False, False, 0.0)
    template = task_row(TaskResult("t", "s", calls=[call] * 50))
    rng = np.random.default_rng(0)
    run_dir = out / "aggregate"
    st = Store(run_dir, batch_tasks=4096)
    keys, tpos, spos, ids, labels = [], [], [], [], []
    for ti in range(traces):
        for si in range(strategies):
            key = f"{ti:08d}{si:04d}"
            row = {**template, "trace": f"trace{ti}", "strategy": "none" if si == 0 else f"s{si}",
                   "input_tokens": int(rng.integers(1e5, 1e7)), "cost": float(rng.random() * 10)}
            st.add(TaskOutput(key, row))
            keys.append(key), tpos.append(ti), spos.append(si), ids.append(row["trace"]), labels.append(row["strategy"])
    st.flush()
    plan = pd.DataFrame({"key": keys, "trace": ids, "strategy": labels, "tpos": tpos, "spos": spos})
    write_plan(run_dir, plan)
    start = time.perf_counter()
    table = aggregate(run_dir)
    seconds = time.perf_counter() - start
    assert len(table) == traces * strategies
    return {"tasks": len(table), "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.cli.perf_scale", description=__doc__)
    p.add_argument("--traces", type=int, nargs="+", default=[1_000, 10_000])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--aggregate", type=int, nargs=2, default=None, metavar=("TRACES", "STRATEGIES"),
                   help="only time the aggregation of this many stored task rows (e.g. 10000 30)")
    p.add_argument("--keep", default=None, help="keep the runs in this folder (default: a scratch folder)")
    args = p.parse_args(argv)
    out = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="perf-scale-"))
    try:
        load = os.getloadavg()[0]
        if args.aggregate:
            r = aggregation(*args.aggregate, out)
            print(f"aggregated {r['tasks']:,} task rows in {r['seconds']:.1f} s "
                  f"({r['seconds'] / r['tasks'] * 1000:.2f} s per 1,000 tasks); load average {load:.1f}")
            return 0
        print(f"{len(STRATEGIES)} strategies, --detail calls, {args.workers} workers; load average {load:.1f}")
        print(f"{'traces':>7} {'tasks':>7} {'wall s':>8} {'tasks/s':>8} {'peak MB':>8} {'KB/trace':>9} {'files':>6} "
              f"{'CPU ms/task':>11} {'load':>5}")
        for n in args.traces:
            r = measure(n, args.workers, out)
            print(f"{r['traces']:>7,} {r['tasks']:>7,} {r['seconds']:>8.0f} {r['tasks_per_s']:>8.1f} "
                  f"{r['peak_mb']:>8.0f} {r['bytes_per_trace'] / 1024:>9.1f} {r['files']:>6} "
                  f"{r['cpu_ms_per_task']:>11.0f} {r['load']:>5.1f}", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
