"""Probes derived from a trace: request terms, modified files (set F1), last error, constraints."""

from __future__ import annotations

import pandas as pd
import pytest

from bench.scoring.derived_probes import artifact_f1, derive_needles, files_modified_f1, key_terms, set_f1
from bench.scoring.probes import context_text
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
    from bench.context.strategy import Outcome, Strategy, event
    from bench.cost.pricing import profile
    from bench.replay.loop import ReplayConfig, replay
    from bench.scoring.probes import needle_observer, probe_frame
    from bench.tokens.counter import TokenCounter

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


# -- probes that can fail: early facts relied on later, every failing command, "only" constraints --------

def _session_with_an_early_fact():
    """The user states a build id early; nothing repeats it until the agent uses it six calls later."""
    msgs = [M("system", "You are a coding agent."),
            M("user", "Deploy with release tag REL-4471 when the tests pass. Only touch src/."),
            A(ToolUse("b0", "Bash", {"command": "make test"})),
            R(ToolResult("b0", "Traceback (most recent call last):\nImportError: no module named yaml", is_error=True))]
    for k in range(1, 8):
        msgs += [A(ToolUse(f"b{k}", "Bash", {"command": f"make step{k}"})),
                 R(ToolResult(f"b{k}", f"step {k} ok" if k != 4 else "make: *** [step4] Error 2"))]
    msgs += [A(ToolUse("d", "Bash", {"command": "deploy --tag REL-4471"})), R(ToolResult("d", "deployed")),
             M("assistant", "Deployed.")]
    return Trace("early", tuple(msgs))


def test_an_early_fact_the_session_relies_on_is_derived():
    needles = {n.id: n for n in derive_needles(_session_with_an_early_fact())}
    early = [n for n in needles.values() if n.id.startswith("derived:early:")]
    assert [(n.answer, n.kind, n.message_index) for n in early] == [("REL-4471", "fact", 1)]
    # three failing commands: the last is derived:error, the earlier distinct ones follow, earliest first
    assert needles["derived:error"].answer == "make: *** [step4] Error 2"
    assert needles["derived:error:1"].answer == "ImportError: no module named yaml"
    assert needles["derived:error:1"].reference == "make test"
    assert "Only touch src/." in [n.answer for n in needles.values() if n.kind == "constraint"]


def test_a_passing_tally_is_not_an_error():
    trace = Trace("ok", (M("user", "run the tests"), A(ToolUse("b", "Bash", {"command": "mix test"})),
                         R(ToolResult("b", "84 tests, 0 failures")), M("assistant", "All green.")))
    assert not [n for n in derive_needles(trace) if n.kind == "error"]


def test_a_strategy_that_drops_the_early_fact_loses_it_and_none_keeps_it():
    """Scored at the compaction and at the end: the summary keeps the request's gist, not the tag."""
    from dataclasses import dataclass

    import strategies
    from bench.context.strategy import Outcome, Strategy, event
    from bench.cost.pricing import profile
    from bench.replay.loop import ReplayConfig, replay
    from bench.scoring.probes import needle_observer, probe_frame
    from bench.tokens.counter import TokenCounter

    trace = _session_with_an_early_fact()

    @dataclass(frozen=True, kw_only=True)
    class DropEarly(Strategy):
        name = "drop-early"

        def before_call(self, ctx, session):
            if session.call_index != 5:
                return None
            m = ctx.messages
            new = ctx.replace((m[0], M("user", "Summary: deploy once the tests pass; step 4 failed."), *m[-2:]))
            return Outcome(new, (event("summarize", ctx, new),))

    def early_rows(strategy):
        result = replay(trace, strategy, ReplayConfig(profile("claude-sonnet-4-5")), counter=TokenCounter(),
                        label=strategy.name, observers=(needle_observer(trace),))
        p = probe_frame([result])
        return p[p.needle.str.startswith("derived:early:")].set_index("moment")

    dropped, kept = early_rows(DropEarly()), early_rows(strategies.build("none"))
    assert dropped.loc["compaction", "cls"] == "missing" and not dropped.loc["compaction", "retained"]
    assert kept.loc["end", "retained"] and "compaction" not in kept.index
    assert (kept.source == "derived").all()


def test_derived_needles_are_computed_once_per_trace(monkeypatch):
    import bench.scoring.derived_probes as dp
    from bench.scoring.probes import derived_needles

    calls = []
    real = dp.derive_needles
    monkeypatch.setattr(dp, "derive_needles", lambda t: calls.append(t.id) or real(t))
    trace = Trace("early-cached", _session_with_an_early_fact().messages)
    copy = Trace(trace.id, tuple(trace.messages))  # the same trace, unpickled in another job
    assert derived_needles(trace) == derived_needles(copy) == derived_needles(trace)
    assert calls == ["early-cached"]


def test_on_a_real_session_the_early_facts_tell_strategies_apart(shared_traces):
    """A real Claude Code session: right after a compaction, an LLM-summary strategy and Claude Code's
    own compaction have lost early facts the session uses later; none never compacts and keeps them."""
    import strategies
    from bench.cost.pricing import profile
    from bench.replay.loop import ReplayConfig, replay
    from bench.scoring.probes import needle_observer, probe_frame, retention_by_kind
    from bench.tokens.counter import TokenCounter
    from traces.formats import load

    path = shared_traces / "claude-code__marot-spotter" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    trace = next(t for t in load([str(path)]).traces if len(t.messages) > 100)
    assert any(n.id.startswith("derived:early:") for n in derive_needles(trace))
    counter = TokenCounter()
    results = [replay(trace, strategies.build(name), ReplayConfig(profile("claude-opus-4-6")), counter=counter,
                      label=name, observers=(needle_observer(trace),)) for name in ("none", "llm-summary")]
    by_kind = retention_by_kind(probe_frame(results), moment=None).set_index(["strategy", "kind"]).retention
    assert by_kind[("none", "early fact")] == 1.0
    assert by_kind[("llm-summary", "early fact")] < 0.9
