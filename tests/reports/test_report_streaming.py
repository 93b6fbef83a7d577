"""The report reads the calls in bounded batches (issue 13): same figures as folding the whole frame.

The reference for every aggregate is the whole-frame code the report used before (``bench.scoring.economics``
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
from bench.run import store
from reports import batches, callstats, compactions, eventstats, probestats, scoring, summarystats
from reports.scoring import CLASSES, FALSE_POSITIVE
from tests.reports.test_report import PNGS, write_fixture_run

WINDOW = 200_000


def counted_batches(module, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Patch ``module.batches`` to pass its batches through and record each one's length."""
    seen: list[int] = []
    real = module.batches

    def spy(*args, **kwargs):
        for b in real(*args, **kwargs):
            seen.append(len(b))
            yield b

    monkeypatch.setattr(module, "batches", spy)
    return seen


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
    new_est = callstats.estimator(callstats.triggers_from_gaps(gaps, WINDOW), stats, WINDOW)
    pd.testing.assert_frame_equal(old_est.reset_index(drop=True), new_est[old_est.columns].reset_index(drop=True),
                                  check_dtype=False)
    hidden = scoring.hidden_overflow_calls(calls, WINDOW)
    key = ["strategy", "trace", "call"]
    assert stats.hidden[key].sort_values(key).values.tolist() == hidden[key].sort_values(key).values.tolist()
    assert stats.agent_calls == int((calls.kind == "agent").sum())


@pytest.mark.parametrize("batch", [100, 7, batches.BATCH_ROWS])
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
    monkeypatch.setattr(batches, "BATCH_ROWS", batch)
    seen = counted_batches(callstats, monkeypatch)
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
    def whole(run_dir: Path, table: str) -> pd.DataFrame:
        assert table != "calls", "the report loaded every call row at once"
        return real_load(run_dir, table)

    real_load = store.load_table
    monkeypatch.setattr(store, "load_table", whole)
    monkeypatch.setattr(batches, "BATCH_ROWS", 3)
    seen = counted_batches(callstats, monkeypatch)
    page, pngs = _render(run_dir)
    assert seen and max(seen) <= 3 and sum(seen) >= 16  # every one of the fixture's 16 calls, 3 at a time
    assert pngs == reference[1]
    assert page == reference[0]
    assert json.loads((run_dir / "verdict.json").read_text()) == json.loads(
        (tmp_path / "whole" / "fixture" / "verdict.json").read_text())


# -- events, summaries and probes (issue 13: the report streams them too) -------------------------


STREAMED = ("calls", "events", "summaries", "probes")


def random_probes(seed: int = 5, n: int = 3_000) -> pd.DataFrame:
    """Probes of every moment, class and kind (controls too), ages across every bucket, rounds 1–4."""
    rng = np.random.default_rng(seed)
    moment = rng.choice(["end", "compaction"], n, p=[0.6, 0.4])
    kind = rng.choice(["fact", "error", "constraint", "control"], n)
    cls = np.where(kind == "control", rng.choice(["missing", FALSE_POSITIVE], n), rng.choice(list(CLASSES), n))
    return pd.DataFrame({
        "trace": rng.choice([f"t{i}" for i in range(9)], n), "strategy": rng.choice(["none", "a", "b", "c"], n),
        "moment": moment, "call": rng.integers(1, 200, n), "round": np.where(moment == "end", 0, rng.integers(1, 5, n)),
        "needle": [f"n-{i % 37}" for i in range(n)], "needle_kind": kind, "source": "planted", "cls": cls,
        "retained": cls == "retained-verbatim", "age_tokens": rng.integers(0, 300_000, n).astype(float),
        "age_calls": rng.integers(0, 180, n).astype(float)})


def random_events(seed: int = 8, n: int = 2_000) -> pd.DataFrame:
    """Events in record order, with chained follow-ups (same outcome), unmeasured actions and late triggers."""
    rng = np.random.default_rng(seed)
    rows = []
    while len(rows) < n:
        t, s, call = f"t{rng.integers(0, 6)}", str(rng.choice(["a", "b", "c"])), int(rng.integers(1, 300))
        before = int(rng.choice([0, rng.integers(10_000, 260_000)], p=[0.1, 0.9]))
        est = int(before * rng.uniform(0.6, 1.3))
        after = before // 3
        rows.append({"trace": t, "strategy": s, "call": call, "hook": "before_call",
                     "kind": str(rng.choice(["summarize", "mask", "truncate"])), "tokens_before": before,
                     "tokens_after": after, "estimate_before": est, "messages_touched": 2, "summary_tokens": None,
                     "detail": ""})
        if rng.random() < 0.2:  # a reinject continuing that outcome: chained, left out
            rows.append({**rows[-1], "kind": "reinject", "tokens_before": after, "tokens_after": after + 900})
    return pd.DataFrame(rows)


