"""`make perf-scale`: a run of real-size sessions × 8 strategies, on the process pool and on a local Ray
instance side by side (issue 28, "Measured at scale").

What it runs. N synthetic sessions whose lengths follow the real sessions of ``../shared/traces``:
the real traces' lengths (agent calls, content characters) are cut into ``BINS`` equal-count bins
(deciles), and each bin becomes one parameterised scenario, ``short@tokens=T,turns=U``, whose size
is the bin's median. Every bin gets the same number of seeds (N / BINS), so the bins are weighted by
the distribution without any per-source seed count. When ``../shared/traces`` is absent the bins come
from ``FALLBACK_BINS`` (derived by ``--derive``, see there). Each session is replayed by ``STRATEGIES``
with ``compaction-bench run --detail calls --csv no --no-report`` in a child process, once per
executor, both in one invocation so the figures are taken side by side under the same load.

What it reports, per executor and N: wall time and tasks per second; CPU seconds per task (the
figure a busy machine changes least: it is polled from /proc for the run and all its descendants);
the peak resident memory (VmHWM) of the main process, of the largest worker, and of all workers
together (for Ray: its ``ray::`` worker processes; Ray's own daemons, raylet and gcs, are counted
apart as "ray daemons"); and the size of the run's folder. ``--estimate`` times a small N first and
predicts the target run's wall time from it, so the user knows before starting.

The extrapolation to ``--extrapolate-strategies`` (40) strategies on M machines is stated, not
measured: CPU seconds per task × tasks / cores, assuming the extra strategies cost what these 8
cost on average, machines like this one with every core a worker, no coordination overhead beyond
what the single main process adds (its own CPU seconds per task bound the throughput however many
machines there are, printed as the ceiling) and a warm synthetic trace cache.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

STRATEGIES = ("none", "claude-code", "codex", "opencode", "gemini-cli", "openhands", "cline-half",
              "observation-masking")
"""Eight representative strategies: the no-compaction baseline, the five CLI agents' summarisers,
Cline's drop-half-the-turns trimmer and tool-output masking."""
EXECUTORS = ("process", "ray")
BINS = 10
"""Length bins (equal counts of real sessions: deciles); N is rounded down to a multiple of this."""
CHARS_PER_TOKEN = 3.6
"""Characters of rendered session content per synthetic token (what traces.synthetic produces on
average), to turn a real session's content characters into the generator's ``tokens`` target."""
MIN_TOKENS = 2_000
"""The generator's smallest reliable size for the ``short`` scenario (its needles need some room)."""
CALLS_PER_TURN = 30
"""Human turns of a bin's scenario: one per this many agent calls (at least 1, at most 16)."""
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "traces"


@dataclass(frozen=True)
class Bin:
    """One length bin: the median agent calls and content characters of the real sessions in it."""

    calls: int
    chars: int

    @property
    def scenario(self) -> str:
        tokens = max(MIN_TOKENS, round(self.chars / CHARS_PER_TOKEN, -2))
        turns = min(16, max(1, round(self.calls / CALLS_PER_TURN)))
        return f"short@tokens={tokens:.0f},turns={turns}"


FALLBACK_BINS = (Bin(1, 280), Bin(1, 6147), Bin(10, 7585), Bin(5, 16474), Bin(10, 42237), Bin(23, 60583),
                 Bin(14, 146834), Bin(46, 228911), Bin(69, 361708), Bin(180, 874828))
"""Decile bins of ../shared/traces (539 sessions of 10 agents, weighted per agent, 2026-11-27), printed by
``python -m bench.cli.perf_scale --derive ../shared/traces``; used when that folder is absent."""


def real_lengths(folder: Path) -> list[tuple[str, int, int]]:
    """(agent, agent calls, rendered content characters) of every session the importers read in
    ``folder`` (lenient: a file they cannot read is passed over, as a run would)."""
    from bench.run.sources import stream
    from traces.model import render

    return [(t.agent, t.n_calls, sum(len(render(m)) for m in t.messages))
            for t in stream([str(folder)], lenient=True)]


