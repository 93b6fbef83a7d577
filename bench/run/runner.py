"""Run a sweep: every trace × every strategy, in four stages (DESIGN.md's plan → execute → store → aggregate).

plan: traces stream in (bench.run.sources), each counted once with the batched tokenizer in the
parent; its tasks are keyed by content hash (``task_key``) and those already stored are skipped
(resume). execute: jobs (one trace, its counts, a few of its tasks) go to the executor
(bench.run.executors: local, process pool or Ray) with a bounded number in flight; each worker
computes its tasks' metrics from their own rows. store: finished tasks stream into the Parquet
task store (bench.run.store) in batches, never all held in memory; an error is recorded, never lost.
aggregate: the results table, the paired columns and the printed summary come from the stored
rows (one row per task), in the plan's order.
"""

from __future__ import annotations

import gc
import hashlib
import itertools
import json
import math
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

import strategies
from bench import __version__
from bench.cost.pricing import (
    RECORDED,
    UnknownModelError,
    add_prices,
    price_table,
    profile,
    profile_for,
    use_prices,
)
from bench.replay.loop import BILLING_VERSION, ReplayConfig, replay, replay_with_twin
from bench.replay.provider import adopt_shipped, shipped_counts
from bench.replay.records import SCHEMA_VERSION, TaskResult
from bench.run import executors, sources
from bench.run.sources import trace_hash
from bench.run.store import (
    DETAIL,
    Store,
    TaskOutput,
    export,
    provenance,
    task_output,
    write_plan,
    write_run,
)
from bench.scoring.fidelity import usage_ratio
from bench.scoring.ledger_check import ledger_rows
from bench.tokens import count_cache
from bench.tokens.calibration import calibration_key
from bench.tokens.counter import TokenCounter, Tokenizer
from traces.formats import ReadResult
from traces.model import Trace

if TYPE_CHECKING:  # pandas is imported where used: a worker imports this module before its first replay
    import pandas as pd

CSV_AUTO_TASKS = 5_000
"""``--csv auto`` exports calls.csv & co. for runs up to this many tasks (the report reads Parquet beyond)."""
SPECS_PER_JOB = 8
"""Tasks of one trace sent together: the trace travels once per job, and jobs stay small enough to balance."""


@dataclass(frozen=True)
class RunConfig:
    """Everything that decides a run's numbers; written to run.json."""

    traces: tuple[str, ...] = ()
    """Trace sources: files, folders, globs, ``hf:owner/name``, or ``synthetic:<scenario>``.
    Empty means the default synthetic scenarios."""
    strategies: tuple[str, ...] = ()
    """Strategy specs (``name`` or ``name@key=value``); empty means every registered strategy."""
    model: str = RECORDED
    """``recorded`` (the default): each trace windowed and priced as the model it recorded, per call,
    and a trace that records none (synthetic ones) as bench.cost.pricing.DEFAULT_MODEL; a model id forces
    that model on every trace."""
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
    truth: str = "provider"
    """Token counts: ``provider`` (attributed from recorded usage, else calibrated per family) or
    ``cl100k`` (bench/tokens/attribution.py TRUTHS)."""
    prices: tuple[str, ...] = ()
    """``--prices FILE``: TOML price files (bench/data/prices.toml's schema) for models it does not know."""
    strict_prices: bool = False
    """``--strict-prices``: refuse a model no table prices, instead of running it at the stated fallback."""
    executor: str = "process"
    """Where tasks run: ``local`` (this process), ``process`` (a pool of ``workers``) or ``ray``."""
    ray_address: str | None = None
    """An existing Ray cluster (else RAY_ADDRESS, else a local one)."""
    shard: str | None = None
    """``i/N``: only the traces whose hash falls in shard i of N (merge the shards' outputs after)."""
    detail: str = "full"
    """Tables kept: ``summary`` (results only), ``calls`` (+ the per-call ledger), ``full`` (+ events, probes,
    summaries)."""
    csv: str = "auto"
    """CSV/JSONL exports of the store: ``auto`` (runs up to CSV_AUTO_TASKS tasks), ``yes`` or ``no``."""
    max_cost: float | None = None
    """USD cap on what the run spends on a paid API (``--summarizer anthropic``); stops before crossing it."""
    min_calls: int = 0
    """Skip traces with fewer agent calls (bench.run.sources.TraceFilter; counted in run.json ``filtered``)."""
    min_tokens: int = 0
    """Skip traces of fewer tokens (cl100k, the whole session)."""
    formats: tuple[str, ...] = ()
    """Keep only traces read by these importers (``aider``, ``claude-code``, ..., ``synthetic``); empty: all."""
    weight: str = "equal"
    """Per-trace weight of the aggregate means, the verdict and the paired statistics (bench.decide.verdict.WEIGHTS)."""
    open_loop: bool = False
    """``--open-loop``: replay the recorded future as it is, without the simulated re-reads of files a
    strategy dropped (bench/replay/rereads.py); by default they are made and billed, and each task that made
    some is replayed once more without them for ``cost_open_loop`` and ``input_tokens_open_loop``."""
    open_loop_twin: bool = True
    """Whether a task that made re-reads is replayed without them for ``cost_open_loop`` and
    ``input_tokens_open_loop`` (the default). The robustness replays (bench.run.robustness) turn it off
    when their verdict reads neither: those columns are then NaN for such a task, and its task key differs,
    so a run that reads them never resumes from those rows."""
    objective: str | None = None
    """``--objective``: only checked before any replay (a typo fails in a second, not after the run); the
    verdict is decided from the results (bench.decide.verdict.decide)."""

    @property
    def run_dir(self) -> Path:
        return Path(self.out) / self.name


