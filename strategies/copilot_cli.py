"""GitHub Copilot CLI background compaction: the summary is written while the agent keeps working.

At 80% of the context window a summary of the whole conversation so far is requested in the
background; the agent goes on calling the model. When the summary is ready it replaces the messages
it summarized, and whatever arrived meanwhile stays after it, verbatim. Only if the context reaches
95% before then does the agent wait for it (and a context-limit error forces it at once).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.context import Context, Message, Outcome, Strategy, event
from strategies._tools import quote_latest_human, text_user

if TYPE_CHECKING:
    from bench.context import Session

SRC = ("closed source; github/copilot-sdk@cc0438d66e3e68c333537cb935d9425d4e4ed8d5 nodejs/src/types.ts "
       "l.1858-1883 (InfiniteSessionConfig defaults), generated/session-events.ts l.2612-2800 (compaction events)")
# Assumed (the real prompt is not public): a whole-history summary that replaces it.
SUMMARY_PROMPT = (
    "Summarize the conversation so far for the agent that will continue it without seeing it: the user's "
    "requests and overall goal, the work done and its results, technical details and decisions, the files "
    "read or changed, errors met, and the next steps. This summary replaces the conversation history.")
STATE = "copilot_pending"


@dataclass(frozen=True)
class _Pending:
    """A background compaction in flight: what it summarizes and when its result is ready."""

    prefix: int
    """Messages (system included) it summarizes: the context when it started."""
    started_call: int
    ready_at: float
    text: str
    summary_tokens: int
    recorded_clock: bool = False
    """``ready_at`` is on the recorded clock (message timestamps), else on the replay's (``session.now``)."""


MIN_TIMED_CALLS = 5
"""Calls with a measurable duration needed before a session's own output speed is trusted."""


def output_speed(messages: tuple[Message, ...]) -> float | None:
    """Output tokens per second of the model calls ``messages`` hold: Σ output / Σ call time, a call's time
    being its answer's timestamp minus that of the message before it (the request went out when that
    arrived). None with fewer than ``MIN_TIMED_CALLS`` such calls (a trace without timestamps)."""
    out = seconds = 0.0
    n = 0
    for prev, m in itertools.pairwise(messages):
        if m.role != "assistant" or m.timestamp is None or prev.timestamp is None:
            continue
        dt = m.timestamp - prev.timestamp
        tokens = (m.usage.output_tokens if m.usage is not None else 0) or m.meta.get("output_tokens") or 0
        if 0 < dt <= 600 and tokens:
            out, seconds, n = out + tokens, seconds + dt, n + 1
    return out / seconds if n >= MIN_TIMED_CALLS and seconds > 0 else None


def request_time(ctx: Context) -> float | None:
    """When this call's request goes out on the recorded clock: the newest message's timestamp (a tool
    result or the user's message; Copilot checks at turn start, right before the request)."""
    for m in reversed(ctx.messages[-4:]):
        if m.timestamp is not None:
            return m.timestamp
    return None


