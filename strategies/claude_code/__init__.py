"""Claude Code's compaction: ``FiveLayer`` configured as each Claude Code generation ran it.

Sources: anthropics/claude-code CHANGELOG.md @ 5cfc0a19 ("L" = its line); spec/strategies.md §4.1
(services/compact/autoCompact.ts, compact.ts as published); the recorded sessions in
../shared/traces (research notes /work/notes/fidelity-research.md §1, windows.md §1).

One module per generation, each building on the one before (the registry variant <- version
range is ``strategies.versions.GENERATIONS``; the variants differ by the field defaults named there):

- ``v1_0``  (``claude-code:1.0``, 1.0.x): the trigger (window - reserve - 13K on the last usage
  plus an estimate of what is newer) and the attachments (files, todo list, plan file);
- ``v2_0``  (``claude-code:2.0``, [1.1, 2.1.17); ``claude-code:2.1.17``, [2.1.17, 2.1.21), adds the
  legacy microcompact, ``microcompact.legacy_microcompact``): invoked skills can be re-injected;
- ``v2_1``  (``claude-code:2.1.21`` ... ``claude-code``): the reserve capped at 20K (2.1.21), the
  circuit breaker (2.1.76), thrash detection (2.1.89), the reactive cut (2.1.142);
- ``common``: the file-state cache the attachments come from.

What is kept after compacting (compact.ts constants as quoted by public analyses of the 2026
source: POST_COMPACT_MAX_FILES_TO_RESTORE 5, POST_COMPACT_TOKEN_BUDGET 50K,
POST_COMPACT_MAX_TOKENS_PER_FILE 5K, POST_COMPACT_MAX_TOKENS_PER_SKILL 5K,
POST_COMPACT_SKILLS_TOKEN_BUDGET 25K): the summary message, then attachments —

- files: the 5 most recently *touched* files of the file-state cache (a Read, Edit or Write
  since the last compaction, or a file the last compaction restored; the cache is cleared when
  compacting), each re-read from disk *whole*: the current content, so a file edited after
  its read comes back edited, and a file read in part comes back whole. Over 5K tokens it comes
  back as a one-line reference; the files stop at 50K together. The replay rebuilds the current
  content from what the trace shows (``common._FileKnowledge``): a full read or a Write, with
  later edits applied; a file seen only in part is judged by its highest line number and comes
  back as the part the trace shows (``v1_0.Rules10._file_attachments``);
- invoked skills (``v2_0``);
- the todo list (TodoWrite's latest ``todos``; 1.0.11 L5520) and the plan file (the latest
  Write/Edit of a file under ``.claude/plans/``), when the session has them.

Not modelled: background-agent status, deferred-tool and MCP re-announcements (small), hook output.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.context import MAX_PARAM, Range
from strategies.claude_code.common import LINE_NUMBER, PLAN_DIR, SKILL_LEAD, SKILL_TRUNCATED
from strategies.claude_code.v2_1 import Rules21
from strategies.layered._common import CLEARED

__all__ = ["LINE_NUMBER", "PLAN_DIR", "SKILL_LEAD", "SKILL_TRUNCATED", "ClaudeCode"]


@dataclass(frozen=True, kw_only=True)
class ClaudeCode(Rules21):
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
    Version 7: the reactive cut of the summarize request keeps its last API round whole (v2_1.py).
    """

    name = "claude-code"
    ranges = {"autocompact_pct_override": Range(0, 100, lo_open=True),
              "auto_compact_window": Range(0, MAX_PARAM, lo_open=True, hi_open=True)}
    """The override is a percent, as the environment variable takes it; the window a positive size."""
    citation = "Claude Code services/compact/autoCompact.ts, compact.ts, prompt.ts; CHANGELOG.md @5cfc0a19; spec §4.1"
    version = 7

    persist_pct: float | None = None
    microcompact_pct: float | None = None
    microcompact_idle_seconds: float | None = None
    microcompact_drop_read_only: bool = False
    microcompact_marker: str | None = CLEARED
    autocompact_pct: float = 1.0
    autocompact_buffer: int = 13_000
    auto_compact_window: int | None = None
    """CLAUDE_CODE_AUTO_COMPACT_WINDOW (later also the ``autoCompactWindow`` setting): the window the
    trigger is computed on is at most this many tokens (a 1M model held to 200K compacts at 167K);
    None = the model's window. autoCompact.ts L33-47 (DroxKiwi/claude-code-leak-packaged @ fb1320d);
    CHANGELOG L2334 (2.1.128) fixes "1M-context models with a smaller autocompact window"."""
    autocompact_pct_override: float | None = None
    """CLAUDE_AUTOCOMPACT_PCT_OVERRIDE, a percent in (0, 100]: the threshold becomes
    min(floor(effective window × pct / 100), effective window − 13K), so it only ever compacts earlier
    (autoCompact.ts L72-90 there). None = off, as the agent ships."""
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
    legacy_microcompact: bool = False
    """Claude Code 2.1.17-2.1.22's microcompact, modelled (``microcompact.legacy_microcompact``): over the
    warning threshold, the outputs older than the newest 40K tokens cleared when that saves 20K. On in
    the ``claude-code:2.1.17`` generation; the recorded boundaries are honoured besides."""
    honour_microcompact: bool = True
    """Clear the tool outputs the transcript records Claude Code clearing (``microcompact``)."""
