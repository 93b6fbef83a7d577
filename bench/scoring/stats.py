"""Spread and significance: percentiles with their n, paired bootstrap CIs, summary sizes.

Never a bare mean (style.md §9): distributions get p50/p90/p99/p99.9 *with n*; a comparison of
two strategies pairs them on the same traces and reports the mean difference with a paired
bootstrap 95% interval (the Complexity Trap's method, evaluation.md §A1: nonparametric, paired,
B=10,000 in the paper), and says "not significant" when the interval holds zero.

Weights: a pair (a trace) may carry a weight (``--weight calls|tokens``, bench.decide.verdict.trace_weights);
the mean difference is then the weighted mean, and each bootstrap resample takes the weighted mean
of the pairs it drew, so a few long sessions count as much as their size says and no more.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.scoring.lazy import lazy

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:  # imported when first used, after the replays (bench.scoring.lazy says why)
    np, pd = lazy("numpy"), lazy("pandas")

QUANTILES: tuple[float, ...] = (50, 90, 99, 99.9)
DEFAULT_B = 2_000
REPORT_B = 10_000
"""Resamples in report mode (the Complexity Trap's B)."""
SUMMARY_RESERVE = 20_000
"""Fallback output reserve, when a summary does not record its own ``max_tokens``: Claude Code's
20K (MAX_OUTPUT_TOKENS_FOR_SUMMARY), justified by the seed's p99.99 of 17,387."""
NOT_SIGNIFICANT = "not significant"


def _label(q: float) -> str:
    return f"p{q:g}"


def percentiles(values: Sequence[float] | np.ndarray | pd.Series, qs: Sequence[float] = QUANTILES) -> dict[str, float]:
    """{"n": count, "p50": ..., ...} with numpy's linear interpolation; NaN percentiles when n=0."""
    arr = np.asarray(values, dtype=float)
    arr = arr[~np.isnan(arr)]
    out: dict[str, float] = {"n": int(arr.size)}
    for q in qs:
        out[_label(q)] = float(np.percentile(arr, q)) if arr.size else float("nan")
    return out


def summary_sizes(summaries: pd.DataFrame, reserve: int = SUMMARY_RESERVE,
                  qs: Sequence[float] = QUANTILES) -> pd.DataFrame:
    """Per strategy: n, percentiles and max of summary tokens, and how many exceed the output reserve.

    ``summaries`` has SummaryRecord columns (``strategy``, ``tokens``). Each summary is tested
    against its own strategy's reserve, the ``max_tokens`` it asked the summarizer for (OpenCode
    32K, Claude Code 20K, Cline 4,096, Codex the model's max output, ...), when the records carry
    that column; ``reserve`` stands in where they do not. A summary longer than its reserve would
    have been cut off in the real agent. ``reserve`` in the output is the strategy's largest
    reserve and ``reserve_source`` says which of the two was used.
    """
    cols = ["strategy", "n", *(_label(q) for q in qs), "max", "reserve", "reserve_source", "over_reserve",
            "over_reserve_share", "p50_cl100k", "recorded_agent", "recorded_p50_cl100k", "recorded_n"]
    if summaries.empty:
        return pd.DataFrame(columns=cols)
    own = pd.to_numeric(summaries["max_tokens"], errors="coerce") if "max_tokens" in summaries else None
    rows = []
    for strategy, g in summaries.groupby("strategy"):
        tokens = g.tokens.to_numpy(dtype=float)
        limit = own.loc[g.index] if own is not None else pd.Series(np.nan, index=g.index)
        source = "strategy" if limit.notna().all() else "default" if limit.isna().all() else "mixed"
        limits = limit.fillna(reserve).to_numpy(dtype=float)
        over = int((tokens > limits).sum())
        rows.append({"strategy": strategy, **percentiles(tokens, qs), "max": float(tokens.max()),
                     "reserve": float(limits.max()), "reserve_source": source,
                     "over_reserve": over, "over_reserve_share": over / len(tokens), **_beside_recorded(strategy, g)})
    return pd.DataFrame(rows, columns=cols)


def _beside_recorded(strategy: str, summaries: pd.DataFrame) -> dict[str, object]:
    """The median size of a strategy's summaries and of its agent's recorded ones, both in cl100k
    (the unit of the recorded fit, whatever truth the run used); the pooled fit for agents with none."""
    from bench.summarizers.sizes import UNIT, size_fit
    from bench.tokens.counter import Tokenizer

    agent, fit = size_fit(strategy)
    texts = summaries["text"].dropna().astype(str).tolist() if "text" in summaries else []
    counts = Tokenizer(UNIT).count_many(texts) if texts else []
    return {"p50_cl100k": float(np.median(counts)) if counts else float("nan"), "recorded_agent": agent,
            "recorded_p50_cl100k": float(fit.median_tokens), "recorded_n": fit.n if agent != "pooled" else 0}


@dataclass(frozen=True)
class PairedComparison:
    """Mean of (b − a) over paired units with its bootstrap interval."""

    n: int
    mean_a: float
    mean_b: float
    mean_diff: float
    ci_low: float
    ci_high: float
    resamples: int
    rel_low: float = float("nan")
    rel_high: float = float("nan")
    """The interval of mean(b) / mean(a) − 1, resampled as a ratio: a relative change read off the
    difference's interval over the whole sample's mean(a) can cross −100% (a cost below zero) when
    a resample draws mostly large units; the ratio's own interval cannot."""

    @property
    def significant(self) -> bool:
        """The interval excludes zero (and there are at least two pairs to resample)."""
        return self.n >= 2 and not (self.ci_low <= 0.0 <= self.ci_high)

    @property
    def verdict(self) -> str:
        if self.n < 2:
            return "too few pairs"
        if not self.significant:
            return NOT_SIGNIFICANT
        return "higher" if self.mean_diff > 0 else "lower"


CHUNK_DRAWS = 100_000
"""Resampled indices drawn at a time in ``paired_bootstrap``: at 1,000 resamples per chunk its arrays
grew with the trace count (15 MB at 1,000 traces); numpy's generator yields the same stream in any
chunking, so the figures do not change."""


DRAWS_KEPT = 1 << 23
"""Resampled indices (``n`` × ``resamples``) ``draws`` keeps for the next bootstrap of the same size and seed
(as int32: 32 MB at most per entry, two entries)."""
_DRAWS: dict[tuple[int, int, int, int], list[tuple[int, int, np.ndarray]]] = {}
_DRAWS_LOCK = threading.Lock()


def draws(seed: int | None, n: int, resamples: int) -> Iterator[tuple[int, int, np.ndarray]]:
    """``(start, stop, idx)`` per chunk of ``paired_bootstrap``'s resamples: ``idx`` (``stop − start`` × ``n``)
    the pairs drawn, in chunks of about ``CHUNK_DRAWS`` indices (flat in memory however many traces; numpy's
    generator yields the same stream in any chunking). They depend on nothing but ``seed``, ``n`` and
    ``resamples``, and the report bootstraps every strategy against another on the same traces (hundreds
    of times, the draws half of each), so the last two sets of draws up to ``DRAWS_KEPT`` indices are kept
    (read-only) and handed out again: the same indices, so the same figures bit for bit."""
    rows = max(1, CHUNK_DRAWS // n)
    key = (int(seed), n, resamples, rows) if isinstance(seed, (int, np.integer)) else None
    with _DRAWS_LOCK:
        kept = _DRAWS.pop(key, None) if key is not None else None
        if kept is not None:
            _DRAWS[key] = kept  # the most recent last
    if kept is not None:
        yield from kept
        return
    keep = key is not None and n * resamples <= DRAWS_KEPT
    chunks: list[tuple[int, int, np.ndarray]] = []
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n))
        if keep:
            idx = idx.astype(np.int32)  # n < 2**23: exact, half the memory; indexing gives the same values
            idx.flags.writeable = False
            chunks.append((start, stop, idx))
        yield start, stop, idx
    if keep:
        with _DRAWS_LOCK:
            _DRAWS[key] = chunks
            while len(_DRAWS) > 2:
                del _DRAWS[next(iter(_DRAWS))]


