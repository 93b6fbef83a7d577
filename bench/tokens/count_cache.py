"""Token counts of a trace's messages kept between runs (issue 28: nothing paid before the first replay
that need not be), beside the synthetic traces traces/cache.py keeps.

Counting every message of every trace is most of what a run pays before its first replay (the floor
of ``make perf``), and a second run of the same traces, a resumed run, a run with other strategies and
the robustness replays (two more runs of the same traces in one ``compaction-bench run``) counted
them all again. A message's count depends on nothing a run chooses: only on its text (the trace's
content, ``bench.run.sources.trace_hash``), the tokenizer (its encoding, tiktoken's version) and the
code that renders and counts a message (``COUNTING_MODULES``). So they are kept once per machine.

Where: the user cache folder of traces/cache.py (``$COMPACTION_BENCH_CACHE``, else
``$XDG_CACHE_HOME/compaction-bench``, else ``~/.cache/compaction-bench``; ``off`` keeps nothing), in
``counts-<version>/``, one small file per (trace content hash, encoding): the per-message counts as
64-bit integers. ``<version>`` hashes the counting code, tiktoken's version and the byte order, so an
edit to the counter or an upgraded tokenizer starts a new folder (the most recently used few are kept: see
Versions below) and never reads a stale count. A file that cannot be read, or holds another number of
counts than the trace has messages, is counted again: the cache can only save time, never change a count.
Only the plain ``Tokenizer`` is kept (a subclass may count otherwise).

**Written texts** (issue 28: counts computed once per distinct text, kept between runs). The texts strategies
write (summaries, placeholders, cut or masked outputs, re-attached files) are a deterministic function of the
trace, the strategy and the code, and were tokenized again by every run (112K tokenizer calls on a seeds-1
bench, 7% of its CPU). Their counts are kept beside the messages' in one ``<key>.texts`` file per trace and
encoding (a job reads only its trace's), each under ``counter.text_key`` (blake2b of the UTF-8 text, 16
bytes: stable across processes, unlike ``hash``), the exact count. ``TokenCounter.text`` looks a text up there
before tokenizing it. The key depends on the text alone, so a file can never give a text another count than
the tokenizer would (whatever trace or strategy wrote it); the per-trace files only keep what a job loads small.

- Format: ``cbt1``, the keys (16 bytes each), the counts (int64, this machine's byte order, as the message
  files), then a blake2b checksum of all that (16 bytes): a file of another length or checksum is ignored
  (counted again). 24 bytes a text; ``make bench`` keeps up to ~6,000 texts a trace (143 KB), 871 KB in all.
- When: at the end of a job that counted something new (``keep_texts``; a warm run writes nothing). The
  writer reads the file again and merges it with what it loaded and added, then writes a temporary file and
  renames it over (atomic): several workers of one trace each write what they and the earlier writers
  counted; two writing at the same moment lose at most one of their additions (counted again next run).
- Cap: ``MAX_TEXTS`` a file. Over it, the texts this counter read or counted are kept first, then the
  others in file order, so a file holds what recent runs use and never grows without bound.
- The extractive summarizer (bench/summarizers/extractive.py ``_size``) counts its candidate lines with the
  tokenizer directly, memoized per process (lru_cache): 9.4K short lines a seeds-1 bench, about 1% of its
  CPU. It is left so: it sees a ``SummaryRequest``, not the trace or the counter, and is compiled; routing it
  would couple the summarizer stage to the run's counter (and its tokenizer, which need not be cl100k) for that.

**Versions.** The ``MAX_VERSIONS`` most recently used ``counts-<version>`` folders are kept (by mtime; a folder
is touched whenever it is read or written), older ones removed when a new folder is made: two checkouts of
different counting code (two branches, a worktree, CI beside a dev tree) used alternately both stay warm,
where removing every other version made each recount on every run.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from array import array
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

COUNTING_MODULES = (("bench.tokens", "counter.py"), ("bench.tokens", "tokenizer.py"), ("traces", "model.py"),
                    ("bench.tokens", "count_cache.py"))
"""The sources whose code decides a message's count: the counter (overheads, images), the tokenizer (batching) and
``traces.model.render`` (the text counted); this module (the file format) too."""
MAGIC = b"cbc1"
TEXTS_MAGIC = b"cbt1"
PREFIX = "counts-"
MAX_VERSIONS = 3
"""Counting versions kept (the most recently used): more than the checkouts one machine alternates between."""
MAX_TEXTS = 200_000
"""Written-text counts kept per trace and encoding (4.8 MB at most; ``make bench`` keeps up to ~6K a trace)."""
KEY = 16
SUM = 16


def _module_dir(package: str) -> Path:
    from importlib.util import find_spec

    spec = find_spec(package)
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations)))


@lru_cache(maxsize=1)
def code_version() -> str:
    """A short hash of the counting code, tiktoken's version and this machine's byte order."""
    from importlib import metadata

    h = hashlib.sha256(sys.byteorder.encode())
    try:
        h.update(metadata.version("tiktoken").encode())
    except metadata.PackageNotFoundError:
        h.update(b"tiktoken ?")
    for package, name in COUNTING_MODULES:
        h.update(f"{package}/{name}".encode())
        h.update((_module_dir(package) / name).read_bytes())
    return h.hexdigest()[:16]


def cacheable(tokenizer: Any) -> bool:
    """Only the plain tiktoken ``Tokenizer`` is kept: a subclass (tests, a custom count) may count otherwise."""
    from bench.tokens.counter import Tokenizer

    return type(tokenizer) is Tokenizer


def _path(root: Path, trace_sha: str, encoding: str, suffix: str = ".counts") -> Path:
    key = hashlib.sha256(f"{trace_sha}\0{encoding}".encode()).hexdigest()[:32]
    return root / f"{PREFIX}{code_version()}" / f"{key}{suffix}"


def _touch(folder: Path) -> None:
    """Mark a version folder used now (what ``_evict`` orders by)."""
    try:
        os.utime(folder)
    except OSError:
        pass


def _evict(current: Path) -> None:
    """Remove all but the ``MAX_VERSIONS`` most recently used version folders (``current`` always stays)."""
    def used(folder: Path) -> float:
        try:
            return folder.stat().st_mtime
        except OSError:
            return 0.0

    others = sorted((f for f in current.parent.glob(f"{PREFIX}*") if f != current and f.is_dir()),
                    key=used, reverse=True)
    for old in others[MAX_VERSIONS - 1:]:
        shutil.rmtree(old, ignore_errors=True)


def _folder(path: Path) -> None:
    """Make ``path``'s version folder (evicting the least recently used beyond ``MAX_VERSIONS``) or touch it."""
    if path.parent.is_dir():
        _touch(path.parent)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    _evict(path.parent)


