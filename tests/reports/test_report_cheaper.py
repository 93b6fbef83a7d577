"""Issue 28: the report's cheaper paths give what the code they replaced gave.

Each test keeps the replaced code (as it stood at 0ffa7b8) as its reference and feeds both the
awkward inputs the fast path must not change: CRLF and blank lines, a strategy spelled with
\\u escapes, a value standing elsewhere in a line, None and NaN cells, a float call, a summary
written twice at one call, and batches smaller than the input.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.decide import verdict as bv
from reports import batches, charts, compactions, decision, sections
from tests.reports.test_report_streaming import random_events, random_probes, random_summaries


def _old_trace_html(trace, g, s, lost_at) -> str:
    """``compactions._trace_html`` at 0ffa7b8: iterrows, and the summaries filtered per event."""
    rows = []
    for _, r in g.sort_values("call").iterrows():
        text = ""
        if s is not None and r.kind in ("summarize", "handoff"):
            hit = s[(s.trace == trace) & (s.call == r.call)]
            text = "" if hit.empty else f"<pre>{html.escape(str(hit.text.iloc[0]))}</pre>"
        lost = sorted(lost_at.get((str(trace), int(r.call)), []))
        lost_html = f'<div class=lost>needles lost here: {html.escape(", ".join(lost))}</div>' if lost else ""
        rows.append(f"<tr><td class=num>{int(r.call)}</td><td>{html.escape(str(r.kind))}</td>"
                    f"<td>{html.escape(str(r.get('hook', '')))}</td>"
                    f"<td class=num>{int(r.tokens_before):,} → {int(r.tokens_after):,}</td>"
                    f"<td class=num>{int(r.get('messages_touched', 0) or 0):,}</td>"
                    f"<td>{html.escape(str(r.get('detail', '') or ''))}{lost_html}{text}</td></tr>")
    return (f"<details open><summary><code>{html.escape(str(trace))}</code>: {len(g)} events</summary>"
            "<table><thead><tr><th>call</th><th>event</th><th>hook</th><th>tokens before → after</th>"
            "<th>messages</th><th>detail, needles lost, summary written</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></details>")


def _awkward_jsonl(path: Path) -> list[dict]:
    """Rows written with CRLF and LF endings, blank lines, a strategy \\u-escaped (the per-strategy read
    never kept it: the value is not spelled in the line), one raw non-ASCII, a strategy name as a key."""
    rows = [{"trace": "t1", "strategy": "a", "call": 3, "hook": None, "kind": "summarize", "tokens_before": 10,
             "tokens_after": 4, "detail": "x"},
            {"trace": "t1", "strategy": "b", "call": 2, "kind": "mask", "tokens_before": 9, "tokens_after": 8,
             "a": True},
            {"trace": "t2", "strategy": "café", "call": 1, "kind": "mask", "tokens_before": 5, "tokens_after": 1},
            {"trace": "t2", "strategy": "a", "call": 7, "kind": "handoff", "tokens_before": 50, "tokens_after": 2,
             "messages_touched": None}]
    text = (json.dumps(rows[0]) + "\r\n\r\n" + json.dumps(rows[1]) + "\n"
            + json.dumps(rows[2], ensure_ascii=False) + "\n   \n" + json.dumps(rows[3]) + "\r\n"
            + json.dumps({**rows[3], "call": 8}).replace('"a"', '"\\u0061"', 1) + "\n")
    path.write_bytes(text.encode("utf-8"))
    return rows


@pytest.mark.parametrize("batch", [1, 2, batches.BATCH_ROWS])
def test_by_strategy_reads_what_a_filtered_read_of_each_strategy_reads(tmp_path, monkeypatch, batch):
    monkeypatch.setattr(batches, "BATCH_ROWS", batch)
    run = tmp_path / "run"
    run.mkdir()
    _awkward_jsonl(run / "events.jsonl")
    many = random_events(n=300)
    many.to_json(run / "summaries.jsonl", orient="records", lines=True)
    for table, columns in (("events", None), ("summaries", ("trace", "strategy", "call", "kind"))):
        split = batches.ByStrategy(run, table, columns, rows=True)
        for strategy in ("a", "b", "café", "c", "nowhere"):
            old = list(batches.batches(run, table, columns, strategy=strategy, rows=True))
            new = list(split(strategy))
            assert len(old) == len(new)
            for o, n in zip(old, new, strict=True):
                pd.testing.assert_frame_equal(o, n)
    # the \\u-escaped line is read by neither (the index applies the same rule); "b" holds "a" as a key only
    a = batches.in_order(batches.ByStrategy(run, "events", rows=True)("a"))
    assert a.call.tolist() == [3, 7] and a.hook.isna().all()


def test_by_strategy_reads_the_export_for_its_index_once(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    random_events(n=200).to_json(run / "events.jsonl", orient="records", lines=True)
    opened = []
    real = Path.open
    monkeypatch.setattr(Path, "open", lambda self, *a, **k: opened.append((self.name, a, k)) or real(self, *a, **k))
    split = batches.ByStrategy(run, "events", rows=True)
    for strategy in ("a", "b", "c"):
        list(split(strategy))
    text_reads = [o for o in opened if "rb" not in o[1]]
    assert len(text_reads) == 1 and len(opened) == 4  # one scan, then each strategy's own lines by offset


@pytest.mark.parametrize("batch", [7, batches.BATCH_ROWS])
def test_lost_needles_from_one_pass_equal_each_strategy_read_alone(tmp_path, monkeypatch, batch):
    monkeypatch.setattr(batches, "BATCH_ROWS", batch)
    run = tmp_path / "run"
    run.mkdir()
    probes = random_probes(n=600)
    probes.loc[5, "strategy"] = None  # a probe without a strategy is nobody's
    probes.to_csv(run / "probes.csv", index=False)
    every = compactions._lost_by_strategy(batches.batches(run, "probes", compactions.PROBE_COLUMNS))
    for strategy in ("none", "a", "b", "c", "nowhere"):
        alone: compactions.Lost = {}
        for p in batches.batches(run, "probes", compactions.PROBE_COLUMNS, strategy=strategy):
            for at, needles in compactions.lost_needles(p).items():
                alone.setdefault(at, []).extend(needles)
        assert every.get(strategy, {}) == alone
    assert any(every.values())


def test_trace_html_equals_the_filtering_version(tmp_path):
    events = pd.DataFrame(_awkward_jsonl(tmp_path / "e.jsonl"))
    events = pd.concat([events, pd.DataFrame(random_events(n=120))], ignore_index=True)
    events.loc[events.index[-1], "detail"] = None
    events["messages_touched"] = events.messages_touched.fillna(0).astype(int)  # NaN fails int() in both
    summaries = random_summaries(n=200)
    summaries = pd.concat([summaries, pd.DataFrame([
        {"trace": "t1", "strategy": "a", "call": 3.0, "text": "first at 3 (a float call)"},
        {"trace": "t1", "strategy": "a", "call": 3, "text": "second at 3: never shown"},
        {"trace": "t2", "strategy": "a", "call": 7, "text": None},
        {"trace": None, "strategy": "a", "call": 7, "text": "no trace"}])], ignore_index=True)
    lost = {("t1", 3): ["n-2", "n-1"], ("t2", 7): ["n-9"]}
    for s in (summaries, None, summaries.iloc[:0]):
        for trace, g in events.groupby("trace", sort=True):
            assert compactions._trace_html(trace, g, s, lost) == _old_trace_html(trace, g, s, lost)
    page = compactions._trace_html("t1", events[events.trace == "t1"], summaries, lost)
    assert "first at 3 (a float call)" in page and "never shown" not in page


def test_trace_html_rows_of_text_only_keep_what_iterrows_gives():
    """Without an integer column a row could be all text, where iterrows turns None into NaN: the
    rows then come from iterrows itself."""
    g = pd.DataFrame({"trace": ["t"], "call": ["4"], "kind": ["mask"], "hook": [None], "tokens_before": ["5"],
                      "tokens_after": ["1"]})
    assert compactions._trace_html("t", g, None, {}) == _old_trace_html("t", g, None, {})


def _old_heat(long, column, order, title) -> str:
    if long.empty:
        return ""
    cats = [c for c in (long[column].cat.categories if hasattr(long[column], "cat") else sorted(long[column].unique()))
            if (long[column] == c).any()]
    head = "<tr><th>strategy</th>" + "".join(f"<th class=num>{html.escape(str(c))}</th>" for c in cats) + "</tr>"
    body = []
    for s in [s for s in order if (long.strategy == s).any()]:
        cells = []
        for c in cats:
            hit = long[(long.strategy == s) & (long[column] == c)]
            if hit.empty:
                cells.append("<td class=num>·</td>")
                continue
            v, n = float(hit.retention.iloc[0]), int(hit.n.iloc[0])
            cells.append(f'<td class=num style="background:hsl({v * 125:.0f},62%,86%)">{v:.0%}'
                         f" <span class=n>n={n}</span></td>")
        body.append(f"<tr><td class=name>{html.escape(s)}</td>{''.join(cells)}</tr>")
    return (f"<h3>{html.escape(title)}</h3><div class=scroll><table class=\"plain heat\"><thead>{head}</thead>"
            f"<tbody>{''.join(body)}</tbody></table></div>")


def test_heat_equals_the_filtering_version():
    rng = np.random.default_rng(1)
    long = pd.DataFrame({"strategy": rng.choice(["a", "b", "c"], 40), "kind": rng.choice(["x", "y", "z"], 40),
                         "n": rng.integers(1, 9, 40), "retention": rng.uniform(0, 1, 40)})
    buckets = long.assign(kind=pd.Categorical(long.kind, categories=["z", "y", "x", "w"], ordered=True))
    buckets.loc[3, "kind"] = None  # a missing bucket (sorting unique values with one fails in both)
    for frame in (long, buckets, long.iloc[:0]):
        assert sections.heat(frame, "kind", ["c", "a", "b", "d"], "T") == _old_heat(frame, "kind", ["c", "a", "b", "d"],
                                                                                   "T")


def test_first_free_spot_is_the_first_of_a_full_test():
    rng = np.random.default_rng(2)
    for _ in range(50):
        box = rng.uniform(0, 500, (3000, 2))
        box = np.column_stack([box, box + rng.uniform(5, 40, (3000, 2))])
        corner = rng.uniform(0, 500, (60, 2))
        taken = [tuple(b) for b in np.column_stack([corner, corner + 60]).tolist()]
        inside = rng.random(3000) < 0.9
        ok = np.flatnonzero(inside & charts._free(box, taken))
        assert charts._first_free(box, inside, taken) == (int(ok[0]) if len(ok) else 0)
    assert charts._first_free(box, np.zeros(3000, bool), taken) == 0


@pytest.mark.parametrize("weight", ["equal", "calls"])
def test_every_pair_equals_paired_one_pair_at_a_time(weight):
    rng = np.random.default_rng(3)
    traces, strategies = [f"t{i}" for i in range(7)], ["a", "b", "c", "d"]
    results = pd.DataFrame([{"trace": t, "strategy": s, "cost": float(rng.uniform(0.1, 2)),
                             "calls": int(rng.integers(5, 50)), "agent_calls": int(rng.integers(5, 50)),
                             "peak_context": int(rng.integers(1000, 9000)), "error": ""}
                            for t in traces for s in strategies])
    results.loc[(results.trace == "t2") & (results.strategy == "c"), "error"] = "boom"  # c misses t2
    results.loc[(results.trace == "t4") & (results.strategy == "b"), "cost"] = np.nan
    wide = bv.per_trace(results, "cost")
    pair = decision._paired(results, wide, 300, weight)
    for a in strategies + ["absent"]:
        for b in strategies:
            if a != b:
                assert repr(pair(a, b)) == repr(bv.paired(results, a, b, "cost", resamples=300, weight=weight,
                                                          wide=wide))  # repr: nan == nan


@pytest.mark.parametrize(("size", "held", "scans_wanted"), [(5_000, 1 << 21, 1), (100, 1 << 21, 1), (100, 4_999, 3),
                                                         (5_000, 4_999, 3)])
def test_exact_percentiles_read_a_small_scan_once(size, held, scans_wanted):
    """A scan of at most ``held_values`` values (in any number of batches) is read once and serves passes 2
    and 3; a larger one is scanned by every pass. The figures are numpy's either way."""
    from reports import callstats

    rng = np.random.default_rng(12)
    groups = rng.choice(["x", "y", "z"], 5_000)
    values = np.round(rng.lognormal(0, 0.4, 5_000), 2)
    values[::89] = np.nan
    scans = []

    def scan():
        scans.append(1)
        for i in range(0, len(values), size):
            yield groups[i:i + size], values[i:i + size]

    got = callstats.exact_percentiles(scan, (10, 50, 99.9), held_values=held)
    assert len(scans) == scans_wanted
    for g in ("x", "y", "z"):
        v = values[(groups == g) & ~np.isnan(values)]
        assert got[g]["n"] == len(v)
        for q in (10, 50, 99.9):
            assert got[g][f"p{q:g}"] == float(np.percentile(v, q))