BASES_KEPT = 256
_BASES: dict[tuple[int, bytes, bytes | None], tuple[weakref.ref, np.ndarray]] = {}


def resampled_mean(values: np.ndarray, weights: np.ndarray | None, idx: np.ndarray) -> np.ndarray:
    """Each resample's mean of ``values`` (weighted by ``weights``): ``values[idx].mean(axis=1)``, or
    ``(w[idx] * values[idx]).sum(axis=1) / w[idx].sum(axis=1)``, as ``paired_bootstrap`` takes its ratio's
    base. Over kept draws (read-only ``idx``, ``draws``) it is kept for the same values and weights: the
    report compares every strategy with one baseline, whose column, and so whose resampled means, are the
    same each time. Keyed by the draws' identity (held weakly, so a freed one is never mistaken for a
    new one) and the values' and weights' bytes; the same inputs, so the same figures."""
    if idx.flags.writeable:  # drawn for this bootstrap alone
        return _resampled_mean(values, weights, idx)
    key = (id(idx), values.tobytes(), None if weights is None else weights.tobytes())
    with _DRAWS_LOCK:
        found = _BASES.get(key)
    if found is not None and found[0]() is idx:
        return found[1]
    out = _resampled_mean(values, weights, idx)
    out.flags.writeable = False
    with _DRAWS_LOCK:
        _BASES[key] = (weakref.ref(idx), out)
        while len(_BASES) > BASES_KEPT:
            del _BASES[next(iter(_BASES))]
    return out


