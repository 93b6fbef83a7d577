"""Provider-attributed counts: a replay of ``none`` sends what the recorded agent sent."""

from __future__ import annotations

from pathlib import Path

import pytest

import strategies
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.replay.provider import adopt_shipped, shipped_counts
from bench.tokens.attribution import Attribution, attribute
from bench.tokens.counter import TokenCounter
from traces.model import Message, RecordedCompaction, Text, Thinking, ToolResult, ToolUse, Trace, Usage

SHARED = Path(__file__).resolve().parents[3] / "shared" / "traces"


def _replay_none(trace: Trace) -> tuple[list[int], Attribution]:
    counter = TokenCounter()
    shipped = shipped_counts(trace, counter)
    assert isinstance(shipped, Attribution)
    worker = TokenCounter()
    adopt_shipped(worker, trace, shipped)
    result = replay(trace, strategies.build("none"), ReplayConfig(profile("claude-sonnet-4-5")), counter=worker)
    return [c.prompt_tokens for c in result.calls if c.kind == "agent"], shipped


def _answer(text: str, prompt: int, output: int = 10, model: str = "m1", thinking: str = "") -> Message:
    blocks = ((Thinking(thinking),) if thinking else ()) + (Text(text), ToolUse(text[:6], "bash", {"c": text}))
    return Message("assistant", blocks, usage=Usage(input_tokens=prompt, output_tokens=output), meta={"model": model})


def _result(text: str) -> Message:
    return Message("user", (ToolResult(text[:6], text),))


def _trace(answers: list[Message], agent: str = "claude-code", compactions=()) -> Trace:
    msgs: list[Message] = [Message.text_message("user", "fix the failing test in the parser module")]
    for i, a in enumerate(answers):
        msgs.append(a)
        msgs.append(_result(f"out{i:03d} " + "line of output with numbers 12345\n" * (20 + 7 * i)))
    return Trace("t", tuple(msgs), agent=agent, model="m1", compactions=tuple(compactions))


def test_growth_is_split_and_overhead_measured_from_the_first_call() -> None:
    prompts = [20_000, 20_900, 22_100, 23_600, 25_400]
    trace = _trace([_answer(f"step{i} run the tests", p) for i, p in enumerate(prompts)])
    sent, att = _replay_none(trace)
    assert sent == prompts  # exact at every call, not only in sum
    assert att.overheads[0][0] == 0 and 18_000 < att.overheads[0][1] < 20_000
    assert att.ratio > 1.0  # the provider grew faster than cl100k on this session


def test_a_model_switch_re_measures_the_overhead_from_that_call() -> None:
    prompts = [20_000, 20_900, 26_100, 27_600]
    models = ["m1", "m1", "m2", "m2"]
    trace = _trace([_answer(f"step{i} go", p, model=m) for i, (p, m) in enumerate(zip(prompts, models, strict=True))])
    sent, att = _replay_none(trace)
    assert sent == prompts
    assert [c for c, _ in att.overheads] == [0, 2] and att.overheads[1][1] > att.overheads[0][1]


def test_a_call_without_usage_is_merged_into_the_next_one() -> None:
    answers = [_answer("a0 go", 20_000), _answer("a1 go", 0), _answer("a2 go", 22_000)]
    answers[1] = Message("assistant", answers[1].blocks, usage=None, meta={"model": "m1"})
    trace = _trace(answers)
    sent, _ = _replay_none(trace)
    assert sent[0] == 20_000 and sent[2] == 22_000


def test_after_a_recorded_compaction_only_what_follows_it_is_attributed() -> None:
    answers = [_answer("a0 go", 20_000), _answer("a1 go", 30_000), _answer("a2 go", 21_500)]
    trace = _trace(answers)
    msgs = list(trace.messages)
    msgs.insert(4, Message.text_message("user", "summary of the session so far", meta={"summary": True}))
    trace = Trace("t", tuple(msgs), agent="claude-code", model="m1",
                  compactions=(RecordedCompaction(4, "auto", 30_000, "summary"),))
    counter = TokenCounter()
    att = attribute(trace, counter)
    assert att is not None
    held_after = sum(att.counts[4:6])  # the summary and the step before call 2
    assert held_after == 21_500 - att.overheads[0][1]


