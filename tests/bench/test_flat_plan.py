"""The run's main process holds nothing per trace or per task while traces stream (issue 28): the plan
in packed arrays and a scratch file (bench.run.runner.Planned), the store's duplicate check bounded to
two batches (bench.run.store.Store)."""

from __future__ import annotations

import sys

import pytest

from bench.run.runner import Planned
from bench.run.store import Store, failed_output, load_results, write_plan
from strategies import StrategySpec


def _specs():
    return [StrategySpec("none", ()), StrategySpec("codex", ())]


def test_the_plan_frame_and_trace_rows_come_back_in_position_order():
    planned = Planned()
    for position in (2, 0, 1):  # as a window interleaves them
        planned.add_trace({"position": position, "id": f"t{position}", "usage_ratio": float("nan") if position else 1.5,
                           "source": None})
        for si in (0, 1):
            planned.add_task(f"{position:012d}{si:012d}", position, si)
    plan = planned.frame(_specs())
    assert list(plan.trace) == ["t0", "t0", "t1", "t1", "t2", "t2"]
    assert list(plan.strategy) == ["none", "codex"] * 3
    assert list(plan.key) == [f"{p:012d}{s:012d}" for p in range(3) for s in range(2)]
    assert plan.tpos.dtype == "int64" and list(plan.tpos) == [0, 0, 1, 1, 2, 2]
    rows = planned.traces
    assert [r["id"] for r in rows] == ["t2", "t0", "t1"] and rows[1]["usage_ratio"] == 1.5
    assert rows[0]["usage_ratio"] != rows[0]["usage_ratio"] and rows[0]["source"] is None  # NaN and None kept
    planned.add_trace({"position": 3, "id": "t3"})  # readable, then still appendable
    assert len(planned.traces) == 4
    planned.close()
    assert planned.traces == []


def test_the_plan_keeps_no_python_object_per_task():
    planned = Planned()
    before = sys.getsizeof(planned._keys)
    for i in range(10_000):
        planned.add_task(f"{i:024d}", i, i % 4)
    assert sys.getsizeof(planned._keys) - before < 30 * 10_000  # 24 bytes a key, no str objects
    assert planned.tpos.itemsize == 8 and len(planned.tpos) == 10_000
    with pytest.raises(ValueError, match="24 characters"):
        planned.add_task("short", 0, 0)


def test_a_task_handed_over_twice_across_a_flush_is_stored_once(tmp_path):
    store = Store(tmp_path, batch_tasks=2)
    outs = [failed_output(f"{i:024d}", f"t{i}", "none", "x") for i in range(5)]
    store.add(outs[0])
    store.add(outs[1])  # fills the batch: written
    store.add(outs[1])  # an interrupt hands the last one over again
    for out in outs[2:]:
        store.add(out)
    store.flush()
    planned = Planned()
    for i in range(5):
        planned.add_trace({"position": i, "id": f"t{i}"})
        planned.add_task(f"{i:024d}", i, 0)
    write_plan(tmp_path, planned.frame(_specs()[:1]))
    rows = load_results(tmp_path)
    assert list(rows.trace) == [f"t{i}" for i in range(5)]
    assert store.written == 5
    assert len(store._keys) + len(store._last) <= 4  # two batches at most, not the run's keys
