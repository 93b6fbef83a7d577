"""reports.render on a tiny fixed run folder written here (no runner, no strategies involved).

The run: two traces, three strategies. ``none`` never compacts; ``llm`` summarizes once on t1
(cheapest, fewer tokens); ``mask`` rewrites old messages every call, so it bills fewer tokens
than ``none`` and still costs more (the false economy the report must make visible).
"""

from __future__ import annotations

import csv
import json
import struct
from pathlib import Path

import pytest

import reports
from reports import charts, tables

CALL_FIELDS = ["trace", "strategy", "call", "kind", "messages", "prompt_tokens", "estimate_tokens", "cache_read",
               "cache_write", "uncached", "output_tokens", "cost", "cost_no_cache", "prefix_break", "overflow", "time"]
# (trace, strategy, call, kind, prompt, cache_read, cost, cost_no_cache, prefix_break, overflow)
CALLS = [
    ("t1", "none", 0, "agent", 1000, 0, 0.010, 0.010, False, False),
    ("t1", "none", 1, "agent", 2000, 1000, 0.010, 0.020, False, False),
    ("t1", "none", 2, "agent", 3000, 2000, 0.010, 0.030, False, True),
    ("t2", "none", 0, "agent", 1000, 0, 0.010, 0.010, False, False),
    ("t2", "none", 1, "agent", 2000, 1000, 0.010, 0.020, False, False),
    ("t1", "llm", 0, "agent", 1000, 0, 0.010, 0.010, False, False),
    ("t1", "llm", 1, "agent", 2000, 1000, 0.010, 0.020, False, False),
    ("t1", "llm", 2, "summarizer", 1000, 1000, 0.002, 0.004, False, False),
    ("t1", "llm", 2, "agent", 500, 0, 0.004, 0.005, True, False),
    ("t2", "llm", 0, "agent", 1000, 0, 0.010, 0.010, False, False),
    ("t2", "llm", 1, "agent", 2000, 1000, 0.010, 0.020, False, False),
    ("t1", "mask", 0, "agent", 1000, 0, 0.010, 0.010, False, False),
    ("t1", "mask", 1, "agent", 1500, 0, 0.015, 0.015, True, False),
    ("t1", "mask", 2, "agent", 2000, 0, 0.020, 0.020, True, False),
    ("t2", "mask", 0, "agent", 1000, 0, 0.010, 0.010, False, False),
    ("t2", "mask", 1, "agent", 1500, 0, 0.015, 0.015, True, False),
]
RESULT_FIELDS = ["trace", "strategy", "calls", "input_tokens", "saving_vs_none", "peak_context", "mean_context",
                 "compactions", "overflows", "cost", "cost_no_cache", "summarizer_cost_share", "failed", "error"]
RESULTS = [
    ("t1", "none", 3, 6000, 0.0, 3000, 2000.0, 0, 1, 0.030, 0.060, 0.0, "", ""),
    ("t2", "none", 2, 3000, 0.0, 2000, 1500.0, 0, 0, 0.020, 0.030, 0.0, "", ""),
    ("t1", "llm", 3, 4500, 0.25, 2000, 1166.7, 1, 0, 0.026, 0.039, 0.0769, "", ""),
    ("t2", "llm", 2, 3000, 0.0, 2000, 1500.0, 0, 0, 0.020, 0.030, 0.0, "", ""),
    ("t1", "mask", 3, 4500, 0.25, 2000, 1500.0, 0, 0, 0.045, 0.045, 0.0, "", ""),
    ("t2", "mask", 2, 2500, 0.1667, 1500, 1250.0, 0, 0, 0.025, 0.025, 0.0, "circuit breaker <after 3 failures>", ""),
    ("t1", "broken", 0, 0, None, 0, 0.0, 0, 0, 0.0, 0.0, 0.0, "", "KeyError: 'boom' (at strategies/broken.py:3)"),
]
EVENTS = [("t1", "llm", 2, "summarize"), ("t1", "mask", 1, "mask"), ("t1", "mask", 2, "mask"),
          ("t2", "mask", 1, "mask")]
