"""Codex CLI: local compaction to recent user messages + a summary (spec/strategies.md §3).

At 90% of the window (2026; a flat 256K in mid-2025) the whole history is summarized, and the new
history is the initial context, the newest user messages within 20K tokens (bytes/4) and one user
message holding the summary behind Codex's "another language model" prefix. Every assistant
message, tool call and tool output is gone. Tool outputs are cut at record time (§3.5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from bench.context import Context
from strategies._tools import drop_range, last_assistant_index, rewrite_results, text_user
from strategies.base import CUT_LATEST_HUMAN, FRACTION, Event, Outcome, Range, Strategy, event
from traces.model import Message, Text, ToolResult

if TYPE_CHECKING:
    from bench.session import Session

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

    Trigger: last response's total tokens + bytes/4 of the items since ≥ the limit (90% of the
    window; ``codex:2025`` = the flat 256,000 of mid-2025). Rebuilt (late 2025): system (the
    initial context), the newest user messages within 20,000 tokens (the walk stops at the first
    that does not fit, middle-truncated), then one user message ``SUMMARY_PREFIX + "\n" +
    summary``. A compaction request over the window drops its oldest item (with its pair) and
    retries.

    Deviations: the compaction prompt is ours (same bullets); pre-turn and mid-turn check
    points are both the pre-call check; remote compaction is ``engine="remote"`` (``codex:remote``,
    ``codex:0.140-remote``; see ``remote_compact``); not modelled: the 2026 local
    ``InitialContextInjection`` placement, ghost snapshots, the 95% cap (below
    the 90% limit anyway), and the 2025 "memento" summary prompt (``codex:2025`` uses today's).
    ``codex:2025`` is the Sept–Oct 2025 generation: the flat 256K limit and the single "history
    bridge" user message (user messages joined by blank lines, or "(none)", then the prefixed
    summary). ``codex:0.140`` (0.140+): the limit is 90% of the effective window (context_window ×
    effective_context_window_percent / 100, default 95, as ``get_model_context_window``); the
    remote (server-side) compaction of OpenAI models is ``codex:0.140-remote``. Version 3: the
    tool-output truncation unit follows the model (bytes unless *-codex). Version 4: it follows the
    id the session used (``session.model.id`` keeps an alias such as gpt-5.1-codex; it used to be
    the price table's base entry, gpt-5.1, so a *-codex alias got bytes).
    """

    name = "codex"
    citation = ("openai/codex @0100b103625752f6a10c21b79a8c423761dc4c6a codex-rs/core/src/compact.rs; "
                "templates/compact/summary_prefix.md @50a53333; protocol/src/openai_models.rs; models.json @21dac7d7")
    version = 4

    ranges = {"limit_fraction": FRACTION, "effective_window_percent": Range(0, 100, lo_open=True)}
    """A share of the window; effective_context_window_percent is a percent (ModelInfo, openai_models.rs)."""

    estimator: str = "bytes/4"
    limit_fraction: float | None = 0.9
    """auto_compact_token_limit as a share of the window (2026: min(configured, 90%))."""
    auto_compact_limit: int | None = None
    """A configured limit in tokens; mid-2025 Codex used a flat 256,000 for every model."""
    effective_window_percent: int = 100
    """Codex 0.140+: the limit is a share of the *effective* window, context_window ×
    effective_context_window_percent / 100 (ModelInfo default 95; get_model_context_window)."""
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
        limits = [x for x in (self.auto_compact_limit,
                              window * self.effective_window_percent // 100 * self.limit_fraction
                              if self.limit_fraction and window else None)
                  if x is not None]
        return min(limits) if limits else math.inf

    def total(self, ctx: Context, session: Session) -> int:
        """Last response's total tokens plus a bytes/4 estimate of the items added since."""
        usage = session.last_usage
        if usage is None:
            return ctx.estimate
        last = last_assistant_index(ctx.messages)  # walks back over the current step only
        if last < 0:
            return ctx.estimate
        return usage.prompt_tokens + usage.output_tokens + sum(ctx.est(m) for m in ctx.messages[last + 1:])

    def output_unit(self, model_id: str) -> str:
        """The truncation policy's unit for this model: tokens for a *-codex family, else bytes."""
        if self.tool_output_unit != "auto":
            return self.tool_output_unit
        return "tokens" if "codex" in model_id.lower() else "bytes"

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
        # Codex's model table gives the input window as the context window (272K for GPT-5).
        window = session.model.max_input or session.model.context_window
        if self.total(ctx, session) >= self.limit(window):
            return self.compact(ctx, session)
        return None

    def on_overflow(self, ctx: Context, session: Session) -> Outcome | None:
        return self.compact(ctx, session)

    def compact(self, ctx: Context, session: Session) -> Outcome | None:
        if self.engine == "remote":
            return self.remote_compact(ctx, session)
        system, history = ctx.messages[0], ctx.messages[1:]
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
            after = ctx.replace((system, text_user(bridge, summary=True)))
        else:
            after = ctx.replace((system, *(text_user(t) for t in kept), text_user(text, summary=True)))
        events: tuple[Event, ...] = (event("summarize", ctx, after, touched=len(history),
                                           summary_tokens=summary.output_tokens,
                                           detail=f"trimmed {trimmed} oldest item(s)" if trimmed else ""),)
        if texts and kept[-1:] != texts[-1:]:  # Codex's own cut, recorded rather than hidden (issue 11)
            events += (event("truncate", after, after, touched=1,
                             detail=f"{CUT_LATEST_HUMAN}: over {self.user_message_max_tokens:,} tokens, "
                                    f"middle-truncated"),)
        return Outcome(after, events)

    def remote_compact(self, ctx: Context, session: Session) -> Outcome | None:
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
        standing in for the encrypted item (our prompt; the server's is not public).
        """
        system, history = ctx.messages[0], ctx.messages[1:]
        if not history:
            return None
        request, trimmed = history, 0
        size = ctx.tok(system) + sum(ctx.tok(m) for m in request)
        while len(request) > 1 and request[-1].is_tool_result and not session.model.fits(size, 0):
            size -= ctx.tok(request[-1])
            request, trimmed = request[:-1], trimmed + 1
        summary = session.summarize((system, *request), prompt=COMPACT_PROMPT,
                                    max_tokens=session.model.max_output)
        kept = [k for m in history if (k := remote_kept(m)) is not None]
        context = latest_initial_context(history)
        last_user = max((i for i, m in enumerate(kept) if m.role == "user"), default=len(kept))
        item = text_user(summary.text or "(no summary available)", summary=True, opaque=True)
        after = ctx.replace((system, *kept[:last_user], *context, *kept[last_user:], item))
        users = sum(1 for m in kept if m.role == "user")
        detail = (f"remote: kept {users} user message(s), {len(kept) - users} final answer(s), "
                  f"{len(context)} initial-context item(s)"
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


def remote_kept(m: Message) -> Message | None:
    """What survives a remote compaction of ``m`` (the recorded server answer, then Codex's
    ``should_keep_compacted_history_item``): a real user message (images included, tool outputs
    not; an older local summary parses as one and stays) or a final answer (an assistant message
    with text and no tool call; thinking dropped). An earlier opaque item is replaced: the server
    answers with exactly one (v2 fails on any other count, issue #28592)."""
    if m.meta.get("opaque") or contextual(m):
        return None
    if m.is_human_turn:
        blocks = tuple(b for b in m.blocks if not isinstance(b, ToolResult))
        return m if len(blocks) == len(m.blocks) else replace(m, blocks=blocks)
    if m.role == "assistant" and not m.tool_uses and m.text:
        blocks = tuple(b for b in m.blocks if isinstance(b, Text))
        return m if len(blocks) == len(m.blocks) else replace(m, blocks=blocks)
    return None


def latest_initial_context(history: tuple[Message, ...]) -> tuple[Message, ...]:
    """The newest run of consecutive initial-context items: what ``build_initial_context`` would
    inject again (a trace has no turn context to rebuild it from)."""
    end = next((i + 1 for i in range(len(history) - 1, -1, -1) if contextual(history[i])), 0)
    start = end
    while start > 0 and contextual(history[start - 1]):
        start -= 1
    return history[start:end]
