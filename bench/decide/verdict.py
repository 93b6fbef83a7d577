"""From a results table to a decision: which strategy (and settings) to ship, and why.

A pure function of the results DataFrame (one row per trace × strategy, bench.scoring.metrics.results_table),
so it survives any change to how runs are stored. The user states what matters as an *objective*:
a goal (``min-cost`` or ``max-retention``, or ``min-<metric>`` / ``max-<metric>``) and constraints
(``overflows=0``, ``retention>=0.75``, ``retention>=none-0.05``, ``retention>=best``, ``cost<=1.5``).
The default is the cheapest strategy that never overflows, keeps at least 90% of the instruction rules
where the traces plant any (``instructions>=0.9``, DEFAULT_OBJECTIVE), and whose needle retention is not
significantly below the best retention among the strategies that meet those (``retention>=best``:
a paired bootstrap over the traces, 95%, weighted as ``--weight`` says). A baseline that overflows is
no reference: ``none`` overflows on exactly the sessions that need compacting, so "within 5 points of
none" could never be met there by anything that compacts. When no strategy acted at all (nothing
compacted, pruned or masked: every one ties with ``none``), the verdict says that no compaction is
needed, not "Ship X"; when nothing qualifies it says why and what would change it.

Aggregation, stated once: every metric is the mean over traces with equal weight per trace (the
default; ``--weight calls`` or ``tokens`` weighs each trace by its agent calls or its size in
tokens, ``trace_weights``), except the counts (``overflows``, ...), which are totals. Tasks that
ended in a harness error are never ranked: a strategy with any errored task is infeasible.
``overflows=0`` is implied unless the objective constrains ``overflows`` itself. The runner-up is
compared with the winner by a paired bootstrap on the goal's metric over the traces both ran
(bench.scoring.stats), with the same per-trace weights.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from bench.scoring.lazy import lazy

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:  # imported when first used, after the replays (bench.scoring.lazy says why)
    np, pd = lazy("numpy"), lazy("pandas")

from bench.scoring import stats

BASELINE = "none"
DEFAULT_OBJECTIVE = "overflows=0,instructions>=0.9,retention>=best,min-cost"
"""The cheapest strategy that never overflows, keeps at least 90% of the instruction file's rules (after each
compaction and at the end, pooled: bench.scoring.metrics ``instructions``) and loses no significant needle
retention to the best of those. Why the rules term: a strategy that drops CLAUDE.md or AGENTS.md breaks
every rule the user wrote, which no saving in dollars buys back (issue 27); 0.9, not 1.0, so that one rule
of ten cut short by a summary on one trace of several is tolerated, a lost instruction file is not. It
applies only where it can: a run whose traces plant no rules (the ``instructions`` scenarios plant them;
real sessions and the other scenarios do not) has no ``instructions`` value, and the term lapses with a
note instead of excluding every strategy (``decide``). ``skills`` is reported beside it but not held to
a floor: Claude Code itself re-injects invoked skills within a budget (5K tokens each, 25K in all), so a
skill cut short is the agent's design, not a failure."""
REFERENCES = (BASELINE, "best")
"""What a relative constraint is measured from: ``none``'s value (``retention>=none-0.05``), or the best
value among the strategies every other constraint admits, by a paired test (``retention>=best``)."""
COUNTED = ("overflows", "compactions", "events", "prefix_breaks", "unseen_references", "hidden_overflows", "rereads")
"""Metrics summed over traces (counts); every other metric is the mean per trace."""
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt, "=": math.isclose,
    "==": math.isclose}
_CONSTRAINT = re.compile(r"^\s*([a-z_]+)\s*(<=|>=|==|=|<|>)\s*(.+?)\s*$")
_GOAL = re.compile(r"^\s*(min|max)-([a-z_]+)\s*$")
_ALIASES = {"default": DEFAULT_OBJECTIVE}
WEIGHTS = {
    "equal": "equal weight per trace",
    "calls": "each trace weighted by its agent calls",
    "tokens": "each trace weighted by its size in tokens (the largest context any strategy sent for it)",
}
"""``--weight``: how traces count in the means, the verdict and the paired statistics."""
WEIGHT_HELP = ("how traces count in the means, the verdict and the paired comparisons: equal (default: every "
               "trace the same, so hundreds of tiny chats outweigh a few long sessions), calls (by agent calls) "
               "or tokens (by the session's size in tokens)")