PROBE_FIELDS = ["trace", "strategy", "moment", "call", "round", "needle", "needle_kind", "source", "cls", "retained",
                "age_tokens", "age_calls"]
PROBES = [  # (strategy, moment, round, needle, needle_kind, cls, age_tokens, age_calls), all on t1
    ("none", "end", 0, "fact-1", "fact", "retained-verbatim", 500, 2),
    ("none", "end", 0, "fact-2", "fact", "retained-verbatim", 9000, 30),
    ("none", "end", 0, "control-3", "control", "absent", 9000, 30),
    ("llm", "compaction", 1, "fact-1", "fact", "retained-verbatim", 400, 1),
    ("llm", "compaction", 1, "fact-2", "fact", "missing", 8000, 29),
    ("llm", "compaction", 2, "fact-1", "fact", "missing", 450, 1),
    ("llm", "compaction", 2, "fact-2", "fact", "missing", 8500, 29),
    ("llm", "end", 0, "fact-1", "fact", "retained-verbatim", 500, 2),
    ("llm", "end", 0, "fact-2", "fact", "missing", 9000, 30),
    ("llm", "end", 0, "control-3", "control", "absent", 9000, 30),
    ("mask", "compaction", 1, "fact-1", "fact", "missing", 400, 1),
    ("mask", "compaction", 1, "error-2", "error", "missing", 8000, 29),
    ("mask", "end", 0, "fact-1", "fact", "recoverable-by-reference", 500, 2),
    ("mask", "end", 0, "error-2", "error", "stale", 9000, 30),
    ("mask", "end", 0, "control-3", "control", "false-positive", 9000, 30),
]
SCORE_FIELDS = ["retention", "cliff_round", "false_positive_rate", "estimate_ratio", "hidden_overflows",
                "fidelity_recorded_call", "fidelity_replayed_call", "fidelity_call_delta"]
SCORES = {  # per (trace, strategy): retention, cliff, fpr, estimate ratio, hidden, fidelity call triple
    ("t1", "none"): (1.0, None, 0.0, None, 0, None, None, None),
    ("t2", "none"): (1.0, None, 0.0, None, 0, None, None, None),
    ("t1", "llm"): (0.5, 2, 0.0, 1.05, 0, 2, 3, 1), ("t2", "llm"): (1.0, None, 0.0, None, 0, None, None, None),
    ("t1", "mask"): (0.0, 1, 1.0, 1.05, 0, None, None, None),
    ("t2", "mask"): (0.5, None, 0.0, 0.76, 0, None, None, None),
    ("t1", "broken"): (None,) * 5 + (None,) * 3,
}
SUMMARY_TOKENS = (100, 200, 300, 25_000)  # llm's summaries: p50 250, p90 17,590, p99.9 24,925.9, one over 20K
FIDELITY_FIELDS = ["trace", "strategy", "compaction", "trigger", "recorded_call", "replayed_call", "call_delta",
                   "recorded_pre_tokens", "recorded_pre_truth", "replayed_pre_tokens", "recorded_post_tokens",
                   "replayed_post_tokens", "post_ratio"]
FIDELITY = [("t1", "llm", 0, "auto", 2, 3, 1, 150_000, 120_000, 140_000, 3_000, 4_000, 4 / 3),
            ("t1", "llm", 1, "manual", 7, None, None, 160_000, 110_000, None, 2_500, None, None),
            ("t1", "llm", 2, "auto", 9, None, None, 155_000, 125_000, None, 2_600, None, None)]
