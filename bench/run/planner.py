"""`compaction-bench plan`: what a run would cost before it runs (tasks, time, output size).

The traces are streamed once to count them and their messages (no token counting, no replay);
then the first ``sample`` traces run through every strategy in this process, into a scratch
folder, with the run's own options. Time and output size scale from that sample by messages
(replay time grows with session length, so counting traces alone would mislead), and time is
divided by the workers. The estimate is as good as the sample is typical: say ``--sample 5``
for mixed datasets.
"""

from __future__ import annotations

import dataclasses
import itertools
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.run import sources


@dataclass(frozen=True)
class Estimate:
    traces: int
    strategies: int
    tasks: int
    messages: int
    sample_traces: int
    sample_seconds: float
    """CPU-bound wall seconds of the sample, in this process."""
    seconds: float
    """Estimated wall seconds of the whole run on ``workers`` workers."""
    output_bytes: int
    """Estimated size of out/<run>/data (the Parquet store) at the run's ``--detail``."""
    api_dollars: float
    """Estimated paid-API spend (``--summarizer anthropic``); 0 offline."""
    workers: int
    detail: str
    filtered: str = ""
    """What the run's filters dropped (``filtered out 3 of 8 traces: ...``); empty without filters."""


def estimate(config, *, sample: int = 2) -> Estimate:
    """Count the run's tasks and calibrate time and size on ``sample`` traces (see the module doc)."""
    from bench.run.runner import Budget, check, run, trace_filter, trace_sources

    specs = check(config)
    filters = trace_filter(config)
    if sample < 1:
        raise ValueError(f"--sample must be at least 1, not {sample}")
    shard = sources.parse_shard(config.shard)
    n = messages = 0
    notes = sources.StreamNotes()
    for trace in sources.stream(trace_sources(config), seed=config.seed, seeds=config.seeds,
                                lenient=config.lenient, filters=filters, notes=notes):
        if shard is None or sources.in_shard(sources.trace_hash(trace), shard):
            n += 1
            messages += len(trace.messages)
    if not n:
        raise ValueError("no traces to replay in " + ", ".join(trace_sources(config))
                         + "".join(f"\n  {note}" for note in notes.notes))
    with tempfile.TemporaryDirectory(prefix="compaction-bench-plan-") as tmp:
        calibration = dataclasses.replace(config, out=tmp, name="plan", executor="local", csv="no", shard=None,
                                          max_cost=None)
        from traces import native

        sampled = list(itertools.islice(sources.stream(trace_sources(config), seed=config.seed, seeds=config.seeds,
                                                       lenient=config.lenient, filters=filters), sample))

        folder = Path(tmp) / "traces"
        native.write_many(sampled, folder)
        calibration = dataclasses.replace(calibration, traces=(str(folder),), min_calls=0, min_tokens=0, formats=())
        start = time.perf_counter()
        output = run(calibration, progress=False)
        seconds = time.perf_counter() - start
        size = sum(p.stat().st_size for p in (Path(tmp) / "plan" / "data").rglob("*.parquet"))
        spend = 0.0
        if Budget(config).paid and not output.table.empty:
            spend = float((output.table.cost * output.table.summarizer_cost_share).sum())
    sample_messages = sum(len(t.messages) for t in sampled) or 1
    scale = messages / sample_messages
    return Estimate(n, len(specs), n * len(specs), messages, len(sampled), seconds,
                    seconds * scale / max(1, config.workers), int(size * scale), spend * scale,
                    max(1, config.workers), config.detail,
                    sources.filtered_note(filters, notes) if filters.active else "")


def format_estimate(e: Estimate) -> str:
    def duration(s: float) -> str:
        return f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.1f} min" if s >= 60 else f"{s:.0f} s"

    def size(b: float) -> str:
        for unit in ("B", "KB", "MB", "GB", "TB"):
            if b < 1024 or unit == "TB":
                return f"{b:,.0f} {unit}" if unit == "B" else f"{b:,.1f} {unit}"
            b /= 1024
        return ""

    lines = [f"{e.tasks:,} tasks: {e.traces:,} traces ({e.messages:,} messages) × {e.strategies} strategies",
             f"estimated time: {duration(e.seconds)} on {e.workers} worker(s)",
             f"estimated output (--detail {e.detail}): {size(e.output_bytes)}",
             f"calibrated on {e.sample_traces} trace(s) × every strategy in {e.sample_seconds:.1f} s; "
             "scaled by messages"]
    if e.filtered:
        lines.insert(1, e.filtered)
    if e.api_dollars:
        lines.append(f"estimated paid-API spend: ${e.api_dollars:,.2f}")
    return "\n".join(lines)