def check_weight(weight: str | None) -> str:
    """``--weight``'s value, or a clear error."""
    w = weight or "equal"
    if w not in WEIGHTS:
        raise ValueError(f"--weight {w!r}: expected one of {', '.join(WEIGHTS)}")
    return w


def weighting_text(weight: str | None) -> str:
    """The verdict's and the report's statement of how the numbers were aggregated."""
    return f"{WEIGHTS[check_weight(weight)]}: means over traces, overflows summed"


def trace_weights(results: pd.DataFrame, weight: str | None = "equal") -> pd.Series:
    """One weight per trace (indexed by trace id) under ``weight``.

    A trace's calls are the most agent calls any strategy replayed for it (every strategy replays
    the whole session); its tokens are the largest context any strategy sent for it (``none``'s
    last prompt: the whole session). Both are properties of the trace, the same for every strategy,
    so paired comparisons stay paired. Errored tasks (no numbers) are left out; a trace none
    finished weighs 0.
    """
    w = check_weight(weight)
    traces = pd.Index(pd.unique(results.trace), name="trace") if len(results) else pd.Index([], name="trace")
    if w == "equal":
        return pd.Series(1.0, index=traces)
    ok = results[results.get("error", pd.Series("", index=results.index)).fillna("").astype(str) == ""]
    column = {"calls": "calls", "tokens": "peak_context"}[w]
    if column not in ok:
        raise ValueError(f"--weight {w}: the results have no {column} column to weigh traces by")
    size = pd.to_numeric(ok[column], errors="coerce").groupby(ok.trace).max()
    return size.reindex(traces).fillna(0.0).clip(lower=0.0).astype(float)


class ObjectiveError(ValueError):
    """An objective that cannot be parsed or names a metric the run does not have."""


@dataclass(frozen=True)
class Constraint:
    metric: str
    op: str
    value: float
    relative: bool = False
    """True when ``value`` is an offset from a reference's value (``retention>=none-0.05``)."""
    reference: str = BASELINE
    """``none`` or ``best`` (not significantly below the best the other constraints admit)."""

    def text(self) -> str:
        if self.relative:
            return f"{self.metric}{self.op}{self.reference}{self.value:+g}" if self.value else \
                f"{self.metric}{self.op}{self.reference}"
        return f"{self.metric}{self.op}{self.value:g}"

    def describe(self) -> str:
        """Plain words for the verdict sentence."""
        if self.metric == "overflows" and self.op in ("=", "==") and self.value == 0:
            return "zero overflows"
        if self.reference == "best":
            what = "needle retention" if self.metric == "retention" else self.metric
            return f"{what} not significantly {'below' if self.op.startswith('>') else 'above'} the best of " \
                   "those (paired bootstrap, 95%)"
        if self.metric in ("instructions", "skills") and not self.relative and self.op in (">=", ">"):
            what = "instruction rules" if self.metric == "instructions" else "skill rules"
            return f"{what} kept {'at least' if self.op == '>=' else 'above'} {_fmt(self.metric, self.value)}"
        if self.relative and self.metric == "retention" and self.op == ">=":
            return f"needle retention within {abs(self.value) * 100:g} points of none" if self.value else \
                "needle retention at least none's"
        target = f"none{self.value:+g}" if self.relative else _fmt(self.metric, self.value)
        return f"{self.metric} {self.op} {target}"


@dataclass(frozen=True)
class Objective:
    goal: str
    """The metric optimised, e.g. ``cost``."""
    maximize: bool
    constraints: tuple[Constraint, ...]
    text: str

    @property
    def goal_text(self) -> str:
        return f"{'max' if self.maximize else 'min'}-{self.goal}"