RUN_INFO = {
    "schema_version": 1,
    "config": {"name": "fixture", "model": "claude-sonnet-4-5", "summarizer": "extractive", "seed": 7,
               "cache_ttl": "5m", "seconds_per_call": 10.0},
    "strategies": [{"label": "none", "name": "none", "version": 1, "citation": "baseline"},
                   {"label": "llm", "name": "llm", "version": 2, "citation": "example/llm.py@abc123"},
                   {"label": "mask", "name": "mask", "version": 1, "citation": "example/mask.py@def456"}],
    "traces": [{"id": "t1", "agent": "claude-code", "model": "claude-opus-4-6", "sha256": "ab" * 32, "calls": 3,
                "usage_ratio": 1.3046},
               {"id": "t2", "agent": "codex", "sha256": "cd" * 32, "calls": 2}],
    "pricing_table": "prices-2026-01", "tokenizer": "cl100k_base",
    "provenance": {"git_sha": "0123456789abcdef", "git_dirty": True, "python": "3.11.7",
                   "packages": {"pandas": "2.2.0", "matplotlib": "3.11.2"}},
}
PNGS = ["context_over_calls.png", "cost_vs_saving.png", "cost_vs_retention.png", "paired_ci.png",
        "retention_classes.png", "retention_by_age.png", "retention_by_round.png", "cost_cache.png",
        "cache_hit_rate.png", "summary_sizes.png", "estimate_ratio.png"]
LATE_EVENT = ("t2", "mask", 1)
"""Its strategy acted at 250K true tokens while estimating 190K: over the 200K window, a late trigger."""