def random_summaries(seed: int = 4, n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    strategy = rng.choice(["a", "b", "claude-code"], n)
    return pd.DataFrame({"trace": rng.choice(["t1", "t2"], n), "strategy": strategy, "call": rng.integers(1, 99, n),
                         "tokens": rng.integers(50, 40_000, n),
                         "max_tokens": np.where(strategy == "a", np.nan, np.where(strategy == "b", 20_000.0,
                                                rng.choice([np.nan, 32_000.0], n))),
                         "text": [f"summary {i} " * int(rng.integers(1, 6)) for i in range(n)]})


@pytest.mark.parametrize("batch", [17, 250, batches.BATCH_ROWS])
def test_probe_counts_give_the_whole_frame_retention(monkeypatch: pytest.MonkeyPatch, batch: int) -> None:
    probes = random_probes()
    monkeypatch.setattr(batches, "BATCH_ROWS", batch)
    got = probestats.from_frame(probes)
    tripled = probestats.from_frame(pd.concat([probes] * 3, ignore_index=True))
    assert len(tripled.counts) == len(got.counts)  # cells, not rows: three times the probes, no more memory
    assert tripled.counts.n.sum() == 3 * got.counts.n.sum() == 3 * len(probes)
    ages = scoring.age_buckets(probes)
    pd.testing.assert_frame_equal(probestats.retention_overall(got), scoring.retention_overall(ages))
    pd.testing.assert_frame_equal(probestats.cliff_table(got), scoring.cliff_table(ages))
    assert (scoring.cliff_table(ages).rounds == 4).all()
    for col in ("needle_kind", "age_tokens_bucket", "age_calls_bucket"):
        old = scoring.retention_by(ages, col).reset_index(drop=True)
        pd.testing.assert_frame_equal(probestats.retention_by(got, col).reset_index(drop=True), old)


def _old_age_grid(probes: pd.DataFrame, strategies: list[str]) -> tuple:
    """charts.retention_by_age's grid as it computed it from the whole frame before streaming."""
    from reports.charts import AGE_EDGES, AGE_LABELS

    p = probes[(probes.needle_kind != "control") & (probes.moment == "end")]
    bins = pd.cut(p.age_tokens, AGE_EDGES, labels=AGE_LABELS, right=False)
    cols = [c for c in AGE_LABELS if (bins == c).any()]
    rows = [s for s in strategies if (p.strategy == s).any()]
    verbatim = np.full((len(rows), len(cols)), np.nan)
    by_ref = np.zeros_like(verbatim)
    for i, s in enumerate(rows):
        for j, c in enumerate(cols):
            cell = p[(p.strategy == s) & (bins == c)]
            if len(cell):
                verbatim[i, j] = (cell.cls == "retained-verbatim").mean()
                by_ref[i, j] = (cell.cls == "recoverable-by-reference").mean()
    return rows, cols, verbatim, by_ref, [int((bins == c).sum()) for c in cols]


def test_age_grid_equals_the_whole_frame_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    probes = random_probes(seed=9)
    probes = probes[~((probes.strategy == "c") & (probes.age_tokens >= 128_000))]  # an empty cell
    monkeypatch.setattr(batches, "BATCH_ROWS", 13)
    grid = probestats.age_grid(probestats.from_frame(probes), ["none", "a", "b", "c", "absent"])
    rows, cols, verbatim, by_ref, counts = _old_age_grid(probes, ["none", "a", "b", "c", "absent"])
    assert (grid.rows, grid.cols, grid.counts) == (rows, cols, counts)
    np.testing.assert_array_equal(grid.verbatim, verbatim)
    np.testing.assert_array_equal(grid.by_ref, by_ref)
    assert np.isnan(grid.verbatim).sum() == 1


@pytest.mark.parametrize("batch", [1, 9, batches.BATCH_ROWS])
def test_event_aggregates_equal_the_whole_frame(monkeypatch: pytest.MonkeyPatch, batch: int) -> None:
    events = random_events(n=150 if batch == 1 else 1_500)
    monkeypatch.setattr(batches, "BATCH_ROWS", batch)
    got = eventstats.from_frame(events, WINDOW)
    gaps = scoring.trigger_points(events, WINDOW)
    assert len(gaps) < len(events) and gaps.late.any()  # chained and unmeasured events were dropped
    old = callstats.triggers_from_gaps(gaps, WINDOW)
    pd.testing.assert_frame_equal(got.triggers.reset_index(drop=True), old[eventstats.TRIGGER_COLUMNS],
                                  check_dtype=False)
    assert got.points.strategy.tolist() == gaps.strategy.tolist()  # every point, in record order
    assert got.points.ratio.tolist() == gaps.ratio.tolist()
    pivot = events.pivot_table(index="strategy", columns="kind", values="trace", aggfunc="count", fill_value=0)
    pd.testing.assert_frame_equal(got.kinds, pivot)
    assert got.rows == len(events)


def test_event_chart_points_are_capped_and_the_figures_stay_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    events = random_events(n=3_000)
    monkeypatch.setattr(batches, "BATCH_ROWS", 97)
    monkeypatch.setattr(eventstats, "CHART_POINTS", 50)
    got = eventstats.from_frame(events, WINDOW)
    by_task = events.sort_values(["trace", "strategy"], kind="stable").reset_index(drop=True)  # another task order
    full = eventstats.from_frame(by_task, WINDOW)
    assert got.points.strategy.value_counts().max() == 50
    assert sorted(got.points.ratio) == sorted(full.points.ratio)  # the same sample whatever the order
    old = callstats.triggers_from_gaps(scoring.trigger_points(events, WINDOW), WINDOW)
    pd.testing.assert_frame_equal(got.triggers.reset_index(drop=True), old[eventstats.TRIGGER_COLUMNS],
                                  check_dtype=False)


@pytest.mark.parametrize("batch", [3, 33, batches.BATCH_ROWS])
def test_summary_sizes_equal_the_whole_frame(monkeypatch: pytest.MonkeyPatch, batch: int) -> None:
    from bench.scoring import stats

    summaries = random_summaries()
    monkeypatch.setattr(batches, "BATCH_ROWS", batch)
    got = summarystats.from_frame(summaries)
    old = stats.summary_sizes(summaries)
    pd.testing.assert_frame_equal(got.sizes, old)
    assert set(old.reserve_source) == {"default", "strategy", "mixed"} and old.over_reserve.sum() > 0
    assert got.points.tokens.tolist() == summaries.tokens.tolist()


def fixture_in_store(run_dir: Path, *, tasks_per_part: int = 2) -> Path:
    """The fixture run's calls, events, summaries and probes moved into the Parquet store, its tasks
    written in reverse plan order (so part order is not record order), the exports deleted."""
    import pyarrow as pa

    results = pd.read_csv(run_dir / "results.csv")
    tables = {"calls": pd.read_csv(run_dir / "calls.csv"), "probes": pd.read_csv(run_dir / "probes.csv")}
    for name in ("events", "summaries"):
        tables[name] = pd.DataFrame([json.loads(x) for x in (run_dir / f"{name}.jsonl").read_text().splitlines()])
    st = store.Store(run_dir, batch_tasks=tasks_per_part)
    plan = [{"key": f"{t}|{s}", "trace": t, "strategy": s, "tpos": i, "spos": 0}
            for i, (t, s) in enumerate(zip(results.trace, results.strategy, strict=True))]
    for task in reversed(plan):
        out = {}
        for name, df in tables.items():
            g = df[(df.trace == task["trace"]) & (df.strategy == task["strategy"])].reset_index(drop=True)
            if len(g):
                out[name] = (g.to_dict("records") if name == "probes"
                             else pa.Table.from_pandas(g, preserve_index=False))
        st.add(store.TaskOutput(task["key"], {"trace": task["trace"], "strategy": task["strategy"], "error": ""},
                                out))
    st.flush()
    store.write_plan(run_dir, pd.DataFrame(plan))
    for name in STREAMED:
        (run_dir / store.EXPORTS[name]).unlink()
    return run_dir


def _pages(run_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((run_dir / "compactions").glob("*.html"))}


def test_report_streams_events_summaries_and_probes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reference = _render(write_fixture_run(tmp_path / "fixture"))
    ref_pages = _pages(tmp_path / "fixture")
    run_dir = fixture_in_store(write_fixture_run(tmp_path / "store" / "fixture"))
    assert len(list((run_dir / "data" / "probes").glob("part-*.parquet"))) >= 2
    def whole(run_dir: Path, table: str) -> pd.DataFrame:
        raise AssertionError(f"the report loaded the whole {table} table")

    real_load = store.load_table
    monkeypatch.setattr(store, "load_table", lambda d, t: whole(d, t) if t in STREAMED else real_load(d, t))
    monkeypatch.setattr(batches, "BATCH_ROWS", 2)
    seen = counted_batches(batches, monkeypatch)
    page, pngs = _render(run_dir)
    assert seen and max(seen) <= 2
    assert pngs == reference[1]
    # the page names its own folder in the `compaction-bench show` hints: the rest must be the same
    assert page == reference[0]
    assert {k: v.replace(str(run_dir).encode(), b"RUN") for k, v in _pages(run_dir).items()} == \
        {k: v.replace(str(tmp_path / "fixture").encode(), b"RUN") for k, v in ref_pages.items()}
    assert b"needles lost here" in b"".join(ref_pages.values())  # the pages had something to lose


def test_compaction_pages_from_frames_match_pages_from_the_run(tmp_path: Path) -> None:
    run_dir = write_fixture_run(tmp_path / "fixture")
    frames = compactions.from_frames(store.load_table(run_dir, "events"), store.load_table(run_dir, "summaries"),
                                     store.load_table(run_dir, "probes"))
    streamed = compactions.from_run(run_dir)
    for strategy in ("llm", "mask", "none"):
        (e1, s1, l1), (e2, s2, l2) = frames(strategy), streamed(strategy)
        assert l1 == l2 and len(e1) == len(e2) and (s1 is None) == (s2 is None)
    strategies = ["none", "llm", "mask"]
    compactions.write(run_dir, strategies, frames)
    whole = _pages(run_dir)
    compactions.write(run_dir, strategies, streamed)
    assert _pages(run_dir) == whole and b"<pre>summary</pre>" in whole["llm.html"]


def test_a_jsonl_export_read_for_one_strategy_parses_only_lines_that_can_match(tmp_path, monkeypatch):
    """The per-strategy read skips lines without the strategy's value unparsed, and keeps exactly the
    rows a full parse would: a value that stands elsewhere in the line (here a key), or escaped differently
    (non-ASCII written raw or as \\u escapes), still matches rightly; positions count every line."""
    import json as _json

    from reports import batches

    rows = [{"strategy": "codex", "text": "x"}, {"strategy": "none", "text": "z", "codex": True},
            {"strategy": "café", "text": "raw"}, {"strategy": "codex", "text": "y"}]
    path = tmp_path / "events.jsonl"
    path.write_text(_json.dumps(rows[0]) + "\n" + _json.dumps(rows[1]) + "\n"
                    + _json.dumps(rows[2], ensure_ascii=False) + "\n" + _json.dumps(rows[3]) + "\n", encoding="utf-8")
    parsed = []
    real = _json.loads
    monkeypatch.setattr(batches.json, "loads", lambda s: parsed.append(s) or real(s))
    codex = pd.concat(list(batches._jsonl(path, None, {"strategy": "codex"})))
    assert codex.text.tolist() == ["x", "y"] and codex._pos.tolist() == [0, 3]
    assert len(parsed) == 3  # "none"'s line holds "codex" as a key, so it is parsed, then refused
    cafe = pd.concat(list(batches._jsonl(path, None, {"strategy": "café"})))
    assert cafe.text.tolist() == ["raw"] and cafe._pos.tolist() == [2]


def test_pairs_from_one_wide_table_equal_pairs_built_alone():
    from bench.decide import verdict as bv

    results = pd.DataFrame({"trace": ["t1", "t2", "t3"] * 3, "strategy": ["a"] * 3 + ["b"] * 3 + ["c"] * 3,
                            "cost": [1.0, 2.0, 3.0, 1.5, 2.5, 2.0, 0.5, 0.7, 0.9], "error": [""] * 8 + ["boom"]})
    wide = bv.per_trace(results, "cost")
    for x, y in (("a", "b"), ("b", "c"), ("a", "c")):
        assert bv.paired(results, x, y, "cost", resamples=200, wide=wide) == bv.paired(results, x, y, "cost",
                                                                                          resamples=200)
