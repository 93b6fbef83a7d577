"""Tiered placeholders: a cascade that clears what can be re-obtained before summarizing anything.

The seed blog's design (not found in the search corpus; the cascade below is ours, built from
its description): as the context fills, tier 1 (60% of the window) replaces old, large tool
outputs with *actionable* placeholders that say how to get the content back (the tool and its
input to re-run, or the file to read); tier 1.5 (70%) also clears the inputs of old tool calls
and old reasoning; tier 2 (85%) summarizes everything but the recent tail. Outputs of essential
tools (plans, todo lists, memory) are never replaced and survive a summary verbatim.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from bench.context import Context
from strategies._tools import (
    PATH_KEYS,
    file_path,
    is_read_only,
    quote_latest_human,
    rewrite_results,
    rewrite_uses,
    safe_cut,
    text_user,
    tool_inputs,
)
from strategies.base import Event, Outcome, Strategy, event
from traces.model import Message, Text, Thinking, ToolResult, ToolUse

if TYPE_CHECKING:
    from bench.session import Session

CLEARED = "[cleared to save context]"
"""Every placeholder starts with this, so a cleared output is never cleared twice."""
SUMMARY_PROMPT = (
    "Summarize the session so far so the agent can continue from the summary alone: the task and "
    "constraints, decisions, files touched and their state, errors and how they were fixed, and the "
    "next steps. Keep exact paths, commands and error messages."
)


def call_text(use: ToolUse, limit: int = 200) -> str:
    args = use.input_json()
    return f"{use.name} {args if len(args) <= limit else args[:limit] + '…'}"


def placeholder(use: ToolUse | None, content: str) -> str:
    """An actionable placeholder: what was there, and how to get it back."""
    size = f"{len(content.splitlines())} lines, ~{round(len(content) / 4)} tokens"
    if use is None:
        return f"{CLEARED} An old tool output ({size}) was removed."
    path = file_path(use)
    if is_read_only(use):
        how = f"re-run `{call_text(use)}`"
    elif path:
        how = f"read {path} to see its current state"
    else:
        how = f"re-run `{call_text(use)}` if still needed (it may have side effects)"
    return f"{CLEARED} Output of `{use.name}` ({size}) removed. To see it again, {how}."


@dataclass(frozen=True, kw_only=True)
class TieredPlaceholders(Strategy):
    """Tier 1 → 1.5 → 2 at 60 / 70 / 85% of the window (our design from the seed blog's outline).

    Each call, in order, while the estimate is still at or over the tier's share of the window:
    tier 1 replaces every tool output of at least ``min_output_tokens`` outside the newest
    ``keep_recent`` results with a placeholder naming the call to re-run (or the file to read);
    tier 1.5 also clears tool inputs of at least ``min_input_chars`` (path keys kept) and drops
    reasoning (thinking blocks) outside the newest ``keep_recent`` assistant messages; tier 2
    summarizes everything but the last ``tail_messages`` and re-injects the latest output of
    each essential tool verbatim. Calls to ``essential_tools`` are never cleared.
    Thresholds and sizes are our choices, documented here: no agent ships this cascade.
    """

    name = "tiered-placeholders"
    citation = "seed blog 'tiered placeholders' (cascade designed from its description; see module docstring)"

    estimator: str = "chars/4"
    tier1: float = 0.60
    tier1_5: float = 0.70
    tier2: float = 0.85
    keep_recent: int = 3
    min_output_tokens: int = 200
    min_input_chars: int = 400
    tail_messages: int = 6
    summary_max_tokens: int = 8_192
    essential_tools: tuple[str, ...] = (
        "todo_write", "TodoWrite", "todowrite", "update_plan", "memory", "skill", "think",
    )

    def _protected(self, ctx: Context) -> set[str]:
        uses = [b for m in ctx.messages for b in m.blocks if isinstance(b, ToolUse)]
        recent = {u.id for u in uses[max(0, len(uses) - self.keep_recent):]}
        return recent | {u.id for u in uses if u.name in self.essential_tools}

    def tier_1(self, ctx: Context) -> tuple[Context, int]:
        calls, keep = tool_inputs(ctx.messages), self._protected(ctx)

        def clear(r: ToolResult) -> str | None:
            small = round(len(r.content) / 4) < self.min_output_tokens
            if r.tool_use_id in keep or r.content.startswith(CLEARED) or small:
                return None
            return placeholder(calls.get(r.tool_use_id), r.content)

        return self._apply(ctx, lambda m: rewrite_results(m, clear))

    def tier_1_5(self, ctx: Context) -> tuple[Context, int]:
        keep = self._protected(ctx)
        answers = [i for i, m in enumerate(ctx.messages) if m.role == "assistant"]
        recent = set(answers[max(0, len(answers) - self.keep_recent):])

        def clear_input(u: ToolUse) -> dict | None:
            if u.id in keep or len(u.input_json()) < self.min_input_chars:
                return None
            kept = {k: v for k, v in u.input.items() if k in PATH_KEYS}
            return {**kept, "cleared": f"{CLEARED} input of {len(u.input_json())} chars removed"}

        def clear(i_m: tuple[int, Message]) -> Message:
            i, m = i_m
            m = rewrite_uses(m, clear_input)
            if i in recent or not any(isinstance(b, Thinking) for b in m.blocks):
                return m
            blocks = tuple(b for b in m.blocks if not isinstance(b, Thinking))
            return replace(m, blocks=blocks or (Text(f"{CLEARED} reasoning removed"),))

        out = [clear(x) for x in enumerate(ctx.messages)]
        touched = sum(1 for a, b in zip(ctx.messages, out, strict=True) if a is not b)
        return (ctx.replace(out) if touched else ctx), touched

    def _apply(self, ctx: Context, fn) -> tuple[Context, int]:  # type: ignore[no-untyped-def]
        out = [fn(m) for m in ctx.messages]
        touched = sum(1 for a, b in zip(ctx.messages, out, strict=True) if a is not b)
        return (ctx.replace(out) if touched else ctx), touched

    def tier_2(self, ctx: Context, session: Session) -> tuple[Context, int, int]:
        msgs = ctx.messages
        start = 1 if ctx.system else 0
        cut = max(start, safe_cut(msgs, len(msgs) - self.tail_messages))
        old = msgs[start:cut]
        if not old:
            return ctx, 0, 0
        summary = session.summarize(old, prompt=SUMMARY_PROMPT, max_tokens=self.summary_max_tokens)
        calls, latest = tool_inputs(old), {}
        for r in (b for m in old for b in m.blocks if isinstance(b, ToolResult)):
            use = calls.get(r.tool_use_id)
            if use is not None and use.name in self.essential_tools:
                latest[use.name] = r.content
        kept = "".join(f'\n\n<essential tool="{n}">\n{c}\n</essential>' for n, c in latest.items())
        text = quote_latest_human(summary.text + kept, msgs, msgs[cut:])
        after = ctx.replace((*msgs[:start], text_user(text, summary=True), *msgs[cut:]))
        return after, len(old), summary.output_tokens

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        window = session.model.context_window
        events: list[Event] = []
        cur = ctx
        for tier, share in (("1", self.tier1), ("1.5", self.tier1_5)):
            if cur.estimate >= share * window:
                new, touched = self.tier_1(cur) if tier == "1" else self.tier_1_5(cur)
                if touched:
                    events.append(event("prune", cur, new, touched=touched,
                                        detail=f"tier {tier}: estimate {cur.estimate} >= {share:.0%} of {window}"))
                    cur = new
        if cur.estimate >= self.tier2 * window:
            new, touched, spent = self.tier_2(cur, session)
            if touched:
                events.append(event("summarize", cur, new, touched=touched, summary_tokens=spent,
                                    detail=f"tier 2: estimate {cur.estimate} >= {self.tier2:.0%} of {window}"))
                cur = new
        return Outcome(cur, tuple(events)) if events else None
