"""bench.decide.verdict on constructed results tables: the constrained optimum, why, and the runner-up."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bench.decide import verdict as bv

# (strategy, cost factor, retention, overflows on t0)
ROWS = [("none", 1.0, 1.0, 0), ("cheap", 0.5, 0.90, 0), ("codex@limit_fraction=0.5", 0.6, 0.99, 2),
        ("codex@limit_fraction=0.7", 0.7, 0.98, 0), ("codex@limit_fraction=0.9", 0.8, 0.99, 0)]


def table(rows=ROWS, traces: int = 6) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    out = []
    for t in range(traces):
        for s, factor, retention, overflows in rows:
            out.append({"trace": f"t{t}", "strategy": s, "cost": (1 + t * 0.5) * factor + rng.normal(0, 0.01),
                        "retention": retention, "overflows": overflows if t == 0 else 0, "error": "", "failed": ""})
    return pd.DataFrame(out)


NONE_RELATIVE = "overflows=0,retention>=none-0.05,min-cost"
"""The default before the best-relative one: still a valid objective when none never overflows."""


def test_a_none_relative_objective_picks_the_constrained_optimum_and_names_the_binding_constraint() -> None:
    v = bv.decide(table(), NONE_RELATIVE)
    # cheap is cheapest but retains 90% < 100% − 5 points; codex@0.5 overflowed; codex@0.7 is next cheapest.
    assert v.recommended == "codex@limit_fraction=0.7"
    assert v.binding[0] == "needle retention within 5 points of none"
    assert v.excluded == {"cheap": ("retention 90.0%, not >= 95.0% (none 100.0% −5 pts)",),
                          "codex@limit_fraction=0.5": ("overflowed 2 calls",)}
    assert v.sentence.startswith("Ship codex@limit_fraction=0.7: the cheapest strategy with zero overflows and "
                                 "needle retention within 5 points of none")
    assert v.runner_up == "codex@limit_fraction=0.9"
    # 0.9 costs 0.1 × (1 + 0.5 t) more per trace: mean +0.225, clearly significant.
    assert v.comparison["significant"] and v.comparison["mean_diff"] == pytest.approx(0.225, abs=0.01)
    assert "significant" in v.sentence.split("Runner-up")[1]
    assert v.ship() == {"spec": "codex@limit_fraction=0.7", "name": "codex", "params": {"limit_fraction": 0.7}}


def test_min_cost_keeps_the_implied_zero_overflows() -> None:
    v = bv.decide(table(), "min-cost")
    assert v.recommended == "cheap"
    assert "codex@limit_fraction=0.5" in v.excluded


def test_an_explicit_overflow_allowance_lets_the_overflowing_setting_in() -> None:
    v = bv.decide(table(), "overflows<=5,retention>=0.95,min-cost")
    assert v.recommended == "codex@limit_fraction=0.5"


def test_max_retention_and_absolute_constraints() -> None:
    assert bv.decide(table(), "max-retention").recommended == "none"
    v = bv.decide(table(), "retention>=0.99,cost<=1.7")
    # codex@0.9 retains 99% but costs 0.8 × 2.25 = $1.80 per trace; none costs $2.25: nothing qualifies.
    assert v.recommended is None and v.sentence.startswith("No strategy meets the objective")


def test_not_significant_runner_up_is_said_so() -> None:
    rows = [("none", 1.0, 1.0, 0), ("a", 0.70, 0.99, 0), ("b", 0.70, 0.99, 0)]
    v = bv.decide(table(rows), NONE_RELATIVE)
    assert v.recommended in ("a", "b") and not v.comparison["significant"]
    assert "not significant" in v.sentence


def test_a_harness_error_is_never_recommended() -> None:
    t = table()
    t.loc[(t.strategy == "cheap") & (t.trace == "t0"), ["cost", "error"]] = [0.0, "KeyError"]
    v = bv.decide(t, "min-cost")
    assert v.recommended == "codex@limit_fraction=0.7"
    assert v.excluded["cheap"] == ("harness error on 1 trace",)


def test_bad_objective_is_a_clear_error() -> None:
    with pytest.raises(bv.ObjectiveError, match="neither a goal"):
        bv.parse_objective("cheapest please")
    with pytest.raises(bv.ObjectiveError, match="no metric 'speed'"):
        bv.decide(table(), "speed<=3")


def test_paired_comparison_between_any_two_settings_and_neighbours() -> None:
    t = table()
    c = bv.paired(t, "codex@limit_fraction=0.7", "codex@limit_fraction=0.9")
    assert c.n == 6 and c.significant and c.mean_diff > 0
    n = bv.neighbours(t)
    assert n[["value_a", "value_b"]].values.tolist() == [[0.5, 0.7], [0.7, 0.9]]
    assert n.text.iloc[1].startswith("0.9 vs 0.7: +$0.2") and "95% CI" in n.text.iloc[1]


def test_sweep_parameters_become_columns() -> None:
    t = bv.with_params(table())
    assert t.loc[t.strategy == "codex@limit_fraction=0.7", "param:limit_fraction"].eq(0.7).all()
    assert t.loc[t.strategy == "none", "param:limit_fraction"].isna().all()
    assert set(t.family) == {"none", "cheap", "codex"}


def test_verdict_json_round_trips() -> None:
    data = json.loads(bv.decide(table(), NONE_RELATIVE).to_json())
    assert data["ship"]["spec"] == "codex@limit_fraction=0.7"
    assert data["weighting"].startswith("equal weight per trace")
    assert len(data["candidates"]) == 5
    assert {type(c["feasible"]) for c in data["candidates"]} == {bool}  # never the string "True"


def test_feasible_mask_excludes_overflows() -> None:
    totals = pd.DataFrame({"strategy": ["a", "b"], "overflows": [0, 3]})
    assert bv.feasible_mask(totals).tolist() == [True, False]


def _tiny_and_large() -> pd.DataFrame:
    """One tiny trace (2 calls, 1K tokens) and one large one (200 calls, 150K tokens).

    A keeps everything on the tiny trace but 92% on the large one; B loses 15% of the tiny trace's
    needles but keeps 99% on the large one. A is cheaper on both.
    """
    size = {"tiny": (2, 1_000), "large": (200, 150_000)}
    cells = {("none", "tiny"): (0.01, 1.0), ("none", "large"): (10.0, 1.0),
             ("A", "tiny"): (0.005, 1.0), ("A", "large"): (4.0, 0.92),
             ("B", "tiny"): (0.006, 0.85), ("B", "large"): (5.0, 0.99)}
    return pd.DataFrame([{"trace": t, "strategy": s, "cost": c, "retention": r, "overflows": 0,
                          "calls": size[t][0], "peak_context": size[t][1] if s == "none" else size[t][1] // 3,
                          "error": "", "failed": ""} for (s, t), (c, r) in cells.items()])


def test_weighting_changes_the_means_and_the_recommendation_as_computed_by_hand() -> None:
    results = _tiny_and_large()
    assert bv.trace_weights(results, "tokens").to_dict() == {"tiny": 1_000.0, "large": 150_000.0}  # none's peak
    assert bv.trace_weights(results, "calls").to_dict() == {"tiny": 2.0, "large": 200.0}
    equal = bv.aggregate(results).set_index("strategy")
    tokens = bv.aggregate(results, "tokens").set_index("strategy")
    calls = bv.aggregate(results, "calls").set_index("strategy")
    assert equal.retention["A"] == pytest.approx((1.0 + 0.92) / 2)
    assert equal.retention["B"] == pytest.approx((0.85 + 0.99) / 2)
    assert tokens.retention["A"] == pytest.approx((1_000 * 1.0 + 150_000 * 0.92) / 151_000)
    assert tokens.retention["B"] == pytest.approx((1_000 * 0.85 + 150_000 * 0.99) / 151_000)
    assert calls.cost["B"] == pytest.approx((2 * 0.006 + 200 * 5.0) / 202)
    assert tokens.overflows["A"] == equal.overflows["A"] == 0  # counts stay totals

    # equal: A's 96% is within 5 points of none, B's 92% is not; by tokens it is the other way round
    v_equal, v_tokens = bv.decide(results, NONE_RELATIVE), bv.decide(results, NONE_RELATIVE, weight="tokens")
    assert v_equal.recommended == "A" and v_tokens.recommended == "B"
    assert v_equal.weighting.startswith("equal weight per trace")
    assert v_tokens.weighting.startswith("each trace weighted by its size in tokens")
    assert json.loads(v_tokens.to_json())["weighting"] == v_tokens.weighting


def test_weighted_paired_comparison_uses_the_trace_weights() -> None:
    results = _tiny_and_large()
    c = bv.paired(results, "A", "B", "cost", weight="tokens")
    assert c.n == 2
    assert c.mean_diff == pytest.approx((1_000 * 0.001 + 150_000 * 1.0) / 151_000)
    assert bv.paired(results, "A", "B", "cost").mean_diff == pytest.approx((0.001 + 1.0) / 2)
    with pytest.raises(ValueError, match="--weight 'size'"):
        bv.decide(results, weight="size")


def test_the_report_tables_follow_the_run_weight() -> None:
    from reports import scoring

    results = _tiny_and_large()
    assert scoring.weight({"config": {"weight": "tokens"}}) == "tokens"
    assert scoring.weight({"config": {}}) == "equal"  # runs from before --weight
    comp = scoring.comparisons(results, resamples=200, weighting="tokens").set_index(["strategy", "metric"])
    assert comp.loc[("A", "retention"), "mean_diff"] == pytest.approx((150_000 * (0.92 - 1.0)) / 151_000)
    assert scoring.comparisons(results, resamples=200).set_index(["strategy", "metric"]).loc[
        ("A", "retention"), "mean_diff"] == pytest.approx(-0.04)
    totals = pd.DataFrame({"strategy": ["A", "B", "none"], "retention": [0.0, 0.0, 0.0], "cost": [1.0, 2.0, 3.0]})
    weighted = scoring.weighted_totals(totals, results, "calls").set_index("strategy")
    assert weighted.retention["B"] == pytest.approx((2 * 0.85 + 200 * 0.99) / 202)
    assert weighted.cost["B"] == 2.0  # sums and other columns untouched
    assert scoring.weighted_totals(totals, results, "equal") is totals


# --- the default objective: the cheapest that never overflows and retains not significantly less than the best ----

def _noisy(rows: list[tuple[str, float, float, float, int]], traces: int = 12, seed: int = 1) -> pd.DataFrame:
    """(strategy, cost factor, mean retention, retention spread, overflows on t0) over ``traces`` traces,
    with per-trace noise so the paired test has something to resample."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(traces):
        shared = rng.normal(0, 0.05)  # a hard trace is hard for everyone: the pairing removes it
        for s, factor, retention, spread, overflows in rows:
            out.append({"trace": f"t{t}", "strategy": s, "cost": (1 + t * 0.5) * factor,
                        "retention": float(np.clip(retention + shared + rng.normal(0, spread), 0, 1)),
                        "overflows": overflows if t == 0 else 0, "compactions": 0 if s == "none" else 1,
                        "events": 0 if s == "none" else 2, "peak_context": 150_000 + 1_000 * t,
                        "error": "", "failed": ""})
    return pd.DataFrame(out)


