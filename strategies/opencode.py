"""OpenCode: prune old tool outputs, then compact with an LLM summary (spec/strategies.md §1).

Three generations share one class (``generation``): "classic" (2025 – early 2026: prune on, the
summary replaces everything, triggered over ``limit.input`` or ``context − output``), "overflow"
(1.2 – 1.4: session/overflow.ts's trigger, ``limit.input − min(20K, output)`` counted on the whole
``tokens.total``, prune on, and still a summary that replaces everything) and "tail"
(later: prune off, a token-budgeted tail of recent turns is kept verbatim and only the head is
summarized, merged with the prior summary).

Mapping OpenCode's store onto our message list: one OpenCode assistant message holds its tool
parts (call *and* result), so our tool-result-only user messages belong to the assistant message
before them; only human user messages that say something (``is_prompt``) count as turns: an empty
one (a log can hold it between a call and its results) has no OpenCode message of its own. Prune
runs "at the end of each prompt-loop run": here, in ``before_call`` of the step that brings a new
human turn, over the history that existed before that turn arrived.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.context import (
    COUNT,
    FRACTION,
    Context,
    Image,
    Message,
    ModelProfile,
    Outcome,
    Strategy,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Usage,
    event,
)
from strategies._tools import (
    is_prompt,
    latest_human_index,
    new_human_turn,
    quote_latest_human,
    rewrite_results,
    safe_cut,
    text_assistant,
    text_user,
    tool_names,
    waiting_from,
)

if TYPE_CHECKING:
    from bench.context import Session

PRUNED = "[Old tool result content cleared]"
QUESTION = "What did we do so far?"
CONTINUE_CLASSIC = "Continue if you have next steps"
CONTINUE_2026 = ("Continue if you have next steps, or stop and ask for clarification if you are unsure "
                 "how to proceed.")
TRUNCATED = "\n[truncated]"
OVERFLOW_HEADINGS = ("## Goal", "## Instructions", "## Discoveries", "## Accomplished",
                     "## Relevant files / directories")
OVERFLOW_PROMPT = (
    "Summarize our conversation above so that another agent, who will not see it, can carry on the work: "
    "what we did, what we are doing, which files we work on and what comes next. Do not call tools; answer "
    "with the summary only, in the language of the user's messages, following this template:\n"
    + "\n".join(OVERFLOW_HEADINGS))
TAIL_HEADINGS = ("## Objective", "## Important Details", "## Work State", "### Completed", "### Active",
                 "### Blocked", "## Next Move", "## Relevant Files")

CLASSIC_PROMPT = (
    "Write a detailed prompt that would let a fresh session carry on our conversation above: it will "
    "not see this conversation. Cover what we did, what we are doing now, which files we are working "
    "on, and what we are going to do next.")
TAIL_PROMPT = (
    "Here is the conversation so far, as text inside <conversation> tags. Write a summary that lets "
    "the work continue, using exactly this template:\n\n" + "\n".join(TAIL_HEADINGS) + "\n\n"
    "Keep every section and write (none) when one is empty. Use terse bullets. Keep exact paths, "
    "commands and identifiers. Do not mention that a summary or compaction happened.")
PRIOR_PROMPT = (
    "\n\nA summary of the earlier part is in <prior-summary> tags. Update it: carry forward what is "
    "still open, let the conversation win where they conflict, and move finished work to Completed."
    "\n<prior-summary>\n{summary}\n</prior-summary>")


GENERATIONS = ("classic", "overflow", "tail")


def js_round(x: float) -> int:
    """JavaScript's Math.round (half up), which OpenCode's token estimate uses."""
    return math.floor(x + 0.5)


@dataclass(frozen=True, kw_only=True)
class OpenCode(Strategy):
    """OpenCode's prune + compaction. Sources: sst/opencode packages/opencode/src/session/compaction.ts
    (classic: fork snapshots, prune()/isOverflow(); tail: @3df4a255, suffix revision @31e22f65),
    session/overflow.ts @31e22f65, provider/transform.ts @47767a7c (OUTPUT_TOKEN_MAX).

    Trigger on the previous call's usage: classic ``input + cache read + output > usable``
    (usable = limit.input or window − min(max output, 32K)); tail ``total ≥ usable`` with the
    reserve min(20K, max output) also subtracted; overflow (1.2 – 1.4) ``total ≥ usable`` with
    usable = limit.input − min(20K, max output), else context − max output (anomalyco/opencode
    session/overflow.ts @08f74b9b, ``usable`` L8-17, ``isOverflow`` L19-28, ``tokenCount`` L30-32: no
    reserve in the second branch, unlike @31e22f65). The limits are the provider's own from
    models.dev (bench/cost/windows.py's provider rules: github-copilot's Claude Sonnet 4.6 has 128K of
    input, not the model's 1M). Checked on a recorded 1.4.3 session: 105,395 did not compact,
    112,579 did, against 108,000. The overflow generation keeps nothing of the tail: that
    session's first call after is 16,303 tokens, the 14,639 cached system + tools plus the summary
    (1,305 output tokens) and the continue message (medium: one compaction seen). Its summary uses
    the 2026 template (Goal, Instructions, Discoveries, Accomplished, Relevant files), as the
    recorded summary shows. Prune: outside the last two human turns, clear
    outputs older than the newest 40K tokens of output when that frees more than 20K ("skill"
    outputs never; errors are not "completed" parts). Rebuilt: system, "What did we do so far?",
    the summary, [the tail verbatim], "Continue if you have next steps…".

    Deviations: the summary prompts are ours (same content and headings); the tail generation
    sends the serialized head as one text message per OpenCode message rather than one joined
    message; not modelled: the "suffix" mode, the v2 core compactor (§1.7), the optional
    ``autoCompactStalled`` guard, the media paragraph before an overflow's continue message.
    Version 2: the reactive (overflow) path excludes the last user turn and replays it after the
    summary (issue-10 audit of compaction.ts).

    Version 4: a call and its results stay one unit, as in OpenCode, where the result is a part of
    the call's assistant message (processor.ts @9c094ad5, the "tool-result" event completes the
    part in place) and the overflow check runs at the top of the loop on the last *finished*
    assistant message, before the next step (prompt.ts @fe072387, runLoop). So (1) an empty user
    message is no turn (``is_prompt``): it neither triggers prune, nor starts a tail turn, nor is
    the turn the overflow path replays (version 3 replayed from one sitting between a call and its
    results: the results came back without their call); (2) no auto compaction while a call waits
    for its result (a log with an assistant message between a call and its result: version 3
    summarized the call, then the result came back alone); it runs at the next call, once the
    results are in; an overflow meanwhile keeps those calls out of the summary and replays them.
    Both were found by the slow contract suite (``empty_messages``, ``empty_assistant_between``).
    Version 5: nor is an empty user message the request a summary quotes (``latest_human_text``;
    version 4 quoted nothing when one came after the real request).
    """

    name = "opencode"
    citation = ("sst/opencode packages/opencode/src/session/compaction.ts @3df4a25506fb (tail) and classic "
                "fork snapshots; session/overflow.ts @31e22f65e; provider/transform.ts @47767a7c")
    version = 5
    summary_overhead = False
    """The compaction agent has its own system prompt and no tools (strategies.md §1.4): the summary request
    does not carry the agent's fixed overhead. Version 3: billed so."""

    ranges = {"prune_protect": COUNT, "prune_minimum": COUNT, "tail_fraction": FRACTION}
    """PRUNE_PROTECT / PRUNE_MINIMUM are token counts (compaction.ts); the tail is a share of the usable window."""
    tuning = {"prune_protect": (20_000, 30_000, 40_000, 60_000, 80_000)}
    """Around PRUNE_PROTECT's 40,000: the baseagent:long-tasks / complex-tasks presets ship 30,000 and 60,000;
    at 80,000 protected output is 40% of a 200K window, past which pruning frees little."""

    estimator: str = "chars/4"
    generation: str = "classic"
    """"classic" (summary replaces everything), "overflow" (1.2 – 1.4: overflow.ts's trigger, summary
    replaces everything) or "tail" (keep recent turns verbatim)."""
    prune: bool | None = None
    """None: the generation's default (classic and overflow on; tail off: prune became opt-in with
    PR #24127, 2026-04-24, after 1.4.3)."""
    auto: bool = True
    prune_protect: int = 40_000
    prune_minimum: int = 20_000
    protected_tools: tuple[str, ...] = ("skill",)
    protected_turns: int = 2
    output_token_max: int = 32_000
    compaction_buffer: int = 20_000
    tail_fraction: float = 0.25
    tail_min: int = 2_000
    tail_max: int = 15_000
    tool_output_max_chars: int = 2_000

    def __post_init__(self) -> None:
        if self.generation not in GENERATIONS:
            raise ValueError(f"generation must be one of {', '.join(map(repr, GENERATIONS))}, "
                             f"not {self.generation!r}")

    # -- trigger (§1.2) ---------------------------------------------------------------------------
    def max_output(self, model: ModelProfile) -> int:
        return min(model.max_output, self.output_token_max) or self.output_token_max

    def usable(self, model: ModelProfile) -> int:
        if self.generation == "classic":
            return model.max_input or model.context_window - self.max_output(model)
        reserved = min(self.compaction_buffer, self.max_output(model))
        if model.max_input:
            return max(0, model.max_input - reserved)
        if self.generation == "overflow":  # overflow.ts @08f74b9b usable(): no reserve in this branch
            return max(0, model.context_window - self.max_output(model))
        return max(0, model.context_window - self.max_output(model) - reserved)

    def overflowing(self, usage: Usage | None, model: ModelProfile) -> bool:
        if usage is None or not self.auto or model.context_window == 0:
            return False
        if self.generation == "classic":  # cache writes are not counted
            return usage.input_tokens + usage.cache_read_tokens + usage.output_tokens > self.usable(model)
        # overflow.ts tokenCount(): tokens.total, else input + output + cache read + cache write
        return usage.prompt_tokens + usage.output_tokens >= self.usable(model)

    def tail_budget(self, model: ModelProfile) -> int:
        return min(self.tail_max, max(self.tail_min, math.floor(self.usable(model) * self.tail_fraction)))

    # -- hooks ------------------------------------------------------------------------------------
    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        events = []
        new = ctx
        prune_on = self.prune if self.prune is not None else self.generation != "tail"
        human = new_human_turn(ctx.messages, skip_empty=True) if prune_on else -1  # O(step): only a new turn prunes
        if human > 0:
            pruned, touched = self.pruned(ctx, end=human, session=session)
            if touched:
                events.append(event("prune", ctx, pruned, touched=touched))
                new = pruned
        # not while a call waits for its result: its assistant message is not finished (the walk
        # runs only when the check fires)
        if self.overflowing(session.last_usage, session.model) and waiting_from(ctx.messages) == len(ctx):
            compacted = self.compact(new, session)
            if compacted is not None:
                return Outcome(compacted.context, (*events, *compacted.events))
        return Outcome(new, tuple(events)) if events else None

    def on_overflow(self, ctx: Context, session: Session) -> Outcome | None:
        """Reactive (overflow) compaction: the last user turn is left out of the summary and
        replayed after it (in place of the continue message); a session whose only user turn is
        the first message compacts as usual, keeping out calls still waiting for their results
        (replayed after the continue message)."""
        msgs = ctx.messages
        last = latest_human_index(msgs, skip_empty=True)
        replayed = "last user turn"
        if last <= 1:
            last = waiting_from(msgs)
            if last >= len(msgs):
                return self.compact(ctx, session)
            if last <= 1:
                return None  # nothing before the calls in flight to summarize
            replayed = "calls in flight"
        done = self.compact(ctx.replace(msgs[:last]), session)
        if done is None:
            return None
        rebuilt = done.context.messages
        if rebuilt and rebuilt[-1].meta.get("synthetic") and msgs[last].role == "user":
            rebuilt = rebuilt[:-1]  # the replayed user turn takes the continue message's place
        after = ctx.replace((*rebuilt, *msgs[last:]))
        ev = done.events[0]
        return Outcome(after, (event("summarize", ctx, after, touched=ev.messages_touched,
                                     summary_tokens=ev.summary_tokens, detail=f"{ev.detail}: overflow, "
                                     f"{replayed} replayed"),))

    # -- prune (§1.3) -----------------------------------------------------------------------------
    def output_estimate(self, text: str, session: Session) -> int:
        if self.estimator == "truth":
            return session.meter.counter.text(text)
        return js_round(len(text) / 4)

    def pruned(self, ctx: Context, *, end: int, session: Session) -> tuple[Context, int]:
        """Clear outputs older than the newest ``prune_protect`` tokens of them, all or nothing."""
        msgs = ctx.messages
        names = tool_names(msgs)
        turns = total = freed = 0
        queued: set[str] = set()
        for i in range(end - 1, 0, -1):
            m = msgs[i]
            if is_prompt(m):
                turns += 1
            if turns < self.protected_turns:
                continue
            if m.role == "assistant" and m.meta.get("summary"):
                break
            for r in reversed(m.tool_results):
                if r.is_error or names.get(r.tool_use_id) in self.protected_tools:
                    continue  # errors are not "completed" parts; skill outputs are never pruned
                if r.content == PRUNED:
                    break
                size = self.output_estimate(r.content, session)
                total += size
                if total > self.prune_protect:
                    freed += size
                    queued.add(r.tool_use_id)
            else:
                continue
            break  # an already-compacted output: everything older was handled before
        if freed <= self.prune_minimum:
            return ctx, 0
        out = [rewrite_results(m, lambda r: PRUNED if r.tool_use_id in queued else None) for m in msgs]
        touched = sum(1 for a, b in zip(out, msgs, strict=True) if a is not b)
        return ctx.replace(out), touched

    # -- compaction (§1.4, §1.5) ------------------------------------------------------------------
    def compact(self, ctx: Context, session: Session) -> Outcome | None:
        system, rest = ctx.messages[0], ctx.messages[1:]
        if not rest:
            return None
        if self.generation in ("classic", "overflow"):
            prompt = CLASSIC_PROMPT if self.generation == "classic" else OVERFLOW_PROMPT
            summary = session.summarize(rest, prompt=prompt, max_tokens=self.max_output(session.model))
            tail: tuple[Message, ...] = ()
            head_len = len(rest)
        else:
            prior = next((m.text for m in reversed(rest) if m.meta.get("summary")), None)
            considered = tuple(m for m in rest if not (m.meta.get("summary") or m.meta.get("compaction")))
            start = self.tail_start(ctx, considered, self.tail_budget(session.model))
            head, tail = considered[:start], considered[start:]
            if not head:
                return None
            prompt = TAIL_PROMPT + (PRIOR_PROMPT.format(summary=prior) if prior else "")
            summary = session.summarize(self.serialized(head), prompt=prompt,
                                        max_tokens=self.max_output(session.model))
            head_len = len(head)
        cont = CONTINUE_CLASSIC if self.generation == "classic" else CONTINUE_2026
        text = quote_latest_human(summary.text, ctx.messages, tail)  # the harness contract (issue 11)
        rebuilt = (system, text_user(QUESTION, compaction=True), text_assistant(text, summary=True),
                   *tail, text_user(cont, synthetic=True))
        after = ctx.replace(rebuilt)
        return Outcome(after, (event("summarize", ctx, after, touched=head_len,
                                     summary_tokens=summary.output_tokens, detail=self.generation),))

    def tail_start(self, ctx: Context, msgs: tuple[Message, ...], budget: int) -> int:
        """Index where the verbatim tail starts; len(msgs) when there is no tail (nothing kept, or
        everything fits: the spec then summarizes everything)."""
        size = [ctx.meter.counter.estimate(m, "chars/4-json") for m in msgs]
        starts = [i for i, m in enumerate(msgs) if is_prompt(m)]
        if not starts or starts[0] != 0:
            starts.insert(0, 0)
        bounds = list(zip(starts, [*starts[1:], len(msgs)], strict=True))
        remaining, start = budget, len(msgs)
        for lo, hi in reversed(bounds):
            turn = sum(size[lo:hi])
            if turn <= remaining:
                remaining, start = remaining - turn, lo
                continue
            # split the turn: the earliest whole-message suffix (no orphaned result) that fits; the
            # suffix only shrinks as j grows, so safe_cut (O(j)) runs only where the size fits
            suffix = turn - size[lo]
            for j in range(lo + 1, hi):
                if suffix <= remaining and safe_cut(msgs, j) == j:
                    start = j
                    break
                suffix -= size[j]
            break
        return len(msgs) if start == 0 else start

    def serialized(self, head: tuple[Message, ...]) -> tuple[Message, ...]:
        """The head as OpenCode's text transcript, one text message per OpenCode message.

        The real request joins these lines into one user message; keeping one message per turn
        lets a summarizer tell the user's requests apart (same text, +4 tokens per message).
        """
        results = {r.tool_use_id: r for m in head for r in m.tool_results}
        out: list[Message] = []
        for m in head:
            lines: list[str] = []
            for b in m.blocks:
                if isinstance(b, Text) and b.text.strip():
                    lines.append(f"[{'User' if m.role == 'user' else 'Assistant'}]: {b.text}")
                elif isinstance(b, Thinking):
                    lines.append(f"[Assistant reasoning]: {b.text}")
                elif isinstance(b, Image):
                    lines.append(f"[Attached {b.media_type}: image]")
                elif isinstance(b, ToolUse):
                    lines.append(f"[Assistant tool call]: {b.name}({json.dumps(dict(b.input), default=str)})")
                    if (r := results.get(b.id)) is not None:
                        lines.append(f"[Tool {'error' if r.is_error else 'result'}]: {self.clip(r)}")
            if lines:
                out.append(text_user("\n".join(lines)) if m.role == "user" else text_assistant("\n".join(lines)))
        return tuple(out)

    def clip(self, r: ToolResult) -> str:
        text = r.content
        return text if len(text) <= self.tool_output_max_chars else text[: self.tool_output_max_chars] + TRUNCATED
