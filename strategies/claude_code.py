"""Claude Code's compaction: ``FiveLayer`` configured as each Claude Code generation ran it.

Sources: anthropics/claude-code CHANGELOG.md @ 5cfc0a19 ("L" = its line); spec/strategies.md §4.1
(services/compact/autoCompact.ts, compact.ts as published); the recorded sessions in
../shared/traces (research notes /work/notes/fidelity-research.md §1, windows.md §1).

Generations (registry variant ← version range, ``strategies.versions.GENERATIONS``):

==================  ===============  =========================================================
variant             versions         what changes (the field, its default there)
==================  ===============  =========================================================
claude-code:1.0     1.0.x            as :2.0, but files re-read up to 10K tokens each (the June
                                     2025 bundle: 1e4, see below) and no invoked-skill
                                     re-injection (skills: 2.0.20, L4954). Medium confidence:
                                     the recorded 1.0.53 session compacted after a call at
                                     154,669 with the one before at 152,519, i.e. a threshold in
                                     (~154.0K, ~156.0K]; 155K fits, the 92% of the whole window
                                     used before (184K) does not.
claude-code:2.0     [1.1, 2.1.21)    ``reserve_cap=32_000``: the output reserve is Claude Code's
                                     own max-output setting (32K), uncapped → 155,000 on 200K.
                                     Data: every 2.0.76–2.1.20 auto compaction fired at 155K.
claude-code:2.1.21  [2.1.21, 2.1.76) reserve min(max output, 20K) (L4238, 2.1.21: "auto-compact
                                     triggering too early on models with large output token
                                     limits") → 167,000; the 2.1.22 session reached 155,808
                                     without compacting. Invoked skills re-injected.
claude-code:2.1.76  [2.1.76, 2.1.89) ``max_autocompact_failures=3`` (L3485: circuit breaker after
                                     3 consecutive failed auto-compactions; before, every turn
                                     retried).
claude-code:2.1.89  [2.1.89, 2.1.142) ``thrash_limit=3`` (L3099: context back at the limit right
                                     after compacting, three times in a row → stop with an error).
claude-code         2.1.142 on       ``reactive_fit=True`` (L2024: on prompt_too_long the first
                                     summarize request is already cut to fit from the reported
                                     overflow).
==================  ===============  =========================================================

What is kept after compacting (compact.ts constants as quoted by public analyses of the 2026
source: POST_COMPACT_MAX_FILES_TO_RESTORE 5, POST_COMPACT_TOKEN_BUDGET 50K,
POST_COMPACT_MAX_TOKENS_PER_FILE 5K, POST_COMPACT_MAX_TOKENS_PER_SKILL 5K,
POST_COMPACT_SKILLS_TOKEN_BUDGET 25K): the summary message, then attachments —

- files: the 5 most recently *touched* files of the file-state cache (a Read, Edit or Write
  since the last compaction, or a file the last compaction restored; the cache is cleared when
  compacting), each re-read from disk *whole*: the current content, so a file edited after
  its read comes back edited, and a file read in part comes back whole. Over 5K tokens it comes
  back as a one-line reference; the files stop at 50K together. The replay rebuilds the current
  content from what the trace shows (``_FileKnowledge``): a full read or a Write, with later
  edits applied; a file seen only in part is judged by its highest line number and comes back
  as the part the trace shows (``ClaudeCode._file_attachments``);
- invoked skills (from 2.1.21 here): each skill body the session loaded (the ``isMeta`` user
  message "Base directory for this skill: ..." after a ``Skill`` call or a typed /skill, which
  the importer marks ``injected``), cut to 5K tokens, 25K together. Since when is not known:
  2.1.45 (L4042) fixes a bug of the re-injection, so it existed then; the 2.1.20 session's first
  post-compaction prompt leaves ~1.2K beside overhead and summary, no room for its 2.1K-token
  skill. Low-medium confidence;
- the todo list (TodoWrite's latest ``todos``; 1.0.11 L5520) and the plan file (the latest
  Write/Edit of a file under ``.claude/plans/``), when the session has them.

The restore itself (newest first from the file-state cache, each re-read with a per-file token
limit, kept while the running total fits) is also what public de-minifications of the bundle show:
the June-2025 one (``improved-claude-code-5.mjs`` L45651-45773 in the analysis_claude_code forks,
e.g. yordyi/analysis_claude_code: per-file limit 1e4, total 50,000, files only) and a 2.x one
(``chunks.107.mjs`` L1120-1269 in mylinyuzhi/analysis_claude_code_v2: files, then the todo list,
then the plan file). Medium confidence (third-party reconstructions, no version stated exactly).

Not modelled: background-agent status, deferred-tool and MCP re-announcements (small), hook output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bench.context import Context, Event, Message, Outcome, ToolUse
from strategies._tools import text_user
from strategies.layered import CLEARED, SUMMARY_PROMPT, FiveLayer, _fail

if TYPE_CHECKING:
    from bench.context import Session

LINE_NUMBER = re.compile(r"^ *(\d+)[→\t]", re.M)
SKILL_LEAD = "Base directory for this skill:"
PLAN_DIR = "/.claude/plans/"
SKILL_TRUNCATED = "\n\n[skill text cut at compaction; the skill file holds the rest]"
EDIT_TOOLS = ("edit", "multiedit", "str_replace_based_edit_tool")


def _numbered(text: str, first: int = 1) -> str:
    """``text`` as the Read tool shows it (cat -n style, the form the restored file takes)."""
    return "\n".join(f"{n:6d}→{line}" for n, line in enumerate(text.split("\n"), first))


def _unnumbered(shown: str) -> tuple[str, int, int]:
    """(text, first line, last line) of a Read output; the text without its line numbers."""
    numbers = [int(n) for n in LINE_NUMBER.findall(shown)]
    if not numbers:
        return shown, 1, shown.count("\n") + 1
    text = LINE_NUMBER.sub("", shown)
    return text, numbers[0], numbers[-1]


@dataclass
class _File:
    """What the trace shows of one file: its text (None: unknown) and whether that is all of it."""

    text: str | None
    whole: bool
    last_line: int = 0
    first: int = 1
    """The line number of the text's first line (a read from an offset)."""

    def scale(self) -> float:
        """How much larger the whole file is than the text known of it (1 when it is whole)."""
        if self.whole or self.text is None:
            return 1.0
        return max(1.0, self.last_line / max(1, self.text.count("\n") + 1))

    def tokens(self) -> int:
        """chars/4 of the whole file as Claude Code would re-read it; a part is scaled up to the
        highest line number seen (a lower bound of the file's length)."""
        if self.text is None:
            return 0
        return round(len(_numbered(self.text, self.first)) / 4 * self.scale())


