"""What every Claude Code generation shares: the file-state cache the post-compaction attachments
come from (which files the session touched, their latest known content, the invoked skills, the
todo list and the plan file), rebuilt from the history being summarized.

The restore itself (newest first from the file-state cache, each re-read with a per-file token
limit, kept while the running total fits) follows public de-minifications of the bundle: the
June-2025 one (``improved-claude-code-5.mjs`` L45651-45773 in the analysis_claude_code forks, e.g.
yordyi/analysis_claude_code) and a 2.x one (``chunks.107.mjs`` L1120-1269 in
mylinyuzhi/analysis_claude_code_v2). Medium confidence (third-party reconstructions).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bench.context import Message, ToolUse

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

    def tokens(self, count: Callable[[str], float] | None = None, limit: int = 5_000) -> int:
        """The whole file's size as Claude Code's re-read judges it against the per-file limit; a part
        is scaled up to the highest line number seen (a lower bound of the file's length).

        The Read tool checks the file's raw content (no line numbers): under a quarter of the limit by
        chars/4 it passes, else the provider's count decides (FileReadTool.ts ``validateContentTokens``:
        ``roughTokenCountEstimationForFileType``, then ``countTokensWithAPI``; public copies of the
        2026 source). ``count`` is the provider's count of a text (the session's ratio over our
        tokenizer); without it, chars/4 of the numbered text, as before."""
        if self.text is None:
            return 0
        if count is None:
            return round(len(_numbered(self.text, self.first)) / 4 * self.scale())
        rough = len(self.text) / 4 * self.scale()
        return round(rough if rough <= limit / 4 else count(self.text) * self.scale())


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
