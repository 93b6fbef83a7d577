"""Rules as the agents load them (issue 27): where the ``instructions`` scenarios plant them, the
``instructions`` and ``skills`` columns, the verdict constraint on them, and a skill's rules kept by
Claude Code's re-injection after compacting but lost by a strategy without it."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
import pytest

import strategies
from bench.cost.pricing import profile
from bench.decide.verdict import Constraint, check_objective, decide, parse_objective
from bench.replay.loop import ReplayConfig, replay
from bench.replay.records import TaskResult
from bench.scoring.metrics import METRIC_BY_NAME, by_strategy, results_table
from bench.scoring.probes import needle_observer, probe_scores, rule_retention
from bench.summarizers import Summary, SummaryRequest
from bench.tokens.counter import TokenCounter
from strategies.claude_code import SKILL_LEAD
from traces import synthetic_rules as sr
from traces.model import Message, Needle, Text, ToolResult, ToolUse, Trace, render
from traces.scenarios import DEFAULT_BENCH, SCENARIOS
from traces.synthetic import generate


def rules_of(trace: Trace, kind: str) -> list[Needle]:
    return [n for n in trace.needles if n.kind == kind]


def only_at(trace: Trace, needle: Needle) -> None:
    """The rule's answer occurs in its own message and nowhere else."""
    assert {i for i, m in enumerate(trace.messages) if needle.answer in render(m)} == {needle.message_index}


@pytest.mark.parametrize("seed", [0, 1])
def test_claude_code_layout_claude_md_in_the_first_turn_reminder_and_skills_as_injected_bodies(seed):
    t = generate("instructions", seed)
    instructions, skills = rules_of(t, "instruction"), rules_of(t, "skill")
    assert len(instructions) == 5 and len(skills) == 6
    first_user = next(i for i, m in enumerate(t.messages) if m.role == "user")
    reminder = t.messages[first_user].blocks[0]
    assert isinstance(reminder, Text) and reminder.text.startswith(sr.CLAUDE_MD_LEAD)
    assert "CLAUDE.md (project instructions, checked into the codebase)" in reminder.text
    for n in instructions:
        assert n.message_index == first_user and n.text in reminder.text
        assert n.text.startswith(("NEVER", "ALWAYS"))
        only_at(t, n)
    for at in {n.message_index for n in skills}:
        body = t.messages[at]
        assert body.role == "user" and body.meta.get("injected") and body.text.startswith(SKILL_LEAD)
        launched, call = t.messages[at - 1], t.messages[at - 2]
        (use,) = call.tool_uses
        assert use.name == "Skill" and launched.tool_results[0].tool_use_id == use.id
        assert launched.tool_results[0].content == f"Launching skill: {use.input['skill']}"
    assert len({n.message_index for n in skills}) == 2
    for n in skills:
        only_at(t, n)
    assert len({n.answer for n in t.needles}) == len(t.needles)


def test_codex_and_opencode_layouts():
    codex = generate("instructions-codex", 0)
    (at,) = {n.message_index for n in rules_of(codex, "instruction")}
    first_user = next(i for i, m in enumerate(codex.messages) if m.role == "user")
    assert at == first_user and codex.messages[at].text.startswith("# AGENTS.md instructions for /home/dev/")
    assert "<INSTRUCTIONS>" in codex.messages[at].text
    assert all(codex.messages[n.message_index].text.startswith("<skill>") for n in rules_of(codex, "skill"))
    opencode = generate("instructions-opencode", 0)
    assert {n.message_index for n in rules_of(opencode, "instruction")} == {0}
    assert "Instructions from: /home/dev/" in opencode.messages[0].text
    for n in rules_of(opencode, "skill"):
        (result,) = opencode.messages[n.message_index].tool_results
        assert result.content.startswith("<skill_content") and n.text in result.content
        only_at(opencode, n)


def test_the_default_bench_runs_one_rule_bearing_scenario():
    """`make bench` measures the rules (issue 27): `instructions` is in it, with an instruction file and two
    skills; the other scenarios plant none, so their traces (and results) stay as they were."""
    ruled = [name for name in DEFAULT_BENCH if SCENARIOS[name].instructions or SCENARIOS[name].skills]
    assert ruled == ["instructions"]
    assert SCENARIOS["instructions"].instructions == 5 and len(SCENARIOS["instructions"].skills) == 2
    assert not [n for n in generate("short", 0).needles if n.kind in ("instruction", "skill")]


# --- the columns -------------------------------------------------------------------------------------

def row(kind: str, moment: str, retained: bool, rnd: int = 1, needle: str = "r") -> dict:
    return {"strategy": "s", "moment": moment, "round": rnd, "needle": needle, "needle_kind": kind,
            "cls": "retained-verbatim" if retained else "missing", "retained": retained}


