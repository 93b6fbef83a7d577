"""The prompt cache's split of a request (cache read / cache write / uncached): the hot part of pricing.

Every agent and summarizer call of every replay goes through ``PromptCache.request``, so it lives apart
from the price tables (bench/cost/pricing.py, which re-exports it) and is compiled with mypyc
(bench/cli/native.py); the tables, their TOML and genai-prices' lookups run once per model and stay
pure Python. It reads a model profile only for ``min_cache_prefix`` and ``bills_cache_writes`` (a
``CachedModel``), so it imports nothing from pricing (no import circle).

A call's prompt is split into cache-read (the longest common prefix, at message granularity, with a
request written to the cache within its lifetime), cache-write (the rest, where the provider bills
writes) and uncached (the rest elsewhere); below the model's minimum cacheable prefix nothing is
cached (pricing.md §1.1).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate, compress, repeat
from operator import add, is_not
from typing import Any, Protocol

from bench.tokens.prefix import first_difference

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}


class CachedModel(Protocol):
    """What the cache reads of a model profile (bench.cost.pricing.ModelProfile)."""

    @property
    def min_cache_prefix(self) -> int: ...

    @property
    def bills_cache_writes(self) -> bool: ...


@dataclass(frozen=True)
class CacheSplit:
    cache_read: int
    cache_write: int
    uncached: int
    prefix_break: bool
    """A cached request existed within its lifetime but this one re-used less than all of it."""

    @property
    def prompt(self) -> int:
        return self.cache_read + self.cache_write + self.uncached

    def __reduce__(self) -> tuple[type[CacheSplit], tuple[int, int, int, bool]]:
        """Rebuilt from its fields: the compiled frozen class cannot be filled in field by field, which
        is how ``copy`` and ``pickle`` would otherwise remake it."""
        return CacheSplit, (self.cache_read, self.cache_write, self.uncached, self.prefix_break)


@dataclass(slots=True)
class _Entry:
    messages: tuple[Any, ...]
    sums: list[int]
    """Running token sums: ``sums[i]`` is the tokens of ``messages[:i + 1]``. The list may run on
    past this request (entries that extend one another share it), so only ``len(messages)`` count."""
    written_at: float
    stream: str
    counted: int = 0
    """From here on each step of ``sums`` is the count of this request's own message there (before
    it, a step may be an earlier request's, for a value-equal message)."""

    @property
    def total(self) -> int:
        return self.sums[len(self.messages) - 1] if self.messages else 0


ALIGNED_MIN = 64
"""Positions past the shared prefix from which ``_tail_sums`` takes steps by position: on fewer,
counting each message is cheaper than the slicing."""