def _resampled_mean(values: np.ndarray, weights: np.ndarray | None, idx: np.ndarray) -> np.ndarray:
    if weights is None:
        return values[idx].mean(axis=1)
    return (weights[idx] * values[idx]).sum(axis=1) / weights[idx].sum(axis=1)


def paired_bootstrap(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *,
                     resamples: int = DEFAULT_B, seed: int = 0, confidence: float = 0.95,
                     weights: Sequence[float] | np.ndarray | None = None) -> PairedComparison:
    """Paired nonparametric bootstrap of mean(b − a): resample the pairs, take percentile bounds.

    ``weights`` (one per pair, positive) make every mean a weighted mean, in the estimate and in
    each resample; None is equal weight (the plain mean).
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"paired samples differ in length: {x.size} vs {y.size}")
    w = np.ones_like(x) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != x.shape:
        raise ValueError(f"weights differ in length from the pairs: {w.size} vs {x.size}")
    if w.size and (not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0):
        raise ValueError("pair weights must be finite, non-negative and not all zero")
    if weights is not None:  # a pair of zero weight does not count, in the estimate or in any resample
        x, y, w = x[w > 0], y[w > 0], w[w > 0]
    n = x.size
    if n == 0:
        nan = float("nan")
        return PairedComparison(0, nan, nan, nan, nan, nan, resamples)
    d = y - x
    if n == 1:
        rel = float(y[0] / x[0] - 1) if x[0] else float("nan")
        return PairedComparison(1, float(x[0]), float(y[0]), float(d[0]), float(d[0]), float(d[0]), 0, rel, rel)
    means, ratios = np.empty(resamples), np.empty(resamples)
    for start, stop, idx in draws(seed, n, resamples):
        if weights is None:
            means[start:stop] = d[idx].mean(axis=1)
        else:
            means[start:stop] = (w[idx] * d[idx]).sum(axis=1) / w[idx].sum(axis=1)
        base = resampled_mean(x, None if weights is None else w, idx)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios[start:stop] = np.where(base != 0, means[start:stop] / base, np.nan)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    rel_low, rel_high = (np.nanpercentile(ratios, [tail, 100 - tail]) if np.isfinite(ratios).any()
                         else (float("nan"), float("nan")))
    return PairedComparison(n, float(np.average(x, weights=w)), float(np.average(y, weights=w)),
                            float(np.average(d, weights=w)), float(low), float(high), resamples,
                            float(rel_low), float(rel_high))


def compare_to_baseline(table: pd.DataFrame, metric: str, *, baseline: str = "none",
                        resamples: int = DEFAULT_B, seed: int = 0,
                        weights: pd.Series | None = None) -> pd.DataFrame:
    """Each strategy against ``baseline`` on ``metric``, paired by trace.

    ``table`` has one row per (trace, strategy) (bench.scoring.metrics.results_table). Traces where
    either side is missing (or NaN) are left out of that pair, and n says how many remained.
    ``weights`` (indexed by trace) weight the means (None: equal weight per trace).
    """
    cols = ["strategy", "baseline", "metric", "n", "mean_baseline", "mean_strategy", "mean_diff",
            "ci_low", "ci_high", "ratio", "rel_low", "rel_high", "verdict"]
    wide = table.pivot_table(index="trace", columns="strategy", values=metric, aggfunc="first")
    if baseline not in wide:
        return pd.DataFrame(columns=cols)
    rows = []
    for strategy in wide.columns:
        if strategy == baseline:
            continue
        pair = wide[[baseline, strategy]].dropna()
        w = None if weights is None else weights.reindex(pair.index).fillna(0.0).to_numpy(dtype=float)
        c = paired_bootstrap(pair[baseline], pair[strategy], resamples=resamples, seed=seed, weights=w)
        base_total = pair[baseline].sum()
        rows.append({"strategy": strategy, "baseline": baseline, "metric": metric, "n": c.n,
                     "mean_baseline": c.mean_a, "mean_strategy": c.mean_b, "mean_diff": c.mean_diff,
                     "ci_low": c.ci_low, "ci_high": c.ci_high,
                     "ratio": float(pair[strategy].sum() / base_total) if base_total else float("nan"),
                     "rel_low": c.rel_low, "rel_high": c.rel_high, "verdict": c.verdict})
    return pd.DataFrame(rows, columns=cols)


def median_iqr(values: Sequence[float] | np.ndarray | pd.Series) -> dict[str, float]:
    """n, median and interquartile range: the robust spread for skewed per-trace numbers."""
    arr = np.asarray(values, dtype=float)
    arr = arr[~np.isnan(arr)]
    if not arr.size:
        return {"n": 0, "median": float("nan"), "iqr": float("nan")}
    q1, med, q3 = np.percentile(arr, [25, 50, 75])
    return {"n": int(arr.size), "median": float(med), "iqr": float(q3 - q1)}


# -- shares of yes/no probes: intervals, the forced-choice score, agreement between two judges --------------


@dataclass(frozen=True)
class RateCI:
    """A share of yes answers with its interval: ``units`` traces (or one), ``probes`` answers in all."""

    units: int
    probes: int
    rate: float
    low: float
    high: float


def wilson(k: float, n: float, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of k yes in n (NaN when n = 0): never outside [0, 1], and not of
    zero width at 0/n or n/n as the normal approximation is, which matters for a handful of probes."""
    if n <= 0:
        return float("nan"), float("nan")
    from statistics import NormalDist

    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return float(max(0.0, centre - half)), float(min(1.0, centre + half))


