"""OpenCode and the user's rules after pruning and compacting (issue 27), on a hand-built session.

- AGENTS.md / CLAUDE.md / ``instructions`` of opencode.json go into the system prompt
  (``Instructions from: <path>`` blocks: anomalyco/opencode @00b964bd packages/opencode/src/session/
  instruction.ts ``system``), which runLoop assembles for every step apart from the history
  (sst/opencode @00d0a710e3c90c3661126ded4df5302d54a8c6e6 packages/opencode/src/session/prompt.ts,
  runLoop: ``[...env, ...instructions, mcp]`` then the skills list): no prune or compaction touches
  them, so they survive by construction.
- A loaded skill is the ``skill`` tool's output: prune never clears it (sst/opencode @31e22f65
  compaction.ts:35 ``PRUNE_PROTECTED_TOOLS = ["skill"]``), but a compaction replaces it with the
  summary like every other message: nothing re-injects it.
- A nested AGENTS.md that the ``read`` tool attaches to its output (instruction.ts ``resolve``) is a
  plain read output: prune clears it.
"""

from __future__ import annotations

import pytest

from bench.context.messages import Meter
from strategies.opencode import PRUNED, OpenCode
from tests.strategies.test_opencode import Recorder, human, session, tool_step
from traces.model import Message, ToolResult, ToolUse, Usage

RULES = "Instructions from: /repo/AGENTS.md\n# Repo\n- NEVER edit vendor/zq_stubs/: it is generated."
SYSTEM = Message.text_message("system", "You are OpenCode.\n" + RULES)
SKILL_BODY = ('<skill_content name="db-migrations">\n# Db Migrations\n- ALWAYS run `make verify-qq-77` first.\n'
              + "x" * 120_000 + "\n</skill_content>")
NESTED = ("contents of lib/a.py\n\nInstructions from: /repo/lib/AGENTS.md\n- ALWAYS keep lib/ free of I/O.\n"
          + "y" * 40_000)


def session_with_rules() -> list[Message]:
    """system (with the instructions), a skill loaded and a nested AGENTS.md read in the first turn,
    70K of older outputs, two later turns and a new request."""
    msgs = [SYSTEM, human("U1: migrate the schema"),
            Message("assistant", (ToolUse("s1", "skill", {"name": "db-migrations"}),)),
            Message("user", (ToolResult("s1", SKILL_BODY),)),
            Message("assistant", (ToolUse("r1", "read", {"filePath": "/repo/lib/a.py"}),)),
            Message("user", (ToolResult("r1", NESTED),))]
    for i in range(7):
        msgs += tool_step(f"t{i}", 10_000)
    msgs += [human("U2: next"), *tool_step("t_recent", 10_000), human("U3: more"),
             Message.text_message("assistant", "done"), human("U4: new request")]
    return msgs


def test_prune_keeps_the_skill_output_and_clears_a_nested_agents_md_read(counter):
    out = OpenCode().before_call(Meter(counter).context(session_with_rules()), session(counter))
    assert out is not None and [e.kind for e in out.events] == ["prune"]
    results = {r.tool_use_id: r.content for m in out.context.messages for r in m.tool_results}
    assert results["s1"] == SKILL_BODY  # protected, however old and large
    assert results["r1"] == PRUNED  # the nested instructions went with the read output
    assert out.context.messages[0] is SYSTEM


@pytest.mark.parametrize("generation", ["classic", "overflow", "tail"])
def test_compaction_keeps_the_system_prompt_instructions_and_drops_the_skill(counter, generation):
    s = session(counter, summarizer=Recorder())
    s.last_usage = Usage(input_tokens=199_000)
    out = OpenCode(generation=generation).before_call(Meter(counter).context(session_with_rules()), s)
    assert out is not None and "summarize" in [e.kind for e in out.events]
    after = out.context.messages
    assert after[0].text == SYSTEM.text  # the instructions, verbatim, by construction
    assert sum(RULES in m.text for m in after) == 1
    assert not any("make verify-qq-77" in r.content for m in after for r in m.tool_results)
    assert not any("make verify-qq-77" in m.text for m in after)
