"""Percentiles with n, summary sizes against a reserve, paired bootstrap significance."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.scoring.stats import (
    DEFAULT_B,
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


def test_summary_sizes_use_each_strategys_own_reserve():
    # cline asks for 4,096 output tokens, claude-code for 20,000; "old" records no max_tokens (20K stands in)
    df = pd.DataFrame({"strategy": ["cline"] * 3 + ["claude-code"] * 2 + ["old"],
                       "tokens": [1_000, 4_096, 5_000, 17_387, 21_000, 19_000],
                       "max_tokens": [4_096, 4_096, 4_096, 20_000, 20_000, None]})
    out = summary_sizes(df).set_index("strategy")
    assert out.loc["cline", "reserve"] == 4_096 and out.loc["cline", "over_reserve"] == 1  # 4,096 fits exactly
    assert out.loc["cline", "over_reserve_share"] == pytest.approx(1 / 3)
    assert out.loc["claude-code", "over_reserve"] == 1 and out.loc["claude-code", "reserve_source"] == "strategy"
    assert out.loc["old", "reserve"] == 20_000 and out.loc["old", "over_reserve"] == 0
    assert out.loc["old", "reserve_source"] == "default"
    # without the column every strategy is held to the one fallback reserve: cline's 5,000 fits 20K
    assert summary_sizes(df.drop(columns="max_tokens")).set_index("strategy").loc["cline", "over_reserve"] == 0


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


def test_resamples_default_to_2000_and_the_report_uses_10000():
    assert paired_bootstrap([1, 2, 3], [2, 2, 5]).resamples == DEFAULT_B == 2_000 and REPORT_B == 10_000
    rng = np.random.default_rng(5)
    a, b = rng.normal(0, 1, 40), rng.normal(0.3, 1, 40)
    assert paired_bootstrap(a, b, seed=11) == paired_bootstrap(a, b, seed=11)  # seeded: the same interval
    assert paired_bootstrap(a, b, seed=11).ci_low != paired_bootstrap(a, b, seed=12).ci_low  # the seed is used


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


def test_weighted_bootstrap_is_the_weighted_mean_and_a_zero_weight_pair_does_not_count():
    a, b = [1.0, 2.0, 3.0, 50.0], [2.0, 2.5, 3.0, 0.0]
    plain = paired_bootstrap(a[:3], b[:3], resamples=500, seed=1)
    unit = paired_bootstrap(a[:3], b[:3], resamples=500, seed=1, weights=[1, 1, 1])
    assert (unit.mean_diff, unit.ci_low, unit.ci_high) == pytest.approx((plain.mean_diff, plain.ci_low, plain.ci_high))
    w = paired_bootstrap(a, b, resamples=500, seed=1, weights=[1, 3, 0, 0])
    assert w.mean_diff == pytest.approx((1 * 1.0 + 3 * 0.5) / 4) and w.n == 2
    assert w.ci_high <= 1.0 and w.ci_low >= 0.5  # the -50 of the zero-weight pair never enters
    with pytest.raises(ValueError, match="weights"):
        paired_bootstrap(a, b, weights=[1, 2])


def test_the_relative_interval_is_the_ratio_s_own_and_never_under_minus_100_percent() -> None:
    """Every strategy value is a tenth of the baseline's, on units of very different size: the
    relative change is −90% in every resample, while the difference's interval over the whole
    sample's baseline mean reaches far below −100% (a resample of mostly the big unit)."""
    a = [1.0, 1.0, 1.0, 100.0]
    b = [x / 10 for x in a]
    c = paired_bootstrap(a, b, resamples=2_000, seed=0)
    assert c.rel_low == pytest.approx(-0.9) and c.rel_high == pytest.approx(-0.9)
    assert c.ci_low / c.mean_a < -1.0  # what the chart used to draw
    w = paired_bootstrap(a, b, resamples=2_000, seed=0, weights=[1, 1, 1, 5])
    assert w.rel_low == pytest.approx(-0.9) and w.rel_high == pytest.approx(-0.9)
    single = paired_bootstrap([4.0], [1.0])
    assert single.rel_low == single.rel_high == pytest.approx(-0.75)


def test_wilson_interval_stays_inside_zero_and_one_and_is_not_empty_at_the_ends():
    from bench.scoring.stats import wilson

    low, high = wilson(0, 5)
    assert low == 0.0 and 0.4 < high < 0.5  # 0 of 5 is not "certainly 0%"
    low, high = wilson(5, 5)
    assert 0.5 < low < 0.6 and high == 1.0
    low, high = wilson(30, 100)
    assert low < 0.3 < high and high - low < wilson(3, 10)[1] - wilson(3, 10)[0]
    assert all(np.isnan(wilson(0, 0)))


def test_rate_ci_is_the_mean_over_traces_and_narrows_with_probes_and_with_traces():
    from bench.scoring.stats import rate_ci

    few = rate_ci([1, 3], [4, 4])  # traces at 25% and 75%: the mean over traces is 50%
    assert (few.units, few.probes, few.rate) == (2, 8, 0.5) and few.low <= 0.5 <= few.high
    more_probes = rate_ci([10, 30], [40, 40])
    more_traces = rate_ci([1, 3] * 10, [4, 4] * 10)
    width = few.high - few.low
    assert more_probes.high - more_probes.low < width and more_traces.high - more_traces.low < width
    one = rate_ci([3], [4])  # one trace: its probes' Wilson interval, not a point
    assert one.units == 1 and one.low < 0.75 < one.high
    assert rate_ci([1, 0], [2, 0]).units == 1  # a trace with no answers is left out
    all_yes = rate_ci([1, 1, 1], [1, 1, 1])  # 3 of 3: not "certainly 100%"
    assert all_yes.rate == 1.0 and all_yes.high == 1.0 and all_yes.low < 0.5
    assert np.isnan(rate_ci([], []).rate)
    assert rate_ci([1, 3], [4, 4], seed=5) == rate_ci([1, 3], [4, 4], seed=5)


