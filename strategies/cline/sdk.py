"""The 2026 Cline SDK's summary compaction (``cline:sdk``, spec/strategies.md §2.7): the agentic
compaction and the trigger here, the basic compaction of an overflow in ``sdk_basic``. Source: cline/cline
@21cb8d2525bcedf1f4b6890b27a74a14fe7451e4 sdk/packages/core/src/extensions/context/compaction.ts,
compaction-shared.ts, agentic-compaction.ts (lines in ``ClineSdk``'s docstring).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.context import Context, Message, ModelProfile, Outcome, Strategy, event, starts_with
from strategies._tools import quote_latest_human, rewrite_results, safe_cut, text_user
from strategies.cline._common import READ_TOOLS, _path
from strategies.cline.sdk_basic import BasicCompaction, is_turn_start

if TYPE_CHECKING:
    from bench.context import Session

SDK_PROMPT = (
    "Summarize the conversation above so the work can go on without it. Use these headings: ## Goal; "
    "## State with ### Done, ### In Progress and ### Blocked; ## Highlights; ## Next; ## Files. Keep exact "
    "paths, commands and identifiers. If an earlier context summary is present, fold it in.")
LAST_TURN = "cline_sdk.last_turn"
"""session.state: (messages, index of their latest turn start or -1), for ``ClineSdk.last_turn``."""


def sdk_cut_index(msgs: tuple[Message, ...] | list[Message], preserve: float, est, last_turn: int | None = None) -> int:
    """findCutIndex on Cline's history ``msgs`` (no system message): walk back from the end adding
    each message's estimate and stop *on* the message whose estimate reaches ``preserve`` (it is
    kept); the latest turn start clamps the cut only when its index is above 0; then walk back to a
    safe boundary (an assistant message or a turn start). 0 means nothing to summarize.
    ``last_turn``: the latest turn start's index (0 if none) when the caller knows it."""
    total, candidate = 0, len(msgs)
    for i in range(len(msgs) - 1, -1, -1):
        total += est(msgs[i])
        candidate = i
        if total >= preserve:
            break
    if candidate <= 0:
        return 0
    if last_turn is None:
        last_turn = next((i for i in range(len(msgs) - 1, -1, -1) if is_turn_start(msgs[i])), 0)
    cut = min(candidate, last_turn) if last_turn > 0 else candidate
    # deviation guard: a "turn start" that also carries tool results is not a safe boundary here
    while cut > 0 and (not (msgs[cut].role == "assistant" or is_turn_start(msgs[cut]))
                       or safe_cut(msgs, cut) != cut):
        cut -= 1
    return cut


