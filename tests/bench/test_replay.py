"""The replay loop: overflow path, hook order, events, summarizer billing, failure recording."""

from __future__ import annotations

from dataclasses import dataclass, replace

import strategies
from bench.context.strategy import Outcome, Strategy, event
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.tokens.counter import TokenCounter
from traces.model import Message, Text, ToolResult, ToolUse, Trace

TINY = replace(profile("claude-sonnet-4-5"), id="tiny", context_window=3_000, max_output=500)


def growing_trace(steps: int = 10, size: int = 1200) -> Trace:
    msgs = [Message.text_message("system", "system prompt"), Message.text_message("user", "go")]
    for i in range(steps):
        msgs.append(Message("assistant", (ToolUse(f"c{i}", "bash", {"command": f"cat log{i}"}),)))
        msgs.append(Message("user", (ToolResult(f"c{i}", "x " * size),)))
    msgs.append(Message.text_message("assistant", "done"))
    return Trace("grow", tuple(msgs))


def test_none_overflows_once_the_request_exceeds_the_window():
    trace = growing_trace()
    result = replay(trace, strategies.build("none"), ReplayConfig(TINY), counter=TokenCounter())
    assert len(result.calls) == trace.n_calls == 11
    flags = [c.overflow for c in result.calls]
    # each step adds ~1,200 tokens: calls 0-1 fit in 3,000 minus the answer, later ones do not
    first_over = flags.index(True)
    assert all(flags[first_over:]) and not any(flags[:first_over])
    assert all(c.prompt_tokens + c.output_tokens > TINY.context_window for c in result.calls[first_over:])
    assert not result.events


@dataclass(frozen=True, kw_only=True)
class DropOldest(Strategy):
    """Test strategy: on a 413, keep the system prompt, the first user message and the newest pair."""

    name = "drop-oldest"

    def on_overflow(self, ctx, session):
        new = ctx.replace((*ctx.messages[:2], *ctx.messages[-2:]))
        return Outcome(new, (event("drop", ctx, new, touched=len(ctx) - len(new)),))


def test_on_overflow_rescues_the_call_and_is_recorded():
    result = replay(growing_trace(), DropOldest(), ReplayConfig(TINY), counter=TokenCounter())
    assert not any(c.overflow for c in result.calls)
    drops = [e for e in result.events if e.kind == "drop"]
    assert drops and all(e.hook == "on_overflow" and e.tokens_after < e.tokens_before for e in drops)
    assert all(c.prompt_tokens + c.output_tokens <= TINY.context_window for c in result.calls)


@dataclass(frozen=True, kw_only=True)
class GiveUp(Strategy):
    name = "give-up"

    def on_overflow(self, ctx, session):
        return Outcome(ctx, (event("fail", ctx, ctx),), fail="circuit breaker open")


def test_a_failing_strategy_ends_the_session_and_keeps_earlier_calls():
    result = replay(growing_trace(), GiveUp(), ReplayConfig(TINY), counter=TokenCounter())
    assert result.failed and "circuit breaker open" in result.failed
    assert 0 < len(result.calls) < 11 and not any(c.overflow for c in result.calls)


@dataclass(frozen=True, kw_only=True)
class SummarizeEverything(Strategy):
    name = "summarize-all"

    def before_call(self, ctx, session):
        if session.call_index != 5:
            return None
        summary = session.summarize(ctx.messages[1:], prompt="Summarize.", max_tokens=200)
        new = ctx.replace((ctx.messages[0], Message.text_message("user", summary.text)))
        return Outcome(new, (event("summarize", ctx, new, summary_tokens=summary.output_tokens),))


def test_summarizer_calls_are_billed_as_their_own_rows_and_observed():
    seen = []
    result = replay(growing_trace(), SummarizeEverything(), ReplayConfig(profile("claude-sonnet-4-5")),
                    counter=TokenCounter(), observers=(lambda moment, call, ctx: seen.append((moment, call)) or [],))
    rows = [c for c in result.calls if c.kind == "summarizer"]
    assert len(rows) == 1 and rows[0].call == 5 and rows[0].output_tokens > 0 and rows[0].cost > 0
    assert len(result.summaries) == 1 and result.summaries[0].tokens == rows[0].output_tokens
    assert seen == [("compaction", 5), ("end", 10)]
    agent = [c for c in result.calls if c.kind == "agent"]
    assert agent[5].prompt_tokens < agent[4].prompt_tokens  # the summary replaced the history


