"""`compaction-bench plan`: what a run would cost before it runs (tasks, time, output size).

The traces are streamed once to count them and their messages (no token counting, no replay);
then ``sample`` traces at evenly spaced quantiles of session length (on the bundled scenarios:
different scenarios, not two seeds of the first) run through every strategy in this process, into a
scratch folder, with the run's own options, and *everything the run writes is written*: the
Parquet store, the CSV/JSONL exports when the run would write them (``--csv``), and the report
with its charts and compaction pages unless ``--no-report``. Each kind of output is measured
(seconds and bytes) and scaled on its own: the replay, the store, the exports and the compaction
pages grow with the messages replayed; report.html with the traces; the charts and the report's
bootstraps (set by the number of strategies) cost the same whatever the run's size. The replay
is divided by the workers; the exports and the report run in one process. Left out, the exports
and compaction pages made the estimate 5–12× short in time and 20–200× in size. The estimate is
as good as the sample is typical: say ``--sample 5`` for mixed datasets.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.run import sources

KINDS = ("store", "exports", "pages", "report", "charts")
"""The output kinds measured apart: the store (data/, with results.csv and run.json, always written),
the CSV/JSONL exports (``--csv``), the per-strategy compaction pages, report.html with verdict.json,
the PNG charts."""


@dataclass(frozen=True)
class Estimate:
    traces: int
    strategies: int
    tasks: int
    messages: int
    sample_traces: int
    sample_seconds: float
    """Wall seconds of the sample (replay, exports and report), in this process."""
    seconds: float
    """Estimated wall seconds of the whole run on ``workers`` workers, report included."""
    output_bytes: int
    """Estimated size of out/<run>/ at the run's ``--detail``, ``--csv`` and report settings."""
    api_dollars: float
    """Estimated paid-API spend (``--summarizer anthropic``); 0 offline."""
    workers: int
    detail: str
    filtered: str = ""
    """What the run's filters dropped (``filtered out 3 of 8 traces: ...``); empty without filters."""
    bytes_by_kind: dict[str, int] = field(default_factory=dict)
    """``output_bytes`` by kind (``KINDS``)."""
    seconds_by_stage: dict[str, float] = field(default_factory=dict)
    """``seconds`` by stage: replay, exports, report."""
    csv: bool = False
    report: bool = True


def _sizes(run_dir: Path) -> dict[str, int]:
    """Bytes of each kind of output in a run folder (``KINDS``)."""
    out = dict.fromkeys(KINDS, 0)
    for p in run_dir.rglob("*"):
        if not p.is_file():
            continue
        rel = p.relative_to(run_dir).parts
        if rel[0] == "data" or p.name in ("results.csv", "run.json"):
            kind = "store"
        elif rel[0] == "compactions":
            kind = "pages"
        else:
            kind = {".png": "charts", ".csv": "exports", ".jsonl": "exports"}.get(p.suffix, "report")
        out[kind] += p.stat().st_size
    return out


def _sample(config, filters, sizes: list[int], sample: int) -> list:
    """``sample`` traces at evenly spaced quantiles of the stream's session lengths (``sizes``: messages
    per trace, in stream order), read in a second pass. The run's first traces are often one scenario's
    seeds, and evenly spaced positions picked two 6- and 24-message subagent files out of marot-spotter's
    1,112 messages: scaled 37×, their fixed costs swamped the estimate."""
    from bench.run.runner import trace_sources

    by_size = sorted(range(len(sizes)), key=lambda i: (sizes[i], i))
    k = min(sample, len(sizes))
    wanted = {by_size[min(len(sizes) - 1, int((j + 0.5) * len(sizes) / k))] for j in range(k)}
    picked = []
    for i, trace in enumerate(sources.stream(trace_sources(config), seed=config.seed, seeds=config.seeds,
                                             lenient=config.lenient, filters=filters)):
        if i in wanted:
            picked.append(trace)
            if len(picked) == len(wanted):
                break
    return picked


