"""What a replay produces: one row per simulated model call, one per strategy event.

These rows are the source of truth; every metric is derived from them (bench/scoring/metrics.py).

Schema history of the files written from these rows (calls.csv, events.jsonl, summaries.jsonl,
results.csv, run.json carry ``schema_version``):
  1. first version.
  2. summaries.jsonl: ``max_tokens``, the output budget each summary was given.
  3. calls.csv: ``unseen_refs``, the re-read proxy.
  4. calls.csv: ``invalid``, problems the API would reject in the request (bench/replay/validity.py).
  5. the task store is Parquet under data/ (bench/run/store.py), not one JSON file per task; the CSV
     and JSONL files are exports of it, unchanged.
  6. a ``ledger`` table (our cache split beside the recorded one, bench/scoring/ledger_check.py); results gain
     ``compaction_retention``; fidelity columns describe the first automatic recorded compaction.
  8. calls.csv: ``model`` and ``window`` of each agent call; results gain the failure detectors' columns
     (bench/scoring/detectors.py).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any, overload

SCHEMA_VERSION = 8


@dataclass(frozen=True)
class CallRecord:
    """One request to a model: the agent's own call or a summarizer call."""

    trace: str
    strategy: str
    call: int
    """Index of the agent call this row belongs to (a summarizer row shares its agent call's index)."""
    kind: str
    """``agent``, ``summarizer`` or ``reread`` (a simulated call that read files again before the
    recorded one: bench/replay/rereads.py)."""
    messages: int
    prompt_tokens: int
    """Truth tokens of the request as sent."""
    estimate_tokens: int
    """The strategy's own estimate of the same request."""
    cache_read: int
    cache_write: int
    uncached: int
    output_tokens: int
    cost: float
    """Dollars with the prompt cache."""
    cost_no_cache: float
    """Dollars had every prompt token been billed at the input rate."""
    prefix_break: bool
    overflow: bool
    time: float
    unseen_refs: int = 0
    """Tool calls of the recorded answer that relied on something the session had shown but this
    request no longer held (bench/replay/references.py); 0 for summarizer rows."""
    invalid: int = 0
    """Problems the API would reject in this request (orphan tool result or call, reused id, empty
    message); the replay sends nothing silently: an ``invalid`` event names them."""
    rereads: int = 0
    """On a ``reread`` row: the files it read again."""
    reread_tokens: int = 0
    """On a ``reread`` row: the tokens its call and results added to the context."""
    model: str = ""
    """The model the call went to (a recorded model switch changes it; empty on summarizer rows and rows
    written before schema 8). The failure detectors (bench/scoring/detectors.py) read it."""
    window: int = 0
    """The input limit the call was fitted against (the model's ``max_input``, else its context window;
    0 where unknown), so a detector can judge a size against the window *of that call*."""


@dataclass(frozen=True)
class EventRecord:
    trace: str
    strategy: str
    call: int
    hook: str
    kind: str
    tokens_before: int
    tokens_after: int
    estimate_before: int
    """The strategy's own estimate of the context when it acted (its trigger view)."""
    messages_touched: int
    summary_tokens: int | None
    detail: str


@dataclass(frozen=True)
class SummaryRecord:
    trace: str
    strategy: str
    call: int
    tokens: int
    text: str
    summarizer: str
    max_tokens: int | None = None
    """The output budget the strategy gave this summary (its reserve), when known."""


CALL_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(CallRecord))
_CALL_DEFAULTS: tuple[Any, ...] = tuple(f.default for f in fields(CallRecord)[16:])
"""The defaults of CallRecord's trailing fields (``unseen_refs`` on), which a summarizer row leaves out."""
assert len(CALL_FIELDS) == 16 + len(_CALL_DEFAULTS) and fields(CallRecord)[15].name == "time"

CallRow = namedtuple("CallRow", CALL_FIELDS)  # type: ignore[misc]
"""A call row read from ``CallColumns.rows``: CallRecord's fields by name, a tuple (built at C speed),
for readers that go over every row of every task (bench.scoring.metrics.task_row, the detectors)."""


