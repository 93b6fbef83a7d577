"""bench.prefix: the block-wise prefix comparison equals the position-by-position definition."""

from __future__ import annotations

import random

from bench.prefix import BLOCK, differences, first_difference


class Counted:
    """A value compared by ``v``; counts ``__eq__`` calls, so a test sees what was compared."""

    calls = 0

    def __init__(self, v: int) -> None:
        self.v = v

    def __eq__(self, other: object) -> bool:
        Counted.calls += 1
        return isinstance(other, Counted) and self.v == other.v

    __hash__ = None  # type: ignore[assignment]


def naive_first(a: tuple, b: tuple, start: int = 0, stop: int | None = None) -> int:
    n = min(len(a), len(b)) if stop is None else stop
    return next((i for i in range(start, n) if a[i] != b[i]), n)


def test_matches_the_definition_on_random_tuples() -> None:
    rng = random.Random(7)
    for _ in range(400):
        n, m = rng.randint(0, 3 * BLOCK), rng.randint(0, 3 * BLOCK)
        a = tuple(rng.choice((0, 0, 0, 0, 1)) if rng.random() < 0.02 else 0 for _ in range(n))
        b = tuple(rng.choice((0, 0, 0, 0, 1)) if rng.random() < 0.02 else 0 for _ in range(m))
        k = min(n, m)
        assert first_difference(a, b) == naive_first(a, b)
        start = rng.randint(0, k)
        assert first_difference(a, b, start) == naive_first(a, b, start)
        stop = rng.randint(0, k)
        assert first_difference(a, b, 0, stop) == naive_first(a, b, 0, stop)
        assert list(differences(a, b, k)) == [i for i in range(k) if a[i] != b[i]]


def test_equal_values_count_as_the_same_and_identical_objects_are_not_compared() -> None:
    shared = [Counted(i) for i in range(3 * BLOCK)]
    a = tuple(shared)
    b = (*shared[:BLOCK + 5], Counted(BLOCK + 5), Counted(-1), *shared[BLOCK + 7:])  # an equal copy, then a change
    Counted.calls = 0
    assert first_difference(a, b) == BLOCK + 6
    assert list(differences(a, b, len(a))) == [BLOCK + 6]
    assert Counted.calls < 20  # the shared objects are skipped by identity, never asked __eq__


def test_a_prefix_and_empty_tuples() -> None:
    assert first_difference((), ()) == 0
    assert first_difference((1, 2), (1, 2, 3)) == 2
    assert first_difference((1, 2, 3), (1, 2)) == 2
    assert list(differences((1, 2, 3), (1, 9, 3, 4), 3)) == [1]