def bins(lengths: list[tuple[str, int, int]], k: int = BINS, weight: str = "agent") -> tuple[Bin, ...]:
    """``k`` bins of equal weight of sessions ordered by size (characters), each its weighted median
    calls and chars. ``weight="agent"`` gives every agent the same total weight (../shared/traces holds
    485 short Aider chat sessions beside 54 of nine other agents: weighted per session, the "real size"
    would be Aider's); ``"session"`` weighs every session alike."""
    if len(lengths) < k:
        raise ValueError(f"{len(lengths)} sessions cannot fill {k} length bins")
    per_agent: dict[str, int] = {}
    for agent, _, _ in lengths:
        per_agent[agent] = per_agent.get(agent, 0) + 1
    ordered = sorted(lengths, key=lambda x: (x[2], x[1]))
    weights = [1.0 / per_agent[a] if weight == "agent" else 1.0 for a, _, _ in ordered]
    total = sum(weights)
    members: list[list[tuple[float, int, int]]] = [[] for _ in range(k)]
    acc = 0.0
    for (_, calls, chars), w in zip(ordered, weights, strict=True):
        centre = (acc + w / 2) / total  # the bin holding the middle of this session's weight
        members[min(k - 1, int(centre * k))].append((w, calls, chars))
        acc += w
    return tuple(Bin(_wmedian([(w, c) for w, c, _ in m]), _wmedian([(w, ch) for w, _, ch in m]))
                 for m in members if m)


def _wmedian(pairs: list[tuple[float, int]]) -> int:
    pairs = sorted(pairs, key=lambda p: p[1])
    half, acc = sum(w for w, _ in pairs) / 2, 0.0
    for w, v in pairs:
        acc += w
        if acc >= half:
            return v
    return pairs[-1][1]


def distribution(folder: Path | None, weight: str = "agent") -> tuple[tuple[Bin, ...], str]:
    """The bins and where they came from (the real traces when present, else the stored table)."""
    if folder is not None and folder.is_dir():
        lengths = real_lengths(folder)
        if len(lengths) >= BINS:
            agents = len({a for a, _, _ in lengths})
            return bins(lengths, weight=weight), f"{len(lengths)} sessions of {agents} agents in {folder} " \
                f"(weighted per {weight})"
    return FALLBACK_BINS, "the stored decile table (FALLBACK_BINS; ../shared/traces absent)"


def sources(dist: tuple[Bin, ...]) -> list[str]:
    """One ``synthetic:`` source per bin; bins of equal scenario merge into one source carrying their
    seeds is not possible, so equal scenarios are told apart by one more token (no other effect)."""
    out: list[str] = []
    for b in dist:
        s = b.scenario
        while f"synthetic:{s}" in out:
            name, _, params = s.partition("@")
            tokens, rest = params.split(",", 1)
            s = f"{name}@tokens={int(tokens.split('=')[1]) + 1},{rest}"
        out.append(f"synthetic:{s}")
    return out


def realised(source: str) -> tuple[int, int]:
    """Agent calls and content characters of a synthetic source's seed 0 (what a bin really replays)."""
    from traces.model import render
    from traces.synthetic import generate

    t = generate(source.removeprefix("synthetic:"), seed=0)
    return t.n_calls, sum(len(render(m)) for m in t.messages)


def _status(pid: int) -> dict[str, int] | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    hwm = next((int(line.split()[1]) for line in text.splitlines() if line.startswith("VmHWM:")), 0)
    tick = os.sysconf("SC_CLK_TCK")
    return {"ppid": int(stat[1]), "hwm_kb": hwm, "cpu": (int(stat[11]) + int(stat[12])) / tick}


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def descendants(root: int) -> dict[int, int]:
    """Every live descendant of ``root``: pid -> parent pid."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    found, frontier = {}, [root]
    while frontier:
        p = frontier.pop()
        for child, parent in parents.items():
            if parent == p and child not in found:
                found[child] = parent
                frontier.append(child)
    return found


def role(pid: int, cmdline: str) -> str:
    """``worker`` (a pool process or a Ray task worker), ``ray daemons`` (raylet, gcs, ...) or ``other``."""
    if any(w in cmdline for w in ("spawn_main", "forkserver", "default_worker.py")) or cmdline.startswith("ray::"):
        return "worker"
    if "ray" in cmdline:
        return "ray daemons"
    return "other"


class Poller:
    """Peak memory and CPU of a process tree, polled from /proc (a worker's VmHWM is its own peak, so a
    poll now and then misses nothing of it while it lives; CPU of a process that exits between polls
    is undercounted by at most one interval)."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.seen: dict[int, dict] = {}

    def poll(self) -> None:
        for pid in (self.root, *descendants(self.root)):
            s = _status(pid)
            if s is None:
                continue
            entry = self.seen.get(pid)
            if entry is None:
                cmd = _cmdline(pid)
                entry = self.seen[pid] = {"role": "main" if pid == self.root else role(pid, cmd), "hwm_kb": 0,
                                          "cpu": 0.0}
            if entry["role"] != "main" and entry["role"] != "worker":
                cmd = _cmdline(pid)  # a Ray worker renames itself ray::... once it has started
                entry["role"] = role(pid, cmd) if cmd else entry["role"]
            entry["hwm_kb"] = max(entry["hwm_kb"], s["hwm_kb"])
            entry["cpu"] = max(entry["cpu"], s["cpu"])

    def figures(self) -> dict[str, float]:
        by = lambda r: [e for e in self.seen.values() if e["role"] == r]  # noqa: E731
        main, workers, daemons = by("main"), by("worker"), by("ray daemons")
        return {"main_mb": sum(e["hwm_kb"] for e in main) / 1024,
                "worker_mb": max((e["hwm_kb"] for e in workers), default=0) / 1024,
                "workers_mb": sum(e["hwm_kb"] for e in workers) / 1024, "workers": len(workers),
                "daemons_mb": sum(e["hwm_kb"] for e in daemons) / 1024,
                "main_cpu": sum(e["cpu"] for e in main), "worker_cpu": sum(e["cpu"] for e in workers),
                "other_cpu": sum(e["cpu"] for e in self.seen.values() if e["role"] not in ("main", "worker"))}