@dataclass(frozen=True, kw_only=True)
class ClineSdk(BasicCompaction, Strategy):
    """The 2026 Cline SDK's compaction (prepareTurn before every request). Source: cline/cline
    @21cb8d2525bc sdk/packages/core/src/extensions/context/compaction.ts (createContextCompactionPrepareTurn),
    compaction-shared.ts (findCutIndex L331-364, isTurnStartMessage L265, resolveEffectiveMaxInputTokens
    L51), agentic-compaction.ts (runAgenticCompaction L116), basic-compaction.ts (runBasicCompaction
    L452), sdk/packages/shared/src/llms/tokens.ts (CHARS_PER_TOKEN = 3, estimateRequestInputTokens).

    Trigger: the whole request (system prompt + messages + tool schemas, JSON, ceil(chars / 3)) ≥ 90%
    of the max input (the model's max input, else 90% of its window). Auto mode runs the *agentic*
    strategy: everything before the cut is summarized into one "Context summary" user message (an
    earlier summary is folded in, only the messages after it are new), the tail is kept verbatim. The
    cut keeps about ``min(20K, message target)`` tokens: the message crossing that budget is kept, the
    latest typed prompt clamps the cut only when it is not the first message (a single-task session
    with one long tool loop still compacts), and a summary is not a turn start. On an overflow error
    ("overflow_recovery" mode) the deterministic *basic* strategy runs instead, on a target of half
    the message tokens: typed prompts survive, the newest part of the latest turn that fits (from an
    assistant message), older turns' final text answers when they fit; dropped work becomes a
    "<SYSTEM_NOTICE>" of files read / edited / commands run (and the last three assistant texts).

    Deviations: the summary prompt is ours (same headings); the tool schemas are counted as part of
    the system message (our traces carry them there, not as a separate list); basic compaction's
    budget projection (its last-resort trimming of kept messages) is not modelled, and orphaned
    results of a typed message that also carries tool results are stripped; the summary quotes the
    latest human request when it was summarized away (harness contract).
    Version 2: the source's cut walk, the message budget net of the system prompt, basic on overflow.
    Version 3: the summary quotes the latest request that says something (an empty user message
    after it is none: ``latest_human_text``), and basic compaction passes over a user message with
    no content (version 2 crashed reading its first block).
    """

    name = "cline:sdk"
    citation = ("cline/cline @21cb8d2525bcedf1f4b6890b27a74a14fe7451e4 sdk/packages/core/src/extensions/context/"
                "compaction.ts + compaction-shared.ts + agentic-compaction.ts + basic-compaction.ts")
    version = 3

    estimator: str = "json-chars/3"
    trigger_fraction: float = 0.9
    preserve_recent_tokens: int = 20_000
    summary_max_tokens: int = 4_096
    tool_output_max_chars: int = 2_000
    read_tools: tuple[str, ...] = READ_TOOLS
    write_tools: tuple[str, ...] = ("write_to_file", "replace_in_file", "edit_file", "Edit", "Write", "write",
                                    "edit", "MultiEdit", "str_replace_editor", "apply_patch", "editor")
    command_tools: tuple[str, ...] = ("execute_command", "run_commands", "bash", "Bash", "shell", "run_command")

    @staticmethod
    def max_input(model: ModelProfile) -> float:
        if model.max_input:
            return min(model.max_input, model.context_window or model.max_input)
        return 0.9 * model.context_window if model.context_window else 128_000

    def trigger(self, model: ModelProfile) -> float:
        return self.trigger_fraction * self.max_input(model)

    def limits(self, model: ModelProfile, msgs: tuple[Message, ...]) -> tuple[float, float]:
        """(trigger, target) of the whole request in estimated tokens (resolveAutoRequestTargetTokens).
        Counting pairs walks the history: call it only once the trigger has fired; it stops at the
        fifth pair, all the target asks (a session over the trigger asks on every call)."""
        max_input, trigger = self.max_input(model), self.trigger(model)
        pairs, pending = 0, False
        for m in msgs:
            if m.role == "user":
                pending = True
            elif m.role == "assistant" and pending:
                pairs, pending = pairs + 1, False
                if pairs >= 5:
                    break
        target = 0.5 * max_input if pairs >= 5 and model.max_output < max_input else 0.7 * trigger
        return trigger, max(1, min(int(target), max_input, max(1, trigger - 1)))

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        trigger = self.trigger(session.model)
        if ctx.estimate < trigger:
            return None
        overhead = ctx.est(ctx.system) if ctx.system else 0
        target = max(1, int(self.limits(session.model, ctx.messages)[1] - overhead))
        return self.agentic(ctx, session, min(self.preserve_recent_tokens, target))

    def on_overflow(self, ctx: Context, session: Session) -> Outcome | None:
        overhead = ctx.est(ctx.system) if ctx.system else 0
        message_trigger = max(1, int(self.trigger(session.model) - overhead))
        target = max(1, int(min(message_trigger, (ctx.estimate - overhead) * 0.5)))
        return self.basic(ctx, min(target, message_trigger))

    def agentic(self, ctx: Context, session: Session, preserve: float) -> Outcome | None:
        """runAgenticCompaction: summarize Cline's messages before the cut into one summary message."""
        first = 1 if ctx.system else 0
        msgs = ctx.messages
        history = msgs[first:]
        cut = sdk_cut_index(history, preserve, ctx.est, max(self.last_turn(ctx, session) - first, 0))
        if cut <= 0 or cut >= len(history):
            return None
        head = history[:cut]
        last_summary = next((i for i in range(len(head) - 1, -1, -1) if head[i].meta.get("summary")), -1)
        if not head[last_summary + 1:]:
            return None
        clip = self.tool_output_max_chars
        sent = tuple(rewrite_results(m, lambda r: f"{r.content[:clip]}\n...[truncated {len(r.content) - clip} chars]"
                                     if len(r.content) > clip else None) for m in head)
        summary = session.summarize(sent, prompt=SDK_PROMPT, max_tokens=self.summary_max_tokens)
        read, written = session.state.setdefault("cline_sdk.files", ({}, {}))
        for u in (u for m in head for u in m.tool_uses):
            if (path := _path(u)) and u.name in self.read_tools:
                read.setdefault(path, None)
            elif path and u.name in self.write_tools:
                written.setdefault(path, None)
        text = summary.text
        if not re.search(r"^## Files$", text, re.I | re.M):  # ensureFilesSection
            text += (f"\n\n## Files\nRead:\n{_dashes(read)}\nModified:\n{_dashes(written)}")
        text = quote_latest_human(text, msgs, history[cut:])
        message = text_user(f"Context summary:\n\n{text}", summary=True)
        after = ctx.replace((*msgs[:first], message, *history[cut:]))
        return Outcome(after, (event("summarize", ctx, after, touched=cut,
                                     summary_tokens=summary.output_tokens, detail="agentic"),))

    @staticmethod
    def last_turn(ctx: Context, session: Session) -> int:
        """Index in ``ctx.messages`` of the latest turn start, -1 if none. When the messages only grew
        since the last ask, only the new ones are looked at: a session over the trigger whose latest
        turn start is its first message (the cut clamps there, nothing to summarize) asks on every
        call, and the walk back went over the whole history each time."""
        msgs = ctx.messages
        known = session.state.get(LAST_TURN)
        lo, latest = 0, -1
        if known is not None and starts_with(msgs, known[0]):
            lo, latest = len(known[0]), known[1]
        latest = next((i for i in range(len(msgs) - 1, lo - 1, -1) if is_turn_start(msgs[i])), latest)
        session.state[LAST_TURN] = (msgs, latest)
        return latest


def _dashes(paths: dict[str, None]) -> str:
    return "\n".join(f"- {p}" for p in sorted(paths)) or "- none"
