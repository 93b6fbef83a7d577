"""The five-layer escalating defense (Claude Code's configuration of it: strategies/claude_code/).

Layers, cheapest first; each runs at most once per call and only if the one before left the
context over its own threshold: L1 persist large tool results to disk (a pointer stays), L2
microcompact (no LLM), L3 auto-compact (LLM summary), L4 reactive compact on a 413, with a
circuit breaker, and L5 context collapse: a read-time view of what is sent, the stored history
unchanged. L5 is armed by a failed L4 only, so it never pre-empts the layers before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import is_
from typing import TYPE_CHECKING

from bench.context import Context, Event, Message, Outcome, Strategy, ToolResult, ToolUse, event, orphans, starts_with
from strategies._tools import (
    is_read_only,
    last_assistant_index,
    latest_human,
    new_human_turn,
    quote_latest_human,
    remember_files,
    rewrite_results,
    step_start,
    text_user,
    tool_inputs,
    unanswered_start,
)

if TYPE_CHECKING:
    from bench.context import Session

PERSIST_DIR = "/tmp/agent/tool-results"
CLEARED = "[Old tool result content cleared]"
SETTLED = ("[Tool result", CLEARED)
"""L2 leaves an output starting with either as it is (one it cleared, or one L1 persisted)."""
SUMMARY_SECTIONS = (
    "Primary Request and Intent", "Key Technical Concepts", "Files and Code Sections", "Errors and fixes",
    "Problem Solving", "All user messages", "Pending Tasks", "Current Work", "Optional Next Step",
)
# Our instructions around Claude Code's nine section headings (services/compact/prompt.ts).
SUMMARY_PROMPT = (
    "Write a detailed summary of this conversation so far, so the work can go on without it. "
    "Think it through in <analysis> tags, then give the summary in <summary> tags with these "
    "sections:\n" + "\n".join(f"{i}. {s}" for i, s in enumerate(SUMMARY_SECTIONS, 1))
    + "\nQuote the user's messages and the most recent work directly where it matters."
)
CONTINUATION = ("This session is being continued from a previous conversation that ran out of context. "
                "The summary below covers the earlier portion of the conversation.\n\n")
CONTINUE_AUTO = ("\n\nContinue with the last task you were asked to work on, from where it was left, "
                 "without asking the user any further questions.")


@dataclass(frozen=True, kw_only=True)
class FiveLayer(Strategy):
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

    # --- layers ---------------------------------------------------------------------------

    def _pointer(self, r: ToolResult) -> str | None:
        """L1's rewrite of one output: a pointer to where it was persisted, with a preview."""
        if len(r.content) <= self.persist_min_chars:
            return None
        return (f"[Tool result persisted to disk: {PERSIST_DIR}/{r.tool_use_id}.txt ({len(r.content)} chars). "
                f"Preview (first {self.preview_chars} chars):]\n{r.content[:self.preview_chars]}")

    def _persist(self, ctx: Context) -> tuple[Context, Event | None]:
        """L1 from scratch (``_persist_since`` is the same, looking at what changed only)."""
        new = ctx.replace(rewrite_results(m, self._pointer) for m in ctx.messages)
        return self._persisted(ctx, new, _touched(ctx, new))

    def _persisted(self, ctx: Context, new: Context, touched: int) -> tuple[Context, Event | None]:
        if not touched:
            return ctx, None
        detail = f"L1 persist: outputs over {self.persist_min_chars} chars moved to disk"
        return new, event("persist", ctx, new, touched=touched, detail=detail)

    def _persist_since(self, ctx: Context, state: dict) -> tuple[Context, Event | None]:
        """``_persist`` when ``state["persisted"]`` holds a history with no output over the limit
        (L1 left it so, and the later layers kept it so) and ``ctx`` extends it: only the appended
        messages can hold one. Anything else runs ``_persist`` over the whole history."""
        clean: tuple[Message, ...] | None = state.get("persisted")
        msgs = ctx.messages
        if clean is None or not starts_with(msgs, clean):
            new, ev = self._persist(ctx)
            seen = {id(m) for m in msgs}
            changed: Sequence[Message] = [m for m in new.messages if id(m) not in seen]
        else:
            out = list(msgs)
            changed = []
            for k in range(len(clean), len(msgs)):
                m = rewrite_results(msgs[k], self._pointer)
                if m is not msgs[k]:
                    out[k] = m
                    changed.append(m)
            new, ev = self._persisted(ctx, ctx.replace(out) if changed else ctx, len(changed))
        # a pointer longer than the limit (a long preview) would be persisted again next call
        fixed = all(len(r.content) <= self.persist_min_chars for m in changed for r in m.tool_results)
        state["persisted"] = new.messages if fixed else None
        return new, ev

    def _clear_old(self, msgs: Sequence[Message]) -> tuple[list[Message], list[str], set[str]]:
        """L2 over ``msgs``: the messages left, the ids of the outputs cleared and of the read-only
        calls removed."""
        uses = tool_inputs(msgs)
        ids = [r.tool_use_id for m in msgs for r in m.tool_results]
        old = set(ids[: max(0, len(ids) - self.microcompact_keep)])
        drop = {i for i in old if self.microcompact_drop_read_only and i in uses and is_read_only(uses[i])}

        cleared: list[str] = []

        def marker(r: ToolResult) -> str | None:
            if r.tool_use_id not in old or r.tool_use_id in drop or r.content.startswith(SETTLED):
                return None
            cleared.append(r.tool_use_id)
            if self.microcompact_marker is not None:
                return self.microcompact_marker
            name = uses[r.tool_use_id].name if r.tool_use_id in uses else "tool"
            return f"[Tool result cleared: {name}, {round(len(r.content) / 4)} tokens]"
        out: list[Message] = []
        for m in msgs:
            m = rewrite_results(m, marker)
            if drop and any(isinstance(b, (ToolUse, ToolResult)) and _block_id(b) in drop for b in m.blocks):
                blocks = tuple(b for b in m.blocks if _block_id(b) not in drop)
                if not blocks:
                    continue
                m = m.with_blocks(blocks)
            out.append(m)
        return out, cleared, drop

    def _microcompact(self, ctx: Context) -> tuple[Context, Event | None]:
        """L2 from scratch (``_microcompact_since`` is the same, looking at what changed only)."""
        out, cleared, drop = self._clear_old(ctx.messages)
        if len(out) == len(ctx) and all(a is b for a, b in zip(out, ctx.messages, strict=True)):
            return ctx, None
        new = ctx.replace(out)
        return new, self._prune_event(ctx, new, _touched(ctx, new) + len(ctx) - len(new), cleared, drop)

    def _prune_event(self, ctx: Context, new: Context, touched: int, cleared: list[str], drop: set[str]) -> Event:
        detail = f"L2 microcompact: {len(cleared)} outputs cleared, {len(drop)} read-only calls removed"
        return event("prune", ctx, new, touched=touched, detail=detail)

    def _microcompact_since(self, ctx: Context, state: dict) -> tuple[Context, Event | None]:
        """``_microcompact``, run over the tail of the history that can still change (``_Settled``)
        when ``ctx`` extends the previous L2 output; anything else runs it over the whole history.
        A history L1 left clean stays clean when L2's markers are short, so L1 keeps skipping it."""
        msgs = ctx.messages
        settled: _Settled | None = state.get("microcompacted")
        fixed_marker = self.microcompact_marker is None or self.microcompact_marker.startswith(SETTLED)
        if (settled is None or not fixed_marker or settled.keep != self.microcompact_keep
                or not settled.extend(msgs)):
            new, ev = self._microcompact(ctx)
            state["microcompacted"] = _Settled.of(new.messages, self.microcompact_keep)
            changed: Sequence[Message] = new.messages
        else:
            q = settled.q
            tail = msgs[q:]
            out, cleared, drop = self._clear_old(tail)
            if len(out) == len(tail) and all(map(is_, out, tail)):
                new, ev, changed = ctx, None, ()
            else:
                new = ctx.replace((*msgs[:q], *out))
                seen = {id(m) for m in tail}
                changed = [m for m in out if id(m) not in seen]
                ev = self._prune_event(ctx, new, len(changed) + len(tail) - len(out), cleared, drop)
            settled.advance(new.messages, q)
        if ev is not None and state.get("persisted") is msgs and all(
                len(r.content) <= self.persist_min_chars for m in changed for r in m.tool_results):
            state["persisted"] = new.messages
        return new, ev

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

    def _collapsed(self, ctx: Context, budget: int) -> Context:
        """What is sent under L5: system, summaries, the latest human turn, and the newest
        whole rounds that fit the budget; older messages stay stored but are not sent."""
        msgs, head = ctx.messages, (1 if ctx.system else 0)
        human = latest_human(msgs)
        keep = [i for i in range(head, len(msgs)) if msgs[i] is human or msgs[i].meta.get("summary")]
        first = (max(keep) if keep else head - 1) + 1
        pairs: dict[str, list[int]] = {}
        for i, m in enumerate(msgs):
            for b in m.blocks:
                if isinstance(b, (ToolUse, ToolResult)):
                    pairs.setdefault(_block_id(b), []).append(i)
        split = {c for ix in pairs.values() for c in range(min(ix) + 1, max(ix) + 1)}
        fixed = sum(ctx.tok(msgs[i]) for i in (*range(head), *keep)) + 16
        suffix = [0] * (len(msgs) + 1)
        for i in range(len(msgs) - 1, -1, -1):
            suffix[i] = suffix[i + 1] + ctx.tok(msgs[i])
        fitting = (c for c in range(first, len(msgs) + 1) if c not in split and fixed + suffix[c] <= budget)
        cut = next(fitting, len(msgs))
        sent = [*msgs[:head], *(msgs[i] for i in keep)]
        sent += [text_user(f"[Context collapse: {cut - len(keep) - head} earlier messages not sent]", synthetic=True)]
        sent += msgs[cut:]
        _, stray = orphans(sent)
        if stray:
            def keep_block(b: object) -> bool:
                return not (isinstance(b, ToolResult) and b.tool_use_id in stray)
            sent = [m.with_blocks(tuple(filter(keep_block, m.blocks))) for m in sent]
            sent = [m for m in sent if m.blocks]
        return ctx.replace(sent)