def test_rule_columns_pool_every_compaction_and_the_end():
    rows = [row("instruction", "compaction", True, 1), row("instruction", "compaction", False, 2),
            row("instruction", "end", True), row("instruction", "step", False),  # a step probe is no rule check
            row("skill", "compaction", False, 1), row("skill", "end", False), row("fact", "end", True)]
    scores = probe_scores(rows)
    assert scores["instructions"] == pytest.approx(2 / 3) and scores["skills"] == 0.0
    assert math.isnan(probe_scores([row("fact", "end", True)])["instructions"])
    frame = rule_retention(pd.DataFrame(rows))
    inst = frame[frame.kind == "instruction"].iloc[0]
    assert inst.n == 3 and inst.retention == pytest.approx(2 / 3) and inst.by_round == {1: 1.0, 2: 0.0}


def test_rule_columns_in_results_and_the_printed_table():
    assert METRIC_BY_NAME["instructions"].lower_is_better is False and "skills" in METRIC_BY_NAME
    a = TaskResult("t", "keeper")
    a.probes.extend([row("instruction", "end", True), row("skill", "end", True)])
    b = TaskResult("t", "dropper")
    b.probes.extend([row("instruction", "end", False), row("skill", "end", True)])
    table = results_table([a, b])
    assert list(table.set_index("strategy").instructions[["keeper", "dropper"]]) == [1.0, 0.0]
    assert {"instructions", "skills"} <= set(by_strategy(table).columns)
    plain = TaskResult("u", "keeper")
    plain.probes.append(row("fact", "end", True))
    table = results_table([plain])
    assert table.instructions.isna().all() and "instructions" not in by_strategy(table)


def results(values: dict[str, tuple[float, float]]) -> pd.DataFrame:
    """Two traces per strategy: (cost, instructions)."""
    return pd.DataFrame([{"trace": f"t{k}", "strategy": s, "cost": cost, "overflows": 0, "retention": 1.0,
                          "instructions": inst, "input_tokens": 1_000, "failed": "", "error": ""}
                         for s, (cost, inst) in values.items() for k in range(2)])


def test_the_instructions_constraint_parses_and_binds():
    obj = parse_objective("overflows=0,instructions>=0.9,min-cost")
    assert Constraint("instructions", ">=", 0.9) in obj.constraints
    check_objective("overflows=0,instructions>=0.9,min-cost")  # a metric a run measures
    table = results({"none": (3.0, 1.0), "cheap": (1.0, 0.5), "keeps": (2.0, 0.95)})
    free = decide(table, "overflows=0,min-cost", resamples=200)
    bound = decide(table, obj, resamples=200)
    assert free.recommended == "cheap" and bound.recommended == "keeps"
    assert bound.excluded["cheap"] == ("instructions 50.0%, not >= 90.0%",)
    assert bound.binding == ("instruction rules kept at least 90.0%",)


# --- re-injection --------------------------------------------------------------------------------------

def checks(steps: int) -> list[Message]:
    """``steps`` large Bash outputs, enough to cross a 200K window, then a last answer."""
    msgs = []
    for k in range(steps):
        out = "\n".join(f"step {k} row {j}: status ok, nothing to report" for j in range(500))
        msgs += [Message("assistant", (Text(f"Check {k}."), ToolUse(f"b{k}", "Bash", {"command": f"check {k}"}))),
                 Message("user", (ToolResult(f"b{k}", out),))]
    return [*msgs, Message.text_message("assistant", "Done.")]


def skill_session(steps: int = 60) -> Trace:
    """A skill loaded in the first turn, then enough large outputs to cross a 200K window."""
    rules = sr.draw_rules(__import__("random").Random(7), 3)
    body = f"{SKILL_LEAD} /h/.claude/skills/db-migrations\n\n# Db Migrations\n\n" + "\n".join(
        f"- {r.text}" for r in rules)
    msgs = [Message.text_message("system", "You are a coding agent."),
            Message.text_message("user", "Please write the schema migration."),
            Message("assistant", (Text("Loading the skill."), ToolUse("s0", "Skill", {"skill": "db-migrations"}))),
            Message("user", (ToolResult("s0", "Launching skill: db-migrations"),)),
            Message.text_message("user", body, meta={"injected": True}),
            Message.text_message("assistant", "Skill loaded."),
            Message.text_message("user", "Good, now run the checks.")]  # the latest request is not the skill
    msgs += checks(steps)
    needles = tuple(Needle(f"skill-{i}", "skill", r.text, r.question, r.answer, 4) for i, r in enumerate(rules))
    return Trace("skill-session", tuple(msgs), agent="claude-code", needles=needles)


