"""Amp: threshold compaction (summary replaces the thread so far) and its successor, Handoff.

Amp compacted a thread into a summary until November 2025, then replaced compaction with
Handoff: a new thread started from a goal, a drafted prompt and a few relevant files, the old
thread left intact. Both are modelled as firing at a token threshold (Handoff is user-triggered
in Amp; the threshold stands in for "the user decided the thread was long enough").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.context import POSITIVE, Context, Outcome, Strategy, event
from strategies._files import remember_files
from strategies._tools import carry_request, latest_human_text, step_start, text_user, waiting_from

if TYPE_CHECKING:
    from bench.context import Session

# Amp's prompts are not public; these are ours, with the intent the teardowns describe.
COMPACT_PROMPT = (
    "Summarize this thread so work can continue from the summary alone: the task and its "
    "constraints, what was done and decided, files involved, errors and fixes, and what is next."
)
HANDOFF_PROMPT = (
    "Draft the opening prompt of a new, focused thread that continues this one toward the goal "
    "below. Keep only what the goal needs: relevant decisions, facts, file paths and next steps. "
    "Write it as instructions to the agent of the new thread.\n\nGoal: "
)
SUMMARY_HEADER = "Summary of the thread so far (it replaces the earlier messages):\n\n"


@dataclass(frozen=True, kw_only=True)
class Amp(Strategy):
    """Amp (Sourcegraph, closed source) context compaction and Handoff. [public analysis]

    Sources: spec/strategies.md §5 (ampcode.com "Handoff (No More Compaction)", Nov 2025, and the
    context-management guide); the constants of a January 2026 build as published by the
    decodeclaude.com "amp-code-spec" teardown (v0.0.1769212917): COMPACTION_THRESHOLD 100,000,
    HANDOFF_TOKEN_BUDGET 25,000, MAX_HANDOFF_FILES 10, MAX_FILE_SIZE 32,768 bytes,
    BYTES_PER_TOKEN 3.5 (file tokens = ceil(min(bytes, 32 KB) / 3.5)). Amp counts tokens with
    the provider's count API, so the trigger uses truth tokens.

    ``mode="compact"``: the summary replaces every message before the current step. (Kept on
    purpose, unlike Claude Code: Amp's compaction was the user's "Compact Thread" between turns,
    where the current step is the new prompt, and no public source says what a mid-step one keeps.)
    ``mode="handoff"``: the new thread is [system, one user message = drafted prompt + goal +
    files]; the goal is the latest user message, the files the most recently read or written
    ones, newest first, each capped at 32 KB, added while they fit the 25K-token budget (a file
    that does not fit is skipped). File contents are the latest read/write results seen in the
    trace, an approximation of the files on disk at handoff time.
    Version 2: the latest user message (the goal, the quote after a summary) is the latest one
    that says something; version 1 took an empty user message after it (a log can hold one, Amp
    sends none: the API refuses it) and lost the request. And no handoff while a call waits for
    its result (a log with an assistant message between a call and its result): the user starts
    a handoff (spec/strategies.md §5), so between turns, never in the middle of a call; version 1
    handed off then, and the result came back without its call. It happens at the next call.
    Version 3: a second summary or handoff carries on the request the first one stood for (its quote,
    its goal, or the request it held in its own words); version 2 read only real human turns, so
    after a summary with no newer turn it quoted nothing and a handoff's goal became "Continue the
    task.".
    """

    name = "amp"
    citation = "Amp (closed source): ampcode.com Handoff post (Nov 2025); amp-code-spec teardown v0.0.1769212917"
    version = 3

    ranges = {"bytes_per_token": POSITIVE}
    """A divisor: a file's bytes over it estimate its tokens."""

    estimator: str = "truth"
    threshold: int = 100_000
    mode: str = "compact"
    """``compact`` or ``handoff``."""
    summary_max_tokens: int = 32_000
    """Amp's default max output (MAX_OUTPUT_TOKENS); the summary call's budget."""
    handoff_max_files: int = 10
    handoff_token_budget: int = 25_000
    max_file_bytes: int = 32_768
    bytes_per_token: float = 3.5

    def on_tool_result(self, ctx: Context, session: Session) -> Outcome | None:
        remember_files(ctx.messages, session.state.setdefault("files", {}))
        return None

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        if ctx.estimate < self.threshold:
            return None
        return self._handoff(ctx, session) if self.mode == "handoff" else self._compact(ctx, session)

    def _compact(self, ctx: Context, session: Session) -> Outcome | None:
        head = ctx.messages[:1] if ctx.system else ()
        cut = max(step_start(ctx.messages), len(head))
        history, tail = ctx.messages[len(head):cut], ctx.messages[cut:]
        if not history:
            return None
        summary = session.summarize(history, prompt=COMPACT_PROMPT, max_tokens=self.summary_max_tokens)
        text, request = carry_request(SUMMARY_HEADER + summary.text, ctx.messages, tail)
        after = ctx.replace((*head, text_user(text, summary=True, **request), *tail))
        return Outcome(after, (event("summarize", ctx, after, touched=len(history),
                                     summary_tokens=summary.output_tokens,
                                     detail=f"threshold {self.threshold}: summary replaces {len(history)} messages"),))

    def attachments(self, files: dict[str, str]) -> tuple[list[tuple[str, str]], int]:
        """The files a handoff attaches (newest first) and their estimated tokens."""
        chosen: list[tuple[str, str]] = []
        used = 0
        for path, content in reversed(list(files.items())):
            if len(chosen) >= self.handoff_max_files:
                break
            data = content.encode("utf-8")[: self.max_file_bytes]
            tokens = math.ceil(len(data) / self.bytes_per_token)
            if used + tokens > self.handoff_token_budget:
                continue
            chosen.append((path, data.decode("utf-8", errors="ignore")))
            used += tokens
        return chosen, used

    def _handoff(self, ctx: Context, session: Session) -> Outcome | None:
        if waiting_from(ctx.messages) < len(ctx):  # the user hands off between turns, not mid-call
            return None
        head = ctx.messages[:1] if ctx.system else ()
        found = latest_human_text(ctx.messages)  # after a handoff: the goal it carried on
        goal = found[1] if found is not None else "Continue the task."
        draft = session.summarize(ctx.messages[len(head):], prompt=HANDOFF_PROMPT + goal,
                                  max_tokens=self.summary_max_tokens)
        files, used = self.attachments(session.state.get("files", {}))
        parts = [draft.text, f"Goal for this thread:\n{goal}"]
        parts += [f'<file path="{path}">\n{content}\n</file>' for path, content in files]
        request = {"request": goal} if found is not None else {}
        after = ctx.replace((*head, text_user("\n\n".join(parts), summary=True, handoff=True, **request)))
        detail = (f"new thread: drafted prompt + goal + {len(files)} files (~{used} tokens at "
                  f"{self.bytes_per_token} bytes/token); file contents approximate (latest read/write "
                  f"results in the trace)")
        return Outcome(after, (event("handoff", ctx, after, touched=len(ctx.messages) - len(head),
                                     summary_tokens=draft.output_tokens, detail=detail),))