def test_an_overflowing_none_is_no_reference() -> None:
    """none overflows (it always does where compaction is needed): the default still decides, and a
    none-relative objective lapses with a note instead of excluding every strategy."""
    rows = [("none", 1.0, 1.0, 0.0, 40), ("keeps", 0.6, 0.80, 0.01, 0), ("cheap", 0.4, 0.79, 0.06, 0)]
    v = bv.decide(_noisy(rows))
    assert v.recommended == "cheap", v.sentence  # 0.79 vs 0.80: within noise of the best that never overflowed
    assert "none" in v.excluded and v.excluded["none"][0].startswith("overflowed 40 calls")
    old = bv.decide(_noisy(rows), "overflows=0,retention>=none-0.05,min-cost")
    assert any("none overflowed 40 calls, so it is no reference" in n for n in old.notes)
    assert old.recommended == "cheap"


def test_a_significant_retention_loss_excludes_and_a_non_significant_one_does_not() -> None:
    rows = [("none", 1.0, 0.95, 0.0, 0), ("keeps", 0.7, 0.94, 0.01, 0), ("forgets", 0.5, 0.70, 0.01, 0),
            ("noisy", 0.6, 0.93, 0.08, 0)]
    v = bv.decide(_noisy(rows))
    assert "significantly below none's" in v.excluded["forgets"][0]
    assert "noisy" not in v.excluded  # 2 points lower on average, but within its noise: not significant
    assert v.recommended == "noisy"
    assert "not significantly below the best of those (paired bootstrap, 95%)" in v.sentence


