"""Codex's auto-compaction trigger: what it counts and what it compares it with.

openai/codex context_manager/history.rs @023fad268e08c252b94e4a95cb3c7f2f08c2a972
(``get_total_token_usage``), protocol/src/openai_models.rs (``auto_compact_token_limit``): see the
``Codex`` docstring (strategy.py) for the whole rule and the versions it holds for.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from strategies._tools import last_assistant_index
from strategies.codex.common import checked_end, turn_boundary
from strategies.codex.running import PrefixScan, prefix_scan

if TYPE_CHECKING:
    from bench.context import Context, Message, Session


class CodexTrigger:
    """The limit and Codex's own count; mixed into ``Codex``, whose fields (``limit_fraction``,
    ``auto_compact_limit``, ``effective_window_percent``, ``count_old_reasoning``,
    ``unsized_reasoning_factor``, ``pre_turn_check``) it reads."""

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
        bench.replay.recorded_profile), raw = recorded × 100 / effective percent (258,400 → 272,000,
        121,600 → 128,000); otherwise the profile's window is taken as the raw one (Codex's model
        table gives the input window: 272K for GPT-5)."""
        window = session.model.max_input or session.model.context_window
        recorded = self.scan(ctx, session).window[len(ctx.messages)]
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
        if self.count_old_reasoning:  # = old_reasoning(msgs[:end]), from the running prefix values
            scan = self.scan(ctx, session)
            boundary = scan.boundary[end]
            count += scan.reasoning[boundary] if boundary >= 0 else 0
        return count

    def scan(self, ctx: Context, session: Session) -> PrefixScan:
        """The running prefix values (``running.py``) of this session, brought up to ``ctx``."""
        return prefix_scan(session.state, ctx.messages, self.unsized_reasoning_factor, self.reasoning_estimate)

    def old_reasoning(self, msgs: tuple[Message, ...]) -> int:
        """Codex's estimate of the encrypted reasoning held before the last user turn boundary,
        computed afresh (``total`` reads the same from ``scan``; the tests hold the two equal)."""
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
