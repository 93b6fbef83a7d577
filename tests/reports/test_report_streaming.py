"""The report reads the calls in bounded batches (issue 13): same figures as folding the whole frame.

The reference for every aggregate is the whole-frame code the report used before (``bench.economics``
through ``reports.scoring``, and the pandas group-by ``reports.tables`` did), run on the full calls
table; the streamed aggregates must equal it whatever the batch size, from a calls.csv export and
from the Parquet store.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import reports
from bench import store
from reports import callstats, scoring
from tests.reports.test_report import PNGS, write_fixture_run

WINDOW = 200_000


def _reference_call_stats(calls: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """What reports.tables._call_stats computed from the whole frame before streaming."""
    c = calls.assign(agent_break=calls.prefix_break.astype(bool) & (calls.kind == "agent"),
                     summarizer_cost=calls.cost.where(calls.kind == "summarizer", 0.0))
    g = c.groupby(keys)
    return pd.DataFrame({"cache_read": g.cache_read.sum(), "prompt": g.prompt_tokens.sum(),
                         "prefix_breaks": g.agent_break.sum(), "summarizer_cost": g.summarizer_cost.sum(),
                         "all_cost": g.cost.sum()}).astype(float)


def random_calls(seed: int = 3, traces: int = 7, strategies: tuple[str, ...] = ("none", "a", "b", "c")) -> pd.DataFrame:
    """Calls in record order: agent calls with summarizer calls between them, random prefix breaks,
    estimates that sometimes fit the window while the truth does not (hidden overflows)."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(traces):
        for s in strategies:
            prompt = 0
            for call in range(int(rng.integers(5, 60))):
                if s != "none" and rng.random() < 0.1:
                    rows.append({"trace": f"t{t}", "strategy": s, "call": call, "kind": "summarizer",
                                 "prompt_tokens": int(rng.integers(1_000, 9_000)), "estimate_tokens": 0,
                                 "cache_read": 0, "cache_write": 0, "uncached": 500, "output_tokens": 300,
                                 "cost": float(rng.uniform(0.001, 0.01)), "cost_no_cache": 0.02,
                                 "prefix_break": False, "overflow": False})
                    prompt = int(prompt * rng.uniform(0.1, 0.5))
                prompt += int(rng.integers(500, 12_000))
                brk = bool(rng.random() < 0.15)
                read = int(prompt * rng.uniform(0, 0.5)) if brk else int(prompt * 0.9)
                rows.append({"trace": f"t{t}", "strategy": s, "call": call, "kind": "agent", "prompt_tokens": prompt,
                             "estimate_tokens": int(prompt * rng.choice([0.5, 0.8, 1.0, 1.0, 1.25])),
                             "cache_read": read, "cache_write": prompt - read, "uncached": 0,
                             "output_tokens": int(rng.integers(50, 900)), "cost": float(rng.uniform(0.01, 0.2)),
                             "cost_no_cache": float(rng.uniform(0.05, 0.4)), "prefix_break": brk,
                             "overflow": prompt > WINDOW})
    return pd.DataFrame(rows)


def as_parquet_run(run_dir: Path, calls: pd.DataFrame, *, tasks_per_part: int = 3) -> Path:
    """A run folder holding ``calls`` only in the Parquet store (several parts, a plan), no calls.csv."""
    import pyarrow as pa

    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "calls.csv").unlink(missing_ok=True)
    st = store.Store(run_dir, batch_tasks=tasks_per_part)
    plan = []
    for i, ((t, s), g) in enumerate(calls.groupby(["trace", "strategy"], sort=False)):
        key = f"{t}|{s}"
        plan.append({"key": key, "trace": t, "strategy": s, "tpos": i, "spos": 0})
        st.add(store.TaskOutput(key, {"trace": t, "strategy": s, "error": ""},
                                {"calls": pa.Table.from_pandas(g.reset_index(drop=True), preserve_index=False)}))
    st.flush()
    store.write_plan(run_dir, pd.DataFrame(plan))
    return run_dir


