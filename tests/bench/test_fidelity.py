"""Fidelity: a replay driven by recorded usage, set beside the recorded agent's own compaction."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import strategies
from bench.context.strategy import Outcome, Strategy, event
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.scoring.fidelity import fidelity_rows, replay_recorded
from bench.tokens.counter import TokenCounter
from traces.model import Message, RecordedCompaction, ToolResult, ToolUse, Trace, Usage

M = Message.text_message
SUMMARY = "Summary: fixing app.py; pytest failed on test_total."
MESSAGES = (
    M("system", "You are an agent."),                                                                # 0
    M("user", "Fix the bug in app.py"),                                                              # 1
    Message("assistant", (ToolUse("a", "Read", {"file_path": "app.py"}),), usage=Usage(1_000, 50)),  # 2 call 0
    Message("user", (ToolResult("a", "code " * 50),)),                                               # 3
    Message("assistant", (ToolUse("b", "Bash", {"command": "pytest"}),), usage=Usage(3_000, 50, 2_000)),  # 4 call 1
    Message("user", (ToolResult("b", "FAILED test_total"),)),                                        # 5
    M("assistant", "Looking into it.", usage=Usage(9_000, 100)),                                     # 6 call 2
    M("user", SUMMARY, meta={"summary": True}),                                                      # 7
    M("user", "Please continue."),                                                                   # 8
    M("assistant", "Fixed.", usage=Usage(2_500, 20)),                                                # 9 call 3
)
TRACE = Trace("recorded", MESSAGES, compactions=(RecordedCompaction(7, "auto", 9_100, SUMMARY),))
OWN_SUMMARY = M("user", "Replayed summary.", meta={"summary": True})


@dataclass(frozen=True, kw_only=True)
class UsageTrigger(Strategy):
    """Summarizes once when the last reported prompt + output reaches ``threshold``."""

    name = "usage-trigger"
    threshold: int = 8_000
    once: bool = True

    def before_call(self, ctx, session):
        u = session.last_usage
        if (self.once and session.state.get("done")) or u is None or u.prompt_tokens + u.output_tokens < self.threshold:
            return None
        session.state["done"] = True
        m = ctx.messages
        last = max(i for i, x in enumerate(m) if x.role == "assistant")
        start = last if any(x.tool_results for x in m[last + 1:]) else last + 1
        new = ctx.replace((m[0], OWN_SUMMARY, *m[start:]))
        return Outcome(new, (event("summarize", ctx, new, summary_tokens=3),))


def fidelity(strategy, driven=True):
    counter = TokenCounter()
    run = replay_recorded if driven else replay
    result = run(TRACE, strategy, ReplayConfig(profile("claude-sonnet-4-5")), counter=counter)
    return fidelity_rows(TRACE, result, counter=counter), counter


def test_driven_by_recorded_usage_it_fires_where_the_agent_did():
    (row,), c = fidelity(UsageTrigger())
    # the recorded call 2 reported 9,000 + 100 tokens, so the strategy fires before call 3,
    # which is where the recorded agent compacted (3 answers precede message 7)
    assert row["recorded_call"] == 3 and row["replayed_call"] == 3 and row["call_delta"] == 0
    assert row["recorded_pre_tokens"] == 9_100 and row["recorded_pre_usage"] == 9_100
    assert row["recorded_post_usage"] == 2_500
    assert row["recorded_post_tokens"] == c.truth(MESSAGES[0]) + c.truth(MESSAGES[7]) + c.truth(MESSAGES[8])
    # replayed: system + own summary + the step's inputs, without the recorded agent's summary (issue 24:
    # bench.replay.recorded_compaction_messages)
    assert row["replayed_post_tokens"] == row["recorded_post_tokens"] + c.truth(OWN_SUMMARY) - c.truth(MESSAGES[7])
    # like for like (our tokenizer): the agent held messages 0–6 when it compacted; the replay fired
    # once the step before call 3 (message 8; the recorded summary 7 left out) had been appended
    assert row["recorded_pre_truth"] == sum(c.truth(m) for m in MESSAGES[:7])
    assert row["replayed_pre_tokens"] == sum(c.truth(m) for m in MESSAGES[:9]) - c.truth(MESSAGES[7])
    assert row["recorded_summary_tokens"] == c.text(SUMMARY) and row["replayed_summary_tokens"] == 3
    assert row["replayed_compactions"] == 1


def test_an_earlier_threshold_shows_as_a_negative_call_delta():
    (row,), c = fidelity(UsageTrigger(threshold=4_000))
    # call 1 reported 5,000 + 50: fires before call 2, keeping the in-flight Bash pair
    assert row["replayed_call"] == 2 and row["call_delta"] == -1
    expected_post = sum(c.truth(m) for m in (MESSAGES[0], OWN_SUMMARY, MESSAGES[4], MESSAGES[5]))
    assert row["replayed_post_tokens"] == expected_post
    assert row["post_ratio"] == pytest.approx(expected_post / row["recorded_post_tokens"])


def test_driving_pauses_after_an_early_compaction_until_the_recorded_one_is_past():
    # fires before call 2; call 2's recorded usage (9,100) predates the recorded agent's own
    # compaction at call 3, and describes a context the replay no longer holds: not fed again
    (row,), _ = fidelity(UsageTrigger(threshold=4_000, once=False))
    assert row["replayed_call"] == 2 and row["replayed_compactions"] == 1


def test_without_recorded_usage_the_tiny_simulated_prompts_never_fire():
    (row,), _ = fidelity(UsageTrigger(), driven=False)
    assert row["replayed_call"] is None and row["call_delta"] is None and row["replayed_compactions"] == 0


def test_claude_code_against_its_recorded_compactions(shared_traces):
    from traces.formats import READERS, load

    if "claude-code" not in READERS or "claude-code" not in strategies.REGISTRY:
        pytest.skip("the Claude Code importer or the claude-code strategy is not registered yet")
    folder = shared_traces / "claude-code__marot-spotter"
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent")
    traces = [t for t in load([str(p) for p in sorted(folder.glob("*.jsonl"))]).traces if t.compactions]
    assert len(traces) == 3
    rows = []
    for trace in traces:
        counter = TokenCounter()
        counter.prime(trace.messages)
        result = replay_recorded(trace, strategies.build("claude-code"), ReplayConfig(profile("claude-sonnet-4-5")),
                                 counter=counter)
        rows += fidelity_rows(trace, result, counter=counter)
    auto = [r for r in rows if r["trigger"] == "auto"]
    assert sorted(r["recorded_pre_tokens"] for r in auto) == [167_094, 170_251]  # MANIFEST.md
    # Claude Code's trigger (167K for a 200K window), fed the recorded usage, fires within a call of the real one
    assert all(r["replayed_call"] is not None and abs(r["call_delta"]) <= 1 for r in auto)
    # the provider's post-compaction prompt holds the system prompt and tools a trace does not carry
    assert all(r["recorded_post_usage"] > r["recorded_post_tokens"] for r in rows)
    assert all(r["recorded_pre_tokens"] > r["recorded_pre_truth"] for r in rows)
    # our tokenizer on both sides: the replay held at most what the agent held plus the step it fired in
    # (equal when the strategy pruned nothing before its trigger)
    assert all(r["replayed_pre_tokens"] <= r["recorded_pre_truth"] + r["recorded_post_tokens"] for r in auto)


def test_check_trace_needs_the_agents_matching_strategy():
    from dataclasses import replace as dc_replace

    from bench.scoring.fidelity import check_trace

    config = ReplayConfig(profile("claude-sonnet-4-5"))
    assert check_trace(TRACE, config) == []  # agent "unknown": nothing to compare with
    (row,) = check_trace(dc_replace(TRACE, agent="claude-code"), config)
    assert row["strategy"] == "claude-code" and row["recorded_call"] == 3
    assert row["replayed_call"] is None  # 9,100 tokens is far below Claude Code's 167K trigger


def test_a_second_recorded_compaction_is_sized_from_the_first():
    from dataclasses import replace as dc_replace

    more = (M("user", "Now add a test."), M("assistant", "Added.", usage=Usage(4_000, 30)),  # 10, 11 call 4
            M("user", "Summary two.", meta={"summary": True}), M("user", "Go on."),           # 12, 13
            M("assistant", "Done.", usage=Usage(1_200, 10)))                                   # 14 call 5
    trace = dc_replace(TRACE, messages=MESSAGES + more, compactions=(
        *TRACE.compactions, RecordedCompaction(12, "manual", 4_030, "Summary two.")))
    counter = TokenCounter()
    result = replay(trace, strategies.build("none"), ReplayConfig(profile("claude-sonnet-4-5")), counter=counter)
    first, second = fidelity_rows(trace, result, counter=counter)
    msgs = trace.messages
    assert first["recorded_pre_truth"] == sum(counter.truth(m) for m in msgs[:7])
    # after the first compaction the agent held: system + summary 7 … message 11
    assert second["recorded_pre_truth"] == counter.truth(msgs[0]) + sum(counter.truth(m) for m in msgs[7:12])
    assert second["recorded_call"] == 5 and second["recorded_pre_usage"] == 4_030
    assert second["replayed_call"] is None and second["replayed_compactions"] == 0


def test_usage_ratio_is_the_providers_growth_over_ours_with_the_overhead_cancelling():
    from bench.scoring.fidelity import usage_ratio
    from bench.tokens.counter import TokenCounter
    from traces.model import Message, Trace, Usage

    counter = TokenCounter()
    msgs = [Message.text_message("system", "s"), Message.text_message("user", "go")]
    size = sum(counter.truth(m) for m in msgs)
    for k in range(12):
        # the provider sees 5,000 tokens of tools and system prompt we do not, and counts 1.3x ours
        msgs.append(Message.text_message("assistant", f"step {k}", usage=Usage(input_tokens=5_000 + round(1.3 * size))))
        size += counter.truth(msgs[-1])
        msgs.append(Message.text_message("user", f"result {k} " + "x y z " * (10 * k + 5)))
        size += counter.truth(msgs[-1])
    ratio = usage_ratio(Trace("u", tuple(msgs)), counter)
    assert ratio is not None and abs(ratio - 1.3) < 0.01
    assert usage_ratio(Trace("short", tuple(msgs[:12])), counter) is None  # 5 steps: too few to say


def test_a_manual_compaction_is_listed_but_never_paired_with_an_automatic_one():
    """The user's /compact is not a trigger any strategy models: the replay's first automatic
    compaction is set beside the recorded automatic one, and the results table reports that."""
    from dataclasses import replace as dc_replace

    from bench.scoring.fidelity import first_automatic

    trace = dc_replace(TRACE, compactions=(RecordedCompaction(3, "manual", 1_050, "Typed /compact."),
                                           *TRACE.compactions))
    counter = TokenCounter()
    result = replay_recorded(trace, UsageTrigger(), ReplayConfig(profile("claude-sonnet-4-5")), counter=counter)
    manual, auto = fidelity_rows(trace, result, counter=counter)
    assert manual["trigger"] == "manual" and manual["replayed_call"] is None and manual["call_delta"] is None
    assert auto["trigger"] == "auto" and auto["replayed_call"] == 3 and auto["call_delta"] == 0
    assert first_automatic([manual, auto]) is auto
    assert first_automatic([manual]) is manual and first_automatic([]) == {}


def test_a_file_that_begins_with_a_compaction_is_no_miss():
    """The agent compacted before the file's first call (its pre-compaction part is absent): the row
    is listed, paired with nothing, and the replay's own compaction goes to the next recorded one."""
    from dataclasses import replace as dc_replace

    from bench.cli.conformance import first_compaction_call
    from bench.scoring.fidelity import first_automatic

    head = (M("user", "Summary of an earlier part.", meta={"summary": True}),)
    trace = dc_replace(TRACE, messages=head + MESSAGES[1:],
                       compactions=(RecordedCompaction(0, "auto", 150_000, "Summary of an earlier part."),
                                    RecordedCompaction(7, "auto", 9_100, SUMMARY)))
    counter = TokenCounter()
    result = replay_recorded(trace, UsageTrigger(), ReplayConfig(profile("claude-sonnet-4-5")), counter=counter)
    before, auto = fidelity_rows(trace, result, counter=counter)
    assert before["recorded_call"] == 0 and before["replayed_call"] is None and before["call_delta"] is None
    assert auto["replayed_call"] == 3 and auto["call_delta"] == 0
    assert first_automatic([before, auto]) is auto
    assert first_compaction_call(trace) == 3  # the conformance bound is the first compaction in the file
