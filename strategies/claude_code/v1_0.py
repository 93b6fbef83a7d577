"""Claude Code 1.0.x, the rules every later generation starts from (registry ``claude-code:1.0``).

- Trigger: count >= window - reserve - 13K (``autocompact_buffer``), reserve = the model's max
  output capped at ``reserve_cap`` (1.0.x and 2.0: Claude Code's own max-output setting, 32K,
  so 155,000 on 200K). Medium confidence for 1.0.x: the recorded 1.0.53 session compacted after a
  call at 154,669 with the one before at 152,519, a threshold in (~154.0K, ~156.0K].
- Count: the last API usage (input incl. cache, plus output) + chars/4 x 4/3 for newer messages,
  checked before each call (spec/strategies.md §4.1, services/compact/autoCompact.ts as published).
- The user context (the CLAUDE.md contents in a ``<system-reminder>``) is not part of the stored
  history: Claude Code prepends it to the messages of every request (``prependUserContext``,
  src/query.ts L622 and src/utils/api.ts L419 in DroxKiwi/claude-code-leak-packaged @ fb1320d), so
  it is there again after every compaction (``_compact`` puts it back at the head).
- Kept after compacting: files re-read (the June 2025 bundle: up to 1e4 tokens each in 1.0.x,
  5K later), the todo list (1.0.11, CHANGELOG L5520) and the plan file; no skills yet (2.0.20,
  L4954: ``v2_0``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from bench.context import Context, Event, Message, Outcome, Text, event
from strategies._tools import text_user
from strategies.claude_code.common import _FileKnowledge, _numbered
from strategies.claude_code.microcompact import legacy_microcompact, recorded_microcompact
from strategies.layered.five_layer import FiveLayer

if TYPE_CHECKING:
    from bench.context import Session


USER_CONTEXT_LEAD = "<system-reminder>\nAs you answer the user's questions, you can use the following context:"
"""How the user context Claude Code prepends to every request opens (src/utils/api.ts, ``prependUserContext``)."""


def user_context(messages: Sequence[Message]) -> str | None:
    """The user-context reminder at the head of the history (the first user message's text block
    that opens with ``USER_CONTEXT_LEAD``), or None. Only the first user message is looked at: the
    agent puts it nowhere else."""
    for m in messages:
        if m.role == "user":
            return next((b.text for b in m.blocks if isinstance(b, Text) and b.text.startswith(USER_CONTEXT_LEAD)),
                        None)
    return None


class Rules10(FiveLayer):
    """The trigger and the attachments (fields are declared on ``ClaudeCode``)."""

    def effective_window(self, session: Session) -> int:
        """The window less the reserve; ``auto_compact_window`` (CLAUDE_CODE_AUTO_COMPACT_WINDOW) first
        lowers the window to at most its value, never raises it (autoCompact.ts
        ``getEffectiveContextWindowSize``, L33-47 in DroxKiwi/claude-code-leak-packaged @ fb1320d)."""
        model = session.model
        window = model.context_window
        if self.auto_compact_window is not None and self.auto_compact_window > 0:
            window = min(window, self.auto_compact_window)
        if not self.reserve_summary_output:
            return window
        cap = self.summary_max_tokens if self.reserve_cap is None else self.reserve_cap
        return window - min(model.max_output, cap)

    def autocompact_threshold(self, session: Session) -> int:
        """Effective window − 13K; ``autocompact_pct_override`` (CLAUDE_AUTOCOMPACT_PCT_OVERRIDE, a percent
        in (0, 100]) can only lower it: min(floor(effective × pct / 100), effective − 13K)
        (autoCompact.ts ``getAutoCompactThreshold``, L72-90 there). Without the override the threshold is
        FiveLayer's, whose ``autocompact_pct`` is 1.0 for every Claude Code generation."""
        threshold = super().autocompact_threshold(session)
        pct = self.autocompact_pct_override
        if pct is None or not 0 < pct <= 100:
            return threshold
        return min(math.floor(self.effective_window(session) * pct / 100), threshold)


    def count(self, ctx: Context, session: Session, fresh: bool) -> int:
        usage = session.last_usage
        if not fresh or usage is None:
            return super().count(ctx, session, fresh)
        for i in range(len(ctx.messages) - 1, -1, -1):  # O(step): the last answer
            m = ctx.messages[i]
            if m.role == "assistant":
                newer = sum(ctx.est(x) for x in ctx.messages[i + 1:])
                output = max(usage.output_tokens, ctx.tok(m))
                return usage.prompt_tokens + output + round(newer * 4 / 3)
        return super().count(ctx, session, fresh)


    def on_tool_result(self, ctx: Context, session: Session) -> Outcome | None:
        return None  # the file-state cache is rebuilt from the history when compacting


    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        """A microcompact the transcript records runs first (``microcompact``), then the modelled
        legacy one where the generation ran it (``legacy_microcompact``), then the checks. The
        autocompact check still counts from the last usage, cleared or not (as Claude Code did)."""
        events = []
        done = recorded_microcompact(ctx) if self.honour_microcompact else None
        if done is not None:
            ctx, ev = done
            events.append(ev)
        if self.legacy_microcompact:
            count = self.count(ctx, session, "usage_stale" not in session.state)
            done = legacy_microcompact(ctx, count, self.autocompact_threshold(session))
            if done is not None:
                ctx, ev = done
                events.append(ev)
        rest = super().before_call(ctx, session)
        if not events:
            return rest
        return Outcome(ctx, tuple(events)) if rest is None else replace(rest, events=(*events, *rest.events))

    def _compact(self, ctx: Context, session: Session, label: str) -> tuple[Context, list[Event]] | None:
        """The summary and attachments (``FiveLayer``), then the user context at the head again."""
        out = super()._compact(ctx, session, label)
        reminder = user_context(ctx.messages)
        if out is None or reminder is None:
            return out
        compacted, events = out
        head = 1 if ctx.system else 0
        if user_context(compacted.messages) is not None:
            return out  # kept (a strategy that keeps the first turn)
        after = compacted.replace((*compacted.messages[:head], text_user(reminder, synthetic=True),
                                   *compacted.messages[head:]))
        events.append(event("reinject", compacted, after, touched=1,
                            detail="the user context (CLAUDE.md) sent ahead of the messages again"))
        return after, events

    def _restored(self, session: Session, history: Sequence[Message] = ()) -> list[Message]:
        know: _FileKnowledge = session.state.setdefault("cc_files", _FileKnowledge())
        know.scan(history)
        out = self._file_attachments(know, session)
        out += self._skills_restored(know)
        if self.restore_todos and know.todos:
            out.append(text_user("Todo list as it stood before the compaction:\n"
                                 + json.dumps(know.todos, ensure_ascii=False), synthetic=True))
        if self.restore_plan and know.plan is not None:
            path, text = know.plan
            out.append(text_user(f"The plan-mode plan file {path} holds:\n\n{text}", synthetic=True))
        know.recent = {m.meta["restored_file"]: None for m in out if "restored_file" in m.meta}
        return out


    def _skills_restored(self, know: _FileKnowledge) -> list[Message]:
        """Invoked skills re-injected after compacting: none before 2.0.20 (``v2_0``)."""
        return []

    @staticmethod
    def _provider_count(session: Session) -> Callable[[str], float]:
        """The provider's count of a text as the replay knows it: our tokenizer at the session's ratio."""
        meter = session.meter
        return lambda text: meter.counter.text(text) * meter.ratio

    def _file_attachments(self, know: _FileKnowledge, session: Session) -> list[Message]:
        """The newest ``restore_files`` files, whole and current; over the per-file limit (or of
        unknown content) a one-line reference; the rest stop at the total budget.

        A file the trace showed only in part is judged against the limit by the part scaled to the
        highest line number seen (a lower bound of the whole file Claude Code re-reads) and comes
        back as that part: the replay invents no content it cannot know. Counting it at the scaled
        size instead was tried on the recorded sessions: the first post-compaction sizes moved no
        closer overall (0442a060 went from +1% to +12%: its agent restored ~1.8K for five files
        read in part, so they were larger still and came back as references)."""
        out, used = [], 0
        for path in list(know.recent)[::-1][: self.restore_files]:
            f = know.files.get(path)
            tokens = f.tokens(self._provider_count(session), self.restore_file_tokens) if f is not None else 0
            if f is None or f.text is None or tokens > self.restore_file_tokens:
                out.append(text_user(f"Note: {path} was read before this summary; it is too large to show again "
                                     f"here, read it if it is needed.", synthetic=True))
                continue
            text = f"Re-read after compaction (Read {json.dumps({'file_path': path})}):\n{_numbered(f.text, f.first)}"
            if used + len(text) / 4 > self.restore_total_tokens:
                continue
            used += len(text) / 4
            out.append(text_user(text, synthetic=True, restored_file=path))
        return out
