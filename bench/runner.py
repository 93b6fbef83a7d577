"""Run a sweep: every trace × every strategy, over a process pool, into out/<run>/.

A task is one (trace, strategy). Truth token counts are computed once per trace in the parent
(batched) and shipped with the traces, so every strategy in every worker shares them. Each
finished task is saved at once under tasks/<key>.json; re-running the same sweep loads what is
there (resume), and a task that raises is recorded as an error without losing the others.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import multiprocessing
import signal
import traceback
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

import strategies
from bench import __version__
from bench.fidelity import usage_ratio
from bench.metrics import by_strategy, results_table
from bench.pricing import price_table, profile
from bench.records import SCHEMA_VERSION, TaskResult
from bench.replay import ReplayConfig, replay
from bench.store import atomic_write, load_task, provenance, task_to_json, write_run
from bench.tokens import TokenCounter
from traces import native
from traces.formats import ReadResult
from traces.model import Trace, TraceError


@dataclass(frozen=True)
class RunConfig:
    """Everything that decides a run's numbers; written to run.json."""

    traces: tuple[str, ...] = ()
    """Trace sources: files, folders, globs, ``hf:owner/name``, or ``synthetic:<scenario>``.
    Empty means the default synthetic scenarios."""
    strategies: tuple[str, ...] = ()
    """Strategy specs (``name`` or ``name@key=value``); empty means every registered strategy."""
    model: str = "claude-sonnet-4-5"
    summarizer: str = "extractive"
    summarizer_model: str | None = None
    seed: int = 0
    seeds: int = 1
    """Synthetic sessions per scenario (seeds ``seed`` … ``seed + seeds − 1``): more pairs, tighter intervals."""
    seconds_per_call: float = 10.0
    cache_ttl: str = "5m"
    workers: int = 2
    lenient: bool = False
    name: str = "run"
    out: str = "out"
    summarizer_options: dict[str, Any] = field(default_factory=dict)
    probe: str = "exact"
    """How needles are scored: ``exact`` (presence in the context) or ``anthropic`` (also asked to a model)."""
    probe_model: str | None = None

    @property
    def run_dir(self) -> Path:
        return Path(self.out) / self.name


@dataclass
class RunOutput:
    run_dir: Path
    results: list[TaskResult]
    table: pd.DataFrame
    summary: pd.DataFrame
    resumed: int = 0
    notes: list[str] = field(default_factory=list)
    """What the importers noticed (files passed over, orphan results flagged, ids renamed, ...)."""
    skipped: int = 0
    """Bad records skipped in imported traces (``--lenient``)."""

    @property
    def errors(self) -> list[TaskResult]:
        return [r for r in self.results if r.error]


def load_traces(config: RunConfig) -> ReadResult:
    """The run's traces, with the importers' notes and the bad records skipped (``--lenient``)."""
    from traces.formats import ReadResult, load, unique_ids

    sources = config.traces or tuple(f"synthetic:{s}" for s in _default_scenarios())
    result = ReadResult([])
    files = []
    for source in sources:
        if source.startswith("synthetic:"):
            from traces.synthetic import generate

            try:
                result.traces += [generate(source.removeprefix("synthetic:"), seed=seed)
                                  for seed in range(config.seed, config.seed + config.seeds)]
            except ValueError as e:
                raise TraceError(str(e), path=source) from None
        else:
            files.append(source)
    if files:
        loaded = load(files, lenient=config.lenient)
        result.traces += loaded.traces
        result.skipped, result.notes = loaded.skipped, loaded.notes
    result.traces, renamed = unique_ids(result.traces)
    result.notes += [n for n in renamed if n not in result.notes]
    return result


def _default_scenarios() -> tuple[str, ...]:
    from traces.scenarios import DEFAULT_BENCH

    return DEFAULT_BENCH


def expand_grid(text: str) -> list[str]:
    """``name@a=1|2,b=x|y`` → one spec per combination (a threshold sweep), in order.

    ``|`` separates the values to try for one parameter; a spec without ``|`` is returned as is.
    """
    name, sep, rest = text.partition("@")
    if not sep or "|" not in rest:
        return [text]
    keys, choices = [], []
    for item in filter(None, rest.split(",")):
        key, eq, values = item.partition("=")
        if not eq:
            raise strategies.StrategyError(f"strategy {text!r}: parameter {item!r} is not key=value")
        keys.append(key.strip())
        choices.append([v.strip() for v in values.split("|")])
    return [name + "@" + ",".join(f"{k}={v}" for k, v in zip(keys, combo, strict=True))
            for combo in itertools.product(*choices)]


def strategy_specs(config: RunConfig) -> list[strategies.StrategySpec]:
    """Parse and build every strategy once, so a bad name fails before any replay."""
    texts = [t for s in (config.strategies or strategies.names()) for t in expand_grid(s)]
    specs = list({spec.label: spec for spec in map(strategies.parse_spec, texts)}.values())
    for spec in specs:
        strategies.build(spec)
        _check_types(spec)
    return specs


