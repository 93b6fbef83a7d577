"""Tune a strategy's thresholds without fitting the sample: choose on some traces, score on others.

Stage: decide. A sweep that picks the best setting on the traces it then reports on flatters its
choice: with a handful of traces, the setting that happened to suit them looks better than it is.
``tune`` runs every setting of a grid on every trace as ordinary tasks of one run
(bench.run.runner.run: resumable, stored, exported like any other), then splits the traces in two,
deterministically by seed and stratified by scenario (agent, on real sessions):

- the *training* part chooses the setting, with the objective the verdict uses
  (bench.decide.verdict.decide, default ``overflows=0,retention>=best,min-cost``);
- the *held-out* part, which played no part in the choice, scores it: its per-trace means with
  bootstrap intervals (bench.scoring.stats), beside the setting the held-out part would have chosen
  itself. The paired difference between the two is how much the choice fits its sample.

The grid is what each strategy declares in ``tuning`` (values inside its ``ranges``, with the why
beside them), or the values a spec lists with ``|`` (``codex@limit_fraction=0.5|0.7``), each checked
against the parameter's range (strategies.check_params) before any replay. A trigger set as a share of
the window is swept in absolute tokens with ``trigger_tokens`` (``claude-code@trigger_tokens=100000|150000``,
any strategy with a share trigger: bench.context.strategy ``arm_trigger_tokens``); the share it replaces
is then not swept beside it. Sensitivity: the
neighbouring grid values of each tuned parameter, the others held at the choice, compared with it
on the held-out part (paired).
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

import strategies
from bench.decide.verdict import (
    BASELINE,
    Verdict,
    _fmt,
    _signed,
    aggregate,
    check_objective,
    check_weight,
    decide,
    paired,
    trace_weights,
    weighting_text,
)
from bench.scoring import stats

if TYPE_CHECKING:
    from bench.run.runner import RunConfig

HELD_OUT = 0.5
"""The default share of traces held out: half, so both the choice and its score rest on as many traces."""
TUNE_JSON = "tune.json"
TUNE_CSV = "tune.csv"
WIDTH = 120
"""Console columns (bench.run.runner.CONSOLE_WIDTH)."""


class TuneError(ValueError):
    """A tune request that cannot run (nothing to tune, too few traces); the message says why."""


@dataclass(frozen=True)
class Search:
    """One strategy's grid: the settings tried, as exact specs, and what is fixed around them."""

    text: str
    """The spec as the user gave it (``codex``, ``codex@limit_fraction=0.5|0.7``)."""
    name: str
    """The registry name (or module:Class) every setting shares."""
    fixed: Mapping[str, Any]
    """Parameters the spec sets to one value (kept in every setting)."""
    grid: Mapping[str, tuple[Any, ...]]
    """Each tuned parameter's values, in increasing order."""
    source: Mapping[str, str]
    """Per tuned parameter, where its values came from: ``declared by the strategy`` or ``given``."""
    ranges: Mapping[str, str]
    """Per tuned parameter, its allowed range (strategies.param_range), as text."""
    defaults: Mapping[str, Any]
    """Per tuned parameter, the value the strategy runs with when not set."""

    def spec(self, values: Mapping[str, Any]) -> strategies.StrategySpec:
        return strategies.StrategySpec(self.name, {**self.fixed, **values})

    def settings(self) -> list[dict[str, Any]]:
        """Every combination of the grid, in order (the first parameter slowest)."""
        keys = list(self.grid)
        return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*self.grid.values())]

    @cached_property
    def _by_label(self) -> dict[str, dict[str, Any]]:
        return {self.spec(s).label: s for s in self.settings()}

    def labels(self) -> list[str]:
        return list(self._by_label)

    def setting_of(self, label: str) -> dict[str, Any]:
        return dict(self._by_label[label])

    def short(self, label: str) -> str:
        """The tuned part of a setting's label: ``limit_fraction=0.5``."""
        return ",".join(f"{k}={v}" for k, v in self.setting_of(label).items())