def test_last_usage_is_the_previous_simulated_call():
    usages = []

    @dataclass(frozen=True, kw_only=True)
    class Spy(Strategy):
        name = "spy"

        def before_call(self, ctx, session):
            usages.append(session.last_usage)
            return None

    result = replay(growing_trace(3), Spy(), ReplayConfig(profile("claude-sonnet-4-5")), counter=TokenCounter())
    assert usages[0] is None
    for usage, previous in zip(usages[1:], result.calls, strict=False):
        assert usage.prompt_tokens == previous.prompt_tokens and usage.output_tokens == previous.output_tokens


def test_recorded_timestamps_drive_the_cache_lifetime():
    trace = growing_trace(2, size=2000)
    stamped = [replace(m, timestamp=1000.0 + 400 * i) for i, m in enumerate(trace.messages)]
    result = replay(replace(trace, messages=tuple(stamped)), strategies.build("none"),
                    ReplayConfig(profile("claude-sonnet-4-5")), counter=TokenCounter())
    # 800 s between calls: the 5-minute cache has always expired
    assert all(c.cache_read == 0 for c in result.calls)
    paced = replay(trace, strategies.build("none"), ReplayConfig(profile("claude-sonnet-4-5")), counter=TokenCounter())
    assert paced.calls[-1].cache_read > 0


def test_text_answer_without_usage_counts_its_own_tokens_as_output():
    trace = Trace("t", (Message.text_message("system", "s"), Message.text_message("user", "hi"),
                        Message("assistant", (Text("hello there"),))))
    (call,) = replay(trace, strategies.build("none"), ReplayConfig(profile("gpt-5")), counter=TokenCounter()).calls
    assert call.output_tokens == TokenCounter().truth(trace.messages[-1])


def test_on_the_long_scenario_opencode_bills_less_than_none_and_overflows_less(sonnet):
    """The foundation's end-to-end claim, on the bundled scenario `make bench` replays."""
    from traces.synthetic import generate

    trace = generate("long", seed=0)
    counter = TokenCounter()
    counter.prime(trace.messages)
    runs = {name: replay(trace, strategies.build(name), ReplayConfig(sonnet), counter=counter)
            for name in ("none", "opencode")}
    billed = {n: sum(c.prompt_tokens for c in r.calls) for n, r in runs.items()}
    overflows = {n: sum(c.overflow for c in r.calls if c.kind == "agent") for n, r in runs.items()}
    assert max(c.prompt_tokens for c in runs["none"].calls) > sonnet.context_window  # it does cross the window
    assert billed["opencode"] < billed["none"]
    assert overflows["opencode"] < overflows["none"]
    assert any(e.kind == "summarize" for e in runs["opencode"].events)


@dataclass(frozen=True, kw_only=True)
class Watch(Strategy):
    """Test strategy: records what each hook sees (the messages, and the totals against a recount)."""

    name = "watch"
    seen: list = None  # type: ignore[assignment]

    def _see(self, hook: str, ctx) -> None:
        fresh = ctx.meter.context(ctx.messages)
        self.seen.append((hook, ctx.messages, (ctx.estimate, ctx.truth) == (fresh.estimate, fresh.truth)))

    def on_tool_result(self, ctx, session):
        self._see("on_tool_result", ctx)

    def before_call(self, ctx, session):
        self._see("before_call", ctx)