@dataclass
class RunOutput:
    run_dir: Path
    results: pd.DataFrame
    """The results table with the columns the end of a run reads (bench.run.finish.end_columns: the console,
    the verdict, its robustness): O(tasks × a few floats). ``table`` has every column."""
    tasks: int = 0
    resumed: int = 0
    notes: list[str] = field(default_factory=list)
    """What the importers noticed (files passed over, orphan results flagged, ids renamed, ...)."""
    skipped: int = 0
    """Bad records skipped in imported traces (``--lenient``)."""
    stopped: str = ""
    """Why the run stopped before every task ran (``--max-cost``), else empty."""
    plan: pd.DataFrame | None = field(default=None, repr=False)
    _table: pd.DataFrame | None = field(default=None, init=False, repr=False)

    @property
    def table(self) -> pd.DataFrame:
        """The whole results table (every column of results.csv), read from the task store when first
        asked: the end of a run itself never holds it."""
        if self._table is None:
            self._table = aggregate(self.run_dir, self.plan)
        return self._table

    @property
    def summary(self) -> pd.DataFrame:
        """Totals per strategy (bench.scoring.metrics.by_strategy of ``table``)."""
        from bench.scoring.metrics import by_strategy

        return by_strategy(self.table)

    @property
    def errors(self) -> list[tuple[str, str, str]]:
        """(trace, strategy, error) of the tasks that raised."""
        if self.results.empty:
            return []
        bad = self.results[self.results.error.fillna("") != ""]
        return list(zip(bad.trace, bad.strategy, bad.error, strict=True))


def trace_sources(config: RunConfig) -> tuple[str, ...]:
    return config.traces or tuple(f"synthetic:{s}" for s in _default_scenarios())


def load_traces(config: RunConfig) -> ReadResult:
    """The run's traces in a list, with the importers' notes (small runs and tools; ``run`` streams)."""
    notes = sources.StreamNotes()
    traces = list(sources.stream(trace_sources(config), seed=config.seed, seeds=config.seeds,
                                 lenient=config.lenient, notes=notes))
    return ReadResult(traces, notes.skipped, notes.notes)


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
    """Parse and build every strategy once, so a bad name, type or value fails before any replay
    (``strategies.build`` checks each parameter against its range: ``strategies.check_params``)."""
    texts = [t for s in (config.strategies or strategies.names()) for t in expand_grid(s)]
    specs = list({spec.label: spec for spec in map(strategies.parse_spec, texts)}.values())
    for spec in specs:
        strategies.build(spec)
    return specs


def task_key(trace_sha: str, spec: strategies.StrategySpec, config: RunConfig) -> str:
    from bench.scoring.derived_probes import VERSION as DERIVED_PROBES

    cls, _ = strategies.resolve(spec.name)
    material = json.dumps(
        [SCHEMA_VERSION, __version__, DERIVED_PROBES, trace_sha, spec.name, dict(spec.params), cls.version,
         strategies.source_hash(cls), config.model,
         config.summarizer, config.summarizer_model, config.seconds_per_call, config.cache_ttl,
         config.summarizer_options, config.probe, config.probe_model, config.truth,
         BILLING_VERSION, _prices_key(config.prices), calibration_key(), config.open_loop,
         *(() if config.open_loop_twin else ("no open-loop twin",))],
        sort_keys=True, default=str,
    )
    return hashlib.sha256(material.encode()).hexdigest()[:24]


@lru_cache(maxsize=8)
def _prices_key(extra: tuple[str, ...]) -> str:
    """The prices a run bills with: the bundled table's text, genai-prices' version and the date its
    prices are read at, and every ``--prices`` file's, hashed (a corrected price is never resumed from
    rows billed at the old one)."""
    from importlib import resources

    from bench.cost.pricing import LIBRARY, PRICED_AT

    h = hashlib.sha256(resources.files("bench").joinpath("data/prices.toml").read_bytes())
    h.update(f"{LIBRARY} {PRICED_AT.isoformat()}".encode())
    for path in extra:
        try:
            h.update(Path(path).read_bytes())
        except OSError:
            h.update(path.encode())  # unreadable: check() refuses it with a clear message
    return h.hexdigest()[:16]