def search_space(text: str) -> Search:
    """The grid of one ``--strategies`` spec for ``tune``.

    ``|`` lists a parameter's values (they replace the declared grid for it); a parameter set to one
    value is fixed; every other parameter the strategy declares in ``tuning`` (and that neither the
    spec nor the registry preset sets) is searched over its declared values. Every setting is built
    once, so a value outside its range fails here, before any replay.
    """
    name, sep, rest = text.partition("@")
    name = name.strip()
    given: dict[str, tuple[Any, ...]] = {}
    fixed: dict[str, Any] = {}
    for item in filter(None, rest.split(",")) if sep else ():
        key, eq, values = item.partition("=")
        if not eq:
            raise strategies.StrategyError(f"strategy {text!r}: parameter {item!r} is not key=value")
        parsed = [strategies.parse_spec(f"x@v={v.strip()}").params["v"] for v in values.split("|")]
        if len(parsed) > 1:
            given[key.strip()] = tuple(dict.fromkeys(parsed))
        else:
            fixed[key.strip()] = parsed[0]
    cls, preset = strategies.resolve(name)
    declared = dict(getattr(cls, "tuning", {}) or {})
    if "trigger_tokens" in given or fixed.get("trigger_tokens") is not None:
        declared.pop(replaced_share(cls, preset) or "", None)  # the share trigger_tokens stands in for: not swept too
    grid = {k: tuple(v) for k, v in declared.items() if k not in fixed and k not in given and k not in preset}
    source = {k: "declared by the strategy" for k in grid}
    for k, v in given.items():
        grid[k], source[k] = v, "given"
    if not grid:
        hint = (f"{name} declares no tuning grid" if not declared else
                f"{name}'s tuning grid ({', '.join(declared)}) is fixed by the spec or its preset")
        raise TuneError(f"tune {text!r}: nothing to tune: {hint}; list the values to try with |, e.g. "
                        f"'{name}@{next(iter(declared), 'key')}=1|2|3'")
    numeric = {k: v for k, v in grid.items() if all(_is_number(x) for x in v)}
    grid = {k: tuple(sorted(v)) if k in numeric else v for k, v in grid.items()}
    defaults = {f.name: f.default for f in fields(cls) if f.default is not MISSING}
    defaults.update(preset)
    search = Search(text, name, fixed, grid, source,
                    {k: str(strategies.param_range(cls, k, defaults.get(k))[0]) for k in numeric},
                    {k: defaults.get(k) for k in grid})
    for setting in search.settings():
        strategies.build(search.spec(setting))  # type, range (check_params) and unknown names, named
    return search


def replaced_share(cls: type, preset: Mapping[str, Any]) -> str | None:
    """The share-of-the-window parameter a ``trigger_tokens`` sweep leaves at its default: the one
    ``trigger_tokens`` overrides on each call (bench.context.strategy ``arm_trigger_tokens``), or, where the
    agent has an absolute trigger of its own that ``trigger_tokens`` sets (Codex's ``auto_compact_limit``),
    the share the agent caps it with (Codex's 90%), so that the sweep is in tokens alone."""
    from bench.context.strategy import _share_param

    return _share_param(cls(**preset))


def _is_number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


@dataclass(frozen=True)
class Split:
    """Which traces choose (``train``) and which score the choice (``held_out``): disjoint, together all."""

    train: tuple[str, ...]
    held_out: tuple[str, ...]
    seed: int
    share: float
    strata: Mapping[str, tuple[int, int]]
    """Per stratum (scenario or agent): (training traces, held-out traces)."""


def stratum(info: Mapping[str, Any]) -> str:
    """A trace's stratum: its scenario for a synthetic one (``synthetic:long``), else its agent."""
    source = str(info.get("source") or "")
    if source.startswith("synthetic:"):
        return source
    return str(info.get("agent") or "unknown")


