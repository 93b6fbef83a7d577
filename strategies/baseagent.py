"""BaseAgent: per-output middle-out truncation, OpenCode-style prune, then a Codex-style summary.

Every tool output is cut to 2,500 tokens when it arrives. Before each call, if the estimate is
over 85% of the usable context (200K − 32K = 168K, i.e. 142,800), old tool outputs are pruned;
only if that is not enough is the history replaced by [system, summary].
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bench.context import Context, Event, Message, Outcome, Strategy, event, starts_with
from strategies._tools import carry_request, rewrite_results, text_user

if TYPE_CHECKING:
    from bench.context import Session

PRUNE_MARKER = "[Old tool result content cleared]"
TRUNCATION_MARKER = "\n\n[...truncated...]\n\n"
# Our wording of BaseAgent's Codex-derived checkpoint prompt and summary prefix (same intent).
COMPACTION_PROMPT = (
    "Context checkpoint: write a handoff summary so another model can pick up this task. Cover "
    "progress and key decisions, constraints and user preferences, what is left to do (next "
    "steps), data and references still needed, files changed and how, and errors met and how "
    "they were fixed. Be brief and structured; use bullet points and short sections."
)
SUMMARY_PREFIX = (
    "A previous model worked on this task and left the summary below. The tools' state is as it "
    "left it. Build on that work rather than redoing it.\n\nSummary of the earlier context:\n\n"
)


def middle_out(text: str, max_tokens: int) -> str | None:
    """BaseAgent's docs version: over max_tokens × 4 chars, keep head and tail around a marker."""
    max_chars = max_tokens * 4
    if len(text) <= max_chars:
        return None
    keep = max_chars // 2 - 50
    return f"{text[:keep]}{TRUNCATION_MARKER}{text[-keep:]}"


