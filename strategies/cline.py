"""Cline: drop a growing middle range of the history, after removing duplicate file reads
(spec/strategies.md §2.2-2.4), and the 2026 SDK's summary compaction (§2.7).

Cline's history has no system message, so Cline index i is our index i + 1: the first user /
assistant pair (Cline 0 and 1) is ours 1 and 2, and the deleted range always starts at Cline 2.
The context holds what Cline sends (the range already applied), so each truncation computes the
next range on what is left, which is the same arithmetic as Cline's over the full history.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from bench.context import (
    PATH_KEYS,
    SHARE,
    Context,
    Event,
    Image,
    Message,
    ModelProfile,
    Outcome,
    Strategy,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    event,
    render,
    starts_with,
)
from strategies._tools import (
    last_human_index,
    quote_latest_human,
    rewrite_results,
    safe_cut,
    text_user,
    tool_inputs,
    without_orphan_results,
)

if TYPE_CHECKING:
    from bench.context import Session

TRUNCATION_NOTICE = (
    "[NOTE] Some previous conversation history with the user has been removed to maintain optimal context "
    "window length. The initial user task has been retained for continuity, while intermediate conversation "
    "history has been removed. Keep this in mind as you continue assisting the user. Pay special attention to "
    "the user's latest messages.")
READ_NOTICE = ("[[NOTE] This file read has been removed to save space in the context window. Refer to the "
               "latest file read for the most up to date version of this file.]")
CONTINUE_NOTICE = "[Continue assisting the user!]"
RESULT_MISSING = "result missing"
HEADER = re.compile(r"^\[(\w+) for '([^']*)'\] Result:")
FINAL_CONTENT = re.compile(r'(<final_file_content path="([^"]*)">)(.*?)(</final_file_content>)', re.S)
READ_TOOLS = ("read_file", "Read", "read", "view", "view_file")
MENTION = re.compile(r'(<file_content path="([^"]*)">)(.*?)(</file_content>)', re.S)


def max_allowed_size(window: int) -> int:
    """getContextWindowInfo: exact-match buffers for 64K / 128K / 200K windows, else the larger of
    window - 40K and 80% of the window (the 400K Codex-OAuth case needs a provider we do not model)."""
    window = window or 128_000
    buffers = {64_000: 27_000, 128_000: 30_000, 200_000: 40_000}
    return window - buffers[window] if window in buffers else max(window - 40_000, int(window * 0.8))


def removal_count(remaining: int, keep: str) -> int:
    """getNextTruncationRange's messagesToRemove for ``remaining`` messages after the range."""
    counts = {"none": remaining, "lastTwo": max(remaining - 2, 0), "half": remaining // 4 * 2,
              "quarter": int(remaining * 3 / 4 / 2) * 2}
    return max(counts[keep], 0)


def _path(use: ToolUse | None) -> str | None:
    if use is None:
        return None
    return next((v for k in PATH_KEYS if isinstance(v := use.input.get(k), str) and v), None)


