"""The contract every registered strategy keeps, property-tested over random traces (DESIGN.md).

For each strategy, hypothesis generates random agent sessions and replays them on a small model
(16K window) so that thresholds expressed as fractions of the window fire. A checking wrapper
sees every hook's outcome and every request sent, and asserts:

1. the system prompt (when the session has one) is sent first and unchanged;
2. the latest human turn's text is in what is sent, whole (as its message, or inside a summary),
   unless an event says the real agent itself cuts it (detail ``CUT_LATEST_HUMAN``: Codex keeps
   at most 20K tokens of user messages); an empty user message is no turn (``is_prompt``: the
   API refuses one, so no agent takes it for the latest request);
3. no tool_result without its tool_use before it, no tool_use without its result, no id used
   twice, no empty message (bench/replay/validity.py) -- unless the recorded session itself had that
   problem, in which case the replay flags the request ``invalid`` (every flagged request, and only
   those, has problems, and each has one ``invalid`` event); with an id the session itself reused,
   which call a result answers is moot, so problems on that id count as the session's. "Request"
   means every one the loop sends for the agent: its ``agent`` row and a simulated re-read's
   ``reread`` row (bench/replay/rereads.py: the same request, answered by a read call) made at the
   same call, in order; a projection that did not fit and went to ``on_overflow`` is never sent;
   a compaction's own summary request (its messages, then its prompt as a user message) is held to
   the same rule where the agent sends the conversation as messages (``Strategy.summary_as_text``
   False: aider, goose and OpenHands write it into the prompt as text);
4. the trace is never mutated;
5. a hook's context is never larger than its input unless a summary / handoff / re-injection
   was added (a marker may be a little longer than a tiny output it replaced: 64 tokens each);
6. two replays of the same trace give identical records.

200 random traces per strategy in CI (the ``slow`` marker runs 1,000), and every strategy over
every adversarial shape of tests/strategies/shapes.py (no system prompt, no human turn, 25
parallel calls, one message bigger than the window in each position, empty messages, ...): a
fixed seed and 2 examples per pair in CI, 10 per pair under ``slow``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, replace

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

import strategies
from bench.context.messages import Context
from bench.context.strategy import CUT_LATEST_HUMAN
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.replay.validity import Problem, problems
from bench.summarizers import Summary, SummaryRequest
from bench.summarizers.extractive import ExtractiveSummarizer
from bench.tokens.counter import TokenCounter, render
from strategies._tools import is_prompt
from tests.strategies.shapes import SHAPES, shaped
from traces import native
from traces.model import Message, Text, ToolResult, ToolUse, Trace

GROWING_KINDS = {"summarize", "handoff", "reinject", "persist"}
MARKER_SLACK = 64
TINY = replace(profile("claude-sonnet-4-5"), id="tiny-16k", context_window=16_000, max_output=2_000)
CONFIG = ReplayConfig(TINY)
TOOLS = ("read_file", "bash", "edit_file", "grep", "skill")
WORDS = ("alpha", "beta", "gamma", "delta", "error:", "def", "return", "42", "/src/app.py", "ok")


@st.composite
def traces(draw: st.DrawFn) -> Trace:
    """A random, well-formed session: tool calls always answered, human turns now and then."""
    n_steps = draw(st.integers(1, 28))
    msgs: list[Message] = [Message.text_message("system", "You are a coding agent. " * 20),
                           Message.text_message("user", "Task: fix the failing test in app.py, ref T-1")]
    for step in range(n_steps):
        n_tools = draw(st.integers(0, 3))
        uses = tuple(
            ToolUse(f"s{step}t{k}", draw(st.sampled_from(TOOLS)),
                    {"path": f"/src/f{draw(st.integers(0, 5))}.py", "command": f"run {step}"})
            for k in range(n_tools)
        )
        text = (Text(f"step {step} thinking"),) if draw(st.booleans()) or not uses else ()
        msgs.append(Message("assistant", text + uses))
        if uses:
            results = tuple(
                ToolResult(u.id, " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=1200))),
                           is_error=draw(st.booleans()))
                for u in uses
            )
            msgs.append(Message("user", results))
        if draw(st.integers(0, 6)) == 0 or not uses:
            turn = f"Human turn {step}: now also check module m{step} (ref T-{step})"
            msgs.append(Message.text_message("user", turn))
    msgs.append(Message.text_message("assistant", "All done."))
    return Trace("random", tuple(msgs))


class Checked:
    """Delegates every hook to the strategy under test and asserts the contract on what comes back."""

    def __init__(self, inner: strategies.Strategy, trace: Trace) -> None:
        self.inner = inner
        self.name = inner.name
        self.estimator = inner.estimator
        self.trace = trace
        self.humans_by_step, self.recorded_by_step = self._by_step(trace)
        self.sent_problems: dict[int, list[tuple[Problem, ...]]] = {}
        """Per call, the problems of each request sent, in order: a call that made a re-read sends two
        (bench/replay/loop.py ``_Loop.step``), each with its own row."""
        self.failed = False
        """A hook gave up (``Outcome.fail``): the loop sends nothing after it."""
        self.human_cut: list[Message] = []
        """Human turns the strategy said the real agent itself cut short (an event saying so)."""
        self.call = 0
        """The call whose hooks run now: a summary request is asked from inside one."""
        self.summary_problems: list[tuple[int, tuple[Problem, ...]]] = []
        """(call, problems) of each summary request the strategy asked for, as sent."""

    @staticmethod
    def _by_step(trace: Trace) -> tuple[dict[int, Message | None], dict[int, Counter]]:
        """Per call: the latest human turn so far (an empty one is none: checking that ``""`` is
        sent would hide the loss of the real request before it), and the problems of the
        uncompacted session (what the recorded agent had; a strategy may pass these on, not add
        to them)."""
        latest: Message | None = None
        humans, recorded = {}, {}
        so_far: list[Message] = []
        for step in trace.steps():
            for m in step.inputs:
                if is_prompt(m):
                    latest = m
            so_far += step.inputs
            humans[step.index] = latest
            recorded[step.index] = _keys(problems(so_far))
            if step.answer is not None:
                so_far.append(step.answer)
        return humans, recorded

    def _hook(self, hook: str, ctx: Context, session) -> object:
        self.call = session.call_index
        outcome = getattr(self.inner, hook)(ctx, session)
        if outcome is not None and outcome.fail is not None:
            self.failed = True
        if outcome is not None:
            new = outcome.context
            kinds = {e.kind for e in outcome.events}
            if any(e.detail.startswith(CUT_LATEST_HUMAN) for e in outcome.events):
                self.human_cut.append(self.humans_by_step[session.call_index])
            touched = sum(e.messages_touched for e in outcome.events)
            if not kinds & GROWING_KINDS:
                assert new.truth <= ctx.truth + MARKER_SLACK * max(touched, 1), (
                    f"{hook} grew the context {ctx.truth} -> {new.truth} with events {kinds or '{}'}")
            self._check(new, f"{hook} outcome", session.call_index, in_flight=hook == "on_tool_result")
        return outcome

    def on_tool_result(self, ctx, session):
        return self._hook("on_tool_result", ctx, session)

    def before_call(self, ctx, session):
        return self._hook("before_call", ctx, session)

    def on_overflow(self, ctx, session):
        # the projection before it did not fit the window: the loop sends the one after it instead
        # (bench/replay/loop.py ``_Loop.ready``), so only that one is a request
        if not self.failed:
            self.sent_problems[session.call_index].pop()
        return self._hook("on_overflow", ctx, session)

    def project(self, ctx, session):
        sent = self.inner.project(ctx, session)
        self._check(sent, "sent request", session.call_index, in_flight=False)
        if not self.failed:
            self.sent_problems.setdefault(session.call_index, []).append(problems(sent.messages))
        return sent

    def _check(self, ctx: Context, where: str, call: int, *, in_flight: bool) -> None:
        msgs = ctx.messages
        first = self.trace.messages[0] if self.trace.messages else None
        if first is not None and first.role == "system":
            assert msgs and msgs[0] is first, f"{where} (call {call}): system prompt not first/unchanged"
        found = problems(msgs)
        if in_flight:  # the step is not complete yet: its calls may still wait for their results
            found = tuple(p for p in found if p.kind != "unanswered_call")
        recorded = self.recorded_by_step[call]
        tangled = {subject for _, subject in recorded}  # a reused id: which call a result answers is moot
        added = Counter({k: n for k, n in (_keys(found) - recorded).items() if k[1] not in tangled or k[0] == "empty"})
        assert not added, f"{where} (call {call}): the strategy added {sorted(added)}: {[str(p) for p in found]}"
        human = self.humans_by_step.get(call)
        if not in_flight and human is not None and not any(h is human for h in self.human_cut):
            assert any(m is human for m in msgs) or any(human.text in render(m) for m in msgs), (
                f"{where} (call {call}): the latest human turn is gone or cut short")


def _keys(found: tuple[Problem, ...]) -> Counter:
    return Counter((p.kind, p.subject) for p in found)


class SummaryCheck:
    """The run's summarizer (the extractive stand-in), recording what each summary request would
    send: the strategy's messages, then its prompt as the last user message."""

    name = "extractive"

    def __init__(self, checked: Checked) -> None:
        self.inner, self.checked = ExtractiveSummarizer(), checked

    def summarize(self, request: SummaryRequest) -> Summary:
        sent = (*request.messages, Message.text_message("user", request.prompt))
        self.checked.summary_problems.append((self.checked.call, problems(sent)))
        return self.inner.summarize(request)