def _asker(config: RunConfig, counter: TokenCounter | None = None) -> Any:
    """The LLM probe of ``--probe`` (None for exact match only); refuses a missing key at once."""
    from bench.scoring import llm_probe

    options: dict[str, Any] = {"model": config.probe_model} if config.probe_model else {}
    if counter is not None:
        options["counter"] = counter  # the replay's shared counts
    return llm_probe.build(config.probe, **options)


def _prober(config: RunConfig, counter: TokenCounter | None = None) -> Any:
    """The behaviour probes of ``--probe anthropic`` (next action, constraint choice), else None.

    One per task, so its count of paid requests is the task's; it stops asking at ``--max-cost``.
    """
    if config.probe != "anthropic":
        return None
    from bench.scoring.action_probe import ActionProber

    options: dict[str, Any] = {"model": config.probe_model} if config.probe_model else {}
    return ActionProber(counter=counter, max_cost=config.max_cost, **options)


def _observers(trace: Trace, asker: Any = None, prober: Any = None) -> tuple[Callable[..., list[dict]], ...]:
    from bench.scoring.probes import needle_observer

    return (needle_observer(trace, asker=asker, prober=prober),)


def _fidelity(trace: Trace, spec: strategies.StrategySpec, result: TaskResult, counter: TokenCounter) -> list[dict]:
    """Recorded vs replayed compactions of this very replay (undriven: the strategy decides on the
    provider-attributed counts, bench/tokens/attribution.py), when the strategy re-implements the trace's
    own agent. ``bench.scoring.fidelity.replay_recorded`` keeps the usage-driven diagnostic."""
    from bench.scoring.fidelity import fidelity_rows, matching_strategy

    if not trace.compactions or matching_strategy(trace) != spec.name:
        return []
    return fidelity_rows(trace, result, counter=counter)


def run_task(trace: Trace, counter: TokenCounter, spec: strategies.StrategySpec, config: RunConfig) -> TaskResult:
    """Replay one trace through one strategy; any exception becomes the task's recorded error."""
    try:
        for path in config.prices:  # a worker process prices the run's extra models too
            add_prices(path)
        from bench.summarizers import PER_TRACE
        from bench.summarizers import build as build_summarizer

        per_trace = {"trace": trace} if config.summarizer in PER_TRACE else {}
        summarizer = build_summarizer(config.summarizer, **config.summarizer_options, **per_trace)
        replay_config = ReplayConfig(
            profile_for(config.model, trace.model, strict=config.strict_prices),  # recorded: the trace's own
            profile(config.summarizer_model, strict=config.strict_prices) if config.summarizer_model else None,
            config.seconds_per_call,
            config.cache_ttl,
            recorded_models=config.model == RECORDED,
            open_loop=config.open_loop,
        )
        strategy = strategies.build(spec)
        observers = _observers(trace, _asker(config, counter), _prober(config, counter))
        if replay_config.open_loop or config.summarizer == "anthropic" or not config.open_loop_twin:  # no twin
            result, twin = replay(trace, strategy, replay_config, counter=counter, summarizer=summarizer,
                                  label=spec.label, observers=observers), None
        else:  # the twin forked at the first re-read, not replayed from the start again
            result, twin = replay_with_twin(trace, strategy, replay_config, counter=counter, summarizer=summarizer,
                                            label=spec.label, observers=observers)
        result.open_loop = _open_loop(trace, counter, spec, config, replay_config, result, twin)
        result.fidelity = _fidelity(trace, spec, result, counter)
        result.ledger = ledger_rows(trace, result)  # our cache split beside the recorded one
        return result
    except Exception as e:  # noqa: BLE001 - recorded, never lost
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        tb = traceback.extract_tb(e.__traceback__)[-1]
        return TaskResult(trace.id, spec.label, error=f"{detail} (at {tb.filename}:{tb.lineno})")


def _open_loop(trace: Trace, counter: TokenCounter, spec: strategies.StrategySpec, config: RunConfig,
               replay_config: ReplayConfig, result: TaskResult, twin: TaskResult | None = None
               ) -> dict[str, float] | None:
    """``cost`` and ``input_tokens`` of the task without re-reads, when its replay made some: the same
    replay with ``open_loop`` (no observers), forked from this one at its first re-read (``twin``,
    bench.replay.loop.replay_with_twin), else replayed again from the start. None when they are this
    replay's own (it made no re-read, or it ran open); NaN under a paid summarizer (``anthropic``): its
    summaries of contexts the re-reads changed would be bought twice; NaN without ``open_loop_twin``."""
    if replay_config.open_loop or not any(result.calls.column("rereads")):
        return None
    if config.summarizer == "anthropic" or not config.open_loop_twin:
        return {"cost": math.nan, "input_tokens": math.nan}
    if twin is not None:
        return _twin_totals(twin)
    from dataclasses import replace as dc_replace

    from bench.summarizers import PER_TRACE
    from bench.summarizers import build as build_summarizer

    per_trace = {"trace": trace} if config.summarizer in PER_TRACE else {}
    twin = replay(trace, strategies.build(spec), dc_replace(replay_config, open_loop=True, costs_only=True),
                  counter=counter,
                  summarizer=build_summarizer(config.summarizer, **config.summarizer_options, **per_trace),
                  label=spec.label)
    return _twin_totals(twin)


