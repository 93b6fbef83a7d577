"""The threshold-sweep section on a tiny run of one trace, written here, with hand-computed values.

``mask`` is run at n = 10, 2 and 5 (listed in that order: the report must sort 2 < 5 < 10 by
value, not as text), all with keep=1; ``none`` and ``llm`` are single strategies. Two agent calls
each, the second reading the first's 1,000 tokens from the cache:

    strategy              prompts       input   cost     cache-hit  retention (of 4 needles)
    none                  1000 + 3000   4000    $0.040   1000/4000  4/4 = 100%   (1 overflow)
    llm                   1000 + 1200   2200    $0.036   1000/2200  2/4 =  50%
    mask@keep=1,n=2       1000 + 1000   2000    $0.022   1000/2000  1/4 =  25%
    mask@keep=1,n=5       1000 + 1500   2500    $0.025   1000/2500  2/4 =  50%
    mask@keep=1,n=10      1000 + 2000   3000    $0.030   1000/3000  3/4 =  75%

Saving vs none: n=2 1 − 2000/4000 = 50.0%, n=5 37.5%, n=10 25.0%. n=2 is cheapest, n=10 retains
most. Pareto front (cost vs retention): none, n=10, n=5, n=2; llm is not on it (n=5 is cheaper
and retains as much).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest
from matplotlib import image

import reports
from reports import charts, scoring
from tests.reports.test_report import CALL_FIELDS, PROBE_FIELDS, RESULT_FIELDS, png_size, write_fixture_run
from tests.reports.test_report_scoring import cells, section

SWEEP = "mask@keep=1,n=2", "mask@keep=1,n=5", "mask@keep=1,n=10"
# label → (registry name, params, second prompt, total cost, needles retained of 4, compactions)
STRATEGIES = {
    "none": ("none", {}, 3000, 0.040, 4, 0),
    "mask@keep=1,n=10": ("mask", {"keep": 1, "n": 10}, 2000, 0.030, 3, 1),
    "llm": ("llm", {}, 1200, 0.036, 2, 1),
    "mask@keep=1,n=2": ("mask", {"keep": 1, "n": 2}, 1000, 0.022, 1, 4),
    "mask@keep=1,n=5": ("mask", {"keep": 1, "n": 5}, 1500, 0.025, 2, 2),
}
CHART = "sweep_cost_retention.png"


def write_sweep_run(run_dir: Path, *, probes: bool = True, strategies: dict | None = None) -> Path:
    strategies = strategies or STRATEGIES
    run_dir.mkdir(parents=True, exist_ok=True)
    with (run_dir / "calls.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CALL_FIELDS)
        for label, (_, _, second, cost, _, _) in strategies.items():
            w.writerow(["t1", label, 0, "agent", 2, 1000, 1000, 0, 1000, 0, 100, 0.010, 0.010, False, False, 0.0])
            w.writerow(["t1", label, 1, "agent", 3, second, second, 1000, second - 1000, 0, 100, cost - 0.010,
                        cost, False, label == "none", 10.0])
    with (run_dir / "results.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow([*RESULT_FIELDS, "retention"])
        for label, (_, _, second, cost, kept, compactions) in strategies.items():
            tokens = 1000 + second
            w.writerow(["t1", label, 2, tokens, 1 - tokens / 4000, second, tokens / 2, compactions,
                        int(label == "none"), cost, cost + 0.01, 0.0, "", "", kept / 4 if probes else ""])
    (run_dir / "events.jsonl").write_text("")
    (run_dir / "summaries.jsonl").write_text("")
    if probes:
        with (run_dir / "probes.csv").open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(PROBE_FIELDS)
            for label, (*_, kept, _) in strategies.items():
                for i in range(4):
                    cls = "retained-verbatim" if i < kept else "missing"
                    w.writerow(["t1", label, "end", 1, 0, f"fact-{i}", "fact", "planted", cls,
                                cls == "retained-verbatim", 500, 1])
    info = {"schema_version": 1, "config": {"name": "sweep", "model": "claude-sonnet-4-5"},
            "strategies": [{"label": label, "name": name, "params": params}
                           for label, (name, params, *_) in strategies.items()],
            "traces": [{"id": "t1", "agent": "synthetic", "calls": 2}]}
    (run_dir / "run.json").write_text(json.dumps(info))
    return run_dir


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    return reports.render(write_sweep_run(tmp_path_factory.mktemp("run") / "sweep")).read_text()


def sweeps_of(run_dir: Path) -> list[scoring.Sweep]:
    run = reports.load(run_dir)
    rows = reports.tables.trace_rows(run.results, run.calls)
    return reports.score(run, rows, reports.tables.strategy_totals(rows, run.calls)).sweeps


def test_sweep_rows_in_parameter_order_with_hand_computed_values(tmp_path: Path) -> None:
    [sweep] = sweeps_of(write_sweep_run(tmp_path / "run"))
    assert (sweep.family, sweep.keys, sweep.fixed, sweep.metric) == ("mask", ("n",), {"keep": 1}, "retention")
    r = sweep.rows.set_index("strategy")
    assert list(r.index) == list(SWEEP)
    assert r["param:n"].tolist() == ["2", "5", "10"]
    assert r.cost.tolist() == pytest.approx([0.022, 0.025, 0.030])
    assert r.input_tokens.tolist() == [2000, 2500, 3000]
    assert r.saving_vs_none.tolist() == pytest.approx([0.5, 0.375, 0.25])
    assert r.cache_hit_rate.tolist() == pytest.approx([1000 / 2000, 1000 / 2500, 1000 / 3000])
    assert r.retention.tolist() == pytest.approx([0.25, 0.5, 0.75])
    assert r.compactions.tolist() == [4, 2, 1] and r.overflows.tolist() == [0, 0, 0]
    assert r.cheapest.tolist() == [True, False, False]
    assert r.most_retained.tolist() == [False, False, True]


def test_pareto_front() -> None:
    points = pd.DataFrame({"strategy": list(STRATEGIES), "cost": [v[3] for v in STRATEGIES.values()],
                           "retention": [v[4] / 4 for v in STRATEGIES.values()]})
    front = scoring.pareto_front(points).set_axis(points.strategy)
    assert front.to_dict() == {"none": True, "mask@keep=1,n=10": True, "llm": False, "mask@keep=1,n=2": True,
                               "mask@keep=1,n=5": True}
    tie = pd.DataFrame({"cost": [1.0, 2.0, 1.0, None], "retention": [0.5, 0.5, 0.5, 0.9]})
    assert scoring.pareto_front(tie).tolist() == [True, False, True, False]


def test_section_table_and_badges(page: str) -> None:
    s = section(page, "sweeps")
    assert "<h2>Threshold sweeps</h2>" in s
    assert "<code>mask</code> by n <span class=n>(fixed: keep=1)</span>" in s
    table = s.split("<table")[1].split("</table>")[0]
    head = table.split("</thead>")[0]
    assert [h for h in ("n", "cost ↓", "input tokens ↓", "tokens saved vs none ↑", "overflows ↓", "cache-hit rate ↑",
                        "retention ↑", "compactions") if f">{h}</th>" in head] == [
        "n", "cost ↓", "input tokens ↓", "tokens saved vs none ↑", "overflows ↓", "cache-hit rate ↑", "retention ↑",
        "compactions"]
    rows = [cells(r) for r in table.split("<tbody>")[1].split("</tr>")[:-1]]
    assert rows == [["2 cheapest", "$0.0220", "2,000", "+50.0%", "0", "50%", "25%", "4"],
                    ["5", "$0.0250", "2,500", "+37.5%", "0", "40%", "50%", "2"],
                    ["10 retains most", "$0.0300", "3,000", "+25.0%", "0", "33%", "75%", "1"]]
    assert "llm" not in s and ">none<" not in s, "only swept families get a table"


def test_headline_names_the_sweep(page: str) -> None:
    findings = page.split('<ul class="findings">')[1].split("</ul>")[0]
    assert ("<li>Sweep <code>mask</code> n: <b>2</b> is cheapest ($0.0220), <b>10</b> retains most (75%).</li>"
            in findings)


def test_chart_is_drawn_and_loads(page: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    s = section(page, "sweeps")
    assert f'<img src="{CHART}"' in s and "Pareto front" in s and "needle retention" in s
    run_dir = write_sweep_run(tmp_path_factory.mktemp("again") / "sweep")
    reports.render(run_dir)
    assert png_size(run_dir / CHART) == charts.SIZE_PIXELS
    pixels = image.imread(run_dir / CHART)
    assert pixels.shape[:2] == charts.SIZE_PIXELS[::-1] and pixels.std() > 0


def test_without_probes_the_saving_stands_in(tmp_path: Path) -> None:
    page = reports.render(write_sweep_run(tmp_path / "run", probes=False)).read_text()
    s = section(page, "sweeps")
    assert "retention ↑" not in s and "saves most tokens" in s
    assert "this run has no needle probes, so the saving stands in for retention" in s
    assert png_size(tmp_path / "run" / CHART) == charts.SIZE_PIXELS
    assert "<b>2</b> is cheapest ($0.0220) and saves most tokens (50.0%)." in page


def test_a_default_setting_sorts_last_and_ties_get_no_badge(tmp_path: Path) -> None:
    strategies = {"none": STRATEGIES["none"], "mask@n=2": ("mask", {"n": 2}, 1000, 0.022, 2, 1),
                  "mask": ("mask", {}, 1500, 0.025, 2, 1)}
    run_dir = write_sweep_run(tmp_path / "run", strategies=strategies)
    [sweep] = sweeps_of(run_dir)
    assert sweep.rows.strategy.tolist() == ["mask@n=2", "mask"]
    assert sweep.rows["param:n"].tolist() == ["2", scoring.DEFAULT]
    page = reports.render(run_dir).read_text()
    assert "retains most</span>" not in section(page, "sweeps")
    assert "<b>2</b> is cheapest ($0.0220); every setting has the same retention (50%)." in page


def test_labels_alone_still_make_a_sweep() -> None:
    """An older run.json lists only labels: the family and parameters come from them."""
    totals = pd.DataFrame({"strategy": ["x@t=100", "x@t=20"], "cost": [2.0, 1.0]})
    [sweep] = scoring.sweeps({"strategies": [{"label": "x@t=100"}, {"label": "x@t=20"}]}, totals)
    assert (sweep.family, sweep.keys, sweep.metric) == ("x", ("t",), None)
    assert sweep.rows["param:t"].tolist() == ["20", "100"]


def test_no_sweep_no_section(tmp_path: Path) -> None:
    page = reports.render(write_fixture_run(tmp_path / "run")).read_text()
    assert 'id="sweeps"' not in page and "Threshold sweeps" not in page and "Sweep " not in page
    assert not (tmp_path / "run" / CHART).exists()


def test_an_overflowing_setting_is_never_best_nor_on_the_front(tmp_path: Path) -> None:
    run_dir = write_sweep_run(tmp_path / "run")
    results = pd.read_csv(run_dir / "results.csv")
    results.loc[results.strategy == "mask@keep=1,n=2", "overflows"] = 3  # the cheapest setting now overflows
    results.to_csv(run_dir / "results.csv", index=False)
    page = reports.render(run_dir).read_text()
    # n=2 ($0.022) is left out: n=5 ($0.025) is the cheapest setting that never overflowed.
    assert ("<b>5</b> is cheapest ($0.0250) of the settings that never overflowed (left out: <b>2</b>)") in page
    front = page.split("Pareto front on cost and needle retention")[1].split("</li>")[0]
    assert "mask@keep=1,n=2" not in front.split("Left out")[0] and "<b>mask@keep=1,n=2</b>" in front
    sweep = scoring.sweeps(json.loads((run_dir / "run.json").read_text()),
                           reports.tables.strategy_totals(reports.tables.trace_rows(results, pd.read_csv(
                               run_dir / "calls.csv")), pd.read_csv(run_dir / "calls.csv")))[0]
    assert not sweep.rows.set_index("strategy").loc["mask@keep=1,n=2", "cheapest"]
    # The metric against the parameter, one column per family, and the verdict first on the page.
    assert png_size(run_dir / "sweep_by_parameter.png") == charts.SIZE_PIXELS
    assert 'src="sweep_by_parameter.png"' in page
    assert page.index('id="verdict-sentence"') < page.index('<ul class="findings">')


def test_self_contained_report_embeds_every_chart(tmp_path: Path) -> None:
    page = reports.render(write_sweep_run(tmp_path / "run"), self_contained=True).read_text()
    assert 'src="data:image/png;base64,' in page
    assert not [src for src in __import__("re").findall(r'<img src="([^"]+)"', page) if not src.startswith("data:")]
