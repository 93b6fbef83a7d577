"""Percentiles with n, summary sizes against a reserve, paired bootstrap significance."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.stats import (
    NOT_SIGNIFICANT,
    REPORT_B,
    compare_to_baseline,
    median_iqr,
    paired_bootstrap,
    percentiles,
    summary_sizes,
)


def test_percentiles_on_one_to_a_hundred():
    # linear interpolation at rank q/100·(n−1): p90 → 89.1 → 90.1, p99 → 98.01 → 99.01, p99.9 → 99.901
    got = percentiles(range(1, 101))
    assert got == pytest.approx({"n": 100, "p50": 50.5, "p90": 90.1, "p99": 99.01, "p99.9": 99.901})
    empty = percentiles([])
    assert empty["n"] == 0 and np.isnan(empty["p50"])


def test_summary_sizes_count_summaries_over_the_reserve():
    df = pd.DataFrame({"strategy": ["a"] * 4 + ["b"] * 2, "tokens": [1_000, 2_000, 3_000, 25_000, 500, 700]})
    out = summary_sizes(df, reserve=20_000).set_index("strategy")
    assert out.loc["a", "n"] == 4 and out.loc["a", "p50"] == 2_500 and out.loc["a", "max"] == 25_000
    assert out.loc["a", "over_reserve"] == 1 and out.loc["a", "over_reserve_share"] == 0.25
    assert out.loc["b", "over_reserve"] == 0 and out.loc["b", "p50"] == 600


def test_a_ci_crossing_zero_is_not_significant():
    a = np.zeros(10)
    b = np.array([1, -1, 2, -2, 3, -3, 1, -1, 0, 0], dtype=float)  # mean difference 0
    c = paired_bootstrap(a, b, seed=1)
    assert c.mean_diff == 0 and c.ci_low < 0 < c.ci_high
    assert not c.significant and c.verdict == NOT_SIGNIFICANT


def test_a_clear_difference_is_significant_and_reproducible():
    rng = np.random.default_rng(7)
    a = rng.uniform(10, 20, size=12)
    b = a + 5 + rng.uniform(-0.5, 0.5, size=12)  # every pair higher by 4.5–5.5
    c = paired_bootstrap(a, b, seed=3)
    assert 4.5 <= c.ci_low <= c.mean_diff <= c.ci_high <= 5.5
    assert c.significant and c.verdict == "higher"
    assert paired_bootstrap(a, b, seed=3) == c  # seeded
    assert paired_bootstrap(b, a, seed=3).verdict == "lower"


def test_constant_differences_give_a_point_interval_and_one_pair_is_too_few():
    c = paired_bootstrap([1, 2, 3], [3, 4, 5], resamples=REPORT_B)
    assert (c.ci_low, c.mean_diff, c.ci_high, c.resamples) == (2.0, 2.0, 2.0, 10_000)
    one = paired_bootstrap([1], [2])
    assert one.n == 1 and not one.significant and one.verdict == "too few pairs"
    with pytest.raises(ValueError, match="differ in length"):
        paired_bootstrap([1, 2], [1])


def test_compare_to_baseline_pairs_by_trace():
    table = pd.DataFrame({
        "trace": ["t1", "t2", "t3", "t1", "t2", "t3", "t1", "t2"],
        "strategy": ["none"] * 3 + ["fast"] * 3 + ["noisy"] * 2,
        "cost": [10.0, 20.0, 30.0, 5.0, 10.0, 15.0, 12.0, 18.0],
    })
    out = compare_to_baseline(table, "cost").set_index("strategy")
    assert out.loc["fast", "n"] == 3 and out.loc["fast", "mean_diff"] == pytest.approx(-10.0)
    assert out.loc["fast", "ratio"] == pytest.approx(0.5) and out.loc["fast", "verdict"] == "lower"
    # noisy: t1 +2, t2 −2 (t3 missing) → mean 0, interval holds zero
    assert out.loc["noisy", "n"] == 2 and out.loc["noisy", "verdict"] == NOT_SIGNIFICANT


def test_median_iqr():
    assert median_iqr([1, 2, 3, 4, 5]) == {"n": 5, "median": 3.0, "iqr": 2.0}
