"""Tiered placeholders: a cascade that clears what can be re-obtained before summarizing anything.

The seed blog's design (not found in the search corpus; the cascade below is ours, built from
its description): as the context fills, tier 1 (60% of the window) replaces old, large tool
outputs with *actionable* placeholders that say how to get the content back (the tool and its
input to re-run, or the file to read); tier 1.5 (70%) also clears the inputs of old tool calls
and old reasoning; tier 2 (85%) summarizes everything but the recent tail. Outputs of essential
tools (plans, todo lists, memory) are never replaced and survive a summary verbatim.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from bench.context import (
    Context,
    Event,
    Message,
    Outcome,
    Strategy,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    event,
    starts_with,
)
from strategies._files import PATH_KEYS, file_path, is_read_only
from strategies._tools import quote_latest_human, rewrite_results, rewrite_uses, safe_cut, text_user, tool_inputs

if TYPE_CHECKING:
    from bench.context import Session

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
    Version 2: a tier-2 summary that replaces the latest request quotes the latest one that says
    something (version 1 took an empty user message after it and quoted nothing).
    """

    name = "tiered-placeholders"
    citation = "seed blog 'tiered placeholders' (cascade designed from its description; see module docstring)"
    version = 2

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

    def _clear_output(self, keep: set[str],
                      call: Callable[[str], ToolUse | None]) -> Callable[[ToolResult], str | None]:
        """Tier 1's rewrite of one tool result (None: left as it is)."""
        def clear(r: ToolResult) -> str | None:
            small = round(len(r.content) / 4) < self.min_output_tokens
            if r.tool_use_id in keep or r.content.startswith(CLEARED) or small:
                return None
            return placeholder(call(r.tool_use_id), r.content)
        return clear

    def _clear_step(self, keep: set[str], recent: set[int]) -> Callable[[int, Message], Message]:
        """Tier 1.5's rewrite of the message at a position: big inputs cleared, old reasoning dropped."""
        def clear_input(u: ToolUse) -> dict | None:
            if u.id in keep or len(u.input_json()) < self.min_input_chars:
                return None
            kept = {k: v for k, v in u.input.items() if k in PATH_KEYS}
            return {**kept, "cleared": f"{CLEARED} input of {len(u.input_json())} chars removed"}

        def clear(i: int, m: Message) -> Message:
            m = rewrite_uses(m, clear_input)
            if i in recent or not any(isinstance(b, Thinking) for b in m.blocks):
                return m
            blocks = tuple(b for b in m.blocks if not isinstance(b, Thinking))
            return replace(m, blocks=blocks or (Text(f"{CLEARED} reasoning removed"),))
        return clear

    def tier_1(self, ctx: Context) -> tuple[Context, int]:
        """Tier 1 from scratch (the definition ``_Tiers.tier_1`` follows incrementally)."""
        clear = self._clear_output(self._protected(ctx), tool_inputs(ctx.messages).get)
        return self._apply(ctx, lambda m: rewrite_results(m, clear))

    def tier_1_5(self, ctx: Context) -> tuple[Context, int]:
        """Tier 1.5 from scratch (the definition ``_Tiers.tier_1_5`` follows incrementally)."""
        answers = [i for i, m in enumerate(ctx.messages) if m.role == "assistant"]
        clear = self._clear_step(self._protected(ctx), set(answers[max(0, len(answers) - self.keep_recent):]))
        out = [clear(i, m) for i, m in enumerate(ctx.messages)]
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
        tiers: _Tiers | None = None
        for tier, share in (("1", self.tier1), ("1.5", self.tier1_5)):
            if cur.estimate >= share * window:
                tiers = tiers or _Tiers.of(self, cur.messages, session.state)
                new, touched = tiers.tier_1(cur) if tier == "1" else tiers.tier_1_5(cur)
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


