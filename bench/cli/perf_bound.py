"""``python -m bench.cli.perf --bound``: the least the bench could cost with the replays it runs today.

Issue 28 asks for ``make bench`` at 6x the floor (tokenizing its corpus once). This measures how far
the rest of a run alone already is from it, so that the target is read against what a run must do:

1. A bench like ``make perf``'s (all strategies, ``--workers 1``, no report) in a child process, with
   the CPU of every task's replay taken around ``bench.run.runner.run_task`` (the strategy's hooks, the
   loop, the probes and the open-loop twin; the robustness replays' tasks too) and the agent calls those
   replays made counted; what is left of the child's CPU is the rest of the run: imports, reading and
   counting the traces, each task's metrics row, the verdicts, the store and the exports.
2. ``none`` replayed over the same corpus in this process (each trace's counts and shared state warm,
   least of three): it only sends (the provider view, the cache split, the call's record), which every
   strategy's call also does.
3. The bound: the rest of the run plus every replayed call at ``none``'s cost, over the floor. A
   strategy cannot cost less a call than sending it does, so no work on the strategies' hooks, the
   probes or the twins alone brings the bench under this figure.
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

MARK = "perf-bound: "
"""Prefix of the child's one line of figures on its stdout."""


def _child(out: str, seeds: int) -> None:
    """Run the bench here with the replays timed; print the figures as one JSON line."""
    import bench.run.runner as runner
    from bench.cli.main import main

    spent = {"replays": 0.0, "tasks": 0, "calls": 0}
    inner = runner.run_task

    def run_task(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            result = inner(*args, **kwargs)
        finally:
            spent["replays"] += time.process_time() - start
        spent["tasks"] += 1
        spent["calls"] += len(result.calls)
        return result

    runner.run_task = run_task  # type: ignore[assignment]
    try:
        main(["run", "--name", "perf", "--out", out, "--seeds", str(seeds), "--no-report", "--workers", "1", "--quiet"])
    except SystemExit as e:
        if e.code not in (0, None):
            raise
    usage = resource.getrusage(resource.RUSAGE_SELF)
    spent["total"] = usage.ru_utime + usage.ru_stime
    print(MARK + json.dumps(spent))


def _none_per_call(traces: list[Any]) -> tuple[float, int]:
    """CPU seconds a call of ``none`` takes over the bench corpus and its calls: each trace replayed as
    ``run_task`` replays it under the bench's defaults, once untimed (the trace's counts and the state its
    replays share, kept for one trace at a time, are built) and then three times, the least kept."""
    import strategies
    from bench.cost.pricing import profile_for
    from bench.replay.loop import ReplayConfig, replay
    from bench.run.runner import RECORDED, RunConfig, long_lived_frozen
    from bench.tokens.counter import TokenCounter

    run = RunConfig()
    used, calls = 0.0, 0
    for trace in traces:
        config = ReplayConfig(profile_for(run.model, trace.model), None, run.seconds_per_call, run.cache_ttl,
                              recorded_models=run.model == RECORDED, open_loop=run.open_loop)
        counter = TokenCounter()
        counter.counts(trace.messages)
        replay(trace, strategies.build("none"), config, counter=counter)  # shared state built, untimed
        least = float("inf")
        for _ in range(3):
            with long_lived_frozen():
                start = time.process_time()
                done = replay(trace, strategies.build("none"), config, counter=counter)
                least = min(least, time.process_time() - start)
        used += least
        calls += len(done.calls)
    return used / max(calls, 1), calls


def bound(floor: float, traces: list[Any], seeds: int, child: Callable[[list[str]], tuple[float, float, Any]]) -> None:
    """Print the bound against ``floor``, the CPU seconds of tokenizing ``traces`` (the bench corpus of ``seeds``)
    once; ``child`` runs a command and returns (CPU, wall, the finished process), as bench.cli.perf._child does."""
    with tempfile.TemporaryDirectory(prefix="perf-bound-") as out:
        _, _, done = child([sys.executable, "-m", "bench.cli.perf_bound", "--child", out, str(seeds)])
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    if done.returncode != 0 or not lines:
        print(f"   bound: the bench failed (exit {done.returncode}): {done.stderr.strip()[-300:]}")
        return
    spent = json.loads(lines[-1][len(MARK):])
    per_call, none_calls = _none_per_call(traces)
    rest = spent["total"] - spent["replays"]
    least = rest + spent["calls"] * per_call
    print(f"   bound: the bench in one process ({spent['total']:.1f} s CPU): the replays of its {spent['tasks']:,} "
          f"tasks (robustness's included) {spent['replays']:.1f} s for {spent['calls']:,} agent calls; the rest of "
          f"the run (imports, reading and counting the traces, task rows, verdicts, store, exports) "
          f"{rest:.2f} s = {rest / floor:.1f}x the floor")
    print(f"   `none` sends a call in {per_call * 1e6:.0f} us ({none_calls:,} calls over the corpus, counts warm, "
          f"least of 3): with every replayed call at that cost and the rest as it is, the bench would take "
          f"{least:.2f} s = {least / floor:.1f}x the floor (target 6x)")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        _child(sys.argv[2], int(sys.argv[3]))
    else:
        print("usage: python -m bench.cli.perf --bound (this module's --child OUT SEEDS is its measured run)",
              file=sys.stderr)
        raise SystemExit(2)
