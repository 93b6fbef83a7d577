"""OpenHands condensers: LLM summarizing (V1 SDK and V0), observation masking, recent events,
amortized forgetting.

OpenHands counts *events*. We map one event to one message: an assistant message with tool
calls is the action, the user message with their results is the observation, a human message
is a MessageAction, the system prompt is event 0. V0 renders the condensed view through its
conversation memory, which (a) puts the system prompt and the initial user message back when
they were forgotten and (b) drops an assistant tool call whose result is gone (a pending call
is only emitted once all its results arrive) and any result without its call; ``render``
reproduces both. Masking and recent-events act on the view every step (sent only); the rolling
condensers forget events from the stored history.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from bench.context import (
    SHARE,
    Block,
    Context,
    Message,
    Outcome,
    Strategy,
    Text,
    ToolResult,
    derived,
    event,
    starts_with,
)
from strategies._tools import latest_human_index, quote_latest_human, safe_cut, text_user, waiting_from

if TYPE_CHECKING:
    from bench.context import Session

V0 = "OpenHands/OpenHands@d6fab190 openhands/memory/condenser/impl/*.py, openhands/memory/conversation_memory.py"
V1 = "OpenHands/software-agent-sdk@611629e6 openhands-sdk/openhands/sdk/context/condenser/llm_summarizing_condenser.py"
MASKED = "<MASKED>"
# OpenHands' state-summary template (summarizing_prompt.j2), in our words with its sections.
SUMMARY_PROMPT = (
    "Maintain a state summary of this agent session from the events below, replacing any earlier "
    "summary among them. Sections: USER_CONTEXT, TASK_TRACKING (keep task ids), COMPLETED, PENDING, "
    "CURRENT_STATE; for code tasks also CODE_STATE, TESTS, CHANGES, DEPS, VERSION_CONTROL_STATUS. "
    "Prioritize the user's goals and what is done versus pending; skip irrelevant detail."
)


def render(messages: list[Message] | tuple[Message, ...], original: tuple[Message, ...]) -> tuple[Message, ...]:
    """V0 conversation memory: restore system + initial user message, drop unmatched tool calls."""
    msgs = list(messages)
    first_user = next((m for m in original if m.is_human_turn), None)
    if first_user is not None and not any(m is first_user for m in msgs):
        msgs.insert(1 if msgs and msgs[0].role == "system" else 0, first_user)
    if original and original[0].role == "system" and (not msgs or msgs[0] is not original[0]):
        msgs.insert(0, original[0])
    answered = {r.tool_use_id for m in msgs for r in m.tool_results}
    complete = [m for m in msgs if not m.tool_uses or all(u.id in answered for u in m.tool_uses)]
    calls = {u.id for m in complete for u in m.tool_uses}
    out = []
    for m in complete:
        if any(r.tool_use_id not in calls for r in m.tool_results):
            blocks = tuple(b for b in m.blocks if not (isinstance(b, ToolResult) and b.tool_use_id not in calls))
            if not blocks:
                continue
            m = replace(m, blocks=blocks)
        out.append(m)
    return tuple(out)


def event_count(m: Message) -> int:
    """V1 events in one message: one ActionEvent per tool call (parallel calls are several), one
    ObservationEvent per result, plus a MessageEvent for text beside them; else one event."""
    calls = len(m.tool_uses) + len(m.tool_results)
    if not calls:
        return 1
    return calls + (1 if m.role == "user" and any(isinstance(b, Text) and b.text for b in m.blocks) else 0)


def keep_indices(ctx: Context, indices: set[int], human: int | None = None) -> tuple[Message, ...]:
    """The messages at ``indices`` (plus the latest human turn, see class docs; an empty user
    message is none), rendered. ``human`` is that turn's index when the caller already knows it."""
    human = latest_human_index(ctx.messages, skip_empty=True) if human is None else human
    if human >= 0:
        indices.add(human)
    return render([ctx.messages[i] for i in sorted(indices) if 0 <= i < len(ctx)], ctx.messages)


def waits(ctx: Context) -> bool:
    """Does a call in the view still wait for its result (a log with an assistant message between
    a call and its result)? V0's controller does not step the agent, so its condenser does not
    run, while an action is pending (OpenHands@d6fab190 openhands/controller/agent_controller.py
    ``_step``, L880-888): the rolling V0 condensers wait for the result, as ``render`` would drop
    the pending call from the stored view and the result would come back without it."""
    return waiting_from(ctx.messages) < len(ctx)