def command(srcs: list[str], seeds: int, executor: str, workers: int, out: Path, name: str,
            detail: str = "calls") -> list[str]:
    return [sys.executable, "-m", "bench", "run", "--traces", *srcs, "--seeds", str(seeds),
            "--strategies", *STRATEGIES, "--detail", detail, "--csv", "no", "--workers", str(workers),
            "--executor", executor, "--name", name, "--out", str(out), "--quiet", "--no-report",
            "--robustness", "off"]


def done_tasks(run_dir: Path, counted: dict[str, int]) -> int:
    """Tasks stored so far (rows of the finished results batches; ``counted`` remembers each batch's)."""
    import pyarrow.parquet as pq

    for part in (run_dir / "data" / "results").glob("part-*.parquet"):
        if part.name not in counted:
            try:
                counted[part.name] = pq.ParquetFile(part).metadata.num_rows
            except Exception:  # noqa: BLE001 - a batch still being written is counted at the next look
                pass
    return sum(counted.values())


def measure(traces: int, executor: str, workers: int, out: Path, srcs: list[str], *, detail: str = "calls",
            interval: float = 0.5, report: float = 0.0, max_seconds: float = 0.0) -> dict[str, float]:
    """One run of ``traces`` sessions (rounded down to a multiple of the bins) × STRATEGIES, in a child.
    With ``report`` > 0, a progress line every ``report`` seconds (tasks stored, rate, memory so far), so
    a run cut short still leaves its rate and memory at the size it reached. With ``max_seconds`` > 0 the
    run is interrupted (Ctrl-C: it saves its finished tasks) after that long and measured as far as it got
    (``partial``). The bins run in order, smallest first, so a partial run's tasks/s overstates a whole
    run's and its CPU s/task understates it."""
    seeds = max(1, traces // len(srcs))
    name = f"scale-{executor}-{seeds * len(srcs)}"
    shutil.rmtree(out / name, ignore_errors=True)  # a measurement never resumes
    load = os.getloadavg()[0]
    start = time.perf_counter()
    err = out / f"{name}.stderr"
    with err.open("w") as fh:
        proc = subprocess.Popen(command(srcs, seeds, executor, workers, out, name, detail),
                                stdout=subprocess.DEVNULL, stderr=fh)
    poller, loads = Poller(proc.pid), [load]
    counted: dict[str, int] = {}
    next_report = start + report
    tasks = seeds * len(srcs) * len(STRATEGIES)
    partial = False
    while proc.poll() is None:
        poller.poll()
        loads.append(os.getloadavg()[0])
        now = time.perf_counter()
        if report and now >= next_report:
            next_report = now + report
            done, f = done_tasks(out / name, counted), poller.figures()
            cpu = (f["main_cpu"] + f["worker_cpu"]) / max(done, 1)
            print(f"  .. {executor} {now - start:6.0f} s: {done:,}/{tasks:,} tasks stored "
                  f"({done / (now - start):.1f}/s), CPU {cpu:.3f} s/task, main {f['main_mb']:.0f} MB, worker "
                  f"{f['worker_mb']:.0f} MB, workers {f['workers_mb']:.0f} MB, daemons {f['daemons_mb']:.0f} MB, "
                  f"load {loads[-1]:.1f}", flush=True)
        if max_seconds and now - start > max_seconds and not partial:
            partial = True
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                proc.kill()
            break
        time.sleep(interval)
    seconds = time.perf_counter() - start
    proc.wait()
    if partial:
        tasks = done_tasks(out / name, counted)
    elif proc.returncode:
        raise SystemExit(f"{executor} run failed ({proc.returncode}): {err.read_text()[-2000:]}")
    run_dir = out / name
    size = sum(p.stat().st_size for p in run_dir.rglob("*") if p.is_file())
    n = tasks // len(STRATEGIES) if partial else seeds * len(srcs)
    f = poller.figures()
    cpu = f["main_cpu"] + f["worker_cpu"]
    tasks = max(tasks, 1)
    return {"executor": executor + (" (partial)" if partial else ""), "traces": n, "tasks": tasks,
            "seconds": seconds, "tasks_per_s": tasks / seconds,
            **f, "cpu_s_per_task": cpu / tasks, "main_cpu_s_per_task": f["main_cpu"] / tasks,
            "output_mb": size / 2**20, "kb_per_task": size / tasks / 1024,
            "load_start": load, "load_mean": statistics.fmean(loads)}


def warm(srcs: list[str], seeds: int) -> float:
    """Generate (and keep in the trace cache) every session the runs will read: seconds taken. Both
    executors then read the same kept sessions, so neither pays the generation the other skipped."""
    from bench.run.sources import stream

    start = time.perf_counter()
    for _ in stream(srcs, seeds=seeds):
        pass
    return time.perf_counter() - start


HEADER = (f"{'executor':<8} {'traces':>7} {'tasks':>7} {'wall s':>7} {'tasks/s':>7} {'CPU s/task':>10} "
          f"{'main MB':>7} {'worker MB':>9} {'workers MB':>10} {'daemons MB':>10} {'output MB':>9} "
          f"{'KB/task':>7} {'load':>5}")


def row(r: dict[str, float]) -> str:
    return (f"{r['executor']:<8} {r['traces']:>7,} {r['tasks']:>7,} {r['seconds']:>7.0f} {r['tasks_per_s']:>7.1f} "
            f"{r['cpu_s_per_task']:>10.3f} {r['main_mb']:>7.0f} {r['worker_mb']:>9.0f} "
            f"{r['workers_mb']:>10.0f} {r['daemons_mb']:>10.0f} {r['output_mb']:>9.1f} "
            f"{r['kb_per_task']:>7.1f} {r['load_mean']:>5.1f}")


def extrapolate(r: dict[str, float], traces: int, strategies: int, machines: tuple[int, ...], cores: int) -> list[str]:
    """Hours for ``traces × strategies`` on M machines of ``cores`` cores: CPU s/task × tasks / cores,
    sharded (``--shard i/M``: every machine its own main process) and with one main process (one Ray
    driver), whose own CPU seconds per task set a floor however many machines there are."""
    tasks = traces * strategies
    lines = [f"{traces:,} sessions × {strategies} strategies = {tasks:,} tasks at {r['cpu_s_per_task']:.3f} CPU s/task "
             f"({r['executor']}; {cores} cores per machine): sharded / one main process"]
    floor = tasks * r["main_cpu_s_per_task"]
    for m in machines:
        hours = tasks * r["cpu_s_per_task"] / (m * cores) / 3600
        lines.append(f"  {m:>4} machine{'s' if m > 1 else ' '}: {hours:7.2f} h / {max(hours, floor / 3600):7.2f} h")
    lines.append(f"  ceiling: one main process spends {r['main_cpu_s_per_task'] * 1000:.1f} CPU ms per task, so no "
                 f"number of machines behind it finishes in under {floor / 3600:.2f} h")
    return lines


def estimate(small: dict[str, float], target: int) -> str:
    scale = (target // small["traces"] * small["traces"]) / small["traces"]
    wall = small["seconds"] * scale
    return (f"{small['executor']}: {small['traces']:,} traces took {small['seconds']:.0f} s at load "
            f"{small['load_mean']:.1f}, so {target:,} traces would take about {wall / 60:.0f} min "
            f"({wall / 3600:.1f} h) under the same load (linear in tasks)")


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
    p = argparse.ArgumentParser(prog="python -m bench.cli.perf_scale", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--traces", type=int, nargs="+", default=[10_000], help="sessions per run (rounded down to "
                   f"a multiple of {BINS})")
    p.add_argument("--executors", nargs="+", choices=EXECUTORS, default=list(EXECUTORS))
    p.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="pool processes / Ray CPUs")
    p.add_argument("--real", type=Path, default=SHARED, help="the real sessions whose lengths to follow")
    p.add_argument("--weight", choices=("agent", "session"), default="agent",
                   help="weigh every agent alike (default) or every real session alike")
    p.add_argument("--detail", choices=("summary", "calls", "full"), default="calls")
    p.add_argument("--estimate", type=int, default=None, metavar="N",
                   help="time N sessions on each executor and predict the --traces runs; run nothing bigger")
    p.add_argument("--derive", action="store_true", help="print the length bins and the scenarios, then stop")
    p.add_argument("--extrapolate-strategies", type=int, default=40)
    p.add_argument("--machines", type=int, nargs="+", default=[1, 4, 16, 64])
    p.add_argument("--report", type=float, default=60.0, help="seconds between progress lines (0: none)")
    p.add_argument("--max-seconds", type=float, default=0.0,
                   help="interrupt each run after this long and report it as far as it got (partial)")
    p.add_argument("--json", type=Path, default=None, help="also write every figure to this JSON file")
    p.add_argument("--aggregate", type=int, nargs=2, default=None, metavar=("TRACES", "STRATEGIES"),
                   help="only time the aggregation of this many stored task rows (e.g. 10000 30)")
    p.add_argument("--keep", default=None, help="keep the runs in this folder (default: a scratch folder)")
    args = p.parse_args(argv)
    if args.aggregate:
        with tempfile.TemporaryDirectory(prefix="perf-scale-") as tmp:
            r = aggregation(*args.aggregate, Path(tmp))
        print(f"aggregated {r['tasks']:,} task rows in {r['seconds']:.1f} s "
              f"({r['seconds'] / r['tasks'] * 1000:.2f} s per 1,000 tasks); load average {os.getloadavg()[0]:.1f}")
        return 0
    if "ray" in args.executors and importlib.util.find_spec("ray") is None:
        print("Ray is not installed (pip install 'compaction-bench[ray]'): measuring the process pool only")
        args.executors = [e for e in args.executors if e != "ray"]
    dist, origin = distribution(args.real, args.weight)
    srcs = sources(dist)
    print(f"lengths from {origin}: {BINS} equal-weight bins (median agent calls / content chars -> scenario "
          f"-> its seed 0's calls / chars)")
    for b, s in zip(dist, srcs, strict=True):
        calls, chars = realised(s)
        print(f"  {b.calls:>5} calls {b.chars:>9,} chars -> {s:<40} -> {calls:>5} calls {chars:>9,} chars")
    if args.derive:
        print("FALLBACK_BINS = (" + ", ".join(f"Bin({b.calls}, {b.chars})" for b in dist) + ")")
        return 0
    out = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="perf-scale-"))
    out.mkdir(parents=True, exist_ok=True)
    results: list[dict] = []
    try:
        sizes = [args.estimate] if args.estimate else args.traces
        seeds = max(max(sizes) // len(srcs), 1)
        generation = warm(srcs, seeds)
        print(f"{len(STRATEGIES)} strategies ({', '.join(STRATEGIES)}), --detail {args.detail}, {args.workers} "
              f"workers, {os.cpu_count()} cores; {seeds * len(srcs):,} sessions generated or read from the trace "
              f"cache in {generation:.0f} s; load average {os.getloadavg()[0]:.1f}", flush=True)
        print(HEADER, flush=True)
        for n in sizes:
            for ex in args.executors:
                r = measure(n, ex, args.workers, out, srcs, detail=args.detail, report=args.report,
                            max_seconds=args.max_seconds)
                results.append(r)
                print(row(r), flush=True)
                if args.json:
                    args.json.write_text(json.dumps({"bins": [asdict(b) for b in dist], "sources": srcs,
                                                     "origin": origin, "runs": results}, indent=1))
        if args.estimate:
            print("estimate:")
            for r in results:
                for target in args.traces:
                    print("  " + estimate(r, target))
        for r in results[-len(args.executors):]:
            print("\n".join(extrapolate(r, 10_000, args.extrapolate_strategies, tuple(args.machines),
                                        os.cpu_count() or 2)))
        print("assumptions: the other strategies cost what these cost on average; every core a worker; machines "
              "like this one; the trace cache warm; no scheduling overhead beyond the main process's own CPU.")
    finally:
        if not args.keep:
            shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
