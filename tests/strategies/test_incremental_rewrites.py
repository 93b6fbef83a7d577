"""Strategies that rewrite the stored history keep running indexes between calls: every hook must
return what the from-scratch definition (the original code, kept here or in the module as the oracle)
returns, call by call, stored context, totals and events included."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from operator import is_not
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import strategies
from bench.context.strategy import Event, Outcome, event
from bench.cost.pricing import profile
from bench.replay import ReplayConfig, replay
from bench.tokens import TokenCounter
from strategies._tools import rewrite_results, rewrite_uses
from strategies.anthropic_clear import AnthropicClearToolUses
from strategies.openhands._common import _ViewCondenser, keep_indices
from strategies.openhands.masking import ObservationMasking
from strategies.openhands.recent import RecentEvents
from strategies.tiered import TieredPlaceholders
from tests.strategies.shapes import SHAPES, shaped
from traces.model import Message, Text, Thinking, ToolResult, ToolUse, Trace
from traces.synthetic import generate

SONNET = profile("claude-sonnet-4-5")


class Recorder:
    """A strategy seen through every hook: what each returned (stored messages, totals, events)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.log: list[tuple] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _hook(self, hook: str, ctx, session) -> Any:  # type: ignore[no-untyped-def]
        out = getattr(self.inner, hook)(ctx, session)
        if hook == "project":
            self.log.append((session.call_index, hook, out.messages, out.estimate, out.truth))
        elif out is None:
            self.log.append((session.call_index, hook, None))
        else:
            c = out.context
            self.log.append((session.call_index, hook, c.messages, c.estimate, c.truth, out.events, out.fail))
        return out

    def on_tool_result(self, ctx, session):  # type: ignore[no-untyped-def]
        return self._hook("on_tool_result", ctx, session)

    def before_call(self, ctx, session):  # type: ignore[no-untyped-def]
        return self._hook("before_call", ctx, session)

    def on_overflow(self, ctx, session):  # type: ignore[no-untyped-def]
        return self._hook("on_overflow", ctx, session)

    def project(self, ctx, session):  # type: ignore[no-untyped-def]
        return self._hook("project", ctx, session)


def same_replay(new: Any, oracle: Any, trace: Trace, counter, window: int) -> int:  # type: ignore[no-untyped-def]
    """Replay ``trace`` with both; assert every hook's answer and the results are equal. Returns the
    number of hook answers that changed the context (so a test can insist the strategy did work)."""
    config = ReplayConfig(model=replace(SONNET, context_window=window))
    a, b = Recorder(new), Recorder(oracle)
    ra, rb = replay(trace, a, config, counter=counter), replay(trace, b, config, counter=counter)
    assert ra.error is None and rb.error is None, (ra.error, rb.error)
    assert len(a.log) == len(b.log)
    for x, y in zip(a.log, b.log, strict=True):
        assert x == y, (x[:2], y[:2])
    assert (ra.calls, ra.events, ra.summaries, ra.failed) == (rb.calls, rb.events, rb.summaries, rb.failed)
    return sum(1 for x in a.log if x[1] != "project" and x[2] is not None)


