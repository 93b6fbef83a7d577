"""The sections a strategy's summary prompt asks for, read from the prompt itself.

Real agents' summary prompts name their sections in one of three ways: markdown headings
(OpenCode's tail template, Cline SDK, Goose: ``## Goal``), a numbered list (Claude Code:
``1. Primary Request and Intent``) or upper-case labels after "sections" (OpenHands, the
Complexity Trap: ``USER_CONTEXT, COMPLETED, PENDING``). The extractive summarizer writes the
sections the prompt names, in its order and style, so a summary has the shape its agent's model
would give it; a prompt in plain prose (Codex, Amp, Aider) gets :data:`DEFAULT`.

Each heading is given a *kind* by its words: what the extractive summarizer can put under it
(the user's requests, files, errors, actions taken, the agent's own statements, what is next).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

KINDS = ("requests", "files", "errors", "actions", "statements", "next")
"""What the extractive summarizer can fill a section with, in :func:`kind_of` order of precedence."""

_KIND_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("next", ("next", "pending", "current", "in progress", "todo", "plan", "remaining", "active")),
    ("requests", ("request", "intent", "goal", "objective", "task", "user", "instruction", "constraint",
                  "preference")),
    ("errors", ("error", "fix", "problem", "issue", "blocked", "test", "troubleshoot", "fail")),
    ("files", ("file", "code", "change", "artifact", "dep", "version_control", "version control")),
    ("actions", ("done", "completed", "progress", "action", "state", "did", "work")),
    ("statements", ("decision", "knowledge", "concept", "context", "highlight", "learn", "insight", "summary")),
)


@dataclass(frozen=True)
class Section:
    title: str
    kind: str
    style: str
    """How the heading is written: ``markdown`` (## / ###), ``numbered`` (1. Title:) or ``label`` (TITLE:)."""

    def heading(self, number: int) -> str:
        if self.style == "numbered":
            return f"{number}. {self.title}:"
        if self.style == "label":
            return f"{self.title}:"
        return f"## {self.title}"


DEFAULT: tuple[Section, ...] = (
    Section("Task", "requests", "markdown"),
    Section("Files touched", "files", "markdown"),
    Section("Errors seen", "errors", "markdown"),
    Section("Actions taken", "actions", "markdown"),
    Section("Agent's notes", "statements", "markdown"),
    Section("Next", "next", "markdown"),
)
"""The sections for a prompt in plain prose: what every real summary prompt asks for in some words."""

_MARKDOWN = re.compile(r"(?:^|[\s;,(])#{2,3} ([A-Z][A-Za-z&/' -]*?[A-Za-z])(?=\s*(?:[;,.:()\n]|with\b|$))", re.M)
_NUMBERED = re.compile(r"^\s*\d{1,2}\.\s+([A-Z][^:\n]{2,60}?)\s*(?::|$)", re.M)
_LABELS = re.compile(r"[Ss]ections?:?\s+((?:(?:and |also |for code tasks )*[A-Z][A-Z_]{2,}(?: \([^)]*\))?[,;]?\s*)+)")
_LABEL = re.compile(r"\b([A-Z][A-Z_]{2,})\b")


def kind_of(title: str) -> str:
    """What a heading asks for, by its words (first match in :data:`_KIND_WORDS` order)."""
    words = title.lower().replace("_", " ")
    for kind, keys in _KIND_WORDS:
        if any(k in words for k in keys):
            return kind
    return "statements"


@lru_cache(maxsize=256)
def sections(prompt: str) -> tuple[Section, ...]:
    """The sections ``prompt`` names, in order (duplicates once); :data:`DEFAULT` when it names none."""
    found: list[tuple[str, str]] = [(t, "markdown") for t in _MARKDOWN.findall(prompt)]
    if len(found) < 2:
        found = [(t, "numbered") for t in _NUMBERED.findall(prompt)]
    if len(found) < 2:
        found = [(t, "label") for block in _LABELS.findall(prompt) for t in _LABEL.findall(block)]
    titles = list(dict.fromkeys(found))
    if len(titles) < 2:
        return DEFAULT
    return tuple(Section(t.strip(), kind_of(t), style) for t, style in titles)