def test_openai_reasoning_leaves_the_prompt_at_the_next_human_turn() -> None:
    a0 = _answer("a0 go", 20_000, output=800, thinking="let me think " * 100)
    a1 = _answer("a1 go", 21_200, output=300, thinking="more thought " * 30)
    msgs = [Message.text_message("user", "task"), a0, _result("r0 " + "x " * 50), a1,
            Message.text_message("user", "now do something else"),
            _answer("a2 go", 20_900, output=100)]
    trace = Trace("c", tuple(msgs), agent="codex", model="gpt-5.3-codex")
    sent, att = _replay_none(trace)
    assert sent == [20_000, 21_200, 20_900]  # the prompt shrank: the turn's reasoning was dropped
    assert att.dropped_at[1] == 2 and att.persistent[1] is not None and att.persistent[1] < att.counts[1]


def test_a_trace_without_usage_keeps_the_tokenizer_counts() -> None:
    trace = Trace("s", (Message.text_message("user", "hi"), Message.text_message("assistant", "hello")))
    counter = TokenCounter()
    assert attribute(trace, counter) is None
    assert shipped_counts(trace, counter) == counter.counts(trace.messages)


def _recorded_sessions() -> list[Trace]:
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent: the real sessions are not bundled with the repository")
    from traces.formats import load

    return load([str(SHARED / "claude-code__marot-spotter"), str(SHARED / "codex__madshn-localpush")]).traces


@pytest.mark.slow
def test_none_reproduces_every_recorded_prompt_before_the_first_compaction() -> None:
    from traces.model import recorded_calls

    checked = 0
    for trace in _recorded_sessions():
        sent, _ = _replay_none(trace)
        first = min(recorded_calls(trace), default=len(sent))
        recorded = [m.usage.prompt_tokens if m.usage else None for m in trace.messages if m.role == "assistant"]
        for call in range(min(first, len(sent))):
            if recorded[call]:
                assert abs(sent[call] - recorded[call]) <= 0.01 * recorded[call], (trace.id, call)
                checked += 1
    assert checked > 500


def test_text_a_strategy_writes_is_counted_at_the_session_ratio_and_recorded_messages_are_not() -> None:
    """Issue 25: under provider truth a message the strategy writes (a summary, a placeholder, a
    cut output) is counted by our tokenizer times the session's provider ratio; a recorded message,
    or a copy sharing its blocks, keeps its attributed count; a counter without attribution (ratio
    1) counts as before."""
    from dataclasses import replace

    from bench.context import Meter

    prompts = [20_000, 20_900, 22_100, 23_600, 25_400]
    trace = _trace([_answer(f"step{i} run the tests", p) for i, p in enumerate(prompts)])
    worker = TokenCounter()
    att = shipped_counts(trace, TokenCounter())
    adopt_shipped(worker, trace, att)
    assert att.ratio > 1.1
    meter = Meter(worker, "chars/4", 0, att.ratio)
    written = Message.text_message("user", "Summary: the parser test fails on empty input; fixed in parse.py. " * 20)
    plain = TokenCounter().truth(written)
    assert meter.truth(written) == round(plain * att.ratio) > plain
    recorded = trace.messages[2]
    assert meter.truth(recorded) == worker.truth(recorded) == att.counts[2]
    flagged = replace(recorded, meta={"kept": True})  # same blocks: the provider's count
    assert meter.truth(flagged) == att.counts[2]
    assert Meter(TokenCounter(), "chars/4").truth(written) == plain


def test_a_replayed_summary_is_billed_in_provider_units() -> None:
    """The same replay with the session's ratio and with ratio 1: identical up to the compaction,
    then the prompt that holds the summary is larger by the ratio's share of the summary."""
    from dataclasses import replace

    prompts = [20_000 + 1_500 * i for i in range(12)]
    trace = _trace([_answer(f"step{i} run the tests", p) for i, p in enumerate(prompts)])
    att = shipped_counts(trace, TokenCounter())
    assert isinstance(att, Attribution) and att.ratio > 1.1
    sent = []
    for shipped in (att, replace(att, ratio=1.0)):
        worker = TokenCounter()
        adopt_shipped(worker, trace, shipped)
        strat = strategies.build("five-layer@autocompact_pct=0.02,microcompact_pct=0.99")
        result = replay(trace, strat, ReplayConfig(profile("claude-sonnet-4-5")), counter=worker)
        (first, *_) = [e.call for e in result.events if e.kind == "summarize"]
        sent.append({c.call: c.prompt_tokens for c in result.calls if c.kind == "agent"})
    scaled, plain = sent
    assert all(scaled[c] == plain[c] for c in plain if c < first)
    assert scaled[first] > plain[first]