def _twin_totals(twin: TaskResult) -> dict[str, float]:
    from bench.scoring.metrics import _sum  # the total as task_row takes it: the same figure to the bit

    return {"cost": _sum(twin.calls.column("cost")), "input_tokens": sum(twin.calls.column("prompt_tokens"))}


def shared_counter(trace: Trace, counts: Any) -> TokenCounter:
    """A worker's counter for one trace, seeded with the counts the parent computed once."""
    counter = TokenCounter()
    adopt_shipped(counter, trace, counts)  # provider-attributed where the trace records usage
    return counter


_LAST_COUNTER: list[tuple[Trace, Any, TokenCounter]] = []
"""The counter of the latest job's trace in this process (one slot)."""


def _job_counter(job: executors.Job) -> TokenCounter:
    """``shared_counter``, reused while jobs carry the same trace object: the local executor makes a
    job per task, and the strategies of a trace write many of the same texts (every codex variant
    cuts the same outputs alike), which one counter tokenizes once. Counts depend only on the
    message or text, so results do not change; one slot keeps memory to one trace's texts. It starts
    from the counts of the texts earlier runs wrote over this trace (bench/tokens/count_cache.py)."""
    if _LAST_COUNTER and _LAST_COUNTER[0][0] is job.trace and _LAST_COUNTER[0][1] is job.counts:
        return _LAST_COUNTER[0][2]
    counter = shared_counter(job.trace, job.counts)
    count_cache.attach_texts(counter, job.sha or trace_hash(job.trace))
    _LAST_COUNTER[:] = [(job.trace, job.counts, counter)]
    return counter


@contextmanager
def long_lived_frozen() -> Iterator[None]:
    """What is alive now (the trace, its counts, the indexes its replays share) is kept out of the
    cyclic collector's scans while the block runs (``gc.freeze``), then handed back (``gc.unfreeze``).

    Why: a replay allocates many short-lived objects, so collections run often, and each full one
    walked every object of the trace as well: 7% of the replays' CPU on ``make bench``, and at 3M
    tokens single collections of 65 ms, a cost that grew with the session, not with the call.

    The block's own cyclic garbage is collected before unfreezing (a scan of what the block made,
    not of the frozen heap). Without it, that garbage was frozen again by the next job's block and
    never collected: a worker grew by ~0.6 MB per short trace, to 4.4 GB over a 10,000-session run
    (tests/bench/test_job_memory.py).

    The collector does not run on its own inside the block (``gc.disable``), only that one collection at
    its end. A replay's objects are freed by their reference counts; what the collector's own runs did
    during a job was mostly to scan, again and again, the contexts, records and memos the replay was
    still using: ~10% of a seeds-1 bench's CPU (2.25 of 21.3 s, timed with ``gc.callbacks``).
    The cyclic garbage a replay leaves is small and is collected at the block's end: at 1M tokens
    9,000–26,000 objects, with a peak (tracemalloc) no higher than with the collector running
    (tests/bench/test_job_memory.py checks both the collection and that the collector is back on).
    """
    was = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
        gc.collect()  # only what the block made: the frozen objects are not scanned
        gc.unfreeze()


def run_job(job: executors.Job, config: RunConfig, window: int | None) -> list[TaskOutput]:
    """A worker's job: some tasks of one trace, each flattened for the store (metrics included);
    ``window`` None (``--model recorded``) means the trace's own model's.

    A pool worker first sets its prices to exactly the run's ``--prices`` (``use_prices``): one pool
    serves every run of a command (bench.run.executors.shared_pools), and robustness's 1M-window replay
    must leave no price behind for the next run's jobs. The rest a worker keeps between jobs is keyed
    on the job's own objects (``_job_counter``, bench.cost.windows.session_windows) or is a pure memo."""
    if executors.in_worker():
        use_prices(config.prices)
    counter = _job_counter(job)
    model = _trace_profile(config, job.trace)
    if window is None:
        window = model.context_window if model is not None else None
    where = {"window": window,
             "window_source": (model.window_source or "the price table") if model is not None else "",
             "price_source": (model.price_source or "the price table") if model is not None else ""}
    with long_lived_frozen():
        outputs = [task_output(key, run_task(job.trace, counter, spec, config), window, config.detail)
                   for key, spec in job.tasks]
    for out in outputs:
        out.row.update(where)
    count_cache.keep_texts(counter)  # the texts this job counted anew, for the next run
    return outputs


def _window(config: RunConfig) -> int | None:
    """The run's window when one model is forced; None under ``recorded`` (each trace's own)."""
    return None if config.model == RECORDED else profile(config.model, strict=config.strict_prices).context_window