def _block_id(b: object) -> str | None:
    if isinstance(b, ToolUse):
        return b.id
    if isinstance(b, ToolResult):
        return b.tool_use_id
    return None


def _touched(before: Context, after: Context) -> int:
    ids = {id(m) for m in before.messages}
    return sum(1 for m in after.messages if id(m) not in ids)


def _fail(ctx: Context, reason: str) -> Outcome:
    return Outcome(ctx, (event("fail", ctx, ctx, detail=reason),), fail=reason)


class _Settled:
    """Where L2 can still change the history it last left (kept in ``session.state``).

    After L2 ran, every output but the newest ``keep`` is settled: cleared or persisted (so L2 skips
    it), or removed with its read-only call. While the history grows by appending, later runs can
    change only the newest outputs, their calls, the calls still waiting for a result and what was
    appended: all at or after ``q``. Running L2 over ``messages[q:]`` gives the same result as over
    the whole history as long as every id has one call and one result, the call first (``simple``;
    else the whole history is run, as before).
    """

    def __init__(self, messages: tuple[Message, ...], keep: int) -> None:
        self.messages = messages
        self.keep = keep
        self.q = 0
        self.uses: set[str] = set()
        self.results: set[str] = set()
        self.simple = True

    @staticmethod
    def of(messages: tuple[Message, ...], keep: int) -> _Settled:
        """The index of an L2 output (a walk over all of it)."""
        index = _Settled(messages, keep)
        index.simple = index._add(messages)
        index.q = index._boundary(messages, 0)
        return index

    def _add(self, msgs: Sequence[Message]) -> bool:
        """Record the ids ``msgs`` bring; False if one repeats an id or answers no earlier call."""
        uses, results, simple = self.uses, self.results, True
        for m in msgs:
            for u in m.tool_uses:
                simple = simple and u.id not in uses and u.id not in results
                uses.add(u.id)
            for r in m.tool_results:
                simple = simple and r.tool_use_id not in results and r.tool_use_id in uses
                results.add(r.tool_use_id)
        return simple

    def extend(self, messages: tuple[Message, ...]) -> bool:
        """Take in the messages appended to the history last left; False when ``messages`` does not
        extend it or the ids stop being simple (then the caller runs the whole history)."""
        old = self.messages
        if not self.simple or not starts_with(messages, old):
            return False
        self.simple = self._add(messages[len(old):])
        self.messages = messages
        return self.simple

    def advance(self, messages: tuple[Message, ...], q: int) -> None:
        """L2 left ``messages``, the same as before up to ``q``."""
        self.messages = messages
        self.q = self._boundary(messages, q)

    def _boundary(self, messages: tuple[Message, ...], start: int) -> int:
        """The first position L2 may still change: the newest ``keep`` outputs and their calls, and
        the calls with no result yet (all at or after ``start``)."""
        results: list[tuple[int, str]] = []
        calls: dict[str, int] = {}
        for k in range(start, len(messages)):
            m = messages[k]
            for u in m.tool_uses:
                calls[u.id] = k
            results.extend((k, r.tool_use_id) for r in m.tool_results)
        newest = results[max(0, len(results) - self.keep):] if self.keep > 0 else []
        answered = {i for _, i in results}
        q = min((k for k, _ in newest), default=len(messages))
        q = min(q, min((calls[i] for _, i in newest if i in calls), default=q))
        return min(q, min((k for i, k in calls.items() if i not in answered), default=q))
