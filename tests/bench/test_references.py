"""The re-read proxy: recorded tool calls that relied on something the strategy had dropped."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

import strategies
from bench.metrics import results_table
from bench.pricing import profile
from bench.references import ReferenceCheck, references
from bench.replay import ReplayConfig, replay
from bench.tokens import TokenCounter
from strategies.base import Outcome, Strategy, event
from strategies.opencode import PRUNED
from traces.model import Message, Text, ToolResult, ToolUse, Trace

SRC = "def parse_config(path, *, strict=True):\n    return load(path)\n"


def test_references_are_the_path_and_the_longest_quoted_line():
    edit = ToolUse("e", "Edit", {"file_path": "/r/app.py", "old_string": "x = 1\ndef parse_config(path):\n",
                                 "new_string": "..."})
    assert references(edit) == ("/r/app.py", "def parse_config(path):")
    assert references(ToolUse("b", "bash", {"command": "ls"})) == ()
    assert references(ToolUse("e", "edit", {"path": "a.py", "old_str": "}\n"})) == ("a.py",)  # too short to count


def trace() -> Trace:
    """Read app.py (its text appears in the output), work on, then edit it quoting that text."""
    msgs = [Message.text_message("system", "agent"), Message.text_message("user", "fix the config parser"),
            Message("assistant", (ToolUse("r1", "read_file", {"path": "/r/app.py"}),)),
            Message("user", (ToolResult("r1", SRC),)),
            Message("assistant", (ToolUse("b1", "bash", {"command": "pytest -q"}),)),
            Message("user", (ToolResult("b1", "1 failed"),)),
            Message("assistant", (Text("Fixing it."), ToolUse("e1", "edit_file", {
                "path": "/r/app.py", "old_text": "def parse_config(path, *, strict=True):", "new_text": "..."}))),
            Message("user", (ToolResult("e1", "ok"),)),
            Message("assistant", (ToolUse("w1", "write", {"path": "/r/new_module.py", "content": "x"}),)),
            Message("user", (ToolResult("w1", "created"),)),
            Message.text_message("assistant", "done")]
    return Trace("refs", tuple(msgs))


@dataclass(frozen=True, kw_only=True)
class ClearOutputs(Strategy):
    """Clears every tool output before each call (keeps the calls): the read of app.py is gone."""

    name = "clear-outputs"
    citation = "test"

    def before_call(self, ctx, session):
        new = ctx.replace(strategies.rewrite_results(m, lambda r: PRUNED if r.content != PRUNED else None)
                          for m in ctx.messages)
        return Outcome(new, (event("prune", ctx, new),)) if new.messages != ctx.messages else None


def unseen_by_call(strategy: Strategy) -> list[int]:
    result = replay(trace(), strategy, ReplayConfig(profile("claude-sonnet-4-5")), counter=TokenCounter())
    return [c.unseen_refs for c in result.calls]


def test_an_edit_quoting_text_the_strategy_cleared_counts_once():
    # call 3's answer edits app.py quoting its text: the path is still in the read call's input,
    # but the quoted line was only in the cleared output. The new file of call 4 was never seen
    # before, so it does not count; `none` keeps everything.
    assert unseen_by_call(ClearOutputs()) == [0, 0, 1, 0, 0]
    assert unseen_by_call(strategies.build("none")) == [0, 0, 0, 0, 0]


def test_a_strategy_written_message_that_quotes_it_keeps_it_in_view():
    check = ReferenceCheck()
    history = list(trace().messages[:6])
    answer = trace().messages[6]
    summary = Message.text_message("user", "Summary: /r/app.py starts with def parse_config(path, *, strict=True):")
    assert check.unseen(history, [history[0], history[1], summary], answer) == 0
    assert check.unseen(history, [history[0], history[1]], answer) == 1


def test_results_sum_it_per_task():
    result = replay(trace(), ClearOutputs(), ReplayConfig(profile("claude-sonnet-4-5")), counter=TokenCounter())
    table = results_table([result])
    assert table.unseen_references.tolist() == [1]
    assert isinstance(table, pd.DataFrame)