def _trace_profile(config: RunConfig, trace: Trace) -> Any:
    """The model a trace runs as (its first), windowed as the session ran it under ``--model
    recorded`` (bench/cost/windows.py); None for a model refused (``--strict-prices``), whose tasks
    record the error."""
    from bench.cost.windows import session_windows

    for path in config.prices:
        add_prices(path)
    try:
        model = profile_for(config.model, trace.model, strict=config.strict_prices)
    except UnknownModelError:
        return None
    return session_windows(trace).apply(model) if config.model == RECORDED else model


def trace_filter(config: RunConfig) -> sources.TraceFilter:
    """The run's ``--min-calls``, ``--min-tokens`` and ``--format`` (a bad value fails before any work)."""
    return sources.TraceFilter.parse(config.min_calls, config.min_tokens, config.formats)


def check(config: RunConfig) -> list[strategies.StrategySpec]:
    """Everything that can be refused before any work: model, options, strategies, summarizer, probe."""
    for path in config.prices:
        add_prices(path)
    # under --strict-prices an unknown model fails before any work (else it runs at the stated fallback)
    profile_for(config.model, None, strict=config.strict_prices)
    if config.summarizer_model:
        profile(config.summarizer_model, strict=config.strict_prices)
    if config.seeds < 1:
        raise ValueError(f"--seeds must be at least 1, not {config.seeds}")
    if config.seconds_per_call < 0:
        raise ValueError(f"--seconds-per-call must not be negative, not {config.seconds_per_call}")
    if config.detail not in DETAIL:
        raise ValueError(f"--detail {config.detail!r}: expected one of {', '.join(DETAIL)}")
    if config.csv not in ("auto", "yes", "no"):
        raise ValueError(f"--csv {config.csv!r}: expected auto, yes or no")
    if config.executor not in executors.EXECUTORS:
        raise ValueError(f"--executor {config.executor!r}: expected one of {', '.join(executors.EXECUTORS)}")
    if config.max_cost is not None and config.max_cost < 0:
        raise ValueError(f"--max-cost must not be negative, not {config.max_cost}")
    sources.parse_shard(config.shard)
    trace_filter(config)
    from bench.decide.verdict import check_objective, check_weight

    check_weight(config.weight)
    check_objective(config.objective)
    specs = strategy_specs(config)
    from bench.summarizers import build as build_summarizer

    build_summarizer(config.summarizer, **config.summarizer_options)
    _asker(config)
    _prober(config)
    return specs


KEY_CHARS = 24
"""Length of a task key (``task_key``: hex digits)."""


class Planned:
    """What the plan stage saw while the jobs streamed out (filled as they go), held flat: the tasks'
    keys and positions in packed arrays (no Python object per task) and each trace's row for run.json
    spilled to a scratch file, so the parent's memory does not grow with the number of traces (issue 28:
    a Python object kept per trace pins the memory the trace was read into)."""

    def __init__(self) -> None:
        from array import array

        self._keys = bytearray()
        self.tpos = array("q")
        self.spos = array("q")
        self._traces: Any = None
        self.n_traces = 0
        self.todo = 0
        self.resumed = 0

    def add_trace(self, info: dict[str, Any]) -> None:
        """One trace's row for run.json (``position`` orders them)."""
        import tempfile

        if self._traces is None:
            self._traces = tempfile.TemporaryFile("w+", encoding="utf-8")
        self._traces.write(json.dumps(info, default=str) + "\n")
        self.n_traces += 1

    def add_task(self, key: str, tpos: int, spos: int) -> None:
        raw = key.encode("ascii")
        if len(raw) != KEY_CHARS:
            raise ValueError(f"task key {key!r} is not {KEY_CHARS} characters")
        self._keys += raw
        self.tpos.append(tpos)
        self.spos.append(spos)

    @property
    def keys(self) -> list[str]:
        raw = bytes(self._keys)
        return [raw[i:i + KEY_CHARS].decode("ascii") for i in range(0, len(raw), KEY_CHARS)]

    @property
    def traces(self) -> list[dict[str, Any]]:
        """Every trace's row, in the order they were planned."""
        if self._traces is None:
            return []
        self._traces.seek(0)
        rows = [json.loads(line) for line in self._traces]
        self._traces.seek(0, 2)
        return rows

    def close(self) -> None:
        if self._traces is not None:
            self._traces.close()
            self._traces = None

    def frame(self, specs: list[strategies.StrategySpec]) -> pd.DataFrame:
        import numpy as np
        import pandas as pd
        labels = [s.label for s in specs]
        ids = {t["position"]: t["id"] for t in self.traces}
        tpos = np.frombuffer(self.tpos, dtype=np.int64) if len(self.tpos) else np.zeros(0, np.int64)
        spos = np.frombuffer(self.spos, dtype=np.int64) if len(self.spos) else np.zeros(0, np.int64)
        plan = pd.DataFrame({"key": self.keys, "trace": [ids[p] for p in self.tpos],
                             "strategy": [labels[i] for i in self.spos], "tpos": tpos.copy(), "spos": spos.copy()})
        return plan.sort_values(["tpos", "spos"], kind="stable").reset_index(drop=True)