def write_fixture_run(run_dir: Path, *, probes: bool = True, scoring: bool = True,
                      traces: tuple[str, ...] = ("t1", "t2"), config: dict | None = None) -> Path:
    """The fixture run; ``scoring=False`` leaves out fidelity.csv and the scoring columns (older runner)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with (run_dir / "calls.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CALL_FIELDS)
        for t, s, call, kind, prompt, read, cost, nc, brk, over in CALLS:
            if t not in traces:
                continue
            w.writerow([t, s, call, kind, 4, prompt, prompt, read, prompt - read, 0, 100, cost, nc, brk, over,
                        call * 10.0])
    with (run_dir / "results.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(RESULT_FIELDS + (SCORE_FIELDS if scoring else []))
        w.writerows(list(r) + (list(SCORES[r[0], r[1]]) if scoring else []) for r in RESULTS if r[0] in traces)
    late = {"tokens_before": 250_000, "estimate_before": 190_000}
    (run_dir / "events.jsonl").write_text("".join(
        json.dumps({"trace": t, "strategy": s, "call": c, "hook": "before_call", "kind": k, "tokens_before": 2000,
                    "tokens_after": 500, "estimate_before": 2100, "messages_touched": 3,
                    "summary_tokens": 300 if k == "summarize" else None, "detail": "",
                    **(late if (t, s, c) == LATE_EVENT else {})}) + "\n"
        for t, s, c, k in EVENTS if t in traces))
    (run_dir / "summaries.jsonl").write_text("".join(json.dumps(
        {"trace": "t1", "strategy": "llm", "call": 2, "tokens": n, "text": "summary", "summarizer": "extractive"})
        + "\n" for n in SUMMARY_TOKENS))
    if probes:
        with (run_dir / "probes.csv").open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(PROBE_FIELDS)
            w.writerows(["t1", s, m, 2, rnd, nid, k, "planted", c, c == "retained-verbatim", a, ac]
                        for s, m, rnd, nid, k, c, a, ac in PROBES)
    if scoring:
        with (run_dir / "fidelity.csv").open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(FIDELITY_FIELDS)
            w.writerows(FIDELITY)
    (run_dir / "run.json").write_text(json.dumps({**RUN_INFO, "config": {**RUN_INFO["config"], **(config or {})}}))
    return run_dir


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", f"{path.name} is not a PNG"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return reports.render(write_fixture_run(tmp_path_factory.mktemp("run") / "fixture"))


def test_render_writes_html_and_every_png(rendered: Path) -> None:
    assert rendered.name == "report.html" and rendered.exists()
    for name in PNGS:
        assert png_size(rendered.parent / name) == charts.SIZE_PIXELS == (1000, 600)
    page = rendered.read_text()
    for name in PNGS:
        assert f'src="{name}"' in page
    assert "$title" not in page and "$charts" not in page


def test_the_pareto_front_on_cost_and_retention_heads_the_report(rendered: Path) -> None:
    # totals: llm $0.046 retaining (0.5 + 1.0) / 2 = 75%; none $0.050, 100%; mask $0.070, 25%:
    # mask is dearer and retains less than both, so the front would be llm then none; but none
    # overflowed once on t1, so it is never on the front and the line says it was left out.
    page = rendered.read_text()
    assert ("Pareto front on cost and needle retention (nothing is both cheaper and retains more), over the "
            "strategies that never overflowed: <b>llm</b> ($0.0460, 75%). Left out as infeasible (overflowed "
            "the window): <b>none</b>.") in page


def test_the_verdict_opens_the_page_and_is_written_to_verdict_json(rendered: Path) -> None:
    page = rendered.read_text()
    findings = page.split('<section id="findings">')[1]
    assert findings.lstrip().startswith('<p class="verdict"')
    # none overflowed, so it is no reference; of those that never overflowed, llm is the cheapest whose
    # retention is not significantly below the best (mask keeps 25% to its 75%; broken errored).
    assert "Ship llm: the cheapest strategy with zero overflows and needle retention not significantly below" in page
    data = json.loads((rendered.parent / "verdict.json").read_text())
    assert data["ship"]["spec"] == "llm"
    assert {c["strategy"]: c["feasible"] for c in data["candidates"]} == {
        "none": False, "llm": True, "mask": False, "broken": False}


def test_an_objective_changes_the_verdict(tmp_path: Path) -> None:
    rendered = reports.render(write_fixture_run(tmp_path / "fixture"), objective="retention>=0.5")
    data = json.loads((rendered.parent / "verdict.json").read_text())
    # llm ($0.046, 75%) is the cheapest that never overflowed and retains at least half.
    assert data["ship"] == {"spec": "llm", "name": "llm", "params": {}}
    assert "Ship llm" in rendered.read_text()


def test_summary_table_sorted_by_cost_with_hand_computed_values(rendered: Path) -> None:
    page = rendered.read_text()
    table = page.split('<table class="results">')[1].split("</table>")[0]
    # llm $0.046 < none $0.050 < mask $0.070
    assert table.index(">llm ") < table.index(">none ") < table.index(">mask ")
    # mask: 7000 tokens vs 9000 → +22.2% saving, $0.070 vs $0.050 → +40% cost: a false economy
    mask_row = table.split(">mask ")[1].split("</tr>")[0]
    assert "+22.2%" in mask_row and "+40%" in mask_row and "false economy" in mask_row
    # llm: 7500 (agent and summarizer prompts) vs 9000 → +16.7%; cost −8%
    llm_row = table.split(">llm ")[1].split("</tr>")[0]
    assert "+16.7%" in llm_row and "-8%" in llm_row and "false economy" not in llm_row
    assert "cost ↓" in table and "tokens saved vs none ↑" in table
    assert "Replay limitation" in page and "recorded future" in page
    assert "counts some 15–20% more" in page  # a Claude model counted with cl100k: the figures run low
    assert "Measured on this run&#x27;s recorded sessions" in page and "claude-opus-4-6 1.30 (1 session)" in page


def test_totals_from_calls() -> None:
    import pandas as pd

    calls = pd.DataFrame([dict(zip(["trace", "strategy", "call", "kind", "prompt_tokens", "cache_read", "cost",
                                    "cost_no_cache", "prefix_break", "overflow"], c, strict=True)) for c in CALLS])
    rows = tables.trace_rows(pd.DataFrame([dict(zip(RESULT_FIELDS, r, strict=True)) for r in RESULTS])
                             .assign(failed=lambda d: d.failed.replace("", None)), calls)
    totals = tables.strategy_totals(rows, calls).set_index("strategy")
    assert totals.loc["none", "cache_hit_rate"] == pytest.approx(4000 / 9000)
    assert totals.loc["llm", "cache_hit_rate"] == pytest.approx(3000 / 7500)
    assert totals.loc["mask", "prefix_breaks"] == 3
    assert totals.loc["llm", "prefix_breaks"] == 1
    assert totals.loc["llm", "summarizer_cost_share"] == pytest.approx(0.002 / 0.046)
    assert totals.loc["mask", "failed"] == 1 and totals.loc["none", "failed"] == 0
    assert totals.false_economy.tolist() == [False, False, True]
    assert list(totals.index) == ["llm", "none", "mask"]


def test_provenance_failures_and_escaping(rendered: Path) -> None:
    page = rendered.read_text()
    # a harness error is listed, never totalled as a $0 strategy
    summary = page.split('<table class="results">')[1].split("</table>")[0]
    assert ">broken " not in summary
    assert "harness error, left out of the totals: KeyError: &#x27;boom&#x27;" in page
    assert "1 task(s) ended in a harness error" in page
    assert "0123456789ab (dirty)" in page and "claude-sonnet-4-5" in page and "cl100k_base" in page
    assert "example/llm.py@abc123" in page
    assert "circuit breaker &lt;after 3 failures&gt;" in page
    assert "<after 3" not in page
    assert "http://" not in page and "https://" not in page, "the report must load nothing from the network"


def test_without_probes_no_retention_chart(tmp_path: Path) -> None:
    out = reports.render(write_fixture_run(tmp_path / "run", probes=False))
    assert not (tmp_path / "run" / "retention_by_age.png").exists()
    assert "retention_by_age.png" not in out.read_text()
    assert "probes.csv absent" in out.read_text()


def test_rerender_is_byte_identical(rendered: Path, tmp_path: Path) -> None:
    again = reports.render(write_fixture_run(tmp_path / "fixture"))
    assert again.read_text() == rendered.read_text()
    for name in PNGS:
        assert (again.parent / name).read_bytes() == (rendered.parent / name).read_bytes(), name


def test_render_reads_files_only(tmp_path: Path) -> None:
    """In a fresh interpreter: rendering never imports the strategies (it reads the run's files only)."""
    import subprocess
    import sys

    run_dir = write_fixture_run(tmp_path / "run")
    code = ("import sys, reports; from pathlib import Path; reports.render(Path(sys.argv[1])); "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'strategies' or m == 'bench.replay.loop'); "
            "print(bad)")
    done = subprocess.run([sys.executable, "-c", code, str(run_dir)], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_each_strategy_row_links_to_a_page_of_its_compactions(rendered: Path) -> None:
    page = rendered.read_text()
    assert '<a class="view" href="compactions/llm.html"' in page
    llm = (rendered.parent / "compactions" / "llm.html").read_text()
    assert "<td class=num>2</td><td>summarize</td>" in llm and "<code>t1</code>: 1 events" in llm
    assert "did nothing on any trace" in (rendered.parent / "compactions" / "none.html").read_text()


def test_a_run_of_none_alone_that_overflowed_renders(tmp_path: Path) -> None:
    """`run --traces synthetic:long --strategies none`: every strategy overflowed, so the feasible set
    and the Pareto front are empty; the report is still written (it crashed in cost_vs_retention)."""
    from bench.cli.main import main

    args = ["run", "--traces", "synthetic:long", "--strategies", "none", "--truth", "cl100k", "--workers", "1",
            "--out", str(tmp_path), "--name", "alone", "--quiet"]
    assert main(args) == 0
    page = (tmp_path / "alone" / "report.html").read_text(encoding="utf-8")
    assert "cost_vs_retention.png" in page and (tmp_path / "alone" / "cost_vs_retention.png").stat().st_size > 0


def test_the_headline_never_calls_an_overflowing_strategy_cheapest() -> None:
    import pandas as pd

    totals = pd.DataFrame({"strategy": ["none", "llm"], "cost": [1.0, 2.0], "cost_vs_none": [0.0, 1.0],
                           "saving_vs_none": [0.0, 0.2], "false_economy": [False, False], "overflows": [31, 0]})
    lines = tables.headline(totals)
    assert lines[0].startswith("Cheapest that never overflowed: <b>llm</b>")
    assert "Overflowed the window: <b>none</b> (31 calls)." in lines
    assert tables.headline(totals.assign(overflows=[31, 2]))[0].startswith("Every strategy overflowed")