def test_when_no_strategy_acts_no_compaction_is_needed() -> None:
    rows = [("none", 1.0, 1.0, 0.0, 0), ("a", 1.0, 1.0, 0.0, 0), ("b", 1.0, 1.0, 0.0, 0)]
    results = _noisy(rows).assign(events=0, compactions=0)
    v = bv.decide(results)
    assert v.recommended is None and v.extra["no_compaction_needed"]
    assert v.sentence.startswith("No compaction is needed on these sessions") and "Ship" not in v.sentence.split(".")[0]


def test_when_everything_overflows_the_verdict_says_which_window_is_needed() -> None:
    rows = [("none", 1.0, 1.0, 0.0, 40), ("a", 0.7, 0.9, 0.01, 3)]
    v = bv.decide(_noisy(rows))
    assert v.recommended is None and v.sentence.startswith("No strategy meets the objective")
    assert "Every strategy overflows: these sessions need a window larger than 161,000 tokens" in v.sentence


def test_the_verdict_says_what_its_retention_measures() -> None:
    rows = [("none", 1.0, 1.0, 0.0, 40), ("a", 0.7, 0.9, 0.01, 0)]
    v = bv.decide(_noisy(rows), summarizer="extractive")
    assert any("the extractive stand-in summarizer" in n and "not a real model's" in n for n in v.notes)
    assert any("the summaries the sessions recorded" in n for n in bv.decide(_noisy(rows), summarizer="recorded").notes)
    with pytest.raises(bv.ObjectiveError, match="without an offset"):
        bv.parse_objective("retention>=best-0.05")


def test_a_bad_objective_is_refused_before_any_replay(tmp_path) -> None:
    """`--objective min-costs` used to replay everything and then fail."""
    from bench.cli.main import main

    args = ["run", "--traces", "synthetic:short", "--strategies", "none", "--objective", "min-costs",
            "--out", str(tmp_path), "--quiet"]
    assert main(args) == 2
    assert not (tmp_path / "run").exists()  # nothing was replayed or stored


def test_on_one_trace_any_retention_loss_excludes() -> None:
    """With fewer than two paired traces there is no noise to measure: a cheaper strategy that keeps
    less is not shipped on the grounds that nothing was significant."""
    rows = [("none", 1.0, 1.0, 0.0, 40), ("keeps", 0.7, 0.75, 0.0, 0), ("forgets", 0.5, 0.25, 0.0, 0)]
    v = bv.decide(_noisy(rows, traces=1))
    assert v.recommended == "keeps"
    (why,) = v.excluded["forgets"]
    assert why.startswith("retention ") and why.endswith("(1 paired trace: too few to call it noise)")