@dataclass(frozen=True, kw_only=True)
class Cline(Strategy):
    """Cline's default context management: file-read dedup, then middle-out truncation keeping ½
    (or ¼) of the messages after the first pair. Source: cline/cline @94f5a47a59d4
    apps/vscode/src/core/context/context-management/ContextManager.ts, context-window-utils.ts,
    core/prompts/responses.ts (same logic at @9ee61811 src/core/context/context-management/).

    Trigger: the previous request's usage (tokensIn + tokensOut + cache writes + reads) ≥
    maxAllowedSize, so the decision comes one call late; "quarter" when usage / 2 > budget and
    always on an overflow error (which skips the dedup and also puts "[Continue assisting the
    user!]" into the first user message). The range is inclusive, starts at Cline index 2 and
    only grows; the notice goes into the first assistant message once.

    Deviations: (1) the latest human request is kept (its text, after the first pair) when the
    range would delete it, and the overflow path never overwrites it when it is the first user
    message (harness contract); (2) dedup looks at every tool_result block of a user message, not
    only block 0 (our traces batch parallel calls in one message), and every text block among
    blocks 0-2 for @-mentions; (3) a message left empty by removing orphaned results is not sent
    (Cline would keep an empty one), so a later range counts one message fewer; (4) not modelled:
    the 400K Codex-OAuth budget (no provider in our profiles) and the auto-condense path
    (``useAutoCondense`` defaults to false). Version 2: the message after the cut keeps its
    non-result blocks (Cline strips only the orphaned tool_result blocks). Version 3: the notices
    only replace a text block 0; a first message opening with a tool call (or thinking) is left
    without one, as in Cline (it no longer gets a text block inserted). Version 4: the dedup
    savings share divides by text, tool-result and image characters only, and only block 0 of
    each user message (calculateContextOptimizationMetrics), not the whole rendered history.
    Version 5: the latest request deviation (1) skips an empty user message (a log can hold one;
    Cline sends none: the API refuses it), which version 4 kept instead of the real request.
    """

    name = "cline"
    citation = ("cline/cline @94f5a47a59d4de809463911aad9b9672ab1cbbbf apps/vscode/src/core/context/"
                "context-management/ContextManager.ts + context-window-utils.ts + core/prompts/responses.ts")
    version = 5

    ranges = {"dedup_threshold": SHARE}
    """The share of characters a deduplication must save (0: any saving)."""

    estimator: str = "truth"
    """Cline decides on the provider-reported usage of the previous request, not a local estimate."""
    keep: str = "half"
    """The usual mode; "quarter" is also chosen when usage / 2 exceeds the budget and on overflow."""
    dedup_threshold: float = 0.30
    read_tools: tuple[str, ...] = READ_TOOLS

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        usage = session.last_usage
        if usage is None:
            return None
        total = usage.prompt_tokens + usage.output_tokens  # tokensIn + tokensOut + cache writes + reads
        budget = max_allowed_size(session.model.context_window)
        if total < budget:
            return None
        keep = "quarter" if total / 2 > budget else self.keep
        deduped, touched, saved = self.deduplicated(ctx.messages)
        events: list[Event] = []
        new = ctx
        if touched:
            new = ctx.replace(deduped)
            events.append(event("dedup", ctx, new, touched=touched, detail=f"{saved:.0%} of chars"))
            if saved >= self.dedup_threshold:
                return Outcome(new, tuple(events))
        return self.truncated(new, session, keep, tuple(events))

    def on_overflow(self, ctx: Context, session: Session) -> Outcome | None:
        return self.truncated(ctx, session, "quarter", (), overflow=True)

    def truncated(self, ctx: Context, session: Session, keep: str, events: tuple[Event, ...],
                  *, overflow: bool = False) -> Outcome | None:
        msgs = ctx.messages
        start = 3  # Cline index 2
        end = start + removal_count(len(msgs) - start, keep) - 1  # inclusive, as in Cline
        if end < len(msgs) and end >= start and msgs[end].role != "assistant":
            end -= 1
        if end < start:
            return Outcome(ctx, events) if events else None
        cut = end + 1
        # Cline's cut: the range ends on an assistant message; results of its calls leave what follows
        kept = without_orphan_results((*msgs[:start], *msgs[cut:]), msgs[start:cut])
        human = last_human_index(msgs, skip_empty=True)  # an empty user message is no request
        if start <= human < cut:  # deviation: keep the latest human request (contract invariant 2)
            text = tuple(b for b in msgs[human].blocks if not isinstance(b, ToolResult))
            kept.insert(start, replace(msgs[human], blocks=text))
        kept = self.paired(kept)
        if msgs[2].role == "assistant" and not session.state.get("cline.notice"):
            kept[2] = _with_first_text(kept[2], TRUNCATION_NOTICE)
            session.state["cline.notice"] = True
        if overflow and msgs[1].is_human_turn and human != 1:  # deviation: never the latest request
            kept[1] = _with_first_text(kept[1], CONTINUE_NOTICE)
        previous = session.state.get("cline.range", (2, 1))
        session.state["cline.range"] = (2, previous[1] + cut - start)  # Cline's end, never widened
        after = ctx.replace(kept)
        detail = f"{keep}: range {session.state['cline.range']}"
        return Outcome(after, (*events, event("drop", ctx, after, touched=cut - start + 1, detail=detail)))

    @staticmethod
    def paired(msgs: list[Message]) -> list[Message]:
        """Cline's tool pairing repair for the first assistant message: its calls whose results were
        removed get a ``result missing`` result in the next user message."""
        answered = {r.tool_use_id for m in msgs for r in m.tool_results}
        missing = tuple(ToolResult(u.id, RESULT_MISSING) for u in msgs[2].tool_uses if u.id not in answered)
        if not missing or msgs[2].role != "assistant":
            return msgs
        if len(msgs) > 3 and msgs[3].role == "user":
            msgs[3] = replace(msgs[3], blocks=(*missing, *msgs[3].blocks))
        else:
            msgs.insert(3, Message("user", missing))
        return msgs

    def deduplicated(self, msgs: tuple[Message, ...]) -> tuple[tuple[Message, ...], int, float]:
        """Replace every read of a file but the newest with Cline's notice (§2.4).

        Returns the messages, how many were rewritten, and the share of characters saved.
        """
        uses = tool_inputs(msgs)
        reads: dict[str, list[tuple[int, int]]] = {}  # path -> (message, block) in order
        for i in range(3, len(msgs)):
            m = msgs[i]
            if m.role != "user":
                continue
            for bi, b in enumerate(m.blocks):
                found: list[str] = []
                if isinstance(b, ToolResult):
                    u = uses.get(b.tool_use_id)
                    if u is not None and u.name in self.read_tools and (path := _path(u)):
                        found = [path]
                    else:
                        found = [p for _, p, _, _ in FINAL_CONTENT.findall(b.content)]
                elif isinstance(b, Text) and bi < 3:
                    found = [p for _, p, _, _ in MENTION.findall(b.text)]
                for path in dict.fromkeys(found):
                    reads.setdefault(path, []).append((i, bi))
        stale: dict[tuple[int, int], set[str]] = {}
        for path, where in reads.items():
            for key in where[:-1]:
                stale.setdefault(key, set()).add(path)
        if not stale:
            return msgs, 0, 0.0
        out = list(msgs)
        for i in sorted({i for i, _ in stale}):
            blocks = list(out[i].blocks)
            for bi in sorted(bi for j, bi in stale if j == i):
                blocks[bi] = self._notice_block(blocks[bi], stale[(i, bi)], uses)
            out[i] = replace(out[i], blocks=tuple(blocks))
        total = sum(_counted_chars(m) for m in msgs[1:])
        saved = sum(_counted_chars(a, every_block=True) - _counted_chars(b, every_block=True)
                    for a, b in zip(msgs, out, strict=True) if a is not b)
        touched = sum(1 for a, b in zip(msgs, out, strict=True) if render(a) != render(b))
        return tuple(out), touched, saved / total if total else 0.0

    def _notice_block(self, b: object, paths: set[str], uses: dict[str, ToolUse]) -> object:
        def inner(match: re.Match[str]) -> str:
            return f"{match[1]} {READ_NOTICE} {match[4]}" if match[2] in paths else match[0]

        if isinstance(b, Text):
            return replace(b, text=MENTION.sub(lambda m: m[1] + READ_NOTICE + m[4] if m[2] in paths else m[0], b.text))
        assert isinstance(b, ToolResult)
        u = uses.get(b.tool_use_id)
        if u is not None and u.name in self.read_tools:
            header = HEADER.match(b.content)
            return replace(b, content=f"{header[0]}\n{READ_NOTICE}" if header else READ_NOTICE)
        return replace(b, content=FINAL_CONTENT.sub(inner, b.content))


