"""The registered Codex strategy: its options, the tool-output cut and the hooks (see the package)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from bench.context import FRACTION, Context, Outcome, Range, Strategy, ToolResult, event
from strategies._tools import rewrite_results
from strategies.codex.common import middle_truncate
from strategies.codex.local import LocalCompaction
from strategies.codex.remote import RemoteCompaction
from strategies.codex.running import orphan_outputs
from strategies.codex.trigger import CodexTrigger

if TYPE_CHECKING:
    from bench.context import Session


@dataclass(frozen=True, kw_only=True)
class Codex(CodexTrigger, LocalCompaction, RemoteCompaction, Strategy):
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
    call, which is where Codex checks it too; not modelled: ghost snapshots, the full-window cap of the
    ``BodyAfterPrefix`` scope (the default ``Total`` scope has none; the effective window is the
    replay's input limit), a server that reports reasoning as included (``X-Reasoning-Included``:
    then Codex adds no reasoning estimate; none of the recorded rollouts shows it), and the 2025
    "memento" summary prompt (``codex:2025`` uses today's). ``codex:2025`` is the Sept–Oct 2025
    generation: the flat 256K limit and the single "history bridge" user message (user messages
    joined by blank lines, or "(none)", then the prefixed summary). Version 3: the tool-output
    truncation unit follows the model (bytes unless *-codex). Version 4: it follows the id the
    session used (``session.model.id`` keeps an alias such as gpt-5.1-codex). Version 5 (issue 24):
    the raw-window limit, the old-reasoning term, the pre-turn check, gpt-5.4+ truncated in tokens.
    Version 6 (issue 27): the local compaction puts the initial context (AGENTS.md, environment,
    developer instructions) back, 2025 at the top, 2026 where ``InitialContextInjection`` puts it
    (local.py); a ``<skill>`` body and Codex's other contextual items are not user messages
    (common.py ``CONTEXTUAL_MARKERS``): no compaction keeps them, nothing re-injects them.
    Version 7: a remote compaction that trims trailing outputs to fit takes their calls out of the request
    too (remote.py ``without_calls``), as Codex's ``remove_last_item`` does.
    """

    name = "codex"
    citation = ("openai/codex @0100b103625752f6a10c21b79a8c423761dc4c6a codex-rs/core/src/compact.rs; "
                "templates/compact/summary_prefix.md @50a53333; protocol/src/openai_models.rs; models.json @21dac7d7")
    version = 7

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

    def output_unit(self, model_id: str) -> str:
        """The truncation policy's unit for this model: tokens for a *-codex family and for the
        gpt-5.4-and-later catalog entries, else bytes (gpt-5 … gpt-5.2 base models, unknown models).
        gpt-5.4+: the 2026 catalog gives ``{"mode": "tokens", "limit": 10000}``
        (codex-rs/models-manager/models.json @069e6b19), and the recorded 0.119 (gpt-5.4) and 0.125
        (gpt-5.5) rollouts agree: cut at 12,000 bytes, the replay's prompts miss the recorded ones by
        6,600-11,800 tokens before the first compaction; cut at 12,000 tokens they match exactly."""
        if self.tool_output_unit != "auto":
            return self.tool_output_unit
        return _auto_unit(model_id)


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

    def project(self, ctx: Context, session: Session) -> Context:
        """The prompt Codex builds from its history: without the tool outputs whose call is nowhere
        in it. Every request goes through ``ContextManager::for_prompt`` → ``normalize_history``
        (context_manager/history.rs), which calls ``remove_orphan_outputs``: openai/codex
        @0803cc58789f6445cd3829bc33c6ca21fde17fac codex-rs/core/src/context_manager/normalize.rs:222
        (an output is kept when a call with its id is anywhere in the items, before it or not; the
        history itself keeps it). A compaction that ran while a call was still open (a second
        assistant message between a call and its output, as some logs have) dropped the call with
        the history; its output, recorded after, would otherwise be sent alone and rejected.
        ``ensure_call_outputs_present`` (:95, an "aborted" output for a call that has none) is
        not modelled: an unanswered call in a log is the log's own problem and stays flagged."""
        stray = orphan_outputs(session.state, ctx.messages)
        if not stray:
            return ctx
        kept = []
        for m in ctx.messages:
            if any(r.tool_use_id in stray for r in m.tool_results):
                m = m.with_blocks(tuple(b for b in m.blocks
                                        if not (isinstance(b, ToolResult) and b.tool_use_id in stray)))
                if not m.blocks:
                    continue
            kept.append(m)
        return ctx.replace(kept)


@lru_cache(maxsize=256)
def _auto_unit(model_id: str) -> str:
    """``Codex.output_unit`` for "auto", once per model id (asked at every tool output)."""
    lowered = model_id.lower()
    m = re.match(r"gpt-(\d+)(?:\.(\d+))?", lowered)
    newer = m is not None and (int(m.group(1)), int(m.group(2) or 0)) >= (5, 4)
    return "tokens" if "codex" in lowered or newer else "bytes"
