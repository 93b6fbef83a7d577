"""GitHub Copilot CLI background compaction: the summary is written while the agent keeps working.

At 80% of the context window a summary of the whole conversation so far is requested in the
background; the agent goes on calling the model. When the summary is ready it replaces the messages
it summarized, and whatever arrived meanwhile stays after it, verbatim. Only if the context reaches
95% before then does the agent wait for it (and a context-limit error forces it at once).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.context import Context, Outcome, Strategy, event
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
    - assumed: the summary is ready ``summary_seconds`` after it started (the replay clock: recorded
      timestamps, else 10 s per call; the recorded compaction took 64.6 s, ``compaction_complete``
      ``duration``: one observation, not a rule); the summary prompt (SUMMARY_PROMPT) and the summary
      going in as one user message as written.

    Version 2: a summary that replaces the latest request quotes the latest one that says something
    (version 1 took an empty user message after it and quoted nothing).
    """

    name = "copilot-cli"
    citation = SRC
    version = 2

    estimator: str = "truth"
    background_threshold: float = 0.80
    buffer_exhaustion_threshold: float = 0.95
    summary_seconds: float = 30.0

    def __post_init__(self) -> None:
        if not 0.0 < self.background_threshold <= self.buffer_exhaustion_threshold:
            raise ValueError("need 0 < background_threshold <= buffer_exhaustion_threshold")

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        window = session.model.context_window
        used = ctx.truth / window
        pending: _Pending | None = session.state.get(STATE)
        if pending is not None:
            if session.now >= pending.ready_at:
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
        return _Pending(len(ctx.messages), session.call_index, session.now + self.summary_seconds,
                        summary.text, summary.output_tokens)

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
