"""bench.tokens.prefix: the block-wise prefix comparison equals the position-by-position definition, and
tuples grown by ``extend`` are recognised without a comparison."""

from __future__ import annotations

import random

import pytest

from bench.tokens import prefix
from bench.tokens.prefix import (
    BLOCK,
    LINEAGE_DEPTH,
    LINEAGE_KEEP,
    _derived,
    differences,
    extend,
    first_difference,
    grew_from,
    starts_with,
)


class Counted:
    """A value compared by ``v``; counts ``__eq__`` calls, so a test sees what was compared."""

    calls = 0

    def __init__(self, v: int) -> None:
        self.v = v

    def __eq__(self, other: object) -> bool:
        Counted.calls += 1
        return isinstance(other, Counted) and self.v == other.v

    __hash__ = None  # type: ignore[assignment]


@pytest.fixture(autouse=True)
def remember_short_tuples(monkeypatch):
    """These tuples are short: remember every derivation (LINEAGE_MIN is a cost threshold)."""
    monkeypatch.setattr(prefix, "LINEAGE_MIN", 1)


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


def test_a_tuple_grown_by_extend_is_known_to_start_with_its_ancestors_without_a_comparison() -> None:
    shared = [Counted(i) for i in range(3 * BLOCK)]
    root = tuple(shared[:BLOCK])
    a = extend(root, tuple(shared[BLOCK:BLOCK + 3]))
    b = extend(extend(a, (shared[BLOCK + 3],)), tuple(shared[BLOCK + 4:2 * BLOCK]))
    assert grew_from(b, a) and grew_from(b, root) and grew_from(a, root) and grew_from(a, a)
    assert not grew_from(a, b) and not grew_from(root, a)
    copy = tuple(shared[:BLOCK + 3])  # equal to a, elementwise the same objects, but not known to be
    assert not grew_from(b, copy)
    Counted.calls = 0
    assert first_difference(a, b) == first_difference(b, a) == len(a)
    assert first_difference(root, b, 0, 10) == 10
    assert first_difference(copy, b) == len(copy)  # compared: identity shortcut, still right
    assert Counted.calls == 0


def test_a_branch_is_not_an_ancestor_and_a_difference_is_still_found() -> None:
    root = tuple(range(10))
    left, right = extend(root, (1, 2)), extend(root, (1, 3))
    assert not grew_from(left, right) and not grew_from(right, left)
    assert first_difference(left, right) == 11
    longer = extend(left, (4,))
    assert first_difference(right, longer) == 11 and first_difference(longer, right) == 11


def test_what_extend_remembers_is_bounded_and_forgetting_only_costs_a_comparison() -> None:
    root = (0,) * 5
    first = extend(root, (1,))
    for i in range(LINEAGE_KEEP + 5):  # pushes ``first`` out of what is remembered
        extend((i,), (i,))
    assert len(_derived) <= LINEAGE_KEEP
    assert not grew_from(first, root)
    assert first_difference(root, first) == 5
    chain = root
    for i in range(LINEAGE_DEPTH + 2):  # more appends than a walk back looks through
        chain = extend(chain, (i,))
    assert not grew_from(chain, root) and first_difference(root, chain) == 5


def test_starts_with_is_by_identity_and_known_derivations_skip_the_pass() -> None:
    shared = [Counted(i) for i in range(40)]
    head = tuple(shared[:20])
    grown = extend(head, tuple(shared[20:]))
    Counted.calls = 0
    assert starts_with(grown, head) and starts_with(tuple(shared), head)  # known, then by one identity pass
    assert not starts_with(tuple(Counted(i) for i in range(40)), head)  # equal values, other objects
    assert not starts_with(head, grown)
    assert Counted.calls == 0