def _check_types(spec: strategies.StrategySpec) -> None:
    """Refuse text where the default is a number or a flag (``prune_protect=abc``) before any replay."""
    try:
        defaults = strategies.build(spec.name)
    except strategies.StrategyError:  # a class with required parameters: nothing to compare with
        return
    for key, value in spec.params.items():
        default = getattr(defaults, key)
        if isinstance(default, bool | int | float) and not isinstance(value, bool | int | float):
            kind = "True or False" if isinstance(default, bool) else "a number"
            raise strategies.StrategyError(
                f"strategy {spec.label!r}: parameter {key!r} takes {kind} (default {default!r}), not {value!r}")


def trace_hash(trace: Trace) -> str:
    return hashlib.sha256(native.dumps(trace).encode()).hexdigest()


def task_key(trace_sha: str, spec: strategies.StrategySpec, config: RunConfig) -> str:
    cls, _ = strategies.resolve(spec.name)
    material = json.dumps(
        [SCHEMA_VERSION, __version__, trace_sha, spec.name, dict(spec.params), cls.version, config.model,
         config.summarizer, config.summarizer_model, config.seconds_per_call, config.cache_ttl,
         config.summarizer_options, config.probe, config.probe_model],
        sort_keys=True, default=str,
    )
    return hashlib.sha256(material.encode()).hexdigest()[:24]


# Worker state: the traces and their counts, shipped once per process.
_TRACES: list[Trace] = []
_COUNTERS: dict[int, TokenCounter] = {}


def _init_worker(traces: list[Trace], counts: list[list[int]]) -> None:
    global _TRACES
    _TRACES = traces
    _COUNTERS.clear()
    for i, (trace, n) in enumerate(zip(traces, counts, strict=True)):
        counter = TokenCounter()
        counter.adopt(trace.messages, n)
        _COUNTERS[i] = counter