def odd_session(seed: int) -> Trace:
    """Reasoning, essential and read-only tools, big inputs, parallel calls, a reused id, human turns,
    huge outputs and an orphan result now and then."""
    rng = random.Random(seed)
    msgs = [Message.text_message("system", "agent"), Message.text_message("user", "task")]
    tools = ["bash", "read_file", "todo_write", "grep", "edit"]
    for i in range(70):
        ids = [f"c{i}", f"c{i}b"] if rng.random() < 0.2 else [f"c{i}"]
        if rng.random() < 0.04:
            ids = [f"c{i - 1}"]  # a reused id
        think = (Thinking("hmm " * rng.randint(1, 200)),) if rng.random() < 0.5 else ()
        uses = tuple(ToolUse(x, rng.choice(tools), {"path": f"f{i}.py", "command": "y" * rng.choice([5, 500])})
                     for x in ids)
        msgs.append(Message("assistant", (*think, Text("step"), *uses)))
        size = rng.choice([1, 30, 400, 3_000, 60_000 // 80])
        results = tuple(ToolResult(x, "line of output\n" * rng.randint(1, size)) for x in ids)
        if rng.random() < 0.03:
            results += (ToolResult(f"ghost{i}", "orphan\n" * 300),)
        msgs.append(Message("user", results))
        if rng.random() < 0.08:
            msgs.append(Message.text_message("user", "and also this " * rng.randint(1, 50)))
    msgs.append(Message.text_message("assistant", "done"))
    return Trace(f"odd{seed}", tuple(msgs))


def traces() -> list[Trace]:
    return [generate("long@tokens=80000", 0), generate("long@tokens=50000", 1), odd_session(0), odd_session(1)]


# --- tiered placeholders ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class TieredFromScratch(TieredPlaceholders):
    """The original ``before_call``: tiers 1 and 1.5 walk the whole history on every call."""

    def before_call(self, ctx, session):  # type: ignore[no-untyped-def]
        window = session.model.context_window
        events: list[Event] = []
        cur = ctx
        for tier, share in (("1", self.tier1), ("1.5", self.tier1_5)):
            if cur.estimate >= share * window:
                new, touched = self.tier_1(cur) if tier == "1" else self.tier_1_5(cur)
                if touched:
                    events.append(event("prune", cur, new, touched=touched,
                                        detail=f"tier {tier}: estimate {cur.estimate} >= {share:.0%} of {window}"))
                    cur = new
        if cur.estimate >= self.tier2 * window:
            new, touched, spent = self.tier_2(cur, session)
            if touched:
                events.append(event("summarize", cur, new, touched=touched, summary_tokens=spent,
                                    detail=f"tier 2: estimate {cur.estimate} >= {self.tier2:.0%} of {window}"))
                cur = new
        return Outcome(cur, tuple(events)) if events else None


@pytest.mark.parametrize("params", [{}, {"keep_recent": 1, "min_output_tokens": 50, "min_input_chars": 100},
                                    {"tier2": 0.95, "essential_tools": ("todo_write", "grep")}])
@pytest.mark.parametrize("window", [20_000, 60_000])
def test_tiered_matches_the_definition(counter, params, window):
    worked = sum(same_replay(TieredPlaceholders(**params), TieredFromScratch(**params), t, counter, window)
                 for t in traces())
    assert worked > 20


# --- five-layer and Claude Code -------------------------------------------------------------------


def layered_from_scratch(cls: type) -> type:
    """``cls`` with L1 and L2 run over the whole history on every call (the original code)."""

    @dataclass(frozen=True, kw_only=True)
    class FromScratch(cls):  # type: ignore[misc, valid-type]
        def _persist_since(self, ctx, state):  # type: ignore[no-untyped-def]
            return self._persist(ctx)

        def _microcompact_since(self, ctx, state):  # type: ignore[no-untyped-def]
            return self._microcompact(ctx)

    return FromScratch


@pytest.mark.parametrize("spec", [
    "five-layer", "five-layer@persist_min_chars=2000,microcompact_keep=2",
    "five-layer@microcompact_marker=[gone],microcompact_pct=0.5",
    "five-layer@microcompact_keep=0,persist_pct=0.3", "claude-code", "claude-code:1.0",
    "claude-code:microcompact@microcompact_idle_seconds=25", "claude-code@persist_pct=0.2,microcompact_pct=0.4",
])
@pytest.mark.parametrize("window", [25_000, 60_000])
def test_layered_matches_the_definition(counter, spec, window):
    s = strategies.build(spec)
    oracle = layered_from_scratch(type(s))(**s.params())
    worked = sum(same_replay(s, oracle, t, counter, window) for t in traces())
    assert worked > 3


# --- OpenHands views --------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RecentFromScratch(RecentEvents):
    """The original view and ``touched``: the latest human turn and the stored ids found anew each call."""

    def view(self, ctx, session):  # type: ignore[no-untyped-def]
        n = len(ctx)
        if n <= self.max_events:
            return None
        tail = max(0, self.max_events - self.keep_first)
        return keep_indices(ctx, {*range(self.keep_first), *range(n - tail if tail else n, n)})

    def touched(self, ctx, sent, session):  # type: ignore[no-untyped-def]
        return _ViewCondenser.touched(self, ctx, sent, session)


@dataclass(frozen=True, kw_only=True)
class MaskingFromScratch(ObservationMasking):
    """The from-scratch view (``ObservationMasking.view``) recounted on every call."""

    def _sent(self, ctx, session):  # type: ignore[no-untyped-def]
        return _ViewCondenser._sent(self, ctx, session)

    def touched(self, ctx, sent, session):  # type: ignore[no-untyped-def]
        return _ViewCondenser.touched(self, ctx, sent, session)


def human_turns(trace: Trace) -> Trace:
    """``trace`` with a human turn now and then, so the latest one moves."""
    rng = random.Random(len(trace.messages))
    out: list[Message] = []
    for m in trace.messages:
        out.append(m)
        if m.role == "user" and rng.random() < 0.05:
            out.append(Message.text_message("user", "one more thing"))
    return replace(trace, messages=tuple(out))


def late_task(trace: Trace) -> Trace:
    """``trace`` without its system prompt and task: the first human turn comes late."""
    msgs = [m for m in trace.messages[2:] if not m.is_human_turn]
    return replace(trace, messages=(*msgs[:41], Message.text_message("user", "the task, late"), *msgs[41:]))


@pytest.mark.parametrize("params", [{"max_events": 10}, {"max_events": 25, "keep_first": 3}, {"max_events": 1},
                                    {"max_events": 40, "keep_first": 0}, {"max_events": 4, "keep_first": 2}])
def test_recent_events_matches_the_definition(counter, params):
    worked = sum(same_replay(RecentEvents(**params), RecentFromScratch(**params), t, counter, 200_000)
                 for t in (*traces(), *map(human_turns, traces()), *map(late_task, traces())))
    assert worked > 50


@pytest.mark.parametrize("params", [{"attention_window": 6}, {"attention_window": 20}])
def test_observation_masking_matches_the_definition(counter, params):
    worked = sum(same_replay(ObservationMasking(**params), MaskingFromScratch(**params), t, counter, 200_000)
                 for t in (*traces(), *map(human_turns, traces()), *map(late_task, traces())))
    assert worked > 50


# --- Anthropic clear_tool_uses ----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ClearFromScratch(AnthropicClearToolUses):
    """The definition: every message walked on every call, the event from whole-set differences."""

    def _edited(self, ctx, memo, state):  # type: ignore[no-untyped-def]
        if self.trigger_type == "input_tokens" and ctx.truth <= self.trigger:
            return ctx, frozenset()
        uses = [u for m in ctx.messages for u in m.tool_uses]
        if self.trigger_type == "tool_uses" and len(uses) <= self.trigger:
            return ctx, frozenset()
        kept = {u.id for u in uses[max(0, len(uses) - self.keep):]} if self.keep > 0 else set()
        clear = frozenset(u.id for u in uses if u.id not in kept and u.name not in self.exclude_tools)
        if not clear:
            return ctx, clear
        out = []
        for m in ctx.messages:
            ids = frozenset(b.id if isinstance(b, ToolUse) else b.tool_use_id
                            for b in (*m.tool_uses, *m.tool_results)) & clear
            if ids:
                m = rewrite_results(m, lambda r, ids=ids: self.placeholder if r.tool_use_id in ids else None)
                if self.clear_tool_inputs:
                    m = rewrite_uses(m, lambda u, ids=ids: {} if u.id in ids else None)
            out.append(m)
        edited = ctx.replace(out)
        return (ctx, frozenset()) if ctx.truth - edited.truth < self.clear_at_least else (edited, clear)

    def before_call(self, ctx, session):  # type: ignore[no-untyped-def]
        sent, cleared = self._edited(ctx, {}, session.state)
        session.state["projection"] = (ctx.messages, sent)
        previous = session.state.get("cleared", frozenset())
        if not cleared - previous:
            return None
        session.state["cleared"] = cleared
        detail = (f"server-side edit (sent only): cleared_tool_uses={len(cleared)} "
                  f"cleared_input_tokens={ctx.truth - sent.truth} placeholder={self.placeholder!r}")
        touched = sum(map(is_not, ctx.messages, sent.messages))
        return Outcome(ctx, (event("prune", ctx, sent, touched=touched, detail=detail),))


@pytest.mark.parametrize("params", [
    {"trigger": 3_000},
    {"trigger": 3_000, "keep": 0, "clear_tool_inputs": True},
    {"trigger": 2_000, "clear_at_least": 4_000, "exclude_tools": ("todo_write",)},
    {"trigger": 9_000, "clear_at_least": 20_000, "keep": 6},
    {"trigger_type": "tool_uses", "trigger": 6, "keep": 2},
])
def test_clear_tool_uses_matches_the_definition(counter, params):
    worked = sum(same_replay(AnthropicClearToolUses(**params), ClearFromScratch(**params), t, counter, 200_000)
                 for t in traces())
    assert worked > 20


# --- every strategy above on the contract suite's adversarial shapes -----------------------------------


def adversarial_cases() -> list[tuple[Any, Any, int]]:
    """(incremental, from scratch, window) with thresholds low enough to fire on short sessions."""
    cases: list[tuple[Any, Any, int]] = [
        (TieredPlaceholders(min_output_tokens=20, min_input_chars=40, keep_recent=1),
         TieredFromScratch(min_output_tokens=20, min_input_chars=40, keep_recent=1), 6_000),
        (RecentEvents(max_events=6), RecentFromScratch(max_events=6), 200_000),
        (ObservationMasking(attention_window=3), MaskingFromScratch(attention_window=3), 200_000),
        (AnthropicClearToolUses(trigger=500, keep=1, clear_tool_inputs=True),
         ClearFromScratch(trigger=500, keep=1, clear_tool_inputs=True), 200_000),
    ]
    for spec in ("five-layer@microcompact_keep=1", "claude-code@microcompact_pct=0.3,microcompact_keep=2"):
        s = strategies.build(spec)
        cases.append((s, layered_from_scratch(type(s))(**s.params()), 6_000))
    return cases


@pytest.mark.parametrize("shape", sorted(SHAPES))
@seed(14)
@settings(max_examples=4, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_incremental_paths_on_adversarial_shapes(shape: str, data: st.DataObject) -> None:
    trace = data.draw(shaped(shape), label=shape)
    counter = TokenCounter()
    for new, oracle, window in adversarial_cases():
        same_replay(new, oracle, trace, counter, window)


def test_microcompact_falls_back_when_an_id_comes_back(counter):
    """A call re-using an old id makes the old output's id "old" again: the newest result is cleared
    too (the definition works on the set of ids), which only the whole-history run sees."""
    from bench.context import Meter
    from strategies.layered.five_layer import FiveLayer

    def step(i: str, tool: str, n: int) -> list[Message]:
        return [Message("assistant", (ToolUse(i, tool, {"command": "x"}),)),
                Message("user", (ToolResult(i, "out\n" * n),))]

    s = FiveLayer(microcompact_keep=1)
    meter = Meter(counter, s.estimator)
    plan = [step("x", "bash", 50), step("y", "bash", 60), step("x", "bash", 70), step("z", "grep", 80),
            step("y", "read_file", 90), step("w", "bash", 10)]
    state: dict = {}
    ctx = oracle = meter.context((Message.text_message("system", "s"), Message.text_message("user", "go")))
    for pair in plan:
        ctx, oracle = ctx.append(*pair), oracle.append(*pair)
        (ctx, ev), (oracle, want) = s._microcompact_since(ctx, state), s._microcompact(oracle)
        assert (ctx.messages, ctx.estimate, ctx.truth, ev) == (oracle.messages, oracle.estimate, oracle.truth, want)
