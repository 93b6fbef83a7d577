"""The agent loop, call by call, with a strategy managing the context (DESIGN.md, "Replay").

For each step of the trace: append the step's messages (``on_tool_result`` after each one that
carries tool results) → ``before_call`` → ``project`` gives what is sent → a request over the
model's window is a 413: ``on_overflow`` runs, and if it still does not fit the call is an
**overflow** (billed as if accepted, so ``none`` is the cost of never compacting) → a request the
API would reject (an orphan tool result or call, a reused id, an empty message: bench/replay/validity.py)
is flagged ``invalid`` with an event saying why → the call is recorded with its prompt-cache
split → the recorded answer is appended.

Closing the loop where it can: before a call whose recorded tool calls act on a file the session had
shown and the strategy no longer sends, the agent is made to read it again (a billed extra call whose
messages stay in the context: bench/replay/rereads.py); ``open_loop`` turns this off.

The open-loop twin of a replay that made re-reads (``replay_with_twin``, for ``cost_open_loop``) is the
same replay until its first re-read: the loop's state is forked there (``_Loop.fork``), not replayed again.

Limitation, by construction: otherwise the recorded future does not change after a compaction. A real
agent that lost a fact might have searched again, asked the user or taken another path; a replay
cannot know.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import replace as dc_replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, cast

from bench.context.messages import Context, Meter
from bench.context.session import Session
from bench.context.strategy import Outcome, Strategy
from bench.cost.pricing import ModelProfile, PromptCache, known, on_change, profile, recorded_id
from bench.cost.windows import SessionWindows, session_windows
from bench.replay.provider import ProviderView
from bench.replay.records import EventRecord, SummaryRecord, TaskResult
from bench.replay.references import RecordedIndex, ReferenceCheck
from bench.replay.rereads import Rereads
from bench.replay.validity import EVENT_KIND as INVALID
from bench.replay.validity import RequestCheck, describe
from bench.summarizers import Summarizer, Summary, SummaryRequest
from bench.summarizers.extractive import ExtractiveSummarizer
from bench.tokens.attribution import Attribution
from bench.tokens.counter import TokenCounter
from traces.model import Message, Step, Trace, Usage

if TYPE_CHECKING:
    from _typeshed import IdentityFunction

try:  # read by mypyc when it compiles this module (bench/cli/native.py); a no-op at run time
    from mypy_extensions import mypyc_attr
except ImportError:  # without the dev extra (mypy brings it): nothing is compiled
    def mypyc_attr(*attrs: str, **kwattrs: object) -> IdentityFunction:
        return lambda cls: cls


Observer = Callable[[str, int, Context], list[dict]]
"""Called with (moment, call index, context sent) after each compaction and at the end."""

COMPACTION_KINDS = frozenset({"summarize", "handoff"})
BILLING_VERSION = 3
"""How a replay bills its calls; part of every task key (bench.run.runner.task_key) so a change is never
resumed from stale rows. 2: a summarizer call carries the request's fixed overhead. 3: simulated
re-reads (bench/replay/rereads.py) are billed unless ``open_loop``."""


@dataclass(frozen=True)
class ReplayConfig:
    model: ModelProfile
    summarizer_model: ModelProfile | None = None
    """Model the summarizer is billed as (defaults to the agent's model)."""
    seconds_per_call: float = 10.0
    """Pace of the clock when the trace has no timestamps (drives the cache lifetime)."""
    cache_ttl: str = "5m"
    recorded_models: bool = False
    """Window and price each call as the model the trace recorded for it (``--model recorded``): a
    mid-session switch changes the window and the prices from that call on, and starts a new cache
    (another model reads nothing of the old one). ``model`` stays for calls that record none."""
    open_loop: bool = False
    """Replay the recorded future as it is (``--open-loop``). By default a call that acts on a file
    the session showed and the strategy no longer sends is preceded by a simulated re-read of it
    (bench/replay/rereads.py): an extra call, billed, whose messages stay in the strategy's context."""
    costs_only: bool = False
    """Only the calls' bills are read (the open-loop twin of a task that made re-reads,
    bench.run.runner._open_loop): the re-read proxy and the validity check are skipped, their columns
    (``unseen_refs``, ``invalid``) 0 and no ``invalid`` event written. They were a sixth of the twin's
    CPU, and the twin a third of ``make bench``'s replays, for columns nobody reads."""


def replay(
    trace: Trace,
    strategy: Strategy,
    config: ReplayConfig,
    *,
    counter: TokenCounter,
    summarizer: Summarizer | None = None,
    label: str | None = None,
    observers: tuple[Observer, ...] = (),
) -> TaskResult:
    """``trace`` sent through ``strategy``, call by call, as the agent would have sent it (the loop's
    rules are ``_Loop``'s); ``replay_with_twin`` also gives the task's open-loop twin, forked, not replayed."""
    return _Loop(trace, strategy, config, counter, summarizer, label or strategy.name, observers).run()[0]


def replay_with_twin(
    trace: Trace,
    strategy: Strategy,
    config: ReplayConfig,
    *,
    counter: TokenCounter,
    summarizer: Summarizer | None = None,
    label: str | None = None,
    observers: tuple[Observer, ...] = (),
) -> tuple[TaskResult, TaskResult | None]:
    """``replay``, and the open-loop twin of a replay that made re-reads (bench.run.runner._open_loop).

    Until the first re-read the twin's replay is this one's, call for call (observers only read), so it
    is not paid twice: the loop's whole state is copied there (``_Loop.fork``) and the copy goes on
    without re-reads once this replay has finished. ``twin`` is None when no re-read was made, the replay
    runs open, or its state could not be copied (``_Loop.forkable``: the caller replays the twin in full)."""
    return _Loop(trace, strategy, config, counter, summarizer, label or strategy.name, observers).run(twin=True)


SHARED_TYPES: tuple[type, ...] = (Message, Context, Meter, TokenCounter, ModelProfile, Trace, Step, Attribution,
                                  SessionWindows)
"""What a fork shares instead of copying: immutable values (frozen dataclasses whose parts never change:
"strategies build new messages, they never edit old ones", traces/model.py) and the token counter, a
memo of counts that depend on the text alone. Shared, a message keeps its identity, which the counter,
the prefix lineage (bench/tokens/prefix.py) and the strategies' own memos key on."""


_FORKED = ("trace", "strategy", "counter", "label", "windows", "model", "summary_model", "provider", "meter",
           "cache", "summary_cache", "session", "t0", "ctx", "sent", "clock", "checked", "answered", "windowed",
           "theirs", "steps", "next", "pending", "forkable")
"""The attributes of ``_Loop`` a fork deep-copies (with one memo, in the order ``__init__`` sets them); ``fork``
sets the others (``_SET_BY_FORK``) itself. An attribute added to ``_Loop`` goes in one of the two
(tests/bench/test_twin_fork.py checks it)."""
_SET_BY_FORK = ("config", "observers", "result", "recorded", "references", "rereads", "validity", "twin", "origin")


@contextmanager
def _sharing(types: tuple[type, ...]) -> Iterator[None]:
    """``copy.deepcopy`` returns instances of ``types`` as they are while the block runs (one thread:
    a replay runs in one thread of its process)."""
    table = copy._deepcopy_dispatch  # type: ignore[attr-defined]
    saved = {t: table[t] for t in types if t in table}
    for t in types:
        table[t] = _as_is
    try:
        yield
    finally:
        for t in types:
            if t in saved:
                table[t] = saved[t]
            else:
                del table[t]


def _as_is(x: Any, memo: dict[int, Any]) -> Any:
    return x


# Compiled, this is what lets ``fork`` make an instance without ``__init__`` (``_Loop.__new__``) while a call of
# the class from interpreted code still runs it (``serializable=True``, mypyc 2.4, skips it there).
@mypyc_attr(allow_interpreted_subclasses=True)
class _Loop:
    """One replay's state, so that it can be forked (the open-loop twin, ``replay_with_twin``). The
    methods are the steps of the module docstring; the arithmetic is the same, in the same order.

    Compiled with mypyc (bench/cli/native.py): its methods call each other natively, so replacing one on
    the class (a test's spy) changes nothing; drive ``step`` by hand to stop at a point instead."""

    def __init__(self, trace: Trace, strategy: Strategy, config: ReplayConfig, counter: TokenCounter,
                 summarizer: Summarizer | None, label: str, observers: tuple[Observer, ...]) -> None:
        self.trace, self.strategy, self.config, self.counter = trace, strategy, config, counter
        self.label, self.observers = label, observers
        # --model recorded: each call windowed as the session ran it (bench/cost/windows.py), not the table's
        # standard window; a forced --model keeps that model's own.
        self.windows = session_windows(trace) if config.recorded_models else None
        self.model = self.windows.apply(config.model) if self.windows is not None else config.model
        self.summary_model = config.summarizer_model or self.model
        self.provider = ProviderView(trace, counter)  # overhead and dropped reasoning (bench/replay/provider.py)
        self.meter = Meter(counter, strategy.estimator, self.provider.overhead_at(0), self.provider.ratio)
        self.result = TaskResult(trace.id, label)
        self.cache = PromptCache(self.model, config.cache_ttl)
        self.summary_cache = self.cache if self.summary_model is self.model else \
            PromptCache(self.summary_model, config.cache_ttl)
        self.session = Session(self.model, self.meter, summarizer or cast(Summarizer, ExtractiveSummarizer()),
                               strategy=label)
        self.session.on_summary = self.bill_summary
        self.t0 = _first_timestamp(trace)
        self.ctx = self.meter.context(())
        self.sent = self.ctx
        self.clock = 0.0
        self.recorded: list[Message] = []  # the session as the real agent had it, for the re-read proxy
        self.references: ReferenceCheck | None = ReferenceCheck(RecordedIndex.of(trace))
        self.rereads = None if config.open_loop else Rereads(trace, self.references)
        self.validity: RequestCheck | None = RequestCheck()  # what the API would reject is flagged, never sent silently
        self.checked = not config.costs_only
        self.answered: Message | None = None  # the last recorded answer, not yet in ctx
        self.windowed: dict[tuple[str, int | None], ModelProfile] = {}  # each recorded model's profile, once
        self.theirs = recorded_compaction_messages(trace)
        self.steps = tuple(trace.steps())
        self.next = 0  # the next step to replay
        self.pending: tuple[Context, Message, int, bool] | None = None
        """A fork's first act: the agent call of the step it was forked at (sent, answer, output, overflow)."""
        self.twin: _Loop | None = None
        """The fork made at the first re-read (``replay_with_twin``), run once this replay has ended."""
        self.forkable = True
        """False once a fork failed (a state ``copy.deepcopy`` cannot copy): no twin is returned, and
        bench.run.runner._open_loop replays it from the start, as before forks."""
        self.origin: dict[int, Any] | None = None
        """A fork's copy memo, held: it keeps every object the fork copied alive, so that a memo of the
        copied state keyed on ``id()`` of one of them (the prompt cache's common prefixes) misses in the
        fork, and never meets the id reused by a new object."""

    def bill_summary(self, request: SummaryRequest, summary: Summary) -> None:
        result, meter, session, config = self.result, self.meter, self.session, self.config
        prompt_msg = Message.text_message("user", request.prompt)
        msgs = (*request.messages, prompt_msg)
        if summary.billed:  # a real provider's usage of our own request: billed as it came
            read, write = summary.cache_read_tokens, summary.cache_write_tokens
            uncached, prefix_break = summary.input_tokens, False
        else:
            # The compaction request goes out with the agent's system prompt and tool schemas in
            # front, as a normal turn does (Codex compact.rs: "normal base instructions"; Claude Code
            # sends the conversation plus the compact prompt in one call; Cline condenses in a
            # normal turn: strategies.md §3.3, §4.1, §2.5), so it is billed with the overhead and
            # reads the agent's cached prefix. A strategy whose agent asks with its own short prompt
            # says so with ``summary_overhead = False`` (OpenHands, aider: strategies.md §6.4, §7).
            head = self.provider.head(meter.overhead) if getattr(self.strategy, "summary_overhead", True) else None
            billed = (head, *msgs) if head is not None else msgs
            split = self.summary_cache.request(billed, meter.truth, session.now, stream="summarizer")
            read, write, uncached, prefix_break = split.cache_read, split.cache_write, split.uncached, False
        prompt = read + write + uncached
        # A real provider response is billed as the model that answered it.
        price = profile(summary.model) if summary.billed and summary.model and known(summary.model) \
            else self.summary_model
        result.calls.append(  # a CallRecord's values (bench.replay.records.CallColumns)
            self.trace.id, self.label, session.call_index, "summarizer", len(msgs), prompt,
            sum(meter.estimate(m) for m in request.messages), read, write, uncached,
            summary.output_tokens,
            price.cost(uncached=uncached, cache_read=read, cache_write=write,
                       output=summary.output_tokens, ttl=config.cache_ttl),
            price.cost_without_cache(prompt, summary.output_tokens),
            prefix_break, False, session.now,
        )
        result.summaries.append(
            SummaryRecord(self.trace.id, self.label, session.call_index, summary.output_tokens, summary.text,
                          summary.model, request.max_tokens)
        )

    def apply(self, outcome: Outcome | None, ctx: Context, hook: str) -> Context:
        if outcome is None:
            return ctx
        result, session = self.result, self.session
        for e in outcome.events:
            result.events.append(
                EventRecord(self.trace.id, self.label, session.call_index, hook, e.kind, e.tokens_before,
                            e.tokens_after, ctx.estimate, e.messages_touched, e.summary_tokens, e.detail)
            )
        if outcome.fail is not None and result.failed is None:
            result.failed = f"call {session.call_index}: {outcome.fail}"
        new = outcome.context
        if self.observers and any(e.kind in COMPACTION_KINDS for e in outcome.events):
            for observe in self.observers:
                rows = observe("compaction", session.call_index, new)
                result.probes.extend({"strategy": self.label, **row} for row in rows)
        return new

    def ready(self, ctx: Context, call: int, output: int) -> tuple[Context, Context, bool]:
        """Before a call: the strategy's ``before_call``, the request it sends, and its 413 path when that
        does not fit; (context, sent, still over the window). Once per recorded call, again after a re-read."""
        strategy, session, provider = self.strategy, self.session, self.provider
        ctx = self.apply(strategy.before_call(ctx, session), ctx, "before_call")
        sent = strategy.project(ctx, session)
        if self.model.fits(provider.prompt(sent, call), output):
            return ctx, sent, False
        ctx = self.apply(strategy.on_overflow(ctx, session), ctx, "on_overflow")
        sent = strategy.project(ctx, session)
        return ctx, sent, not self.model.fits(provider.prompt(sent, call), output)

    def send(self, sent: Context, kind: str, output: int, overflow: bool, *, unseen: int = 0, rereads: int = 0,
             reread_tokens: int = 0) -> None:
        """One request of the agent: checked as the API would (``invalid``), split by the prompt cache,
        billed; its usage is what the strategy sees as the previous call's."""
        result, session, model, config, clock = self.result, self.session, self.model, self.config, self.clock
        invalid = self.validity.problems(sent.messages) if self.checked and self.validity is not None else ()
        if invalid:
            result.events.append(EventRecord(self.trace.id, self.label, session.call_index, "send", INVALID,
                                             sent.truth, sent.truth, sent.estimate, len(invalid), None,
                                             describe(invalid)))
        split = self.provider.request(self.cache, sent.messages, sent.meter.overhead, clock, session.call_index)
        result.calls.append(  # a CallRecord's values (bench.replay.records.CallColumns)
            self.trace.id, self.label, session.call_index, kind, len(sent), split.prompt, sent.estimate,
            split.cache_read, split.cache_write, split.uncached, output,
            model.cost(uncached=split.uncached, cache_read=split.cache_read,
                       cache_write=split.cache_write, output=output, ttl=config.cache_ttl),
            model.cost_without_cache(split.prompt, output),
            split.prefix_break, overflow, clock, unseen, len(invalid), rereads, reread_tokens,
            model.id, model.max_input or model.context_window,
        )
        session.last_usage = Usage(
            input_tokens=split.uncached, output_tokens=output,
            cache_read_tokens=split.cache_read, cache_write_tokens=split.cache_write,
        )

    def run(self, *, twin: bool = False) -> tuple[TaskResult, TaskResult | None]:
        """The steps from ``next`` on (a fork first makes the call it was forked before), then the end."""
        if self.pending is not None:
            sent, answer, output, overflow = self.pending
            self.pending = None
            self.answer(sent, answer, output, overflow)
        while self.next < len(self.steps):
            step = self.steps[self.next]
            self.next += 1
            if not self.step(step, twin and self.twin is None and self.forkable):
                break
        if self.answered is not None:
            self.ctx = self.ctx.append(self.answered)
        result, session = self.result, self.session
        for observe in self.observers:
            rows = observe("end", session.call_index, self.strategy.project(self.ctx, session))
            result.probes.extend({"strategy": self.label, **row} for row in rows)
        return result, self.twin.run()[0] if self.twin is not None else None

    def step(self, step: Step, fork: bool) -> bool:
        """One recorded step (``fork``: at its re-read, if it makes one, fork the twin); False when the
        replay ends here."""
        config, session, strategy, result = self.config, self.session, self.strategy, self.result
        session.call_index = step.index
        self.recorded += step.inputs  # the real agent's view keeps its own compaction's messages
        theirs = self.theirs
        if theirs:
            step = dc_replace(step, inputs=tuple(m for m in step.inputs if id(m) not in theirs))
        provider = self.provider
        if provider.overhead_at(step.index) != self.meter.overhead:  # re-measured after a model switch
            self.meter = meter = Meter(self.counter, strategy.estimator, provider.overhead_at(step.index),
                                       provider.ratio)
            self.ctx, session.meter = self.ctx.with_meter(meter), meter
        meter = self.meter
        answer = step.answer
        recorded_model = recorded_id(answer.meta.get("model")) if config.recorded_models and answer else None
        if recorded_model and answer is not None:  # (a recorded model comes from an answer)
            key = (recorded_model, answer.meta.get("context_window"))
            as_recorded = self.windowed.get(key)
            if as_recorded is None:
                as_recorded = self.windowed[key] = self.windows.apply(recorded_profile(*key)) \
                    if self.windows is not None else recorded_profile(*key)
            if as_recorded != self.model:
                self.model = session.model = as_recorded
                self.cache = PromptCache(as_recorded, config.cache_ttl)
        self.clock = _clock(step.inputs, step.answer, self.t0, self.clock, config.seconds_per_call, step.index)
        session.now = self.clock
        ctx = self.ctx
        for run in _runs(step.inputs, self.answered):  # appended a run at a time: one copy, not one a message
            ctx = ctx.append(*run)
            if run[-1].tool_results and run[-1] is not self.answered:  # an answer with results: no hook
                ctx = self.apply(strategy.on_tool_result(ctx, session), ctx, "on_tool_result")
        self.ctx = ctx
        self.answered = None
        if answer is None or result.failed:
            return False
        output = answer.usage.output_tokens if answer.usage and answer.usage.output_tokens else meter.truth(answer)
        self.ctx, sent, overflow = self.ready(ctx, step.index, output)
        self.sent = sent
        if result.failed:
            return False
        rereads = self.rereads
        lost = rereads.lost(self.recorded, sent.messages, answer) if rereads is not None else ()
        if lost and rereads is not None:  # the agent asks for the files it acts on, no longer seen, then acts
            if fork:  # the twin, had it run from the start, would be here too, and send this call as it is
                try:
                    self.twin = self.fork(sent, answer, output, overflow)
                except Exception:  # noqa: BLE001 - a state deepcopy cannot copy: the caller replays the twin in full
                    self.forkable = False
            asked = rereads.insert(lost, step.index, self.counter)
            self.send(sent, "reread", rereads.output_tokens(asked, meter.truth), overflow,
                      rereads=len(asked.parts), reread_tokens=meter.truth(asked.call) + meter.truth(asked.result))
            ctx = self.ctx.append(asked.call, asked.result)
            self.ctx = self.apply(strategy.on_tool_result(ctx, session), ctx, "on_tool_result")
            if result.failed:
                return False
            self.ctx, sent, overflow = self.ready(self.ctx, step.index, output)
            self.sent = sent
            if result.failed:
                return False
        self.answer(sent, answer, output, overflow)
        return True

    def fork(self, sent: Context, answer: Message, output: int, overflow: bool) -> _Loop:
        """A copy of this replay as its open-loop twin would be at this point (no re-read made yet, so the
        same strategy state, context, session, caches and bills), which then sends ``answer``'s call as
        ``sent`` (``pending``) and goes on with ``open_loop`` and ``costs_only``, without observers.

        Deep-copied: the strategy (its own memory and memos), the session (its ``state``, usage, summarizer),
        the prompt caches and the provider view (running sums). Shared: ``SHARED_TYPES``. Left out: the
        results so far (the twin starts with a copy of the call columns and of the lists of frozen records)
        and what the twin does not run (observers, the re-read proxy, the reference and validity checks)."""
        twin = _Loop.__new__(_Loop)  # its attributes are set below, ``_FORKED`` copied and the rest
        memo: dict[int, Any] = {id(self): twin, id(self.steps): self.steps, id(self.theirs): self.theirs}
        with _sharing(SHARED_TYPES):
            state = copy.deepcopy({name: getattr(self, name) for name in _FORKED}, memo)
        for name, value in state.items():
            setattr(twin, name, value)
        # The copied session bills its summaries into the twin: pure Python copies the bound method onto the
        # twin (``memo``), compiled it is a built-in method, which deepcopy keeps as it is.
        twin.session.on_summary = twin.bill_summary
        result = self.result
        calls = result.calls.copy(zeroed=("unseen_refs", "invalid"))  # as ``costs_only`` writes them
        twin.result = TaskResult(result.trace, result.strategy, calls=calls,
                                 events=[e for e in result.events if e.kind != INVALID],
                                 summaries=list(result.summaries))
        twin.config = dc_replace(self.config, open_loop=True, costs_only=True)
        twin.observers, twin.references, twin.rereads, twin.validity = (), None, None, None
        twin.checked = False
        twin.recorded = list(self.recorded)
        twin.pending = (sent, answer, output, overflow)
        twin.twin = None
        twin.origin = memo  # its originals stay alive (see ``origin``)
        return twin

    def answer(self, sent: Context, answer: Message, output: int, overflow: bool) -> None:
        """The recorded answer's call, sent as ``sent``; the answer waits to be appended with the next step."""
        self.send(sent, "agent", output, overflow,
                  unseen=self.references.unseen(self.recorded, sent.messages, answer)
                  if self.checked and self.references is not None else 0)
        self.recorded.append(answer)
        # appended with the next step's first inputs (no hook runs in between); the recorded agent's
        # summary answer (an OpenCode compaction call) is its context, not ours
        self.answered = answer if id(answer) not in self.theirs else None


@lru_cache(maxsize=64)
def recorded_profile(model_id: str, window: int | None = None) -> ModelProfile:
    """A recorded call's model; a window the agent recorded (Codex's model_context_window, the input
    window it compacts against) becomes the input limit."""
    base = profile(model_id)
    if not window or window >= base.context_window or window == base.max_input:
        return base
    return dc_replace(base, max_input=window)


on_change(recorded_profile.cache_clear)  # a --prices change (robustness's 1M window) makes its profiles stale


KEEPS_RECORDED_COMPACTIONS = frozenset({"claude-code"})
"""Agents whose replays still append the recorded compactions' messages. Claude Code: dropping its
recorded summary moves its second and third compactions late on the recorded 2.1.7 session (+10 calls,
the third not reached): the replayed context after the first is 10% under the recorded one (the
re-injected skills, todo list and plan are not modelled yet), and the recorded summary appended was
making up for it. Remove it from here once that is modelled (issue 24, the Claude Code part)."""


def recorded_compaction_messages(trace: Trace) -> frozenset[int]:
    """``id()`` of the messages the recorded agent's own compactions put in its context: the summary
    (``meta["summary"]``, a user message or the summarizer's answer), the request that asked for it and
    the note it resumed with (``meta["compaction"]``: OpenCode's "What did we do so far?" and "Continue if
    you have next steps"). The strategy replayed manages its own context: appended, the recorded agent's
    summary would sit beside the replay's own (or be summarized into it when the replay fires later) and
    drift every size after the first compaction (issue 24). A summary before the trace's first answer
    stays: the file begins with a compaction and the summary is all it holds of what came before.
    Claude Code's preserved-segment copies (``meta["preserved"]``) are left as they are.

    Not yet for the agents in ``KEEPS_RECORDED_COMPACTIONS``."""
    if trace.agent in KEEPS_RECORDED_COMPACTIONS:
        return frozenset()
    first = next((i for i, m in enumerate(trace.messages) if m.role == "assistant"), len(trace.messages))
    return frozenset(id(m) for m in trace.messages[first + 1:]
                     if (m.meta.get("summary") or m.meta.get("compaction")) and not m.meta.get("preserved"))


def _runs(inputs: tuple[Message, ...], answered: Message | None) -> list[tuple[Message, ...]]:
    """The step's messages (after the previous answer, when there is one) cut after each one that
    carries tool results: ``on_tool_result`` runs there, and nothing runs between the others."""
    msgs = (answered, *inputs) if answered is not None else inputs
    if not any(m.tool_results for m in msgs[:-1]):  # the usual step: one run (none: no messages)
        return [msgs] if msgs else []
    runs, start = [], 0
    for i in range(len(msgs)):
        if msgs[i].tool_results:
            runs.append(msgs[start:i + 1])
            start = i + 1
    if start < len(msgs):
        runs.append(msgs[start:])
    return runs


def _first_timestamp(trace: Trace) -> float | None:
    return next((m.timestamp for m in trace.messages if m.timestamp is not None), None)


def _clock(
    inputs: tuple[Message, ...], answer: Message | None, t0: float | None, previous: float, pace: float, index: int
) -> float:
    """Seconds since the start: the step's recorded time when there is one, else a fixed pace."""
    stamps = [m.timestamp for m in (*inputs, answer) if m is not None and m.timestamp is not None]
    if t0 is not None and stamps:
        return max(previous, stamps[-1] - t0)
    return index * pace if t0 is None else previous + pace