def plan_jobs(config: RunConfig, specs: list[strategies.StrategySpec], traces: Iterator[tuple[int, Trace]],
              done: set[str], planned: Planned) -> Iterator[executors.Job]:
    """Jobs for the tasks not yet stored, trace by trace; each trace is counted once, here."""
    tokenizer = Tokenizer()
    shard = sources.parse_shard(config.shard)
    per_job = max(1, math.ceil(len(specs) / math.ceil(len(specs) / SPECS_PER_JOB)))
    for position, trace in sources.interleave(traces):
        sha = trace_hash(trace)
        if not sources.in_shard(sha, shard):
            continue
        counter = sources.counter_for(trace, tokenizer)  # per trace (a --min-tokens filter's counts reused)
        count_cache.prime(counter, sha, trace.messages)  # kept from an earlier run of this trace, else counted
        counts = shipped_counts(trace, counter, model=config.model, truth=config.truth)
        planned.add_trace({"position": position, "id": trace.id, "agent": trace.agent, "model": trace.model,
                               "sha256": sha, "messages": len(trace.messages), "calls": trace.n_calls,
                               "source": trace.source, "usage_ratio": usage_ratio(trace, counter)})
        todo = []
        for si, spec in enumerate(specs):
            key = task_key(sha, spec, config)
            planned.add_task(key, position, si)
            if key in done:
                planned.resumed += 1
            else:
                todo.append((key, spec))
        planned.todo += len(todo)
        for i in range(0, len(todo), per_job):
            yield executors.Job(trace, counts, tuple(todo[i:i + per_job]), sha)


def count_tasks(config: RunConfig, specs: list[strategies.StrategySpec], done: set[str]) -> int:
    """The tasks this run will replay, counted before the first one starts, so that the progress bar's
    total is right from the start: set from the plan as traces streamed in, it grew while the bar
    moved and the bar ran backwards (53% of 76, then 42% of 114, ...). One extra pass over the
    sources that only reads them (no token counting unless ``--min-tokens`` needs it, no replay);
    each trace is hashed only when a ``--shard`` or tasks already stored need its task keys."""
    shard = sources.parse_shard(config.shard)
    todo = 0
    for trace in sources.stream(trace_sources(config), seed=config.seed, seeds=config.seeds, lenient=config.lenient,
                                filters=trace_filter(config)):
        if shard is None and not done:
            todo += len(specs)
            continue
        sha = trace_hash(trace)
        if sources.in_shard(sha, shard):
            todo += sum(task_key(sha, spec, config) not in done for spec in specs)
    return todo


class Budget:
    """``--max-cost``: what the run has spent on a paid API, and whether another task may start.

    A task's spend is known only once it finishes, so a new job starts only while the spend so far
    plus the dearest task seen, for every task in flight and the new one, stays within the cap.
    """

    def __init__(self, config: RunConfig) -> None:
        self.cap = config.max_cost
        self.summarizer_paid = config.summarizer == "anthropic"
        self.probes_paid = config.probe == "anthropic"
        self.paid = self.summarizer_paid or self.probes_paid
        self.spent = 0.0
        self.dearest = 0.0
        self.in_flight = 0
        self.stopped = ""

    @staticmethod
    def spend(out: TaskOutput, paid: bool, probes: bool = False) -> float:
        """Dollars of the task's real API calls: its summarizer calls when the summarizer is a paid model,
        and its behaviour probes (``--probe anthropic``)."""
        asked = out.row.get("behaviour_probe_cost", 0.0) if probes else 0.0
        asked = 0.0 if asked is None or asked != asked else float(asked)  # NaN: no probe ran
        if not paid:
            return asked
        return asked + float(out.row.get("cost", 0.0) or 0.0) * float(out.row.get("summarizer_cost_share", 0.0) or 0.0)

    def finished(self, out: TaskOutput) -> None:
        cost = self.spend(out, self.summarizer_paid, self.probes_paid)
        self.spent += cost
        self.dearest = max(self.dearest, cost)
        self.in_flight = max(0, self.in_flight - 1)

    def allows(self, tasks: int) -> bool:
        if self.cap is None or not self.paid:
            return True
        if self.spent + self.dearest * (self.in_flight + tasks) > self.cap:
            self.stopped = (f"--max-cost ${self.cap:,.2f}: stopped after ${self.spent:,.2f} spent, before a task "
                            f"that could cross it; run again with a higher cap to resume")
            return False
        self.in_flight += tasks
        return True

    def gate(self, jobs: Iterator[executors.Job]) -> Iterator[executors.Job]:
        for job in jobs:
            if not self.allows(len(job.tasks)):
                return
            yield job