def parse_objective(text: str | None) -> Objective:
    """``overflows=0,retention>=0.75,min-cost`` → Objective; None or ``default`` → DEFAULT_OBJECTIVE.

    ``min-cost`` and ``max-retention`` alone keep the implied ``overflows=0``.
    """
    raw = (text or "default").strip()
    expanded = _ALIASES.get(raw, raw)
    goal, maximize = "cost", False
    constraints: list[Constraint] = []
    for item in filter(None, (part.strip() for part in expanded.split(","))):
        if m := _GOAL.match(item):
            goal, maximize = m.group(2), m.group(1) == "max"
            continue
        m = _CONSTRAINT.match(item)
        if not m:
            raise ObjectiveError(f"objective {raw!r}: {item!r} is neither a goal (min-cost, max-retention) "
                                 "nor a constraint such as overflows=0, retention>=0.75 or retention>=none-0.05")
        metric, op, value = m.groups()
        reference = next((r for r in REFERENCES if value.startswith(r)), BASELINE)
        relative = value.startswith(reference)
        number = value.removeprefix(reference).replace("$", "").replace(" ", "") if relative else \
            value.replace("$", "").replace(" ", "")
        scale = 0.01 if number.endswith("%") else 1.0
        try:
            offset = float(number.rstrip("%")) * scale if number else 0.0
        except ValueError:
            raise ObjectiveError(f"objective {raw!r}: {value!r} in {item!r} is not a number "
                                 "(or none, none-0.05, 75%)") from None
        if reference == "best" and (offset or op not in (">=", "<=")):
            raise ObjectiveError(f"objective {raw!r}: {item!r}: a best-relative constraint is {metric}>=best "
                                 f"or {metric}<=best (not significantly worse than the best), without an offset")
        constraints.append(Constraint(metric, op, offset, relative, reference))
    if not any(c.metric == "overflows" for c in constraints):
        constraints.insert(0, Constraint("overflows", "=", 0.0))
    return Objective(goal, maximize, tuple(constraints), raw)


def check_objective(text: str | None) -> Objective:
    """``--objective`` parsed, and every metric it names one a run can measure (bench.scoring.metrics.METRICS):
    refused before any replay, not after it."""
    from bench.scoring.metrics import METRICS

    obj = parse_objective(text)
    known = {m.name for m in METRICS}
    for name in (obj.goal, *(c.metric for c in obj.constraints)):
        if name not in known:
            raise ObjectiveError(f"objective {obj.text!r}: no metric {name!r}; a run measures "
                                 f"{', '.join(sorted(known))}")
    return obj


FRACTIONS = ("retention", "compaction_retention", "instructions", "skills", "llm_recall", "saving_vs_none",
             "cache_hit_rate")
"""Metrics shown as percentages (and their differences in points)."""


def _fmt(metric: str, v: float) -> str:
    if not np.isfinite(v):
        return "—"
    if metric.startswith("cost"):
        return f"${v:,.2f}" if abs(v) >= 1 else f"${v:,.3f}" if abs(v) >= 0.01 else f"${v:,.4f}"
    if metric in FRACTIONS:
        return f"{v:.1%}"
    return f"{v:,.0f}" if metric in COUNTED or abs(v) >= 100 else f"{v:,.3g}"