def estimate(config, *, sample: int = 2, report: bool = True) -> Estimate:
    """Count the run's tasks and calibrate time and size on ``sample`` traces (see the module doc);
    ``report``: whether the run renders its report (not with ``--no-report``)."""
    from bench.run.runner import CSV_AUTO_TASKS, DETAIL, Budget, check, export, run, trace_filter, trace_sources

    specs = check(config)
    filters = trace_filter(config)
    if sample < 1:
        raise ValueError(f"--sample must be at least 1, not {sample}")
    shard = sources.parse_shard(config.shard)
    n = messages = 0
    sizes: list[int] = []  # messages per trace in stream order; 0 for another shard's (never sampled)
    notes = sources.StreamNotes()
    for trace in sources.stream(trace_sources(config), seed=config.seed, seeds=config.seeds,
                                lenient=config.lenient, filters=filters, notes=notes):
        mine = shard is None or sources.in_shard(sources.trace_hash(trace), shard)
        sizes.append(len(trace.messages) if mine else 0)
        if mine:
            n += 1
            messages += len(trace.messages)
    if not n:
        raise ValueError("no traces to replay in " + ", ".join(trace_sources(config))
                         + "".join(f"\n  {note}" for note in notes.notes))
    tasks = n * len(specs)
    csv = config.csv == "yes" or (config.csv == "auto" and tasks <= CSV_AUTO_TASKS)
    with tempfile.TemporaryDirectory(prefix="compaction-bench-plan-") as tmp:
        calibration = dataclasses.replace(config, out=tmp, name="plan", executor="local", csv="no", shard=None,
                                          max_cost=None)
        from traces import native

        sampled = _sample(config, filters, sizes, sample)
        folder = Path(tmp) / "traces"
        native.write_many(sampled, folder)
        calibration = dataclasses.replace(calibration, traces=(str(folder),), min_calls=0, min_tokens=0, formats=())
        start = time.perf_counter()
        output = run(calibration, progress=False)
        replay_s = time.perf_counter() - start
        run_dir = Path(tmp) / "plan"
        start = time.perf_counter()
        if csv:
            export(run_dir, tuple(t for t in DETAIL[config.detail] if t != "results"))
        export_s = time.perf_counter() - start
        report_s: dict[str, float] = {}
        if report:
            from reports import Steps, render

            steps = Steps(len(specs))
            render(run_dir, objective=config.objective, progress=steps)
            report_s = steps.seconds
        sizes = _sizes(run_dir)
        spend = 0.0
        if Budget(config).paid and not output.results.empty:
            spend = float((output.results.cost * output.results.summarizer_cost_share).sum())
    sample_messages = sum(len(t.messages) for t in sampled) or 1
    scale = messages / sample_messages
    per_trace = n / max(1, len(sampled))
    workers = max(1, config.workers)
    # What grows with the messages (replay, store, exports, the tables the report folds, the events on the
    # pages), with the traces (report.html's per-trace tables), or not at all: the charts, and the verdict's
    # and pair tables' bootstraps, whose cost is set by the strategies (55 s for 44 of them on 2 traces and on
    # 9 alike, measured on marot-spotter). reports.Steps names the kinds.
    grows = {"load": scale, "page": scale, "tables": 1.0, "html": per_trace, "chart": 1.0}
    stages = {"replay": replay_s * scale / workers, "exports": export_s * scale,
              "report": sum(v * grows.get(k, scale) for k, v in report_s.items())}
    by_kind = {k: int(v * (1.0 if k == "charts" else per_trace if k == "report" else scale))
               for k, v in sizes.items()}
    return Estimate(n, len(specs), tasks, messages, len(sampled), replay_s + export_s + sum(report_s.values()),
                    sum(stages.values()), sum(by_kind.values()), spend * scale, workers, config.detail,
                    sources.filtered_note(filters, notes) if filters.active else "", by_kind, stages, csv, report)


def format_estimate(e: Estimate) -> str:
    def duration(s: float) -> str:
        return f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.1f} min" if s >= 60 else f"{s:.0f} s"

    def size(b: float) -> str:
        for unit in ("B", "KB", "MB", "GB", "TB"):
            if b < 1024 or unit == "TB":
                return f"{b:,.0f} {unit}" if unit == "B" else f"{b:,.1f} {unit}"
            b /= 1024
        return ""

    stages = ", ".join(f"{k} {duration(v)}" for k, v in e.seconds_by_stage.items() if v >= 0.5)
    names = {"store": "Parquet store", "exports": "CSV/JSONL exports", "pages": "compaction pages",
             "report": "report.html", "charts": "charts"}
    kinds = ", ".join(f"{names[k]} {size(v)}" for k, v in e.bytes_by_kind.items() if v)
    lines = [f"{e.tasks:,} tasks: {e.traces:,} traces ({e.messages:,} messages) × {e.strategies} strategies",
             f"estimated time: {duration(e.seconds)} on {e.workers} worker(s)" + (f" ({stages})" if stages else ""),
             f"estimated output (--detail {e.detail}, CSV exports {'on' if e.csv else 'off'}, report "
             f"{'on' if e.report else 'off'}): {size(e.output_bytes)}" + (f" ({kinds})" if kinds else ""),
             f"calibrated on {e.sample_traces} trace(s) × every strategy in {e.sample_seconds:.1f} s, writing what the "
             "run writes; scaled by messages (the charts: as measured)"]
    if e.filtered:
        lines.insert(1, e.filtered)
    if e.api_dollars:
        lines.append(f"estimated paid-API spend: ${e.api_dollars:,.2f}")
    return "\n".join(lines)
