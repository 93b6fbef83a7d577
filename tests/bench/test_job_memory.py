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
