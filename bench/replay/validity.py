"""What a provider would reject in a request, checked on every agent call the replay sends.

The Messages API refuses a tool_result whose tool_use did not come before it, a tool_use left
without a result, a tool_use id used twice and a message with no content. A strategy must never
introduce one of these; when a request has one anyway (the recorded session itself had it, or
the agent's real behaviour produces it), the replay records the call as invalid rather than
pretending the provider accepted it (spec/strategies.md §0, issue 11).

The check is incremental: a request that extends the previous one (the usual case: the context
only grew) costs only its new messages, so a replay stays linear in what changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from weakref import ref

from bench.tokens.counter import remember
from bench.tokens.prefix import differences
from traces.model import Message, Text, ToolResult, ToolUse

EVENT_KIND = "invalid"
"""The kind of the event the replay records on such a request (not a strategy action: metrics of
strategy events leave it out)."""
MAX_LISTED = 5
"""Problems named in an event's detail (the count is always complete)."""


@dataclass(frozen=True)
class Problem:
    """One thing the API would reject: where, what (``kind``) and which id or role."""

    index: int
    kind: str
    """``orphan_result``, ``answered_twice``, ``duplicate_id``, ``empty`` or ``unanswered_call``."""
    subject: str

    def __str__(self) -> str:
        what = {
            "orphan_result": "tool result {} has no call before it",
            "answered_twice": "tool result {} answers a call already answered",
            "duplicate_id": "tool call id {} used twice",
            "empty": "empty {} message",
            "unanswered_call": "tool call {} has no result",
        }[self.kind]
        return f"messages[{self.index}]: " + what.format(self.subject)


@dataclass
class _State:
    uses: set[str] = field(default_factory=set)
    open: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def copy(self) -> _State:
        return _State(set(self.uses), dict(self.open), list(self.problems))


_SHAPES: dict[int, tuple[Any, tuple]] = {}
"""id → (message or a weak reference to it, ``_shape``), shared by every check in the process: a shape
is a pure function of an immutable message, and every strategy replayed over a trace sends the same
recorded messages (one memo per replay read each of them again, 45 times a trace)."""


@dataclass
class RequestCheck:
    """Finds a request's problems, re-using the work done on the previous request's prefix."""

    _prefix: tuple[Message, ...] = ()
    _state: _State = field(default_factory=_State)
    _shapes: dict[int, tuple[Any, tuple]] = field(default_factory=lambda: _SHAPES)
    """id → (message or a weak reference to it, ``_shape``): a message is read once however often a
    request is rescanned, and forgotten when it dies (``_SHAPES``)."""
    _mark: tuple[int, _State] | None = None
    """(position, the scan's state before it) where the last request that changed its prefix parted
    from the one before: the next such request resumes there when it parts no earlier."""

    def shape(self, m: Message) -> tuple:
        hit = self._shapes.get(id(m))
        if hit is not None and ((held := hit[0]) is m or (held.__class__ is ref and held() is m)):
            return hit[1]
        found = _shape(m)
        remember(self._shapes, id(m), m, found)  # kept while the message lives
        return found

    def problems(self, messages: Sequence[Message]) -> tuple[Problem, ...]:
        """Each thing the API would reject, in order: orphan results, duplicate ids, empty
        messages, then calls still without a result."""
        msgs = tuple(messages)
        prefix, shape = self._prefix, self.shape
        k = len(prefix)
        n = min(k, len(msgs))
        # the first position whose shape changed: messages rewritten with the same blocks' ids and
        # roles (a masked output, a cleared result) leave the problems before them as they were
        d = next((i for i in differences(prefix, msgs, n) if shape(prefix[i]) != shape(msgs[i])), n)
        if d == k:  # the previous request, then more
            state, start = self._state, k
        elif self._mark is not None and self._mark[0] <= d:  # resume where an earlier request parted
            start, state = self._mark  # taken over: a new mark (a copy) is always set at d below
        else:
            state, start = _State(), 0
        for i in range(start, len(msgs)):
            if i == d < k:  # remember the state here: a view that moves (masking) parts about here next time
                self._mark = (i, state.copy())
            _scan(shape(msgs[i]), i, state)
        if d == len(msgs) < k:  # a request cut short: the state at its end is the mark itself
            self._mark = (d, state.copy())
        self._prefix, self._state = msgs, state
        unanswered = [Problem(i, "unanswered_call", uid) for uid, i in state.open.items()]
        return (*state.problems, *unanswered)


def _shape(m: Message) -> tuple:
    """All that ``_scan`` reads of a message: its role, emptiness and tool ids in order."""
    return (m.role, not any(not isinstance(b, Text) or b.text for b in m.blocks),
            tuple((True, b.id) if isinstance(b, ToolUse) else (False, b.tool_use_id)
                  for b in m.blocks if isinstance(b, ToolUse | ToolResult)))


def _scan(shape: tuple, i: int, state: _State) -> None:
    role, empty, ids = shape
    if empty:
        state.problems.append(Problem(i, "empty", role))
    for is_use, uid in ids:
        if is_use:
            if uid in state.uses:
                state.problems.append(Problem(i, "duplicate_id", uid))
            state.uses.add(uid)
            state.open[uid] = i
        elif state.open.pop(uid, None) is None:
            kind = "answered_twice" if uid in state.uses else "orphan_result"
            state.problems.append(Problem(i, kind, uid))


def problems(messages: Sequence[Message]) -> tuple[Problem, ...]:
    """The problems of one request, checked from scratch."""
    return RequestCheck().problems(messages)


def describe(found: Sequence[Problem]) -> str:
    """A one-line detail for an event: the count and the first few problems."""
    listed = "; ".join(map(str, found[:MAX_LISTED]))
    more = f"; and {len(found) - MAX_LISTED} more" if len(found) > MAX_LISTED else ""
    return f"{len(found)} problem{'s' if len(found) != 1 else ''} the API would reject: {listed}{more}"
