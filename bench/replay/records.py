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

from dataclasses import dataclass, field, fields
from typing import Any

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


@dataclass
class TaskResult:
    """Everything one (trace, strategy) replay produced."""

    trace: str
    strategy: str
    calls: list[CallRecord] = field(default_factory=list)
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


def columns(records: list[Any], cls: type) -> dict[str, list[Any]]:
    """Flat records as one list per field, in field order: no per-record dict, no deep copy."""
    return {f.name: [getattr(r, f.name) for r in records] for f in fields(cls)}