def around_waiting(ctx: Context, condense: Callable[[Context], Outcome | None]) -> Outcome | None:
    """``condense`` on what precedes the calls still waiting for their results, those put back
    after it as they are: a condensation request (an overflow) that comes while they wait."""
    w = waiting_from(ctx.messages)
    if w >= len(ctx):
        return condense(ctx)
    done = condense(ctx.replace(ctx.messages[:w])) if w > 1 else None
    if done is None:
        return None
    after = ctx.replace((*done.context.messages, *ctx.messages[w:]))
    return Outcome(after, tuple(replace(e, tokens_before=ctx.truth, tokens_after=after.truth,
                                        detail=f"{e.detail}; calls in flight kept") for e in done.events))


@dataclass(frozen=True, kw_only=True)
class LLMSummarizing(Strategy):
    """OpenHands ``LLMSummarizingCondenser``; ``generation="v1"`` (SDK, default) or ``"v0"``.

    Sources: V1 and V0 (spec/strategies.md §6.4, §6.5). V1 defaults: max_size 240 events,
    keep_first 2, max_tokens None (the agent LLM's effective max input: the model's max_input,
    else its window), minimum_progress 0.1. Reasons: EVENTS (len > max_size, keep suffix
    max_size//2 − keep_first − 1), TOKENS (keep the longest suffix whose removal frees
    total − limit//2), REQUEST (on a 413: len//2 − keep_first − 1); the smallest suffix wins.
    Start and end of the forgotten range snap forward to the next index that splits no tool
    call from its result; fewer than minimum_progress × len forgotten → nothing. The summary is
    a user message at the start offset. A hard requirement that finds nothing to forget does a
    hard context reset: everything after the system prompt into one summary.
    V1 counts events, not messages: one per tool call and one per result (a message with parallel
    calls is several events); keep_first and the kept suffix are event counts, a message the cut
    splits is forgotten whole (version 2).
    V0 (``openhands:v0``: server pipeline keep_first 4, max_size 120): EVENTS and REQUEST only,
    head + summary + the last max_size//2 − keep_first − 1 events (on a condensation request
    too: V0 keeps ``max_size // 2``, not half the current view; version 2), the previous summary
    fed to the summarizer as context, unmatched calls dropped. Not modelled: V1 tool-loop boundaries
    (thinking across a loop), V0 max_event_length truncation of the summarizer's input.
    Version 4: the summary quotes the latest request that says something (an empty user message
    after it is none: ``latest_human_text``); V0 does not condense while a call waits for its
    result (``waits``; version 3 stored a view without the call, and its result came back alone),
    and a condensation request meanwhile condenses only what precedes the waiting calls.
    """

    name = "openhands"
    citation = V1
    version = 4
    summary_overhead = False
    """The condenser's request is one user message (instructions, the previous summary, the forgotten events)
    with no agent system prompt or tools (strategies.md §6.4-6.5): billed without the fixed overhead (version 3)."""

    ranges = {"minimum_progress": SHARE}
    """The share of events a condensation must forget (0: any)."""

    estimator: str = "truth"
    generation: str = "v1"
    max_size: int = 240
    keep_first: int = 2
    max_tokens: int | None = None
    minimum_progress: float = 0.1
    summary_max_tokens: int = 8_192

    def __post_init__(self) -> None:
        if self.max_size // 2 - self.keep_first - 1 <= 0:
            raise ValueError("keep_first must be less than max_size // 2 to leave room for condensation")

    def _limit(self, session: Session) -> int | None:
        model = session.model.max_input or session.model.context_window
        return model if self.max_tokens is None else min(self.max_tokens, model)

    def _suffix(self, ctx: Context, reasons: set[str], limit: int | None, n: int) -> int:
        """How many events (not messages) to keep at the end; ``n`` is the view's event count."""
        suffixes = []
        if "request" in reasons:
            suffixes.append(n // 2 - self.keep_first - 1)
        if "events" in reasons:
            suffixes.append(self.max_size // 2 - self.keep_first - 1)
        if "tokens" in reasons and limit is not None:
            events = ctx.messages[self.keep_first:]
            reduce, freed, prefix = ctx.estimate - limit // 2, 0, len(events)
            for i, m in enumerate(events):
                freed += ctx.est(m)
                if freed > reduce:
                    prefix = i + 1
                    break
            suffixes.append(sum(event_count(m) for m in events[prefix:]) if reduce > 0 else n)
        return min(suffixes)

    def _condense(self, ctx: Context, session: Session, reasons: set[str]) -> Outcome | None:
        msgs, n = ctx.messages, len(ctx)
        if self.generation == "v0":
            tail = self.max_size // 2 - self.keep_first - 1  # a condensation request too: max_size // 2
            if tail <= 0:
                return None
            start, end = self.keep_first, n - tail
            previous = msgs[start] if start < n and msgs[start].meta.get("summary") else None
            forgotten = [m for m in msgs[start:end] if not m.meta.get("summary")]
            inputs = (previous, *forgotten) if previous is not None else tuple(forgotten)
        else:
            counts = [event_count(m) for m in msgs]
            total = sum(counts)
            start, seen = 0, 0
            while start < n and seen < self.keep_first:  # the first keep_first events
                seen += counts[start]
                start += 1
            start = safe_cut(msgs, start)
            keep, kept, end = self._suffix(ctx, reasons, self._limit(session), total), 0, n
            while end > 0 and kept + counts[end - 1] <= keep:  # a message split by the cut is forgotten
                kept += counts[end - 1]
                end -= 1
            end = safe_cut(msgs, max(end, start))
            forgotten = inputs = msgs[start:end]
            if not forgotten or sum(counts[start:end]) < total * self.minimum_progress:
                return None
        if not forgotten:
            return None
        summary = session.summarize(inputs, prompt=SUMMARY_PROMPT, max_tokens=self.summary_max_tokens)
        text = quote_latest_human(summary.text, msgs, (*msgs[:start], *msgs[end:]))
        kept = (*msgs[:start], text_user(text, summary=True), *msgs[end:])
        after = ctx.replace(render(kept, msgs) if self.generation == "v0" else kept)
        detail = f"{'/'.join(sorted(reasons))}: events [{start}:{end}) -> summary at offset {start}"
        return Outcome(after, (event("summarize", ctx, after, touched=end - start,
                                     summary_tokens=summary.output_tokens, detail=detail),))

    def _hard_reset(self, ctx: Context, session: Session) -> Outcome | None:
        head = ctx.messages[:1] if ctx.system else ()
        rest = ctx.messages[len(head):]
        if not rest:
            return None
        summary = session.summarize(rest, prompt=SUMMARY_PROMPT, max_tokens=self.summary_max_tokens)
        after = ctx.replace((*head, text_user(quote_latest_human(summary.text, ctx.messages, head), summary=True)))
        return Outcome(after, (event("summarize", ctx, after, touched=len(rest), summary_tokens=summary.output_tokens,
                                     detail="hard context reset: the whole view into one summary"),))

    def _reasons(self, ctx: Context, session: Session) -> set[str]:
        if self.generation == "v0" or len(ctx) > self.max_size:
            over = len(ctx) > self.max_size
        else:  # V1 counts events
            over = _events(ctx.messages, session.state) > self.max_size
        reasons = {"events"} if over else set()
        limit = self._limit(session)
        if self.generation == "v1" and limit is not None and ctx.estimate > limit:
            reasons.add("tokens")
        return reasons

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        reasons = self._reasons(ctx, session)
        if not reasons or (self.generation == "v0" and waits(ctx)):
            return None
        outcome = self._condense(ctx, session, reasons)
        if outcome is None and "tokens" in reasons:
            return self._hard_reset(ctx, session)
        return outcome

    def on_overflow(self, ctx: Context, session: Session) -> Outcome | None:
        if self.generation == "v0":
            return around_waiting(ctx, lambda c: self._condense(c, session, self._reasons(c, session) | {"request"}))
        outcome = self._condense(ctx, session, self._reasons(ctx, session) | {"request"})
        return outcome if outcome is not None else self._hard_reset(ctx, session)


def _events(messages: tuple[Message, ...], state: dict) -> int:
    """The ``event_count`` of ``messages``, moved by the messages appended since the last call when
    they extend the view it last counted (in ``state``); counted afresh after a condensation.
    Counting the whole view every call was a pass over up to max_size messages per call."""
    known: tuple[tuple[Message, ...], int] | None = state.get("events")
    if known is not None and starts_with(messages, known[0]):
        n = known[1] + sum(map(event_count, messages[len(known[0]):]))
    else:
        n = sum(map(event_count, messages))
    state["events"] = (messages, n)
    return n


@dataclass(frozen=True, kw_only=True)
class _ViewCondenser(Strategy):
    """A V0 condenser that rebuilds the view every step: sent only, the stored history is whole."""

    estimator: str = "truth"
    kind = "drop"

    def view(self, ctx: Context, session: Session) -> tuple[Message, ...] | None:
        raise NotImplementedError

    def _sent(self, ctx: Context, session: Session) -> Context:
        cached = session.state.get("projection")
        if cached is not None and cached[0] is ctx.messages:
            return cached[1]
        msgs = self.view(ctx, session)
        sent = ctx if msgs is None else ctx.replace(msgs)
        session.state["projection"] = (ctx.messages, sent)
        return sent

    def touched(self, ctx: Context, sent: Context, session: Session) -> int:
        """Stored messages the view does not send as they are."""
        stored = {id(m) for m in ctx.messages}  # identity, in one pass (not a scan per message)
        return len(ctx) - sum(1 for m in sent.messages if id(m) in stored)

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        sent = self._sent(ctx, session)
        if sent is ctx:
            return None
        touched = self.touched(ctx, sent, session)
        return Outcome(ctx, (event(self.kind, ctx, sent, touched=touched, detail="sent view, rebuilt every step"),))

    def project(self, ctx: Context, session: Session) -> Context:
        return self._sent(ctx, session)


@dataclass(frozen=True, kw_only=True)
class ObservationMasking(_ViewCondenser):
    """V0 ``ObservationMaskingCondenser``: observations older than the window become "<MASKED>".

    Source: V0 ``observation_masking_condenser.py``. attention_window: 100 in the config
    (default here), 5 in the constructor. An observation at position i < len(view) − window
    becomes an AgentCondensationObservation("<MASKED>"), rendered as a user message; its
    action then never completes, so conversation memory drops the assistant tool call too.
    """

    name = "openhands:masking"
    citation = V0 + " ObservationMaskingCondenser"
    kind = "mask"

    attention_window: int = 100

    def _masked(self, m: Message, session: Session) -> Message:
        """The placeholder for observation ``m``: one object per message, across calls."""
        memo: dict[int, tuple[Message, Message]] = session.state.setdefault("masked", {})
        cached = memo.get(id(m))
        if cached is None or cached[0] is not m:
            others = tuple(b for b in m.blocks if not isinstance(b, ToolResult))
            cached = memo[id(m)] = (m, Message("user", (Text(MASKED), *others), meta={"masked": True}))
        return cached[1]

    def view(self, ctx: Context, session: Session) -> tuple[Message, ...] | None:
        """The from-scratch definition (kept for the cases ``_MaskView`` leaves to it)."""
        cutoff = len(ctx) - self.attention_window
        if not any(m.tool_results for m in ctx.messages[:max(cutoff, 0)]):
            return None
        out = [self._masked(m, session) if i < cutoff and m.tool_results else m for i, m in enumerate(ctx.messages)]
        return render(out, ctx.messages)

    def _sent(self, ctx: Context, session: Session) -> Context:
        """Incremental while the stored history only grows (it always does here): the view of the
        previous call is updated for the appended messages and the observations that left the window
        (``_MaskView``); anything else is rebuilt from scratch by ``view``, with the same result."""
        cached = session.state.get("projection")
        if cached is not None and cached[0] is ctx.messages:
            return cached[1]
        state: _MaskView | None = session.state.get("mask_view")
        if state is None or not state.follows(ctx):
            state = _MaskView(ctx)
        if state.advance(ctx, self.attention_window, lambda m: self._masked(m, session)):
            sent = state.sent
        else:  # the first human turn or the system prompt is itself masked: render re-inserts it
            state = None
            msgs = self.view(ctx, session)
            sent = ctx if msgs is None else ctx.replace(msgs)
        session.state["mask_view"] = state
        session.state["projection"] = (ctx.messages, sent)
        return sent

    def touched(self, ctx: Context, sent: Context, session: Session) -> int:
        state: _MaskView | None = session.state.get("mask_view")
        if state is None or state.messages is not ctx.messages or state.sent is not sent:
            return super().touched(ctx, sent, session)
        return len(ctx) - state.kept


class _MaskView:
    """``ObservationMasking``'s view, kept between calls (in ``session.state``) and moved by what
    changed: the appended messages and the observations that left the attention window.

    ``render`` depends on the whole view only through two id multisets: the results sent
    (``answered``: a call whose results are all there is complete) and the calls of complete
    messages (``calls``: a result without one is stripped). Both are kept as counts; when an id's
    count reaches or leaves zero, only the messages holding that id are looked at again.
    """

    def __init__(self, ctx: Context) -> None:
        self.messages: tuple[Message, ...] = ()
        self.meter = ctx.meter
        self.cutoff = 0
        self.any_masked = False
        self.first_human = -1
        self.pre: list[Message] = []
        """Per stored position: the message after masking (itself, or its placeholder)."""
        self.slots: list[Message | None] = []
        """Per stored position: what is sent for it (None: dropped by ``render``)."""
        self.complete: list[bool] = []
        self.contrib: list[tuple[str, ...]] = []
        """Per position: the call ids it adds to ``calls`` (its uses when complete)."""
        self.answered: dict[str, int] = {}
        self.calls: dict[str, int] = {}
        self.uses_at: dict[str, list[int]] = {}
        self.results_at: dict[str, list[int]] = {}
        self.cuts: dict[int, tuple[Message, tuple[Block, ...], Message]] = {}
        """Position → (message, its blocks left, the message cut to them): results without a call stripped."""
        self.kept = 0
        """Positions sent as the stored message itself (for the event's ``touched``)."""
        self.sending = 0
        """Slots that are not None (the length of the view made from them)."""
        self.estimate = 0
        self.truth = 0
        """Totals of the messages sent (no overhead), moved by each slot that changes."""
        self.sent = ctx.replace(())
        self.from_slots = False
        """Whether ``sent`` was made from the slots (so its head can be told from them)."""

    def follows(self, ctx: Context) -> bool:
        """Is ``ctx`` the history this view was made from, with messages appended, same meter?"""
        old, new = self.messages, ctx.messages
        return ctx.meter is self.meter and starts_with(new, old)

    def advance(self, ctx: Context, window: int, mask: Callable[[Message], Message]) -> bool:
        """Bring the view up to ``ctx``; False when render's re-insertions would apply (left to ``view``)."""
        msgs = ctx.messages
        n_old, n = len(self.messages), len(msgs)
        cutoff = max(self.cutoff, n - window)
        if self.first_human < 0:
            self.first_human = next((i for i in range(n_old, n) if msgs[i].is_human_turn), -1)
        fh = self.first_human
        if (fh >= 0 and fh < cutoff and msgs[fh].tool_results) or (
                n and msgs[0].role == "system" and msgs[0].tool_results and cutoff > 0):
            return False
        flip_answered: set[str] = set()
        dirty: set[int] = set(range(n_old, n))
        for k in range(n_old, n):
            m = msgs[k]
            self.pre.append(m)
            self.slots.append(None)
            self.complete.append(False)
            self.contrib.append(())
            for u in m.tool_uses:
                self.uses_at.setdefault(u.id, []).append(k)
            for r in m.tool_results:
                self.results_at.setdefault(r.tool_use_id, []).append(k)
                if _bump(self.answered, r.tool_use_id, 1):
                    flip_answered.add(r.tool_use_id)
        for k in range(max(self.cutoff, 0), cutoff):
            m = msgs[k]
            if not m.tool_results:
                continue
            self.any_masked = True
            placeholder = self.pre[k] = mask(m)
            for r in m.tool_results:
                if _bump(self.answered, r.tool_use_id, -1):
                    flip_answered.add(r.tool_use_id)
            for u in placeholder.tool_uses:  # a placeholder keeps the message's other blocks
                self.uses_at.setdefault(u.id, []).append(k)
            dirty.add(k)
        self.cutoff = cutoff
        for i in flip_answered:
            dirty.update(self.uses_at.get(i, ()))
        flip_calls: set[str] = set()
        for k in dirty:
            m = self.pre[k]
            answered = self.answered
            complete = not m.tool_uses or all(answered.get(u.id, 0) > 0 for u in m.tool_uses)
            contrib = tuple(u.id for u in m.tool_uses) if complete else ()
            self.complete[k] = complete
            if contrib != self.contrib[k]:
                for i in self.contrib[k]:
                    if _bump(self.calls, i, -1):
                        flip_calls.add(i)
                for i in contrib:
                    if _bump(self.calls, i, 1):
                        flip_calls.add(i)
                self.contrib[k] = contrib
        for i in flip_calls:
            dirty.update(self.results_at.get(i, ()))
        for k in dirty:
            self._settle(k, msgs[k])
        self.messages = msgs
        if not self.any_masked:
            self.sent = ctx
        else:  # totals by difference over the slots that changed, not over a shifted tuple
            meter, before = self.meter, self.sent.messages
            if self.from_slots:  # the slots before the first one settled again are sent as before:
                d = min(dirty, default=len(self.slots))  # their part of ``before`` is reused, not refiltered
                after = tuple(filter(None, self.slots[d:]))
                same = self.sending - len(after)  # the slots sent before d
                sent = before[:same] + after
                derived(sent, before, same)
            else:
                sent = tuple(filter(None, self.slots))
            self.sent = Context(sent, self.estimate, meter.overhead + self.truth, meter)
            self.from_slots = True
        return True

    def _settle(self, k: int, stored: Message) -> None:
        """Position ``k``'s sent message from its masked form, ``complete`` and ``calls``."""
        before = self.slots[k]
        m = self.pre[k] if self.complete[k] else None
        if m is not None and any(self.calls.get(r.tool_use_id, 0) <= 0 for r in m.tool_results):
            calls = self.calls
            blocks = tuple(b for b in m.blocks
                           if not (isinstance(b, ToolResult) and calls.get(b.tool_use_id, 0) <= 0))
            cut = self.cuts.get(k)
            if not blocks:
                m = None
            elif cut is not None and cut[0] is m and cut[1] == blocks:
                m = cut[2]  # the same cut of the same message as before: the same object
            else:
                cut = self.cuts[k] = (m, blocks, replace(m, blocks=blocks))
                m = cut[2]
        self.kept += (m is stored) - (before is stored)
        self.sending += (m is not None) - (before is not None)
        if m is not before:
            meter = self.meter
            if before is not None:
                self.estimate -= meter.estimate(before)
                self.truth -= meter.truth(before)
            if m is not None:
                self.estimate += meter.estimate(m)
                self.truth += meter.truth(m)
        self.slots[k] = m


def _bump(counts: dict[str, int], key: str, by: int) -> bool:
    """Add ``by`` to ``counts[key]``; True when the count went from zero to positive or back."""
    was = counts.get(key, 0)
    now = counts[key] = was + by
    return (was > 0) != (now > 0)


@dataclass(frozen=True, kw_only=True)
class RecentEvents(_ViewCondenser):
    """V0 ``RecentEventsCondenser``: view = the first keep_first events + the newest ones.

    Source: V0 ``recent_events_condenser.py``; config defaults keep_first 1, max_events 100
    (constructor 10). Applied every step. Deviations: a view already within max_events is left
    as is (the code's slices overlap there and would repeat the head), and the latest human turn
    is kept (harness contract). Version 2: an empty user message after that turn is none (a log
    can hold one; no agent sends it), which version 1 kept instead of the real request.
    """

    name = "openhands:recent"
    citation = V0 + " RecentEventsCondenser"
    version = 2

    keep_first: int = 1
    max_events: int = 100

    def view(self, ctx: Context, session: Session) -> tuple[Message, ...] | None:
        """The from-scratch definition (kept for the cases ``_RecentView`` leaves to it)."""
        n = len(ctx)
        if n <= self.max_events:
            return None
        tail = max(0, self.max_events - self.keep_first)
        indices = {*range(self.keep_first), *range(n - tail if tail else n, n)}
        return keep_indices(ctx, indices, _latest_human(ctx.messages, session.state))

    def _sent(self, ctx: Context, session: Session) -> Context:
        """Incremental once the view is active (the stored history only grows here): the previous
        call's view moved by the messages entering and leaving it (``_RecentView``); a view without
        a head (``keep_first=0``) or a tail, or anything unexpected, is rebuilt by ``view``."""
        st = session.state
        cached = st.get("projection")
        if cached is not None and cached[0] is ctx.messages:
            return cached[1]
        tail = max(0, self.max_events - self.keep_first)
        if len(ctx) <= self.max_events or self.keep_first < 1 or not tail:
            return super()._sent(ctx, session)
        state: _RecentView | None = st.get("recent_view")
        if state is None or not state.follows(ctx) or not state.advance(ctx):
            state = _RecentView(ctx, self.keep_first, tail)
            state.advance(ctx)
        st["recent_view"] = state
        st["projection"] = (ctx.messages, state.sent)
        return state.sent

    def touched(self, ctx: Context, sent: Context, session: Session) -> int:
        state: _RecentView | None = session.state.get("recent_view")
        if state is None or state.messages is not ctx.messages or state.sent is not sent:
            return super().touched(ctx, sent, session)
        return len(ctx) - state.kept


FIRST_USER = -1
"""``_RecentView``'s key for the first human turn when ``render`` puts it back (it is not kept)."""


class _RecentView:
    """``RecentEvents``' view (``keep_first`` ≥ 1 and a tail), kept between calls in
    ``session.state`` and moved by what changed: the messages entering the tail window and leaving
    it, the latest human turn when it moves, and the first human turn when ``render`` must put it back.

    ``render`` depends on the whole view only through two id multisets, the results sent
    (``answered``) and the calls of complete messages (``calls``), kept as counts; when an id's count
    reaches or leaves zero, only the members holding that id are looked at again (as ``_MaskView``).
    Members are keyed by stored position (``FIRST_USER`` for the put-back first human turn).
    """

    def __init__(self, ctx: Context, keep_first: int, tail: int) -> None:
        self.messages: tuple[Message, ...] = ()
        self.meter = ctx.meter
        self.keep_first, self.tail = keep_first, tail
        self.first_user: Message | None = None
        self.scanned = 0
        """Positions looked at for the first human turn while there was none."""
        self.latest_human = -1
        """``latest_human_index`` of the history, an empty user message skipped (found among the appended messages)."""
        self.start = 0
        """Where the tail window began (it ends at ``len(messages)``)."""
        self.human = -1
        """The latest human turn's position when it is a member apart from the head and the window."""
        self.members: dict[int, Message] = {}
        self.first_user_members = 0
        """Members that are the first human turn's message (so ``render`` need not put it back)."""
        self.complete: dict[int, bool] = {}
        self.contrib: dict[int, tuple[str, ...]] = {}
        self.slots: dict[int, Message | None] = {}
        """Per member: what is sent for it (None: dropped by ``render``)."""
        self.window: list[Message | None] = []
        """Per stored position: its slot while in the window (else anything), sliced into the view."""
        self.answered: dict[str, int] = {}
        self.calls: dict[str, int] = {}
        self.uses_at: dict[str, set[int]] = {}
        self.results_at: dict[str, set[int]] = {}
        self.cuts: dict[int, tuple[Message, tuple[Block, ...], Message]] = {}
        self.kept = 0
        """Members sent as the stored message itself (for the event's ``touched``)."""
        self.estimate = 0
        self.truth = 0
        self.sent = ctx

    def follows(self, ctx: Context) -> bool:
        old, new = self.messages, ctx.messages
        return ctx.meter is self.meter and starts_with(new, old)

    def _is_member(self, k: int, start: int, n: int, human: int) -> bool:
        return k < self.keep_first or k == human or start <= k < n

    def advance(self, ctx: Context) -> bool:
        """Bring the view up to ``ctx``; False when the first human turn appeared in a view already
        made (then the caller starts a new one)."""
        msgs = ctx.messages
        n, n_old = len(msgs), len(self.messages)
        new_human = latest_human_index(msgs[n_old:], skip_empty=True)
        latest_human = self.latest_human = n_old + new_human if new_human >= 0 else self.latest_human
        if self.first_user is None:
            found = next((k for k in range(self.scanned, n) if msgs[k].is_human_turn), -1)
            self.scanned = n
            if found >= 0:
                if self.members:
                    return False
                self.first_user = msgs[found]
        start, kf = n - self.tail, self.keep_first
        human = latest_human if latest_human >= kf and not start <= latest_human < n else -1
        leaving = [k for k in range(self.start, min(n_old, start)) if not self._is_member(k, start, n, human)]
        if self.human >= 0 and not self._is_member(self.human, start, n, human):
            leaving.append(self.human)
        entering = [k for k in (*range(min(kf, n)), *((human,) if human >= 0 else ()), *range(max(start, n_old), n))
                    if k not in self.members]
        self.window.extend([None] * (n - len(self.window)))
        self.messages, self.start, self.human = msgs, start, human
        flip_answered: set[str] = set()
        flip_calls: set[str] = set()
        for k in leaving:
            self._leave(k, flip_answered, flip_calls)
        for k in entering:
            self._enter(k, msgs[k], flip_answered)
        needs_first_user = self.first_user is not None and not self.first_user_members
        if needs_first_user and FIRST_USER not in self.members:
            entering.append(FIRST_USER)
            self._enter(FIRST_USER, self.first_user, flip_answered)  # type: ignore[arg-type]
        elif not needs_first_user and FIRST_USER in self.members:
            self._leave(FIRST_USER, flip_answered, flip_calls)
        dirty = set(entering)
        for i in flip_answered:
            dirty.update(self.uses_at.get(i, ()))
        for k in dirty:
            m = self.members[k]
            complete = not m.tool_uses or all(self.answered.get(u.id, 0) > 0 for u in m.tool_uses)
            contrib = tuple(u.id for u in m.tool_uses) if complete else ()
            self.complete[k] = complete
            if contrib != self.contrib.get(k, ()):
                for i in self.contrib.get(k, ()):
                    if _bump(self.calls, i, -1):
                        flip_calls.add(i)
                for i in contrib:
                    if _bump(self.calls, i, 1):
                        flip_calls.add(i)
            self.contrib[k] = contrib
        for i in flip_calls:
            dirty.update(self.results_at.get(i, ()))
        for k in dirty:
            self._settle(k)
        self._send(ctx)
        return True

    def _enter(self, k: int, m: Message, flip_answered: set[str]) -> None:
        self.members[k] = m
        self.slots[k] = None
        self.contrib[k] = ()
        self.first_user_members += m is self.first_user and k != FIRST_USER
        for u in m.tool_uses:
            self.uses_at.setdefault(u.id, set()).add(k)
        for r in m.tool_results:
            self.results_at.setdefault(r.tool_use_id, set()).add(k)
            if _bump(self.answered, r.tool_use_id, 1):
                flip_answered.add(r.tool_use_id)

    def _leave(self, k: int, flip_answered: set[str], flip_calls: set[str]) -> None:
        m = self.members.pop(k)
        self.first_user_members -= m is self.first_user and k != FIRST_USER
        for u in m.tool_uses:
            self.uses_at[u.id].discard(k)
        for r in m.tool_results:
            self.results_at[r.tool_use_id].discard(k)
            if _bump(self.answered, r.tool_use_id, -1):
                flip_answered.add(r.tool_use_id)
        for i in self.contrib.pop(k):
            if _bump(self.calls, i, -1):
                flip_calls.add(i)
        self.complete.pop(k)
        self._slot(k, m, self.slots.pop(k), None)

    def _settle(self, k: int) -> None:
        """Member ``k``'s sent message from ``complete`` and ``calls`` (``render``'s last loop)."""
        stored = self.members[k]
        m: Message | None = stored if self.complete[k] else None
        if m is not None and any(self.calls.get(r.tool_use_id, 0) <= 0 for r in m.tool_results):
            calls = self.calls
            blocks = tuple(b for b in m.blocks if not (isinstance(b, ToolResult) and calls.get(b.tool_use_id, 0) <= 0))
            cut = self.cuts.get(k)
            if not blocks:
                m = None
            elif cut is not None and cut[0] is m and cut[1] == blocks:
                m = cut[2]
            else:
                cut = self.cuts[k] = (m, blocks, replace(m, blocks=blocks))
                m = cut[2]
        self._slot(k, stored, self.slots[k], m)
        self.slots[k] = m

    def _slot(self, k: int, stored: Message, before: Message | None, after: Message | None) -> None:
        """Move the totals and ``kept`` by a member's slot changing from ``before`` to ``after``."""
        if k >= 0:
            self.window[k] = after
        if before is after:
            return
        self.kept += (after is stored) - (before is stored)
        meter = self.meter
        if before is not None:
            self.estimate -= meter.estimate(before)
            self.truth -= meter.truth(before)
        if after is not None:
            self.estimate += meter.estimate(after)
            self.truth += meter.truth(after)

    def _send(self, ctx: Context) -> None:
        """The view in ``render``'s order: the first human turn put back after the system prompt (or
        first), then the members by position."""
        slots, kf = self.slots, self.keep_first
        head = [slots[k] for k in range(min(kf, len(ctx)))]
        if FIRST_USER in slots:
            head.insert(1 if self.messages[0].role == "system" else 0, slots[FIRST_USER])
        if self.human >= 0:
            head.append(slots[self.human])
        msgs = tuple(filter(None, [*head, *self.window[self.start:len(ctx)]]))
        self.sent = Context(msgs, self.estimate, self.meter.overhead + self.truth, self.meter)


def _latest_human(messages: tuple[Message, ...], state: dict) -> int:
    """``latest_human_index(messages, skip_empty=True)``, walking back only over the messages appended since the last
    call when they extend the history it last saw (a sent-only view never changes the stored one)."""
    known: tuple[tuple[Message, ...], int] | None = state.get("latest_human")
    if known is not None and starts_with(messages, known[0]):
        new = latest_human_index(messages[len(known[0]):], skip_empty=True)
        human = len(known[0]) + new if new >= 0 else known[1]
    else:
        human = latest_human_index(messages, skip_empty=True)
    state["latest_human"] = (messages, human)
    return human


@dataclass(frozen=True, kw_only=True)
class AmortizedForgetting(Strategy):
    """V0 ``AmortizedForgettingCondenser``: past max_size, forget down to half, no summary.

    Source: V0 ``amortized_forgetting_condenser.py``; config max_size 100, keep_first 1
    (constructor 0). When len > max_size, or on a condensation request (V0's controller adds one
    when the LLM call overflows, ``enable_history_truncation`` being on by default): keep
    view[:keep_first] + the last max_size//2 − keep_first events and forget the rest (one id
    range), if that forgets anything; rolling, stored. The latest human turn is kept (harness
    contract). Version 2: an overflow is such a request (version 1 ignored it). Version 3: an
    empty user message is not that latest turn (version 2 kept it instead of the real request),
    and nothing is forgotten while a call waits for its result (``waits``: version 2 stored a view
    without the call, and its result came back alone); a request meanwhile forgets only what
    precedes the waiting calls.
    """

    name = "openhands:amortized"
    citation = V0 + " AmortizedForgettingCondenser"
    version = 3

    estimator: str = "truth"
    max_size: int = 100
    keep_first: int = 1

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        if len(ctx) <= self.max_size or waits(ctx):
            return None
        return self._forget(ctx, f"{len(ctx)} events > max_size {self.max_size}")

    def on_overflow(self, ctx: Context, session: Session) -> Outcome | None:
        return around_waiting(ctx, lambda c: self._forget(c, "condensation request (context window exceeded)"))

    def _forget(self, ctx: Context, why: str) -> Outcome | None:
        n = len(ctx)
        tail = self.max_size // 2 - self.keep_first
        if n <= self.keep_first + tail:  # nothing to forget
            return None
        after = ctx.replace(keep_indices(ctx, {*range(self.keep_first), *range(n - tail, n)}))
        return Outcome(after, (event("drop", ctx, after, touched=n - len(after),
                                     detail=f"{why}: forgot down to {len(after)}"),))