@dataclass(frozen=True, kw_only=True)
class CopilotCli(Strategy):
    """Copilot CLI "infinite sessions" compaction. Closed source; evidence, and how sure it is:

    - thresholds, public and sure: github/copilot-sdk nodejs/src/types.ts InfiniteSessionConfig —
      ``backgroundCompactionThreshold`` default 0.80 ("compaction runs asynchronously, allowing the session
      to continue processing") and ``bufferExhaustionThreshold`` 0.95 ("the session blocks until compaction
      completes"); the same defaults in docs/features/session-persistence.md and the four SDK READMEs;
    - what the result replaces, fairly sure: github/copilot-cli#4441 (CLI 1.0.79: "196 active messages and
      removed 195; the second reported 473 and removed 472", i.e. the history up to the start becomes one
      summary message) and session-events.ts CompactionCompleteData (preCompactionMessagesLength,
      messagesRemoved, summaryContent); the triggers ``threshold`` / ``context_limit_retry`` / ``manual``
      are the schema's CompactionTrigger;
    - what is compared, fairly sure (data): Copilot's own count of system prompt + conversation + tool
      definitions against the context tier's window, checked at the start of each turn (before the
      model call). The recorded 1.0.74 session writes ``session.compaction_start`` 12 ms after a
      ``assistant.turn_start`` with systemTokens 36,636 + conversationTokens 112,055 +
      toolDefinitionsTokens 11,404 = 160,095 = its ``preCompactionTokens``, 80% of the default tier's
      ~200K (changelog 1.0.52 L992; bench/cost/windows.py). Here: ``ctx.truth``, which holds the system
      prompt (the importer reads ``system.message``) and the conversation, plus the meter's fixed
      overhead (what a request carries that no message does: the tool schemas), by the run's counts
      (provider-attributed or calibrated; Copilot's tokenizer is not ours);
    - how long the summary takes, medium-low (issue 24): it is one model call (``compactionTokensUsed``:
      172,225 in, 5,117 out), so it lasts as long as the model takes to write it: the summary's output
      tokens at the session's own output speed (``output_speed``: Σ output / Σ call time of the calls
      held, from the recorded timestamps; ``summary_tokens_per_second`` without them). The recorded
      1.0.74 session writes 49.4 tokens/s over its 70 calls; its compaction wrote 5,117 tokens (summary
      plus reasoning) in 64.6 s (79/s: the summary call streams faster than the agent's tool turns) and
      the stand-in's 3,013-token summary takes 61 s at the session's speed, where a fixed 30 s (version
      2) applied it a call early. ``summary_seconds`` forces a fixed time;
    - when it is applied, fairly sure (data): at the first turn that *starts* once it is ready — Copilot
      checks at turn start, before the request (``compaction_start`` came 12 ms after
      ``assistant.turn_start``), so readiness is judged at the request's time (the newest message's
      timestamp), not when the answer came back;
    - assumed: the summary prompt (SUMMARY_PROMPT) and the summary going in as one user message as
      written.

    Count, found but not modelled (medium): Copilot estimates its tokens itself, with tiktoken times a
    per-model factor (github/copilot-sdk#975, CLI 1.0.6: ``claude-opus-4.5: 1.15``); in the 1.0.74
    session ``systemTokens`` 36,636 = 1.2 × the o200k count of its system prompt (30,525) for
    claude-fable-5, and ``conversationTokens`` 112,055 is within 2.5% of the answers' recorded output
    tokens (49,659) plus 1.2 × o200k of the rest (not of the answers' text: 86K). The run's counts
    (provider-attributed or calibrated) land 0.6% above it at that call, which starts the summary two
    calls early there; the tool schemas (``toolDefinitionsTokens``) are recorded only at a compaction.

    Version 2: a summary that replaces the latest request quotes the latest one that says something
    (version 1 took an empty user message after it and quoted nothing). Version 3: the duration from the
    summary's size and the session's output speed, and readiness at the request's time (issue 24).
    """

    name = "copilot-cli"
    citation = SRC
    version = 3

    estimator: str = "truth"
    background_threshold: float = 0.80
    buffer_exhaustion_threshold: float = 0.95
    summary_seconds: float | None = None
    """A fixed time the summary takes; None: its output tokens at the session's output speed."""
    summary_tokens_per_second: float = 50.0
    """The output speed without recorded timestamps (the recorded 1.0.74 session: 49.4/s)."""

    def __post_init__(self) -> None:
        if not 0.0 < self.background_threshold <= self.buffer_exhaustion_threshold:
            raise ValueError("need 0 < background_threshold <= buffer_exhaustion_threshold")
        if self.summary_tokens_per_second <= 0:
            raise ValueError("summary_tokens_per_second must be positive")

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        window = session.model.context_window
        used = ctx.truth / window
        pending: _Pending | None = session.state.get(STATE)
        if pending is not None:
            now = request_time(ctx) if pending.recorded_clock else None
            if (now if now is not None else session.now) >= pending.ready_at:
                return self.apply(ctx, session, pending, "")
            if used >= self.buffer_exhaustion_threshold:
                return self.apply(ctx, session, pending, "; the agent waited for it at 95%")
            return None
        if used >= self.buffer_exhaustion_threshold:  # jumped past both thresholds: start and wait
            return self.apply(ctx, session, self.start(ctx, session), "; started and waited for at 95%")
        if used >= self.background_threshold:
            session.state[STATE] = self.start(ctx, session)
        return None

    def on_overflow(self, ctx: Context, session: Session) -> Outcome | None:
        pending = session.state.get(STATE) or self.start(ctx, session)
        return self.apply(ctx, session, pending, "; forced by a context-limit error")

    def start(self, ctx: Context, session: Session) -> _Pending:
        """Ask for the summary now (billed now: the call runs in the background from here)."""
        head = 1 if ctx.system else 0
        summary = session.summarize(ctx.messages[head:], prompt=SUMMARY_PROMPT, max_tokens=session.model.max_output)
        seconds = self.summary_seconds
        if seconds is None:
            seconds = summary.output_tokens / (output_speed(ctx.messages) or self.summary_tokens_per_second)
        started = request_time(ctx)
        return _Pending(len(ctx.messages), session.call_index,
                        (started if started is not None else session.now) + seconds,
                        summary.text, summary.output_tokens, recorded_clock=started is not None)

    def apply(self, ctx: Context, session: Session, pending: _Pending, how: str) -> Outcome | None:
        """The summary replaces what it summarized; what arrived since it started is kept after it."""
        session.state.pop(STATE, None)
        head = ctx.messages[:1] if ctx.system else ()
        summarized = pending.prefix - len(head)
        if summarized <= 0:
            return None
        kept = ctx.messages[pending.prefix:]
        text = quote_latest_human(pending.text, ctx.messages, kept)  # the harness contract (issue 11)
        after = ctx.replace((*head, text_user(text, summary=True), *kept))
        lag = session.call_index - pending.started_call
        detail = f"started at call {pending.started_call}, applied {lag} call(s) later{how}"
        return Outcome(after, (event("summarize", ctx, after, touched=summarized,
                                     summary_tokens=pending.summary_tokens, detail=detail),))
