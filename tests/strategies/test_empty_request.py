"""An empty user message is no turn: hand-built sessions where a log holds one, over every strategy.

A log can hold a user message with no content (or one empty text block) after the real request,
or an empty assistant message between a call and its result; no agent sends either (the API
refuses an empty message). Replayed under the contract's checks (tests/strategies/test_contract.py),
a summary or a cut that replaces the real request must still carry it, and a condenser must not
store a view that leaves a result without its call. The summarizer here answers a fixed text, so
a request survives only when the strategy itself carries it (the extractive summarizer would list
the user's requests and hide a loss).
"""

from __future__ import annotations

import pytest

import strategies
from bench.replay.loop import replay
from bench.summarizers import Summary, SummaryRequest
from bench.tokens.counter import TokenCounter
from tests.strategies.shapes import SYSTEM, TASK, words
from tests.strategies.test_contract import CONFIG, SCALED_DOWN, Checked
from traces.model import Message, Text, ToolResult, ToolUse, Trace

REQUEST = "Please also rename the helper in /src/util.py to parse_config (ref R-42)"
EMPTIES = {"no content": (), "an empty text": (Text(""),)}

SECOND_SUMMARY = (
    "amp@threshold=6000",
    "amp:handoff@threshold=6000",
    "baseagent@context_limit=0,prune_protect=2000,prune_minimum=1000",
)
"""Variants that compact this session more than once with no newer human turn: they once read only
real human turns, so a second summary quoted nothing and a second handoff's goal was "Continue the
task." (amp 2, baseagent 3)."""


class Fixed:
    """A summarizer that answers the same text, which quotes none of the user's requests."""

    name = "fixed"

    def summarize(self, request: SummaryRequest) -> Summary:
        return Summary("SUMMARY of the work so far.", 0, 8, self.name)


def session(empty: tuple[Text, ...] | None, *, after: str = "answer", steps: int = 24) -> Trace:
    """A task, three small steps, the request, an answer, then a long tool loop (about 2K tokens a
    result: the 16K test window compacts several times); ``empty`` is put right after the request
    (``after="request"``) or after the answer to it, or nowhere (None)."""
    msgs = [Message.text_message("system", SYSTEM), Message.text_message("user", TASK)]
    for s in range(3):
        msgs += [Message("assistant", (ToolUse(f"a{s}", "read_file", {"path": f"/src/a{s}.py"}),)),
                 Message("user", (ToolResult(f"a{s}", words(200, s)),))]
    msgs.append(Message.text_message("user", REQUEST))
    if empty is not None and after == "request":
        msgs.append(Message("user", empty))
    msgs.append(Message.text_message("assistant", "On it."))
    if empty is not None and after == "answer":
        msgs.append(Message("user", empty))
    for s in range(steps):
        msgs += [Message("assistant", (Text(f"step {s}"), ToolUse(f"b{s}", "bash", {"command": f"run {s}"}))),
                 Message("user", (ToolResult(f"b{s}", words(1400, s)),))]
    msgs.append(Message.text_message("assistant", "All done."))
    return Trace("empty-after-request", tuple(msgs))


def run(name: str, trace: Trace) -> None:
    """One replay under the contract's checks (they assert as the hooks run)."""
    result = replay(trace, Checked(strategies.build(name), trace), CONFIG, counter=TokenCounter(), summarizer=Fixed())
    assert result.error is None, result.error


NAMES = [*strategies.names(), *SCALED_DOWN]


@pytest.mark.parametrize("after", ["request", "answer"])
@pytest.mark.parametrize("empty", list(EMPTIES), ids=list(EMPTIES))
@pytest.mark.parametrize("name", NAMES)
def test_a_summary_that_replaces_the_request_carries_it_past_an_empty_user_message(name: str, empty: str, after: str):
    run(name, session(EMPTIES[empty], after=after))


@pytest.mark.parametrize("name", SECOND_SUMMARY)
def test_a_second_summary_or_handoff_carries_on_the_request_the_first_stood_for(name: str):
    trace = session(None)
    result = replay(trace, Checked(strategies.build(name), trace), CONFIG, counter=TokenCounter(), summarizer=Fixed())
    assert result.error is None, result.error
    assert sum(e.kind in ("summarize", "handoff") for e in result.events) >= 2  # the case under test


def pending(steps: int = 5) -> Trace:
    """Small steps, then a long call whose result comes after an empty assistant message, a human turn."""
    msgs = [Message.text_message("system", SYSTEM), Message.text_message("user", TASK)]
    for s in range(steps):
        msgs += [Message("assistant", (ToolUse(f"s{s}", "read_file", {"path": f"/src/f{s}.py"}),)),
                 Message("user", (ToolResult(f"s{s}", words(300, s)),))]
    script = "make " + words(600, 7)  # a long call: the context crosses a size threshold with it alone
    msgs += [Message("assistant", (ToolUse("x", "bash", {"command": script}),)), Message("assistant", ()),
             Message("user", (ToolResult("x", words(300, 99)),)), Message.text_message("user", REQUEST),
             Message("assistant", (ToolUse("y", "bash", {"command": "ls"}),)),
             Message("user", (ToolResult("y", words(300, 98)),)), Message.text_message("assistant", "All done.")]
    return Trace("pending-call", tuple(msgs))


@pytest.mark.parametrize("steps", [4, 5, 6])
@pytest.mark.parametrize("name", ["openhands:v0@max_size=12", "openhands:amortized@max_size=10"])
def test_a_v0_condenser_does_not_store_a_view_without_a_call_that_waits_for_its_result(name: str, steps: int):
    """V0's controller does not step while an action is pending (agent_controller.py ``_step``):
    a condensation then would store a view whose render dropped the call, and the result would
    come back alone (versions before 4 / 3)."""
    run(name, pending(steps))


def test_cline_sdk_basic_compaction_passes_over_an_empty_user_message():
    """runBasicCompaction's typed-prompt test read block 0 of a message with none (version 2 crashed)."""
    run("cline:sdk", session((), after="answer"))


def test_amp_hands_off_only_once_a_waiting_call_has_its_result():
    """The user starts a handoff (spec/strategies.md §5), so never while a call waits for its result:
    the new thread would get the result without its call (version 1)."""
    run("amp:handoff@threshold=3200", pending(5))


class QuotesOnce:
    """A summarizer whose first summary holds the request in its own text, and whose later ones
    do not: the first needs no quote, and the second must still carry the request on."""

    name = "quotes-once"

    def __init__(self) -> None:
        self.answered = 0

    def summarize(self, request: SummaryRequest) -> Summary:
        self.answered += 1
        text = f"SUMMARY. The user asked: {REQUEST}" if self.answered == 1 else "SUMMARY of the work so far."
        return Summary(text, 0, 16, self.name)


@pytest.mark.parametrize("name", SECOND_SUMMARY)
def test_a_request_a_first_summary_held_in_its_own_words_is_carried_past_a_second(name: str):
    trace = session(None)
    result = replay(trace, Checked(strategies.build(name), trace), CONFIG, counter=TokenCounter(),
                    summarizer=QuotesOnce())
    assert result.error is None, result.error
    assert sum(e.kind in ("summarize", "handoff") for e in result.events) >= 2