@dataclass(frozen=True)
class Terse:
    """A summary that quotes nothing (the extractive default quotes the user's messages whole, the
    injected skill body among them): what survives is what the strategy kept or re-injected."""

    name: str = "terse"

    def summarize(self, request: SummaryRequest) -> Summary:
        return Summary("Summary: we ran checks on the schema migration; all passed.", 1_000, 20, "terse")


def skill_scores(variant: str) -> dict:
    trace = skill_session()
    result = replay(trace, strategies.build(variant), ReplayConfig(profile("claude-sonnet-4-5")),
                    counter=TokenCounter(), summarizer=Terse(),
                    observers=(needle_observer(trace, strategy=variant),))
    after = [p for p in result.probes if p["moment"] == "compaction"]
    assert after, f"{variant} never compacted the skill session"
    return probe_scores(result.probes) | {"after": after}


def test_claude_code_keeps_a_skills_rules_by_reinjecting_it_and_strategies_without_it_lose_them():
    """Claude Code re-injects invoked skills after compacting, each cut to 5K tokens, 25K together
    (strategies/claude_code/v2_0.py: POST_COMPACT_MAX_TOKENS_PER_SKILL / POST_COMPACT_SKILLS_TOKEN_BUDGET
    in compact.ts as public analyses of the 2026 source quote them; CHANGELOG L4042, 2.1.45, fixes the
    re-injection). With a summary that quotes nothing, a strategy without the re-injection
    (``claude-code:2.0``, ``restore_skills=False``; ``opencode``) has lost the rules after the compaction.
    (Codex keeps them here: in Claude Code's layout the skill body is a plain user message, which Codex's
    compaction keeps among the user messages.)"""
    kept = skill_scores("claude-code")
    assert all(p["retained"] for p in kept["after"]) and kept["skills"] == 1.0
    for variant in ("claude-code:2.0", "opencode"):
        lost = skill_scores(variant)
        assert not any(p["retained"] for p in lost["after"]), variant
        assert lost["skills"] < 0.5


def test_the_report_table_shows_the_rule_columns_only_when_the_run_has_rules():
    from reports.tables import table_html

    totals = pd.DataFrame({"strategy": ["none", "keeps"], "cost": [3.0, 1.0], "instructions": [1.0, 0.8],
                           "skills": [1.0, float("nan")]})
    shown = table_html(totals)
    assert "instruction rules kept" in shown and "80.0%" in shown and "skill rules kept" in shown
    assert "instruction rules kept" not in table_html(totals.assign(instructions=float("nan")))


def claude_md_session(steps: int = 60) -> Trace:
    """The CLAUDE.md reminder heading the first user turn (where the synthetic layout puts the user
    context Claude Code sends), then enough large outputs to cross a 200K window."""
    rules = sr.draw_rules(__import__("random").Random(11), 3)
    reminder = sr.claude_md_reminder("/h/proj/CLAUDE.md", "\n".join(f"- {r.text}" for r in rules))
    msgs = [Message.text_message("system", "You are a coding agent."),
            Message("user", (Text(reminder), Text("Please tidy the build scripts."))),
            Message.text_message("assistant", "On it."),
            Message.text_message("user", "Good, now run the checks.")]  # the latest request is not the first turn
    msgs += checks(steps)
    needles = tuple(Needle(f"rule-{i}", "instruction", r.text, r.question, r.answer, 1) for i, r in enumerate(rules))
    return Trace("claude-md-session", tuple(msgs), agent="claude-code", needles=needles)


@pytest.mark.parametrize("variant", ["claude-code", "claude-code:2.0", "claude-code:1.0"])
def test_claude_code_sends_the_claude_md_context_again_after_every_compaction(variant):
    """Claude Code prepends the user context (CLAUDE.md in a system reminder) to the messages of every
    request and never stores it in the history (prependUserContext: src/query.ts L622, src/utils/api.ts
    L419 in DroxKiwi/claude-code-leak-packaged @ fb1320d), so every generation has the rules after a
    compaction whatever the summary says; a strategy that summarizes the first turn away (opencode) has
    lost them with a summary that quotes nothing."""
    trace = claude_md_session()
    for name, kept in ((variant, True), ("opencode", False)):
        result = replay(trace, strategies.build(name), ReplayConfig(profile("claude-sonnet-4-5")),
                        counter=TokenCounter(), summarizer=Terse(),
                        observers=(needle_observer(trace, strategy=name),))
        after = [p for p in result.probes if p["moment"] == "compaction"]
        assert after, f"{name} never compacted"
        assert all(p["retained"] is kept for p in after), name
    events = [e for e in replay(trace, strategies.build(variant), ReplayConfig(profile("claude-sonnet-4-5")),
                                counter=TokenCounter(), summarizer=Terse()).events if e.kind == "reinject"]
    assert any("user context" in e.detail for e in events)
