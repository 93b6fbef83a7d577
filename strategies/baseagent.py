"""BaseAgent: per-output middle-out truncation, OpenCode-style prune, then a Codex-style summary.

Every tool output is cut to 2,500 tokens when it arrives. Before each call, if the estimate is
over 85% of the usable context (200K − 32K = 168K, i.e. 142,800), old tool outputs are pruned;
only if that is not enough is the history replaced by [system, summary].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.context import Context
from strategies._tools import latest_human, rewrite_results, text_user
from strategies.base import Event, Outcome, Strategy, event
from traces.model import ToolResult

if TYPE_CHECKING:
    from bench.session import Session

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
    """

    name = "baseagent"
    citation = "PlatformNetwork/baseagent src/core/compaction.py @4755e816; docs/context-management.md"
    version = 3

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
        msgs = ctx.messages
        total = pruned = turns = 0
        queued: set[tuple[int, str]] = set()
        walk_stopped = False
        for i in range(len(msgs) - 1, -1, -1):
            m = msgs[i]
            if m.is_human_turn:
                turns += 1
            if turns < self.protect_turns:
                continue
            for b in reversed(m.blocks):
                if not isinstance(b, ToolResult):
                    continue
                if b.content == PRUNE_MARKER:
                    walk_stopped = True
                    break
                size = len(b.content) // 4
                total += size
                if total > self.prune_protect:
                    pruned += size
                    queued.add((i, b.tool_use_id))
            if walk_stopped:
                break
        if pruned <= self.prune_minimum:
            return ctx, total, pruned
        memo = {} if memo is None else memo
        by_message: dict[int, set[str]] = {}
        for i, uid in queued:
            by_message.setdefault(i, set()).add(uid)
        out = list(msgs)
        for i, ids in by_message.items():
            m = msgs[i]
            key = frozenset(ids)
            hit = memo.get(id(m))
            if hit is None or hit[0] is not m or hit[1] != key:
                hit = memo[id(m)] = (m, key, rewrite_results(m, lambda r, ids=key: PRUNE_MARKER
                                                             if r.tool_use_id in ids else None))
            out[i] = hit[2]
        return ctx.replace(out), total, pruned

    def _view(self, ctx: Context, session: Session) -> tuple[Context, int, int]:
        """The pruned view of this exact context, computed once per call (before_call and project)."""
        cached = session.state.get("baseagent.view")
        if cached is not None and cached[0] is ctx.messages:
            return cached[1]
        view = self.prune(ctx, session.state.setdefault("baseagent.pruned", {}))
        session.state["baseagent.view"] = (ctx.messages, view)
        return view

    def project(self, ctx: Context, session: Session) -> Context:
        if not self._over(ctx.estimate, session):
            return ctx
        return self._view(ctx, session)[0]

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        if not self._over(ctx.estimate, session):
            return None
        pruned, scanned, prunable = self._view(ctx, session)
        events: list[Event] = []
        if pruned is not ctx:
            touched = sum(1 for a, b in zip(ctx.messages, pruned.messages, strict=True) if a is not b)
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
        human = latest_human(ctx.messages)
        if human is not None and human.text not in text:
            text += f"\n\nLatest user message:\n{human.text}"
        after = ctx.replace((*head, text_user(text, summary=True)))
        events.append(event("summarize", pruned, after, touched=len(pruned.messages) - len(head),
                            summary_tokens=summary.output_tokens,
                            detail=f"Compaction result: {ctx.estimate} -> {after.estimate} tokens"))
        return Outcome(after, tuple(events))