class PromptCache:
    """The provider-side prefix cache of one conversation with one model.

    Keeps the most recent cached requests (an agent's own request and a summarizer's request are
    separate entries, as real cache lines are) and looks each new request up by the longest
    common prefix at message granularity. Token counts are taken only for what a request adds to
    the last one it shares a prefix with (running sums, extended in place when it extends it, cut
    back in place when no kept entry reads past the shared prefix), and only the previous request
    is compared in full: each other entry's common prefix follows from the one it had with the
    previous request, so a growing conversation costs each call its new messages, not its whole
    history.
    """

    MAX_ENTRIES = 4

    def __init__(self, model: CachedModel, ttl: str = "5m") -> None:
        self.model = model
        self.ttl = ttl
        self.ttl_seconds = TTL_SECONDS[ttl]
        self._min_prefix = model.min_cache_prefix
        self._bills_writes = model.bills_cache_writes
        """The model's two figures the split reads, read once (a profile is frozen)."""
        self._entries: list[_Entry] = []
        self._last: _Entry | None = None
        """The previous request, cached or not and however old: its running sums are reused."""
        self._common: dict[int, int] = {}
        """id of an entry in ``_entries`` → the length of its common prefix with ``_last``."""

    def __deepcopy__(self, memo: dict[int, Any]) -> PromptCache:
        """A copy of exactly this state, deep-copied with ``memo`` as ``copy.deepcopy`` copies a plain
        object: entries that share one running-sums list still share one copy, and ``_common`` keeps
        the originals' ids (which miss in the copy: bench.replay.loop._Loop.fork holds the originals).
        Said outright because the compiled class (bench/cli/native.py) has no default copy (the twin
        fork copies the prompt caches)."""
        new = PromptCache(copy.deepcopy(self.model, memo), self.ttl)
        memo[id(self)] = new
        new.ttl_seconds = self.ttl_seconds
        new._entries = copy.deepcopy(self._entries, memo)
        new._last = copy.deepcopy(self._last, memo)
        new._common = dict(self._common)
        return new

    def _commons(self, msgs: tuple[Any, ...]) -> list[tuple[_Entry, int]]:
        """Each candidate entry (``_entries``, then ``_last``) with its common prefix with ``msgs``.

        With k = common(e, last) and c = common(last, msgs): common(e, msgs) is k when k < c and c
        when k > c (equality is transitive, and at the first position one pair differs the other
        agrees); only k == c needs a look past it.
        """
        last = self._last
        c = first_difference(last.messages, msgs) if last is not None else 0
        out: list[tuple[_Entry, int]] = []
        for e in (*self._entries, *([last] if last is not None else [])):
            k = c if e is last else self._common.get(id(e))
            if k is None:
                n = first_difference(e.messages, msgs)
            elif k != c:
                n = min(k, c)
            else:
                n = c if e is last else first_difference(e.messages, msgs, k)
            out.append((e, n))
        return out

    def request(
        self, messages: Sequence[Any], counts: Sequence[int] | Callable[[Any], int], now: float,
        stream: str = "agent",
    ) -> CacheSplit:
        """Split one request; ``counts`` is each message's tokens, or a function giving them;
        ``stream`` tells the agent's requests from a summarizer's."""
        msgs = tuple(messages)
        ttl = self.ttl_seconds
        entries = self._entries
        alive = [e for e in entries if now - e.written_at <= ttl]
        best_tokens, best_entry = 0, None
        reuse, reuse_n = None, 0
        commons = self._commons(msgs)
        # ``commons`` lists ``entries`` in order, then the previous request: an entry is alive when it
        # has not expired; the previous request, when it is one of them, has the same common prefix
        # as its place there, so it cannot read more (the hit is the first entry reading the most).
        for j, (e, n) in enumerate(commons):
            if n > reuse_n:
                reuse, reuse_n = e, n
            if n and j < len(entries) and now - e.written_at <= ttl and (tokens := e.sums[n - 1]) > best_tokens:
                best_tokens, best_entry = tokens, e
        if best_tokens < self._min_prefix:
            best_tokens, best_entry = 0, None
        previous = None
        for e in reversed(alive):
            if e.stream == stream:
                previous = e
                break
        prefix_break = previous is not None and best_tokens < previous.total
        known = reuse.sums if reuse is not None else []
        tail = self._tail_sums(msgs, counts, reuse, reuse_n)
        total = tail[-1] if tail else known[reuse_n - 1] if reuse_n else 0
        cacheable = total >= self._min_prefix
        kept = [e for e in alive if e is not previous] if cacheable else alive
        if len(known) == reuse_n or (reuse is not None and not any(e.sums is known for e in kept)):
            # extended in place (entries that extend one another share the list: each reads only its
            # own length), or cut back to the shared prefix first when no entry kept reads past it
            del known[reuse_n:]
            known += tail
            sums = known
        else:
            sums = known[:reuse_n] + tail
        rest = total - best_tokens
        if cacheable and self._bills_writes:
            split = CacheSplit(best_tokens, rest, 0, prefix_break)
        else:
            split = CacheSplit(best_tokens, 0, rest, prefix_break)
        if best_entry is not None:
            best_entry.written_at = now  # a hit refreshes the lifetime
        entry = _Entry(msgs, sums, now, stream, reuse_n)
        self._last = entry
        # The new request extends (or replaces) its stream's previous line when it can be cached.
        if cacheable:
            kept.append(entry)
            self._entries = kept[-self.MAX_ENTRIES:]
        else:
            self._entries = alive
        # Only entries still held are keyed: a dropped entry's id could be taken by a later object (a
        # copy of this cache, in the open-loop twin's fork) and read a stranger's common prefix.
        held = {id(e) for e in self._entries}
        self._common = {id(e): n for e, n in commons if id(e) in held}
        return split

    @staticmethod
    def _tail_sums(msgs: tuple[Any, ...], counts: Sequence[int] | Callable[[Any], int],
                   reuse: _Entry | None, n: int) -> list[int]:
        """Cumulative tokens of ``msgs`` from position ``n`` on, the first ``n`` being those of
        ``reuse`` (the entry sharing the longest prefix). Past ``n``, where ``reuse`` counted its own
        messages, a position holding the same object as there takes its step (found at C speed): a
        request that rewrites a few old positions (a re-cut, a mask) counts those, not everything
        after the first."""
        known = reuse.sums if reuse is not None else []
        out: list[int] = []
        acc = known[n - 1] if n else 0
        start = n
        if reuse is not None and callable(counts):
            old = reuse.messages
            lo, hi = max(n, reuse.counted), min(len(old), len(msgs))
            if hi - lo >= ALIGNED_MIN:
                for i in range(n, lo):
                    acc += counts(msgs[i])
                    out.append(acc)
                delta, prev = acc - (known[lo - 1] if lo else 0), lo  # step p: known[p] + delta
                for p in compress(range(lo, hi), map(is_not, old[lo:hi], msgs[lo:hi])):
                    out.extend(map(add, known[prev:p], repeat(delta, p - prev)))
                    delta += counts(msgs[p]) - known[p] + (known[p - 1] if p else 0)
                    out.append(known[p] + delta)
                    prev = p + 1
                out.extend(map(add, known[prev:hi], repeat(delta, hi - prev)))
                acc, start = known[hi - 1] + delta, hi
        if start < len(msgs):  # the same additions in the same order, at C speed
            steps = accumulate(map(counts, msgs[start:]) if callable(counts) else counts[start:len(msgs)],
                               initial=acc)
            next(steps)
            out.extend(steps)
        return out