@dataclass
class _FileKnowledge:
    """Every file the session showed, with its latest known content, and the file-state cache's
    recency order (paths touched since the last compaction, most recent last)."""

    files: dict[str, _File] = field(default_factory=dict)
    recent: dict[str, None] = field(default_factory=dict)
    skills: dict[str, str] = field(default_factory=dict)
    todos: object = None
    plan: tuple[str, str] | None = None

    def touch(self, path: str) -> None:
        self.recent.pop(path, None)
        self.recent[path] = None

    def see(self, use: ToolUse, output: str, failed: bool) -> None:
        name = use.name.lower()
        if name == "todowrite" and not failed:
            self.todos = use.input.get("todos")
            return
        path = use.input.get("file_path") or use.input.get("notebook_path") or use.input.get("path")
        if not isinstance(path, str) or failed:
            return
        old = self.files.get(path)
        if name == "read":
            text, first, last = _unnumbered(output)
            partial = first > 1 or "offset" in use.input or "limit" in use.input
            if partial and old is not None and old.whole:
                pass  # a part of a file known whole tells nothing new
            else:
                self.files[path] = _File(text, not partial, max(last, old.last_line if old else 0), first)
        elif name == "write" and isinstance(use.input.get("content"), str):
            content = use.input["content"]
            self.files[path] = _File(content, True, content.count("\n") + 1)
        elif name in EDIT_TOOLS:
            edits = use.input.get("edits") if isinstance(use.input.get("edits"), list) else [use.input]
            known = old if old is not None else _File(None, False)
            text = known.text
            for e in edits:
                before, after = e.get("old_string"), e.get("new_string")
                if text is None or not isinstance(before, str) or not isinstance(after, str):
                    continue
                if before in text:
                    text = text.replace(before, after) if e.get("replace_all") else text.replace(before, after, 1)
            _, _, last = _unnumbered(output)
            self.files[path] = _File(text, known.whole, max(known.last_line, last if text is None else 0),
                                     known.first)
        else:
            return
        if PLAN_DIR in path:
            current = self.files.get(path)
            if current is not None and current.text is not None:
                self.plan = (path, current.text)
            return  # the plan is its own attachment, never one of the five files
        self.touch(path)

    def scan(self, messages: Sequence[Message]) -> None:
        """Take in a history about to be summarized (everything since the last compaction)."""
        calls: dict[str, ToolUse] = {}
        for m in messages:
            restored = m.meta.get("restored_file")
            if isinstance(restored, str):
                self.touch(restored)
            for u in m.tool_uses:
                calls[u.id] = u
            for r in m.tool_results:
                if r.tool_use_id in calls:
                    self.see(calls[r.tool_use_id], r.content, r.is_error)
            if m.meta.get("injected") and m.text.startswith(SKILL_LEAD):
                name = m.text.split("\n", 1)[0][len(SKILL_LEAD):].strip()
                self.skills.pop(name, None)
                self.skills[name] = m.text