class _Tiers:
    """Tiers 1 and 1.5 over a growing history, moved by what changed (kept in ``session.state``).

    Both tiers rewrite a message only for what it holds: tier 1 a tool result that is neither
    small nor already cleared, tier 1.5 reasoning or a tool input of ``min_input_chars`` or more.
    So the positions holding such a block (``pending``) are the only ones a tier can touch; after
    a tier ran, what it left there is looked at again, and a position leaves the set once its
    message holds none. What the tiers protect (the newest uses and answers, the essential tools)
    and which call made a result come from running indexes. Anything but the previous output with
    messages appended (a tier-2 summary rewrote the history) rebuilds the index, with the same result.
    """

    def __init__(self, strategy: TieredPlaceholders) -> None:
        self.s = strategy
        self.messages: tuple[Message, ...] = ()
        self.use_ids: list[str] = []
        self.essential: set[str] = set()
        self.last_use: dict[str, int] = {}
        """Tool-use id → position of the last message holding a call with it (``tool_inputs`` keeps the last)."""
        self.answers: list[int] = []
        self.pending_1: set[int] = set()
        self.pending_1_5: set[int] = set()

    @staticmethod
    def of(strategy: TieredPlaceholders, messages: tuple[Message, ...], state: dict) -> _Tiers:
        """The session's index brought up to ``messages`` (rebuilt unless they extend what it indexed)."""
        index: _Tiers | None = state.get("tiers")
        old = index.messages if index is not None else ()
        if index is None or index.s != strategy or not starts_with(messages, old):
            index = state["tiers"] = _Tiers(strategy)
        for k in range(len(index.messages), len(messages)):
            m = messages[k]
            for u in m.tool_uses:
                index.use_ids.append(u.id)
                index.last_use[u.id] = k
                if u.name in strategy.essential_tools:
                    index.essential.add(u.id)
            if m.role == "assistant":
                index.answers.append(k)
            index._settle(k, m)
        index.messages = messages
        return index

    def _settle(self, k: int, m: Message) -> None:
        """Whether position ``k`` (holding ``m``) has anything left that a tier may clear. A block of an
        essential call never is: the set of essential ids only grows while the index lives."""
        s, essential = self.s, self.essential
        if any(r.tool_use_id not in essential and not r.content.startswith(CLEARED)
               and round(len(r.content) / 4) >= s.min_output_tokens for r in m.tool_results):
            self.pending_1.add(k)
        else:
            self.pending_1.discard(k)
        if any(isinstance(b, Thinking) for b in m.blocks) or any(
                u.id not in essential and len(u.input_json()) >= s.min_input_chars for u in m.tool_uses):
            self.pending_1_5.add(k)
        else:
            self.pending_1_5.discard(k)

    def _protected(self) -> set[str]:
        """``TieredPlaceholders._protected`` of the indexed history."""
        return {*self.use_ids[max(0, len(self.use_ids) - self.s.keep_recent):], *self.essential}

    def _call(self, tool_use_id: str) -> ToolUse | None:
        """``tool_inputs(messages).get(tool_use_id)``: the last call with that id, as it is now."""
        k = self.last_use.get(tool_use_id)
        if k is None:
            return None
        return next(u for u in reversed(self.messages[k].tool_uses) if u.id == tool_use_id)

    def _run(self, ctx: Context, pending: set[int], rewrite: Callable[[int, Message], Message]) -> tuple[Context, int]:
        """Rewrite the pending positions of ``ctx`` (the indexed history); the index follows the result."""
        msgs = ctx.messages
        changed: dict[int, Message] = {}
        for k in sorted(pending):
            new = rewrite(k, msgs[k])
            if new is not msgs[k]:
                changed[k] = new
        if not changed:
            return ctx, 0
        after = ctx.patch(changed)
        self.messages = after.messages
        for k, new in changed.items():
            self._settle(k, new)
        return after, len(changed)

    def tier_1(self, ctx: Context) -> tuple[Context, int]:
        clear = self.s._clear_output(self._protected(), self._call)
        return self._run(ctx, self.pending_1, lambda k, m: rewrite_results(m, clear))

    def tier_1_5(self, ctx: Context) -> tuple[Context, int]:
        recent = set(self.answers[max(0, len(self.answers) - self.s.keep_recent):])
        return self._run(ctx, self.pending_1_5, self.s._clear_step(self._protected(), recent))