def label_spec(label: str) -> tuple[str, dict[str, Any]]:
    """``codex@limit_fraction=0.5`` → (``codex``, {"limit_fraction": 0.5}): what to ship, exactly."""
    name, _, rest = label.partition("@")
    params: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        try:
            params[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            params[key.strip()] = value.strip()
    return name.strip(), params


def with_params(results: pd.DataFrame) -> pd.DataFrame:
    """``results`` plus ``family`` and one ``param:<key>`` column per parameter any label sets.

    Sweep settings become columns (``df.groupby("param:limit_fraction")``), not only text inside
    the strategy label; empty where a label leaves the parameter at the strategy's default.
    """
    specs = {s: label_spec(str(s)) for s in results.strategy.unique()} if len(results) else {}
    keys = sorted({k for _, p in specs.values() for k in p})
    out = results.assign(family=results.strategy.map(lambda s: specs[s][0]))
    for k in keys:
        out[f"param:{k}"] = out.strategy.map(lambda s, k=k: specs[s][1].get(k))
    return out


def aggregate(results: pd.DataFrame, weight: str | None = "equal") -> pd.DataFrame:
    """One row per strategy: mean per trace (``weight``: equal by default), totals for counts, errored
    tasks counted."""
    rows = results.assign(error=results.get("error", pd.Series("", index=results.index)).fillna("").astype(str))
    ok = rows[rows.error == ""]
    numeric = [c for c in ok.columns if c not in ("trace", "strategy", "failed", "error")
               and pd.api.types.is_numeric_dtype(ok[c]) and not pd.api.types.is_bool_dtype(ok[c])]
    g = ok.groupby("strategy")
    out = g[numeric].mean() if check_weight(weight) == "equal" else _weighted_means(ok, numeric, weight)
    for c in COUNTED:
        if c in out:
            out[c] = g[c].sum()
    out["traces"] = g.size()
    errors = rows.groupby("strategy").error.apply(lambda e: int((e != "").sum()))
    out = out.reindex(errors.index)
    out["errors"] = errors
    out["traces"] = out.traces.fillna(0).astype(int)
    return out.reset_index()


def _weighted_means(ok: pd.DataFrame, numeric: Sequence[str], weight: str | None) -> pd.DataFrame:
    """Per strategy, Σ w·x / Σ w over the traces where x is measured (NaN where their weights sum to 0)."""
    w = ok.trace.map(trace_weights(ok, weight)).astype(float)
    values = ok[list(numeric)].apply(pd.to_numeric, errors="coerce").astype(float)
    have = values.notna()
    num = values.fillna(0.0).mul(w, axis=0).groupby(ok.strategy).sum()
    den = have.mul(w, axis=0).groupby(ok.strategy).sum()
    return num / den.where(den > 0)


@dataclass(frozen=True)
class Candidate:
    strategy: str
    feasible: bool
    goal_value: float
    reasons: tuple[str, ...]
    """Why it was excluded (empty when feasible)."""
    values: dict[str, float]


@dataclass(frozen=True)
class Verdict:
    objective: str
    goal: str
    recommended: str | None
    runner_up: str | None
    sentence: str
    binding: tuple[str, ...]
    """The constraints that excluded a strategy better on the goal than the recommendation."""
    comparison: dict[str, Any] | None
    candidates: tuple[Candidate, ...]
    notes: tuple[str, ...] = ()
    weighting: str = "equal weight per trace: means over traces, overflows summed"
    extra: dict[str, Any] = field(default_factory=dict)
    robustness: dict[str, Any] | None = None
    """Whether the choice survives changes of window, cache TTL, prices, weighting and scenario
    (bench.run.robustness; None until it is measured)."""

    @property
    def excluded(self) -> dict[str, tuple[str, ...]]:
        return {c.strategy: c.reasons for c in self.candidates if not c.feasible}

    def ship(self) -> dict[str, Any] | None:
        """The exact spec to ship: name, parameters and the label to pass to ``--strategies``."""
        if self.recommended is None:
            return None
        name, params = label_spec(self.recommended)
        return {"spec": self.recommended, "name": name, "params": params}

    def to_json(self) -> str:
        data = {"sentence": self.sentence, "objective": self.objective, "goal": self.goal,
                "weighting": self.weighting, "ship": self.ship(), "runner_up": self.runner_up,
                "binding_constraints": list(self.binding), "comparison": self.comparison,
                "notes": list(self.notes), "extra": self.extra, "robustness": self.robustness,
                "candidates": [{**asdict(c), "values": {k: (None if not np.isfinite(v) else v)
                                                        for k, v in c.values.items()},
                                "goal_value": None if not np.isfinite(c.goal_value) else c.goal_value}
                               for c in self.candidates]}
        return json.dumps(data, indent=2, default=str)


def _check(c: Constraint, value: float, base: float | None) -> str | None:
    """None when ``value`` meets ``c``; else the reason, in words."""
    target = c.value
    if c.relative:
        if base is None or not np.isfinite(base):
            return None  # no baseline to be relative to: noted once, not held against anyone
        target = base + c.value
    if not np.isfinite(value):
        return f"no {c.metric} measured"
    if _OPS[c.op](value, target) if c.op not in ("=", "==") else math.isclose(value, target, abs_tol=1e-12):
        return None
    if c.metric == "overflows":
        return f"overflowed {value:,.0f} call{'s' * (value != 1)}"
    shown = f"{c.metric} {_fmt(c.metric, value)}, not {c.op} {_fmt(c.metric, target)}"
    if c.relative:
        shown += f" (none {_fmt(c.metric, base)} {c.value * 100:+g} pts)" if c.metric == "retention" else \
            f" (none {_fmt(c.metric, base)} {c.value:+g})"
    return shown.replace("-", "−") if c.relative else shown


def _lapsed(c: Constraint) -> str:
    """The note for a constraint on a metric the run did not measure (it excludes nobody)."""
    if c.metric in ("instructions", "skills"):
        kind = "instruction" if c.metric == "instructions" else "skill"
        return f"{c.text()} not applied: no trace of this run plants {kind} rules (the instructions scenarios do)"
    return f"{c.text()} not applied: this run measured no {c.metric}"


def decide(results: pd.DataFrame, objective: str | Objective | None = None, *, resamples: int = stats.DEFAULT_B,
           seed: int = 0, weight: str | None = "equal", summarizer: str | None = None) -> Verdict:
    """The recommended strategy under ``objective``, why, and the runner-up with a paired bootstrap
    (means and the bootstrap weighted per trace by ``weight``)."""
    obj = objective if isinstance(objective, Objective) else parse_objective(objective)
    weighting = weighting_text(weight)
    agg = aggregate(results, weight) if len(results) else pd.DataFrame(columns=["strategy", "errors"])
    notes: list[str] = []
    strict = obj.text not in _ALIASES  # the default's retention clause simply lapses in a run without probes
    for name in sorted({obj.goal, *(c.metric for c in obj.constraints if strict)}):
        if name not in agg:
            raise ObjectiveError(f"objective {obj.text!r}: the run has no metric {name!r}; "
                                 f"it has {', '.join(c for c in agg.columns if c not in ('strategy',))}")
    base_row = agg[agg.strategy == BASELINE]
    base_overflows = float(base_row.overflows.iloc[0]) if len(base_row) and "overflows" in base_row else 0.0
    constraints = []
    for c in obj.constraints:
        if c.metric not in agg:
            notes.append(_lapsed(c))
            continue
        if c.reference == "best":
            if not agg[c.metric].notna().any():
                notes.append(_lapsed(c))
                continue
            constraints.append((c, None))
            continue
        base = float(base_row[c.metric].iloc[0]) if c.relative and len(base_row) else None
        if c.relative and (base is None or not np.isfinite(base)):
            notes.append(f"{c.text()} not applied: this run has no {c.metric} for none")
            continue
        if c.relative and base_overflows > 0:  # an overflowing baseline is no reference (its calls were refused)
            notes.append(f"{c.text()} not applied: none overflowed {base_overflows:,.0f} calls, so it is no "
                         "reference")
            continue
        if not c.relative and not agg[c.metric].notna().any():
            notes.append(_lapsed(c))
            continue
        constraints.append((c, base))
    reasons_of: dict[str, list[str]] = {}
    for _, r in agg.iterrows():
        reasons = [f"harness error on {int(r.errors)} trace{'s' * (r.errors != 1)}"] if r.errors else []
        if not r.traces:  # every task errored: there is nothing to hold against the constraints
            reasons = reasons or ["no finished task"]
        else:
            reasons += [why for c, base in constraints
                        if c.reference != "best" and (why := _check(c, float(r[c.metric]), base))]
        reasons_of[str(r.strategy)] = reasons
    for c, _ in constraints:  # the best of what the other constraints admit, and what is not worse by a paired test
        if c.reference == "best":
            _against_best(c, agg, results, reasons_of, resamples=resamples, seed=seed, weight=weight, notes=notes)
    candidates = []
    for _, r in agg.iterrows():
        reasons = reasons_of[str(r.strategy)]
        goal = float(r[obj.goal]) if np.isfinite(r[obj.goal]) else math.nan
        candidates.append(Candidate(str(r.strategy), bool(not reasons and np.isfinite(goal)), goal,
                                    tuple(reasons or ([] if np.isfinite(goal) else [f"no {obj.goal} measured"])),
                                    {k: float(r[k]) for k in ("cost", "retention", "overflows", "saving_vs_none")
                                     if k in r and pd.notna(r[k])}))
    sign = -1.0 if obj.maximize else 1.0

    def rank(c: Candidate) -> tuple[float, float, str]:  # ties: the cheaper, then by name
        return (sign * c.goal_value, c.values.get("cost", math.inf), c.strategy)

    ordered = sorted(candidates, key=lambda c: (not np.isfinite(c.goal_value), *rank(c)))
    feasible = [c for c in ordered if c.feasible]
    words = " and ".join(c.describe() for c, _ in constraints) or "no constraint"
    goal_words = "cheapest strategy" if obj.goal == "cost" and not obj.maximize else \
        f"strategy with the {'highest' if obj.maximize else 'lowest'} {obj.goal}"
    measured = _retention_measures(summarizer)
    if measured and any(c.metric in ("retention", "compaction_retention") for c, _ in constraints):
        notes.append(f"retention measures what survives {measured}; it is not a real model's summary quality")
    if _nothing_acted(agg):
        sentence = (f"No compaction is needed on these sessions: none of the {len(agg)} strategies compacted, "
                    "pruned or masked anything (every one ties with none, with no overflow). Ship nothing, or "
                    "run longer sessions to choose one.")
        return Verdict(obj.text, obj.goal_text, None, None, sentence, (), None, tuple(candidates), tuple(notes),
                       weighting, {"no_compaction_needed": True})
    if not feasible:
        closest = min(ordered, key=lambda c: (len(c.reasons), *rank(c)), default=None)
        sentence = f"No strategy meets the objective ({words})."
        if closest is not None:
            sentence += f" Closest: {closest.strategy} ({'; '.join(closest.reasons)})."
        sentence += _what_would_change(results, candidates)
        return Verdict(obj.text, obj.goal_text, None, None, sentence, (), None, tuple(candidates), tuple(notes),
                       weighting)
    best = feasible[0]
    better = [c for c in ordered if not c.feasible and np.isfinite(c.goal_value) and rank(c) < rank(best)]
    binding = _binding(better, constraints)
    sentence = (f"Ship {best.strategy}: the {goal_words} with {words} "
                f"({_per_trace(obj.goal, best.goal_value)}")
    if obj.goal != "retention" and "retention" in best.values:
        sentence += f", retention {best.values['retention']:.1%}"
    sentence += ")"
    if better:
        first = better[0]
        sentence += (f"; the binding constraint is {binding[0]}: {first.strategy} would be "
                     f"{'better' if obj.goal != 'cost' or obj.maximize else 'cheaper'} "
                     f"({_per_trace(obj.goal, first.goal_value)}) but {first.reasons[0]}")
        if len(better) > 1:
            sentence += f", as would {len(better) - 1} more"
    else:
        sentence += "; no constraint binds: nothing excluded was " + ("better" if obj.goal != "cost" or obj.maximize
                                                                      else "cheaper")
    comparison = None
    runner = feasible[1] if len(feasible) > 1 else None
    if runner is not None:
        c = paired(results, best.strategy, runner.strategy, obj.goal, resamples=resamples, seed=seed, weight=weight)
        comparison = {"a": best.strategy, "b": runner.strategy, "metric": obj.goal, **asdict(c),
                      "significant": c.significant, "verdict": c.verdict}
        sentence += (f". Runner-up: {runner.strategy} ({_per_trace(obj.goal, runner.goal_value)}), "
                     f"{describe_pair(c, obj.goal, runner.strategy, best.strategy)}.")
    else:
        sentence += ". No runner-up: nothing else meets the objective."
    return Verdict(obj.text, obj.goal_text, best.strategy, runner.strategy if runner else None, sentence,
                   binding, comparison, tuple(candidates), tuple(notes), weighting)


def _against_best(c: Constraint, agg: pd.DataFrame, results: pd.DataFrame, reasons_of: dict[str, list[str]], *,
                  resamples: int, seed: int, weight: str | None, notes: list[str]) -> None:
    """``retention>=best``: among the strategies no other constraint excluded, the one with the best
    value is the reference; each other one is excluded when a paired bootstrap over the traces both
    finished says it is significantly worse (95%), and kept when the difference is within noise. On
    fewer than two paired traces there is no noise to measure, so any loss excludes."""
    values = agg.set_index("strategy")[c.metric]
    admitted = [s for s, why in reasons_of.items() if not why and np.isfinite(values.get(s, math.nan))]
    if not admitted:
        notes.append(f"{c.text()} not applied: no strategy met the other constraints")
        return
    higher = c.op.startswith(">")
    best = max(admitted, key=lambda s: (values[s] if higher else -values[s], s == BASELINE))
    wide = per_trace(results, c.metric)  # one pivot for every pair against the best
    for s in admitted:
        if s == best:
            continue
        p = paired(results, best, s, c.metric, resamples=resamples, seed=seed, weight=weight, wide=wide)
        worse = values[s] < values[best] if higher else values[s] > values[best]
        if p.n < 2 and worse:  # no test on fewer than two paired traces: any loss counts, said as such
            reasons_of[s].append(f"{c.metric} {_fmt(c.metric, values[s])}, below {best}'s "
                                 f"{_fmt(c.metric, values[best])} ({p.n} paired trace{'s' * (p.n != 1)}: "
                                 "too few to call it noise)")
            continue
        if p.significant and (p.mean_diff < 0 if higher else p.mean_diff > 0):
            fmt = _signed(c.metric)
            reasons_of[s].append(f"{c.metric} {_fmt(c.metric, values[s])}, significantly "
                                 f"{'below' if higher else 'above'} {best}'s {_fmt(c.metric, values[best])} "
                                 f"({fmt(p.mean_diff)}, 95% CI {fmt(p.ci_low)} … {fmt(p.ci_high)})")


def _nothing_acted(agg: pd.DataFrame) -> bool:
    """No strategy changed anything: no event of any kind and no overflow in any finished task, so
    every strategy sent what ``none`` sent."""
    done = agg[agg.traces > 0]
    if done.empty or "events" not in done or len(done) < 2:
        return False
    overflows = done.overflows if "overflows" in done else pd.Series(0, index=done.index)
    return bool((done.events.fillna(0) == 0).all() and (overflows.fillna(0) == 0).all())


def _what_would_change(results: pd.DataFrame, candidates: Sequence[Candidate]) -> str:
    """What would let a strategy qualify, when nothing does: when every strategy overflowed, the window
    these sessions need (the smallest peak any strategy reached)."""
    if candidates and all(c.values.get("overflows", 0) > 0 for c in candidates if c.values) \
            and "peak_context" in results:
        ok = results[results.get("error", pd.Series("", index=results.index)).fillna("").astype(str) == ""]
        peaks = pd.to_numeric(ok.peak_context, errors="coerce").groupby(ok.strategy).max().dropna()
        if len(peaks):
            return (f" Every strategy overflows: these sessions need a window larger than {peaks.min():,.0f} tokens "
                    f"(the smallest peak any strategy reached, {peaks.idxmin()}'s), or a strategy that compacts "
                    "sooner.")
    return ""


RETENTION_SOURCES = {
    "extractive": "the extractive stand-in summarizer (offline, deterministic, written to each agent's template "
                  "and its recorded summary size)",
    "recorded": "the summaries the sessions recorded",
}


def _retention_measures(summarizer: str | None) -> str:
    """Which summaries a retention figure went through (a stand-in's quality is not a strategy's)."""
    if not summarizer:
        return ""
    return RETENTION_SOURCES.get(summarizer, f"a real model's summaries ({summarizer})")


def _binding(better: Sequence[Candidate], constraints: Sequence[tuple[Constraint, float | None]]) -> tuple[str, ...]:
    """Constraints that excluded some better candidate, most often first."""
    counts: dict[str, int] = {}
    for c in better:
        for reason in c.reasons:
            key = "harness errors" if reason.startswith("harness error") else next(
                (k.describe() for k, _ in constraints if reason.startswith(k.metric) or
                 (k.metric == "overflows" and reason.startswith("overflowed"))), reason)
            counts[key] = counts.get(key, 0) + 1
    return tuple(sorted(counts, key=lambda k: -counts[k]))


def _per_trace(metric: str, v: float) -> str:
    if metric in COUNTED:
        return f"{_fmt(metric, v)} {metric} in total"
    return f"{_fmt(metric, v)} {'per trace' if metric.startswith('cost') else 'mean per trace'}" \
        if metric.startswith("cost") else f"{metric} {_fmt(metric, v)}"


def per_trace(results: pd.DataFrame, metric: str) -> pd.DataFrame:
    """``metric`` of every trace (rows) and strategy (columns) that finished without error: what
    ``paired`` pairs. A caller comparing many pairs on one metric builds it once and passes it."""
    ok = results[results.get("error", pd.Series("", index=results.index)).fillna("").astype(str) == ""]
    return ok.pivot_table(index="trace", columns="strategy", values=metric, aggfunc="first")


def paired(results: pd.DataFrame, a: str, b: str, metric: str = "cost", *, resamples: int = stats.DEFAULT_B,
           seed: int = 0, weight: str | None = "equal", wide: pd.DataFrame | None = None) -> stats.PairedComparison:
    """Paired bootstrap of mean(b − a) on ``metric`` over the traces both finished without error
    (``weight``: how each trace counts, ``trace_weights``; ``wide``: ``per_trace(results, metric)`` if
    the caller has it)."""
    if wide is None:
        wide = per_trace(results, metric)
    if a not in wide or b not in wide:
        return stats.paired_bootstrap([], [], resamples=resamples, seed=seed)
    pair = wide[[a, b]].dropna()
    w = None
    if check_weight(weight) != "equal":
        w = trace_weights(results, weight).reindex(pair.index).fillna(0.0)
        pair, w = pair[w > 0], w[w > 0]  # a trace of zero weight does not count
    return stats.paired_bootstrap(pair[a], pair[b], resamples=resamples, seed=seed,
                                  weights=None if w is None else w.to_numpy())


def describe_pair(c: stats.PairedComparison, metric: str, b: str, a: str) -> str:
    """``+$0.07 per trace vs A (95% CI +$0.02 … +$0.12, significant)`` in words."""
    if c.n == 0:
        return f"no trace in common with {a}"
    fmt = _signed(metric)
    ci = f", 95% CI {fmt(c.ci_low)} … {fmt(c.ci_high)}" if c.n >= 2 else ""
    per = " per trace" if metric not in ("retention",) else ""
    word = "significant" if c.significant else c.verdict
    return f"{fmt(c.mean_diff)}{per} vs {a} over {c.n} paired trace{'s' * (c.n != 1)}{ci}: {word}"


def _signed(metric: str) -> Callable[[float], str]:
    def fmt(v: float) -> str:
        if not np.isfinite(v):
            return "—"
        if v == 0:
            return "0"
        sign = "+" if v > 0 else "−"
        if metric in FRACTIONS:
            return f"{sign}{abs(v) * 100:.1f} pts"
        return sign + _fmt(metric, abs(v))
    return fmt


def neighbours(results: pd.DataFrame, metric: str = "cost", *, resamples: int = stats.DEFAULT_B,
               seed: int = 0, weight: str | None = "equal") -> pd.DataFrame:
    """Paired comparisons between neighbouring settings of every one-parameter sweep in ``results``.

    A family run at two or more settings that differ in exactly one numeric parameter is ordered
    by that parameter; each row compares a setting (``a``) with the next (``b``): ``b − a``.
    """
    cols = ["family", "parameter", "a", "b", "value_a", "value_b", "metric", "n", "mean_diff", "ci_low", "ci_high",
            "verdict", "text"]
    rows = []
    wide: pd.DataFrame | None = None
    for family, key, members in sweep_members(results):
        wide = per_trace(results, metric) if wide is None else wide  # one pivot for every neighbouring pair
        for (va, a), (vb, b) in zip(members, members[1:], strict=False):
            c = paired(results, a, b, metric, resamples=resamples, seed=seed, weight=weight, wide=wide)
            rows.append({"family": family, "parameter": key, "a": a, "b": b, "value_a": va, "value_b": vb,
                         "metric": metric, "n": c.n, "mean_diff": c.mean_diff, "ci_low": c.ci_low,
                         "ci_high": c.ci_high, "verdict": c.verdict,
                         "text": f"{vb} vs {va}: {describe_pair(c, metric, b, a).split(' vs ')[0]}"
                                 + (f", 95% CI {_signed(metric)(c.ci_low)} … {_signed(metric)(c.ci_high)}"
                                    if c.n >= 2 else "") + f" ({'significant' if c.significant else c.verdict})"})
    return pd.DataFrame(rows, columns=cols)


def sweep_members(results: pd.DataFrame) -> list[tuple[str, str, list[tuple[Any, str]]]]:
    """(family, parameter, [(value, label), ...] in value order) for each one-parameter numeric sweep."""
    labels = [str(s) for s in dict.fromkeys(results.strategy)] if len(results) else []
    families: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for label in labels:
        name, params = label_spec(label)
        families.setdefault(name, []).append((label, params))
    out = []
    for family, members in families.items():
        keys = {k for _, p in members for k in p}
        varying = [k for k in sorted(keys) if len({repr(p.get(k)) for _, p in members}) > 1]
        if len(varying) != 1:
            continue
        key = varying[0]
        numeric = [(p[key], label) for label, p in members
                   if isinstance(p.get(key), int | float) and not isinstance(p.get(key), bool)]
        if len(numeric) >= 2:
            out.append((family, key, sorted(numeric)))
    return out


def feasible_mask(totals: pd.DataFrame) -> pd.Series:
    """True for strategies that may stand on a Pareto front or get a "best" badge: no overflow, no error."""
    ok = pd.Series(True, index=totals.index)
    if "overflows" in totals:
        ok &= pd.to_numeric(totals.overflows, errors="coerce").fillna(0) == 0
    if "errors" in totals:
        ok &= pd.to_numeric(totals.errors, errors="coerce").fillna(0) == 0
    return ok
