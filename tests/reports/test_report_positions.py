"""The report reads a store part's task positions once (reports.batches._positions) and keeps them per
part and plan: what it reads must be what a fresh lookup gives, also after the plan changed."""

from __future__ import annotations

import os

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from bench.run.store import Store, TaskOutput, failed_output, load_table, read_plan, write_plan
from reports import batches


def _store(tmp_path) -> pd.DataFrame:
    store = Store(tmp_path, batch_tasks=2)
    plan = []
    for i in range(5):
        key = f"{i:024d}"
        row = failed_output(key, f"t{i}", "s", "x").row
        probes = [{"trace": f"t{i}", "strategy": "s" if i % 2 else "z", "needle": f"n{i}.{j}"} for j in range(i + 1)]
        store.add(TaskOutput(key, row, {"probes": probes}))
        plan.append({"key": key, "trace": f"t{i}", "strategy": "s", "tpos": i, "spos": 0})
    store.add(TaskOutput("9" * 24, failed_output("9" * 24, "gone", "s", "x").row,
                         {"probes": [{"trace": "gone", "strategy": "s", "needle": "old"}]}))
    store.flush()
    return pd.DataFrame(plan)


def _expected_pos(run_dir, frame_keys: list[str]) -> list[int]:
    keys = pa.array(read_plan(run_dir).key.astype(str).tolist(), pa.string())
    return pc.index_in(pa.array(frame_keys, pa.string()), value_set=keys).to_pylist()


def test_positions_follow_the_plan_and_its_changes(tmp_path, monkeypatch):
    monkeypatch.setattr(batches, "BATCH_ROWS", 2)  # several batches per part: slices of the cached positions
    plan = _store(tmp_path)
    write_plan(tmp_path, plan)
    got = batches.in_order(batches.batches(tmp_path, "probes", ["trace", "strategy", "needle"]))
    want = load_table(tmp_path, "probes")[["trace", "strategy", "needle"]]
    assert got.equals(want) and "old" not in set(got.needle)
    frames = list(batches.batches(tmp_path, "probes", ["needle"], strategy="s"))
    pos = [p for f in frames for p in f._pos]
    needles = [n for f in frames for n in f.needle]
    assert needles == [f"n{i}.{j}" for i in (1, 3) for j in range(i + 1)]
    assert pos == _expected_pos(tmp_path, [f"{int(n[1]):024d}" for n in needles])

    reordered = plan.iloc[::-1].reset_index(drop=True)  # the plan rewritten: the kept positions must not serve
    write_plan(tmp_path, reordered)
    later = os.stat(tmp_path / "data" / "plan.parquet").st_mtime_ns + 10**9
    os.utime(tmp_path / "data" / "plan.parquet", ns=(later, later))
    frames = list(batches.batches(tmp_path, "probes", ["needle"], strategy="s"))
    needles = [n for f in frames for n in f.needle]
    assert [p for f in frames for p in f._pos] == _expected_pos(tmp_path, [f"{int(n[1]):024d}" for n in needles])
    got = batches.in_order(batches.batches(tmp_path, "probes", ["trace", "strategy", "needle"]))
    assert got.equals(load_table(tmp_path, "probes")[["trace", "strategy", "needle"]])
    assert list(got.trace.drop_duplicates()) == ["t4", "t3", "t2", "t1", "t0"]