def _init_pool_worker(traces: list[Trace], counts: list[list[int]]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle (no traceback per worker)
    _init_worker(traces, counts)


def _asker(config: RunConfig, counter: TokenCounter | None = None) -> Any:
    """The LLM probe of ``--probe`` (None for exact match only); refuses a missing key at once."""
    from bench import llm_probe

    options: dict[str, Any] = {"model": config.probe_model} if config.probe_model else {}
    if counter is not None:
        options["counter"] = counter  # the replay's shared counts
    return llm_probe.build(config.probe, **options)


def _observers(trace: Trace, asker: Any = None) -> tuple[Callable[..., list[dict]], ...]:
    from bench.probes import needle_observer

    return (needle_observer(trace, asker=asker),)


def _fidelity(trace: Trace, spec: strategies.StrategySpec, strategy: strategies.Strategy,
              config: ReplayConfig, counter: TokenCounter, summarizer) -> list[dict]:
    """Recorded vs replayed compactions, when the strategy re-implements the trace's own agent.

    A second replay, driven by the recorded usage (what the real agent triggered on).
    """
    from bench.fidelity import MATCHING_STRATEGY, fidelity_rows, replay_recorded

    if not trace.compactions or MATCHING_STRATEGY.get(trace.agent) != spec.name:
        return []
    driven = replay_recorded(trace, strategy, config, counter=counter, summarizer=summarizer, label=spec.label)
    return fidelity_rows(trace, driven, counter=counter)


def run_task(index: int, spec: strategies.StrategySpec, config: RunConfig) -> TaskResult:
    """Replay one trace through one strategy; any exception becomes the task's recorded error."""
    trace = _TRACES[index]
    try:
        from bench.summarizers import PER_TRACE
        from bench.summarizers import build as build_summarizer

        per_trace = {"trace": trace} if config.summarizer in PER_TRACE else {}
        summarizer = build_summarizer(config.summarizer, **config.summarizer_options, **per_trace)
        replay_config = ReplayConfig(
            profile(config.model),
            profile(config.summarizer_model) if config.summarizer_model else None,
            config.seconds_per_call,
            config.cache_ttl,
        )
        strategy = strategies.build(spec)
        result = replay(trace, strategy, replay_config, counter=_COUNTERS[index],
                        summarizer=summarizer, label=spec.label,
                        observers=_observers(trace, _asker(config, _COUNTERS[index])))
        result.fidelity = _fidelity(trace, spec, strategy, replay_config, _COUNTERS[index], summarizer)
        return result
    except Exception as e:  # noqa: BLE001 - recorded, never lost
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        tb = traceback.extract_tb(e.__traceback__)[-1]
        return TaskResult(trace.id, spec.label, error=f"{detail} (at {tb.filename}:{tb.lineno})")


def run(config: RunConfig, *, progress: bool = True) -> RunOutput:
    """Replay every (trace, strategy) task and write out/<run>/."""
    profile(config.model)  # an unknown model, strategy or summarizer fails before any work
    if config.summarizer_model:
        profile(config.summarizer_model)
    if config.seeds < 1:
        raise ValueError(f"--seeds must be at least 1, not {config.seeds}")
    if config.seconds_per_call < 0:
        raise ValueError(f"--seconds-per-call must not be negative, not {config.seconds_per_call}")
    specs = strategy_specs(config)
    from bench.summarizers import build as build_summarizer

    build_summarizer(config.summarizer, **config.summarizer_options)
    _asker(config)
    loaded = load_traces(config)
    traces = loaded.traces
    if not traces:
        raise ValueError("no traces to replay in " + ", ".join(config.traces)
                         + "".join(f"\n  {note}" for note in loaded.notes))
    run_dir = config.run_dir
    tasks_dir = run_dir / "tasks"
    tasks_dir.mkdir(parents=True, exist_ok=True)  # an unwritable --out fails before any replay
    counter = TokenCounter()
    counts = [counter.counts(t.messages) for t in traces]
    hashes = [trace_hash(t) for t in traces]
    todo: list[tuple[int, strategies.StrategySpec, str]] = []
    results: dict[tuple[int, int], TaskResult] = {}
    resumed = 0
    for ti in range(len(traces)):
        for si, spec in enumerate(specs):
            key = task_key(hashes[ti], spec, config)
            done = load_task(tasks_dir / f"{key}.json")
            if done is not None and not done.error:
                results[(ti, si)] = done
                resumed += 1
            else:
                todo.append((ti, spec, key))
    position = {(ti, spec.label): si for ti in range(len(traces)) for si, spec in enumerate(specs)}

    def finish(ti: int, key: str, result: TaskResult) -> None:
        results[(ti, position[(ti, result.strategy)])] = result
        if not result.error:
            atomic_write(tasks_dir / f"{key}.json", task_to_json(result))

    bar = tqdm(total=len(todo), desc="replaying", unit="task", disable=not progress or not todo)
    try:
        if config.workers <= 1 or len(todo) <= 1:
            _init_worker(traces, counts)
            for ti, spec, key in todo:
                finish(ti, key, run_task(ti, spec, config))
                bar.update()
        else:
            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(config.workers, mp_context=ctx, initializer=_init_pool_worker,
                                     initargs=(traces, counts)) as pool:
                futures = {pool.submit(run_task, ti, spec, config): (ti, spec, key) for ti, spec, key in todo}
                try:
                    for fut in as_completed(futures):
                        ti, spec, key = futures[fut]
                        finish(ti, key, fut.result())
                        bar.update()
                except KeyboardInterrupt:  # start nothing new, save the tasks already running
                    pool.shutdown(wait=True, cancel_futures=True)
                    for fut, (ti, _, key) in futures.items():
                        if fut.done() and not fut.cancelled() and fut.exception() is None:
                            finish(ti, key, fut.result())
                    raise
    finally:  # the progress line ends before any message
        bar.close()
    ordered = [results[k] for k in sorted(results)]
    table = results_table(ordered, window=profile(config.model).context_window)
    run_info = {
        "config": asdict(config),
        "strategies": [{"label": s.label, "name": s.name, "params": dict(s.params),
                        "version": strategies.resolve(s.name)[0].version,
                        "citation": strategies.resolve(s.name)[0].citation} for s in specs],
        "traces": [{"id": t.id, "agent": t.agent, "model": t.model, "sha256": h, "messages": len(t.messages),
                    "calls": t.n_calls, "source": t.source, "usage_ratio": usage_ratio(t, counter)}
                   for t, h in zip(traces, hashes, strict=True)],
        "pricing_table": price_table()[0],
        "tokenizer": counter.tokenizer.name,
        "provenance": provenance(),
    }
    write_run(run_dir, ordered, table, run_info)
    return RunOutput(run_dir, ordered, table, by_strategy(table), resumed, loaded.notes, loaded.skipped)


def format_summary(summary: pd.DataFrame) -> str:
    """The comparison table printed at the end of a run."""
    if summary.empty:
        return "(no results)"
    view = summary.copy()
    view["input_tokens"] = view.input_tokens.map(lambda x: f"{x / 1e6:.2f}M")
    view["peak_context"] = view.peak_context.map(lambda x: f"{x / 1e3:.0f}K")
    if "saving_vs_none" in view:
        view["saving_vs_none"] = view.saving_vs_none.map(lambda x: f"{x:+.1%}")
    for col in ("retention", "llm_recall"):
        if col in view:
            view[col] = view[col].map(lambda x: "—" if pd.isna(x) else f"{x:.1%}")
    for col in ("cost", "cost_no_cache"):
        view[col] = view[col].map(lambda x: f"${x:,.2f}")
    return view.to_string(index=False)


def format_fidelity(table: pd.DataFrame) -> str:
    """Recorded vs replayed compaction per (trace, strategy) where fidelity applies; '' if nowhere."""
    if table.empty or "fidelity_recorded_call" not in table:
        return ""
    rows = table[table.fidelity_recorded_call.notna()]
    if rows.empty:
        return ""
    cols = ["trace", "strategy", "fidelity_recorded_call", "fidelity_replayed_call", "fidelity_call_delta",
            "fidelity_recorded_pre_tokens", "fidelity_replayed_pre_tokens"]
    view = rows[cols].rename(columns=lambda c: c.removeprefix("fidelity_"))
    view["trace"] = view.trace.str.slice(0, 24)
    return view.to_string(index=False, na_rep="—", float_format=lambda x: f"{x:,.0f}")
