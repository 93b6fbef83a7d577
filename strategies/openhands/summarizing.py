"""OpenHands ``LLMSummarizingCondenser``, both generations: V1 (the SDK, the default,
OpenHands/software-agent-sdk@611629e6 openhands-sdk/openhands/sdk/context/condenser/
llm_summarizing_condenser.py) and V0 (``openhands:v0``, OpenHands/OpenHands@d6fab190
openhands/memory/condenser/impl/llm_summarizing_condenser.py); the defaults are the class's fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.context import SHARE, Context, Message, Outcome, Strategy, Text, event, starts_with
from strategies._tools import is_empty, quote_latest_human, rewrite_results, safe_cut, text_user
from strategies.openhands._common import V1, around_waiting, keep_indices, render, waits

if TYPE_CHECKING:
    from bench.context import Session

# OpenHands' state-summary template (summarizing_prompt.j2), in our words with its sections.
SUMMARY_PROMPT = (
    "Maintain a state summary of this agent session from the events below, replacing any earlier "
    "summary among them. Sections: USER_CONTEXT, TASK_TRACKING (keep task ids), COMPLETED, PENDING, "
    "CURRENT_STATE; for code tasks also CODE_STATE, TESTS, CHANGES, DEPS, VERSION_CONTROL_STATUS. "
    "Prioritize the user's goals and what is done versus pending; skip irrelevant detail."
)


V0_OBSERVATION_CHARS = 30_000
"""V0 ``LLMConfig.max_message_chars`` (OpenHands@d6fab190 openhands/core/config/llm_config.py l.68-70):
no observation reaches the LLM longer than this. A command's output is cut to it when the observation
is made (events/observation/commands.py l.19-22 MAX_CMD_OUTPUT_SIZE, l.116-120, l.138-165), every other
observation when conversation memory renders it (memory/conversation_memory.py l.388-527)."""
TRUNCATION_MARK = "\n[... Observation truncated due to length ...]\n"
"""events/serialization/event.py truncate_content l.167-178 @d6fab190, verbatim: what replaces the middle."""


def truncate_observation(text: str, limit: int) -> str:
    """V0 ``truncate_content``: past ``limit`` characters, the first and the last ``limit // 2`` with the
    marker between them (event.py l.167-178)."""
    if limit <= 0 or len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + TRUNCATION_MARK + text[-half:]


def event_count(m: Message) -> int:
    """V1 events in one message: one ActionEvent per tool call (parallel calls are several), one
    ObservationEvent per result, plus a MessageEvent for text beside them; else one event."""
    calls = len(m.tool_uses) + len(m.tool_results)
    if not calls:
        return 1
    return calls + (1 if m.role == "user" and any(isinstance(b, Text) and b.text for b in m.blocks) else 0)


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
    V0 (``openhands:v0``: the server's default pipeline, keep_first 4, max_size 120): EVENTS and REQUEST only,
    head + summary + the last max_size//2 − keep_first − 1 events (on a condensation request
    too: V0 keeps ``max_size // 2``, not half the current view; version 2), the previous summary
    fed to the summarizer as context, unmatched calls dropped. Not modelled: V1 tool-loop boundaries
    (thinking across a loop), V0 max_event_length truncation of the summarizer's input.
    Version 4: the summary quotes the latest request that says something (an empty user message
    after it is none: ``latest_human_text``); V0 does not condense while a call waits for its
    result (``waits``; version 3 stored a view without the call, and its result came back alone),
    and a condensation request meanwhile condenses only what precedes the waiting calls.
    Version 5 (issue 27, V0 only; the runaway and ineffective detectors fired 136 and 125 times on
    ``make bench``, each a request condensing 2 of ~60 events while the view stayed over the window):
    (1) ``conversation_window``: V0's server builds the pipeline ConversationWindow → BrowserOutput →
    LLMSummarizing (server/session/session.py l.219-249 @d6fab190), which stops at the first
    condenser that returns a condensation (memory/condenser/impl/pipeline.py l.34-40); the first
    condenses only on a request (conversation_window_condenser.py l.176-177), so a context-window
    error is handled there, not by the summarizer: the system prompt and the first user message
    stay with the newest half of the other events, leading observations dropped (l.20-174), no
    summary call; the latest summary stays in the view (view.py l.61-78 re-inserts it). (2)
    ``max_message_chars``: no observation longer than 30,000 characters reaches the LLM (see
    ``V0_OBSERVATION_CHARS``); version 4 sent outputs of up to 240,000 characters whole. Deviations:
    the summary is put back right after the kept head, where V0 inserts it at offset keep_first of
    the kept events; file reads are cut by openhands-aci's own limit in V0, here by the same 30,000.
    """

    name = "openhands"
    citation = V1
    version = 5
    summary_overhead = False
    """The condenser's request is one user message (instructions, the previous summary, the forgotten events)
    with no agent system prompt or tools (strategies.md §6.4-6.5): billed without the fixed overhead (version 3)."""
    summary_as_text = True
    """The forgotten events go into one user message, each as ``<EVENT id=N>...</EVENT>`` text (strategies.md
    §6.4, §6.5): the summary request holds no tool calls."""

    ranges = {"minimum_progress": SHARE}
    """The share of events a condensation must forget (0: any)."""

    estimator: str = "truth"
    generation: str = "v1"
    max_size: int = 240
    keep_first: int = 2
    max_tokens: int | None = None
    minimum_progress: float = 0.1
    summary_max_tokens: int = 8_192
    conversation_window: bool | None = None
    """A condensation request is handled by V0's ConversationWindowCondenser, first in the server's
    default pipeline (version 5). None: the generation's default, on for v0 (``openhands:v0`` is that
    pipeline), off for v1 (the SDK has no such pipeline). False: a standalone V0 LLMSummarizingCondenser
    (a TOML ``[condenser]`` of that type), whose own tail then serves the request."""
    max_message_chars: int | None = None
    """Observations cut to this many characters (head and tail, ``truncate_observation``) as they
    arrive. None: the generation's default, ``V0_OBSERVATION_CHARS`` for v0 (LLMConfig's default),
    0 (off) for v1, whose own tool limits are not modelled here."""

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

    def _observation_chars(self) -> int:
        if self.max_message_chars is not None:
            return self.max_message_chars
        return V0_OBSERVATION_CHARS if self.generation == "v0" else 0

    def on_tool_result(self, ctx: Context, session: Session) -> Outcome | None:
        limit = self._observation_chars()
        if limit <= 0:
            return None
        last = ctx.messages[-1]
        new = rewrite_results(last, lambda r: truncate_observation(r.content, limit))
        if new is last:
            return None
        after = ctx.replace((*ctx.messages[:-1], new))
        return Outcome(after, (event("truncate", ctx, after, touched=1,
                                     detail=f"observation over max_message_chars {limit:,}: head and tail kept"),))

    def _window(self, ctx: Context) -> Outcome | None:
        """V0 ``ConversationWindowCondenser.get_condensation`` (conversation_window_condenser.py l.20-174
        @d6fab190): keep the system prompt and the first user message (the recall pair that follows it
        in V0 has no message here), and the newest max(1, others // 2) events, minus the observations
        leading that slice; forget the rest, no summary. The latest summary is no stored event: V0
        puts it back into every view (view.py l.61-78), so it stays."""
        msgs, n = ctx.messages, len(ctx)
        first = next((i for i, m in enumerate(msgs)
                      if m.is_human_turn and not m.meta.get("summary") and not is_empty(m)), None)
        if first is None:  # l.58-64: no user message, an empty condensation
            return None
        essential = {first, *((0,) if ctx.system else ())}
        start = n - max(1, (n - len(essential)) // 2)
        while start < n and (msgs[start].is_tool_result or msgs[start].meta.get("summary")):
            start += 1  # l.114-133: observations leading the kept slice are dropped
        keep = essential | set(range(start, n))
        summary = next((i for i in range(n - 1, -1, -1) if msgs[i].meta.get("summary")), None)
        if summary is not None:
            keep.add(summary)
        after = ctx.replace(keep_indices(ctx, keep))
        if len(after) >= n:
            return None
        return Outcome(after, (event("drop", ctx, after, touched=n - len(after),
                                     detail=f"condensation request: ConversationWindowCondenser kept "
                                            f"{len(after)} of {n} events"),))

    def on_overflow(self, ctx: Context, session: Session) -> Outcome | None:
        if self.generation == "v0":
            window = self.conversation_window if self.conversation_window is not None else True
            if window:
                return around_waiting(ctx, self._window)
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
