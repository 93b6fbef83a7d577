"""Instruction files and skills for synthetic sessions, placed where each agent puts them (issue 27).

Users' most frequent complaint about compaction is lost *rules* (a CLAUDE.md "never ..." forgotten
after an auto-compact, a loaded skill dropped), not lost facts. A scenario with ``instructions`` > 0
gets a project instruction file of that many rules, and one skill per entry of ``skills`` loaded when
the session is that far through its tokens, each skill carrying ``rules_per_skill`` rules. Every
rule becomes a typed needle (kind ``instruction`` or ``skill``) whose answer is the rule's one
distinctive token (a path, a command, a name built from the needle-only vocabulary), so exact
presence in the context sent says whether the rule is still there.

Where each agent puts them (``layout``):

- ``claude-code``: the CLAUDE.md contents in a ``<system-reminder>`` at the head of the first user
  turn ("As you answer the user's questions, you can use the following context: # claudeMd ...
  Contents of <path> (project instructions, checked into the codebase)"; Claude Code's
  prependUserContext, an ``isMeta`` user message the API request merges into the first user turn, as
  quoted by public analyses of the 2026 source). A skill: a ``Skill`` tool call whose result is
  "Launching skill: <name>", then the skill body as an injected (``isMeta``) user message starting
  "Base directory for this skill: <dir>" (the recorded shape in ../shared/traces
  claude-code__entireio-skills, and what strategies/claude_code/common.py re-injects after compacting).
- ``codex``: AGENTS.md as its own user message before the first prompt, "# AGENTS.md instructions
  for <cwd>" then the text in ``<INSTRUCTIONS>`` tags (codex-rs core user_instructions); a skill as
  an injected user message holding the body in ``<skill>`` tags after the model asks for it.
- ``opencode``: the AGENTS.md text appended to the system prompt ("Instructions from: <path>",
  packages/opencode/src/session/instruction.ts); a skill as the result of a ``skill`` tool call
  (packages/opencode/src/tool/skill.ts), which OpenCode's prune never clears.

The rules are drawn from their own seeded generator, so a scenario without rules is byte for byte
what it was before this module existed.
"""

from __future__ import annotations

from dataclasses import dataclass
from random import Random

from traces import synthetic_text as tx
from traces.synthetic_needles import WORDS

LAYOUTS = ("claude-code", "codex", "opencode")
CLAUDE_MD_LEAD = ("<system-reminder>\nAs you answer the user's questions, you can use the following context:\n"
                  "# claudeMd\n")
SKILL_LEAD = "Base directory for this skill:"
"""The same lead strategies/claude_code/common.py looks for (not imported: traces is an earlier stage)."""
SKILL_NAMES = ("db-migrations", "release-checklist", "api-style", "incident-triage", "perf-review")
SKILL_CHARS = (3_000, 7_000)
"""Size of a skill body (~0.8-2K tokens; the recorded skills in ../shared/traces are 1-5K tokens)."""


@dataclass(frozen=True)
class Rule:
    """One rule: the sentence that states it, the question that probes it, its distinctive answer."""

    text: str
    question: str
    answer: str


def _w(rng: Random) -> str:
    return rng.choice(WORDS)


def draw_rule(rng: Random, variant: int) -> Rule:
    """A "never ..." or "always ..." rule; ``variant`` cycles through the templates."""
    k = variant % 5
    if k == 0:
        folder = f"generated/{_w(rng)}_{_w(rng)}_stubs"
        return Rule(f"NEVER edit anything under {folder}/: it is regenerated on every build.",
                    "Which directory must never be edited?", folder)
    if k == 1:
        cmd = f"make verify-{_w(rng)}-{rng.randint(10, 99)}"
        return Rule(f"ALWAYS run `{cmd}` before saying a change is done.",
                    "Which command must always run before a change is called done?", cmd)
    if k == 2:
        table = f"{_w(rng)}_{_w(rng)}_ledger"
        return Rule(f"NEVER drop, truncate or reset the `{table}` table, not even in a local database.",
                    "Which table must never be dropped or reset?", table)
    if k == 3:
        prefix = f"{_w(rng).upper()}-{rng.randint(100, 999)}"
        return Rule(f"ALWAYS start commit messages with the ticket prefix `{prefix}:`.",
                    "Which prefix must every commit message start with?", prefix)
    flag = f"--{_w(rng)}-{_w(rng)}-mode"
    return Rule(f"NEVER pass `{flag}` to any command; it corrupts the shared cache.",
                "Which flag must never be passed to a command?", flag)


def draw_rules(rng: Random, n: int, start: int = 0) -> tuple[Rule, ...]:
    """``n`` rules with distinct answers, templates cycled from ``start``."""
    out: list[Rule] = []
    while len(out) < n:
        r = draw_rule(rng, start + len(out))
        if all(r.answer not in o.answer and o.answer not in r.answer for o in out):
            out.append(r)
    return tuple(out)


def instruction_file(rng: Random, project: str, rules: tuple[Rule, ...]) -> str:
    """The body of a project instruction file: a few lines of context, then the rules as a list."""
    head = (f"# {project}\n\nProject notes for coding agents. Build with `make`, test with `make test`.\n\n"
            "## Rules\n\n")
    return head + "\n".join(f"- {r.text}" for r in rules) + "\n"


def pad_instructions(rng: Random, body: str, chars: int) -> str:
    """``body`` grown to ``chars`` characters with the project notes a large instruction file carries
    (architecture, conventions, runbooks: prose sections after the rules), the rules left first and intact."""
    lines = tx.prose_lines(rng)
    out, size, section = [body, "\n## Project notes\n"], len(body) + 18, 0
    while size < chars:
        section += 1
        block = f"\n### Notes {section}\n\n" + tx.fill("", lines, min(4_000, chars - size)) + "\n"
        out.append(block)
        size += len(block)
    return "".join(out)


def skill_body(rng: Random, name: str, rules: tuple[Rule, ...]) -> str:
    """A SKILL.md body: a title, its rules, then steps and notes up to a skill's size."""
    head = (f"# {name.replace('-', ' ').title()}\n\nUse this skill for {name.replace('-', ' ')} work.\n\n"
            "## Rules\n\n" + "\n".join(f"- {r.text}" for r in rules) + "\n\n## Steps\n\n")
    return tx.fill(head, tx.prose_lines(rng), rng.randint(*SKILL_CHARS))


def claude_md_reminder(path: str, body: str) -> str:
    """Claude Code's first-turn reminder holding a project CLAUDE.md."""
    return (CLAUDE_MD_LEAD + "Codebase and user instructions are shown below. Be sure to adhere to these "
            "instructions. IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them "
            f"exactly as written.\n\nContents of {path} (project instructions, checked into the codebase):\n\n"
            f"{body}\n\n      IMPORTANT: this context may or may not be relevant to your tasks. You should not "
            "respond to this context unless it is highly relevant to your task.\n</system-reminder>")


def codex_agents_md(cwd: str, body: str) -> str:
    """Codex's AGENTS.md user message."""
    return f"# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\n{body}\n</INSTRUCTIONS>"


def opencode_instructions(path: str, body: str) -> str:
    """OpenCode's instruction block appended to the system prompt."""
    return f"Instructions from: {path}\n{body}"
