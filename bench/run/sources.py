"""The run's traces as a stream: read lazily, one file (or a few dataset rows) at a time.

Nothing here holds a whole dataset: synthetic sessions are generated seed by seed, folders are
read file by file, ``hf:`` sources row by row. Within a window of traces the longest and the
shortest alternate, so a pool's workers stay busy together; ``--shard i/N`` keeps the traces whose
content hash falls in shard i (the same split on every machine). Each trace keeps its position in
the unsharded stream, so outputs are ordered the same whatever the shard or executor.

Filters (``--min-calls``, ``--min-tokens``, ``--format``) drop traces here, before any task is
planned, and count each dropped trace under the first filter it fails (``StreamNotes.filtered``):
a filtered trace is never a silent drop. The tokens a ``--min-tokens`` filter counts are kept for the
planner (``counter_for``), so a trace is still tokenized once.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from traces.formats import free_id
from traces.model import Trace, TraceError

if TYPE_CHECKING:
    from bench.tokens.counter import TokenCounter, Tokenizer

WINDOW = 8
"""Traces reordered together (long, short, long, ...): enough to balance a pool, few to hold (a window of
real traces is the largest thing the parent keeps)."""


@dataclass
class StreamNotes:
    """What the importers noticed while streaming (filled as the stream is read)."""

    notes: list[str] = field(default_factory=list)
    skipped: int = 0
    filtered: dict[str, int] = field(default_factory=dict)
    """Traces dropped by a filter, per filter (``format``, ``min_calls``, ``min_tokens``)."""
    kept: int = 0
    """Traces that passed the filters."""
    details: list[str] = field(default_factory=list)
    """Every file a folder import did not read as a trace, with the reason (``write_notes`` puts them in
    the run's files; the console gets ``console_notes``' summary)."""


SYNTHETIC, HF = "synthetic", "hf"
"""The format names of generated sessions and of ``hf:`` dataset rows (beside the importers' names)."""


def format_names() -> tuple[str, ...]:
    """Every name ``--format`` accepts: the importers' (traces.formats.READERS), ``hf`` and ``synthetic``."""
    from traces.formats import READERS

    return (*READERS, HF, SYNTHETIC)


@dataclass(frozen=True)
class TraceFilter:
    """Which traces a run keeps: at least ``min_calls`` agent calls and ``min_tokens`` tokens (cl100k,
    the whole session), read by one of ``formats`` (empty: any). The defaults keep every trace."""

    min_calls: int = 0
    min_tokens: int = 0
    formats: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name, value in (("--min-calls", self.min_calls), ("--min-tokens", self.min_tokens)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} takes a whole number of at least 0, not {value!r}")
        known = format_names()
        unknown = [f for f in self.formats if f not in known]
        if unknown:
            raise ValueError(f"--format {','.join(unknown)}: unknown format; known: {', '.join(known)}")

    @classmethod
    def parse(cls, min_calls: int = 0, min_tokens: int = 0, formats: Iterable[str] | str = ()) -> TraceFilter:
        """From the command line's values (``--format a,b`` or repeated)."""
        items = [formats] if isinstance(formats, str) else list(formats or ())
        names = tuple(dict.fromkeys(n.strip() for item in items for n in str(item).split(",") if n.strip()))
        return cls(min_calls or 0, min_tokens or 0, names)

    @property
    def active(self) -> bool:
        return bool(self.min_calls or self.min_tokens or self.formats)

    def describe(self) -> str:
        parts = ([f"--format {','.join(self.formats)}"] if self.formats else []) + \
            ([f"--min-calls {self.min_calls}"] if self.min_calls else []) + \
            ([f"--min-tokens {self.min_tokens}"] if self.min_tokens else [])
        return " ".join(parts)

    def reason(self, fmt: str, trace: Trace, tokenizer: Tokenizer | None = None) -> str | None:
        """The first filter ``trace`` fails (cheapest first: format, calls, tokens), else None."""
        if self.formats and fmt not in self.formats:
            return "format"
        if self.min_calls and trace.n_calls < self.min_calls:
            return "min_calls"
        if self.min_tokens and trace_tokens(trace, tokenizer) < self.min_tokens:
            return "min_tokens"
        return None


def filtered_note(f: TraceFilter, notes: StreamNotes) -> str:
    """``filtered out 484 of 518 traces: 480 below --min-calls 5, 4 not --format codex``."""
    words = {"format": f"not --format {','.join(f.formats)}", "min_calls": f"below --min-calls {f.min_calls}",
             "min_tokens": f"below --min-tokens {f.min_tokens:,}"}
    dropped = sum(notes.filtered.values())
    detail = ", ".join(f"{n} {words[k]}" for k, n in notes.filtered.items() if n)
    return f"filtered out {dropped} of {dropped + notes.kept} traces" + (f": {detail}" if detail else "")


_PRIMED: OrderedDict[int, tuple[Trace, TokenCounter]] = OrderedDict()
_PRIMED_KEEP = 2 * WINDOW
"""Counters of traces a ``--min-tokens`` filter counted, kept until the planner takes them (a window or
two of traces stand between the filter and the planner)."""


def trace_tokens(trace: Trace, tokenizer: Tokenizer | None = None) -> int:
    """The session's tokens (cl100k truth, every message once); the counts are kept for ``counter_for``."""
    from bench.tokens import count_cache

    counter = counter_for(trace, tokenizer, keep=True)
    count_cache.prime(counter, trace_hash(trace), trace.messages)  # kept from an earlier run, else counted
    return sum(counter.counts(trace.messages))


def counter_for(trace: Trace, tokenizer: Tokenizer | None = None, *, keep: bool = False) -> TokenCounter:
    """A counter for ``trace``: the one a filter already filled (taken out of the cache), else a new one."""
    from bench.tokens.counter import TokenCounter

    hit = _PRIMED.get(id(trace))
    if hit is not None and hit[0] is trace:
        if not keep:
            del _PRIMED[id(trace)]
        return hit[1]
    counter = TokenCounter(tokenizer)
    if keep:
        _PRIMED[id(trace)] = (trace, counter)
        while len(_PRIMED) > _PRIMED_KEEP:
            _PRIMED.popitem(last=False)
    return counter


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``i/N`` (0 ≤ i < N) → (i, N); None for no sharding."""
    if not text:
        return None
    i, sep, n = text.partition("/")
    if not sep or not i.strip().isdigit() or not n.strip().isdigit() or not 0 <= int(i) < int(n):
        raise ValueError(f"--shard {text!r}: expected i/N with 0 <= i < N (e.g. 0/4)")
    return int(i), int(n)


def in_shard(trace_sha: str, shard: tuple[int, int] | None) -> bool:
    """Whether a trace (by its content hash) belongs to this shard."""
    return shard is None or int(trace_sha[:12], 16) % shard[1] == shard[0]


def _synthetic(scenario: str, first: int, count: int) -> Iterator[tuple[str, Trace]]:
    from traces.cache import generated  # deterministic per seed: generated once per machine, then kept

    for seed in range(first, first + count):
        try:
            yield SYNTHETIC, generated(scenario, seed=seed)
        except ValueError as e:
            raise TraceError(str(e), path=f"synthetic:{scenario}") from None


def _files(source: str, lenient: bool, notes: StreamNotes) -> Iterator[tuple[str, Trace]]:
    """A file, folder, glob or ``entire:PATH`` read one file at a time (traces.formats.read_source): files
    in no known format inside a folder are passed over, counted in one note and each listed, with its
    reason, in ``notes.details``."""
    from traces.formats import Passed, detail_lines, passed_notes, read_source

    passed: list[Passed] = []
    for item in read_source(source, lenient=lenient):
        if isinstance(item, Passed):
            passed.append(item)
            continue
        fmt, result = item
        notes.skipped += result.skipped
        notes.notes += result.notes
        for trace in result.traces:
            yield fmt, trace
    notes.notes += passed_notes(source, passed)
    notes.details += detail_lines(source, passed)


NOTES_FILE = "import_notes.txt"
CONSOLE_NOTES = 4
"""At most this many importer notes are printed as they are; beyond that the console gets a summary."""


def write_notes(folder: Path, notes: list[str], details: Iterable[str] = (), name: str = NOTES_FILE) -> Path | None:
    """Every note, and every file a folder import did not read as a trace (with why), in
    ``folder/import_notes.txt``; None (and no file, not even an older run's) when there is nothing to say."""
    path = folder / name
    details = list(details)
    if not notes and not details:
        path.unlink(missing_ok=True)
        return None
    folder.mkdir(parents=True, exist_ok=True)
    text = ["# what the importers noticed"] + list(notes)
    if details:
        text += ["", "# files not read as traces (source: path relative to it: why)"] + details
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return path


def console_notes(notes: list[str], written: Path | None, limit: int = CONSOLE_NOTES) -> list[str]:
    """The few lines a console gets: every note when there are at most ``limit``; else the lines that
    matter for the whole run (files passed over, traces filtered out), the first few others, and one
    line counting the rest. The notes file (``write_notes``) is named whenever it holds more."""
    where = f" (all in {written})" if written is not None else ""
    if len(notes) <= limit:
        return [*notes, *([f"each file not read as a trace, and why: {written}"]
                          if written is not None and any("passed over" in n and " files " in n for n in notes)
                          else [])]
    key = [n for n in notes if ("passed over" in n and " files in no known format" in n)
           or n.startswith("filtered out ")]
    room = max(limit - len(key) - 1, 0)
    others = [n for n in notes if n not in key]
    shown = others[:room]
    rest = others[room:]
    files = {n.split(": ", 1)[0] for n in rest if ": " in n}
    return [*key, *shown, f"{len(rest)} more notes from the importers"
            + (f" on {len(files)} files" if files else "") + where]


def _hf(source: str, lenient: bool, notes: StreamNotes) -> Iterator[tuple[str, Trace]]:
    from traces.formats import hf
    from traces.formats._common import Skips

    dataset, options = hf.parse_source(source)
    skips = Skips()
    try:  # row by row (hf.CHUNK_ROWS materialised at once): a dataset is never held whole
        for trace in hf.stream(dataset, lenient=lenient, skips=skips, **options):
            notes.notes += hf.trace_notes(trace)
            yield HF, trace
    finally:
        notes.skipped += skips.count


def stream(sources: Iterable[str], *, seed: int = 0, seeds: int = 1, lenient: bool = False,
           notes: StreamNotes | None = None, filters: TraceFilter | None = None) -> Iterator[Trace]:
    """Every trace of the sources that passes ``filters``, lazily, with ids made unique as they come
    (``#2``, ``#3``…; only kept traces take an id).

    Synthetic sources come first, then the others in the order given (as the runner always did).
    When a filter is set, the count of traces each filter dropped is appended to ``notes.notes``
    once the stream is exhausted (and is in ``notes.filtered`` as it goes).
    """
    notes = notes if notes is not None else StreamNotes()
    filters = filters or TraceFilter()
    tokenizer = None
    if filters.min_tokens:
        from bench.tokens.counter import Tokenizer

        tokenizer = Tokenizer()
    sources = list(sources)
    ordered = [s for s in sources if s.startswith("synthetic:")] + [s for s in sources
                                                                     if not s.startswith("synthetic:")]
    seen: set[str] = set()
    for source in ordered:
        if source.startswith("synthetic:"):
            traces: Iterator[tuple[str, Trace]] = _synthetic(source.removeprefix("synthetic:"), seed, seeds)
        elif source.startswith("hf:"):
            traces = _hf(source, lenient, notes)
        else:
            traces = _files(source, lenient, notes)
        for fmt, t in traces:
            reason = filters.reason(fmt, t, tokenizer) if filters.active else None
            if reason is not None:
                notes.filtered[reason] = notes.filtered.get(reason, 0) + 1
                counter_for(t)  # drop the counts a min-tokens check kept: the planner never sees it
                continue
            notes.kept += 1
            if t.id in seen:
                new_id = free_id(t.id, seen)
                notes.notes.append(f"trace id {t.id!r} occurs again in {t.source or 'another source'}: "
                                   f"renamed {new_id!r}")
                t = replace(t, id=new_id)
            seen.add(t.id)
            yield t
    if filters.active:
        notes.notes.append(filtered_note(filters, notes))


def interleave(items: Iterable[tuple[int, Trace]], window: int = WINDOW) -> Iterator[tuple[int, Trace]]:
    """(position, trace) pairs reordered within windows: longest, shortest, 2nd longest, ..."""
    def spread(buf: list[tuple[int, Trace]]) -> Iterator[tuple[int, Trace]]:
        buf.sort(key=lambda it: (-len(it[1].messages), it[0]))
        lo, hi = 0, len(buf) - 1
        while lo <= hi:
            yield buf[lo]
            if lo != hi:
                yield buf[hi]
            lo, hi = lo + 1, hi - 1

    buf: list[tuple[int, Trace]] = []
    for item in items:
        buf.append(item)
        if len(buf) >= window:
            yield from spread(buf)
            buf = []
    yield from spread(buf)


def trace_hash(trace: Trace) -> str:
    from traces import native

    return hashlib.sha256(native.dumps(trace).encode()).hexdigest()