def _counted_chars(m: Message, *, every_block: bool = False) -> int:
    """calculateContextOptimizationMetrics' character count: text, tool-result and image
    characters only, and of a user message only content block 0 (ContextManager.ts). The savings
    side counts every rewritten block (our deviation 2 rewrites results beyond block 0)."""
    blocks = m.blocks if every_block or m.role != "user" else m.blocks[:1]
    n = 0
    for b in blocks:
        if isinstance(b, Text):
            n += len(b.text)
        elif isinstance(b, ToolResult):
            n += len(b.content)
        elif isinstance(b, Image):
            n += math.ceil(b.size_bytes * 4 / 3)  # the base64 data Cline measures
    return n


def _with_first_text(m: Message, text: str) -> Message:
    """Cline's edit of content block 0: its text is replaced only when block 0 is a non-empty text
    block (``applyContextHistoryUpdates`` skips any other block type, and the first-user-message
    replacement needs some text); a message opening with a tool call or thinking stays as is."""
    if m.blocks and isinstance(m.blocks[0], Text) and m.blocks[0].text:
        return replace(m, blocks=(Text(text), *m.blocks[1:]))
    return m


SDK_PROMPT = (
    "Summarize the conversation above so the work can go on without it. Use these headings: ## Goal; "
    "## State with ### Done, ### In Progress and ### Blocked; ## Highlights; ## Next; ## Files. Keep exact "
    "paths, commands and identifiers. If an earlier context summary is present, fold it in.")