def _replace(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (a temporary file renamed over it)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def load(trace_sha: str, encoding: str, messages: int) -> list[int] | None:
    """The kept counts of a trace (by content hash) under ``encoding``, or None (not kept, unreadable,
    or not ``messages`` of them)."""
    from traces.cache import cache_root

    root = cache_root()
    if root is None:
        return None
    path = _path(root, trace_sha, encoding)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    _touch(path.parent)
    if data[:4] != MAGIC or (len(data) - 4) != 8 * messages:
        return None
    counts = array("q")
    counts.frombytes(data[4:])
    return counts.tolist()


def keep(trace_sha: str, encoding: str, counts: Sequence[int]) -> None:
    """Write a trace's counts atomically (parallel runs may write the same file); a cache that cannot be
    written is skipped."""
    from traces.cache import cache_root

    root = cache_root()
    if root is None:
        return
    path = _path(root, trace_sha, encoding)
    try:
        _folder(path)
        _replace(path, MAGIC + array("q", counts).tobytes())
    except (OSError, OverflowError):
        pass


def prime(counter: Any, trace_sha: str, messages: Sequence[Any]) -> bool:
    """Fill ``counter`` with the counts of ``messages`` (a trace's, whose content hash is ``trace_sha``):
    the kept ones when there are (True), else counted now (``TokenCounter.prime``) and kept (False)."""
    tokenizer = counter.tokenizer
    if not cacheable(tokenizer):
        counter.prime(messages)
        return False
    kept = load(trace_sha, tokenizer.name, len(messages))
    if kept is not None:
        counter.prime_counts(messages, kept)
        return True
    counter.prime(messages)
    keep(trace_sha, tokenizer.name, [counter.truth(m) for m in messages])
    return False


def _read_texts(path: Path) -> dict[bytes, int]:
    """The text counts of one ``.texts`` file, or none when it is missing, cut short or damaged."""
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    body, digest = data[:-SUM], data[-SUM:]
    n, extra = divmod(len(body) - len(TEXTS_MAGIC), KEY + 8)
    if (len(data) < len(TEXTS_MAGIC) + SUM or body[:4] != TEXTS_MAGIC or extra
            or hashlib.blake2b(body, digest_size=SUM).digest() != digest):
        return {}
    counts = array("q")
    counts.frombytes(body[4 + KEY * n:])
    return {body[i:i + KEY]: c for i, c in zip(range(4, 4 + KEY * n, KEY), counts, strict=True)}


def _texts_bytes(kept: dict[bytes, int]) -> bytes:
    body = TEXTS_MAGIC + b"".join(kept) + array("q", kept.values()).tobytes()
    return body + hashlib.blake2b(body, digest_size=SUM).digest()


def kept_files(trace_sha: str, encoding: str) -> tuple[bool, bool]:
    """Whether this trace's message counts and written-text counts are kept now (files present), for a
    timing to say what it covers (``python -m bench.cli.perf``)."""
    from traces.cache import cache_root

    root = cache_root()
    if root is None:
        return False, False
    return _path(root, trace_sha, encoding).is_file(), _path(root, trace_sha, encoding, ".texts").is_file()


def attach_texts(counter: Any, trace_sha: str) -> bool:
    """Give ``counter`` (one trace's, ``trace_sha`` its content hash) the written-text counts kept for that
    trace, so ``TokenCounter.text`` reads them before tokenizing. Nothing for a tokenizer other than the
    plain one, or with the cache off. True when some were kept."""
    from traces.cache import cache_root

    root = cache_root()
    if root is None or not cacheable(counter.tokenizer):
        return False
    path = _path(root, trace_sha, counter.tokenizer.name, ".texts")
    counter.kept = _read_texts(path)
    if counter.kept:
        _touch(path.parent)
    counter.kept_sha = trace_sha
    return bool(counter.kept)


def keep_texts(counter: Any) -> int:
    """Write what ``counter`` counted anew since ``attach_texts`` (or the last call) into its trace's file,
    merged with what that file holds now and what the counter loaded; returns how many texts were new (0:
    nothing written). A cache that cannot be written is skipped."""
    from traces.cache import cache_root

    new = counter.kept_new
    root = cache_root()
    if not new or counter.kept is None or root is None:
        return 0
    path = _path(root, counter.kept_sha, counter.tokenizer.name, ".texts")
    merged = {**_read_texts(path), **counter.kept}
    if len(merged) > MAX_TEXTS:  # what this counter used first, then the rest in file order
        used = {k: merged[k] for k in (*new, *counter.kept_used) if k in merged}
        for k, n in merged.items():
            if len(used) >= MAX_TEXTS:
                break
            used.setdefault(k, n)
        merged = dict(list(used.items())[:MAX_TEXTS])
    added = len(new)
    try:
        _folder(path)
        _replace(path, _texts_bytes(merged))
    except (OSError, OverflowError):
        return 0
    counter.kept_new = {}
    return added
