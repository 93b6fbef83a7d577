"""A worker's memory does not grow with the jobs it has run: the cyclic garbage a job leaves is
collected, not frozen again by the next job's ``gc.freeze`` (bench/run/runner.py long_lived_frozen)."""

from __future__ import annotations

import gc

from bench.run.runner import long_lived_frozen


class Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the cyclic collector frees it


def test_garbage_a_block_leaves_is_collected_not_frozen_by_the_next_block():
    gc.collect()
    for _ in range(30):
        with long_lived_frozen():
            for _ in range(200):
                Node()
    gc.disable()
    try:
        # what is still alive here can be freed only by a collection: frozen garbage never is
        with long_lived_frozen():
            pass
        alive = sum(isinstance(o, Node) for o in gc.get_objects())
    finally:
        gc.enable()
    assert alive == 0


def test_what_lives_on_outside_the_block_is_untouched():
    kept = []
    with long_lived_frozen():
        kept.append(Node())
    assert isinstance(kept[0].me, Node) and gc.get_freeze_count() == 0


def test_the_collector_is_off_inside_the_block_and_back_on_after_it():
    """A job's replay runs without the collector's own runs (they rescanned what the replay was still using,
    ~10% of a bench); the block restores whatever state it found, even when the block raises."""
    assert gc.isenabled()
    with long_lived_frozen():
        assert not gc.isenabled()
    assert gc.isenabled()
    try:
        with long_lived_frozen():
            raise KeyError("a task failed")
    except KeyError:
        pass
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        with long_lived_frozen():
            pass
        assert not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()
