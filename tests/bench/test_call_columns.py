"""The call rows as columns (bench.replay.records.CallColumns): the replay loop appends values, not records,
and the columns give exactly the records the loop built before (``call_columns_golden.json``: the rows of
this session as main fd44917 wrote them, as CallRecords, field by field)."""

from __future__ import annotations

import json
import pickle
from dataclasses import astuple
from pathlib import Path

import pyarrow as pa
import pytest

from bench.replay import ReplayConfig
from bench.replay.loop import replay_with_twin
from bench.replay.records import CALL_FIELDS, CallColumns, CallRecord, TaskResult, columns
from bench.tokens import TokenCounter
from tests.bench.test_rereads import MODEL
from tests.bench.test_twin_fork import PruneThenSummarize, long_trace
from traces.model import Message, ToolResult, Trace

GOLDEN = json.loads((Path(__file__).parent / "call_columns_golden.json").read_text())


def session() -> tuple[TaskResult, TaskResult | None]:
    """Two re-reads (calls 3 and 6), a summary at call 2 (a summarizer row, its trailing fields left to their
    defaults), an orphan tool result (``invalid`` on every call after it) and the open-loop twin forked at the
    first re-read (its ``invalid`` zeroed)."""
    t = long_trace()
    msgs = (*t.messages[:3], Message("user", (ToolResult("nobody", "stray"),)), *t.messages[3:])
    t = Trace("columns", msgs, needles=t.needles)
    return replay_with_twin(t, PruneThenSummarize(summarize_at=2), ReplayConfig(MODEL), counter=TokenCounter())


def test_the_columns_give_the_records_the_loop_built_before():
    result, twin = session()
    assert twin is not None
    kinds = [c.kind for c in result.calls]
    assert kinds.count("reread") == 2 and kinds.count("summarizer") == 1 and any(c.invalid for c in result.calls)
    for got, want in ((result.calls, GOLDEN["calls"]), (twin.calls, GOLDEN["twin"])):
        assert [list(astuple(c)) for c in got] == want  # every field, every type (bool, int, float, str)
        assert [type(v) for c in got for v in astuple(c)] == [type(v) for row in want for v in row]
        assert got.columns() == {name: [row[i] for row in want] for i, name in enumerate(CALL_FIELDS)}
        assert [tuple(r) for r in got.rows()] == [tuple(row) for row in want]
        assert len(got) == len(want) and got[-1] == CallRecord(*want[-1]) and got[1:3] == list(got)[1:3]
    assert not any(twin.calls.column("invalid")) and not any(twin.calls.column("unseen_refs"))
    # the store's table is the one the records gave
    records = [CallRecord(*row) for row in GOLDEN["calls"]]
    assert pa.Table.from_pydict(columns(result.calls, CallRecord)).equals(
        pa.Table.from_pydict(columns(records, CallRecord)))


def test_appended_in_batches_read_at_any_point(monkeypatch):
    """A batch moves into the columns when full or when read; rows appended after a read follow it."""
    monkeypatch.setattr(CallColumns, "BATCH", 3)
    rows = [tuple(row) for row in GOLDEN["calls"]]
    calls = CallColumns()
    for i, row in enumerate(rows):
        calls.append(*row[:16]) if row[3] == "summarizer" else calls.append(*row)
        assert len(calls) == i + 1
        if i % 4 == 1:
            assert calls.column("call") == [r[2] for r in rows[:i + 1]]
    assert list(calls) == [CallRecord(*r) for r in rows] == CallColumns(CallRecord(*r) for r in rows)
    with pytest.raises(TypeError):
        calls.append("t", "s", 0)


def test_copies_are_their_own():
    """The twin's copy (zeroed or not) and a pickled one (a task sent back by a worker) do not share lists."""
    rows = [tuple(row) for row in GOLDEN["calls"]]
    calls = CallColumns(CallRecord(*r) for r in rows)
    zeroed, back = calls.copy(zeroed=("invalid",)), pickle.loads(pickle.dumps(calls))
    assert back == calls and zeroed.column("invalid") == [0] * len(rows) and calls.column("invalid")[1] == 1
    calls.append(*rows[0])
    assert len(back) == len(zeroed) == len(rows) == len(calls) - 1


def test_a_task_result_takes_a_list_of_records():
    records = [CallRecord(*row) for row in GOLDEN["calls"]]
    r = TaskResult("t", "s", records)
    assert isinstance(r.calls, CallColumns) and r.calls == records and r == TaskResult("t", "s", list(records))
    assert not TaskResult("t", "s").calls and len(TaskResult("t", "s").calls) == 0
