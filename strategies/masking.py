"""The Complexity Trap (JetBrains Research, arXiv 2508.21433): masking, LLM summary, hybrid.

The paper runs SWE-agent with two history processors from its fork: SWE-agent's own
``last_n_observations`` (observation masking) and ``summarize_every_n_turns`` (LLM summary
with a static checkpoint). The hybrid chains them, summary first, so the summarizer reads the
unmasked turns while the agent is sent the masked ones.

A *turn* (the paper's unit, ``_extract_turns_from``) is one agent answer and the environment's
reply: here an assistant message with the user messages that follow it up to the next answer.
The head (system prompt and task, everything before the first answer) is never summarized.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.context import Context, Message, Outcome, Strategy, event
from strategies._tools import quote_latest_human, text_assistant
from strategies.swe_agent import LastNObservations

if TYPE_CHECKING:
    from bench.context import Session

REPO = "JetBrains-Research/the-complexity-trap (fork of SWE-agent), sweagent/agent/history_processors.py"

# The paper uses an OpenHands-style state-summary prompt; these words are ours, same sections.
SUMMARY_PROMPT = (
    "You keep a running state summary for a coding agent. Given the previous checkpoint (or the "
    "problem statement) and the agent's latest turns, write the new checkpoint with these "
    "sections: USER_CONTEXT, COMPLETED, PENDING, CURRENT_STATE, and for code tasks CODE_STATE, "
    "TESTS, CHANGES, DEPS, VERSION_CONTROL_STATUS. Be concise; keep paths, errors and test names."
)
CHECKPOINT_HEADER = "Checkpoint for the last {n} turns:\n"
"""The wrapper the fork puts around a (non-synthesis) summary, verbatim."""


@dataclass(frozen=True, kw_only=True)
class ObservationMasking(LastNObservations):
    """Observation masking, M = 10: SWE-agent LastNObservations with ``n=10``.

    Source: REPO (config ``default_no_demo_N=1_M=10.yaml``: ``last_n_observations``, ``n: 10``);
    paper §3, M=10 best in its ablation. Placeholder from the code, verbatim:
    "Old environment output: (N lines omitted)" (the paper's prose paraphrases it). Reasoning and
    actions stay verbatim; the first observation (the task) is never elided.
    """

    name = "observation-masking"
    citation = f"The Complexity Trap (arXiv 2508.21433); {REPO} LastNObservations n=10"
    tuning = {"n": (3, 5, 10, 15, 20)}
    """From 3 (below, the agent loses outputs it is still acting on) through SWE-agent's 5 and the paper's 10 to
    20, where the README measured masking dearer than never compacting: the moving window breaks the cache."""

    n: int = 10


def turn_spans(messages: tuple[Message, ...]) -> tuple[int, Message | None, list[tuple[int, int]]]:
    """(end of the head, the current checkpoint if any, [start, end) of each complete turn)."""
    head_end = next((i for i, m in enumerate(messages) if m.role == "assistant"), len(messages))
    checkpoint = None
    start = head_end
    if start < len(messages) and messages[start].meta.get("checkpoint"):
        checkpoint, start = messages[start], start + 1
    starts = [i for i in range(start, len(messages)) if messages[i].role == "assistant"]
    spans = list(zip(starts, [*starts[1:], len(messages)][:len(starts)], strict=True))
    return head_end, checkpoint, [(s, e) for s, e in spans if e - s > 1]


@dataclass(frozen=True, kw_only=True)
class LLMSummary(Strategy):
    """LLM-Summary (N = 21, M = 10): every N turns, replace the oldest N by one checkpoint.

    Source: REPO ``SummarizeEveryNTurns`` with ``enable_static_checkpointing: true`` (config
    ``default_no_demo_checkpoint_same_model_openhands_N=21_M=10.yaml``). When the turns since
    the last checkpoint reach ``n + keep_last_m_turns`` (31), the oldest ``n`` are summarized
    with the previous checkpoint (or the problem statement) as context; the new checkpoint, an
    assistant message "Checkpoint for the last 21 turns:\\n…", replaces the old one and the
    turns it covers; the other turns stay verbatim. So it first fires at turn 31, then every 21.
    Version 2: a checkpoint that replaces the latest request quotes the latest one that says
    something (version 1 took an empty user message after it and quoted nothing).
    """

    name = "llm-summary"
    citation = f"The Complexity Trap (arXiv 2508.21433); {REPO} SummarizeEveryNTurns n=21 keep_last_m_turns=10"
    version = 2

    estimator: str = "truth"
    n: int = 21
    keep_last_m_turns: int = 10
    summary_max_tokens: int = 4_096
    """The paper sets no output cap; this bounds the offline summarizer."""

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        msgs = ctx.messages
        if len(msgs) < 2 * (self.n + self.keep_last_m_turns):
            return None  # a complete turn is ≥ 2 messages: too few to fire, no need to walk them
        head_end, checkpoint, turns = turn_spans(msgs)
        if len(turns) < self.n + self.keep_last_m_turns:
            return None
        first, cut = turns[0][0], turns[self.n - 1][1]
        context_msg = checkpoint if checkpoint is not None else msgs[head_end - 1] if head_end else None
        summarized = msgs[first:cut]
        summary = session.summarize(
            tuple(m for m in (context_msg, *summarized) if m is not None),
            prompt=SUMMARY_PROMPT, max_tokens=self.summary_max_tokens,
        )
        head, kept = msgs[:head_end], msgs[cut:]
        text = quote_latest_human(CHECKPOINT_HEADER.format(n=self.n) + summary.text, msgs, (*head, *kept))
        after = ctx.replace((*head, text_assistant(text, summary=True, checkpoint=True), *kept))
        detail = f"{self.n} turns -> checkpoint, {len(turns) - self.n} turns kept verbatim"
        return Outcome(after, (event("summarize", ctx, after, touched=cut - first + (checkpoint is not None),
                                     summary_tokens=summary.output_tokens, detail=detail),))


@dataclass(frozen=True, kw_only=True)
class Hybrid(LLMSummary):
    """Hybrid: masking by default (W = 10), LLM summary deferred to N = 43 (M = 10).

    Source: REPO config ``default_no_demo_checkpoint_same_model_openhands_N=43_M=10_masking_M=10``:
    ``summarize_every_n_turns`` (n 43, keep_last_m_turns 10, static checkpoint) then
    ``last_n_observations`` (n 10). The summary rewrites the stored history from unmasked
    turns; masking is applied to what is sent, every call.
    """

    name = "hybrid"
    citation = f"The Complexity Trap (arXiv 2508.21433); {REPO} SummarizeEveryNTurns n=43 + LastNObservations n=10"

    n: int = 43
    window: int = 10
    """W: observations kept verbatim by the masking stage."""

    def _masker(self) -> LastNObservations:
        return LastNObservations(n=self.window, estimator=self.estimator)

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        summarized = super().before_call(ctx, session)
        new = summarized.context if summarized is not None else ctx
        masked = self._masker().before_call(new, session)
        events = (*(summarized.events if summarized else ()), *(masked.events if masked else ()))
        return Outcome(new, events) if events else None

    def project(self, ctx: Context, session: Session) -> Context:
        return self._masker().project(ctx, session)
