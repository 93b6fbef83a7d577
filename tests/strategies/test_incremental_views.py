"""The read-time projections keep their view between calls: each call's view must be the one the
from-scratch definition gives (the original code, kept here as the oracle), totals included."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

import strategies
from bench.context.messages import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from bench.replay.validity import RequestCheck, problems
from bench.summarizers.extractive import ExtractiveSummarizer
from strategies._tools import rewrite_results, rewrite_uses
from strategies.anthropic_clear import AnthropicClearToolUses
from strategies.openhands._common import render
from strategies.openhands.masking import MASKED, ObservationMasking
from strategies.swe_agent import LastNObservations, elided, last_n_elided
from traces.model import Message, Text, ToolResult, ToolUse, Trace
from traces.synthetic import generate

MODEL = replace(profile("claude-sonnet-4-5"), context_window=40_000)


def session_trace(seed: int) -> Trace:
    """A short session with several results per message now and then, a reused id and a human turn."""
    rng = random.Random(seed)
    msgs = [Message.text_message("system", "agent"), Message.text_message("user", "task")]
    for i in range(40):
        ids = [f"c{i}", f"c{i}b"] if rng.random() < 0.2 else [f"c{i}"]
        if rng.random() < 0.05:
            ids = [f"c{i - 1}"]  # a reused id
        msgs.append(Message("assistant", (Text("step"), *(ToolUse(x, rng.choice(["bash", "read", "todo"]),
                                                              {"path": f"f{i}.py"}) for x in ids))))
        msgs.append(Message("user", tuple(ToolResult(x, "line\n" * rng.randint(1, 400)) for x in ids)))
        if rng.random() < 0.1:
            msgs.append(Message.text_message("user", "and also this"))
    msgs.append(Message.text_message("assistant", "done"))
    return Trace(f"s{seed}", tuple(msgs))


def drive(strategy, trace: Trace, counter, oracle, summaries: bool = False) -> int:
    """Append the trace message by message as the replay does; at each call compare the view.
    Returns the calls whose view differed from the stored history (the projection did work)."""
    meter = Meter(counter, strategy.estimator)
    session = Session(MODEL, meter, ExtractiveSummarizer())
    ctx = meter.context(())
    checked = rewrites = 0
    for m in trace.messages:
        if m.role == "assistant":
            outcome = strategy.before_call(ctx, session)
            if outcome is not None:
                ctx = outcome.context
            sent = strategy.project(ctx, session)
            expected = oracle(ctx)
            assert sent.messages == expected
            fresh = meter.context(expected)
            assert (sent.estimate, sent.truth) == (fresh.estimate, fresh.truth)
            checked += sent.messages != ctx.messages
            rewrites += any(x.meta.get("checkpoint") for x in ctx.messages)
        ctx = ctx.append(m)
    assert not summaries or rewrites, "the stored history was never rewritten"
    return checked


def last_n_oracle(n: int, polling: int):
    def view(ctx):
        ids = last_n_elided(ctx.messages, n, polling)
        return tuple(rewrite_results(m, lambda r: elided(r.content) if r.tool_use_id in ids else None)
                     for m in ctx.messages)
    return view


@pytest.mark.parametrize("n,polling", [(1, 1), (3, 1), (5, 3)])
def test_last_n_observations_view_matches_the_definition(counter, n, polling):
    for seed in range(3):
        assert drive(LastNObservations(n=n, polling=polling), session_trace(seed), counter,
                     last_n_oracle(n, polling)) > 25


def test_hybrid_masks_what_it_sends_after_each_summary(counter):
    # the summary rewrites the stored history: the kept view starts afresh, then grows again
    trace = generate("long@tokens=60000", 0)
    hybrid = strategies.build("hybrid@n=5,keep_last_m_turns=3,window=4")
    assert drive(hybrid, trace, counter, last_n_oracle(4, 1), summaries=True) > 10


def clear_oracle(s: AnthropicClearToolUses):
    """The original ``_edited``: walk every message on every call."""
    def view(ctx):
        if s.trigger_type == "input_tokens" and ctx.truth <= s.trigger:
            return ctx.messages
        uses = [b for m in ctx.messages for b in m.blocks if isinstance(b, ToolUse)]
        if s.trigger_type == "tool_uses" and len(uses) <= s.trigger:
            return ctx.messages
        kept = {u.id for u in uses[max(0, len(uses) - s.keep):]} if s.keep > 0 else set()
        clear = frozenset(u.id for u in uses if u.id not in kept and u.name not in s.exclude_tools)
        out = []
        for m in ctx.messages:
            ids = frozenset(b.id if isinstance(b, ToolUse) else b.tool_use_id
                            for b in (*m.tool_uses, *m.tool_results)) & clear
            if ids:
                m = rewrite_results(m, lambda r, ids=ids: s.placeholder if r.tool_use_id in ids else None)
                if s.clear_tool_inputs:
                    m = rewrite_uses(m, lambda u, ids=ids: {} if u.id in ids else None)
            out.append(m)
        edited = ctx.replace(out)
        return ctx.messages if ctx.truth - edited.truth < s.clear_at_least else edited.messages
    return view


@pytest.mark.parametrize("params", [
    {"trigger": 3_000},
    {"trigger": 3_000, "keep": 0, "clear_tool_inputs": True},
    {"trigger": 2_000, "clear_at_least": 4_000, "exclude_tools": ("todo",)},
    {"trigger_type": "tool_uses", "trigger": 6, "keep": 2},
])
def test_clear_tool_uses_view_matches_the_definition(counter, params):
    s = AnthropicClearToolUses(**params)
    for seed in range(3):
        assert drive(s, session_trace(seed), counter, clear_oracle(s)) > 10


def test_context_totals_move_by_the_difference(counter):
    rng = random.Random(3)
    pool = [Message.text_message("user", "x " * rng.randint(1, 300)) for _ in range(30)]
    meter = Meter(counter, "chars/4")
    ctx = meter.context(pool[:10])
    for _ in range(300):
        msgs = list(ctx.messages)
        op = rng.choice(["append", "edit", "drop", "shuffle", "dup", "empty"])
        if op == "append":
            msgs += rng.sample(pool, rng.randint(1, 3))
        elif op == "edit" and msgs:
            msgs[rng.randrange(len(msgs))] = rng.choice(pool)
        elif op == "drop" and msgs:
            del msgs[rng.randrange(len(msgs)):][:rng.randint(1, 3)]
        elif op == "shuffle":
            rng.shuffle(msgs)
        elif op == "dup" and msgs:
            msgs.insert(rng.randrange(len(msgs)), msgs[0])
        elif op == "empty":
            msgs = []
        new = ctx.replace(msgs)
        fresh = meter.context(msgs)
        assert (new.messages, new.estimate, new.truth) == (fresh.messages, fresh.estimate, fresh.truth)
        ctx = new


def test_the_validity_check_of_a_changing_view_matches_a_fresh_check(counter):
    # a masked view differs from the last request in the middle: the kept state must still match
    trace = session_trace(1)
    check = RequestCheck()
    meter = Meter(counter, "truth")
    session = Session(MODEL, meter, ExtractiveSummarizer())
    s = LastNObservations(n=2)
    ctx = meter.context(())
    for m in trace.messages:
        if m.role == "assistant":
            sent = s.project(ctx, session).messages
            broken = sent[:-1] if len(sent) > 3 else sent  # now and then an unanswered call
            for request in (sent, broken):
                assert check.problems(request) == problems(request)
        ctx = ctx.append(m)


def masking_oracle(window: int):
    """The original ``ObservationMasking.view``: mask and render the whole history on every call."""
    def view(ctx):
        cutoff = len(ctx) - window
        if not any(m.tool_results for m in ctx.messages[:max(cutoff, 0)]):
            return ctx.messages
        out = [Message("user", (Text(MASKED), *(b for b in m.blocks if not isinstance(b, ToolResult))),
                       meta={"masked": True}) if i < cutoff and m.tool_results else m
               for i, m in enumerate(ctx.messages)]
        return render(out, ctx.messages)
    return view


def with_answered_task(trace: Trace) -> Trace:
    """The first human turn also carries a tool result (render puts it back once it is masked)."""
    first = trace.messages[1]
    msgs = (trace.messages[0], Message("user", (*first.blocks, ToolResult("c0", "early"))), *trace.messages[2:])
    return Trace(trace.id + "-answered", msgs)


def with_split_results(trace: Trace) -> Trace:
    """Parallel calls answered in separate messages, one with a note beside it: at the window's edge
    one result is masked, so its call is dropped and the other result, now without a call, stripped."""
    msgs: list[Message] = []
    for m in trace.messages:
        if len(m.tool_results) > 1:
            first, *rest = m.tool_results
            msgs.append(Message("user", (first,)))
            msgs.extend(Message("user", (r, Text("note"))) for r in rest)
        else:
            msgs.append(m)
    return Trace(trace.id + "-split", tuple(msgs))


@pytest.mark.parametrize("window", [1, 4, 9, 30])
def test_openhands_masking_view_matches_the_definition(counter, window):
    s = ObservationMasking(attention_window=window)
    for seed in range(3):
        assert drive(s, session_trace(seed), counter, masking_oracle(window)) > (5 if window == 30 else 25)
    assert drive(s, with_answered_task(session_trace(0)), counter, masking_oracle(window)) > 5
    for seed in range(4):
        assert drive(s, with_split_results(session_trace(seed)), counter, masking_oracle(window)) > 5


def test_openhands_masking_event_counts_the_messages_not_sent_as_stored(counter):
    s = ObservationMasking(attention_window=6)
    meter = Meter(counter, s.estimator)
    session = Session(MODEL, meter, ExtractiveSummarizer())
    ctx = meter.context(())
    events = 0
    for m in session_trace(2).messages:
        if m.role == "assistant":
            outcome = s.before_call(ctx, session)
            expected = masking_oracle(6)(ctx)
            if outcome is None:
                assert expected == ctx.messages
            else:
                events += 1
                kept = sum(1 for x in expected if any(x is y for y in ctx.messages))
                assert outcome.events[0].messages_touched == len(ctx) - kept > 0
        ctx = ctx.append(m)
    assert events > 20
