"""The registered OpenCode strategy: options, hooks and the compaction itself (see the package)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.context import COUNT, FRACTION, Context, Message, Outcome, Strategy, event
from strategies._tools import (
    latest_human_index,
    new_human_turn,
    quote_latest_human,
    text_assistant,
    text_user,
    waiting_from,
)
from strategies.opencode.common import (
    CLASSIC_PROMPT,
    CONTINUE_2026,
    CONTINUE_CLASSIC,
    GENERATIONS,
    OVERFLOW_PROMPT,
    PRIOR_PROMPT,
    QUESTION,
    TAIL_PROMPT,
)
from strategies.opencode.prune import Prune
from strategies.opencode.tail import TailCompaction
from strategies.opencode.trigger import OpenCodeTrigger

if TYPE_CHECKING:
    from bench.context import Session


@dataclass(frozen=True, kw_only=True)
class OpenCode(OpenCodeTrigger, Prune, TailCompaction, Strategy):
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
    Version 6 (issue 27): an overflow compaction replays the last user *message*, not its turn.
    compaction.ts @3df4a255 ``processCompaction``, the ``input.overflow`` branch: ``replay`` holds that
    message's info and parts and ``messages`` is cut before it, and the replay is a new user message
    with those parts, after the summary; the turn's assistant messages (calls, results) stay where
    they were, before the compaction message, and message-v2.ts ``filterCompacted`` stops at the
    compaction message unless its ``tail_start_id`` reaches back further. So with no tail kept
    (classic and 1.4 always, tail when no turn fits the budget) the model sees system, question,
    summary and the request; version 5 replayed the whole turn, whose outputs had overflowed the
    window, so the next call overflowed again (``make bench`` logs: 267K → 262K, then a second
    compaction). With a tail, the turn stays in it (filterCompacted keeps tail … compaction message),
    as here; the duplicate of the request OpenCode appends after the summary is not added. A call
    still waiting for its result (a log artifact) keeps the whole turn, as before.
    """

    name = "opencode"
    citation = ("sst/opencode packages/opencode/src/session/compaction.ts @3df4a25506fb (tail) and classic "
                "fork snapshots; session/overflow.ts @31e22f65e; provider/transform.ts @47767a7c")
    version = 6
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
        replay = msgs[last:]
        kept_tail = len(rebuilt) > 3  # system, question, summary, [tail]
        if replayed == "last user turn" and not kept_tail and waiting_from(msgs) == len(msgs):
            # only the request is replayed: the turn's calls and results are older than the
            # compaction message and no tail reaches back to them (version 6)
            replay = msgs[last:last + 1]
            replayed = "last user message"
        after = ctx.replace((*rebuilt, *replay))
        ev = done.events[0]
        return Outcome(after, (event("summarize", ctx, after, touched=ev.messages_touched,
                                     summary_tokens=ev.summary_tokens, detail=f"{ev.detail}: overflow, "
                                     f"{replayed} replayed"),))

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
