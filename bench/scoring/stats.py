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

from collections.abc import Sequence
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
    rng = np.random.default_rng(seed)
    means, ratios = np.empty(resamples), np.empty(resamples)
    for start in range(0, resamples, 1_000):  # chunks keep memory flat for long traces lists
        stop = min(resamples, start + 1_000)
        idx = rng.integers(0, n, size=(stop - start, n))
        if weights is None:
            means[start:stop] = d[idx].mean(axis=1)
            base = x[idx].mean(axis=1)
        else:
            total = w[idx].sum(axis=1)
            means[start:stop] = (w[idx] * d[idx]).sum(axis=1) / total
            base = (w[idx] * x[idx]).sum(axis=1) / total
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