@dataclass(frozen=True, kw_only=True)
class BaseAgent(Strategy):
    """BaseAgent (PlatformNetwork/baseagent) context management, with the docs' defaults.

    Sources: PlatformNetwork/baseagent ``src/core/compaction.py`` @ 4755e816 (constants, prune,
    ``manage_context``) and ``docs/context-management.md`` (middle-out truncation at 2,500
    tokens, the tuning presets, the worked examples "150K → 60K" and "Pruning sufficient:
    148000 -> 93000 tokens"). The window is BaseAgent's own constant (200K), not the model's,
    unless ``context_limit`` is set to 0. BaseAgent estimates len//4 per part + 4 per message;
    we decide with the shared chars/4 estimate (round, no per-message overhead); the prune walk
    itself uses len//4 per output as BaseAgent does.

    The prune is a per-call view: ``manage_context`` returns the list sent on this call, and the
    loop keeps a returned list only when it is shorter (a compaction), so pruned outputs come back
    in full on the next call and are pruned again (version 2; version 1 persisted the prune).
    Version 3: the latest user message appended to the summary is the latest one that says
    something (version 2 took an empty user message after it and appended nothing).
    Version 4: a second summary carries on the request the first stood for; version 3 read only
    real human turns and appended nothing once a summary had replaced them. BaseAgent itself
    appends no user message to its summary (``run_compaction`` returns [system, prefix + summary]
    @4755e816 L272-275); the quote is the harness's rule that the latest request stays (DESIGN.md),
    added only when the summary does not already hold it.
    """

    name = "baseagent"
    citation = "PlatformNetwork/baseagent src/core/compaction.py @4755e816; docs/context-management.md"
    version = 4

    context_limit: int = 200_000
    """MODEL_CONTEXT_LIMIT; 0 = use the model's window."""
    output_reserve: int = 32_000
    threshold: float = 0.85
    prune_protect: int = 40_000
    prune_minimum: int = 20_000
    protect_turns: int = 2
    max_output_tokens: int = 2_500
    """Per-tool-output limit, applied when the output arrives."""
    summary_max_tokens: int = 4_096

    def usable(self, session: Session) -> int:
        return (self.context_limit or session.model.context_window) - self.output_reserve

    def _over(self, tokens: int, session: Session) -> bool:
        return tokens > self.usable(session) * self.threshold

    def on_tool_result(self, ctx: Context, session: Session) -> Outcome | None:
        last = ctx.messages[-1]
        new = rewrite_results(last, lambda r: middle_out(r.content, self.max_output_tokens))
        if new is last:
            return None
        after = ctx.replace((*ctx.messages[:-1], new))
        return Outcome(after, (event("truncate", ctx, after, touched=1,
                                     detail=f"middle-out to {self.max_output_tokens} tokens"),))

    def prune(self, ctx: Context, memo: dict | None = None) -> tuple[Context, int, int]:
        """OpenCode's prune as BaseAgent ports it: (context, scanned tokens, prunable tokens).

        ``memo`` (kept in ``session.state`` between calls) holds each pruned message by the
        original's id and the ids pruned in it, so the same prune gives the same object on every
        call: its count and the cache prefix are then found by identity, not recomputed.
        """
        return self._pruned(ctx, {} if memo is None else memo, _Outputs().extended(ctx.messages))[:3]

    def _pruned(self, ctx: Context, memo: dict, index: _Outputs) -> tuple[Context, int, int, int]:
        """``prune`` on the outputs ``index`` holds for ``ctx``, plus how many messages it rewrites.

        BaseAgent walks back from the newest message, skipping those after the second-newest user
        turn and stopping at an output already pruned; outputs beyond the newest ``prune_protect``
        tokens of the walk are pruned. The walk only ever adds sizes, so what it scans is a range of
        the outputs in order and what it prunes is that range's head: both found by bisection. The
        view is the last one patched where the range grew, while the history only grows (the prune
        is a per-call view: the stored history keeps the outputs, and a walk per call went over all
        of them).
        """
        msgs = ctx.messages
        if self.protect_turns > 0:
            if len(index.humans) < self.protect_turns:
                return ctx, 0, 0, 0
            end = index.first[index.humans[-self.protect_turns] + 1]  # outputs the walk reaches
        else:
            end = len(index.at)
        stop = bisect_left(index.marks, end)
        lo = index.marks[stop - 1] + 1 if stop else 0  # the walk stops at the newest pruned output
        cum = index.cum
        total = cum[end] - cum[lo]
        cut = bisect_left(cum, cum[end] - self.prune_protect, lo, end)  # [lo, cut): beyond the protection
        pruned = cum[cut] - cum[lo]
        if pruned <= self.prune_minimum:
            return ctx, total, pruned, 0
        touched = index.distinct[cut - 1] - index.distinct[lo] + 1
        last = index.view
        if last is not None and last[0] == lo and last[1] <= cut:  # the same range, grown at its end
            base, start = last[2], max(lo, last[1] - 1)
        else:
            base, start = None, lo
        n = len(base.messages) if base is not None else len(msgs)
        changes: dict[int, Message] = {}
        added = list(msgs[n:])
        for i in range(index.at[start], index.at[cut - 1] + 1):
            key = frozenset(index.ids[max(lo, index.first[i]):min(cut, index.first[i + 1])])
            if not key:
                continue
            m = msgs[i]
            hit = memo.get(id(m))
            if hit is None or hit[0] is not m or hit[1] != key:
                hit = memo[id(m)] = (m, key, rewrite_results(m, lambda r, ids=key: PRUNE_MARKER
                                                             if r.tool_use_id in ids else None))
            if i < n:
                changes[i] = hit[2]
            else:
                added[i - n] = hit[2]
        if base is None:
            out = list(msgs)
            for i, m in changes.items():
                out[i] = m
            view = ctx.replace(out)
        else:
            view = base.patch(changes, tuple(added))
        index.view = (lo, cut, view)
        return view, total, pruned, touched

    def _view(self, ctx: Context, session: Session) -> tuple[Context, int, int, int]:
        """The pruned view of this exact context, computed once per call (before_call and project)
        on the session's index of the outputs, extended by the new messages."""
        cached = session.state.get("baseagent.view")
        if cached is not None and cached[0] is ctx.messages:
            return cached[1]
        index = session.state.get("baseagent.outputs")
        if index is None or not starts_with(ctx.messages, index.messages):
            index = session.state["baseagent.outputs"] = _Outputs()
        view = self._pruned(ctx, session.state.setdefault("baseagent.pruned", {}), index.extended(ctx.messages))
        session.state["baseagent.view"] = (ctx.messages, view)
        return view

    def project(self, ctx: Context, session: Session) -> Context:
        if not self._over(ctx.estimate, session):
            return ctx
        return self._view(ctx, session)[0]

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        if not self._over(ctx.estimate, session):
            return None
        pruned, scanned, prunable, touched = self._view(ctx, session)
        events: list[Event] = []
        if pruned is not ctx:
            sufficient = not self._over(pruned.estimate, session)
            verdict = "Pruning sufficient" if sufficient else "Pruning insufficient"
            events.append(event("prune", ctx, pruned, touched=touched,
                                detail=f"{verdict}: {ctx.estimate} -> {pruned.estimate} tokens "
                                       f"(scan {scanned}, prunable {prunable})"))
            if sufficient:  # sent as a view (project); the stored history keeps the outputs
                return Outcome(ctx, tuple(events))
        head = pruned.messages[:1] if ctx.system else ()
        summary = session.summarize(pruned.messages[len(head):], prompt=COMPACTION_PROMPT,
                                    max_tokens=self.summary_max_tokens)
        text = SUMMARY_PREFIX + summary.text
        text, request = carry_request(text, ctx.messages, (), lead="\n\nLatest user message:\n")
        after = ctx.replace((*head, text_user(text, summary=True, **request)))
        events.append(event("summarize", pruned, after, touched=len(pruned.messages) - len(head),
                            summary_tokens=summary.output_tokens,
                            detail=f"Compaction result: {ctx.estimate} -> {after.estimate} tokens"))
        return Outcome(after, tuple(events))