def split_traces(strata_of: Mapping[str, str], *, held_out: float = HELD_OUT, seed: int = 0) -> Split:
    """Split trace ids into a training and a held-out part, deterministically by ``seed``, stratified.

    Traces are ordered by stratum, and within it by a hash of (seed, id); a systematic draw along that
    order (an offset from the seed, then every 1/share-th) holds out round(n × share) traces, at least
    one and at most n − 1. Each stratum so gets its share within one trace, and the split depends only
    on the ids, their strata and the seed, never on the order traces were read in.
    """
    if not 0 < held_out < 1:
        raise TuneError(f"--held-out {held_out!r}: the share of traces held out must be between 0 and 1")
    ids = sorted(strata_of)
    n = len(ids)
    if n < 2:
        raise TuneError(f"tune needs at least 2 traces to choose on some and score on others, not {n}; "
                        "add traces (or --seeds for synthetic ones)")
    h = min(n - 1, max(1, math.floor(n * held_out + 0.5)))

    def digest(text: str) -> int:
        return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")

    order = sorted(ids, key=lambda t: (strata_of[t], digest(f"{seed}\0{t}")))
    offset = digest(f"offset\0{seed}") % n
    held = {t for i, t in enumerate(order) if (i + offset + 1) * h // n > (i + offset) * h // n}
    counts: dict[str, list[int]] = {}
    for t in order:
        counts.setdefault(strata_of[t], [0, 0])[t in held] += 1
    return Split(tuple(t for t in ids if t not in held), tuple(t for t in ids if t in held), seed, held_out,
                 {k: (v[0], v[1]) for k, v in sorted(counts.items())})


@dataclass(frozen=True)
class Interval:
    """A per-trace mean over one part with its bootstrap interval (95%)."""

    mean: float
    low: float
    high: float
    n: int


def mean_interval(rows: pd.DataFrame, metric: str, *, weights: pd.Series | None = None,
                  resamples: int = stats.DEFAULT_B, seed: int = 0) -> Interval:
    """The mean of ``metric`` over the traces of ``rows`` (one strategy's) with a percentile bootstrap
    interval; ``weights`` (per trace id, bench.decide.verdict.trace_weights) make it a weighted mean.

    It resamples traces exactly as the verdict's paired comparisons do (stats.paired_bootstrap, here
    of the values against zero), so an interval here and a difference there are on the same footing.
    """
    ok = rows[_ok(rows)]
    values = pd.to_numeric(ok[metric], errors="coerce") if metric in ok else pd.Series(dtype=float)
    keep = values.notna()
    values, traces = values[keep].to_numpy(dtype=float), ok.trace[keep]
    w = None
    if weights is not None and len(values):
        w = traces.map(weights).fillna(0.0).to_numpy(dtype=float)
        if not (w > 0).any():
            return Interval(math.nan, math.nan, math.nan, 0)
    c = stats.paired_bootstrap(np.zeros_like(values), values, resamples=resamples, seed=seed, weights=w)
    return Interval(c.mean_diff, c.ci_low, c.ci_high, c.n)


@dataclass(frozen=True)
class Neighbour:
    """A grid value next to the choice (the other parameters held), against the choice on the held-out part."""

    parameter: str
    value: Any
    spec: str
    cost: float
    retention: float
    overflows: float
    cost_diff: stats.PairedComparison
    retention_diff: stats.PairedComparison


@dataclass(frozen=True)
class SearchResult:
    """One strategy tuned: the choice on the training part and its figures on the held-out part."""

    search: Search
    chosen: str | None
    """The exact spec to ship, chosen on the training part (None: nothing met the objective there)."""
    train_verdict: Verdict
    held_out_verdict: Verdict
    held_out_best: str | None
    """The setting the held-out part would have chosen itself."""
    settings: pd.DataFrame
    """One row per setting: its figures on each part, and which is chosen, best held-out, the default."""
    train: dict[str, Any] = field(default_factory=dict)
    held_out: dict[str, Any] = field(default_factory=dict)
    """The chosen setting on the held-out part: ``cost`` / ``retention`` Intervals, overflows, traces."""
    gap: dict[str, stats.PairedComparison] = field(default_factory=dict)
    """Chosen − held-out best on the held-out part, per metric (paired over its traces)."""
    neighbours: tuple[Neighbour, ...] = ()


@dataclass(frozen=True)
class Tuning:
    run_dir: Path
    split: Split
    objective: str
    weighting: str
    results: tuple[SearchResult, ...]
    errors: list[tuple[str, str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _part(results: pd.DataFrame, traces: Sequence[str]) -> pd.DataFrame:
    return results[results.trace.isin(set(traces))]


def _ok(rows: pd.DataFrame) -> pd.Series:
    """The rows of tasks that finished (no harness error)."""
    return rows.get("error", pd.Series("", index=rows.index)).fillna("").astype(str) == ""


def _overflows(rows: pd.DataFrame) -> float:
    ok = rows[_ok(rows)]
    return float(pd.to_numeric(ok.overflows, errors="coerce").fillna(0).sum()) if "overflows" in ok else 0.0


def _means(rows: pd.DataFrame, weight: str | None) -> dict[str, dict[str, float]]:
    """Per strategy label, its per-trace means (``weight``, with the weights of all of ``rows``: the
    traces weigh the same for every setting) of cost and retention, and its overflows summed."""
    if rows.empty:
        return {}
    agg = aggregate(rows, weight).set_index("strategy")
    return {str(label): {m: float(agg.at[label, m]) if m in agg and pd.notna(agg.at[label, m]) else math.nan
                         for m in ("cost", "retention", "overflows")} for label in agg.index}


def _chosen(verdict: Verdict, labels: Sequence[str]) -> str | None:
    """The verdict's recommendation among ``labels`` (a baseline the objective needed is only a reference)."""
    if verdict.recommended in labels:
        return verdict.recommended
    if verdict.recommended is None:
        return None
    feasible = [c for c in verdict.candidates if c.feasible and c.strategy in labels]
    sign = 1.0 if verdict.goal.startswith("min-") else -1.0
    best = min(feasible, key=lambda c: (sign * c.goal_value, c.values.get("cost", math.inf), c.strategy), default=None)
    return best.strategy if best else None


def _needs_baseline(objective: str | None) -> bool:
    return any(c.relative and c.reference == BASELINE for c in check_objective(objective).constraints)


def assess(results: pd.DataFrame, searches: Sequence[Search], split: Split, *, objective: str | None = None,
           weight: str | None = "equal", summarizer: str | None = None, resamples: int = stats.DEFAULT_B,
           seed: int = 0) -> tuple[SearchResult, ...]:
    """Choose each search's setting on ``split.train``'s rows only, and score it on ``split.held_out``'s.

    A pure function of the results table (one row per trace × strategy), so a test can hand it a
    constructed one. ``none``'s rows, when present, are a reference for a none-relative objective,
    never a candidate.
    """
    if set(split.train) & set(split.held_out):
        raise TuneError("the training and held-out traces overlap")  # a split never does; a caller's might
    out = []
    for search in searches:
        labels = search.labels()
        keep = [*labels, BASELINE] if _needs_baseline(objective) else labels
        mine = results[results.strategy.isin(keep)]
        train_rows, held_rows = _part(mine, split.train), _part(mine, split.held_out)
        tv = decide(train_rows, objective, resamples=resamples, seed=seed, weight=weight, summarizer=summarizer)
        hv = decide(held_rows, objective, resamples=resamples, seed=seed, weight=weight, summarizer=summarizer)
        chosen, held_best = _chosen(tv, labels), _chosen(hv, labels)
        table = _settings_table(search, train_rows, held_rows, tv, hv, chosen, held_best, weight)
        result = SearchResult(search, chosen, tv, hv, held_best, table)
        if chosen is not None:
            result = _score(result, train_rows, held_rows, weight=weight, resamples=resamples, seed=seed)
        out.append(result)
    return tuple(out)


def _settings_table(search: Search, train_rows: pd.DataFrame, held_rows: pd.DataFrame, tv: Verdict, hv: Verdict,
                    chosen: str | None, held_best: str | None, weight: str | None) -> pd.DataFrame:
    labels = search.labels()
    parts = {"train": (train_rows, tv, _means(train_rows, weight)),
             "held_out": (held_rows, hv, _means(held_rows, weight))}
    rows = []
    for label in labels:
        setting = search.setting_of(label)
        row: dict[str, Any] = {"strategy": search.text, "spec": label, **{f"param:{k}": v for k, v in setting.items()}}
        for part, (frame, verdict, means) in parts.items():
            for metric in ("cost", "retention", "overflows"):
                row[f"{part}_{metric}"] = means.get(label, {}).get(metric, math.nan)
            row[f"{part}_traces"] = int(frame.trace[(frame.strategy == label) & _ok(frame)].nunique())
            cand = next((c for c in verdict.candidates if c.strategy == label), None)
            row[f"{part}_feasible"] = bool(cand.feasible) if cand is not None else False
        row["chosen"] = label == chosen
        row["held_out_best"] = label == held_best
        row["default"] = all(_same(v, search.defaults.get(k)) for k, v in setting.items())
        rows.append(row)
    table = pd.DataFrame(rows)
    for key in search.grid:  # values as given (an int stays an int when strategies' tables are stacked)
        table[f"param:{key}"] = table[f"param:{key}"].astype(object)
    return table


def _same(a: Any, b: Any) -> bool:
    if _is_number(a) and _is_number(b):
        return math.isclose(float(a), float(b))
    return a == b


def _score(result: SearchResult, train_rows: pd.DataFrame, held_rows: pd.DataFrame, *, weight: str | None,
           resamples: int, seed: int) -> SearchResult:
    """The chosen setting's figures: its training means, and on the held-out rows its means with
    intervals, the gap to the held-out best and its neighbours, all computed from held-out rows only."""
    chosen = result.chosen
    assert chosen is not None
    mine_train, mine_held = train_rows[train_rows.strategy == chosen], held_rows[held_rows.strategy == chosen]
    train_means, held_means = _means(train_rows, weight), _means(held_rows, weight)
    weights = trace_weights(held_rows, weight) if check_weight(weight) != "equal" else None
    train = {"traces": int(mine_train.trace[_ok(mine_train)].nunique()), "overflows": _overflows(mine_train),
             **{m: train_means.get(chosen, {}).get(m, math.nan) for m in ("cost", "retention")}}
    held = {"traces": int(mine_held.trace[_ok(mine_held)].nunique()), "overflows": _overflows(mine_held),
            "errors": int((~_ok(mine_held)).sum()),
            **{m: mean_interval(mine_held, m, weights=weights, resamples=resamples, seed=seed)
               for m in ("cost", "retention") if m in mine_held}}
    gap = {}
    if result.held_out_best is not None and result.held_out_best != chosen:
        gap = {m: paired(held_rows, result.held_out_best, chosen, m, resamples=resamples, seed=seed, weight=weight)
               for m in ("cost", "retention") if m in held_rows}
    neighbours = []
    search = result.search
    at = search.setting_of(chosen)
    for key, values in search.grid.items():
        i = next(j for j, v in enumerate(values) if _same(v, at[key]))
        for j in (i - 1, i + 1):
            if not 0 <= j < len(values):
                continue
            label = search.spec({**at, key: values[j]}).label
            means = held_means.get(label, {})
            neighbours.append(Neighbour(
                key, values[j], label, means.get("cost", math.nan), means.get("retention", math.nan),
                _overflows(held_rows[held_rows.strategy == label]),
                paired(held_rows, chosen, label, "cost", resamples=resamples, seed=seed, weight=weight),
                paired(held_rows, chosen, label, "retention", resamples=resamples, seed=seed, weight=weight)
                if "retention" in held_rows else stats.paired_bootstrap([], [])))
    return replace(result, train=train, held_out=held, gap=gap, neighbours=tuple(neighbours))


def tune(config: RunConfig, *, held_out: float = HELD_OUT, split_seed: int = 0, resamples: int = stats.DEFAULT_B,
         progress: bool = True) -> Tuning:
    """Tune every strategy of ``config.strategies`` (a bench.run.runner.RunConfig): one ordinary run of
    every setting on every trace (bench.run.runner.run), a split of the traces, the choice on the
    training part and its score on the held-out part; writes tune.json and tune.csv to the run folder.
    """
    from bench.run.runner import run

    if not config.strategies:
        raise TuneError("tune: name the strategies to tune with --strategies (e.g. codex, or "
                        "'codex@limit_fraction=0.5|0.7|0.9')")
    if not 0 < held_out < 1:
        raise TuneError(f"--held-out {held_out!r}: the share of traces held out must be between 0 and 1")
    check_objective(config.objective)
    check_weight(config.weight)
    texts = list(dict.fromkeys(t for s in config.strategies for t in s.split()))
    searches = [search_space(t) for t in texts]
    labels = list(dict.fromkeys(label for s in searches for label in s.labels()))
    if _needs_baseline(config.objective):
        labels.append(BASELINE)
    output = run(replace(config, strategies=tuple(labels)), progress=progress)
    info = json.loads((output.run_dir / "run.json").read_text(encoding="utf-8")).get("traces") or []
    strata_of = {str(t["id"]): stratum(t) for t in info}
    for trace in output.table.trace.unique() if len(output.table) else ():
        strata_of.setdefault(str(trace), "unknown")
    split = split_traces(strata_of, held_out=held_out, seed=split_seed)
    results = assess(output.table, searches, split, objective=config.objective, weight=config.weight,
                     summarizer=config.summarizer, resamples=resamples, seed=split_seed)
    tuning = Tuning(output.run_dir, split, check_objective(config.objective).text, weighting_text(config.weight),
                    results, output.errors, output.notes)
    write(tuning)
    return tuning


def write(tuning: Tuning) -> tuple[Path, Path]:
    """tune.json (the choices, their held-out figures, the gap, the sensitivity and the split) and tune.csv
    (one row per setting and strategy, both parts' figures)."""
    from bench.run.store import atomic_write

    data = to_dict(tuning)
    json_path, csv_path = tuning.run_dir / TUNE_JSON, tuning.run_dir / TUNE_CSV
    atomic_write(json_path, json.dumps(data, indent=2, default=_jsonable) + "\n")
    frames = [r.settings for r in tuning.results]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    params = [c for c in table.columns if str(c).startswith("param:")]
    table = table[[c for c in table.columns if c in ("strategy", "spec")] + params
                  + [c for c in table.columns if c not in ("strategy", "spec", *params)]]
    buffer = io.StringIO()
    table.to_csv(buffer, index=False, quoting=csv.QUOTE_MINIMAL)
    atomic_write(csv_path, buffer.getvalue())
    return json_path, csv_path


def _jsonable(x: Any) -> Any:
    if isinstance(x, float | np.floating):
        return None if not math.isfinite(float(x)) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return str(x)


def _finite(x: Any) -> Any:
    """NaN and infinities as null (JSON has neither), recursively; numpy scalars as Python ones."""
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_finite(v) for v in x]
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, float | np.floating):
        return float(x) if math.isfinite(float(x)) else None
    return x


def _pair(c: stats.PairedComparison) -> dict[str, Any]:
    return {"n": c.n, "mean_diff": c.mean_diff, "ci_low": c.ci_low, "ci_high": c.ci_high,
            "significant": c.significant, "verdict": c.verdict}


def to_dict(tuning: Tuning) -> dict[str, Any]:
    searches = []
    for r in tuning.results:
        s = r.search
        searches.append({
            "strategy": s.text, "name": s.name, "fixed": dict(s.fixed), "grid": {k: list(v) for k, v in s.grid.items()},
            "grid_source": dict(s.source), "ranges": dict(s.ranges), "defaults": dict(s.defaults),
            "ship": None if r.chosen is None else {"spec": r.chosen, "name": s.name,
                                                   "params": dict(strategies.parse_spec(r.chosen).params)},
            "train_verdict": r.train_verdict.sentence,
            "train": r.train,
            "held_out": {k: asdict(v) if isinstance(v, Interval) else v for k, v in r.held_out.items()},
            "held_out_best": r.held_out_best,
            "held_out_verdict": r.held_out_verdict.sentence,
            "gap_vs_held_out_best": {m: _pair(c) for m, c in r.gap.items()},
            "sensitivity": [{"parameter": n.parameter, "value": n.value, "spec": n.spec, "cost": n.cost,
                             "retention": n.retention, "overflows": n.overflows,
                             "cost_vs_chosen": _pair(n.cost_diff), "retention_vs_chosen": _pair(n.retention_diff)}
                            for n in r.neighbours],
            "settings": r.settings.to_dict(orient="records"),
        })
    sp = tuning.split
    return _finite({
        "objective": tuning.objective, "objective_expanded": _expanded(tuning.objective),
        "weighting": tuning.weighting, "run_dir": str(tuning.run_dir),
        "split": {"seed": sp.seed, "held_out_share": sp.share, "stratified_by": "scenario (synthetic) or agent",
                  "strata": {k: {"train": a, "held_out": b} for k, (a, b) in sp.strata.items()},
                  "train": list(sp.train), "held_out": list(sp.held_out)},
        "searches": searches,
        "errors": [{"trace": t, "strategy": s, "error": e} for t, s, e in tuning.errors],
    })


def _expanded(objective: str) -> str:
    """The objective's constraints and goal as the verdict applies them (``default`` spelled out)."""
    obj = check_objective(objective)
    return ",".join([*(c.text() for c in obj.constraints), obj.goal_text])


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _ci(metric: str, i: Interval) -> str:
    if i.n == 0 or not math.isfinite(i.mean):
        return "—"
    if i.n < 2:
        return f"{_fmt(metric, i.mean)} (1 trace, no interval)"
    return f"{_fmt(metric, i.mean)} (95% CI {_fmt(metric, i.low)} … {_fmt(metric, i.high)})"


def _diff(metric: str, c: stats.PairedComparison) -> str:
    if c.n == 0:
        return "—"
    if c.n >= 2 and c.ci_low == c.ci_high == 0:
        return "the same on every trace"
    fmt = _signed(metric)
    text = fmt(c.mean_diff)
    if c.n >= 2:
        text += f" (95% CI {fmt(c.ci_low)} … {fmt(c.ci_high)}{'' if c.significant else ', not significant'})"
    return text


FEW = 5
"""Fewer traces than this in a part: its intervals rest on too little to read much into; said so."""


def format_tuning(tuning: Tuning) -> str:
    """The console text: per strategy the grid on both parts, the spec to ship with its training and
    held-out figures, the gap to the held-out best and the sensitivity; within ``WIDTH`` columns."""
    sp = tuning.split
    strata = ", ".join(f"{k.removeprefix('synthetic:')} {a}+{b}" for k, (a, b) in sp.strata.items())
    objective = tuning.objective + (f" ({_expanded(tuning.objective)})" if tuning.objective != _expanded(
        tuning.objective) else "")
    lines = [f"split (seed {sp.seed}): {len(sp.train) + len(sp.held_out)} traces → {len(sp.train)} training (choose), "
             f"{len(sp.held_out)} held-out (score); training+held-out per stratum: {strata}",
             f"objective {objective}; {tuning.weighting}"]
    if min(len(sp.train), len(sp.held_out)) < FEW:
        lines.append(f"note: a part of fewer than {FEW} traces gives rough intervals; add traces or --seeds")
    for r in tuning.results:
        lines += ["", *_format_search(r)]
    return "\n".join(_wrap(line) for line in lines)


def _wrap(line: str) -> str:
    """A line of more than WIDTH columns broken at spaces, its continuations indented 4 more."""
    if len(line) <= WIDTH:
        return line
    lead = line[: len(line) - len(line.lstrip())]
    out, current = [], lead
    for word in line.lstrip().split(" "):
        if current.strip() and len(current) + 1 + len(word) > WIDTH:
            out.append(current)
            current = lead + "    " + word
        else:
            current = f"{current} {word}" if current.strip() else current + word
    out.append(current)
    return "\n".join(out)


def _format_search(r: SearchResult) -> list[str]:
    s = r.search
    grid = "; ".join(f"{k} in {', '.join(map(str, v))} ({s.source[k]}"
                     f"{', range ' + s.ranges[k] if k in s.ranges else ''})" for k, v in s.grid.items())
    lines = [f"tune {s.text}: {len(r.settings)} settings: {grid}"]
    shorts = [s.short(label) for label in r.settings.spec]
    w = min(30, max(7, *map(len, shorts)))
    group = f"{'training (chose)':-^28}  {'held-out (scores)':-^28}"
    lines.append(f"  {'':{w}}  {group}")
    lines.append(f"  {'setting':{w}}  {'$/trace':>8} {'retention':>9} {'overflows':>9}  "
                 f"{'$/trace':>8} {'retention':>9} {'overflows':>9}")
    for short, (_, row) in zip(shorts, r.settings.iterrows(), strict=True):
        marks = [m for m, on in (("chosen", row.chosen), ("held-out best", row.held_out_best),
                                 ("default", row["default"])) if on]
        lines.append(f"  {_cut(short, w):{w}}  {_fmt('cost', row.train_cost):>8} "
                     f"{_fmt('retention', row.train_retention):>9} {_fmt('overflows', row.train_overflows):>9}  "
                     f"{_fmt('cost', row.held_out_cost):>8} {_fmt('retention', row.held_out_retention):>9} "
                     f"{_fmt('overflows', row.held_out_overflows):>9}  {', '.join(marks)}".rstrip())
    if r.chosen is None:
        lines.append(f"  nothing to ship: on the training traces: {r.train_verdict.sentence}")
        return lines
    t, h = r.train, r.held_out
    lines.append(f"  ship: {r.chosen}")
    lines.append(f"    training ({t['traces']} traces, chosen on them): {_fmt('cost', t.get('cost', math.nan))} "
                 f"per trace, retention {_fmt('retention', t.get('retention', math.nan))}, "
                 f"{t['overflows']:,.0f} overflows")
    if "cost" in h and "retention" in h:
        lines.append(f"    held-out ({h['traces']} traces, not seen by the choice): {_ci('cost', h['cost'])} per "
                     f"trace, retention {_ci('retention', h['retention'])}, {h['overflows']:,.0f} overflows")
    else:
        lines.append(f"    held-out ({h['traces']} traces): no figures")
    if h.get("overflows", 0) > 0 or h.get("errors", 0) > 0:
        lines.append("    warning: on the held-out traces the choice " + " and ".join(
            w for w in (f"overflowed {h['overflows']:,.0f} calls" if h.get("overflows") else "",
                        f"failed {h['errors']} tasks" if h.get("errors") else "") if w))
    if r.held_out_best is None:
        lines.append(f"    held-out best: none: {r.held_out_verdict.sentence}")
    elif r.held_out_best == r.chosen:
        lines.append("    held-out best: the same setting (the held-out traces would have chosen it too): no gap")
    elif "cost" in r.gap and "retention" in r.gap:
        lines.append(f"    held-out best: {s.short(r.held_out_best)}; the choice minus it, on the held-out traces "
                     f"(how much the choice fits its training sample): cost {_diff('cost', r.gap['cost'])}, "
                     f"retention {_diff('retention', r.gap['retention'])}")
    else:
        lines.append(f"    held-out best: {s.short(r.held_out_best)}")
    if r.neighbours:
        lines.append("    sensitivity (held-out; each neighbouring grid value minus the choice, paired):")
        for n in r.neighbours:
            lines.append(f"      {n.parameter}={n.value}: cost {_diff('cost', n.cost_diff)}, retention "
                         f"{_diff('retention', n.retention_diff)}"
                         + (f", {n.overflows:,.0f} overflows" if n.overflows else ""))
    return lines
