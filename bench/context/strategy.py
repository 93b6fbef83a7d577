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
    trigger_tokens: int | None = None
    """An absolute trigger in tokens, for any strategy whose trigger is a share of the window
    (``claude-code@trigger_tokens=150000``, swept by ``tune`` as ``trigger_tokens=100000|150000``); None
    keeps the share. How it acts: ``absolute_trigger`` below."""
    trigger_share: ClassVar[str] = ""
    """The share-of-the-window parameter ``trigger_tokens`` stands in for; empty: the first of
    ``SHARE_PARAMS`` the strategy has (a float or None by default)."""
    summary_as_text: ClassVar[bool] = False
    """True where the agent writes the conversation into its summary prompt as text (aider's ``# USER``
    blocks, goose's serialized messages in the compaction system prompt, OpenHands' ``<EVENT>`` tags:
    spec/strategies.md §7, §8, §6.4–6.5) rather than sending it as messages: that request holds no tool
    call for the API to match with its result, so a summary request is checked as messages
    (tests/strategies/test_contract.py) only where this is False."""

    def __post_init__(self) -> None:
        arm_trigger_tokens(self)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass's own ``__post_init__`` (its checks) still arms ``trigger_tokens`` after them, so no
        strategy module has to call the base's."""
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("__post_init__")
        if own is not None and not getattr(own, "_arms_trigger", False):
            def post_init(self: Strategy, _own: Any = own) -> None:
                _own(self)
                arm_trigger_tokens(self)

            post_init._arms_trigger = True  # type: ignore[attr-defined]
            post_init.__doc__ = own.__doc__
            cls.__post_init__ = post_init  # type: ignore[method-assign]

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

# -- absolute triggers (``trigger_tokens``) ---------------------------------------------------------------
SHARE_PARAMS: tuple[str, ...] = ("autocompact_pct", "limit_fraction", "trigger_fraction", "background_threshold",
                                 "threshold")
"""The names agents give their share-of-the-window trigger (Claude Code / five-layer, Codex, Cline SDK,
Copilot CLI, Goose / Gemini CLI / BaseAgent), looked for in this order when a strategy names none."""
TOKEN_PARAMS: tuple[str, ...] = ("auto_compact_limit", "trigger")
"""An absolute trigger the agent already has (Codex's ``model_auto_compact_token_limit``, the clear-tool-uses
edit's ``trigger``; also a ``SHARE_PARAMS`` name whose default is a whole number, Amp's ``threshold``):
``trigger_tokens`` sets it, and the agent's own rule combines it with any share (Codex: the smaller)."""
THRESHOLD_METHODS: tuple[tuple[str, str], ...] = (("autocompact_threshold", "session"), ("trigger", "model"))
"""Methods that give a strategy's trigger in tokens, and what they take: with one, the share is solved so
that the trigger lands exactly at ``trigger_tokens`` after the agent's own reserves and buffers."""
BASE_METHODS: tuple[str, ...] = ("usable",)
"""Methods that give the tokens a strategy's share multiplies (BaseAgent: its context limit less the output
reserve); without one (nor a threshold method), the share multiplies the model's context window."""


def _share_param(strategy: Strategy) -> str | None:
    names = {f.name: f.default for f in fields(strategy)}
    if strategy.trigger_share:
        return strategy.trigger_share
    return next((n for n in SHARE_PARAMS if n in names and (names[n] is None or isinstance(names[n], float))), None)


def arm_trigger_tokens(strategy: Strategy) -> None:
    """With ``trigger_tokens`` set, let each hook run as the strategy with its share set for the call's model.

    Why this way: every agent states its trigger its own way (a share of the context window, of the window
    less a reserve, less a buffer after the share), and the window changes with the model, even within a
    session (a switch). So ``trigger_tokens=T`` is not turned into one share at build time: on each call,
    the hooks run on a copy of the strategy whose share parameter puts the trigger at T tokens *for that
    call's model* (computed once per model), everything else the agent does unchanged. The share is solved
    from the strategy's own threshold method when it has one (``THRESHOLD_METHODS``: exact, after its
    buffers), else T / the tokens it multiplies (``BASE_METHODS``, else the context window); it is kept
    in (0, 1]: a T above what the agent can reach compacts at its largest share. A strategy with an
    absolute trigger already (``TOKEN_PARAMS``) gets it set instead, once. A strategy with neither refuses
    ``trigger_tokens`` at build time, naming why. Nothing is wrapped when ``trigger_tokens`` is None."""
    tokens = strategy.trigger_tokens
    if tokens is None:
        return
    if isinstance(tokens, float) and tokens.is_integer():  # 1.5e5 on the command line
        tokens = int(tokens)
        object.__setattr__(strategy, "trigger_tokens", tokens)
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        raise ValueError(f"trigger_tokens must be a whole number of tokens above 0, not {tokens!r}")
    defaults = {f.name: f.default for f in fields(strategy)}
    absolute = next((n for n in TOKEN_PARAMS if n in defaults), None) or next(
        (n for n in SHARE_PARAMS if isinstance(defaults.get(n), int) and not isinstance(defaults[n], bool)), None)
    share = _share_param(strategy)
    if absolute is not None:
        object.__setattr__(strategy, absolute, tokens)
        return
    if share is None:
        raise ValueError(f"trigger_tokens: strategy {type(strategy).__name__} has no share-of-the-window trigger "
                         f"({' / '.join(SHARE_PARAMS)}) to set; set its own thresholds instead")
    object.__setattr__(strategy, "_at_model", {})
    for hook in HOOKS:
        object.__setattr__(strategy, hook, _AtTokens(strategy, share, hook))


@dataclass(frozen=True)
class _AtTokens:
    """One hook of a strategy with ``trigger_tokens``: runs the same hook of the copy set for the call's model."""

    strategy: Strategy
    share: str
    hook: str

    def __call__(self, ctx: Context, session: Session) -> Any:
        cache: dict[Any, Strategy] = self.strategy.__dict__["_at_model"]
        model = session.model
        copy = cache.get(model)
        if copy is None:
            copy = cache[model] = _set_for(self.strategy, self.share, session)
        return getattr(copy, self.hook)(ctx, session)


def _set_for(strategy: Strategy, share: str, session: Session) -> Strategy:
    """The strategy with ``trigger_tokens`` cleared and its share set so the trigger is at that many tokens."""
    from dataclasses import replace

    target = float(strategy.trigger_tokens or 0)
    plain = replace(strategy, trigger_tokens=None)
    method = next(((name, arg) for name, arg in THRESHOLD_METHODS if callable(getattr(plain, name, None))), None)
    if method is not None:  # the trigger is affine in the share: two points solve it
        name, arg = method

        def at(value: float) -> float:
            other = replace(plain, **{share: value})
            return float(getattr(other, name)(session if arg == "session" else session.model))

        hi, lo = 1.0, 0.5
        slope = (at(hi) - at(lo)) / (hi - lo)
        value = hi + (target - at(hi)) / slope if slope > 0 else 1.0
    else:
        base_method = next((getattr(plain, n) for n in BASE_METHODS if callable(getattr(plain, n, None))), None)
        base = float(base_method(session)) if base_method is not None else float(session.model.context_window)
        value = target / base if base > 0 else 1.0
    return replace(plain, **{share: min(1.0, max(value, 1e-6))})


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
