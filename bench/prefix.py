"""Where two message tuples part, found at memory speed.

Every agent call compares the request with the previous one (the prompt cache, the validity check,
the re-read proxy). The two share a long prefix of the same objects, so the comparison is done
by tuple equality over blocks of ``BLOCK`` positions, a C loop that takes the identity shortcut
per element; only a block that differs is looked at position by position. A per-element Python
(or ``map``) pass cost 10–40 ns a message per call, which made a 3M-token replay quadratic.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

BLOCK = 256


def first_difference(a: tuple[Any, ...], b: tuple[Any, ...], start: int = 0, stop: int | None = None) -> int:
    """The first position in [``start``, ``stop``) where ``a`` and ``b`` hold unequal values (``==``,
    true of the same object); ``stop`` (default: the shorter length) when there is none."""
    n = min(len(a), len(b)) if stop is None else stop
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