def assert_same_as_whole_frame(stats: callstats.CallStats, calls: pd.DataFrame, events: pd.DataFrame) -> None:
    old = scoring.cost_truth(calls).set_index("strategy").sort_index()
    new = callstats.cost_truth(stats).set_index("strategy").sort_index()
    pd.testing.assert_frame_equal(old[new.columns], new, check_dtype=False)
    for keys in (["trace", "strategy"], ["strategy"]):
        ref = _reference_call_stats(calls, keys)
        got = reports.tables._call_stats(stats, keys).set_index(keys)[ref.columns].astype(float)
        pd.testing.assert_frame_equal(ref.sort_index(), got.sort_index())
    gaps = scoring.trigger_points(events, WINDOW)
    old_est = scoring.estimator(gaps, calls, WINDOW)
    new_est = callstats.estimator(gaps, stats, WINDOW)
    pd.testing.assert_frame_equal(old_est.reset_index(drop=True), new_est[old_est.columns].reset_index(drop=True),
                                  check_dtype=False)
    hidden = scoring.hidden_overflow_calls(calls, WINDOW)
    key = ["strategy", "trace", "call"]
    assert stats.hidden[key].sort_values(key).values.tolist() == hidden[key].sort_values(key).values.tolist()
    assert stats.agent_calls == int((calls.kind == "agent").sum())


@pytest.mark.parametrize("batch", [100, 7, callstats.BATCH_ROWS])
@pytest.mark.parametrize("where", ["parquet", "csv"])
def test_streamed_aggregates_equal_the_whole_frame(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   batch: int, where: str) -> None:
    calls = random_calls()
    assert calls.prefix_break.any() and (calls.kind == "summarizer").any() and len(calls) > 10 * 100
    if where == "csv":
        tmp_path.mkdir(exist_ok=True)
        calls.to_csv(tmp_path / "calls.csv", index=False)
        run_dir = tmp_path
    else:
        run_dir = as_parquet_run(tmp_path / "run", calls)
        assert len(list((run_dir / "data" / "calls").glob("part-*.parquet"))) > 3
    monkeypatch.setattr(callstats, "BATCH_ROWS", batch)
    seen: list[int] = []
    real = callstats.batches

    def spy(*args, **kwargs):
        for b in real(*args, **kwargs):
            seen.append(len(b))
            yield b

    monkeypatch.setattr(callstats, "batches", spy)
    stats = callstats.read(run_dir, WINDOW)
    assert seen and max(seen) <= batch
    events = pd.DataFrame([{"trace": "t0", "strategy": "a", "call": 3, "hook": "before_call", "kind": "summarize",
                            "tokens_before": 30_000, "estimate_before": 24_000}])
    assert_same_as_whole_frame(stats, calls, events)
    assert len(stats.hidden) > 0  # the data has hidden overflows, so that comparison meant something


def test_exact_percentiles_equal_numpy_over_batches() -> None:
    rng = np.random.default_rng(11)
    groups = rng.choice(["x", "y", "z", "w"], 5_000)
    values = np.round(rng.lognormal(0, 0.4, 5_000), 2)  # many ties
    values[groups == "w"] = 1.0  # a group of one value: every order statistic is in one bin
    values[::97] = np.nan

    def scan():
        for i in range(0, len(values), 100):
            yield groups[i:i + 100], values[i:i + 100]

    qs = (10, 50, 90, 99.9)
    got = callstats.exact_percentiles(scan, qs)
    for g in ("x", "y", "z", "w"):
        v = values[(groups == g) & ~np.isnan(values)]
        assert got[g]["n"] == len(v)
        for q in qs:
            assert got[g][f"p{q:g}"] == pytest.approx(float(np.percentile(v, q)), rel=1e-12, abs=1e-12), (g, q)


def _render(run_dir: Path) -> tuple[str, dict[str, bytes]]:
    page = reports.render(run_dir).read_text(encoding="utf-8")
    return page, {name: (run_dir / name).read_bytes() for name in PNGS}


def test_report_reads_calls_in_batches_and_draws_the_same_figures(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    reference = _render(write_fixture_run(tmp_path / "whole" / "fixture"))
    run_dir = write_fixture_run(tmp_path / "batched" / "fixture")
    as_parquet_run(run_dir, pd.read_csv(run_dir / "calls.csv"), tasks_per_part=2)
    seen: list[int] = []
    real = callstats.batches

    def spy(*args, **kwargs):
        for b in real(*args, **kwargs):
            seen.append(len(b))
            yield b

    def whole(run_dir: Path, table: str) -> pd.DataFrame:
        assert table != "calls", "the report loaded every call row at once"
        return real_load(run_dir, table)

    real_load = store.load_table
    monkeypatch.setattr(store, "load_table", whole)
    monkeypatch.setattr(callstats, "BATCH_ROWS", 3)
    monkeypatch.setattr(callstats, "batches", spy)
    page, pngs = _render(run_dir)
    assert seen and max(seen) <= 3 and sum(seen) >= 16  # every one of the fixture's 16 calls, 3 at a time
    assert pngs == reference[1]
    assert page == reference[0]
    assert json.loads((run_dir / "verdict.json").read_text()) == json.loads(
        (tmp_path / "whole" / "fixture" / "verdict.json").read_text())
