"""``FiveLayer``, the five-layer escalating defense: the thresholds that run each layer, L3 auto-compact
and L4 reactive compact; L1, L2 and L5 are its bases (``persist``, ``microcompact``, ``collapse``).
Sources and defaults in the class docstring.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.context import Context, Event, Message, Outcome, Strategy, event
from strategies._files import remember_files
from strategies._tools import (
    last_assistant_index,
    new_human_turn,
    quote_latest_human,
    step_start,
    text_user,
    unanswered_start,
)
from strategies.layered._common import CONTINUATION, CONTINUE_AUTO, SUMMARY_PROMPT, _fail
from strategies.layered.collapse import Collapse
from strategies.layered.microcompact import Microcompact
from strategies.layered.persist import Persist

if TYPE_CHECKING:
    from bench.context import Session


@dataclass(frozen=True, kw_only=True)
class FiveLayer(Persist, Microcompact, Collapse, Strategy):
    """The seed's 5-layer escalating defense (L1 60% → L2 80% → L3 90% of the effective window
    → L4 on a 413 → L5 collapse), on Claude Code's published mechanics.

    Sources: spec/strategies.md §4.1 (effective window = window − min(max output, 20K), the
    summary sections and rebuilt message, ``[Old tool result content cleared]``); "Harness
    engineering from CC" ch. 9–12 (tool results over 50,000 chars persisted with a 2,000-char
    preview; reactive compact after ``prompt_too_long``; context collapse as a read-time
    projection). L2 replaces old outputs with "[Tool result cleared: <tool>, <n> tokens]" and
    removes old read-only calls (use and result) entirely, keeping the 5 newest results.
    L4 breaker: one reactive attempt; a second consecutive 413 ends the session (``fail``).
    L3/L4 summarize the whole history, the step in flight included: §4.1's rebuilt history is the
    summary message and the re-injected attachments, with no verbatim tail (version 2; version 1
    kept the current step verbatim, which ``keep_step_in_flight=True`` restores).
    Version 3: an empty user message (no content, or one empty text) is no turn for L3/L4: it does
    not open the step (the kept prompt) nor end the walk back for calls in flight, so a compaction
    never falls between a call and its results. Claude Code checks for compaction at the top of a
    query-loop turn, once a round's results are in (§4.1 trigger, item 4; the recorded boundary
    follows the last tool result, see ``ClaudeCode``), and sends no empty message (the API refuses
    one). Found by the slow contract suite (``empty_messages`` shape: an orphan result).
    Version 4: an empty user message after the latest request is not that request either: the
    L3/L4 summary quotes the real one and L5 keeps it (version 3 quoted and kept the empty one).
    Version 5: a compact summary in the step (the recorded one, when a replay compacts where the
    recorded agent did) is no prompt that opens the step: it is summarized with the rest instead of
    being kept beside the new summary (which doubled the post-compaction prompt in the fidelity
    replays of claude-code__entireio-cli and marot-spotter).
    """

    name = "five-layer"
    citation = "seed 5-layer defense; Claude Code services/compact/* per spec/strategies.md §4.1"
    version = 5

    estimator: str = "chars/4"
    persist_pct: float | None = 0.60
    persist_min_chars: int = 50_000
    preview_chars: int = 2_000
    microcompact_pct: float | None = 0.80
    microcompact_idle_seconds: float | None = None
    """Time-based microcompact: clear when the gap since the last call exceeds this."""
    microcompact_keep: int = 5
    microcompact_drop_read_only: bool = True
    microcompact_marker: str | None = None
    """Fixed marker; None = "[Tool result cleared: <tool>, <n> tokens]"."""
    autocompact_pct: float = 0.90
    autocompact_buffer: int = 0
    summary_max_tokens: int = 20_000
    """MAX_OUTPUT_TOKENS_FOR_SUMMARY, also the reserve in the effective window."""
    max_autocompact_failures: int | None = None
    usage_count: bool = False
    """Count = last usage + chars/4 × 4/3 for newer messages (Claude Code), else the estimate."""
    restore_files: int = 0
    restore_file_tokens: int = 5_000
    restore_total_tokens: int = 50_000
    max_reactive_attempts: int = 1
    collapse: bool = True
    keep_step_in_flight: bool = False
    reserve_summary_output: bool = True
    """The effective window is the window less min(max output, 20K); Claude Code 1.0.x took a share
    of the whole window instead."""
    """Keep the current step (the last call and its results) verbatim after the summary; Claude
    Code summarizes it (its compact boundary follows the last tool result)."""

    def effective_window(self, session: Session) -> int:
        model = session.model
        if not self.reserve_summary_output:
            return model.context_window
        return model.context_window - min(model.max_output, self.summary_max_tokens)

    def autocompact_threshold(self, session: Session) -> int:
        return int(self.effective_window(session) * self.autocompact_pct) - self.autocompact_buffer

    def count(self, ctx: Context, session: Session, fresh: bool) -> int:
        if not self.usage_count:
            return ctx.estimate
        usage = session.last_usage
        last = last_assistant_index(ctx.messages) if fresh and usage is not None else -1  # O(step)
        if last >= 0:
            newer = sum(ctx.est(m) for m in ctx.messages[last + 1:])
            return usage.prompt_tokens + usage.output_tokens + round(newer * 4 / 3)
        return round(ctx.estimate * 4 / 3)

    def on_tool_result(self, ctx: Context, session: Session) -> Outcome | None:
        if self.restore_files:
            remember_files(ctx.messages, session.state.setdefault("files", {}))
        return None

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        st, model, usage = session.state, session.model, session.last_usage
        if usage is not None and model.fits(usage.prompt_tokens, usage.output_tokens):
            st["reactive_attempts"] = 0
        fresh = not st.pop("usage_stale", False)
        idle = session.now - st.get("last_call_time", session.now)
        st["last_call_time"] = session.now
        start, events, window = ctx, [], model.context_window
        if self.persist_pct is not None and self.count(ctx, session, fresh) >= self.persist_pct * window:
            new, ev = self._persist_since(ctx, st)
            if ev is not None:
                ctx, fresh = new, False
                events.append(ev)
        pct = self.microcompact_pct
        by_size = pct is not None and self.count(ctx, session, fresh) >= pct * window
        by_time = self.microcompact_idle_seconds is not None and idle > self.microcompact_idle_seconds
        if by_size or by_time:
            new, ev = self._microcompact_since(ctx, st)
            if ev is not None:
                ctx, fresh = new, False
                events.append(ev)
        threshold = self.autocompact_threshold(session)
        failures = st.get("autocompact_failures", 0)
        breaker_open = self.max_autocompact_failures is not None and failures >= self.max_autocompact_failures
        if not breaker_open and self.count(ctx, session, fresh) >= threshold:
            done = self._compact(ctx, session, "L3 auto-compact")
            if done is not None:
                ctx, fresh = done[0], False
                events.extend(done[1])
            still_over = done is None or self.count(ctx, session, False) >= threshold
            st["autocompact_failures"] = failures + 1 if self._auto_failed(done, still_over) else 0
        return Outcome(ctx, tuple(events)) if ctx is not start else None

    def _auto_failed(self, done: object, still_over: bool) -> bool:
        """Whether an auto-compaction counts as failed for the breaker: here, one that could not
        run or left the count over the threshold."""
        return still_over

    def on_overflow(self, ctx: Context, session: Session) -> Outcome | None:
        st = session.state
        attempts = st.get("reactive_attempts", 0)
        if attempts >= self.max_reactive_attempts:
            return _fail(ctx, f"L4 circuit breaker: {attempts} reactive compact attempt(s) already made")
        st["reactive_attempts"] = attempts + 1
        done = self._compact(ctx, session, "L4 reactive compact")
        new, events = done if done is not None else (ctx, [])
        budget = self.effective_window(session)
        if new.truth <= budget:
            return Outcome(new, tuple(events)) if done is not None else None
        if self.collapse:
            sent = self._collapsed(new, budget)
            if session.model.fits(sent.truth, 0):
                st["collapse"] = (session.call_index, new.messages, sent)
                st["usage_stale"] = True
                events.append(event("collapse", new, sent, touched=len(new) - len(sent) + 1,
                                    detail=f"L5 context collapse: {len(new) - len(sent) + 1} messages not sent"))
                return Outcome(new, tuple(events))
        failed = _fail(new, "L4 reactive compact left the prompt over the window")
        return Outcome(new, (*events, *failed.events), fail=failed.fail)

    def project(self, ctx: Context, session: Session) -> Context:
        armed = session.state.get("collapse")
        if armed is not None and armed[0] == session.call_index and armed[1] is ctx.messages:
            return armed[2]
        return ctx

    def _compact(self, ctx: Context, session: Session, label: str) -> tuple[Context, list[Event]] | None:
        head = ctx.messages[:1] if ctx.system else ()
        cut = max(step_start(ctx.messages) if self.keep_step_in_flight else unanswered_start(ctx.messages), len(head))
        opened = new_human_turn(ctx.messages, skip_empty=True)
        if not self.keep_step_in_flight and opened >= len(head) and not ctx.messages[opened].meta.get("summary"):
            cut = min(cut, opened)  # a prompt that opens the step is not summarized away (an empty one opens none)
        history, tail = ctx.messages[len(head):cut], ctx.messages[cut:]
        if not history:
            return None
        sent, note = self._summary_input(history, session, label)
        summary = session.summarize(sent, prompt=SUMMARY_PROMPT, max_tokens=self.summary_max_tokens)
        text = CONTINUATION + summary.text + (CONTINUE_AUTO if label.startswith("L3") else "")
        text = quote_latest_human(text, ctx.messages, tail)
        compacted = ctx.replace((*head, text_user(text, summary=True), *tail))
        clean = session.state.get("persisted") is ctx.messages  # what it adds holds no tool output
        events = [event("summarize", ctx, compacted, touched=len(history), summary_tokens=summary.output_tokens,
                        detail=f"{label}: {len(history)} messages summarized{note}")]
        restored = self._restored(session, history)
        if restored:
            after = ctx.replace((*head, compacted.messages[len(head)], *restored, *tail))
            events.append(event("reinject", compacted, after, touched=len(restored),
                                detail=f"{len(restored)} attachments re-injected after compaction (contents from "
                                       f"the trace; approximate)"))
            compacted = after
        if clean:
            session.state["persisted"] = compacted.messages
        return compacted, events

    def _summary_input(self, history: Sequence[Message], session: Session, label: str
                       ) -> tuple[Sequence[Message], str]:
        """What the summarize request holds, and a note for the event (here: the whole history)."""
        return history, ""

    def _restored(self, session: Session, history: Sequence[Message] = ()) -> list[Message]:
        """Post-compact attachments: the most recently read files, within budget."""
        files = list(session.state.get("files", {}).items())[::-1][: self.restore_files]
        out, used = [], 0
        for path, content in files:
            tokens = round(len(content) / 4)
            if tokens > self.restore_file_tokens or used + tokens > self.restore_total_tokens:
                out.append(text_user(f"[File {path} was read before compaction ({tokens} tokens); "
                                     f"read it again if needed.]", synthetic=True))
                continue
            used += tokens
            out.append(text_user(f"[Re-read after compaction: {path}]\n{content}", synthetic=True))
        return out
