"""Codex's per-call trigger values, kept as running prefix values instead of re-walked every call.

Codex's check before each call needs, for the history it holds, the estimate of the encrypted
reasoning before the last user turn (``old_reasoning``), where that last turn begins and the
newest recorded ``model_context_window``. Computed afresh, each is a Python pass over the whole
history per call (2.7M ``reasoning_estimate`` calls on a seeds-1 bench). Here each is a list
indexed by prefix length, extended by the messages a call added; a history that is not the one
seen last with messages added (a compaction rebuilt it, a tool output was cut in place) is
rescanned from its first message that is not the same object (an identity pass at C speed), so
the values always equal a fresh computation over the messages held now.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import compress, count
from operator import is_not

from bench.context import Message, starts_with
from strategies.codex.common import turn_boundary

STATE_KEY = "codex_prefix_scan"


@dataclass
class PrefixScan:
    """Values over each prefix ``held[:i]`` of the last history scanned (lists of ``len(held) + 1``).

    ``held`` is kept (a strong reference) so that the identity test against it stays meaningful:
    the same objects in the same positions give the same values, whatever happened in between.
    """

    factor: float
    """The ``unsized_reasoning_factor`` the reasoning sums were taken at (a strategy's parameter)."""
    held: tuple[Message, ...] = ()
    reasoning: list[int] = field(default_factory=lambda: [0])
    """Sum of the reasoning estimate of the assistant messages of ``held[:i]``."""
    boundary: list[int] = field(default_factory=lambda: [-1])
    """Index of the last user-turn boundary in ``held[:i]`` (``turn_boundary``), -1 if none."""
    window: list[int | None] = field(default_factory=lambda: [None])
    """The ``context_window`` recorded with the newest assistant message of ``held[:i]`` that has one."""

    def update(self, msgs: tuple[Message, ...], estimate: Callable[[Message], int]) -> None:
        """Make the lists describe ``msgs``: keep what its leading same objects share with ``held``."""
        held = self.held
        if msgs is held:
            return
        if starts_with(msgs, held):  # the usual call: the history only grew
            same = len(held)
        else:
            same = next(compress(count(), map(is_not, held, msgs)), min(len(held), len(msgs)))
            del self.reasoning[same + 1:], self.boundary[same + 1:], self.window[same + 1:]
        reasoning, boundary, window = self.reasoning, self.boundary, self.window
        r, b, w = reasoning[same], boundary[same], window[same]
        for i in range(same, len(msgs)):
            m = msgs[i]
            if m.role == "assistant":
                r += estimate(m)
                recorded = m.meta.get("context_window")
                if isinstance(recorded, int):
                    w = recorded
            elif turn_boundary(m):
                b = i
            reasoning.append(r)
            boundary.append(b)
            window.append(w)
        self.held = msgs


def prefix_scan(state: dict, msgs: tuple[Message, ...], factor: float,
                estimate: Callable[[Message], int]) -> PrefixScan:
    """The session's scan brought up to ``msgs`` (started afresh for another reasoning factor)."""
    scan = state.get(STATE_KEY)
    if scan is None or scan.factor != factor:
        scan = state[STATE_KEY] = PrefixScan(factor)
    scan.update(msgs, estimate)
    return scan


PAIRS_KEY = "codex_output_pairs"


@dataclass
class OutputPairs:
    """The tool-output ids of the last history scanned that no call anywhere in it made (kept by
    difference as the history grows, rescanned when a compaction rebuilt it): what Codex's
    ``remove_orphan_outputs`` would drop from a prompt built from that history."""

    held: tuple[Message, ...] = ()
    calls: set[str] = field(default_factory=set)
    unmatched: set[str] = field(default_factory=set)

    def update(self, msgs: tuple[Message, ...]) -> set[str]:
        """Bring the scan up to ``msgs`` and return its orphan output ids (a set shared with the scan)."""
        held = self.held
        if msgs is held:
            return self.unmatched
        if starts_with(msgs, held):  # the usual call: the history only grew
            new = msgs[len(held):]
        else:
            self.calls, self.unmatched, new = set(), set(), msgs
        calls, unmatched = self.calls, self.unmatched
        for m in new:
            for u in m.tool_uses:
                calls.add(u.id)
                unmatched.discard(u.id)
            for r in m.tool_results:
                if r.tool_use_id not in calls:
                    unmatched.add(r.tool_use_id)
        self.held = msgs
        return unmatched


def orphan_outputs(state: dict, msgs: tuple[Message, ...]) -> set[str]:
    """The session's ``OutputPairs`` brought up to ``msgs``: its orphan output ids."""
    pairs = state.get(PAIRS_KEY)
    if pairs is None:
        pairs = state[PAIRS_KEY] = OutputPairs()
    return pairs.update(msgs)