@dataclass(eq=False)
class _Outputs:
    """The tool outputs of a history, in order (message, block), indexed once each while the
    history only grows (kept in ``session.state``)."""

    messages: tuple[Message, ...] = ()
    at: list[int] = field(default_factory=list)
    """Per output: its message's index, its tool_use id, and (``distinct``) how many messages
    hold the outputs up to it."""
    ids: list[str] = field(default_factory=list)
    distinct: list[int] = field(default_factory=list)
    cum: list[int] = field(default_factory=lambda: [0])
    """``cum[k]``: the size (len // 4) of the outputs before the k-th."""
    first: list[int] = field(default_factory=lambda: [0])
    """``first[i]``: how many outputs the messages before the i-th hold."""
    humans: list[int] = field(default_factory=list)
    """Indexes of the human turns."""
    marks: list[int] = field(default_factory=list)
    """Positions of the outputs already pruned (the walk stops at one)."""
    view: tuple[int, int, Context] | None = None
    """The last view: the range of outputs it prunes and the view."""

    def extended(self, messages: tuple[Message, ...]) -> _Outputs:
        """This index, extended by the messages after those it holds (``messages`` begin with them)."""
        for i in range(len(self.messages), len(messages)):
            m = messages[i]
            if m.is_human_turn:
                self.humans.append(i)
            new = True
            for r in m.tool_results:
                if r.content == PRUNE_MARKER:
                    self.marks.append(len(self.at))
                self.distinct.append((self.distinct[-1] if self.distinct else 0) + new)
                new = False
                self.at.append(i)
                self.ids.append(r.tool_use_id)
                self.cum.append(self.cum[-1] + len(r.content) // 4)
            self.first.append(len(self.at))
        self.messages = messages
        return self
