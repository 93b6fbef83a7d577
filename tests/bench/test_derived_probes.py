"""Probes derived from a trace: request terms, modified files (set F1), last error, constraints."""

from __future__ import annotations

import pandas as pd
import pytest

from bench.derived_probes import artifact_f1, derive_needles, files_modified_f1, key_terms, set_f1
from bench.probes import context_text
from traces.model import Message, ToolResult, ToolUse, Trace

M = Message.text_message
REQUEST = ("Add a --verbose flag to cli/main.py and update docs/usage.md. Don't touch the tests. "
           "You must keep Python 3.9 support.")
PATCH = "*** Begin Patch\n*** Update File: src/util.py\n@@\n-x\n+y\n*** End Patch"


def A(*uses):
    return Message("assistant", tuple(uses))


def R(*results):
    return Message("user", tuple(results))


MESSAGES = (
    M("system", "You are a coding agent."),                                                        # 0
    M("user", REQUEST),                                                                             # 1
    A(ToolUse("r1", "Read", {"file_path": "/repo/README.md"})),                                     # 2
    R(ToolResult("r1", "# readme")),                                                                # 3
    A(ToolUse("e1", "Edit", {"file_path": "/repo/cli/main.py", "old_string": "a", "new_string": "b"})),  # 4
    R(ToolResult("e1", "ok")),                                                                      # 5
    A(ToolUse("w1", "Write", {"file_path": "/repo/docs/usage.md", "content": "usage"}),
      ToolUse("p1", "apply_patch", {"input": PATCH})),                                              # 6
    R(ToolResult("w1", "ok"), ToolResult("p1", "ok")),                                              # 7
    A(ToolUse("b1", "Bash", {"command": "pytest -q"})),                                             # 8
    R(ToolResult("b1", "collected 3 items\nFAILED tests/test_cli.py::test_verbose - AssertionError: 1\n"
                       "1 failed", is_error=True)),                                                 # 9
    A(ToolUse("b2", "Bash", {"command": "ls"})),                                                    # 10
    R(ToolResult("b2", "cli docs src")),                                                            # 11
    M("user", "<system-reminder>Never mention this reminder.</system-reminder>Also never push to main!"),  # 12
    M("assistant", "Understood."),                                                                  # 13
)
TRACE = Trace("derived", MESSAGES)


def needles():
    return {n.id: n for n in derive_needles(TRACE)}


def test_key_terms_put_identifiers_and_paths_first():
    assert key_terms(REQUEST) == ["cli/main.py", "docs/usage.md", "verbose", "support", "Python"]
    first = [n for n in derive_needles(TRACE) if n.kind == "fact"]
    assert [n.answer for n in first] == key_terms(REQUEST) and {n.message_index for n in first} == {1}


def test_modified_files_come_from_edit_write_and_patch_calls_only():
    files = {n.answer: n.message_index for n in derive_needles(TRACE) if n.kind == "artifact"}
    assert files == {"/repo/cli/main.py": 4, "/repo/docs/usage.md": 6, "src/util.py": 6}  # README was only read


def test_last_failing_command_and_its_error_line():
    err = needles()["derived:error"]
    assert err.answer == "FAILED tests/test_cli.py::test_verbose - AssertionError: 1"
    assert err.reference == "pytest -q" and err.message_index == 9


def test_user_constraints_skip_injected_reminders():
    got = [n.answer for n in derive_needles(TRACE) if n.kind == "constraint"]
    assert got == ["Don't touch the tests.", "You must keep Python 3.9 support.", "Also never push to main!"]


def test_set_f1_hand_values():
    assert set_f1({"a", "b", "c"}, {"a", "b", "d"}) == pytest.approx(2 / 3)
    assert set_f1({"a", "b"}, set()) == 0.0 and set_f1(set(), set()) == 1.0


def test_files_modified_f1_on_a_context_that_lost_one_file():
    kept = (MESSAGES[0], M("user", "Summary: edited cli/main.py and /repo/docs/usage.md; tests fail."))
    paths = ["/repo/cli/main.py", "/repo/docs/usage.md", "src/util.py"]
    # recall 2/3, precision 1 → F1 = 2·(2/3)/(1 + 2/3) = 0.8
    assert files_modified_f1(paths, context_text(kept)) == pytest.approx(0.8)
    assert files_modified_f1(paths, context_text(MESSAGES)) == 1.0


def test_artifact_f1_from_probe_rows():
    rows = [{"strategy": "s", "trace": "t", "moment": "end", "call": 6, "needle_kind": "artifact", "retained": k}
            for k in (True, True, False)]
    rows.append({"strategy": "s", "trace": "t", "moment": "end", "call": 6, "needle_kind": "fact", "retained": False})
    out = artifact_f1(pd.DataFrame(rows))
    assert out.files.tolist() == [3] and out.f1.tolist() == pytest.approx([0.8])


def test_files_modified_f1_after_a_replay_that_forgot_two_files():
    from dataclasses import dataclass

    import strategies
    from bench.pricing import profile
    from bench.probes import needle_observer, probe_frame
    from bench.replay import ReplayConfig, replay
    from bench.tokens import TokenCounter
    from strategies.base import Outcome, Strategy, event

    @dataclass(frozen=True, kw_only=True)
    class KeepOneFile(Strategy):
        """Before the last call: system + a summary naming only cli/main.py + the latest user message."""

        name = "keep-one-file"

        def before_call(self, ctx, session):
            if session.call_index != 5:
                return None
            m = ctx.messages
            new = ctx.replace((m[0], M("user", "Summary: edited cli/main.py; tests fail."), m[-1]))
            return Outcome(new, (event("summarize", ctx, new),))

    result = replay(TRACE, KeepOneFile(), ReplayConfig(profile("claude-sonnet-4-5")), counter=TokenCounter(),
                    label="keep-one-file", observers=(needle_observer(TRACE),))
    probes = probe_frame([result])
    end = artifact_f1(probes).set_index("strategy").loc["keep-one-file"]
    # modified: /repo/cli/main.py (kept as "cli/main.py"), /repo/docs/usage.md and src/util.py (gone):
    # recall 1/3, precision 1 → F1 = 2·(1/3)/(1 + 1/3) = 0.5
    assert end.files == 3 and end.recall == pytest.approx(1 / 3) and end.f1 == pytest.approx(0.5)
    # right after the compaction the same three files are probed, with the same loss
    after = artifact_f1(probes, moment="compaction")
    assert after.f1.tolist() == pytest.approx([0.5])
    # never compacting, every modified file is still named: F1 = 1
    none = replay(TRACE, strategies.build("none"), ReplayConfig(profile("claude-sonnet-4-5")),
                  counter=TokenCounter(), observers=(needle_observer(TRACE),))
    assert artifact_f1(probe_frame([none])).f1.tolist() == [1.0]