def test_effect_retention_is_the_compacted_gain_over_the_floor_as_a_share_of_the_upper_bounds():
    from bench.scoring.stats import effect_retention, effect_retention_ci

    assert effect_retention(0.8, 0.2, 0.8) == pytest.approx(1.0)  # lossless
    assert effect_retention(0.2, 0.2, 0.8) == 0.0  # all lost: no better than no rule
    assert effect_retention(0.5, 0.2, 0.8) == pytest.approx(0.5)
    assert np.isnan(effect_retention(0.5, 0.8, 0.8))  # the rule changes nothing: nothing to measure
    assert np.isnan(effect_retention(0.5, 0.9, 0.8))
    n = np.array([10, 10, 10, 10])
    c = effect_retention_ci((np.array([5, 6, 4, 5]), n), (np.array([2, 2, 2, 2]), n), (np.array([8, 8, 8, 8]), n))
    assert c.units == 4 and c.value == pytest.approx(0.5) and c.low < 0.5 < c.high
    with pytest.raises(ValueError, match="differ in units"):
        effect_retention_ci((np.array([1]), np.array([1])), (np.array([1, 1]), np.array([1, 1])),
                            (np.array([1]), np.array([1])))


def test_agreement_of_two_judges_with_cohens_kappa():
    from bench.scoring.stats import agreement

    a = agreement([True, True, False, False, None], [True, False, False, False, True])
    assert (a.n, a.agree, a.share) == (4, 3, 0.75)
    # po 0.75; pa 0.5, pb 0.25: pe = 0.125 + 0.375 = 0.5; kappa = 0.25 / 0.5
    assert a.kappa == pytest.approx(0.5) and (a.a_yes, a.b_yes) == (0.5, 0.25)
    assert agreement([True, True], [True, True]).kappa == 1.0  # chance agreement already 1
    assert agreement([True, False], [False, True]).kappa == pytest.approx(-1.0)
    assert agreement([None], [True]).n == 0


def test_the_paired_bootstrap_is_the_same_in_any_chunking(monkeypatch):
    """Memory is bounded by CHUNK_DRAWS, not by the trace count, and the result does not depend on it."""
    import numpy as np

    from bench.scoring import stats

    rng = np.random.default_rng(3)
    a, b, w = rng.random(700), rng.random(700), rng.random(700) + 0.1
    whole = (stats.paired_bootstrap(a, b), stats.paired_bootstrap(a, b, weights=w))
    monkeypatch.setattr(stats, "CHUNK_DRAWS", 7_000)  # 10 resamples a chunk
    assert (stats.paired_bootstrap(a, b), stats.paired_bootstrap(a, b, weights=w)) == whole


def test_kept_draws_are_the_generators_own_and_change_no_figure(monkeypatch):
    """``stats.draws`` hands out the seeded generator's indices, chunk by chunk, the first time and again from
    what it kept (read-only); a bootstrap on kept draws equals one on fresh draws bit for bit (repr: NaN, −0);
    an unseeded bootstrap and one past ``DRAWS_KEPT`` keep nothing."""
    import numpy as np
    import pytest

    from bench.scoring import stats

    stats._DRAWS.clear()
    monkeypatch.setattr(stats, "CHUNK_DRAWS", 7_000)
    for n, resamples in ((18, 2_000), (700, 300), (1, 5)):
        rng = np.random.default_rng(0)
        rows = max(1, stats.CHUNK_DRAWS // n)
        wanted = [(a, min(resamples, a + rows), rng.integers(0, n, size=(min(resamples, a + rows) - a, n)))
                  for a in range(0, resamples, rows)]
        for _ in range(2):  # drawn, then kept
            got = list(stats.draws(0, n, resamples))
            assert [(a, b) for a, b, _ in got] == [(a, b) for a, b, _ in wanted]
            assert all(np.array_equal(g, w) for (_, _, g), (_, _, w) in zip(got, wanted, strict=True))
    kept = next(iter(stats._DRAWS.values()))[0][2]
    with pytest.raises(ValueError):
        kept[0, 0] = 1
    assert len(stats._DRAWS) == 2  # the last two only
    rng = np.random.default_rng(4)
    a, b, w = np.round(rng.random(40), 1), np.round(rng.random(40), 1), rng.random(40) + 0.1
    b[:20] = a[:20]
    c = np.round(rng.random(40), 1)
    first = [repr(stats.paired_bootstrap(a, y, resamples=500, weights=x)) for y in (b, c) for x in (None, w)]
    assert any(k[1:3] == (40, 500) for k in stats._DRAWS) and stats._BASES  # a's resampled means kept for c
    again = [repr(stats.paired_bootstrap(a, y, resamples=500, weights=x)) for y in (b, c) for x in (None, w)]
    stats._DRAWS.clear()
    monkeypatch.setattr(stats, "DRAWS_KEPT", 0)
    fresh = [repr(stats.paired_bootstrap(a, y, resamples=500, weights=x)) for y in (b, c) for x in (None, w)]
    assert first == again == fresh and not stats._DRAWS
    monkeypatch.setattr(stats, "DRAWS_KEPT", 1 << 23)
    stats.paired_bootstrap(a, b, resamples=500, seed=None)
    assert not stats._DRAWS