class CallColumns:
    """One task's call rows, one list per CallRecord field: what the replay loop appends to.

    A replay writes a row per call (73K calls a bench, more with the robustness replays and the
    open-loop twins); a frozen CallRecord per row cost ~1.8 us to build and the store then took it
    apart again field by field. Here a row is appended as a tuple of its values into a pending batch,
    and a batch is moved into the columns at once (one transposition, at C speed) when it reaches
    ``BATCH`` rows or a reader asks for a column. The store and the metrics read the columns;
    iterating or indexing still gives CallRecord values (built then, equal to the ones the loop used to
    build), so a reader that wants records as values has them.

    A mutable accumulator (the loop appends to it), not a value: copy it (``copy``) to keep one.
    """

    BATCH = 1024
    __slots__ = ("_cols", "_rows")

    def __init__(self, records: Iterable[CallRecord] = ()) -> None:
        self._cols: list[list[Any]] = [[] for _ in CALL_FIELDS]
        self._rows: list[tuple[Any, ...]] = []
        for r in records:
            self._rows.append(tuple(getattr(r, name) for name in CALL_FIELDS))
        self._flush()

    def append(self, *values: Any) -> None:
        """One call's values in CallRecord's field order; the fields from ``unseen_refs`` on may be left
        out (their defaults, as on a summarizer row)."""
        if len(values) != len(CALL_FIELDS):
            values += _CALL_DEFAULTS[len(values) - len(CALL_FIELDS):]
            if len(values) != len(CALL_FIELDS):
                raise TypeError(f"a call row has {len(CALL_FIELDS)} fields, at least 16 given; got {len(values)}")
        rows = self._rows
        rows.append(values)
        if len(rows) >= self.BATCH:
            self._flush()

    def _flush(self) -> None:
        rows = self._rows
        if rows:
            for col, values in zip(self._cols, zip(*rows, strict=True), strict=True):
                col.extend(values)
            self._rows = []

    def column(self, name: str) -> list[Any]:
        """The values of one field, in call order (the list itself: read it, do not change it)."""
        self._flush()
        return self._cols[_INDEX[name]]

    def columns(self) -> dict[str, list[Any]]:
        """Every field's values, in field order (``records.columns``'s shape; the lists themselves)."""
        self._flush()
        return dict(zip(CALL_FIELDS, self._cols, strict=True))

    def rows(self) -> Iterator[CallRow]:
        """The rows as ``CallRow`` tuples (read by field name, like CallRecord, but cheap to build)."""
        self._flush()
        return map(CallRow._make, zip(*self._cols, strict=True))

    def copy(self, zeroed: tuple[str, ...] = ()) -> CallColumns:
        """A copy, the fields ``zeroed`` set to 0 on every row (the open-loop twin's ``unseen_refs`` and
        ``invalid``, as ``costs_only`` writes them: bench.replay.loop._Loop.fork)."""
        self._flush()
        out = CallColumns()
        out._cols = [[0] * len(col) if name in zeroed else list(col)
                     for name, col in zip(CALL_FIELDS, self._cols, strict=True)]
        return out

    def __len__(self) -> int:
        return len(self._cols[0]) + len(self._rows)

    def __iter__(self) -> Iterator[CallRecord]:
        self._flush()
        return (CallRecord(*values) for values in zip(*self._cols, strict=True))

    @overload
    def __getitem__(self, i: int) -> CallRecord: ...
    @overload
    def __getitem__(self, i: slice) -> list[CallRecord]: ...
    def __getitem__(self, i: int | slice) -> CallRecord | list[CallRecord]:
        self._flush()
        if isinstance(i, slice):
            return [CallRecord(*values) for values in zip(*(col[i] for col in self._cols), strict=True)]
        return CallRecord(*(col[i] for col in self._cols))

    def __eq__(self, other: object) -> bool:
        """Equal to another CallColumns with the same rows, or to a list of the same CallRecords."""
        if isinstance(other, CallColumns):
            self._flush()
            other._flush()
            return self._cols == other._cols
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"CallColumns({len(self)} rows)"

    def __getstate__(self) -> list[list[Any]]:
        self._flush()
        return self._cols

    def __setstate__(self, cols: list[list[Any]]) -> None:
        self._cols, self._rows = cols, []


_INDEX = {name: i for i, name in enumerate(CALL_FIELDS)}


@dataclass
class TaskResult:
    """Everything one (trace, strategy) replay produced."""

    trace: str
    strategy: str
    calls: CallColumns = field(default_factory=CallColumns)
    """The call rows (a list of CallRecords given here is taken into columns)."""
    events: list[EventRecord] = field(default_factory=list)
    summaries: list[SummaryRecord] = field(default_factory=list)
    probes: list[dict[str, Any]] = field(default_factory=list)
    """Rows from observers (needle retention etc.), one dict each."""
    fidelity: list[dict[str, Any]] = field(default_factory=list)
    """Recorded vs replayed compactions (bench.scoring.fidelity), when the trace's agent matches the strategy."""
    ledger: list[dict[str, Any]] = field(default_factory=list)
    """Our cache split beside the recorded one (bench.scoring.ledger_check), when the trace records usage."""
    open_loop: dict[str, float] | None = None
    """``cost`` and ``input_tokens`` of the same task replayed with ``open_loop`` (no re-reads), when this
    replay made some (bench.run.runner.run_task); None: they equal this replay's (it made none, or ran open)."""
    failed: str | None = None
    """Why the session ended early (a strategy's circuit breaker), if it did."""
    error: str | None = None
    """A harness-side error (bad trace, strategy exception); the other tasks still finish."""

    def __post_init__(self) -> None:
        if not isinstance(self.calls, CallColumns):
            self.calls = CallColumns(self.calls)


def columns(records: list[Any] | CallColumns, cls: type) -> dict[str, list[Any]]:
    """Flat records as one list per field, in field order: no per-record dict, no deep copy (call
    rows already in columns are given as they are)."""
    if isinstance(records, CallColumns):
        return records.columns()
    return {f.name: [getattr(r, f.name) for r in records] for f in fields(cls)}
