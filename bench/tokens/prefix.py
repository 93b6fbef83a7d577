"""Where two message tuples part, found at memory speed.

Every agent call compares the request with the previous one (the prompt cache, the validity check,
the re-read proxy). The two share a long prefix of the same objects, so the comparison is done
by tuple equality over blocks of ``BLOCK`` positions, a C loop that takes the identity shortcut
per element; only a block that differs is looked at position by position. A per-element Python
(or ``map``) pass cost 10–40 ns a message per call, which made a 3M-token replay quadratic.

Even at memory speed a comparison is the whole history per call. Most requests only grew from the
one before (the replay appends the step's messages and the strategy sends them as they are), or
differ from it after a position the strategy knows (a view that masks one more output), so tuples
built by ``extend``, ``Context.patch`` and ``Context.replace`` remember what they were derived from
and how far they hold its objects: a comparison with a tuple a few derivations back starts there.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from operator import is_
from typing import Any

BLOCK = 256
LINEAGE_KEEP = 8
"""Derived tuples remembered (each with its parent): a few calls' worth of appends and views. They
are held, and with them what they hold: a strategy that sends dozens of new 40K-character cuts a
call (gemini-cli) kept 63 MB alive through 64 of them."""
LINEAGE_MIN = 128
"""A shared head shorter than this is not remembered nor looked up: comparing it costs less than
the bookkeeping (the short sessions of ``make bench`` paid 0.5 s more for it than they saved)."""
LINEAGE_DEPTH = 8
"""Derivations walked back to find an ancestor: what one step usually adds (a failed walk is pure
cost, and a longer history only falls back to the comparison)."""

_derived: OrderedDict[int, tuple[tuple[Any, ...], tuple[Any, ...], int]] = OrderedDict()
"""id(child) → (child, parent, how many leading positions of child hold parent's objects), oldest
first; both tuples held, so an id cannot be reused while listed."""


def derived(child: tuple[Any, ...], parent: tuple[Any, ...], same: int) -> None:
    """Remember that ``child[:same]`` holds the objects of ``parent[:same]`` (when that is long)."""
    if same >= LINEAGE_MIN and child is not parent:
        _derived[id(child)] = (child, parent, same)
        while len(_derived) > LINEAGE_KEEP:
            _derived.popitem(last=False)


def extend(parent: tuple[Any, ...], added: tuple[Any, ...]) -> tuple[Any, ...]:
    """``parent + added``, remembered as grown from ``parent``."""
    child = parent + added
    if added and len(parent) >= LINEAGE_MIN:
        derived(child, parent, len(parent))
    return child


def shared_head(old: tuple[Any, ...], new: tuple[Any, ...]) -> int:
    """How many leading positions ``new`` is known to share with ``old`` (the same objects), ``new``
    being derived from ``old`` a few derivations back (0: not known, which says nothing of values)."""
    if old is new:
        return len(old)
    node, same = new, len(new)
    for _ in range(LINEAGE_DEPTH):
        hit = _derived.get(id(node))
        if hit is None or hit[0] is not node:
            return 0
        node = hit[1]
        if hit[2] < same:
            same = hit[2]
        if node is old:
            return same
    return 0


def grew_from(child: tuple[Any, ...], parent: tuple[Any, ...]) -> bool:
    """Is ``parent`` known to be a prefix of ``child`` (the same objects)?"""
    return len(child) >= len(parent) and shared_head(parent, child) >= len(parent)


def starts_with(seq: tuple[Any, ...], head: tuple[Any, ...]) -> bool:
    """Does ``seq`` begin with ``head``'s objects? What is known of their derivation answers at once;
    otherwise one identity pass (a strategy's "the history only grew" test)."""
    return len(seq) >= len(head) and ((len(head) >= LINEAGE_MIN and shared_head(head, seq) >= len(head))
                                      or all(map(is_, head, seq)))


def first_difference(a: tuple[Any, ...], b: tuple[Any, ...], start: int = 0, stop: int | None = None) -> int:
    """The first position in [``start``, ``stop``) where ``a`` and ``b`` hold unequal values (``==``,
    true of the same object); ``stop`` (default: the shorter length) when there is none. Fastest with
    ``a`` the older tuple and ``b`` one derived from it (``shared_head``)."""
    n = min(len(a), len(b)) if stop is None else stop
    if start == 0:
        start = min(shared_head(a, b), n) if n >= LINEAGE_MIN else 0  # known to be the same objects so far
        if start == n or (not start and a[:n] == b[:n]):  # else one C loop (a whole-tuple slice is no copy)
            return n
    i = start
    while i < n:
        j = min(i + BLOCK, n)
        if a[i:j] != b[i:j]:
            return next(k for k in range(i, j) if a[k] is not b[k] and a[k] != b[k])
        i = j
    return n


def differences(a: tuple[Any, ...], b: tuple[Any, ...], stop: int) -> Iterator[int]:
    """Each position below ``stop`` (at most both lengths) where ``a`` and ``b`` hold unequal values."""
    i = first_difference(a, b, 0, stop)
    while i < stop:
        yield i
        i = first_difference(a, b, i + 1, stop)
