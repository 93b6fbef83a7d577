"""Codex CLI: local compaction to recent user messages + a summary (spec/strategies.md §3).

At 90% of the window (2026; a flat 256K in mid-2025) the whole history is summarized, and the new
history is the initial context, the newest user messages within 20K tokens (bytes/4) and one user
message holding the summary behind Codex's "another language model" prefix. Every assistant
message, tool call and tool output is gone. Tool outputs are cut at record time (§3.5).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from bench.context import (
    CUT_LATEST_HUMAN,
    FRACTION,
    Context,
    Event,
    Message,
    Outcome,
    Range,
    Strategy,
    Text,
    ToolResult,
    event,
)
from strategies._tools import drop_range, last_assistant_index, rewrite_results, text_user

if TYPE_CHECKING:
    from bench.context import Session

SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its thinking process. "
    "You also have access to the state of the tools that were used by that language model. Use this to build "
    "on the work that has already been done and avoid duplicating work. Here is the summary produced by the "
    "other language model, use the information in this summary to  assist with your own analysis:")
COMPACT_PROMPT = (
    "CONTEXT CHECKPOINT COMPACTION. Write a handoff summary for another model that will pick this task up "
    "without seeing the conversation. Include: the user's goal; progress so far and key decisions; important "
    "context, constraints and preferences; what remains to be done (next steps); critical data, examples and "
    "references. Be concise and structured.")
BRIDGE_LEAD = ("You were originally given instructions from a user over one or more turns. "
               "Here were the user messages:")
SESSION_PREFIXES = ("# AGENTS.md instructions", "<environment_context>", "<user_instructions>")


def approx_tokens(text: str) -> int:
    """Codex's approx_token_count: ceil(bytes / 4)."""
    return math.ceil(len(text.encode("utf-8")) / 4)


