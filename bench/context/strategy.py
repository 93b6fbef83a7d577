"""The strategy contract: a frozen dataclass of the real agent's parameters plus four hooks.

The replay loop (bench/replay/loop.py) owns measurement and calls, per model call:

1. ``on_tool_result(ctx, session)`` right after a message carrying tool results is appended
   (per-output truncation acts here);
2. ``before_call(ctx, session)`` once the step is complete, before the request is sent;
3. ``project(ctx, session)`` to get what is actually sent (a read-time view; the stored context
   is unchanged). Most strategies send what they store;
4. ``on_overflow(ctx, session)`` when the request is over the model's window (a 413): the
   reactive path. If the context still does not fit afterwards, the call is an overflow.

A hook returns ``None`` (nothing to do) or an ``Outcome``: the new context, the events it caused,
and optionally ``fail`` to end the session gracefully (a circuit breaker that gave up).
Hooks never mutate messages or the trace; they build new ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

from bench.context.messages import Context

if TYPE_CHECKING:
    from bench.context.session import Session


EVENT_KINDS: tuple[str, ...] = (
    "prune",       # old tool outputs replaced by a marker, calls kept
    "truncate",    # one output cut (head/tail kept)
    "dedup",       # duplicate file reads replaced by a notice
    "drop",        # whole messages removed (middle-out, sliding window)
    "mask",        # observations replaced by a placeholder, rolling
    "persist",     # a large output moved out of context, a pointer kept
    "summarize",   # history replaced (partly) by an LLM summary
    "handoff",     # a new thread started from an extracted goal + files
    "reinject",    # state re-read from outside after a compaction (files, todo)
    "collapse",    # a read-time projection of what is sent
    "fail",        # the strategy gave up (circuit breaker)
    "invalid",     # recorded by the replay: the request sent had something the API would reject
)


CUT_LATEST_HUMAN = "the latest user message cut short"
"""How an event's detail begins when the real agent itself shortens the user's latest message (Codex
middle-truncates one over 20K tokens): the contract suite accepts a cut-short request only then."""


@dataclass(frozen=True)
class Event:
    """One thing a strategy did to the context, measured in truth tokens."""

    kind: str
    tokens_before: int
    tokens_after: int
    messages_touched: int = 0
    summary_tokens: int | None = None
    detail: str = ""


@dataclass(frozen=True)
class Outcome:
    context: Context
    events: tuple[Event, ...] = ()
    fail: str | None = None
    """Set when the session cannot go on (e.g. a circuit breaker); the replay stops and records it."""


def event(
    kind: str,
    before: Context,
    after: Context,
    *,
    touched: int = 0,
    summary_tokens: int | None = None,
    detail: str = "",
) -> Event:
    """An Event measured between two contexts."""
    return Event(kind, before.truth, after.truth, touched, summary_tokens, detail)


MAX_PARAM = 2**53
"""No numeric parameter reaches 2^53 (the same bound as a token count, traces.model.MAX_COUNT)."""


@dataclass(frozen=True)
class Range:
    """The values a numeric parameter may take: ``[lo, hi]``, either end open, whole numbers or any.

    Why: a parameter is a threshold, a count or a share of the window, and a value outside its
    range (``prune_protect=-5``, ``=1e30``, ``limit_fraction=2``) runs silently and yields numbers
    that mean nothing. ``strategies.check_params`` refuses it before any replay, naming the range.
    """

    lo: float
    hi: float
    lo_open: bool = False
    hi_open: bool = False

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int | float) or isinstance(value, bool):
            return False
        above = value > self.lo if self.lo_open else value >= self.lo
        below = value < self.hi if self.hi_open else value <= self.hi
        return above and below

    def __str__(self) -> str:
        def show(x: float) -> str:
            return "2^53" if x == MAX_PARAM else f"{x:g}"

        return f"{'(' if self.lo_open else '['}{show(self.lo)}, {show(self.hi)}{')' if self.hi_open else ']'}"


COUNT = Range(0, MAX_PARAM, hi_open=True)
"""The generic rule for a count, size or threshold in tokens: non-negative, below 2^53."""
POSITIVE = Range(0, MAX_PARAM, lo_open=True, hi_open=True)
"""A divisor or rate (bytes per token): above 0."""
FRACTION = Range(0, 1, lo_open=True)
"""The generic rule for a share of the window: (0, 1] (a trigger at 0% would compact every call)."""
SHARE = Range(0, 1)
"""A share where 0 is meaningful (a similarity threshold, a minimum progress): [0, 1]."""


@dataclass(frozen=True, kw_only=True)
class Strategy:
    """Base class: no-op hooks, the estimator field, and class-level identity.

    Subclasses set ``name`` (the registry name of the family), ``citation`` (agent, file and
    commit the behaviour comes from) and bump ``version`` whenever behaviour changes, so cached
    results retire.
    """

    name: ClassVar[str] = ""
    citation: ClassVar[str] = ""
    version: ClassVar[int] = 1

    ranges: ClassVar[Mapping[str, Range]] = {}
    """The range of each numeric parameter whose bounds the agent documents; the others follow the
    generic rule of ``strategies.check_params`` (finite; a share of the window in (0, 1]; any other
    number in [0, 2^53))."""
    tuning: ClassVar[Mapping[str, tuple[float, ...]]] = {}
    """The values ``compaction-bench tune`` tries for each parameter worth tuning (bench.run.tune), in order,
    each inside its range and the default among them; the strategy says why those bounds beside them."""

    estimator: str = "chars/4"
    """The local token estimate this agent decides with (spec/strategies.md §0)."""

    def on_tool_result(self, ctx: Context, session: Session) -> Outcome | None:
        return None

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        return None

    def on_overflow(self, ctx: Context, session: Session) -> Outcome | None:
        return None

    def project(self, ctx: Context, session: Session) -> Context:
        return ctx

    def params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


HOOKS: tuple[str, ...] = ("on_tool_result", "before_call", "on_overflow", "project")


@dataclass(frozen=True)
class StrategySpec:
    """What a run records to rebuild a strategy: registry name (or module path) and parameters."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        if not self.params:
            return self.name
        return self.name + "@" + ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
