"""The report reads the Parquet store where it holds a table and the export only where it does not
(issue 28): both hold the same rows, so a folder with only the exports (an older version's, or one
made by hand), one with only the store, and one with both must give the same tables, charts and pages.

A small real run (synthetic traces, strategies that compact, summarize and lose needles) rather than
the hand-written fixture: its columns have the store's real types (bools, ints with nulls, nested
details), which is where the two readers could part.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

import reports
from bench.cli.main import main
from bench.run import store
from reports import batches, callstats, compactions, eventstats, probestats, scoring, summarystats

STRATEGIES = ("none", "opencode", "claude-code", "codex", "aider")
EXPORTS = ("calls.csv", "events.jsonl", "summaries.jsonl", "probes.csv")


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One run, three folders: ``both`` as the run wrote it, ``exports`` without data/, ``store`` without
    the exports."""
    root = tmp_path_factory.mktemp("store")
    args = ["run", "--traces", "synthetic:short", "synthetic:reads", "--seeds", "1", "--strategies", *STRATEGIES,
            "--name", "both",
            "--out", str(root), "--quiet", "--no-report", "--workers", "1"]
    assert main(args) == 0
    both = root / "both"
    assert all((both / name).is_file() for name in EXPORTS), "the small run writes its exports"
    out = {"both": both}
    for name in ("exports", "store"):
        out[name] = root / name
        shutil.copytree(both, out[name])
    shutil.rmtree(out["exports"] / "data")
    for name in EXPORTS:
        (out["store"] / name).unlink()
    return out


def _aggregates(run_dir: Path) -> dict[str, pd.DataFrame]:
    info = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    win = scoring.window(info)
    calls = callstats.read(run_dir, win)
    events = eventstats.read(run_dir, win)
    sums = summarystats.read(run_dir)
    probes = probestats.read(run_dir)
    return {"per_task": calls.per_task, "call_ratio": calls.call_ratio, "hidden": calls.hidden.reset_index(drop=True),
            "kinds": events.kinds, "triggers": events.triggers, "trigger_points": events.points,
            "sizes": sums.sizes, "size_points": sums.points,
            "retention": probestats.retention_overall(probes), "cliffs": probestats.cliff_table(probes),
            "trace_calls": callstats.trace_calls(calls, str(calls.per_task.trace.iloc[0])).reset_index(drop=True)}


def test_the_store_and_the_exports_give_the_same_aggregates(folders: dict[str, Path]) -> None:
    """Every aggregate the report draws from the calls, events, summaries and probes: the same values,
    dtypes and order from the exports alone and from the store alone."""
    from_exports, from_store = _aggregates(folders["exports"]), _aggregates(folders["store"])
    assert len(from_exports["per_task"]) == 2 * len(STRATEGIES)
    assert from_exports["kinds"].to_numpy().sum() > 0 and len(from_exports["sizes"]) > 0
    for name, frame in from_exports.items():
        pd.testing.assert_frame_equal(from_store[name], frame, obj=name)


def test_the_store_and_the_exports_give_the_same_compaction_records(folders: dict[str, Path]) -> None:
    from_exports, from_store = compactions.from_run(folders["exports"]), compactions.from_run(folders["store"])
    lost = 0
    for strategy in STRATEGIES:
        (e1, s1, l1), (e2, s2, l2) = from_exports(strategy), from_store(strategy)
        pd.testing.assert_frame_equal(e2, e1, obj=f"{strategy} events")
        assert (s1 is None) == (s2 is None)
        if s1 is not None:
            pd.testing.assert_frame_equal(s2, s1, obj=f"{strategy} summaries")
        assert {k: sorted(v) for k, v in l2.items()} == {k: sorted(v) for k, v in l1.items()}
        lost += sum(map(len, l1.values()))
    assert lost, "the run lost needles at a compaction: the pages list them"


def test_a_folder_with_both_reads_the_store(folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the store holds a table its export is not parsed; a folder with exports only still reads them."""
    for table in ("calls", "events", "summaries", "probes"):
        assert batches.source(folders["both"], table) is None
        assert batches.source(folders["exports"], table) == folders["exports"] / store.EXPORTS[table]
    assert batches.source(folders["store"], "fidelity") is None  # not kept by this run: nothing to read
    parsed: list[str] = []
    for reader in ("_csv", "_jsonl", "_jsonl_index"):
        real = getattr(batches, reader)
        monkeypatch.setattr(batches, reader,
                            lambda path, *a, real=real: parsed.append(Path(path).name) or real(path, *a))
    _aggregates(folders["both"])
    pages = compactions.from_run(folders["both"])
    for strategy in STRATEGIES:
        pages(strategy)
    assert parsed == []
    _aggregates(folders["exports"])
    assert {"calls.csv", "events.jsonl", "summaries.jsonl", "probes.csv"} <= set(parsed)


def _rendered(run_dir: Path) -> tuple[bytes, dict[str, bytes], dict[str, bytes]]:
    reports.render(run_dir)
    pages = {p.name: p.read_bytes().replace(str(run_dir).encode(), b"RUN")
             for p in sorted((run_dir / "compactions").glob("*.html"))}
    return ((run_dir / "report.html").read_bytes(), {p.name: p.read_bytes() for p in sorted(run_dir.glob("*.png"))},
            pages)


def test_the_report_is_the_same_from_the_store_the_exports_or_both(folders: dict[str, Path]) -> None:
    page, pngs, pages = _rendered(folders["exports"])
    assert len(pngs) >= 8 and len(pages) == len(STRATEGIES)
    for name in ("store", "both"):
        other = _rendered(folders[name])
        assert other[0] == page, name
        assert other[1] == pngs, name
        assert other[2] == pages, name


@pytest.mark.parametrize("budget", [0, 1 << 30])
def test_held_store_batches_give_what_a_fresh_read_gives(folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                                         budget: int) -> None:
    """``ByStrategy`` over the store keeps decoded parts up to its budget and looks rows up by strategy; with
    nothing held (budget 0) every strategy reads the parts again. Both give the batches ``batches`` gives."""
    monkeypatch.setattr(batches, "BATCH_ROWS", 7)  # several batches per part
    for table, columns, rows in (("events", None, True), ("summaries", ("trace", "strategy", "call", "text"), True),
                                 ("calls", ("trace", "strategy", "call", "cost"), False)):
        by = batches.ByStrategy(folders["store"], table, columns, rows=rows, budget=budget)
        for strategy in (*STRATEGIES, "not-a-strategy"):
            fresh = list(batches.batches(folders["store"], table, columns, strategy=strategy, rows=rows))
            held = list(by(strategy))
            assert len(held) == len(fresh)
            for a, b in zip(held, fresh, strict=True):
                pd.testing.assert_frame_equal(a, b)
        assert (by._held.used > 0) == (budget > 0)