def middle_truncate(text: str, max_bytes: int, unit: str = "tokens") -> str:
    """Keep the head and tail halves of ``text`` around Codex's marker, all within ``max_bytes``.

    The marker's own bytes come out of the budget; its count is settled in a second pass.
    """
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    label, marker, head, tail = ("tokens" if unit == "tokens" else "chars"), "", "", ""
    for _ in range(2):
        keep = max(0, max_bytes - len(marker.encode("utf-8")))
        head = data[: keep // 2].decode("utf-8", "ignore")
        tail = data[len(data) - (keep - keep // 2):].decode("utf-8", "ignore") if keep else ""
        removed = text[len(head): len(text) - len(tail)]
        marker = f"…{approx_tokens(removed) if unit == 'tokens' else len(removed)} {label} truncated…"
    return head + marker + tail


@dataclass(frozen=True, kw_only=True)
class Codex(Strategy):
    """Codex CLI local compaction. Source: openai/codex @0100b103625752f6a10c21b79a8c423761dc4c6a
    codex-rs/core/src/compact.rs (build_compacted_history, COMPACT_USER_MESSAGE_MAX_TOKENS),
    core/templates/compact/summary_prefix.md @50a53333, protocol/src/openai_models.rs
    (auto_compact_token_limit: 90% of the window), core/models.json @21dac7d7 (truncation_policy).

    Trigger (0.63+; context_manager/history.rs @023fad268e08c252b94e4a95cb3c7f2f08c2a972
    ``get_total_token_usage``): last response's total tokens + bytes/4 of the items recorded after
    the last model item + Codex's estimate of the encrypted reasoning before the last user turn
    (``total``) ≥ 90% of the *raw* window (``raw_window``: a recorded ``model_context_window`` is
    raw × 95%; ``codex:2025`` = the flat 256,000 of mid-2025, without the reasoning term of PR
    #7113). Checked once before each call, as Codex does: before a turn (``run_pre_sampling_compact``,
    before the turn's input is recorded) and after each sampling request that needs a follow-up
    (session/turn.rs ``run_turn``: ``token_limit_reached && needs_follow_up``). Rebuilt (late
    2025): system (the initial context), the newest user messages within 20,000 tokens (the walk
    stops at the first that does not fit, middle-truncated), then one user message
    ``SUMMARY_PREFIX + "\n" + summary``; a pre-turn compaction puts the new turn's input after it.
    A compaction request over the window drops its oldest item (with its pair) and retries.

    Deviations: the compaction prompt is ours (same bullets); remote compaction is
    ``engine="remote"`` (``codex:remote``, ``codex:0.125-remote``, ``codex:0.140-remote``; see
    ``remote_compact``); a turn that ends without a follow-up is checked at the next turn's first
    call, which is where Codex checks it too; not modelled: the 2026 local
    ``InitialContextInjection`` placement, ghost snapshots, the full-window cap of the
    ``BodyAfterPrefix`` scope (the default ``Total`` scope has none; the effective window is the
    replay's input limit), a server that reports reasoning as included (``X-Reasoning-Included``:
    then Codex adds no reasoning estimate; none of the recorded rollouts shows it), and the 2025
    "memento" summary prompt (``codex:2025`` uses today's). ``codex:2025`` is the Sept–Oct 2025
    generation: the flat 256K limit and the single "history bridge" user message (user messages
    joined by blank lines, or "(none)", then the prefixed summary). Version 3: the tool-output
    truncation unit follows the model (bytes unless *-codex). Version 4: it follows the id the
    session used (``session.model.id`` keeps an alias such as gpt-5.1-codex). Version 5 (issue 24):
    the raw-window limit, the old-reasoning term, the pre-turn check, gpt-5.4+ truncated in tokens.
    """

    name = "codex"
    citation = ("openai/codex @0100b103625752f6a10c21b79a8c423761dc4c6a codex-rs/core/src/compact.rs; "
                "templates/compact/summary_prefix.md @50a53333; protocol/src/openai_models.rs; models.json @21dac7d7")
    version = 5

    ranges = {"limit_fraction": FRACTION, "effective_window_percent": Range(0, 100, lo_open=True)}
    """A share of the window; effective_context_window_percent is a percent (ModelInfo, openai_models.rs)."""
    tuning = {"limit_fraction": (0.5, 0.6, 0.7, 0.8, 0.9)}
    """Up to 0.9, Codex's own limit and the most a configured one gets (see limit_fraction); below half the
    window a compacted history (summary + 20,000 tokens of user messages) re-crosses it within a few calls."""

    estimator: str = "bytes/4"
    limit_fraction: float | None = 0.9
    """auto_compact_token_limit as a share of the *raw* window (2026: min(configured, 90%))."""
    auto_compact_limit: int | None = None
    """A configured limit in tokens; mid-2025 Codex used a flat 256,000 for every model."""
    effective_window_percent: int = 95
    """effective_context_window_percent (ModelInfo default 95): the rollout's ``model_context_window``
    is raw × this / 100, so a recorded window is turned back into the raw one the 90% applies to
    (openai/codex#19319: 272,000 × 95% = 258,400 recorded; #31860: the limit is 90% of the raw
    catalog window). A window from the price table is taken as the raw one."""
    count_old_reasoning: bool = True
    """Add Codex's estimate of every encrypted reasoning item before the last user turn
    (context_manager/history.rs ``get_non_last_reasoning_items_tokens``): the Responses API leaves
    earlier turns' reasoning out of its reported usage, Codex counts it back."""
    unsized_reasoning_factor: float = 1.18
    """Where a rollout lost a reasoning blob's size (the Entire CLI writes ``"REDACTED"``), its estimate
    is the call's ``reasoning_output_tokens`` × this. The value is measured, not fitted to the sessions
    it is used on: where a rollout keeps both the blob's size and the call's reasoning tokens (the five
    0.104 gpt-5.3-codex rollouts of ../shared/traces §2), Codex's own estimate of the blob runs 1.16-1.20
    × the reported reasoning tokens (an encrypted blob carries its reasoning plus framing). One model and
    one user: medium-low confidence; a rollout that keeps its blobs (an agent's own ~/.codex files do)
    never uses it."""
    remote_keeps_answers: bool = True
    """Whether the server's compacted history keeps the final answers (assistant messages). The client
    keeps whatever assistant messages the server returns (compact_remote.rs
    ``should_keep_compacted_history_item``); the recorded ``replacement_history`` of 0.104 and 0.119
    holds them, that of 0.125 and 0.142 none (a server-side change, dated here by the versions)."""
    pre_turn_check: bool = True
    """The check before a turn runs before the turn's input is recorded (session/turn.rs
    ``run_turn``: ``run_pre_sampling_compact`` first), so that input is neither counted nor
    compacted and comes after the new history. False (``codex:2025``): the input is recorded first
    and counted with the rest (the 2025 task loop checked after recording it)."""
    remote_item_tokens: int | None = 2_353
    """At most this many tokens are asked of the summary that stands in for the server's encrypted
    compaction item (None: the summarizer's own size). 2,353 = Codex's own estimate of such an item,
    (3/4 × length − 650) / 4 (history.rs ``estimate_item_token_count``), for the only one whose
    length a rollout records (0.104: 13,412 characters); the Entire CLI copies keep no length.
    One sample: low confidence."""
    user_message_max_tokens: int = 20_000
    tool_output_limit: int = 10_000
    tool_output_unit: str = "auto"
    """truncation_policy (models.json): ``Tokens(10_000)`` only for the *-codex families; the default
    (gpt-5.x base models, unknown models) is ``Bytes(10_000)``. "auto" picks it from the session's
    model id; "tokens" / "bytes" force one."""
    serialization_allowance: float = 1.2
    engine: str = "local"
    """"local" (compact.rs: the session's model writes the summary, Codex rebuilds the history) or
    "remote" (compact_remote.rs, OpenAI providers since Nov 2025: the server returns the new
    history). Same trigger either way: ``run_auto_compact`` only picks which task runs."""
    history_form: str = "separate"
    """"separate" (late 2025+: kept user messages, then the prefixed summary) or "bridge" (Sept-Oct
    2025: one user message from templates/compact/history_bridge.md holding both)."""

    def __post_init__(self) -> None:
        if self.tool_output_unit not in ("auto", "tokens", "bytes"):
            raise ValueError(f"tool_output_unit must be 'auto', 'tokens' or 'bytes', not {self.tool_output_unit!r}")
        if self.history_form not in ("separate", "bridge"):
            raise ValueError(f"history_form must be 'separate' or 'bridge', not {self.history_form!r}")
        if self.engine not in ("local", "remote"):
            raise ValueError(f"engine must be 'local' or 'remote', not {self.engine!r}")

    def limit(self, window: int) -> float:
        """auto_compact_token_limit for a *raw* window: min(configured, 90% of it)
        (protocol/src/openai_models.rs ``ModelInfo::auto_compact_token_limit``)."""
        limits = [x for x in (self.auto_compact_limit,
                              window * self.limit_fraction if self.limit_fraction and window else None)
                  if x is not None]
        return min(limits) if limits else math.inf

    def raw_window(self, ctx: Context, session: Session) -> int:
        """The raw catalog window the 90% applies to. When the call is windowed as the rollout
        recorded it (``model_context_window``, the effective window, became the input limit:
        bench.replay.loop.recorded_profile), raw = recorded × 100 / effective percent (258,400 → 272,000,
        121,600 → 128,000); otherwise the profile's window is taken as the raw one (Codex's model
        table gives the input window: 272K for GPT-5)."""
        window = session.model.max_input or session.model.context_window
        recorded = recorded_window(ctx.messages)
        if recorded and recorded == window and self.effective_window_percent:
            return round(recorded * 100 / self.effective_window_percent)
        return window

    def total(self, ctx: Context, session: Session) -> int:
        """Codex's ``get_total_token_usage`` at the check before this call.

        = last response's total tokens (input incl. cached + output incl. reasoning)
        + bytes/4 of the items recorded after the last model-generated item (the tool outputs)
        + the estimate of every encrypted reasoning item before the last user turn
        (context_manager/history.rs @023fad26 ``get_total_token_usage``,
        ``items_after_last_model_generated_item``, ``get_non_last_reasoning_items_tokens``).
        The check runs before the new turn's input is recorded (pre-turn: ``run_pre_sampling_compact``
        comes before ``record_context_updates``/the user message; mid-turn: pending input is drained
        after the check), so a new turn's messages after the last answer are not counted.
        """
        usage = session.last_usage
        if usage is None:
            return ctx.estimate
        msgs = ctx.messages
        last = last_assistant_index(msgs)  # walks back over the current step only
        if last < 0:
            return ctx.estimate
        end = checked_end(msgs, last) if self.pre_turn_check else len(msgs)
        count = usage.prompt_tokens + usage.output_tokens + sum(ctx.est(m) for m in msgs[last + 1:end])
        if self.count_old_reasoning:
            count += self.old_reasoning(msgs[:end])
        return count

    def old_reasoning(self, msgs: tuple[Message, ...]) -> int:
        """Codex's estimate of the encrypted reasoning held before the last user turn boundary."""
        boundary = next((i for i in range(len(msgs) - 1, -1, -1) if turn_boundary(msgs[i])), None)
        if boundary is None:
            return 0
        return sum(self.reasoning_estimate(m) for m in msgs[:boundary] if m.role == "assistant")

    def reasoning_estimate(self, m: Message) -> int:
        """One answer's encrypted reasoning as Codex estimates it: per item (3/4 × length − 650) bytes
        / 4 (history.rs ``estimate_reasoning_length``, ``estimate_item_token_count``), exact where the
        rollout kept the length; where only the marker is left, the call's reported
        ``reasoning_output_tokens`` × ``unsized_reasoning_factor`` (a proxy, not Codex's number)."""
        lengths = m.meta.get("reasoning_encrypted_lengths") or ()
        tokens = sum(math.ceil(max(n * 3 // 4 - 650, 0) / 4) for n in lengths if isinstance(n, int))
        if m.meta.get("reasoning_encrypted_unsized"):
            tokens += round(self.unsized_reasoning_factor * int(m.meta.get("reasoning_output_tokens") or 0))
        return tokens

    def output_unit(self, model_id: str) -> str:
        """The truncation policy's unit for this model: tokens for a *-codex family and for the
        gpt-5.4-and-later catalog entries, else bytes (gpt-5 … gpt-5.2 base models, unknown models).
        gpt-5.4+: the 2026 catalog gives ``{"mode": "tokens", "limit": 10000}``
        (codex-rs/models-manager/models.json @069e6b19), and the recorded 0.119 (gpt-5.4) and 0.125
        (gpt-5.5) rollouts agree: cut at 12,000 bytes, the replay's prompts miss the recorded ones by
        6,600-11,800 tokens before the first compaction; cut at 12,000 tokens they match exactly."""
        if self.tool_output_unit != "auto":
            return self.tool_output_unit
        lowered = model_id.lower()
        m = re.match(r"gpt-(\d+)(?:\.(\d+))?", lowered)
        newer = m is not None and (int(m.group(1)), int(m.group(2) or 0)) >= (5, 4)
        return "tokens" if "codex" in lowered or newer else "bytes"

    def on_tool_result(self, ctx: Context, session: Session) -> Outcome | None:
        unit = self.output_unit(session.model.id)  # the id as the session used it, alias included
        budget = int(self.tool_output_limit * self.serialization_allowance)
        max_bytes = budget * 4 if unit == "tokens" else budget
        last = ctx.messages[-1]
        new = rewrite_results(last, lambda r: middle_truncate(r.content, max_bytes, unit))
        if new is last:
            return None
        after = ctx.replace((*ctx.messages[:-1], new))
        return Outcome(after, (event("truncate", ctx, after, touched=1),))

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        # Every call here is preceded by one check, as in Codex: the first call of a turn by the
        # pre-turn check, each follow-up by the mid-turn one after the previous sampling request
        # (session/turn.rs ``run_turn``: ``token_limit_reached && needs_follow_up``).
        if self.total(ctx, session) >= self.limit(self.raw_window(ctx, session)):
            return self.compact(ctx, session, pre_turn=self.pre_turn_check)
        return None

    def on_overflow(self, ctx: Context, session: Session) -> Outcome | None:
        # Codex fails the request (ContextWindowExceeded, the token count set to full) and compacts
        # before the next turn with that input recorded: here both at once, the input included.
        return self.compact(ctx, session)

    def compact(self, ctx: Context, session: Session, *, pre_turn: bool = False) -> Outcome | None:
        """Compact now; ``pre_turn``: a new turn's input after the last answer is left out of it and
        appended after the new history (it was not recorded yet when Codex checked)."""
        if self.engine == "remote":
            return self.remote_compact(ctx, session, pre_turn=pre_turn)
        system, held = ctx.messages[0], ctx.messages[1:]
        cut = new_turn_input(held) if pre_turn else len(held)
        history, pending = held[:cut], held[cut:]  # a pre-turn compaction: the new input comes after
        if not history:
            return None
        fixed = ctx.tok(system) + session.meter.counter.text(COMPACT_PROMPT)
        request, trimmed = history, 0
        # the compaction request itself over the window: drop the oldest item (with its pair), retry
        while len(request) > 1 and not session.model.fits(fixed + sum(ctx.tok(m) for m in request), 0):
            request, trimmed = drop_range(request, 0, 1), trimmed + 1
        summary = session.summarize((system, *request), prompt=COMPACT_PROMPT,
                                    max_tokens=session.model.max_output)
        text = f"{SUMMARY_PREFIX}\n{summary.text or '(no summary available)'}"
        texts = user_messages(history)
        kept = self.recent_user_messages(texts)
        if self.history_form == "bridge":  # Sept-Oct 2025: one user message carries it all
            bridge = "\n\n".join((BRIDGE_LEAD, "\n\n".join(kept) or "(none)", text))
            after = ctx.replace((system, text_user(bridge, summary=True), *pending))
        else:
            after = ctx.replace((system, *(text_user(t) for t in kept), text_user(text, summary=True), *pending))
        events: tuple[Event, ...] = (event("summarize", ctx, after, touched=len(history),
                                           summary_tokens=summary.output_tokens,
                                           detail=f"trimmed {trimmed} oldest item(s)" if trimmed else ""),)
        if texts and kept[-1:] != texts[-1:]:  # Codex's own cut, recorded rather than hidden (issue 11)
            events += (event("truncate", after, after, touched=1,
                             detail=f"{CUT_LATEST_HUMAN}: over {self.user_message_max_tokens:,} tokens, "
                                    f"middle-truncated"),)
        return Outcome(after, events)

    def remote_compact(self, ctx: Context, session: Session, *, pre_turn: bool = False) -> Outcome | None:
        """Server-side compaction (``/responses/compact``) as Codex applies its answer.

        Routing: openai/codex@0100b103 codex-rs/core/src/compact.rs:35-40
        (``should_use_remote_compact_task``: an OpenAI provider with the RemoteCompaction feature,
        on by default since PR #6866, Nov 2025; later also Azure). The trigger is the local one
        (``run_auto_compact`` only dispatches). The request, then the answer:
        openai/codex@683f0a68 codex-rs/core/src/compact_remote.rs:67-166
        (``run_remote_compact_task_inner_impl``): while the request is over the window, trailing
        Codex-generated items are removed (``trim_function_call_history_to_fit_context_window``,
        end of the file; here: trailing tool outputs); the server's answer goes through
        ``process_compacted_history`` (:168-188) and ``should_keep_compacted_history_item``
        (:205-227): developer messages and contextual user messages (AGENTS.md, environment
        context) are dropped, real user messages, assistant messages and the compaction item kept,
        and the session's initial context is inserted above the last real user message.

        What the server answers is not public; the recorded rollout in ../shared/traces
        (codex__madshn-localpush, 0.104.0-alpha.1, the ``compacted`` record) shows it: every real
        user message (19 of 19; no size cap seen) and every final answer (15 of 15, assistant
        messages without tool calls) in order, then one opaque ``compaction`` item; reasoning,
        commentary, tool calls and outputs are gone. That is what is rebuilt here, the summary
        standing in for the encrypted item (our prompt; the server's is not public), asked for at
        most ``remote_item_tokens``. The later rollouts' ``replacement_history`` (0.119: answers
        kept; 0.125, 0.142: none, ``remote_keeps_answers``) also hold the whole initial context
        again (developer instructions, AGENTS.md, environment context: ``latest_initial_context``).
        Pre-turn (``InitialContextInjection::DoNotInject``): the history is compacted without the new
        turn's input, which follows the item with the initial context the next turn injects.
        """
        system, held = ctx.messages[0], ctx.messages[1:]
        cut = new_turn_input(held) if pre_turn else len(held)
        history, pending = held[:cut], held[cut:]  # a pre-turn compaction: the new input comes after
        if not history:
            return None
        request, trimmed = history, 0
        size = ctx.tok(system) + sum(ctx.tok(m) for m in request)
        while len(request) > 1 and request[-1].is_tool_result and not session.model.fits(size, 0):
            size -= ctx.tok(request[-1])
            request, trimmed = request[:-1], trimmed + 1
        summary = session.summarize((system, *request), prompt=COMPACT_PROMPT,
                                    max_tokens=self.remote_item_tokens or session.model.max_output)
        kept = [k for m in history if (k := remote_kept(m, answers=self.remote_keeps_answers)) is not None]
        item = text_user(summary.text or "(no summary available)", summary=True, opaque=True)
        if pending:  # pre-turn (InitialContextInjection::DoNotInject): the next turn re-injects it
            context = () if any(contextual(m) for m in pending) else latest_initial_context(history)
            after = ctx.replace((system, *kept, item, *context, *pending))
        else:  # mid-turn (BeforeLastUserMessage): above the last real user message
            context = latest_initial_context(history)
            last_user = max((i for i, m in enumerate(kept) if m.role == "user"), default=len(kept))
            after = ctx.replace((system, *kept[:last_user], *context, *kept[last_user:], item))
        users = sum(1 for m in kept if m.role == "user")
        detail = (f"remote{' pre-turn' if pending else ''}: kept {users} user message(s), "
                  f"{len(kept) - users} final answer(s), {len(context)} initial-context item(s)"
                  + (f"; trimmed {trimmed} trailing output(s)" if trimmed else ""))
        return Outcome(after, (event("summarize", ctx, after, touched=len(history),
                                     summary_tokens=summary.output_tokens, detail=detail),))

    def recent_user_messages(self, texts: list[str]) -> list[str]:
        """Newest first within the budget; the first that does not fit is cut to what is left
        and the walk stops there (an older, smaller message is not taken)."""
        remaining, kept = self.user_message_max_tokens, []
        for text in reversed(texts):
            if remaining <= 0:
                break
            size = approx_tokens(text)
            if size <= remaining:
                kept.append(text)
                remaining -= size
            else:
                kept.append(middle_truncate(text, remaining * 4))
                break
        return kept[::-1]


def user_messages(history: tuple[Message, ...]) -> list[str]:
    """Text of the human user messages, without earlier summaries or injected session prefixes."""
    return [m.text for m in history
            if m.is_human_turn and m.text and not m.text.startswith(SUMMARY_PREFIX + "\n")
            and not m.text.startswith(SESSION_PREFIXES)]


def contextual(m: Message) -> bool:
    """Codex's initial-context items: developer messages and the session-prefixed user messages."""
    return m.meta.get("role") == "developer" or (m.role == "user" and m.text.startswith(SESSION_PREFIXES))


def remote_kept(m: Message, *, answers: bool = True) -> Message | None:
    """What survives a remote compaction of ``m`` (the recorded server answer, then Codex's
    ``should_keep_compacted_history_item``): a real user message (images included, tool outputs
    not; an older local summary parses as one and stays) or, when the server keeps them
    (``answers``), a final answer (an assistant message with text and no tool call; thinking and
    its reasoning sizes dropped). An earlier opaque item is replaced: the server answers with
    exactly one (v2 fails on any other count, issue #28592)."""
    if m.meta.get("opaque") or contextual(m):
        return None
    if m.is_human_turn:
        blocks = tuple(b for b in m.blocks if not isinstance(b, ToolResult))
        return m if len(blocks) == len(m.blocks) else replace(m, blocks=blocks)
    if answers and m.role == "assistant" and not m.tool_uses and m.text:
        blocks = tuple(b for b in m.blocks if isinstance(b, Text))
        meta = {k: v for k, v in m.meta.items() if k not in REASONING_META}
        return m if len(blocks) == len(m.blocks) and meta == m.meta else replace(m, blocks=blocks, meta=meta)
    return None


def latest_initial_context(history: tuple[Message, ...]) -> tuple[Message, ...]:
    """What ``build_initial_context`` injects again, as the trace shows it: the session's first run
    of initial-context items (developer instructions, AGENTS.md, environment context: the full set
    Codex builds for a turn context), each kind replaced by its newest copy when a later run holds
    one (a trace has no turn context to rebuild it from). Later runs alone are usually diffs (an
    updated environment context), not the whole set: the recorded replacement_history of 0.104 and
    0.119 hold the full developer instructions and AGENTS.md again."""
    runs: list[list[Message]] = []
    for i, m in enumerate(history):
        if contextual(m):
            if runs and i > 0 and contextual(history[i - 1]):
                runs[-1].append(m)
            else:
                runs.append([m])
    if not runs:
        return ()
    newest: dict[str, Message] = {}
    for run in runs:
        for m in run:
            newest[context_kind(m)] = m
    seen: set[str] = set()
    out: list[Message] = []
    for m in runs[0]:
        kind = context_kind(m)
        if kind not in seen:
            seen.add(kind)
            out.append(newest[kind])
    return tuple(out)


def context_kind(m: Message) -> str:
    """Which initial-context item ``m`` is: the tag a developer message opens with
    (``<permissions instructions>``, ...) or the session prefix of a user one; an untagged
    (e.g. redacted) developer message is its own kind, never replaced."""
    if m.meta.get("role") == "developer":
        tag = re.match(r"<([\w -]+)>", m.text)
        return f"developer:{tag.group(1)}" if tag else f"developer@{id(m)}"
    return next((p for p in SESSION_PREFIXES if m.text.startswith(p)), f"other@{id(m)}")


REASONING_META = ("reasoning_encrypted_lengths", "reasoning_encrypted_unsized", "reasoning_output_tokens")
"""What the importer keeps of an answer's reasoning for the trigger (traces/formats/codex.py)."""


def recorded_window(msgs: tuple[Message, ...]) -> int | None:
    """The ``model_context_window`` the rollout recorded with the latest answer that has one."""
    for m in reversed(msgs):
        if m.role == "assistant" and isinstance(m.meta.get("context_window"), int):
            return m.meta["context_window"]
    return None


def checked_end(msgs: tuple[Message, ...], last: int) -> int:
    """End of what Codex holds at the check after answer ``last``: the tool outputs recorded after it
    count; the first message that is not one (a new turn's input) and everything after it do not."""
    end = last + 1
    while end < len(msgs) and msgs[end].is_tool_result:
        end += 1
    return end


def turn_boundary(m: Message) -> bool:
    """history.rs ``is_user_turn_boundary``: a real user message (not session-prefixed context, not
    a developer message, not the opaque compaction item, which Codex holds as a model item)."""
    return m.is_human_turn and not m.meta.get("opaque") and not contextual(m)


def new_turn_input(msgs: tuple[Message, ...]) -> int:
    """Index where a new turn's input begins (after the last answer and its tool outputs), or
    ``len(msgs)`` when there is none. A pre-turn compaction runs before that input is recorded
    (``run_pre_sampling_compact`` comes first in ``run_turn``), so it is appended after the new
    history, not compacted."""
    last = last_assistant_index(msgs)
    if last < 0:
        return len(msgs)
    end = checked_end(msgs, last)
    return end if any(m.is_human_turn for m in msgs[end:]) else len(msgs)
