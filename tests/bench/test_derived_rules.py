"""Instruction and skill rules derived from what a session itself shows loaded (issue 27): one
hand-built session per agent shape, the shapes that must derive nothing, the synthetic scenarios
(whose planted rules the derivation must find again) and the recorded sessions."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.scoring.derived_probes import derive_needles, rule_lines, rule_sources
from traces.model import Message, Text, ToolResult, ToolUse, Trace
from traces.synthetic import generate

REMINDER = ("<system-reminder>\nAs you answer the user's questions, you can use the following context:\n"
            "# claudeMd\nCodebase and user instructions are shown below.\n\n"
            "Contents of /r/CLAUDE.md (project instructions, checked into the codebase):\n\n# Repo\n\n"
            "- NEVER edit anything under `gen/zz_stubs/`.\n- ALWAYS run make verify-qq-17 before saying done.\n"
            "- The build uses make.\n\n"
            "      IMPORTANT: this context may or may not be relevant to your tasks. You should not respond "
            "to this context unless it is highly relevant to your task.\n</system-reminder>")
CC_SKILL = ("Base directory for this skill: /h/.claude/skills/db\n\n# Db\n\n- ALWAYS back up the `ledger_qq` table "
            "first.\n- Prefer small, reversible migrations.\n\n```\nnever mind this code line\n```")


def rules(trace: Trace) -> dict[str, list[tuple[str, str, int]]]:
    out: dict[str, list[tuple[str, str, int]]] = {"instruction": [], "skill": []}
    for n in derive_needles(trace):
        if n.kind in out:
            out[n.kind].append((n.text, n.answer, n.message_index))
    return out


def claude_code() -> Trace:
    return Trace("cc", (Message.text_message("system", "You are Claude Code."),
                        Message("user", (Text(REMINDER), Text("Please migrate the schema."))),
                        Message("assistant", (ToolUse("s0", "Skill", {"skill": "db"}),)),
                        Message("user", (ToolResult("s0", "Launching skill: db"),)),
                        Message.text_message("user", CC_SKILL, meta={"injected": True}),
                        Message.text_message("assistant", "Migrating; I will run make verify-qq-17 at the end.")),
                 agent="claude-code")


def test_claude_code_rules_from_the_first_turn_reminder_and_the_skill_body():
    got = rules(claude_code())
    assert [(a, i) for _, a, i in got["instruction"]] == [
        ("gen/zz_stubs/", 1),
        # the command is repeated by the agent: the whole rule line is the answer, not the bare command
        ("ALWAYS run make verify-qq-17 before saying done.", 1)]
    assert [(a, i) for _, a, i in got["skill"]] == [("ledger_qq", 4), ("Prefer small, reversible migrations.", 4)]
    # Claude Code's wrapper sentence is no rule; the request is still the user's own words
    assert not any("IMPORTANT" in t for t, _, _ in got["instruction"])
    requests = [n.answer for n in derive_needles(claude_code()) if n.id.startswith("derived:request")]
    assert "migrate" in requests and "zz_stubs" not in " ".join(requests)


def test_codex_rules_from_the_agents_md_message_and_a_skill_item_are_not_the_users_request():
    agents = ("# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\n# Guide\n"
              "- NEVER pass `--zz-cache-mode` to any command.\n"
              "- Always keep commits small and focused on one change.\n</INSTRUCTIONS>")
    skill = ("<skill>\n<name>db</name>\n<path>/h/.codex/skills/db/SKILL.md</path>\n- Must tag `REL-42` releases.\n"
             "</skill>")
    t = Trace("cx", (Message.text_message("system", "You are Codex."), Message.text_message("user", agents),
                     Message.text_message("user", "<environment_context>\n<cwd>/repo</cwd>\n</environment_context>"),
                     Message.text_message("user", "Tidy up the release scripts."),
                     Message.text_message("user", skill), Message.text_message("assistant", "ok")), agent="codex")
    got = rules(t)
    assert [(a, i) for _, a, i in got["instruction"]] == [
        ("--zz-cache-mode", 1), ("Always keep commits small and focused on one change.", 1)]
    assert [(a, i) for _, a, i in got["skill"]] == [("REL-42", 4)]
    derived = derive_needles(t)
    assert {n.message_index for n in derived if n.id.startswith("derived:request")} == {3}
    assert not [n for n in derived if n.kind == "constraint"]  # the AGENTS.md rules are not the user's


def test_opencode_rules_from_the_system_prompt_and_the_skill_tool():
    system = ("You are opencode.\nInstructions from: /repo/AGENTS.md\n# Repo\n"
              "- NEVER touch `infra/prod_zz.tf` by hand.\n")
    body = '<skill_content name="db">\n# Skill: db\n\n- ALWAYS run `bun run db:check-7` first.\n</skill_content>'
    t = Trace("oc", (Message.text_message("system", system), Message.text_message("user", "Add the index."),
                     Message("assistant", (ToolUse("k", "skill", {"name": "db"}),)),
                     Message("user", (ToolResult("k", body),)), Message.text_message("assistant", "done")),
              agent="opencode")
    got = rules(t)
    assert [(a, i) for _, a, i in got["instruction"]] == [("infra/prod_zz.tf", 0)]
    assert [(a, i) for _, a, i in got["skill"]] == [("bun run db:check-7", 3)]


def test_a_rule_quoted_verbatim_elsewhere_is_not_probed_and_other_shapes_derive_nothing():
    quoted = claude_code()
    echo = Message.text_message("assistant", "Noted: ALWAYS run make verify-qq-17 before saying done.")
    t = replace(quoted, messages=(*quoted.messages, echo))
    assert [a for _, a, _ in rules(t)["instruction"]] == ["gen/zz_stubs/"]
    plain = Trace("p", (Message.text_message("system", "sys"),
                        Message.text_message("user", "Contents of the box: NEVER open it."),
                        Message.text_message("user", "<skill>unterminated and never closed"),
                        Message.text_message("assistant", "Instructions from: nowhere")))
    assert rules(plain) == {"instruction": [], "skill": []}  # no .md path, no closing tag, an assistant
    assert rule_sources((Message.text_message("user", "please always be careful"),)) == []


def test_rule_lines_skip_headings_code_and_prose_without_a_rule_word():
    body = "# NEVER a heading\n\nPlain prose here.\n```\nalways in code\n```\n1. You must do this one.\n* Avoid x."
    assert rule_lines(body) == ["You must do this one."]  # "Avoid x." is under four words


@pytest.mark.parametrize("scenario", ["instructions", "instructions-codex", "instructions-opencode"])
def test_the_planted_rules_of_the_synthetic_scenarios_are_found_again(scenario):
    """Derived from the text alone, every planted rule comes back as a rule of its kind, on its message."""
    t = generate(scenario, 0)
    planted = {(n.kind, n.text, n.message_index) for n in t.needles if n.kind in ("instruction", "skill")}
    derived = {(n.kind, n.text, n.message_index) for n in derive_needles(replace(t, needles=()))
               if n.kind in ("instruction", "skill")}
    assert planted and planted <= derived


def test_recorded_sessions_yield_their_own_rules(shared_traces):
    """The Codex rollouts that carry an AGENTS.md message and the Claude Code sessions that load
    skills get rules; sessions without either get none."""
    from traces.formats import load

    found: dict[str, set[str]] = {}
    for source in ("codex__entireio-skills", "claude-code__entireio-skills", "gemini-cli__savekirk-session-bridge"):
        path = shared_traces / source
        if not path.exists():
            pytest.skip(f"{path} is absent")
        for t in load([str(path)], lenient=True).traces:
            found.setdefault(source, set()).update(n.kind for n in derive_needles(t)
                                                   if n.kind in ("instruction", "skill"))
    assert "instruction" in found["codex__entireio-skills"]
    assert "skill" in found["claude-code__entireio-skills"]
    assert found["gemini-cli__savekirk-session-bridge"] == set()