def run(config: RunConfig, *, progress: bool = True) -> RunOutput:
    """Replay every (trace, strategy) task and write out/<run>/."""
    specs = check(config)
    notes = sources.StreamNotes()
    stream = sources.stream(trace_sources(config), seed=config.seed, seeds=config.seeds, lenient=config.lenient,
                            notes=notes, filters=trace_filter(config))
    first = next(stream, None)
    if first is None:
        raise ValueError("no traces to replay in " + ", ".join(config.traces)
                         + "".join(f"\n  {note}" for note in notes.notes))
    run_dir = config.run_dir
    replaced = _replaces(run_dir, config)
    if replaced:
        notes.notes.insert(0, replaced)
    store = Store(run_dir)  # an unwritable --out fails before any replay
    planned = Planned()
    window = _window(config)
    budget = Budget(config)
    unpriced: dict[str, str] = {}
    traces = _noting_unpriced(config, enumerate(itertools.chain([first], stream)), unpriced)
    done = store.done()
    jobs = budget.gate(plan_jobs(config, specs, traces, done, planned))
    executor = executors.build(config.executor, run_job, (config, window), workers=config.workers,
                               address=config.ray_address)

    def save(outputs: list[TaskOutput]) -> None:
        for out in outputs:
            store.add(out)
            budget.finished(out)

    bar = tqdm(total=count_tasks(config, specs, done) if progress else None, desc="replaying", unit="task",
               disable=not progress)
    try:
        for outputs in executor.results(jobs):
            save(outputs)
            if bar.total is not None and planned.todo > bar.total:  # a source grew between the two passes
                bar.total = planned.todo
            bar.update(len(outputs))
    except KeyboardInterrupt:  # start nothing new; save what is finishing (a 2nd Ctrl-C: what has finished)
        try:
            executor.interrupt(save)
        finally:
            store.flush()
        raise
    finally:  # the progress line ends before any message
        bar.close()
        store.flush()
        executor.close()
    notes.notes.extend(unpriced.values())  # one line per model priced by the stated fallback
    plan = planned.frame(specs)
    write_plan(run_dir, plan)
    from bench.run.finish import end_columns, finish

    results = finish(run_dir, plan, end_columns(config.objective))  # results.csv, streamed
    run_info = {
        "config": asdict(config),
        "strategies": [{"label": s.label, "name": s.name, "params": dict(s.params),
                        "version": strategies.resolve(s.name)[0].version,
                        "citation": strategies.resolve(s.name)[0].citation} for s in specs],
        "traces": [{k: v for k, v in t.items() if k != "position"}
                   for t in sorted(planned.traces, key=lambda t: t["position"])],
        "filtered": {"filters": trace_filter(config).describe(), "kept": notes.kept, **notes.filtered},
        "import_notes": notes.notes,  # what the importers noticed; with --lenient, what they repaired
        "skipped_records": notes.skipped,  # bad records skipped with --lenient
        "pricing_table": price_table()[0],
        "unpriced_models": sorted(unpriced),
        "tokenizer": Tokenizer().name,
        "provenance": provenance(),
    }
    planned.close()
    write_run(run_dir, run_info)
    sources.write_notes(run_dir, notes.notes, notes.details)  # all of them; the console gets a summary
    if config.csv == "yes" or (config.csv == "auto" and len(plan) <= CSV_AUTO_TASKS):
        export(run_dir, tuple(t for t in DETAIL[config.detail] if t != "results"))
    return RunOutput(run_dir, results, len(plan), planned.resumed, notes.notes, notes.skipped, budget.stopped,
                     plan=plan)


def _noting_unpriced(config: RunConfig, traces: Iterator[tuple[int, Trace]], unpriced: dict[str, str]
                     ) -> Iterator[tuple[int, Trace]]:
    """The traces, passed on after noting each model they run as that no table prices (model → its one
    warning line). Under ``--strict-prices`` such a model stops the run before its trace is replayed."""
    from bench.cost.pricing import DEFAULT_MODEL, fallback_note, recorded_id

    seen: set[str] = set()
    for position, trace in traces:
        if config.model != RECORDED:
            models = {config.model}
        else:
            models = {recorded_id(trace.model) or DEFAULT_MODEL}
            models.update(filter(None, (recorded_id(m.meta.get("model")) for m in trace.messages
                                        if m.role == "assistant" and isinstance(m.meta.get("model"), str))))
        if config.summarizer_model:
            models.add(config.summarizer_model)
        for model in sorted(models - seen):
            seen.add(model)
            p = profile(model, strict=config.strict_prices)
            if p.is_fallback:
                unpriced[model] = fallback_note(model, p)
        yield position, trace


SAME_RUN = ("traces", "strategies", "model", "summarizer", "summarizer_model", "seed", "seeds", "truth", "prices",
            "probe", "cache_ttl", "seconds_per_call", "min_calls", "min_tokens", "formats", "shard", "open_loop")
"""The settings that make two runs the same run: the same name with the same ones resumes, with
others it is a new run whose report replaces the old one (finished tasks stay in the store)."""


