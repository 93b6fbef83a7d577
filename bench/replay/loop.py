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

Limitation, by construction: otherwise the recorded future does not change after a compaction. A real
agent that lost a fact might have searched again, asked the user or taken another path; a replay
cannot know.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import replace as dc_replace
from functools import lru_cache

from bench.context.messages import Context, Meter
from bench.context.session import Session
from bench.context.strategy import Outcome, Strategy
from bench.cost.pricing import ModelProfile, PromptCache, known, profile, recorded_id
from bench.cost.windows import session_windows
from bench.replay.provider import ProviderView
from bench.replay.records import CallRecord, EventRecord, SummaryRecord, TaskResult
from bench.replay.references import RecordedIndex, ReferenceCheck
from bench.replay.rereads import Rereads
from bench.replay.validity import EVENT_KIND as INVALID
from bench.replay.validity import RequestCheck, describe
from bench.summarizers import Summarizer, Summary, SummaryRequest
from bench.summarizers.extractive import ExtractiveSummarizer
from bench.tokens.counter import TokenCounter
from traces.model import Message, Trace, Usage

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
    label = label or strategy.name
    # --model recorded: each call windowed as the session ran it (bench/cost/windows.py), not the table's
    # standard window; a forced --model keeps that model's own.
    windows = session_windows(trace) if config.recorded_models else None
    model = windows.apply(config.model) if windows is not None else config.model
    summary_model = config.summarizer_model or model
    provider = ProviderView(trace, counter)  # overhead and dropped reasoning (bench/replay/provider.py)
    meter = Meter(counter, strategy.estimator, provider.overhead_at(0), provider.ratio)
    result = TaskResult(trace.id, label)
    cache = PromptCache(model, config.cache_ttl)
    summary_cache = cache if summary_model is model else PromptCache(summary_model, config.cache_ttl)
    session = Session(model, meter, summarizer or ExtractiveSummarizer(), strategy=label)
    t0 = _first_timestamp(trace)

    def bill_summary(request: SummaryRequest, summary: Summary) -> None:
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
            head = provider.head(meter.overhead) if getattr(strategy, "summary_overhead", True) else None
            billed = (head, *msgs) if head is not None else msgs
            split = summary_cache.request(billed, meter.truth, session.now, stream="summarizer")
            read, write, uncached, prefix_break = split.cache_read, split.cache_write, split.uncached, False
        prompt = read + write + uncached
        # A real provider response is billed as the model that answered it.
        price = profile(summary.model) if summary.billed and summary.model and known(summary.model) else summary_model
        result.calls.append(
            CallRecord(
                trace.id, label, session.call_index, "summarizer", len(msgs), prompt,
                sum(meter.estimate(m) for m in request.messages), read, write, uncached,
                summary.output_tokens,
                price.cost(uncached=uncached, cache_read=read, cache_write=write,
                           output=summary.output_tokens, ttl=config.cache_ttl),
                price.cost_without_cache(prompt, summary.output_tokens),
                prefix_break, False, session.now,
            )
        )
        result.summaries.append(
            SummaryRecord(trace.id, label, session.call_index, summary.output_tokens, summary.text, summary.model,
                          request.max_tokens)
        )

    session.on_summary = bill_summary

    def apply(outcome: Outcome | None, ctx: Context, hook: str) -> Context:
        if outcome is None:
            return ctx
        for e in outcome.events:
            result.events.append(
                EventRecord(trace.id, label, session.call_index, hook, e.kind, e.tokens_before,
                            e.tokens_after, ctx.estimate, e.messages_touched, e.summary_tokens, e.detail)
            )
        if outcome.fail is not None and result.failed is None:
            result.failed = f"call {session.call_index}: {outcome.fail}"
        new = outcome.context
        if any(e.kind in COMPACTION_KINDS for e in outcome.events):
            for observe in observers:
                rows = observe("compaction", session.call_index, new)
                result.probes.extend({"strategy": label, **row} for row in rows)
        return new

    def ready(ctx: Context, call: int, output: int) -> tuple[Context, Context, bool]:
        """Before a call: the strategy's ``before_call``, the request it sends, and its 413 path when that
        does not fit; (context, sent, still over the window). Once per recorded call, again after a re-read."""
        ctx = apply(strategy.before_call(ctx, session), ctx, "before_call")
        sent = strategy.project(ctx, session)
        if model.fits(provider.prompt(sent, call), output):
            return ctx, sent, False
        ctx = apply(strategy.on_overflow(ctx, session), ctx, "on_overflow")
        sent = strategy.project(ctx, session)
        return ctx, sent, not model.fits(provider.prompt(sent, call), output)

    def send(sent: Context, kind: str, output: int, overflow: bool, *, unseen: int = 0, rereads: int = 0,
             reread_tokens: int = 0) -> None:
        """One request of the agent: checked as the API would (``invalid``), split by the prompt cache,
        billed; its usage is what the strategy sees as the previous call's."""
        invalid = validity.problems(sent.messages) if checked else ()
        if invalid:
            result.events.append(EventRecord(trace.id, label, session.call_index, "send", INVALID, sent.truth,
                                             sent.truth, sent.estimate, len(invalid), None, describe(invalid)))
        split = provider.request(cache, sent.messages, sent.meter.overhead, clock, session.call_index)
        result.calls.append(
            CallRecord(
                trace.id, label, session.call_index, kind, len(sent), split.prompt, sent.estimate,
                split.cache_read, split.cache_write, split.uncached, output,
                model.cost(uncached=split.uncached, cache_read=split.cache_read,
                           cache_write=split.cache_write, output=output, ttl=config.cache_ttl),
                model.cost_without_cache(split.prompt, output),
                split.prefix_break, overflow, clock, unseen, len(invalid), rereads, reread_tokens,
                model.id, model.max_input or model.context_window,
            )
        )
        session.last_usage = Usage(
            input_tokens=split.uncached, output_tokens=output,
            cache_read_tokens=split.cache_read, cache_write_tokens=split.cache_write,
        )

    ctx = meter.context(())
    sent = ctx
    clock = 0.0
    recorded: list[Message] = []  # the session as the real agent had it, for the re-read proxy
    references = ReferenceCheck(RecordedIndex.of(trace))
    rereads = None if config.open_loop else Rereads(trace, references)
    validity = RequestCheck()  # what the API would reject is flagged, never sent silently
    checked = not config.costs_only
    answered: Message | None = None  # the last recorded answer, not yet in ctx
    windowed: dict[tuple[str, int | None], ModelProfile] = {}  # each recorded model's profile, once
    theirs = recorded_compaction_messages(trace)
    for step in trace.steps():
        session.call_index = step.index
        recorded += step.inputs  # the real agent's view keeps its own compaction's messages
        if theirs:
            step = dc_replace(step, inputs=tuple(m for m in step.inputs if id(m) not in theirs))
        if provider.overhead_at(step.index) != meter.overhead:  # re-measured after a model switch
            meter = Meter(counter, strategy.estimator, provider.overhead_at(step.index), provider.ratio)
            ctx, session.meter = ctx.with_meter(meter), meter
        recorded_model = recorded_id(step.answer.meta.get("model")) if config.recorded_models and step.answer else None
        if recorded_model:
            key = (recorded_model, step.answer.meta.get("context_window"))
            as_recorded = windowed.get(key)
            if as_recorded is None:
                as_recorded = windowed[key] = windows.apply(recorded_profile(*key)) if windows is not None \
                    else recorded_profile(*key)
            if as_recorded != model:
                model = session.model = as_recorded
                cache = PromptCache(model, config.cache_ttl)
        clock = _clock(step.inputs, step.answer, t0, clock, config.seconds_per_call, step.index)
        session.now = clock
        for run in _runs(step.inputs, answered):  # appended a run at a time: one copy, not one a message
            ctx = ctx.append(*run)
            if run[-1].tool_results and run[-1] is not answered:  # an answer with results: no hook
                ctx = apply(strategy.on_tool_result(ctx, session), ctx, "on_tool_result")
        answered = None
        if step.answer is None or result.failed:
            break
        answer = step.answer
        output = answer.usage.output_tokens if answer.usage and answer.usage.output_tokens else meter.truth(answer)
        ctx, sent, overflow = ready(ctx, step.index, output)
        if result.failed:
            break
        lost = rereads.lost(recorded, sent.messages, answer) if rereads is not None else ()
        if lost:  # the agent asks for the files it acts on and no longer sees, then acts (bench/replay/rereads.py)
            asked = rereads.insert(lost, step.index, counter)
            send(sent, "reread", rereads.output_tokens(asked, meter.truth), overflow,
                 rereads=len(asked.parts), reread_tokens=meter.truth(asked.call) + meter.truth(asked.result))
            ctx = ctx.append(asked.call, asked.result)
            ctx = apply(strategy.on_tool_result(ctx, session), ctx, "on_tool_result")
            if result.failed:
                break
            ctx, sent, overflow = ready(ctx, step.index, output)
            if result.failed:
                break
        send(sent, "agent", output, overflow,
             unseen=references.unseen(recorded, sent.messages, answer) if checked else 0)
        recorded.append(answer)
        # appended with the next step's first inputs (no hook runs in between); the recorded agent's
        # summary answer (an OpenCode compaction call) is its context, not ours
        answered = answer if id(answer) not in theirs else None
    if answered is not None:
        ctx = ctx.append(answered)
    for observe in observers:
        rows = observe("end", session.call_index, strategy.project(ctx, session))
        result.probes.extend({"strategy": label, **row} for row in rows)
    return result


@lru_cache(maxsize=64)
def recorded_profile(model_id: str, window: int | None = None) -> ModelProfile:
    """A recorded call's model; a window the agent recorded (Codex's model_context_window, the input
    window it compacts against) becomes the input limit."""
    base = profile(model_id)
    if not window or window >= base.context_window or window == base.max_input:
        return base
    return dc_replace(base, max_input=window)


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