def records(result) -> list[dict]:
    return ([asdict(c) for c in result.calls] + [asdict(e) for e in result.events]
            + [asdict(s) for s in result.summaries])


def check_strategy(name: str, trace: Trace) -> None:
    before = native.dumps(trace)
    checked = Checked(strategies.build(name), trace)
    first = replay(trace, checked, CONFIG, counter=TokenCounter(), summarizer=SummaryCheck(checked))
    second = replay(trace, Checked(strategies.build(name), trace), CONFIG, counter=TokenCounter())
    assert native.dumps(trace) == before, "the trace was mutated"
    assert first.error is None and second.error is None
    assert records(first) == records(second), "two replays of the same trace differ"
    assert first.failed == second.failed
    # Every request the loop sent for the agent has a row: ``agent``, and ``reread`` for a simulated
    # re-read made before it at the same call (bench/replay/loop.py ``_Loop.step``: the strategy's
    # request, answered by a read call; the API would reject it just the same, so it is checked and
    # flagged like the agent's). ``summarizer`` rows are the compactions' own requests, billed and
    # not flagged by the loop (``_Loop.bill_summary``): ``SummaryCheck`` checks them below instead.
    sent_rows: dict[int, list[int]] = {}
    for c in first.calls:
        if c.kind != "summarizer":
            sent_rows.setdefault(c.call, []).append(c.invalid)
    # (a call whose hook gave up sent nothing: no row, and no request recorded)
    assert sent_rows == {call: [len(p) for p in sent] for call, sent in checked.sent_problems.items() if sent}, (
        "the replay must flag exactly the requests the API would reject")
    flagged = Counter((call, n) for call, row in sent_rows.items() for n in row if n)
    assert Counter((e.call, e.messages_touched) for e in first.events if e.kind == "invalid") == flagged, (
        "one invalid event per flagged request, naming as many problems as its row")
    if not checked.inner.summary_as_text:  # sent as messages: the API matches their calls and results too
        for call, found in checked.summary_problems:
            tangled = {subject for _, subject in checked.recorded_by_step[call]}
            added = {k for k in _keys(found) - checked.recorded_by_step[call] if k[1] not in tangled or k[0] == "empty"}
            assert not added, f"summary request at call {call} adds {sorted(added)}: {[str(p) for p in found]}"


