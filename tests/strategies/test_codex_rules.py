"""Codex and the user's rules after a compaction (issue 27), on a hand-built session.

AGENTS.md is part of the initial context ``build_initial_context`` writes and comes back after every
compaction, local or remote, in both generations (strategies/codex/local.py cites where); a loaded
skill's ``<skill>`` body is a contextual item (event_mapping.rs ``is_contextual_user_message``): never
kept as a user message, never a turn boundary, never rebuilt."""

from __future__ import annotations

import pytest

import strategies
from bench.context.messages import Meter
from strategies.codex import (
    SUMMARY_PREFIX,
    Codex,
    contextual,
    initial_context_item,
    turn_boundary,
    user_messages,
)
from tests.strategies.test_codex import SYSTEM, call, output, session, user
from traces.model import Message, Text, Usage

AGENTS = user("# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nNEVER edit vendor/zq_stubs.\n</INSTRUCTIONS>")
ENV = user("<environment_context>\n<cwd>/repo</cwd>\n</environment_context>")
DEV = Message("user", (Text("<permissions instructions>sandboxed</permissions instructions>"),),
              meta={"role": "developer"})
SKILL = Message.text_message(
    "user", "<skill>\n<name>db-migrations</name>\n<path>/h/.codex/skills/db/SKILL.md</path>\n"
            "ALWAYS run make verify-qq-77 first.\n</skill>", meta={"injected": True})


def answer(text: str) -> Message:
    return Message.text_message("assistant", text)


def codex_session() -> list[Message]:
    """Initial context, a request, a skill loaded mid-turn, tool work, a second request."""
    return [SYSTEM, DEV, AGENTS, ENV, user("migrate the schema"), call("c0", "cat SKILL.md"), output("c0", "ok"),
            SKILL, call("c1", "make"), output("c1", "built"), answer("migrated"), user("now the docs"),
            call("c2", "ls docs"), output("c2", "x" * 400)]


@pytest.mark.parametrize("text", [
    "<skill>\n<name>a</name>\n<path>p</path>\nbody\n</skill>", "  <SKILL>\nbody\n</skill>",
    "<user_shell_command>echo 1</user_shell_command>", "<turn_aborted>x</turn_aborted>",
    "# AGENTS.md instructions for /x\n\n<INSTRUCTIONS>\nb\n</INSTRUCTIONS>",
    "<environment_context>x</environment_context>"])
def test_contextual_items_are_not_user_messages_nor_turn_boundaries(text):
    m = user(text)
    assert contextual(m) and not turn_boundary(m) and user_messages((m, user("real"))) == ["real"]


def test_only_the_initial_context_is_rebuilt_not_a_skill_body():
    assert initial_context_item(AGENTS) and initial_context_item(ENV) and initial_context_item(DEV)
    assert contextual(SKILL) and not initial_context_item(SKILL)
    assert not contextual(user("please read <skill> docs")) and turn_boundary(user("please read <skill> docs"))


def texts(msgs) -> list[str]:
    return [m.text for m in msgs]


def test_local_mid_turn_compaction_reinjects_agents_md_above_the_last_request_and_drops_the_skill(counter):
    """2026 (compact.rs @e06dd0e5 BeforeLastUserMessage): the whole initial context just above the
    last real user message; the skill body is neither kept nor rebuilt."""
    s, recorder = session(counter)
    out = Codex().on_overflow(Meter(counter, "bytes/4").context(codex_session()), s)
    assert texts(out.context.messages) == ["You are Codex.", "migrate the schema", DEV.text, AGENTS.text, ENV.text,
                                           "now the docs", SUMMARY_PREFIX + "\nSUMMARY"]
    assert "make verify-qq-77" not in "".join(texts(out.context.messages))
    assert SKILL in recorder.requests[0].messages  # the summary was asked with it: only the summary can carry it
    assert "3 initial-context item(s) re-injected" in out.events[0].detail


def test_local_pre_turn_compaction_puts_the_initial_context_before_the_new_turn(counter):
    """Pre-turn (DoNotInject): the history is compacted without it; the next turn writes it again
    before its input. A trace that recorded that re-injection does not get it twice."""
    msgs = [*codex_session(), answer("done"), user("next request")]
    s, _ = session(counter)
    s.last_usage = Usage(input_tokens=190_000, output_tokens=1_000)
    out = Codex().before_call(Meter(counter, "bytes/4").context(msgs), s)
    assert texts(out.context.messages) == ["You are Codex.", "migrate the schema", "now the docs",
                                           SUMMARY_PREFIX + "\nSUMMARY", DEV.text, AGENTS.text, ENV.text,
                                           "next request"]
    recorded = [*codex_session(), answer("done"), ENV, user("next request")]
    out = Codex().before_call(Meter(counter, "bytes/4").context(recorded), s)
    assert texts(out.context.messages)[-3:] == [SUMMARY_PREFIX + "\nSUMMARY", ENV.text, "next request"]


def test_2025_generation_heads_the_new_history_with_the_initial_context(counter):
    """@0100b103 compact.rs ``build_compacted_history(initial_context, ...)``."""
    s, _ = session(counter)
    out = strategies.build("codex:2025").on_overflow(Meter(counter, "bytes/4").context(codex_session()), s)
    got = texts(out.context.messages)
    assert got[1:4] == [DEV.text, AGENTS.text, ENV.text] and len(got) == 5
    assert "make verify-qq-77" not in got[4] and "now the docs" in got[4]


@pytest.mark.parametrize("name", ["codex:remote", "codex:0.140-remote"])
def test_remote_compaction_drops_the_skill_body_and_keeps_agents_md(counter, name):
    """compact_remote.rs ``should_keep_compacted_history_item``: contextual user items are dropped
    (the skill body with them), then the initial context is inserted again."""
    s, _ = session(counter)
    out = strategies.build(name).on_overflow(Meter(counter, "bytes/4").context(codex_session()), s)
    got = texts(out.context.messages)
    assert AGENTS.text in got and SKILL.text not in got
    assert got.index(AGENTS.text) < got.index("now the docs")