@pytest.mark.parametrize("weighted", [False, True])
def test_both_directions_from_one_set_of_draws_equal_two_bootstraps(weighted):
    """``decision._both`` gives ``paired_bootstrap(x, y)`` and ``paired_bootstrap(y, x)`` bit for bit (repr, so
    NaN and the sign of zero count), here with ties (many resamples whose mean difference is exactly 0,
    where minus the mean would be −0), a −0.0 value, values that are all equal, one and two pairs."""
    from bench.scoring import stats
    from reports import decision

    rng = np.random.default_rng(5)
    cases = []
    for n in (1, 2, 3, 7, 40):
        x = np.round(rng.uniform(0, 3, n), 1)
        y = np.where(rng.random(n) < 0.6, x, np.round(rng.uniform(0, 3, n), 1))  # mostly ties
        cases.append((x, y))
    cases.append((np.array([-0.0, 1.0, 2.0]), np.array([0.0, 1.0, 2.0])))
    cases.append((np.full(5, 2.5), np.full(5, 2.5)))
    cases.append((np.array([0.0, 0.0, 1.0]), np.array([0.0, 0.0, 0.0])))  # a base of 0: ratios NaN
    zeros = 0
    for x, y in cases:
        w = np.round(rng.uniform(0.5, 3, x.size), 2) if weighted else None
        ab, ba = decision._both(x, y, 300, w)
        assert repr(ab) == repr(stats.paired_bootstrap(x, y, resamples=300, seed=0, weights=w))
        assert repr(ba) == repr(stats.paired_bootstrap(y, x, resamples=300, seed=0, weights=w))
        zeros += ab.ci_low == 0 or ab.ci_high == 0
    assert zeros  # some interval ends on an exact 0: the sign of zero was at stake
