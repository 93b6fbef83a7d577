"""OpenCode prune + compaction (spec/strategies.md §1), on hand-built traces with hand-computed sizes.

Tool outputs are "x" * 4n characters, so OpenCode's round(chars/4) estimate is exactly n tokens.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

import strategies
from bench.context.messages import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.summarizers import Summary, SummaryRequest
from bench.summarizers.extractive import ExtractiveSummarizer
from strategies._tools import QUOTE_LEAD, is_prompt, safe_cut
from strategies.opencode import CONTINUE_2026, CONTINUE_CLASSIC, PRUNED, QUESTION, TAIL_HEADINGS, OpenCode
from traces.model import Message, Text, ToolResult, ToolUse, Trace, Usage, orphans

SONNET = profile("claude-sonnet-4-5")  # 200K window, 64K max output
TINY = replace(SONNET, id="tiny-16k", context_window=16_000, max_output=2_000)
SYSTEM = Message.text_message("system", "You are OpenCode.")


class Recorder:
    """A summarizer that remembers its requests and answers a fixed text."""

    name = "recorder"

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> Summary:
        self.requests.append(request)
        return Summary("SUMMARY", 0, 0, self.name)


class Spy:
    """Delegates to a strategy and keeps every context it sends."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.estimator, self.sent = inner, inner.name, inner.estimator, []

    def __getattr__(self, hook: str):
        return getattr(self.inner, hook)

    def project(self, ctx, session):
        self.sent.append(self.inner.project(ctx, session))
        return self.sent[-1]


def session(counter, model=SONNET, summarizer=None, estimator="chars/4") -> Session:
    return Session(model, Meter(counter, estimator), summarizer or ExtractiveSummarizer())


def human(text: str) -> Message:
    return Message.text_message("user", text)


