"""The end of a run streams (issue 28, "a flat main process"): results.csv written batch by batch from the
task store is byte for byte the one-frame file, and the run keeps only the columns its end reads."""

from __future__ import annotations

import pandas as pd
import pytest

from bench.replay.records import CallRecord, TaskResult
from bench.run import finish as fin
from bench.run import store as st
from bench.run.runner import RunConfig, aggregate, run
from bench.run.store import Store, TaskOutput, failed_output, load_results, write_plan
from bench.scoring.metrics import finish_table, task_row

STRATEGIES = ("none", "codex", "cline-half")


def _store(tmp_path, traces: int = 7):
    """A store of several small batches written out of plan order, with a task stored twice (failed, then
    re-run), an int column null in one task only, a trace without a ``none`` row and rows of a task
    the plan no longer lists."""
    call = CallRecord("t", "s", 0, "agent", 10, 1000, 1000, 0, 1000, 0, 100, 0.01, 0.01, False, False, 0.0)
    template = task_row(TaskResult("t", "s", calls=[call] * 3))
    outs, plan = [], []
    for ti in range(traces):
        for si, s in enumerate(STRATEGIES):
            if ti == 3 and s == "none":
                continue  # a trace whose baseline did not run: its paired columns are empty
            key = f"{ti:012d}{si:012d}"
            row = {**template, "trace": f"trace/{ti}", "strategy": s, "input_tokens": 1000 + 37 * ti - 11 * si,
                   "cost": 0.5 + ti / 7 + si / 3, "retention": (ti + si) / 10}
            if ti == 5 and si == 1:
                row["compactions"] = None  # an int column with one null: float in every batch
            outs.append(TaskOutput(key, row))
            plan.append({"key": key, "trace": f"trace/{ti}", "strategy": s, "tpos": ti, "spos": si})
    store = Store(tmp_path, batch_tasks=4)
    store.add(failed_output(outs[4].key, "trace/1", "codex", "boom"))  # fails first, its re-run counts
    store.add(TaskOutput("f" * 24, {**outs[0].row, "trace": "gone"}))  # not in the plan
    for out in outs[8:] + outs[:8]:  # later traces finished first
        store.add(out)
    store.flush()
    plan = pd.DataFrame(plan)
    write_plan(tmp_path, plan)
    return plan


def _one_frame(run_dir, plan) -> pd.DataFrame:
    """What the end of a run built before it streamed: every stored row at once, then finish_table."""
    return finish_table(load_results(run_dir, plan))


@pytest.mark.parametrize("rows", [1, 3, 8, 10_000])
def test_streamed_results_csv_is_the_one_frame_file(tmp_path, rows):
    plan = _store(tmp_path)
    assert len(st._parts(tmp_path / "data", "results")) >= 5
    whole = _one_frame(tmp_path, plan)
    assert whole.compactions.dtype == float and whole.error.eq("").all()
    kept = fin.finish(tmp_path, plan, fin.end_columns(None), rows=rows)
    assert (tmp_path / "results.csv").read_bytes() == whole.to_csv(index=False).encode()
    assert kept.equals(whole[fin.end_columns(None)])
    assert (kept.dtypes == whole[fin.end_columns(None)].dtypes).all()
    full = fin.finish(tmp_path, plan, csv=False, rows=rows)
    assert full.equals(whole) and (full.dtypes == whole.dtypes).all()
    assert full.saving_vs_none.notna().sum() == len(full) - 2  # trace/3 has no none row


def test_batches_keep_a_trace_whole_and_fall_back_to_one_batch_when_the_plan_splits_one():
    plan = pd.DataFrame({"trace": ["a", "a", "a", "b", "b", "c", "c", "c", "c"]})
    at = pd.RangeIndex(9).to_numpy()
    assert st._batches(plan, at, 2, "trace") == [(0, 3), (3, 5), (5, 9)]
    assert st._batches(plan, at, 4, "trace") == [(0, 5), (5, 9)]
    assert st._batches(plan, at, 4, None) == [(0, 4), (4, 8), (8, 9)]
    split = pd.DataFrame({"trace": ["a", "b", "a"]})
    assert st._batches(split, pd.RangeIndex(3).to_numpy(), 1, "trace") == [(0, 3)]


def test_a_store_in_any_order_streams_what_the_one_frame_path_gives(tmp_path):
    plan = _store(tmp_path).sample(frac=1.0, random_state=3).reset_index(drop=True)  # traces apart
    whole = _one_frame(tmp_path, plan)
    fin.finish(tmp_path, plan, (), rows=2)
    assert (tmp_path / "results.csv").read_bytes() == whole.to_csv(index=False).encode()


def test_the_end_of_a_run_never_holds_every_column_of_the_results(tmp_path, monkeypatch):
    """No one-frame read of the stored results; the run keeps ``end_columns`` and builds the whole table
    only when ``table`` is asked for."""
    monkeypatch.setattr(st, "_ordered", lambda *a, **k: pytest.fail("the one-frame read of a stored table"))
    config = RunConfig(traces=("synthetic:short",), strategies=("none", "codex"), out=str(tmp_path), name="r",
                       workers=1, executor="local", csv="no", detail="summary")
    out = run(config, progress=False)
    columns = fin.end_columns(None)
    assert list(out.results.columns) == columns and "llm_recall" not in out.results
    assert out._table is None  # the full table was never built
    every = pd.read_csv(tmp_path / "r" / "results.csv").columns
    assert len(every) > 2 * len(columns)
    assert out.table.equals(aggregate(out.run_dir)) and list(out.table.columns) == list(every)
    assert out.results.equals(out.table[columns])
    assert "llm_recall" in fin.end_columns("min-llm_recall") and fin.end_columns("min-llm_recall")[-1] == "error"
