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
edit to the counter or an upgraded tokenizer starts a new folder (older ones are removed when it is
first written) and never reads a stale count. A file that cannot be read, or holds another number of
counts than the trace has messages, is counted again: the cache can only save time, never change a count.
Only the plain ``Tokenizer`` is kept (a subclass may count otherwise).
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
PREFIX = "counts-"


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


def _path(root: Path, trace_sha: str, encoding: str) -> Path:
    key = hashlib.sha256(f"{trace_sha}\0{encoding}".encode()).hexdigest()[:32]
    return root / f"{PREFIX}{code_version()}" / f"{key}.counts"


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
        fresh = not path.parent.is_dir()
        path.parent.mkdir(parents=True, exist_ok=True)
        if fresh:  # a new counting version: the older folders can never be read again
            for old in path.parent.parent.glob(f"{PREFIX}*"):
                if old != path.parent and old.is_dir():
                    shutil.rmtree(old, ignore_errors=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(MAGIC + array("q", counts).tobytes())
        tmp.replace(path)
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