@dataclass(frozen=True, kw_only=True)
class ClaudeCode(FiveLayer):
    """Claude Code's compaction as measured in spec/strategies.md §4.1 [public analysis], per
    generation (module docstring: the variants, their defaults and the changelog lines).

    Trigger: count ≥ window − reserve − 13K, reserve = min(max output, ``reserve_cap`` or 20K)
    (167K on 200K from 2.1.21; 155K before, ``reserve_cap=32_000``); count = last API usage
    (input incl. cache, plus output) + chars/4 × 4/3 for newer messages, checked before each
    call. The output part is at least the last answer's own size: Claude Code transcripts keep a
    streaming snapshot of ``output_tokens`` (1-300), the agent counted the final one.
    Summary with the nine section headings; rebuilt as "This session is being continued…" plus
    an instruction to continue; then the attachments (module docstring). Reactive compact once
    on a 413, then the error. No L1 (``persist_pct`` turns it on) and no L5 (CONTEXT_COLLAPSE
    ships in internal builds only).

    Time-based microcompact (after 60 min idle, old results become ``[Old tool result content
    cleared]``, newest 5 kept) is gated by feature flags (§4.1) and is off here; the
    ``claude-code:microcompact`` variant turns it on. Evidence from the recorded sessions in
    ../shared/traces (v2.1.38, Feb 2026): session 4d5611e5 idles 251 min before call 18, yet the
    pre-compaction count at call 61 (170,251 provider tokens) still holds every old output.

    The step in flight is summarized, not kept: in the recorded sessions (claude-code__marot-spotter
    258c7280, records 1254-1256) the ``compact_boundary`` follows the last tool result, then comes
    the summary and straight the next assistant message (version 3).
    Version 6: the generations above; a failed auto-compaction is one that could not run (the
    breaker's count), a compaction that leaves the count over the threshold is a refill (the
    thrash check); attachments rebuilt from the current file contents, skills, todo list, plan.
    """

    name = "claude-code"
    citation = "Claude Code services/compact/autoCompact.ts, compact.ts, prompt.ts; CHANGELOG.md @5cfc0a19; spec §4.1"
    version = 6

    persist_pct: float | None = None
    microcompact_pct: float | None = None
    microcompact_idle_seconds: float | None = None
    microcompact_drop_read_only: bool = False
    microcompact_marker: str | None = CLEARED
    autocompact_pct: float = 1.0
    autocompact_buffer: int = 13_000
    max_autocompact_failures: int | None = 3
    """MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES: 3 from 2.1.76 (L3485); None = retry every turn."""
    usage_count: bool = True
    restore_files: int = 5
    collapse: bool = False
    reserve_cap: int | None = None
    """Cap on the model's max output taken off the window; None = ``summary_max_tokens`` (20K,
    from 2.1.21). Before 2.1.21 the reserve was Claude Code's max-output setting, 32,000."""
    thrash_limit: int | None = 3
    """Stop with an error (``fail``) when the count is back at the threshold at the first check
    after a compaction this many times in a row (2.1.89, L3099); None = compact again."""
    reactive_fit: bool = True
    """On an overflow, cut the summarize request to fit at once (2.1.142, L2024); False: the
    first request holds everything and overflows, then the oldest rounds are dropped."""
    restore_skills: bool = True
    restore_skill_tokens: int = 5_000
    restore_skills_total: int = 25_000
    restore_todos: bool = True
    restore_plan: bool = True

    def effective_window(self, session: Session) -> int:
        model = session.model
        if not self.reserve_summary_output:
            return model.context_window
        cap = self.summary_max_tokens if self.reserve_cap is None else self.reserve_cap
        return model.context_window - min(model.max_output, cap)

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
        st = session.state
        if self.thrash_limit is not None and st.get("compacted_at") == session.call_index - 1:
            # the first check after a compaction: is the context already back at the threshold?
            refilled = self.count(ctx, session, "usage_stale" not in st) >= self.autocompact_threshold(session)
            st["refills"] = st.get("refills", 0) + 1 if refilled else 0
            if st["refills"] >= self.thrash_limit:
                return _fail(ctx, f"autocompact thrash: the context was back at the threshold right after "
                                  f"{st['refills']} compactions in a row")
        return super().before_call(ctx, session)

    def _auto_failed(self, done: object, still_over: bool) -> bool:
        return done is None

    def _compact(self, ctx: Context, session: Session, label: str) -> tuple[Context, list[Event]] | None:
        out = super()._compact(ctx, session, label)
        if out is not None:
            session.state["compacted_at"] = session.call_index
        return out

    def _summary_input(self, history: Sequence[Message], session: Session, label: str
                       ) -> tuple[Sequence[Message], str]:
        """The reactive (L4) summarize request cut to fit the window with the summary's output room:
        whole API rounds (an answer and the results after it) dropped oldest first until the
        overflow is covered. From 2.1.142 the cut is made before the first request, from the
        overflow the API reported; before, a first request with everything overflowed and the
        retry dropped the oldest rounds (spec §4.1). An overflowed request is not billed and the
        replay has no latency per request, so both leave the same summary; the event says which."""
        if not label.startswith("L4"):
            return history, ""
        meter = session.meter
        sizes = [meter.truth(m) for m in history]
        budget = session.model.context_window - self.summary_max_tokens - meter.counter.text(SUMMARY_PROMPT)
        over = meter.overhead + sum(sizes) - budget
        if over <= 0:
            return history, ""
        start = dropped = 0
        while start < len(history) - 1 and dropped < over:
            end = start + 1
            while end < len(history) - 1 and history[end].role != "assistant":
                end += 1
            dropped += sum(sizes[start:end])
            start = end
        how = (f"request cut by the reported overflow ({over} tokens)" if self.reactive_fit
               else f"first request overflowed by {over} tokens, retried")
        return history[start:], f"; {how} without the {start} oldest messages"

    def _restored(self, session: Session, history: Sequence[Message] = ()) -> list[Message]:
        know: _FileKnowledge = session.state.setdefault("cc_files", _FileKnowledge())
        know.scan(history)
        out = self._file_attachments(know, session)
        if self.restore_skills and know.skills:
            out.append(self._skill_attachment(know.skills))
        if self.restore_todos and know.todos:
            out.append(text_user("Todo list as it stood before the compaction:\n"
                                 + json.dumps(know.todos, ensure_ascii=False), synthetic=True))
        if self.restore_plan and know.plan is not None:
            path, text = know.plan
            out.append(text_user(f"The plan-mode plan file {path} holds:\n\n{text}", synthetic=True))
        know.recent = {m.meta["restored_file"]: None for m in out if "restored_file" in m.meta}
        return out

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
            tokens = f.tokens() if f is not None else 0
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

    def _skill_attachment(self, skills: dict[str, str]) -> Message:
        """Invoked skills, newest first, each cut to its limit, together within the budget."""
        parts, used = [], 0
        for name, body in list(skills.items())[::-1]:
            cap = self.restore_skill_tokens * 4
            body = body if len(body) <= cap else body[:cap] + SKILL_TRUNCATED
            if used + len(body) / 4 > self.restore_skills_total:
                break
            used += len(body) / 4
            parts.append(f"### Skill: {name}\n\n{body}")
        return text_user("Skills loaded earlier in this session (their instructions still apply):\n\n"
                         + "\n\n---\n\n".join(parts), synthetic=True)