# Count- and size-triggered defaults rarely fire on short random traces: these variants scale the
# thresholds down so the summarize / handoff / clear paths are exercised by the contract too.
SCALED_DOWN = (
    "opencode:tail@prune=True",
    "llm-summary@n=4,keep_last_m_turns=2",
    "hybrid@n=5,keep_last_m_turns=2,window=2",
    "openhands@max_size=12,keep_first=2",
    "openhands:v0@max_size=12",
    "openhands:recent@max_events=8",
    "openhands:amortized@max_size=10",
    "openhands:masking@attention_window=3",
    "amp@threshold=6000",
    "amp:handoff@threshold=6000",
    "anthropic-clear-tool-uses@trigger=5000,clear_at_least=1000,clear_tool_inputs=True",
    "baseagent@context_limit=0,prune_protect=2000,prune_minimum=1000",
)


@pytest.mark.parametrize("name", strategies.names())
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(trace=traces())
def test_contract(name: str, trace: Trace) -> None:
    check_strategy(name, trace)


@pytest.mark.parametrize("name", SCALED_DOWN)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(trace=traces())
def test_contract_scaled_down(name: str, trace: Trace) -> None:
    check_strategy(name, trace)


@pytest.mark.slow
@pytest.mark.parametrize("name", [*strategies.names(), *SCALED_DOWN])
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(trace=traces())
def test_contract_long(name: str, trace: Trace) -> None:
    check_strategy(name, trace)