def _replaces(run_dir: Path, config: RunConfig) -> str:
    """A note when ``run_dir`` holds an earlier run with other settings (a reused ``--name``, or the
    default ``run``): its results and report are replaced, which a user should be told, not find out."""
    try:
        old = json.loads((run_dir / "run.json").read_text(encoding="utf-8")).get("config") or {}
    except (OSError, ValueError):
        return ""
    new = json.loads(json.dumps(asdict(config), default=str))
    changed = [k for k in SAME_RUN if k in old and old.get(k) != new.get(k)]
    if not changed:
        return ""
    return (f"{run_dir} held an earlier run with other {', '.join(changed)}: its results and report are replaced "
            f"by this run's (pass --name to keep both)")


def aggregate(run_dir: Path, plan: pd.DataFrame | None = None) -> pd.DataFrame:
    """The results table from the stored task rows, every column: one row per task, linear in tasks
    (the end of a run keeps fewer: bench.run.finish)."""
    from bench.run.finish import finish

    return finish(run_dir, plan, csv=False)


def format_summary(summary: pd.DataFrame) -> str:
    """The comparison table printed at the end of a run."""
    import pandas as pd
    if summary.empty:
        return "(no results)"
    view = summary.copy()
    view["input_tokens"] = view.input_tokens.map(lambda x: f"{x / 1e6:.2f}M")
    view["peak_context"] = view.peak_context.map(lambda x: f"{x / 1e3:.0f}K")
    if "saving_vs_none" in view:
        view["saving_vs_none"] = view.saving_vs_none.map(lambda x: f"{x:+.1%}")
    for col in ("retention", "compaction_retention", "llm_recall", "constraint_retention", "next_action_agreement",
                "next_action_recorded_agreement", "constraint_obedience", "constraint_obedience_full"):
        if col in view:
            view[col] = view[col].map(lambda x: "—" if pd.isna(x) else f"{x:.1%}")
    for col in ("cost", "cost_no_cache"):
        view[col] = view[col].map(lambda x: "failed" if pd.isna(x) else f"${x:,.2f}")
    if "errors" in view and not view.errors.any():
        view = view.drop(columns="errors")
    return view.to_string(index=False, na_rep="—")


CONSOLE_COLUMNS = (("traces", "traces"), ("calls", "calls"), ("input_tokens", "input"), ("saving_vs_none", "saving"),
                   ("peak_context", "peak"), ("compactions", "compact"), ("overflows", "overflows"),
                   ("cost", "$/trace"), ("retention", "retention"), ("errors", "errors"))
"""What the console shows, all per-trace means like the verdict (counts summed, as it sums them); the
rest is in results.csv and the report. Short headers keep it within 120 columns."""
CONSOLE_WIDTH = 120


def format_means(table: pd.DataFrame, weight: str | None = "equal") -> str:
    """The table printed at the end of a run: one row per strategy, cheapest per trace first, each
    figure the per-trace mean the verdict quotes (``--weight``), overflows and compactions summed; a
    strategy with an errored task last, with its errors counted. Fits ``CONSOLE_WIDTH`` columns (long
    strategy labels are cut in the middle)."""
    from bench.decide.verdict import aggregate

    if table.empty:
        return "(no results)"
    agg = aggregate(table, weight)
    agg = agg.assign(_failed=agg.errors > 0).sort_values(["_failed", "cost"]).drop(columns="_failed")
    cells = {"strategy": [_cut(str(s), 28) for s in agg.strategy]}
    for col, head in CONSOLE_COLUMNS:
        if col not in agg or (col == "errors" and not agg.errors.any()):
            continue
        if col == "saving_vs_none" and not agg[col].notna().any():
            continue
        cells[head] = [_cell(col, v, failed=bool(e)) for v, e in zip(agg[col], agg.errors, strict=True)]
    heads = list(cells)
    widths = [max(len(h), *(len(v) for v in cells[h])) for h in heads]
    lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(heads, widths,
                                                                                        strict=True)))]
    for r in range(len(agg)):
        lines.append("  ".join(cells[h][r].ljust(w) if i == 0 else cells[h][r].rjust(w)
                               for i, (h, w) in enumerate(zip(heads, widths, strict=True))))
    return "\n".join(line[:CONSOLE_WIDTH] for line in lines)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width // 2 - 1] + "…" + text[-(width - width // 2):]


def _cell(col: str, v: object, *, failed: bool = False) -> str:
    import pandas as pd
    if col == "cost" and (failed or pd.isna(v)):
        return "failed" if failed else "—"
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    x = float(v)  # type: ignore[arg-type]
    if col == "input_tokens":
        return f"{x / 1e6:.2f}M" if x >= 1e6 else f"{x / 1e3:.0f}K"
    if col == "peak_context":
        return f"{x / 1e3:.0f}K"
    if col == "saving_vs_none":
        return f"{x:+.1%}"
    if col == "retention":
        return f"{x:.1%}"
    if col == "cost":
        return f"${x:,.2f}" if x >= 1 else f"${x:,.3f}"
    return f"{x:,.0f}"


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
