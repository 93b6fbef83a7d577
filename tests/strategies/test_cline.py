"""Cline's truncation, duplicate-read removal and budgets (spec/strategies.md §2), hand-computed.

Our index = Cline's index + 1 (the system message comes first here, not in Cline's history).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

import strategies
from bench.context.messages import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.summarizers.extractive import ExtractiveSummarizer
from strategies.cline.context_manager import (
    CONTINUE_NOTICE,
    READ_NOTICE,
    RESULT_MISSING,
    TRUNCATION_NOTICE,
    Cline,
    max_allowed_size,
    removal_count,
)
from strategies.cline.sdk import ClineSdk, sdk_cut_index
from strategies.cline.sdk_basic import is_turn_start
from traces.model import Message, Text, ToolResult, ToolUse, Trace, Usage, orphans

SONNET = profile("claude-sonnet-4-5")
TINY = replace(SONNET, id="tiny-16k", context_window=16_000, max_output=2_000)
SYSTEM = Message.text_message("system", "You are Cline.")


def session(counter, model=SONNET, estimator="truth") -> Session:
    return Session(model, Meter(counter, estimator), ExtractiveSummarizer())


def conversation(n: int = 20) -> list[Message]:
    """system + n alternating messages m0 (user) .. m{n-1}; Cline index k holds text 'mk'."""
    return [SYSTEM, *(Message.text_message("user" if k % 2 == 0 else "assistant", f"m{k}") for k in range(n))]


def texts(ctx) -> list[str]:
    return [m.text for m in ctx.messages[1:]]


@pytest.mark.parametrize(("window", "budget"), [
    (64_000, 37_000), (128_000, 98_000), (200_000, 160_000),
    (256_000, 216_000), (1_000_000, 960_000), (100_000, 80_000), (0, 98_000),
])
def test_budgets_are_exact_matches_else_the_larger_of_minus_40k_and_80_percent(window, budget):
    assert max_allowed_size(window) == budget


def test_half_and_quarter_ranges_on_20_messages(counter):
    assert removal_count(18, "half") == 8 and removal_count(18, "quarter") == 12
    for keep, removed_to in (("half", 9), ("quarter", 13)):
        s = session(counter)
        out = Cline(keep=keep).truncated(Meter(counter).context(conversation()), s, keep, ())
        kept = ["m0", "m1", *(f"m{k}" for k in range(removed_to + 1, 20))]
        # the notice replaces block 0 of the first assistant message
        assert texts(out.context) == ["m0", TRUNCATION_NOTICE, *kept[2:]]
        assert s.state["cline.range"] == (2, removed_to)


def test_the_range_only_grows_and_the_notice_is_placed_once(counter):
    s = session(counter)
    first = Cline().truncated(Meter(counter).context(conversation()), s, "half", ())
    assert s.state["cline.range"] == (2, 9)
    # 12 left: 10 after the pair -> remove floor(10/4)*2 = 4 more (Cline 10..13): the range is [2, 13]
    second = Cline().truncated(first.context, s, "half", ())
    assert s.state["cline.range"] == (2, 13)
    assert texts(second.context) == ["m0", TRUNCATION_NOTICE, *(f"m{k}" for k in range(14, 20))]
    assert [m.text for m in second.context.messages].count(TRUNCATION_NOTICE) == 1


def test_trigger_uses_the_previous_usage_and_picks_quarter_when_twice_over(counter):
    ctx = Meter(counter, "truth").context(conversation())
    s = session(counter)
    assert Cline().before_call(ctx, s) is None  # first call: no usage yet
    s.last_usage = Usage(input_tokens=150_000, cache_read_tokens=9_000, output_tokens=999)  # 159,999
    assert Cline().before_call(ctx, s) is None
    s.last_usage = Usage(input_tokens=150_000, cache_write_tokens=9_000, output_tokens=1_000)  # 160,000
    assert Cline().before_call(ctx, s).events[-1].detail == "half: range (2, 9)"
    s2 = session(counter)
    s2.last_usage = Usage(input_tokens=320_001)
    assert Cline().before_call(ctx, s2).events[-1].detail == "quarter: range (2, 13)"


def reads(contents: list[tuple[str, str]]) -> list[Message]:
    """The first pair, then one read_file call per (path, content) with its result."""
    msgs = [SYSTEM, Message.text_message("user", "task"), Message.text_message("assistant", "ok"),
            Message.text_message("user", "go")]
    for k, (path, content) in enumerate(contents):
        msgs += [Message("assistant", (ToolUse(f"r{k}", "read_file", {"path": path}),)),
                 Message("user", (ToolResult(f"r{k}", content),))]
    return msgs


def test_dedup_keeps_the_newest_read_and_stops_when_it_saves_30_percent(counter):
    msgs = reads([("a.py", "A" * 3_000), ("b.py", "B" * 100), ("a.py", "a" * 3_000)])
    s = session(counter)
    s.last_usage = Usage(input_tokens=160_000)
    out = Cline().before_call(Meter(counter, "truth").context(msgs), s)
    assert [e.kind for e in out.events] == ["dedup"]  # saved ≥ 30%: no truncation this turn
    contents = [r.content for m in out.context.messages for r in m.tool_results]
    assert contents == [READ_NOTICE, "B" * 100, "a" * 3_000]
    assert "cline.range" not in s.state


def test_dedup_share_counts_only_block_0_of_user_messages(counter):
    """calculateContextOptimizationMetrics: text / tool-result / image characters, block 0 of each
    user message only. The later blocks (environment details here) do not dilute the share."""
    msgs = reads([("a.py", "A" * 3_000), ("b.py", "B" * 100), ("a.py", "a" * 3_000)])
    env = Text("<environment_details>" + "e" * 9_000 + "</environment_details>")
    msgs = [replace(m, blocks=(*m.blocks, env)) if m.tool_results else m for m in msgs]
    s = session(counter)
    s.last_usage = Usage(input_tokens=160_000)
    out = Cline().before_call(Meter(counter, "truth").context(msgs), s)
    assert [e.kind for e in out.events] == ["dedup"]  # 3,000 of ~6,100 counted characters, not of ~33,000
    assert float(out.events[0].detail.split("%")[0]) >= 30


def test_dedup_below_30_percent_is_kept_and_truncation_follows(counter):
    msgs = reads([("a.py", "A" * 300), ("b.py", "B" * 3_000), ("a.py", "a" * 300)])
    s = session(counter)
    s.last_usage = Usage(input_tokens=160_000)
    out = Cline().before_call(Meter(counter, "truth").context(msgs), s)
    assert [e.kind for e in out.events] == ["dedup", "drop"]
    assert orphans(out.context.messages) == (set(), set())
    assert out.context.messages[2].text == TRUNCATION_NOTICE


def test_truncation_never_splits_a_tool_pair_and_repairs_the_first_call(counter):
    msgs = [SYSTEM, Message.text_message("user", "task")]
    for k in range(9):  # assistant call k, user result k: the first assistant's result is Cline index 2
        msgs += [Message("assistant", (ToolUse(f"c{k}", "bash", {"command": str(k)}),)),
                 Message("user", (ToolResult(f"c{k}", f"out {k}"),))]
    out = Cline().truncated(Meter(counter).context(msgs), session(counter), "half", ())
    # Cline's 19 messages: remove floor(17/4)*2 = 8 -> end Cline 9 = call 4, an assistant message;
    # result 4 (Cline 10) loses its orphaned tool_result block, and with nothing left is not sent.
    assert orphans(out.context.messages) == (set(), set())
    first_call, repaired = out.context.messages[2], out.context.messages[3]
    # block 0 of the first assistant message is a tool call, not text: Cline leaves it without a notice
    assert first_call.blocks == (ToolUse("c0", "bash", {"command": "0"}),)
    assert [(r.tool_use_id, r.content) for r in repaired.tool_results] == [("c0", RESULT_MISSING)]
    assert out.context.messages[4].tool_uses[0].id == "c5"


def test_notices_replace_only_a_text_block_0(counter):
    """Cline's stored edits set the text of block 0 only when it is a text block: a first assistant
    message opening with a tool call (or thinking) keeps its blocks and gets no notice."""
    msgs = tool_session(9)
    msgs[2] = Message("assistant", (ToolUse("c0", "bash", {"command": "0"}), Text("after the call")))
    out = Cline().on_overflow(Meter(counter).context(msgs), session(counter))
    assert out.context.messages[2].blocks == msgs[2].blocks
    assert TRUNCATION_NOTICE not in [b.text for m in out.context.messages for b in m.blocks if isinstance(b, Text)]
    msgs[2] = Message("assistant", (Text("let me look"), ToolUse("c0", "bash", {"command": "0"})))
    msgs.insert(4, Message.text_message("user", "latest human request"))
    out = Cline().on_overflow(Meter(counter).context(msgs), session(counter))
    assert out.context.messages[2].blocks == (Text(TRUNCATION_NOTICE), msgs[2].blocks[1])
    assert out.context.messages[1].text == CONTINUE_NOTICE


def test_the_message_after_the_cut_loses_only_its_orphaned_results(counter):
    """Cline strips the tool_result blocks of the first message after the range; its other blocks
    (here the environment details Cline sends with every result) stay."""
    msgs = [SYSTEM, Message.text_message("user", "task")]
    for k in range(9):
        msgs += [Message("assistant", (ToolUse(f"c{k}", "bash", {"command": str(k)}),)),
                 Message("user", (ToolResult(f"c{k}", f"out {k}"), Text(f"<environment_details>{k}")))]
    s = session(counter)
    out = Cline().truncated(Meter(counter).context(msgs), s, "half", ())
    # as above: the range is Cline [2, 9], ending on call 4; result 4's message comes next
    assert s.state["cline.range"] == (2, 9)
    after_cut = out.context.messages[3]
    assert after_cut.text == "<environment_details>4"
    assert [(r.tool_use_id, r.content) for r in after_cut.tool_results] == [("c0", RESULT_MISSING)]
    assert out.context.messages[4].tool_uses[0].id == "c5"
    assert orphans(out.context.messages) == (set(), set())


def tool_session(n: int) -> list[Message]:
    msgs = [SYSTEM, Message.text_message("user", "task")]
    for k in range(n):
        msgs += [Message("assistant", (ToolUse(f"c{k}", "bash", {"command": str(k)}),)),
                 Message("user", (ToolResult(f"c{k}", f"out {k}"),))]
    return msgs


def test_overflow_uses_quarter_and_marks_the_first_user_message(counter):
    msgs = tool_session(9)
    msgs.insert(4, Message.text_message("user", "latest human request"))
    s = session(counter)
    out = Cline().on_overflow(Meter(counter).context(msgs), s)
    # Cline's 20 messages: remove floor(18*3/4/2)*2 = 12 -> end Cline 13 = result 5, a user message,
    # so end Cline 12 (call 5): the range is [2, 12]; result 5 loses its orphaned result block and,
    # left empty, is not sent
    assert s.state["cline.range"] == (2, 12)
    assert out.context.messages[1].text == CONTINUE_NOTICE
    # deviation: the latest human request, inside the range, is kept (its text), after the first pair,
    # and carries the repaired result of the first call
    kept = out.context.messages[3]
    assert kept.text == "latest human request" and kept.tool_results == (ToolResult("c0", RESULT_MISSING),)
    assert out.context.messages[4].tool_uses[0].id == "c6"
    assert orphans(out.context.messages) == (set(), set())
    single = Cline().on_overflow(Meter(counter).context(tool_session(9)), session(counter))
    assert single.context.messages[1].text == "task"  # deviation: never the only (latest) request


def test_sdk_compacts_at_81_percent_and_keeps_the_latest_prompt(counter):
    sdk = ClineSdk()
    trigger, target = sdk.limits(SONNET, tuple(conversation()))
    assert trigger == pytest.approx(0.9 * 0.9 * 200_000)
    assert target == pytest.approx(0.5 * 180_000)  # 10 pairs, 64K max output < 180K
    assert sdk.limits(SONNET, tuple(conversation(4)))[1] == pytest.approx(0.7 * trigger)


def single_prompt_trace(calls: int = 120, lines: int = 150) -> Trace:
    """One typed task, then one long tool loop: ``calls`` read calls of ~3K tokens each."""
    msgs = [SYSTEM, Message.text_message("user", "U0: port the parser to the new API")]
    for k in range(calls):
        output = "".join(f"line {i}: token {i * 13 + k} in /src/m{k}.py = value_{i * k}\n" for i in range(lines))
        msgs += [Message("assistant", (ToolUse(f"c{k}", "read_file", {"path": f"/src/m{k}.py"}),)),
                 Message("user", (ToolResult(f"c{k}", output),))]
    msgs.append(Message.text_message("assistant", "done"))
    return Trace("single-prompt", tuple(msgs))


def test_sdk_cut_keeps_the_crossing_message_and_ignores_a_first_message_prompt(counter):
    """findCutIndex (compaction-shared.ts L331-364): the message that reaches the budget is kept;
    a typed prompt at index 0 does not clamp; a summary is not a turn start."""
    est = {"a": 10, "b": 30}.get
    h = [Message.text_message("user", "task"), *(Message.text_message("assistant" if k % 2 == 0 else "user", "a")
                                                 for k in range(6))]
    h[-1] = replace(h[-1], role="assistant")
    h = [h[0], Message("assistant", (ToolUse("t1", "read", {}),)), Message("user", (ToolResult("t1", "a"),)),
         Message("assistant", (ToolUse("t2", "read", {}),)), Message("user", (ToolResult("t2", "a"),)),
         Message("assistant", (ToolUse("t3", "read", {}),)), Message("user", (ToolResult("t3", "a"),))]
    ten = lambda m: 10  # noqa: E731
    assert sdk_cut_index(h, 25, ten) == 3  # 10 + 10 + 10 reaches 25 on index 4 (a result): back to 3
    assert sdk_cut_index(h, 20, ten) == 5  # 20 reached on index 5 itself, which is kept
    later = [*h[:3], Message.text_message("user", "U1"), *h[3:]]
    assert sdk_cut_index(later, 20, ten) == 3  # the later typed prompt clamps the cut
    summary = [replace(h[0], meta={"summary": True}), *h[1:]]
    assert sdk_cut_index(summary, 20, ten) == 5  # a summary is no turn start, so no clamp at 0 either
    assert sdk_cut_index(h, 10_000, ten) == 0 and est("a") == 10


def test_sdk_compacts_a_single_prompt_tool_loop_without_overflowing(counter):
    """The single-typed-prompt session: the source's cut compacts it (our v1 never did: the only
    prompt clamped the cut to the start, and every call from the window on overflowed)."""
    result = replay(single_prompt_trace(), strategies.build("cline:sdk"), ReplayConfig(SONNET), counter=counter)
    agent = [c for c in result.calls if c.kind == "agent"]
    summaries = [e for e in result.events if e.kind == "summarize"]
    assert result.error is None and result.failed is None and len(agent) == 121
    assert len(summaries) >= 1
    assert not any(c.overflow for c in agent)
    assert max(c.prompt_tokens for c in agent) <= 200_000


def test_sdk_overflow_runs_the_deterministic_basic_compaction(counter):
    """compaction.ts: overflow_recovery runs runBasicCompaction, no summarizer call; typed prompts
    survive, the newest work of the latest turn is kept from an assistant message, dropped work
    becomes a SYSTEM_NOTICE with the files read."""
    msgs = [SYSTEM, Message.text_message("user", "U0: task")]
    for k in range(30):
        msgs += [Message("assistant", (ToolUse(f"c{k}", "read_file", {"path": f"/f{k}.py"}),)),
                 Message("user", (ToolResult(f"c{k}", "x " * 3000),))]
    msgs.append(Message.text_message("user", "U1: now the tests"))
    for k in range(30, 40):
        msgs += [Message("assistant", (ToolUse(f"c{k}", "read_file", {"path": f"/f{k}.py"}),)),
                 Message("user", (ToolResult(f"c{k}", "y " * 3000),))]
    s = session(counter, TINY, "json-chars/3")
    ctx = Meter(counter, "json-chars/3").context(msgs)
    out = ClineSdk().on_overflow(ctx, s)
    assert out is not None and [e.kind for e in out.events] == ["drop"]
    kept = out.context.messages
    assert orphans(kept) == (set(), set())
    users = [m for m in kept if m.is_human_turn]
    assert len(users) == 1  # the two prompts, made adjacent, merge with the first turn's work between them
    u0, notice, u1, trailing = (b.text for b in users[0].blocks)
    assert (u0, u1) == ("U0: task", "U1: now the tests")
    assert notice.startswith("<SYSTEM_NOTICE>") and "/f0.py" in notice and "/f29.py" in notice
    assert "/f30.py" in trailing and "/f39.py" not in trailing  # the latest turn's dropped oldest calls
    assert kept[-1].blocks == msgs[-1].blocks and kept[-1].meta["cline_sdk.preserved"]  # frozen for the next pass
    assert kept[2].tool_uses[0].id == "c34"  # the newest work that fits, from an assistant message
    assert out.context.estimate - ctx.est(SYSTEM) <= (ctx.estimate - ctx.est(SYSTEM)) // 2 + 1


@pytest.mark.parametrize("name", ["cline-half", "cline-quarter", "cline:sdk"])
def test_end_to_end_replay_has_no_orphans(counter, name):
    msgs = [SYSTEM, Message.text_message("user", "U0: fix the bug")]
    for k in range(14):
        call = ToolUse(f"c{k}", "read_file", {"path": f"/src/f{k if k % 3 else 0}.py"})
        output = "".join(f"line {i}: value {i * 7} in /src/f{k}.py\n" for i in range(180))
        msgs += [Message("assistant", (call,)), Message("user", (ToolResult(f"c{k}", output),))]
        if k % 4 == 3:
            msgs.append(Message.text_message("user", f"U{k}: keep going"))
    msgs.append(Message.text_message("assistant", "finished"))
    sent: list = []

    class Spy:
        def __init__(self, inner) -> None:
            self.inner, self.name, self.estimator = inner, inner.name, inner.estimator

        def __getattr__(self, hook: str):
            return getattr(self.inner, hook)

        def project(self, ctx, session):
            sent.append(ctx)
            return ctx

    result = replay(Trace("synthetic", tuple(msgs)), Spy(strategies.build(name)), ReplayConfig(TINY), counter=counter)
    assert result.error is None and result.failed is None
    assert {e.kind for e in result.events} & {"drop", "summarize"}
    assert len(sent) >= 15 and all(orphans(ctx.messages) == (set(), set()) for ctx in sent)


class CheckedSdk(ClineSdk):
    """ClineSdk whose latest-turn lookup is checked against the walk back over every message."""

    def last_turn(self, ctx, session):  # type: ignore[override]
        got = ClineSdk.last_turn(ctx, session)
        msgs = ctx.messages
        assert got == next((i for i in range(len(msgs) - 1, -1, -1) if is_turn_start(msgs[i])), -1)
        session.state["checked"] = session.state.get("checked", 0) + 1
        return got


def test_sdk_latest_turn_start_from_the_new_messages_is_the_one_a_full_walk_finds(counter):
    """Over the trigger, the latest turn start is looked for only among the messages added since
    the last call when the history only grew (issue 14: the walk back went over the whole history
    on every call while the first prompt clamped the cut): the same index as the full walk, through
    summaries, new prompts, an empty user message and a session stuck over the trigger."""
    msgs = [SYSTEM, Message.text_message("user", "U0: port the parser")]
    for k in range(90):
        if k % 30 == 29:
            msgs.append(Message.text_message("user", f"U{k}: and now part {k}"))
        if k == 50:
            msgs.append(Message("user", ()))
        output = "".join(f"line {i}: token {i * 13 + k} in /src/m{k}.py\n" for i in range(60))
        msgs += [Message("assistant", (ToolUse(f"c{k}", "read_file", {"path": f"/src/m{k}.py"}),)),
                 Message("user", (ToolResult(f"c{k}", output),))]
    sdk, s = CheckedSdk(), session(counter, TINY, "json-chars/3")
    result = replay(Trace("prompts", tuple(msgs)), sdk, ReplayConfig(TINY), counter=counter)
    assert result.error is None and [e.kind for e in result.events].count("summarize") >= 2
    # directly: a grown history, one that did not grow from the last (a compaction), an unknown one
    meter = Meter(counter, "json-chars/3")
    for cut in (40, 41, 60, 61, 62, 30, 181, 182, 10):
        ctx = meter.context(msgs[:cut] if cut != 30 else [SYSTEM, *msgs[100:130]])
        assert sdk.last_turn(ctx, s) >= -1
    assert s.state["checked"] == 9