SHAPE_CASES = [(shape, name) for shape in SHAPES for name in strategies.names()]
"""Every adversarial shape × every registered strategy (19 × 36 = 684 pairs when issue 11 landed)."""


@pytest.mark.parametrize(("shape", "name"), SHAPE_CASES)
@seed(11)
@settings(max_examples=1, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_contract_on_adversarial_shapes(shape: str, name: str, data: st.DataObject) -> None:
    check_strategy(name, data.draw(shaped(shape), label=shape))


@pytest.mark.slow
@pytest.mark.parametrize(("shape", "name"), SHAPE_CASES)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_contract_on_adversarial_shapes_long(shape: str, name: str, data: st.DataObject) -> None:
    check_strategy(name, data.draw(shaped(shape), label=shape))


def _orphan_before_reread() -> Trace:
    """The smallest session found by ``test_contract_on_adversarial_shapes_long[result_before_call-
    claude-code:2.0]``: /src/f1.py is read twice, then a tool result reaches the log before the call
    that made it (the session's own problem) and that call is a ``bash`` acting on /src/f1.py. On the
    16K model Claude Code 2.0 summarizes the reads away before call 2, so the loop makes a re-read
    there, sent with the orphan result in it, and compacts again (the orphan summarized) before the
    agent's own request."""
    body = "alpha 42 error: beta /src/app.py def gamma ok return delta " * 20
    msgs = [Message.text_message("system", "You are a coding agent. " * 20),
            Message.text_message("user", "Task: fix the failing test in app.py, ref T-1")]
    for s in range(2):
        msgs += [Message("assistant", (ToolUse(f"s{s}t0", "read_file", {"path": "/src/f1.py"}),)),
                 Message("user", (ToolResult(f"s{s}t0", f"{body}#{s}"),)),
                 Message.text_message("user", f"Human turn {s}: now also check module m{s} (ref T-{s})")]
    msgs += [Message("user", (ToolResult("s2t0", body),)),
             Message("assistant", (ToolUse("s2t0", "bash", {"path": "/src/f1.py"}),)),
             Message.text_message("assistant", "All done.")]
    return Trace("orphan-before-reread", tuple(msgs))


def test_contract_checks_a_reread_request_as_a_request() -> None:
    """A re-read's request is a request the API would reject like any other: its ``reread`` row is
    flagged and carries the ``invalid`` event, while the agent's request at the same call, sent after
    a second compaction, is clean. The contract compared events with ``agent`` rows only and kept one
    request per call (the last), so it failed here: invalid events at calls {2, 3}, flagged agent rows {3}."""
    trace = _orphan_before_reread()
    checked = Checked(strategies.build("claude-code:2.0"), trace)
    result = replay(trace, checked, CONFIG, counter=TokenCounter())
    at_2 = [(c.kind, c.invalid) for c in result.calls if c.call == 2 and c.kind != "summarizer"]
    assert at_2 == [("reread", 1), ("agent", 0)]
    assert [len(p) for p in checked.sent_problems[2]] == [1, 0]
    invalid = [e for e in result.events if e.kind == "invalid"]
    assert [(e.call, e.messages_touched) for e in invalid if e.call == 2] == [(2, 1)]
    assert "tool result s2t0 has no call before it" in invalid[0].detail
    check_strategy("claude-code:2.0", trace)