PRESERVED = "cline_sdk.preserved"
"""Meta flag of a message basic compaction kept (Cline's ``compaction: preserved`` marker): frozen afterwards."""
PRESERVED_ASSISTANT_TEXTS = 3
LAST_TURN = "cline_sdk.last_turn"
"""session.state: (messages, index of their latest turn start or -1), for ``ClineSdk.last_turn``."""
COMMAND_KEYS = ("command", "cmd", "commands")


def is_turn_start(m: Message) -> bool:
    """isTurnStartMessage: a user message that is neither tool results only nor a compaction summary."""
    return m.is_human_turn and not m.meta.get("summary")


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
class ClineSdk(Strategy):
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

    def basic(self, ctx: Context, target: float) -> Outcome | None:
        """runBasicCompaction (the overflow_recovery path): keep typed prompts, the newest messages of
        the latest turn that fit and older turns' final answers; fold dropped work into notices."""
        first = 1 if ctx.system else 0
        msgs = ctx.messages
        h = msgs[first:]
        if len(h) < 2:
            return None
        typed = [i for i, m in enumerate(h) if is_turn_start(m) and m.blocks  # an empty message types nothing
                 and (m.text.strip() or len(m.blocks) > 1 or not isinstance(m.blocks[0], Text))]
        if not typed:
            return None
        latest = typed[-1]
        total = sum(ctx.est(h[i]) for i in typed)
        frozen = {i for i, m in enumerate(h) if m.meta.get(PRESERVED) and i not in typed}
        total += sum(ctx.est(h[i]) for i in frozen)
        start, acc = len(h), 0
        for i in range(len(h) - 1, latest, -1):
            if i in frozen:
                break
            cost = ctx.est(h[i])
            if total + acc + cost > target:
                break
            acc, start = acc + cost, i
        while start < len(h) and h[start].role != "assistant":
            start += 1
        extra = set(range(start, len(h)))
        total += sum(ctx.est(h[i]) for i in extra)
        finals: dict[int, Message] = {}
        for b in range(len(typed) - 2, -1, -1):
            for i in range(typed[b + 1] - 1, typed[b], -1):
                if i in frozen:
                    break
                m = h[i]
                if m.role != "assistant" or m.tool_uses:
                    continue
                kept_blocks = tuple(x for x in m.blocks if not isinstance(x, Thinking))
                if any(isinstance(x, Text) and x.text.strip() for x in kept_blocks):
                    final = replace(m, blocks=kept_blocks)
                    if total + ctx.est(final) <= target:
                        finals[i] = final
                        total += ctx.est(final)
                break
        kept: list[tuple[int, Message]] = []
        for i, m in enumerate(h):
            if i in typed or i in frozen or i in extra:
                kept.append((i, m))
            elif i in finals:
                kept.append((i, finals[i]))
        merged = self._merged(kept, h)
        if [id(m) for m in merged] == [id(m) for m in h]:
            return None
        marked = [m if is_turn_start(m) or m.meta.get(PRESERVED) else replace(m, meta={**m.meta, PRESERVED: True})
                  for m in merged]
        kept_at = {j for j, _ in kept}  # once: a set built per message made basic O(history²)
        dropped = [m for i, m in enumerate(h) if i not in kept_at]
        out = without_orphan_results((*msgs[:first], *marked), dropped)
        after = ctx.replace(out)
        return Outcome(after, (event("drop", ctx, after, touched=len(h) - len(merged), detail="basic"),))

    def _merged(self, kept: list[tuple[int, Message]], h: tuple[Message, ...]) -> list[Message]:
        """mergeAdjacentUserTurns: runs of typed prompts become one message with the dropped work
        between them as a notice; work dropped after a typed prompt is appended to it."""
        texts = [i for i in range(len(h) - 1, -1, -1) if h[i].role == "assistant" and h[i].text.strip()]
        recent = set(texts[:PRESERVED_ASSISTANT_TEXTS])
        out: list[tuple[int, int, Message, bool]] = []  # first, last original index, message, typed
        k = 0
        while k < len(kept):
            i, m = kept[k]
            if not is_turn_start(m):
                out.append((i, i, m, False))
                k += 1
                continue
            blocks = list(m.blocks)
            end = k
            while end + 1 < len(kept) and is_turn_start(kept[end + 1][1]):
                prev, cur = kept[end][0], kept[end + 1][0]
                if cur > prev + 1 and (notice := self._notice(h[prev + 1:cur], prev + 1, recent, h)):
                    blocks.append(notice)
                blocks.extend(kept[end + 1][1].blocks)
                end += 1
            out.append((i, kept[end][0], replace(m, blocks=tuple(blocks)) if end > k else m, True))
            k = end + 1
        result: list[Message] = []
        for n, (_, last, m, is_typed) in enumerate(out):
            gap_end = out[n + 1][0] if n + 1 < len(out) else len(h)
            if is_typed and gap_end > last + 1 and (notice := self._notice(h[last + 1:gap_end], last + 1, recent, h)):
                m = replace(m, blocks=(*m.blocks, notice))
            result.append(m)
        return result

    def _notice(self, span: tuple[Message, ...], offset: int, recent: set[int], h: tuple[Message, ...]) -> Text | None:
        """buildDroppedWorkSummaryBlock over summarizeToolActivity of the dropped span."""
        read: dict[str, None] = {}
        edited: dict[str, None] = {}
        commands: dict[str, None] = {}
        for u in (u for m in span for u in m.tool_uses):
            path = _path(u)
            if path and u.name in self.read_tools:
                read.setdefault(path, None)
            elif path and u.name in self.write_tools:
                edited.setdefault(path, None)
            elif u.name in self.command_tools:
                cmd = next((v for k in COMMAND_KEYS if isinstance(v := u.input.get(k), str) and v), None)
                if cmd:
                    commands.setdefault(cmd, None)
        responses = [h[offset + j].text.strip() for j in range(len(span)) if offset + j in recent]
        if not (read or edited or commands or responses):
            return None
        body = (f"Files read:\n{chr(10).join(read)}\n\nFiles edited:\n{chr(10).join(edited)}\n\n"
                f"Commands ran:\n{chr(10).join(commands)}")
        if responses:
            body += "\n\nYour recent responses:\n" + "\n---\n".join(responses)
        return Text("<SYSTEM_NOTICE>\nEarlier context was compacted. Summary of your actions after the request "
                    f"above:\n{body}</SYSTEM_NOTICE>")


def _dashes(paths: dict[str, None]) -> str:
    return "\n".join(f"- {p}" for p in sorted(paths)) or "- none"
