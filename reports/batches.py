"""The calls, events, summaries and probes of a run, read ``BATCH_ROWS`` rows at a time (issue 13).

With ``--detail full`` a 10,000-trace × 30-strategy run holds millions of event and probe rows:
the report never loads them whole. Each reader yields DataFrames of at most ``BATCH_ROWS`` rows,
only the columns asked for (pyarrow column projection over the Parquet parts, ``usecols`` over a
probes.csv export; a JSONL export is parsed line by line and projected), optionally one
strategy's rows only (filtered in pyarrow before any conversion).

Where a table is read from (``source``): the run's Parquet store when it holds the table, else
its export. Both hold the same rows (the run writes the exports from the store, ``bench.run.store.export``),
and the store is read column by column while an export is parsed line by line whatever columns are
wanted, so the store is the cheaper read (issue 28). The export is read only where the store does
not hold the table: a folder of an older version (exports only, no data/), or one made by hand.

Every batch carries ``_pos`` and ``_seq``: sorting on them (stably) gives the order
``bench.run.store.load_table`` returns, the plan's task order with each task's records in theirs.
For an export ``_pos`` is the row number (the export is written in that order); for the store it
is the task's place in the plan, and ``_seq`` the row's place in the scan. Charts that scatter
points with a seeded jitter need that order to draw the same picture from either source.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

BATCH_ROWS = 65_536
"""Rows per batch; tests lower it to prove no result depends on it."""
ORDER = ["_pos", "_seq"]


def batches(run_dir: Path, table: str, columns: Sequence[str] | None = None, *, strategy: str | None = None,
            trace: str | None = None, rows: bool = False) -> Iterator[pd.DataFrame]:
    """``table``'s rows (``calls``, ``events``, ``summaries`` or ``probes``), ``BATCH_ROWS`` at a time.

    ``columns`` keeps those present (all when None); ``strategy`` / ``trace`` keep that strategy's
    or trace's rows (pushed down into the Parquet scan); ``rows=True`` builds each frame from Python
    rows as ``load_table`` does for these tables (None stays None: the compaction pages print the
    values), else with pyarrow's ``to_pandas``.
    """
    run_dir = Path(run_dir)
    match = {c: v for c, v in (("strategy", strategy), ("trace", trace)) if v is not None}
    want = None if columns is None else list(dict.fromkeys([*columns, *match]))
    export = source(run_dir, table)
    if export is not None:
        reader = _csv if export.suffix == ".csv" else _jsonl
        yield from reader(export, want, match)
        return
    if (run_dir / "data" / "plan.parquet").is_file():
        yield from _parquet(run_dir, table, want, match, rows)


def source(run_dir: Path, table: str) -> Path | None:
    """The export ``table`` is read from, or None for the Parquet store: the store when it holds the
    table (a committed part of it and the plan that orders them), the export when only it does."""
    from bench.run import store

    run_dir = Path(run_dir)
    if (run_dir / "data" / "plan.parquet").is_file() and store._parts(run_dir / "data", table):
        return None
    export = run_dir / store.EXPORTS[table]
    return export if export.is_file() else None


def _numbered(frame: pd.DataFrame, start: int) -> pd.DataFrame:
    frame = frame.reset_index(drop=True)
    frame["_pos"] = range(start, start + len(frame))
    frame["_seq"] = frame["_pos"]
    return frame


def _csv(path: Path, want: list[str] | None, match: dict[str, str]) -> Iterator[pd.DataFrame]:
    header = pd.read_csv(path, nrows=0).columns
    use = None if want is None else [c for c in want if c in header]
    if use is not None and not use:
        return
    start = 0
    for chunk in pd.read_csv(path, usecols=use, chunksize=BATCH_ROWS):
        n = len(chunk)
        chunk = _numbered(chunk, start)
        start += n
        for column, value in match.items():
            chunk = chunk[chunk[column].astype(str) == value] if column in chunk else chunk.iloc[:0]
        if len(chunk):
            yield chunk


def _framed(rows: Iterable[dict]) -> Iterator[pd.DataFrame]:
    """Rows (already projected and numbered) as frames of ``BATCH_ROWS``."""
    buffer: list[dict] = []
    for row in rows:
        buffer.append(row)
        if len(buffer) >= BATCH_ROWS:
            yield pd.DataFrame(buffer)
            buffer = []
    if buffer:
        yield pd.DataFrame(buffer)


def _needles(value: str) -> tuple[str, str]:
    """How a writer may spell ``value`` in a JSON line (ASCII-escaped or raw)."""
    return json.dumps(value), json.dumps(value, ensure_ascii=False)


class ByStrategy:
    """``batches(run_dir, table, columns, strategy=s, rows=rows)`` for one strategy after another,
    the same frames, for the compaction pages (one strategy each).

    A JSONL export is read once for an index (strategy → byte offset, length and line number of its
    lines) and each strategy then reads only its own lines: scanning the whole export again per
    strategy (45 strategies × events and summaries) was most of the report's time on ``make bench``.
    The index holds three integers per line, never a row. A line is indexed under a strategy by the
    rule ``_jsonl`` applies (the value spelled in the line and equal once parsed), so the rows kept,
    their order and their batches are the same. The Parquet store's parts are decoded once and held
    (``Held``, up to ``HELD_BYTES``), each held batch's rows looked up by strategy; past that budget a part
    is read again per strategy. A CSV export is read per strategy as before."""

    def __init__(self, run_dir: Path, table: str, columns: Sequence[str] | None = None, *, rows: bool = False,
                 budget: int | None = None) -> None:
        self.run_dir, self.table, self.columns, self.rows = Path(run_dir), table, columns, rows
        export = source(self.run_dir, table)
        self.stored = export is None and (self.run_dir / "data" / "plan.parquet").is_file()
        self.export = export if export is not None and export.suffix == ".jsonl" else None
        self._index: dict[str, tuple[array, array, array]] | None = None
        self._held = Held(HELD_BYTES if budget is None else budget)

    def __call__(self, strategy: str) -> Iterator[pd.DataFrame]:
        if self.stored:
            want = None if self.columns is None else list(dict.fromkeys([*self.columns, "strategy"]))
            yield from _parquet(self.run_dir, self.table, want, {"strategy": strategy}, self.rows, self._held)
            return
        if self.export is None:
            yield from batches(self.run_dir, self.table, self.columns, strategy=strategy, rows=self.rows)
            return
        if self._index is None:
            self._index = _jsonl_index(self.export, "strategy")
        want = None if self.columns is None else list(dict.fromkeys([*self.columns, "strategy"]))
        found = self._index.get(strategy)
        if found is not None:
            yield from _framed(_jsonl_rows(self.export, *found, want))


def _jsonl_index(path: Path, key: str) -> dict[str, tuple[array, array, array]]:
    """Per value of ``key`` (a string): the offsets, byte lengths and line numbers (blank lines not
    counted, as ``_jsonl`` numbers them) of the lines ``_jsonl(path, _, {key: value})`` keeps.
    Read as text with ``newline=""``: the same line breaks as ``_jsonl``'s universal newlines, the
    bytes of each line counted as written."""
    index: dict[str, tuple[array, array, array]] = {}
    spelled: dict[str, tuple[str, str]] = {}
    offset = pos = 0
    with path.open(encoding="utf-8", newline="") as f:
        for line in f:
            size = len(line.encode("utf-8"))
            if line.strip():
                value = json.loads(line).get(key)
                if isinstance(value, str):
                    a, b = spelled.get(value) or spelled.setdefault(value, _needles(value))
                    if a in line or b in line:
                        entry = index.get(value) or index.setdefault(value, (array("q"), array("q"), array("q")))
                        entry[0].append(offset)
                        entry[1].append(size)
                        entry[2].append(pos)
                pos += 1
            offset += size
    return index


def _jsonl_rows(path: Path, offsets: array, sizes: array, positions: array, want: list[str] | None
                ) -> Iterator[dict]:
    with path.open("rb") as f:
        for offset, size, pos in zip(offsets, sizes, positions, strict=True):
            f.seek(offset)
            row = json.loads(f.read(size).decode("utf-8"))
            row = row if want is None else {k: row[k] for k in want if k in row}
            row["_pos"] = row["_seq"] = pos
            yield row


def _jsonl(path: Path, want: list[str] | None, match: dict[str, str]) -> Iterator[pd.DataFrame]:
    """A JSONL export's rows; with ``match``, a line that does not hold each wanted value as a JSON string
    (either escaping) is not parsed: the report reads one strategy at a time, and parsing every line for
    each strategy was most of its time on a small run."""
    buffer: list[dict] = []
    start = 0
    needles = [_needles(v) for v in match.values()]
    with path.open(encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            if not all(a in line or b in line for a, b in needles):  # cannot match: counted, not parsed
                start += 1
                continue
            row = json.loads(line)
            if all(row.get(c) == v for c, v in match.items()):
                row = row if want is None else {k: row[k] for k in want if k in row}
                row["_pos"] = row["_seq"] = start
                buffer.append(row)
            start += 1
            if len(buffer) >= BATCH_ROWS:
                yield pd.DataFrame(buffer)
                buffer = []
    if buffer:
        yield pd.DataFrame(buffer)


HELD_BYTES = 128 << 20
"""Decoded store columns ``ByStrategy`` keeps for the next strategy's page (Arrow bytes). Under it, each
part is decoded once for all the strategies instead of once per strategy (45 on ``make bench``); a run
whose columns are larger decodes the parts past it again per strategy, as before, so memory stays bounded."""


class Held:
    """Decoded batches of store parts, kept up to ``budget`` bytes: what ``f.iter_batches`` would
    decode again, the same batches (the same rows in each), so every filter on them gives what a
    fresh read gives."""

    def __init__(self, budget: int) -> None:
        self.budget, self.used = budget, 0
        self._parts: dict[tuple[Path, tuple[str, ...]], list[Any]] = {}
        self._names: dict[Path, list[str]] = {}
        self._groups: dict[tuple[int, str], tuple[Any, int, dict[str, Any]]] = {}
        self._kept: set[int] = set()

    def names(self, part: Path) -> list[str]:
        import pyarrow.parquet as pq

        if part not in self._names:
            self._names[part] = pq.read_schema(part).names
        return self._names[part]

    def batches(self, part: Path, use: list[str]) -> Iterable[Any]:
        import pyarrow.parquet as pq

        key = (part, tuple(use))
        if key in self._parts:
            return self._parts[key]
        if self.used >= self.budget:  # full: streamed batch by batch, as ``batches`` reads it
            return pq.ParquetFile(part).iter_batches(batch_size=BATCH_ROWS, columns=use)
        decoded = list(pq.ParquetFile(part).iter_batches(batch_size=BATCH_ROWS, columns=use))
        size = sum(b.nbytes for b in decoded)
        if self.used + size <= self.budget:
            self._parts[key] = decoded
            self._kept.update(id(b) for b in decoded)
            self.used += size
        return decoded

    def equal(self, batch: Any, column: str, value: str) -> Any:
        """``pc.equal(batch[column], value)`` with nulls as False, as a numpy mask: the batch's rows
        grouped by value once (a held batch is filtered once per strategy), then looked up."""
        import numpy as np

        key = (id(batch), column)
        found = self._groups.get(key)
        if found is None or found[0] is not batch:
            values = batch.column(column).to_numpy(zero_copy_only=False)
            codes, uniques = pd.factorize(values, use_na_sentinel=True)
            found = (batch, len(values), {u: np.flatnonzero(codes == i) for i, u in enumerate(uniques)
                                          if isinstance(u, str)})
            if id(batch) in self._kept:  # only a held batch's groups are kept (a streamed one is read again)
                self._groups[key] = found
        _, n, groups = found
        mask = np.zeros(n, bool)
        mask[groups.get(value, [])] = True
        return mask


def _parquet(run_dir: Path, table: str, want: list[str] | None, match: dict[str, str],
             rows: bool, held: Held | None = None) -> Iterator[pd.DataFrame]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from bench.run import store

    seq = 0
    for part in store._parts(run_dir / "data", table):
        f = pq.ParquetFile(part) if held is None else None
        names = f.schema_arrow.names if f is not None else held.names(part)
        use = [c for c in (want if want is not None else names) if c in names and c != "key"]
        if not use or not set(match) <= set(names):
            continue
        positions = _positions(run_dir, part)
        offset = 0
        decoded = f.iter_batches(batch_size=BATCH_ROWS, columns=use) if f is not None else held.batches(part, use)
        for b in decoded:
            pos = positions[offset:offset + b.num_rows]
            offset += b.num_rows
            if held is not None and list(match) == ["strategy"]:
                keep = (pos >= 0) & held.equal(b, "strategy", match["strategy"])
            else:
                mask = pa.array(pos >= 0)
                for column, value in match.items():
                    mask = pc.and_(mask, pc.equal(b.column(column), value))
                keep = pc.fill_null(mask, False).to_numpy(zero_copy_only=False)
            if not keep.any():
                continue
            b = b.filter(pa.array(keep))
            frame = pd.DataFrame(b.to_pylist(), columns=b.column_names) if rows else b.to_pandas()
            frame["_pos"] = pos[keep].astype(np.int64)
            frame["_seq"] = np.arange(seq, seq + len(frame), dtype=np.int64)
            seq += len(frame)
            yield frame


_RUNS: dict[tuple[str, int, int, str, int], tuple[object, object]] = {}
"""(part, its mtime and size, plan, its mtime) → the part's rows as runs of one task each: the row where
each run starts and its task's place in the plan (-1: not in the plan). A part is read per strategy
and per table: its key column is looked up once, and what is kept is a few numbers per task, not per row."""


def _positions(run_dir: Path, part: Path):
    """Each row's task position in the plan (-1 when the plan no longer lists it), as ``pc.index_in``
    of the row's key in the plan's keys gives it."""
    import numpy as np
    import pyarrow.parquet as pq

    plan_path = Path(run_dir) / "data" / "plan.parquet"
    st, pst = part.stat(), plan_path.stat()
    key = (str(part), st.st_mtime_ns, st.st_size, str(plan_path), pst.st_mtime_ns)
    if key not in _RUNS:
        index, first = _plan_index(run_dir, pst.st_mtime_ns)
        keys = pq.read_table(part, columns=["key"]).column("key").to_numpy(zero_copy_only=False)
        n = len(keys)
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if n else np.zeros(0, np.int64)
        found = index.get_indexer(keys[starts]) if n else np.zeros(0, np.int64)
        if len(_RUNS) > 100_000:  # a long-lived process that reported many runs
            _RUNS.clear()
        _RUNS[key] = (np.r_[starts, n].astype(np.int64), np.where(found >= 0, first[found], -1).astype(np.int64))
    bounds, at = _RUNS[key]
    return np.repeat(at, np.diff(bounds))


_PLANS: dict[tuple[str, int], tuple[pd.Index, object]] = {}


def _plan_index(run_dir: Path, mtime: int) -> tuple[pd.Index, object]:
    """The plan's distinct keys and, for each, its first place in the plan (where ``pc.index_in`` finds it)."""
    import numpy as np

    from bench.run import store

    found = _PLANS.get((str(run_dir), mtime))
    if found is None:
        keys = store.read_plan(run_dir).key.astype(str)
        first = ~keys.duplicated()
        found = (pd.Index(keys[first].to_numpy(object)), np.flatnonzero(first.to_numpy()))
        _PLANS.clear()
        _PLANS[(str(run_dir), mtime)] = found
    return found


def in_order(frames: Sequence[pd.DataFrame] | Iterator[pd.DataFrame], columns: Sequence[str] | None = None
             ) -> pd.DataFrame:
    """Concatenate batches (already small: one strategy's, or a sample) in ``load_table``'s order,
    without the ordering columns."""
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=list(columns or []))
    out = pd.concat(frames, ignore_index=True).sort_values(ORDER, kind="stable")
    return out.drop(columns=ORDER).reset_index(drop=True)

