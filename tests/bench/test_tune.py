"""`compaction-bench tune`: the setting is chosen on training traces and scored on held-out ones.

Constructed results tables (no replay) prove the split and the scoring; one small end-to-end run of
the command on tiny synthetic sessions proves the wiring (bench.run.runner.run, tune.json, tune.csv).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

import strategies
from bench.cli.main import main
from bench.run import tune as tn

REPO = Path(__file__).resolve().parents[2]
GRID = "codex@limit_fraction=0.5|0.7|0.9"
LOW, MID, HIGH = (f"codex@limit_fraction={v}" for v in (0.5, 0.7, 0.9))


def _strata(n_per: int = 4, scenarios: tuple[str, ...] = ("a", "b", "c", "d", "e")) -> dict[str, str]:
    return {f"synthetic/{s}/seed{i}": f"synthetic:{s}" for s in scenarios for i in range(n_per)}


def _results(cost: dict[tuple[str, str], float], traces: list[str], labels: list[str],
             retention: float = 0.8) -> pd.DataFrame:
    """One row per (trace, setting); every setting acts (one event) and never overflows."""
    rows = [{"trace": t, "strategy": s, "calls": 10, "peak_context": 1000, "cost": cost[(t, s)],
             "retention": retention, "overflows": 0, "events": 1, "compactions": 1, "error": ""}
            for t in traces for s in labels]
    return pd.DataFrame(rows)


# --- the split -----------------------------------------------------------------------------------------------


def test_the_split_is_disjoint_complete_stratified_and_deterministic_by_seed():
    strata = _strata()
    split = tn.split_traces(strata, seed=0)
    assert set(split.train).isdisjoint(split.held_out)
    assert set(split.train) | set(split.held_out) == set(strata)
    assert len(split.held_out) == 10
    assert split.strata == {f"synthetic:{s}": (2, 2) for s in "abcde"}  # every scenario on both sides
    again = tn.split_traces(dict(reversed(list(strata.items()))), seed=0)  # the order traces came in: no matter
    assert again == split
    others = {tn.split_traces(strata, seed=s).held_out for s in range(1, 6)}
    assert any(o != split.held_out for o in others)  # the seed moves it


def test_the_split_holds_out_its_share_and_keeps_both_parts():
    strata = _strata(n_per=1, scenarios=tuple("abcdefghij"))
    assert len(tn.split_traces(strata, held_out=0.3).held_out) == 3
    two = tn.split_traces(_strata(n_per=2, scenarios=("a",)), held_out=0.01)
    assert len(two.train) == 1 and len(two.held_out) == 1
    with pytest.raises(tn.TuneError, match="at least 2 traces"):
        tn.split_traces({"t": "x"})
    with pytest.raises(tn.TuneError, match="between 0 and 1"):
        tn.split_traces(strata, held_out=1.0)


# --- choose on training, score on held-out -------------------------------------------------------------------


def _fitting_results(split: tn.Split) -> pd.DataFrame:
    """On the training traces 0.5 is cheapest; on the held-out traces 0.9 is."""
    cost = {}
    for t in split.train:
        cost |= {(t, LOW): 1.0, (t, MID): 2.0, (t, HIGH): 3.0}
    for i, t in enumerate(split.held_out):
        cost |= {(t, LOW): 5.0 + i, (t, MID): 4.0 + i, (t, HIGH): 2.0 + i}
    return _results(cost, [*split.train, *split.held_out], [LOW, MID, HIGH])


def test_the_chosen_setting_is_scored_on_traces_it_was_not_chosen_on():
    split = tn.split_traces(_strata(n_per=2), seed=3)
    results = _fitting_results(split)
    (r,) = tn.assess(results, [tn.search_space(GRID)], split)
    assert set(split.train).isdisjoint(split.held_out)
    assert r.chosen == LOW  # the training traces' cheapest
    assert r.held_out_best == HIGH  # what the held-out traces would have chosen
    held = results[results.trace.isin(split.held_out) & (results.strategy == LOW)]
    train = results[results.trace.isin(split.train) & (results.strategy == LOW)]
    assert r.held_out["cost"].n == len(split.held_out)
    assert r.held_out["cost"].mean == pytest.approx(held.cost.mean())  # the held-out rows' figures ...
    assert r.held_out["cost"].mean != pytest.approx(train.cost.mean())  # ... not the training rows'
    assert r.held_out["cost"].low <= r.held_out["cost"].mean <= r.held_out["cost"].high
    assert r.train["cost"] == pytest.approx(train.cost.mean()) and r.train["traces"] == len(split.train)
    best = results[results.trace.isin(split.held_out) & (results.strategy == HIGH)]
    assert r.gap["cost"].mean_diff == pytest.approx(held.cost.mean() - best.cost.mean())  # the choice fits its sample
    assert r.gap["cost"].significant
    row = r.settings.set_index("spec").loc[LOW]
    assert row.held_out_cost == pytest.approx(held.cost.mean()) and row.train_cost == pytest.approx(train.cost.mean())


def test_the_held_out_rows_never_move_the_choice():
    split = tn.split_traces(_strata(n_per=2), seed=3)
    results = _fitting_results(split)
    worse = results.copy()
    on_held = worse.trace.isin(split.held_out) & (worse.strategy == LOW)
    worse.loc[on_held, "cost"] = 100.0
    worse.loc[on_held, "overflows"] = 3
    (a,) = tn.assess(results, [tn.search_space(GRID)], split)
    (b,) = tn.assess(worse, [tn.search_space(GRID)], split)
    assert a.chosen == b.chosen == LOW
    assert b.held_out["cost"].mean == pytest.approx(100.0) and b.held_out["overflows"] == 3 * len(split.held_out)
    assert "overflowed" in tn.format_tuning(tn.Tuning(Path("x"), split, "default", "equal", (b,)))


def test_the_sensitivity_compares_each_neighbouring_value_with_the_choice_on_held_out_traces():
    split = tn.split_traces(_strata(n_per=2), seed=1)
    traces = [*split.train, *split.held_out]
    cost = {(t, s): c for t in traces for s, c in ((LOW, 3.0), (MID, 1.0), (HIGH, 2.0))}
    for t in split.held_out:
        cost[(t, HIGH)] = 1.5
    (r,) = tn.assess(_results(cost, traces, [LOW, MID, HIGH]), [tn.search_space(GRID)], split)
    assert r.chosen == MID
    by = {n.value: n for n in r.neighbours}
    assert set(by) == {0.5, 0.9}
    assert by[0.5].cost_diff.mean_diff == pytest.approx(2.0)
    assert by[0.9].cost_diff.mean_diff == pytest.approx(0.5)  # the held-out figure, not the training one (1.0)
    assert by[0.9].retention_diff.mean_diff == 0


def test_a_none_relative_objective_uses_none_as_a_reference_never_as_the_choice():
    split = tn.split_traces(_strata(n_per=2), seed=0)
    traces = [*split.train, *split.held_out]
    labels = ["none", LOW, MID, HIGH]
    cost = {(t, s): c for t in traces for s, c in zip(labels, (0.1, 1.0, 2.0, 3.0), strict=True)}
    results = _results(cost, traces, labels)
    (r,) = tn.assess(results, [tn.search_space(GRID)], split, objective="retention>=none-0.05,min-cost")
    assert r.chosen == LOW and r.held_out_best == LOW and not r.gap


def test_nothing_feasible_on_the_training_part_ships_nothing_and_says_why():
    split = tn.split_traces(_strata(n_per=2), seed=0)
    results = _fitting_results(split)
    results["overflows"] = 1
    (r,) = tn.assess(results, [tn.search_space(GRID)], split)
    assert r.chosen is None and not r.held_out
    assert "nothing to ship" in "\n".join(tn._format_search(r))


# --- the grid ------------------------------------------------------------------------------------------------


def test_a_name_searches_the_grid_its_strategy_declares():
    s = tn.search_space("codex")
    assert s.grid == {"limit_fraction": (0.5, 0.6, 0.7, 0.8, 0.9)} and s.source["limit_fraction"].startswith("declared")
    assert s.ranges["limit_fraction"] == "(0, 1]" and s.defaults == {"limit_fraction": 0.9}
    fixed = tn.search_space("opencode@generation=tail")
    assert all("generation=tail" in label for label in fixed.labels()) and list(fixed.grid) == ["prune_protect"]
    assert tn.search_space("codex@limit_fraction=0.9|0.5").grid == {"limit_fraction": (0.5, 0.9)}  # in order


def test_a_grid_is_refused_before_any_replay_when_it_cannot_run():
    with pytest.raises(strategies.StrategyError, match=r"outside its range \(0, 1\]"):
        tn.search_space("codex@limit_fraction=0.5|1.5")
    with pytest.raises(tn.TuneError, match="swe-agent declares no tuning grid"):
        tn.search_space("swe-agent")
    with pytest.raises(tn.TuneError, match="nothing to tune"):
        tn.search_space("codex@limit_fraction=0.7")


def test_every_declared_tuning_grid_holds_its_default_inside_its_range():
    declared = 0
    for name, (_target, preset) in strategies.REGISTRY.items():
        cls, _ = strategies.resolve(name)
        for key, values in getattr(cls, "tuning", {}).items():
            if key in preset:
                continue
            declared += 1
            assert list(values) == sorted(set(values)) and len(values) >= 3, (name, key)
            default = next(f.default for f in cls.__dataclass_fields__.values() if f.name == key)
            assert default in values, (name, key, default)
            for v in values:
                strategies.build(strategies.StrategySpec(name, {key: v}))  # inside its range
    assert declared >= 4


def test_make_tune_runs_the_tune_command():
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ntune:", 1)[1].split("\n\n", 1)[0]
    assert "compaction-bench tune" in recipe and "--strategies $(TUNE)" in recipe


# --- the command, end to end ---------------------------------------------------------------------------------


def test_the_command_prints_training_and_held_out_figures_and_writes_its_files(tmp_path, capsys):
    code = main(["tune", "--strategies", "observation-masking@n=1|2|4", "--traces", "synthetic:tiny", "--seeds", "4",
                 "--out", str(tmp_path), "--name", "t", "--executor", "local", "--detail", "summary", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0, out
    table_text = out.split("\nevery setting on both parts:")[0]  # after it: paths, as long as the folder's
    assert all(len(line) <= tn.WIDTH for line in table_text.splitlines())
    assert "training (2 traces, chosen on them): $" in out and "held-out (2 traces, not seen by the choice): $" in out
    assert "ship: observation-masking@n=" in out and "95% CI" in out
    run_dir = tmp_path / "t"
    data = json.loads((run_dir / "tune.json").read_text())
    split = data["split"]
    assert set(split["train"]).isdisjoint(split["held_out"]) and len(split["train"]) == len(split["held_out"]) == 2
    (search,) = data["searches"]
    ship = search["ship"]["spec"]
    assert ship in {"observation-masking@n=1", "observation-masking@n=2", "observation-masking@n=4"}
    results = pd.read_csv(run_dir / "results.csv")
    held = results[results.trace.isin(split["held_out"]) & (results.strategy == ship)]
    assert search["held_out"]["cost"]["mean"] == pytest.approx(held.cost.mean())
    table = pd.read_csv(run_dir / "tune.csv")
    assert len(table) == 3 and table.chosen.sum() == 1 and table.loc[table.chosen, "spec"].item() == ship
    assert not math.isnan(table.held_out_cost.sum())


def test_the_command_refuses_what_it_cannot_tune_before_any_replay(tmp_path, capsys):
    assert main(["tune", "--strategies", "swe-agent", "--traces", "synthetic:tiny", "--out", str(tmp_path),
                 "--quiet"]) == 2
    assert "declares no tuning grid" in capsys.readouterr().err
    assert not (tmp_path / "tune").exists()
