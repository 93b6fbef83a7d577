"""The run's traces as a stream: read lazily, one file (or a few dataset rows) at a time.

Nothing here holds a whole dataset: synthetic sessions are generated seed by seed, folders are
read file by file, ``hf:`` sources row by row. Within a window of traces the longest and the
shortest alternate, so a pool's workers stay busy together; ``--shard i/N`` keeps the traces whose
content hash falls in shard i (the same split on every machine). Each trace keeps its position in
the unsharded stream, so outputs are ordered the same whatever the shard or executor.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from traces.formats import free_id
from traces.model import Trace, TraceError

WINDOW = 8
"""Traces reordered together (long, short, long, ...): enough to balance a pool, few to hold (a window of
real traces is the largest thing the parent keeps)."""


@dataclass
class StreamNotes:
    """What the importers noticed while streaming (filled as the stream is read)."""

    notes: list[str] = field(default_factory=list)
    skipped: int = 0


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


def _synthetic(scenario: str, first: int, count: int) -> Iterator[Trace]:
    from traces.synthetic import generate

    for seed in range(first, first + count):
        try:
            yield generate(scenario, seed=seed)
        except ValueError as e:
            raise TraceError(str(e), path=f"synthetic:{scenario}") from None


def _files(source: str, lenient: bool, notes: StreamNotes) -> Iterator[Trace]:
    """A file, folder or glob read one file at a time (files in no known format inside a folder
    are passed over and counted in the notes, as ``traces.formats.load`` does)."""
    from traces.formats import UnknownFormatError, expand, read_path

    in_folder = Path(source).is_dir()
    passed_over = []
    for path in expand([source]):
        try:
            result = read_path(path, lenient=lenient)
        except UnknownFormatError:
            if not in_folder:
                raise
            passed_over.append(path.name)
            continue
        notes.skipped += result.skipped
        notes.notes += result.notes
        yield from result.traces
    if passed_over:
        notes.notes.append(f"{source}: passed over {len(passed_over)} files in no known format: "
                           + ", ".join(passed_over[:10]) + (" …" if len(passed_over) > 10 else ""))


def _hf(source: str, lenient: bool, notes: StreamNotes) -> Iterator[Trace]:
    from traces.formats import hf

    dataset, options = hf.parse_source(source)
    result = hf.load(dataset, lenient=lenient, **options)
    notes.skipped += result.skipped
    notes.notes += result.notes
    yield from result.traces


def stream(sources: Iterable[str], *, seed: int = 0, seeds: int = 1, lenient: bool = False,
           notes: StreamNotes | None = None) -> Iterator[Trace]:
    """Every trace of the sources, lazily, with ids made unique as they come (``#2``, ``#3``…).

    Synthetic sources come first, then the others in the order given (as the runner always did).
    """
    notes = notes if notes is not None else StreamNotes()
    sources = list(sources)
    ordered = [s for s in sources if s.startswith("synthetic:")] + [s for s in sources
                                                                     if not s.startswith("synthetic:")]
    seen: set[str] = set()
    for source in ordered:
        if source.startswith("synthetic:"):
            traces: Iterator[Trace] = _synthetic(source.removeprefix("synthetic:"), seed, seeds)
        elif source.startswith("hf:"):
            traces = _hf(source, lenient, notes)
        else:
            traces = _files(source, lenient, notes)
        for t in traces:
            if t.id in seen:
                new_id = free_id(t.id, seen)
                notes.notes.append(f"trace id {t.id!r} occurs again in {t.source or 'another source'}: "
                                   f"renamed {new_id!r}")
                t = replace(t, id=new_id)
            seen.add(t.id)
            yield t


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
