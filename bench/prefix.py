"""Where two message tuples part, found at memory speed.

Every agent call compares the request with the previous one (the prompt cache, the validity check,
the re-read proxy). The two share a long prefix of the same objects, so the comparison is done
by tuple equality over blocks of ``BLOCK`` positions, a C loop that takes the identity shortcut
per element; only a block that differs is looked at position by position. A per-element Python
(or ``map``) pass cost 10–40 ns a message per call, which made a 3M-token replay quadratic.

Even at memory speed a comparison is the whole history per call. Most requests only grew from the
one before (the replay appends the step's messages and the strategy sends them as they are), so
tuples built by ``extend`` remember what they extend: a comparison of a tuple with one it was grown
from, a few appends back, is answered without looking at the messages.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

BLOCK = 256
LINEAGE_KEEP = 64
"""Tuples ``extend`` remembers (each with the one it extends): a few calls' worth of appends."""
LINEAGE_DEPTH = 32
"""Appends walked back to find an ancestor: more messages than one step adds."""

_grown_from: dict[int, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}
"""id(child) → (child, parent), oldest first: both held, so an id cannot be reused while listed."""


def extend(parent: tuple[Any, ...], added: tuple[Any, ...]) -> tuple[Any, ...]:
    """``parent + added``, remembered as grown from ``parent`` (so ``first_difference`` of the two, or
    of the result's later extensions and ``parent``, needs no comparison)."""
    child = parent + added
    if parent and added:
        _grown_from[id(child)] = (child, parent)
        while len(_grown_from) > LINEAGE_KEEP:
            _grown_from.pop(next(iter(_grown_from)), None)
    return child


def grew_from(child: tuple[Any, ...], parent: tuple[Any, ...]) -> bool:
    """Is ``parent`` known to be a prefix of ``child`` (the same objects), by what ``extend`` remembers?"""
    if child is parent:
        return True
    if len(child) <= len(parent):
        return False
    node = child
    for _ in range(LINEAGE_DEPTH):
        hit = _grown_from.get(id(node))
        if hit is None or hit[0] is not node:
            return False
        node = hit[1]
        if node is parent:
            return True
        if len(node) <= len(parent):
            return False
    return False


def first_difference(a: tuple[Any, ...], b: tuple[Any, ...], start: int = 0, stop: int | None = None) -> int:
    """The first position in [``start``, ``stop``) where ``a`` and ``b`` hold unequal values (``==``,
    true of the same object); ``stop`` (default: the shorter length) when there is none."""
    n = min(len(a), len(b)) if stop is None else stop
    if start == 0 and (grew_from(b, a) or grew_from(a, b)):  # one was grown from the other
        return n
    if start == 0 and a[:n] == b[:n]:  # the usual case: one C loop (a whole-tuple slice is no copy)
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