def tool_step(call_id: str, tokens: int, name: str = "bash", *, prose: bool = False) -> tuple[Message, Message]:
    """A call and its output of ``tokens`` OpenCode-estimated tokens (or real-looking text)."""
    output = "".join(f"line {i}: value {i * 7} in /src/f{i}.py\n" for i in range(tokens // 8)) if prose \
        else "x" * (4 * tokens)
    return (Message("assistant", (ToolUse(call_id, name, {"command": call_id}),)),
            Message("user", (ToolResult(call_id, output),)))


def history(old_outputs: list[tuple[str, int, str]]) -> list[Message]:
    """system, U1, the old tool steps, U2 + a 10K step, U3 + an answer, then the new human U4."""
    msgs = [SYSTEM, human("U1: start")]
    for call_id, tokens, name in old_outputs:
        msgs += tool_step(call_id, tokens, name)
    msgs += [human("U2: next"), *tool_step("t_recent", 10_000), human("U3: more"),
             Message.text_message("assistant", "done"), human("U4: new request")]
    return msgs


def outputs(ctx) -> dict[str, str]:
    return {r.tool_use_id: r.content for m in ctx.messages for r in m.tool_results}


def test_prune_clears_only_outputs_beyond_the_newest_40k_when_over_20k(counter):
    steps = [(f"t{i}", 10_000, "bash") for i in range(1, 8)]  # t7 is the newest old output
    steps.insert(3, ("s1", 30_000, "skill"))
    ctx = Meter(counter).context(history(steps))
    out = OpenCode().before_call(ctx, session(counter))
    assert out is not None and [e.kind for e in out.events] == ["prune"]
    after = outputs(out.context)
    # newest→oldest: t7..t4 make 40,000 (not > 40K); t3, t2, t1 are queued: 30,000 > 20,000 freed
    assert {k for k, v in after.items() if v == PRUNED} == {"t1", "t2", "t3"}
    assert after["s1"] == "x" * 120_000 and after["t_recent"] == "x" * 40_000  # skill + last 2 turns
    assert out.context.messages[2].tool_uses == ctx.messages[2].tool_uses  # the call stays
    assert out.events[0].messages_touched == 3
    # the next run stops at the already-cleared output: nothing more to do
    assert OpenCode().before_call(out.context, session(counter)) is None


def test_prune_does_nothing_when_it_would_free_20k_or_less(counter):
    just_under = [(f"t{i}", 10_000, "bash") for i in range(1, 7)]  # t2 + t1 = 20,000, not > 20,000
    assert OpenCode().before_call(Meter(counter).context(history(just_under)), session(counter)) is None
    just_over = [("t1", 10_004, "bash")] + [(f"t{i}", 10_000, "bash") for i in range(2, 7)]
    out = OpenCode().before_call(Meter(counter).context(history(just_over)), session(counter))
    assert out is not None and {k for k, v in outputs(out.context).items() if v == PRUNED} == {"t1", "t2"}


def test_prune_waits_for_a_new_human_turn_and_is_off_in_the_tail_generation(counter):
    msgs = history([(f"t{i}", 10_000, "bash") for i in range(1, 8)])
    mid_run = msgs[:-1] + list(tool_step("t_more", 10))  # the step brings tool results, no human turn
    assert OpenCode().before_call(Meter(counter).context(mid_run), session(counter)) is None
    assert OpenCode(generation="tail").before_call(Meter(counter).context(msgs), session(counter)) is None
    assert OpenCode(generation="tail", prune=True).before_call(Meter(counter).context(msgs), session(counter))


def test_prune_stops_at_a_compaction_summary(counter):
    msgs = history([(f"t{i}", 10_000, "bash") for i in range(1, 8)])
    msgs.insert(7, Message.text_message("assistant", "SUMMARY", meta={"summary": True}))  # after t3
    assert OpenCode().before_call(Meter(counter).context(msgs), session(counter)) is None  # t1-t3 unseen


@pytest.mark.parametrize(("generation", "usage", "fires"), [
    ("classic", Usage(input_tokens=100_000, cache_read_tokens=68_000), False),  # 168,000 = usable: not >
    ("classic", Usage(input_tokens=100_000, cache_read_tokens=67_000, output_tokens=1_001), True),
    ("classic", Usage(input_tokens=1, cache_write_tokens=199_000), False),  # cache writes not counted
    ("tail", Usage(input_tokens=100_000, cache_read_tokens=48_000), True),  # 148,000 >= 148,000
    ("tail", Usage(input_tokens=100_000, cache_read_tokens=47_999), False),
    ("tail", Usage(input_tokens=1, cache_write_tokens=147_999), True),  # cache writes counted
])
def test_trigger_formulas(generation, usage, fires):
    s = OpenCode(generation=generation)
    assert s.usable(SONNET) == {"classic": 200_000 - 32_000, "tail": 200_000 - 32_000 - 20_000}[generation]
    assert s.overflowing(usage, SONNET) is fires


def test_max_input_replaces_the_window_and_the_tail_budget_is_clamped():
    limited = replace(SONNET, max_input=150_000)
    assert OpenCode().usable(limited) == 150_000
    assert OpenCode(generation="tail").usable(limited) == 130_000
    tail = OpenCode(generation="tail")
    assert tail.tail_budget(SONNET) == 15_000  # 0.25 x 148,000 = 37,000 -> max 15,000
    assert tail.tail_budget(TINY) == 3_000  # 16,000 - 2,000 - 2,000 = 12,000 -> 3,000
    assert tail.tail_budget(replace(TINY, context_window=8_000)) == 2_000  # 1,000 -> min 2,000


def test_classic_compaction_rebuilds_question_summary_continue(counter):
    msgs = history([("t1", 100, "bash")])
    recorder = Recorder()
    s = session(counter, summarizer=recorder)
    s.last_usage = Usage(input_tokens=168_001)
    out = OpenCode().before_call(Meter(counter).context(msgs), s)
    assert out is not None and [e.kind for e in out.events] == ["summarize"]
    assert [(m.role, m.text) for m in out.context.messages] == [
        ("system", "You are OpenCode."), ("user", QUESTION),
        ("assistant", f"SUMMARY{QUOTE_LEAD}{msgs[-1].text}"),  # the summary carries the latest request (issue 11)
        ("user", CONTINUE_CLASSIC)]
    assert out.context.messages[2].meta["summary"] is True
    assert recorder.requests[0].messages == tuple(msgs[1:]) and recorder.requests[0].max_tokens == 32_000


def test_overflow_compaction_leaves_out_the_last_user_turn_and_replays_it(counter):
    """Reactive (overflow) compaction: the summary covers history before the last user turn; that
    turn's request is replayed after the summary instead of the continue message, and the turn's own
    calls and results are not sent again (compaction.ts @3df4a255 processCompaction: ``replay`` is
    the user message alone; filterCompacted stops at the compaction message): issue 27."""
    msgs = [*history([("t1", 100, "bash")]), *tool_step("t_now", 200)]
    recorder = Recorder()
    out = OpenCode().on_overflow(Meter(counter).context(msgs), session(counter, summarizer=recorder))
    new = out.context.messages
    assert [(m.role, m.text) for m in new[:2]] == [("system", "You are OpenCode."), ("user", QUESTION)]
    assert new[2].meta["summary"] and new[3:] == (msgs[-3],)  # U4 alone, verbatim
    assert recorder.requests[0].messages == tuple(msgs[1:-3])  # U4 is not summarized
    assert "last user message replayed" in out.events[0].detail
    assert all(m.text != CONTINUE_CLASSIC for m in new)
    single = [SYSTEM, human("U1: only"), *tool_step("t1", 300)]
    lone = OpenCode().on_overflow(Meter(counter).context(single), session(counter, summarizer=Recorder()))
    assert lone.context.messages[-1].text == CONTINUE_CLASSIC  # the only turn: compacted as usual


def test_an_overflow_whose_turn_holds_a_huge_output_compacts_once_not_twice(counter):
    """issue 27 (``make bench`` logs/seed0, call 118: 267K -> 262K tokens, then a second compaction at
    119): the turn whose output overflowed the window is not replayed, so one compaction is enough."""
    msgs = [*history([("t1", 100, "bash")]), *tool_step("t_now", 60_000)]  # the step alone is ~60K tokens
    ctx = Meter(counter).context(msgs)
    for gen in ("classic", "overflow"):
        out = OpenCode(generation=gen).on_overflow(ctx, session(counter, summarizer=Recorder()))
        (e,) = out.events
        assert e.kind == "summarize" and out.context.truth < ctx.truth / 10
        assert all(not m.tool_results for m in out.context.messages)
    # the tail generation keeps a turn in its tail as filterCompacted does; with a tail kept, the
    # overflowing turn stays (tail ... compaction message) and the next call may overflow again
    tail = OpenCode(generation="tail").on_overflow(ctx, session(counter, model=TINY, summarizer=Recorder()))
    assert tail.context.messages[-1] is msgs[-1]


def test_tail_compaction_keeps_recent_turns_and_merges_the_prior_summary(counter):
    s = OpenCode(generation="tail")
    turns = [[human(f"U{k}: request {k}"), *tool_step(f"t{k}", 500 * k)] for k in range(1, 5)]
    msgs = [SYSTEM, *[m for t in turns for m in t]]
    ctx = Meter(counter).context(msgs)
    size = lambda ms: sum(counter.estimate(m, "chars/4-json") for m in ms)  # noqa: E731
    considered = tuple(msgs[1:])
    assert s.tail_start(ctx, considered, size(considered[6:])) == 6  # turns 3 and 4 fit exactly
    # turn 3 no longer fits whole: its suffix from the call on (U3 goes to the head) does
    assert s.tail_start(ctx, considered, size(considered[6:]) - 1) == 7
    # a split may not separate a result from its call: [A3, R3] too big, [R3] alone not allowed
    assert s.tail_start(ctx, considered, size(considered[9:]) + 10) == 9
    assert s.tail_start(ctx, considered, size(considered)) == len(considered)  # all fits: no tail
    recorder = Recorder()
    sess = session(counter, model=TINY, summarizer=recorder)  # tail budget 3,000
    out = s.compact(ctx, sess)  # the proactive path (an overflow would replay U4 instead)
    rebuilt = out.context.messages
    assert [m.text for m in rebuilt[:3]] == ["You are OpenCode.", QUESTION, "SUMMARY"]
    assert rebuilt[3:-1] == tuple(msgs[10:]) and rebuilt[-1].text == CONTINUE_2026  # turn 4: 2,000 of 3,000
    prompt = recorder.requests[0].prompt
    assert [prompt.index(h) for h in TAIL_HEADINGS] == sorted(prompt.index(h) for h in TAIL_HEADINGS)
    head_text = "\n".join(m.text for m in recorder.requests[0].messages)
    assert "[User]: U1: request 1" in head_text and "[Assistant tool call]: bash(" in head_text
    assert "[Tool result]: " + "x" * 2_000 + "\n[truncated]\n" in head_text + "\n"
    again = s.compact(out.context.append(human("U5: go on")), sess)
    assert "<prior-summary>\nSUMMARY\n</prior-summary>" in recorder.requests[1].prompt
    assert again.context.messages[2].text == f"SUMMARY{QUOTE_LEAD}U5: go on"  # all fits: no tail, U5 quoted


@pytest.mark.parametrize("name", ["opencode", "opencode:tail"])
def test_end_to_end_replay_has_no_orphans(counter, name):
    msgs = [SYSTEM, human("U0: fix the bug")]
    for k in range(12):
        msgs += tool_step(f"c{k}", 1_500, prose=True)
        if k % 3 == 2:
            msgs.append(human(f"U{k}: keep going"))
    msgs.append(Message.text_message("assistant", "finished"))
    spy = Spy(strategies.build(name))
    result = replay(Trace("synthetic", tuple(msgs)), spy, ReplayConfig(TINY), counter=counter)
    assert result.error is None and result.failed is None
    assert [e.kind for e in result.events].count("summarize") >= 1
    assert len(spy.sent) >= 13 and all(orphans(ctx.messages) == (set(), set()) for ctx in spy.sent)
    assert all(ctx.messages[0] is SYSTEM for ctx in spy.sent)
    assert not any(c.overflow for c in result.calls)


# -- a call and its results are one unit (version 4) -----------------------------------------------
# In OpenCode the result is a part of the call's assistant message (session/processor.ts), so nothing
# sits between them and no compaction can fall there. The slow contract suite found logs where
# something does: an empty user message, or an empty assistant message.

EMPTY_USER = (Message("user", ()), Message("user", (Text(""),)))


def call(call_id: str) -> Message:
    return Message("assistant", (ToolUse(call_id, "bash", {"command": call_id}),))


def result(call_id: str, tokens: int) -> Message:
    return Message("user", (ToolResult(call_id, " abc" * tokens),))  # one token per 4 chars


@pytest.mark.parametrize("empty", EMPTY_USER)
def test_the_overflow_path_replays_the_last_real_turn_not_an_empty_message_before_the_results(counter, empty):
    msgs = [SYSTEM, human("U1: start"), *tool_step("t1", 100), human("U2: next"), call("t2"), empty,
            Message("user", (ToolResult("t2", "ok"),))]
    out = OpenCode().on_overflow(Meter(counter).context(msgs), session(counter, summarizer=Recorder()))
    new = out.context.messages
    assert new[3:] == (msgs[4],)  # U2 (before version 2: from the empty; before 6: U2 with its call and result)
    assert orphans(new) == (set(), set())


@pytest.mark.parametrize("empty", EMPTY_USER)
def test_an_empty_user_message_neither_starts_a_tail_turn_nor_opens_prune(counter, empty):
    s = OpenCode(generation="tail")
    big = Message("assistant", (ToolUse("t2", "edit", {"content": "y" * 8_000}),))  # a call too big for the tail
    msgs = (human("U1: start"), *tool_step("t1", 100), human("U2: next"), big, empty,
            Message("user", (ToolResult("t2", "ok"),)))
    ctx = Meter(counter).context((SYSTEM, *msgs))
    size = sum(counter.estimate(m, "chars/4-json") for m in msgs[-2:])
    # before: [empty, result] was a whole turn that fits, so the tail began there, without the call
    assert s.tail_start(ctx, msgs, size + 10) == len(msgs)  # now: U2's turn can't be split safely: no tail
    # prune: an empty message before the results is no new turn (before: it pruned there)
    old = history([(f"t{i}", 10_000, "bash") for i in range(1, 8)])[:-1]  # U3's answer last, no U4
    mid_run = [*old, call("t9"), empty, Message("user", (ToolResult("t9", "ok"),))]
    assert OpenCode().before_call(Meter(counter).context(mid_run), session(counter)) is None
    assert OpenCode().before_call(Meter(counter).context([*mid_run, human("U4: go")]), session(counter))


@pytest.mark.parametrize("generation", ["classic", "tail"])
def test_no_compaction_while_a_call_waits_for_its_result(counter, generation):
    # a log with an (empty) assistant message between a call and its result: the request before it
    # ends with the call. OpenCode checks overflow on the last finished message, and the call's
    # message is not finished until its result is in (prompt.ts runLoop; processor.ts).
    msgs = [SYSTEM, human("U1: start"), *tool_step("t1", 100), call("t2")]
    s = session(counter, summarizer=Recorder())
    s.last_usage = Usage(input_tokens=200_000)
    assert OpenCode(generation=generation).before_call(Meter(counter).context(msgs), s) is None  # before: summarized t2
    msgs += [Message("assistant", ()), Message("user", (ToolResult("t2", "ok"),))]
    assert OpenCode(generation=generation).before_call(Meter(counter).context(msgs), s) is not None  # now it runs
    # an overflow meanwhile, with no later user turn to replay: the waiting call is kept out of the
    # summary and replayed after the continue message (before: summarized, its result came back alone)
    out = OpenCode(generation=generation).on_overflow(Meter(counter).context(msgs[:5]), s)
    new = out.context.messages
    assert new[-2].meta.get("synthetic") and new[-1] is msgs[4] and "calls in flight replayed" in out.events[0].detail


@pytest.mark.parametrize("name", ["opencode", "opencode:tail"])
@pytest.mark.parametrize("shape", ["no_content", "empty_text", "empty_assistant"])
def test_replays_with_something_between_a_call_and_its_results_add_no_orphan(name, shape):
    from tests.strategies.test_contract import check_strategy  # the contract's own checks, on fixed traces

    if shape == "empty_assistant":  # the request before the empty message crosses the trigger (cache reads)
        msgs = (SYSTEM, human("U1: start"), call("a"), result("a", 14_100), call("c"), result("c", 50),
                call("b"), Message("assistant", ()), result("b", 50))
    else:  # the last request overflows the 16K window: the overflow path replays the last user turn
        empty = EMPTY_USER[shape == "empty_text"]
        msgs = (SYSTEM, human("U1: start"), call("a"), result("a", 9_000), human("U2: next"), call("b"), empty,
                result("b", 9_000))
    check_strategy(name, Trace("between", (*msgs, Message.text_message("assistant", "done"))))


def reference_tail_start(ctx, msgs, budget: int) -> int:
    """tail_start as version 5 first wrote it: safe_cut and the suffix sum at every split point."""
    size = [ctx.meter.counter.estimate(m, "chars/4-json") for m in msgs]
    starts = [i for i, m in enumerate(msgs) if is_prompt(m)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    remaining, start = budget, len(msgs)
    for lo, hi in reversed(list(zip(starts, [*starts[1:], len(msgs)], strict=True))):
        turn = sum(size[lo:hi])
        if turn <= remaining:
            remaining, start = remaining - turn, lo
            continue
        for j in range(lo + 1, hi):
            if safe_cut(msgs, j) == j and sum(size[j:hi]) <= remaining:
                start = j
                break
        break
    return len(msgs) if start == 0 else start


@pytest.mark.parametrize("seed", range(4))
def test_tail_start_tests_the_size_before_safe_cut_and_finds_the_same_start(counter, seed):
    """The split point is found with a running suffix sum, safe_cut only where it fits (issue 14):
    the same index as testing both at every message, on turns with parallel calls, results after
    an empty assistant message or an empty user message, and answers without calls."""
    rng = random.Random(seed)
    msgs: list[Message] = []
    for k in range(30):
        msgs.append(human(f"U{k}: " + "w " * rng.randrange(1, 200)))
        for n in range(rng.randrange(0, 5)):
            ids = [f"c{k}_{n}_{p}" for p in range(rng.randrange(1, 3))]
            msgs.append(Message("assistant", tuple(ToolUse(i, "bash", {"command": i}) for i in ids)))
            if rng.random() < 0.2:
                msgs.append(rng.choice([Message("assistant", ()), *EMPTY_USER]))
            msgs.append(Message("user", tuple(ToolResult(i, "o" * rng.randrange(1, 4_000)) for i in ids)))
        if rng.random() < 0.5:
            msgs.append(Message.text_message("assistant", "a " * rng.randrange(1, 300)))
    ctx = Meter(counter).context((SYSTEM, *msgs))
    considered = tuple(msgs)
    total = sum(counter.estimate(m, "chars/4-json") for m in considered)
    s = OpenCode(generation="tail")
    for budget in [*range(0, 6_000, 37), *rng.sample(range(total + 10), 200)]:
        assert s.tail_start(ctx, considered, budget) == reference_tail_start(ctx, considered, budget), budget


# -- 1.2 – 1.4: overflow.ts's trigger, the summary replaces everything (opencode:1.4) ---------------
COPILOT_SONNET = replace(profile("claude-sonnet-4.6"), context_window=200_000, max_input=128_000, max_output=32_000)
"""github-copilot/claude-sonnet-4.6 as models.dev gave it on 2026-04-13 (bench/cost/windows.py)."""


def test_the_1_4_trigger_is_the_input_limit_less_20k_on_the_whole_total():
    """overflow.ts @08f74b9b: usable = limit.input − min(20K, max output) = 108,000 here; the recorded
    1.4.3 session did not compact at a total of 105,395 and did at 112,579. The classic rule
    (> limit.input, cache writes left out) would not have fired at 112,579."""
    s = strategies.build("opencode:1.4")
    assert s.usable(COPILOT_SONNET) == 108_000
    assert not s.overflowing(Usage(input_tokens=300, cache_read_tokens=100_000, output_tokens=5_095), COPILOT_SONNET)
    assert s.overflowing(Usage(input_tokens=284, cache_read_tokens=105_250, output_tokens=7_045), COPILOT_SONNET)
    assert s.overflowing(Usage(input_tokens=1, cache_write_tokens=107_999), COPILOT_SONNET)  # writes count
    assert not OpenCode().overflowing(Usage(input_tokens=284, cache_read_tokens=105_250, output_tokens=7_045),
                                      COPILOT_SONNET)
    # no input limit: context − max output, with no reserve in this branch (unlike the tail generation)
    no_input = replace(COPILOT_SONNET, context_window=128_000, max_input=None)
    assert s.usable(no_input) == 96_000 and OpenCode(generation="tail").usable(no_input) == 76_000


def test_the_1_4_compaction_keeps_nothing_of_the_tail(counter):
    """The recorded 1.4.3 session's first call after its compaction is 16,303 tokens: the cached
    system + tools, the summary and the continue message, nothing of the conversation."""
    msgs = history([("t1", 100, "bash")])
    recorder = Recorder()
    s = session(counter, model=COPILOT_SONNET, summarizer=recorder)
    s.last_usage = Usage(input_tokens=284, cache_read_tokens=105_250, output_tokens=7_045)
    out = strategies.build("opencode:1.4").before_call(Meter(counter).context(msgs), s)
    assert out is not None and [e.kind for e in out.events] == ["summarize"]
    assert [(m.role, m.text) for m in out.context.messages] == [
        ("system", "You are OpenCode."), ("user", QUESTION),
        ("assistant", f"SUMMARY{QUOTE_LEAD}{msgs[-1].text}"), ("user", CONTINUE_2026)]
    assert "## Goal" in recorder.requests[0].prompt and "## Relevant files / directories" in recorder.requests[0].prompt
    assert recorder.requests[0].messages == tuple(msgs[1:])


def test_sessions_route_by_version():
    from strategies.versions import matching_strategy

    assert matching_strategy("opencode", "1.4.3") == "opencode:1.4"
    assert matching_strategy("opencode", "1.2.12") == "opencode:1.4"
    assert matching_strategy("opencode", "1.1.40") == "opencode"
    assert matching_strategy("opencode", "1.5.0") == matching_strategy("opencode", None) == "opencode"


def test_a_github_copilot_session_compacts_where_its_provider_limits_say(counter):
    """End to end: a 1.4.3 session served by github-copilot is windowed with the provider's limits
    (128K input, not the model's 1M) and compacts after the first call whose total reaches 108,000."""
    from traces.formats._common import ts_seconds

    when = ts_seconds("2026-04-13T10:00:00Z")
    msgs = [SYSTEM, human("U1: implement the commands")]
    totals = [60_000, 90_000, 105_395, 112_579, 20_000]
    for k, total in enumerate(totals):
        msgs.append(Message("assistant", (ToolUse(f"c{k}", "bash", {"command": "ls"}),), timestamp=when + k,
                            usage=Usage(input_tokens=total - 1_000, output_tokens=1_000),
                            meta={"model": "claude-sonnet-4.6", "provider": "github-copilot"}))
        msgs.append(Message("user", (ToolResult(f"c{k}", "ok " * 50),), timestamp=when + k))
    msgs.append(Message("assistant", (Text("done"),), timestamp=when + 9))
    trace = Trace("oc", tuple(msgs), agent="opencode", model="claude-sonnet-4.6",
                  meta={"version": "1.4.3", "provider": "github-copilot"})
    config = ReplayConfig(profile("claude-sonnet-4.6"), recorded_models=True)
    from bench.scoring.fidelity import replay_recorded

    result = replay_recorded(trace, strategies.build("opencode:1.4"), config, counter=counter)
    assert [e.call for e in result.events if e.kind == "summarize"] == [4]  # after the 112,579 call
    plain = replay_recorded(trace, strategies.build("opencode:1.4"), ReplayConfig(profile("claude-sonnet-4.6")),
                            counter=counter)
    assert not [e for e in plain.events if e.kind == "summarize"]  # the model's own 1M window: never