def _two_stage(k: np.ndarray, n: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Per resample (rows) the share per drawn unit (columns): units drawn with replacement, then each
    unit's n answers drawn with replacement from its own (a binomial draw at its own share)."""
    idx = rng.integers(0, k.size, size=(resamples, k.size))
    nn = n[idx]
    return rng.binomial(nn.astype(np.int64), k[idx] / nn) / nn


def rate_ci(k: Sequence[float] | np.ndarray, n: Sequence[float] | np.ndarray, *, resamples: int = DEFAULT_B,
            seed: int = 0, confidence: float = 0.95) -> RateCI:
    """The mean over units (traces) of each unit's share k/n, with a two-stage bootstrap interval.

    A trace's probes share its context, so they are not independent: the resample draws traces
    first and then answers within each drawn trace. The interval so narrows with more traces and with
    more probes per trace. A single trace, or answers all yes or all no, get the Wilson interval of
    the pooled answers instead: a resample could only repeat them, a point at 0% or 100% however few.
    Units with no answers (n = 0) are left out.
    """
    kk, nn = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    keep = nn > 0
    kk, nn = kk[keep], nn[keep]
    if not kk.size:
        nan = float("nan")
        return RateCI(0, 0, nan, nan, nan)
    rate = float(np.mean(kk / nn))
    if kk.size == 1 or kk.sum() in (0, nn.sum()):
        # one trace, or every answer the same: a resample can only repeat it (a point at 0% or 100%
        # from 3 answers); the Wilson interval of the pooled answers says how little n of them shows
        low, high = wilson(kk.sum(), nn.sum(), confidence)
        return RateCI(int(kk.size), int(nn.sum()), rate, low, high)
    means = _two_stage(kk, nn, np.random.default_rng(seed), resamples).mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return RateCI(int(kk.size), int(nn.sum()), rate, float(low), float(high))


def effect_retention(compacted: float, floor: float, upper: float) -> float:
    """COMPINT's effect retention (Wang et al. 2026, arXiv 2608.11242, Eq. 9): the compacted arm's
    compliance over the floor (no rule stated) as a share of the upper bound's (the rule restated after
    compaction), 1 lossless and 0 all lost. NaN when the upper bound is not above the floor: the rule
    then makes no difference to the model's choice and the probe cannot measure its loss (COMPINT's
    analysis divides whenever the gap is not zero; a negative gap would flip the sign, so it is refused)."""
    gap = upper - floor
    if not (np.isfinite(compacted) and np.isfinite(gap)) or gap <= 0:
        return float("nan")
    return float((compacted - floor) / gap)


@dataclass(frozen=True)
class EffectCI:
    units: int
    value: float
    low: float
    high: float


def effect_retention_ci(compacted: tuple[np.ndarray, np.ndarray], floor: tuple[np.ndarray, np.ndarray],
                        upper: tuple[np.ndarray, np.ndarray], *, resamples: int = DEFAULT_B, seed: int = 0,
                        confidence: float = 0.95) -> EffectCI:
    """Effect retention of the means over units of three arms' shares, each arm given as (k, n) per unit.

    Paired by unit: a resample draws the same traces for the three arms (each then drawn within, as
    ``rate_ci``), so what is common to a trace cancels as it does in the estimate. Units where an arm
    has no answers count for the other arms only (its share is NaN there, and means skip NaN).
    """
    arms = [tuple(np.asarray(x, dtype=float) for x in a) for a in (compacted, floor, upper)]
    sizes = {a[0].size for a in arms} | {a[1].size for a in arms}
    if len(sizes) != 1:
        raise ValueError(f"the three arms differ in units: {sorted(sizes)}")
    units = sizes.pop()

    def share(k: np.ndarray, n: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(n > 0, k / np.where(n > 0, n, 1), np.nan)

    def mean(x: np.ndarray) -> float:
        return float(np.nanmean(x)) if np.isfinite(x).any() else float("nan")

    value = effect_retention(*(mean(share(k, n)) for k, n in arms))
    if units < 1 or not np.isfinite(value):
        return EffectCI(units, value, float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, units, size=(resamples, units))
    draws = []
    for k, n in arms:
        nn = n[idx]
        safe = np.where(nn > 0, nn, 1)
        drawn = rng.binomial(nn.astype(np.int64), np.where(nn > 0, k[idx] / safe, 0.0)) / safe
        with np.errstate(invalid="ignore"):
            drawn = np.where(nn > 0, drawn, np.nan)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a resample where an arm has no answers: NaN
            draws.append(np.nanmean(drawn, axis=1))
    comp, low_arm, up = draws
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = up - low_arm
        ers = np.where(gap > 0, (comp - low_arm) / np.where(gap > 0, gap, 1), np.nan)
    if not np.isfinite(ers).any():
        return EffectCI(units, value, float("nan"), float("nan"))
    tail = (1 - confidence) / 2 * 100
    low, high = np.nanpercentile(ers, [tail, 100 - tail])
    return EffectCI(units, value, float(low), float(high))


@dataclass(frozen=True)
class Agreement:
    """Two judges' yes/no verdicts on the same items: how often they agree, and Cohen's kappa."""

    n: int
    agree: int
    share: float
    kappa: float
    a_yes: float
    b_yes: float


def agreement(a: Sequence[bool | None], b: Sequence[bool | None]) -> Agreement:
    """Agreement of two judges over the items both decided (a None on either side drops the item),
    with Cohen's kappa, chance-corrected, as COMPINT reports its retention judge against a second one
    (analyze/judge_family_bias.py). kappa is 1 when chance agreement is already 1 (both all yes or all no)."""
    pairs = [(bool(x), bool(y)) for x, y in zip(a, b, strict=True) if x is not None and y is not None
             and not (isinstance(x, float) and np.isnan(x)) and not (isinstance(y, float) and np.isnan(y))]
    n = len(pairs)
    if not n:
        nan = float("nan")
        return Agreement(0, 0, nan, nan, nan, nan)
    agree = sum(x == y for x, y in pairs)
    po = agree / n
    pa, pb = sum(x for x, _ in pairs) / n, sum(y for _, y in pairs) / n
    pe = pa * pb + (1 - pa) * (1 - pb)
    kappa = 1.0 if pe == 1.0 else (po - pe) / (1 - pe)
    return Agreement(n, agree, po, float(kappa), pa, pb)
