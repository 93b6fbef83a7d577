"""Codex's running trigger values (strategies/codex/running.py) equal a fresh computation over any
history a replay can hand the strategy: one that grew, one a compaction rebuilt, one with a message
replaced in place (same length, other reasoning), one shorter, and two strategies of other reasoning
factors sharing a session. A stale prefix value would show as a differing ``total`` or window."""

from __future__ import annotations

import random
from dataclasses import replace

from bench.context.messages import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from strategies._tools import last_assistant_index
from strategies.codex import Codex, recorded_window
from strategies.codex.common import checked_end
from strategies.codex.running import STATE_KEY
from traces.model import Message, ToolResult, ToolUse, Usage

GPT = profile("gpt-5.2")


def _message(rng: random.Random, i: int) -> Message:
    kind = rng.choice(("user", "env", "answer", "call", "output", "output"))
    if kind == "user":
        return Message.text_message("user", f"turn {i}")
    if kind == "env":
        return Message.text_message("user", f"<environment_context>cwd=/x{i}</environment_context>")
    meta: dict = {}
    if rng.random() < 0.6:
        meta["reasoning_encrypted_lengths"] = [rng.randrange(0, 20_000) for _ in range(rng.randrange(1, 3))]
    if rng.random() < 0.3:
        meta.update(reasoning_encrypted_unsized=1, reasoning_output_tokens=rng.randrange(1, 5_000))
    if rng.random() < 0.2:
        meta["context_window"] = rng.choice((258_400, 121_600, 400_000))
    if kind == "answer":
        return Message.text_message("assistant", f"answer {i}", meta=meta)
    if kind == "call":
        return Message("assistant", (ToolUse(f"c{i}", "shell", {"cmd": "ls"}),), meta=meta)
    return Message("user", (ToolResult(f"c{i - 1}", "x" * rng.randrange(0, 400)),))


def _reference(strategy: Codex, ctx, session: Session) -> tuple[int, int]:
    """``total`` and ``raw_window`` as they were computed before the running values: a walk over
    the whole history (``old_reasoning``, ``recorded_window``)."""
    msgs = ctx.messages
    last = last_assistant_index(msgs)
    window = session.model.max_input or session.model.context_window
    recorded = recorded_window(msgs)
    if recorded and recorded == window and strategy.effective_window_percent:
        window = round(recorded * 100 / strategy.effective_window_percent)
    if last < 0:
        return ctx.estimate, window
    end = checked_end(msgs, last) if strategy.pre_turn_check else len(msgs)
    usage = session.last_usage
    total = usage.prompt_tokens + usage.output_tokens + sum(ctx.est(m) for m in msgs[last + 1:end])
    if strategy.count_old_reasoning:
        total += strategy.old_reasoning(msgs[:end])
    return total, window


def test_running_values_equal_a_fresh_walk_through_growth_rebuilds_and_in_place_edits(counter):
    rng = random.Random(28)
    meter = Meter(counter, "bytes/4")
    gpt = replace(GPT, max_input=258_400)  # a recorded 258,400 window is then turned back to raw
    shared = Session(gpt, meter, None)  # one session the whole way: its memo must follow every change
    shared.last_usage = Usage(input_tokens=10_000, output_tokens=100)
    strategies = (Codex(), Codex(unsized_reasoning_factor=1.5), Codex(pre_turn_check=False),
                  Codex(count_old_reasoning=False))
    ctx = meter.context([Message.text_message("system", "You are Codex."), Message.text_message("user", "go")])
    checked = 0
    for step in range(400):
        roll = rng.random()
        if roll < 0.85 or len(ctx) < 6:  # the usual call: a few messages added (lineage kept past 128)
            ctx = ctx.append(*(_message(rng, len(ctx) + j) for j in range(rng.randrange(1, 4))))
        elif roll < 0.89:  # a compaction: a rebuilt, shorter history of new and old objects
            keep = rng.randrange(len(ctx) * 2 // 3, len(ctx))
            ctx = ctx.replace((*ctx.messages[:keep], Message.text_message("user", f"summary {step}"),
                               *ctx.messages[-2:]))
        elif roll < 0.97:  # one message replaced in place: same length, other reasoning and window
            i = rng.randrange(1, len(ctx))
            ctx = ctx.replace((*ctx.messages[:i], _message(rng, i), *ctx.messages[i + 1:]))
        else:  # a history the session never saw, as long as the last one
            ctx = meter.context([_message(rng, j) for j in range(len(ctx))])
        for strategy in rng.sample(strategies, k=len(strategies)):
            fresh = Session(gpt, meter, None, last_usage=shared.last_usage)
            expected = _reference(strategy, ctx, fresh)
            assert (strategy.total(ctx, shared), strategy.raw_window(ctx, shared)) == expected, step
            assert (strategy.total(ctx, fresh), strategy.raw_window(ctx, fresh)) == expected, step
            checked += 1
    assert len(ctx) > 128 and checked == 1_600  # long enough for the lineage path of starts_with


def test_a_grown_history_is_scanned_only_from_where_it_grew(counter):
    """The point of the memo: a call that added messages scans only them (a rebuilt history from
    its first new object), so the per-call cost does not grow with the history."""
    meter = Meter(counter, "bytes/4")
    s = Session(GPT, meter, None)
    s.last_usage = Usage(input_tokens=1_000, output_tokens=0)
    seen: list[int] = []
    strategy = Codex()
    estimate = strategy.reasoning_estimate

    class Counting(Codex):
        def reasoning_estimate(self, m: Message) -> int:
            seen.append(id(m))
            return estimate(m)

    counting = Counting()
    msgs = [Message.text_message("user", "go")]
    for i in range(300):
        msgs += [Message.text_message("assistant", f"a{i}", meta={"reasoning_encrypted_lengths": [4_000]}),
                 Message.text_message("user", f"u{i}")]
    ctx = meter.context(msgs)
    counting.total(ctx, s)
    assert len(seen) == 300
    ctx = ctx.append(Message.text_message("assistant", "new", meta={"reasoning_encrypted_lengths": [8_000]}))
    seen.clear()
    counting.total(ctx, s)
    assert len(seen) == 1
    rebuilt = ctx.replace((*ctx.messages[:11], Message.text_message("user", "summary")))
    seen.clear()
    assert counting.total(rebuilt, s) == counting.total(rebuilt, Session(GPT, meter, None, last_usage=s.last_usage))
    assert s.state[STATE_KEY].held is rebuilt.messages and len(s.state[STATE_KEY].reasoning) == 13