def test_hooks_see_the_history_as_if_each_message_were_appended_alone():
    # Messages are appended a run at a time (up to each one carrying tool results); the hooks must
    # still see exactly the history so far: an answer that carries results itself gets no hook, two
    # answers in a row each get their call, and trailing inputs are in the end.
    use = lambda i: ToolUse(f"u{i}", "bash", {"command": str(i)})  # noqa: E731
    res = lambda i: ToolResult(f"u{i}", f"out {i}")  # noqa: E731
    msgs = (Message.text_message("system", "s"), Message.text_message("user", "go"),
            Message("assistant", (use(1), use(2))), Message("user", (res(1),)), Message("user", (res(2),)),
            Message.text_message("user", "and then"), Message("assistant", (Text("a"),)),
            Message("assistant", (use(3), res(0))), Message.text_message("user", "hm"), Message("user", (res(3),)),
            Message("assistant", (Text("b"),)), Message.text_message("user", "trailing"))
    seen: list = []
    replay(Trace("runs", msgs), Watch(seen=seen), ReplayConfig(TINY), counter=TokenCounter())
    expected, so_far = [], []
    for step in Trace("runs", msgs).steps():
        for m in step.inputs:
            so_far.append(m)
            if m.tool_results:
                expected.append(("on_tool_result", tuple(so_far)))
        if step.answer is not None:
            expected.append(("before_call", tuple(so_far)))
            so_far.append(step.answer)
    assert [(h, list(map(id, m))) for h, m, _ in seen] == [(h, list(map(id, m))) for h, m in expected]
    assert all(ok for *_, ok in seen)


def test_a_session_that_opens_with_an_answer_replays():
    # The first step then has no messages before its answer (a chat export can start so).
    msgs = (Message.text_message("assistant", "Hello."), Message.text_message("user", "hi"),
            Message.text_message("assistant", "How can I help?"))
    seen: list = []
    result = replay(Trace("answer-first", msgs), Watch(seen=seen), ReplayConfig(TINY), counter=TokenCounter())
    assert result.error is None and len(result.calls) == 2
    assert [len(m) for _, m, _ in seen] == [0, 2]


def _with_recorded_compaction(agent: str) -> Trace:
    """A session whose agent compacted after call 2: its summary (a user message, as Copilot and Codex
    write it) and, OpenCode-style, the request that asked for it and the note it resumed with."""
    msgs = [Message.text_message("system", "system prompt"), Message.text_message("user", "go")]
    for i in range(3):
        msgs += [Message("assistant", (ToolUse(f"c{i}", "bash", {"command": f"cat log{i}"}),)),
                 Message("user", (ToolResult(f"c{i}", f"out{i} " * 50),))]
    msgs += [Message.text_message("user", "What did we do so far?", meta={"compaction": True}),
             Message.text_message("user", "RECORDED SUMMARY " * 40, meta={"summary": True}),
             Message.text_message("user", "Continue if you have next steps",
                                  meta={"synthetic": True, "compaction": True}),
             Message.text_message("assistant", "done")]
    return Trace("rc", tuple(msgs), agent=agent)


def test_the_recorded_agents_own_compaction_is_not_appended_to_the_replayed_context():
    """Issue 24 (c): the replayed strategy keeps its own context; the recorded agent's summary, the request
    for it and its continue note would otherwise sit beside the replay's own summary (second-compaction
    drift). A summary before the first answer (a file that begins with a compaction) stays, and Claude
    Code's replays keep them for now (bench.replay.KEEPS_RECORDED_COMPACTIONS)."""
    seen: list[tuple[Message, ...]] = []

    @dataclass(frozen=True, kw_only=True)
    class Watch(Strategy):
        name = "watch"

        def before_call(self, ctx, session):
            seen.append(ctx.messages)
            return None

    for agent in ("copilot-cli", "opencode", "codex"):
        seen.clear()
        replay(_with_recorded_compaction(agent), Watch(), ReplayConfig(profile("claude-sonnet-4-5")),
               counter=TokenCounter())
        texts = [m.text for m in seen[-1]]
        assert not any("RECORDED SUMMARY" in t or t in ("What did we do so far?", "Continue if you have next steps")
                       for t in texts), agent
        assert len(seen[-1]) == 8  # system, go, three calls with their results
    seen.clear()
    replay(_with_recorded_compaction("claude-code"), Watch(), ReplayConfig(profile("claude-sonnet-4-5")),
           counter=TokenCounter())
    assert any("RECORDED SUMMARY" in m.text for m in seen[-1])
    opening = Trace("open", (Message.text_message("user", "EARLIER SUMMARY", meta={"summary": True}),
                             Message.text_message("user", "go on"), Message.text_message("assistant", "ok")),
                    agent="copilot-cli")
    seen.clear()
    replay(opening, Watch(), ReplayConfig(profile("claude-sonnet-4-5")), counter=TokenCounter())
    assert seen[0][0].text == "EARLIER SUMMARY"
