"""The charts a person deciding what to ship reads (issue 25): each answers its question.

- ``retention_by_round``: agents that compact a handful of times are not squeezed to a smear by one
  that compacts 160 times (each panel has its own x-axis).
- ``paired_ci``: strategies are compared with the verdict's choice, the runner-up first, not with
  ``none`` (against which everything was "significant").
- ``cost_cache``: the no-cache figure is text, so ``none``'s no-cache cost no longer sets the axis.
- ``context_over_calls``: on a recorded session, the agent's own strategy is drawn and its recorded
  compactions marked.
- the report's progress: a bar whose total is known when it opens and which ends full.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from reports import charts, score_charts


def _cliffs(rounds: dict[str, int]) -> pd.DataFrame:
    return pd.DataFrame([{"strategy": s, "rounds": n, "retention_by_round": {k: 1 - k / (n + 1) for k in
                                                                          range(1, n + 1)},
                          "cliff_round": np.nan} for s, n in rounds.items()])


@pytest.mark.parametrize("others", [3, 14])  # one plot's worth of strategies, and small multiples
def test_retention_by_round_panels_have_their_own_x_axis(tmp_path: Path, saved: list[Figure], others: int) -> None:
    rounds = {"gemini-cli": 160, **{f"agent{i}": 3 + i % 4 for i in range(others)}}
    score_charts.retention_by_round(_cliffs(rounds), charts.palette(list(rounds)), tmp_path / "r.png")
    (fig,) = saved
    panels = [a for a in fig.axes if a.get_visible() and a.get_lines()]
    assert len(panels) == len(rounds)  # the 160-round agent does not share a panel, or an axis, with the rest
    limits = {a.get_title(loc="left"): a.get_xlim() for a in panels}
    assert limits["gemini-cli"][1] == pytest.approx(160.5)
    for name, n in rounds.items():
        assert limits[name] == pytest.approx((0.5, n + 0.5)), name  # each to its own last round
    assert len({lim for lim in limits.values()}) > 1


def test_retention_by_round_keeps_one_plot_when_the_rounds_are_alike(tmp_path: Path, saved: list[Figure]) -> None:
    rounds = {"a": 5, "b": 6, "c": 8}
    score_charts.retention_by_round(_cliffs(rounds), charts.palette(list(rounds)), tmp_path / "r.png")
    assert len([a for a in saved[0].axes if a.get_lines()]) == 1


def _comparisons(reference: str) -> pd.DataFrame:
    rows = []
    for i, s in enumerate(["none", "b", "c", "d", "e"]):
        for metric in ("cost", "retention"):
            rows.append({"strategy": s, "baseline": reference, "metric": metric, "n": 5, "mean_baseline": 10.0,
                         "mean_strategy": 10.0 + i, "mean_diff": float(i), "ci_low": i - 0.5, "ci_high": i + 0.5,
                         "rel_low": (i - 0.5) / 10, "rel_high": (i + 0.5) / 10 if s != "none" else 8.0,
                         "verdict": "higher" if i else "not significant"})
    return pd.DataFrame(rows)


def test_paired_ci_names_its_reference_and_puts_the_runner_up_first(tmp_path: Path, saved: list[Figure]) -> None:
    score_charts.paired_ci(_comparisons("a"), ["a", "b", "c", "d", "e", "none"], tmp_path / "p.png",
                           reference="a", runner_up="c")
    fig = saved[0]
    assert "the verdict's choice, a" in fig._suptitle.get_text()
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels[-1] == "c  (runner-up)"  # the top row
    assert "none" in labels and "a" not in labels
    cost = fig.axes[0]
    assert cost.get_xlim()[1] < 800 * 0.5  # none's +800% end is cut at the edge, not the axis' reach


def test_the_report_compares_with_the_verdicts_choice(tmp_path: Path, saved: list[Figure]) -> None:
    import json

    from bench.run.runner import RunConfig, run
    from reports import Steps, render

    out = run(RunConfig(traces=("synthetic:reads",), seeds=3, strategies=("none", "codex", "opencode", "cline-half"),
                        workers=1, executor="local", out=str(tmp_path), name="r"), progress=False)
    steps = Steps(4)
    render(out.run_dir, progress=steps)
    assert steps.n == steps.total  # the bar's total, known when it opened, is what it ticked
    verdict = json.loads((out.run_dir / "verdict.json").read_text())
    chosen = (verdict.get("ship") or {}).get("spec")
    paired = [f for f in saved if f._suptitle is not None and "Paired difference" in f._suptitle.get_text()]
    assert chosen and paired
    assert f"the verdict's choice, {chosen}" in paired[0]._suptitle.get_text()
    labels = [t.get_text() for t in paired[0].axes[0].get_yticklabels()]
    assert chosen not in labels and "none" in labels
    if verdict.get("runner_up"):
        assert labels[-1] == f"{verdict['runner_up']}  (runner-up)"


def test_cost_cache_is_scaled_to_the_cached_costs(tmp_path: Path, saved: list[Figure]) -> None:
    totals = pd.DataFrame({"strategy": ["none", "a", "b", "c", "d"], "cost": [460.0, 135.0, 150.0, 170.0, 200.0],
                           "cost_no_cache": [4000.0, 1030.0, 700.0, 990.0, 1200.0]})
    charts.cost_with_without_cache(totals, charts.palette(totals.strategy.tolist()), tmp_path / "c.png")
    ax = saved[0].axes[0]
    assert len(ax.patches) == len(totals)  # one bar each: the no-cache cost is in the label
    assert ax.get_xlim()[1] < 1000  # was set by none's $4,000 without the cache
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "$4,000.00 without the cache, 88% saved" in texts.replace("\\", "")
    cheapest = max(ax.patches, key=lambda p: p.get_y())  # the top bar
    assert cheapest.get_width() / ax.get_xlim()[1] > 0.15  # not a sliver


def test_context_over_calls_draws_the_agents_own_strategy_and_its_recorded_compactions(
        tmp_path: Path, saved: list[Figure]) -> None:
    names = ["none", "claude-code:2.1.21", "amp"]
    calls = pd.DataFrame([{"trace": "t", "strategy": s, "call": c, "kind": "agent", "prompt_tokens": 1000 * c,
                           "overflow": False} for s in names for c in range(80)])
    charts.context_over_calls(calls, "t", names, charts.palette(names), tmp_path / "c.png", window=200_000,
                              recorded=[(61, "auto"), (70, "manual")], own="claude-code:2.1.21")
    ax = saved[0].axes[0]
    labels = [ln.get_label() for ln in ax.get_lines()]
    assert "claude-code:2.1.21 (the agent's own)" in labels
    def middle(p) -> int:  # a Rectangle from matplotlib 3.9, a Polygon before
        x = p.get_x() + p.get_width() / 2 if hasattr(p, "get_width") else np.mean(np.asarray(p.get_xy())[:, 0])
        return round(float(x))

    spans = sorted(middle(p) for p in ax.patches)
    assert spans == [61, 70]
    assert "recorded compaction" in [p.get_label() for p in ax.patches]
    assert {t.get_text() for t in ax.texts} >= {"recorded (auto)", "recorded (manual)"}
