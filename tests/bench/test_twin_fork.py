"""The open-loop twin forked at the first re-read (bench.replay.loop.replay_with_twin) bills exactly what the
twin replayed from the start bills (bench.run.runner._open_loop before the fork), and leaves the replay it
was forked from as a plain replay would have it."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dataclass_field
from dataclasses import replace as dc_replace

import pytest

import strategies
from bench.context.strategy import Outcome, event
from bench.replay import ReplayConfig, replay
from bench.replay.loop import replay_with_twin
from bench.run.runner import RunConfig, _twin_totals, run_task
from bench.scoring.probes import needle_observer
from bench.tokens import TokenCounter
from tests.bench.test_rereads import MODEL, PruneOld, trace
from traces.model import Message, ToolResult, ToolUse, Trace


def long_trace() -> Trace:
    """``trace()``'s session (one re-read, at the edit: call 3), then a second file read, tests run, the first
    file edited again (a second re-read, the main replay's only) and more calls to replay after the fork."""
    t = trace()
    more = [Message("assistant", (ToolUse("r2", "read_file", {"path": "/r/other.py"}),)),
            Message("user", (ToolResult("r2", "x = 1\n" * 200),)),
            Message("assistant", (ToolUse("b2", "bash", {"command": "pytest -q"}),)),
            Message("user", (ToolResult("b2", "2 passed"),)),
            Message("assistant", (ToolUse("e2", "edit_file", {
                "path": "/r/app.py", "old_text": "MAX_PARSER_RETRIES = 7", "new_text": "MAX_PARSER_RETRIES = 9"}),)),
            Message("user", (ToolResult("e2", "ok"),)),
            Message("assistant", (ToolUse("b3", "bash", {"command": "pytest -q"}),)),
            Message("user", (ToolResult("b3", "3 passed"),)),
            Message.text_message("assistant", "done")]
    return Trace("twin", (*t.messages[:-1], *more), needles=t.needles)


@dataclass(frozen=True, kw_only=True)
class PruneThenSummarize(PruneOld):
    """PruneOld, and from call ``summarize_at`` on (after the fork) a summary of all but the system prompt and
    the last message, once (its memory across calls: ``session.state``)."""

    name = "prune-then-summarize"
    summarize_at: int = 5

    def before_call(self, ctx, session):
        out = super().before_call(ctx, session)
        ctx2, events = (out.context, out.events) if out is not None else (ctx, ())
        if session.call_index >= self.summarize_at and not session.state.get("summarized"):
            session.state["summarized"] = True
            s = session.summarize(ctx2.messages[1:-1], prompt="Summarize the session.", max_tokens=400)
            new = ctx2.replace((ctx2.messages[0], Message.text_message("user", s.text), ctx2.messages[-1]))
            events += (event("summarize", ctx2, new, summary_tokens=s.output_tokens),)
            ctx2 = new
        return Outcome(ctx2, events) if events else None


def full_twin(t: Trace, strategy):
    """The twin as bench.run.runner._open_loop replayed it before forks: from the start, open and costs only."""
    return replay(t, strategy, ReplayConfig(MODEL, open_loop=True, costs_only=True), counter=TokenCounter())


@pytest.mark.parametrize("make", [PruneOld, PruneThenSummarize], ids=["prune", "summarize-after-fork"])
def test_the_forked_twin_bills_as_the_twin_replayed_from_the_start(make):
    t = long_trace()
    observed = make()
    result, twin = replay_with_twin(t, observed, ReplayConfig(MODEL), counter=TokenCounter(),
                                    observers=(needle_observer(t),))
    assert [c.call for c in result.calls if c.kind == "reread"] == [3, 6]  # two re-reads; forked at the first
    full = full_twin(t, make())
    assert twin is not None and twin.calls == full.calls  # every field of every call, in order
    assert twin.summaries == full.summaries
    assert _twin_totals(twin) == {"cost": _twin_totals(full)["cost"],
                                  "input_tokens": sum(c.prompt_tokens for c in full.calls)}
    assert not any(c.kind == "reread" for c in twin.calls)
    if make is PruneThenSummarize:  # the twin's compaction is its own: billed in its calls, not the replay's
        assert [c.call for c in twin.calls if c.kind == "summarizer"] == [5]
        assert sum(c.kind == "summarizer" for c in result.calls) == 1
    # the replay forked from is the plain replay's, calls, events and probes alike
    alone = make()
    plain = replay(t, alone, ReplayConfig(MODEL), counter=TokenCounter(), observers=(needle_observer(t),))
    assert (result.calls, result.events, result.summaries, result.probes) == \
        (plain.calls, plain.events, plain.summaries, plain.probes)
    assert len(observed.sent) == len(alone.sent)  # the twin ran on a copy of the strategy (its own ``sent``)
    assert [len(s) for s in observed.sent] == [len(s) for s in alone.sent]


def test_no_rereads_no_twin():
    result, twin = replay_with_twin(trace(), strategies.build("none"), ReplayConfig(MODEL), counter=TokenCounter())
    assert twin is None and not any(c.kind == "reread" for c in result.calls)


def _forked_at_first_reread(t: Trace, strategy) -> tuple:
    """The replay's loop driven step by step (as ``_Loop.run`` does) up to its fork, and the twin not yet run.
    Compiled (bench/cli/native.py), the loop's methods call each other natively: a spy set on the class would
    not be called."""
    from bench.replay.loop import _Loop

    loop = _Loop(t, strategy, ReplayConfig(MODEL), TokenCounter(), None, strategy.name, ())
    while loop.twin is None:
        loop.next += 1
        assert loop.step(loop.steps[loop.next - 1], True)
    return loop, loop.twin


def test_the_fork_holds_what_its_id_keyed_memos_name():
    """The copied prompt cache keys common prefixes on ``id()`` of the original entries: the fork keeps every
    original it copied alive (``origin``), so no new object of the twin can take one of those ids."""
    loop, twin = _forked_at_first_reread(long_trace(), PruneOld())
    common, entries = dict(twin.cache._common), {id(e) for e in twin.cache._entries}
    assert all(k in twin.origin for k in common)  # each an original's, held (no dropped entry)
    assert not set(common) & entries  # not one of the copies' ids (a lookup by a copy misses, and recounts)
    assert twin.strategy is not None and twin.session.on_summary.__self__ is twin  # bills into the twin
    assert loop.session.on_summary.__self__ is loop and twin.session is not loop.session
    assert twin.twin is None and twin.pending is not None and twin.result is not loop.result


def test_a_fork_sets_every_attribute_of_the_loop():
    """``_FORKED`` and ``_SET_BY_FORK`` name every attribute ``_Loop.__init__`` sets, once: one added and left out
    of both would be missing on the twin."""
    from bench.replay.loop import _FORKED, _SET_BY_FORK, _Loop

    loop, twin = _forked_at_first_reread(long_trace(), PruneOld())
    names = [*_FORKED, *_SET_BY_FORK]
    assert len(set(names)) == len(names)
    def attributes(x: _Loop) -> set[str]:  # compiled (no ``__dict__``), the ones set, as pickle reads them
        return set(vars(x)) if hasattr(x, "__dict__") else set(x.__getstate__())

    assert attributes(loop) == set(names) == attributes(twin)


def test_run_task_figures_are_those_of_the_twin_replayed_from_the_start():
    t = long_trace()
    spec = strategies.parse_spec("tests.bench.test_twin_fork:PruneThenSummarize")
    task = run_task(t, TokenCounter(), spec, RunConfig(model="claude-sonnet-4-5"))
    full = full_twin(t, PruneThenSummarize())
    assert task.error is None and task.open_loop == _twin_totals(full)


QUICK = ("aider", "codex", "opencode:tail", "gemini-cli", "cline-quarter", "claude-code")
"""Families with summarizer calls, id-keyed memos and running sums on the strategy; the rest run as slow."""


@pytest.mark.parametrize("name", [n if n in QUICK else pytest.param(n, marks=pytest.mark.slow)
                                  for n in strategies.names()])
def test_every_strategy_forks_as_it_replays_from_the_start(name):
    """On a bench session where most strategies re-read (synthetic ``multitask``, seed 0)."""
    t = _bench_trace()
    result, twin = replay_with_twin(t, strategies.build(name), ReplayConfig(MODEL), counter=TokenCounter())
    if not any(c.rereads for c in result.calls):
        assert twin is None
        return
    full = full_twin(t, strategies.build(name))
    assert twin is not None and twin.calls == full.calls and twin.summaries == full.summaries


def test_a_task_pickles_as_a_worker_returns_it():
    """Workers return a task's results by pickle: what the (possibly compiled, bench/cli/native.py) loop and needle
    observer put in them comes back equal, the forked twin's too, in plain types only."""
    import pickle

    t = _bench_trace()
    result, twin = replay_with_twin(t, strategies.build("codex"), ReplayConfig(MODEL), counter=TokenCounter(),
                                    observers=(needle_observer(t),))
    assert twin is not None and result.probes and result.summaries
    for r in (result, twin):
        back = pickle.loads(pickle.dumps(r))
        assert back == r and back.calls.columns() == r.calls.columns() and back.probes == r.probes
    plain = (str, int, float, bool, type(None))
    assert all(type(v) in plain for row in result.probes for v in row.values())
    assert all(type(v) in plain for col in result.calls.columns().values() for v in col)


_TRACE: list[Trace] = []


def _bench_trace() -> Trace:
    from traces.synthetic import generate

    if not _TRACE:
        _TRACE.append(generate("multitask", seed=0))
    return _TRACE[0]


def test_without_the_twin_the_open_loop_columns_are_nan_under_their_own_task_key():
    import math

    from bench.run.runner import task_key
    from bench.scoring.metrics import task_row

    t = long_trace()
    spec = strategies.parse_spec("tests.bench.test_twin_fork:PruneThenSummarize")
    config = RunConfig(model="claude-sonnet-4-5")
    off = dc_replace(config, open_loop_twin=False)
    row = task_row(run_task(t, TokenCounter(), spec, off))
    assert row["rereads"] == 2 and math.isnan(row["cost_open_loop"]) and math.isnan(row["input_tokens_open_loop"])
    assert row["cost"] == task_row(run_task(t, TokenCounter(), spec, config))["cost"]  # the replay itself alike
    assert task_key("sha", spec, off) != task_key("sha", spec, config)


def test_the_robustness_replays_run_the_twin_only_for_an_objective_that_reads_it(monkeypatch, tmp_path):
    import pandas as pd

    from bench.decide import verdict as bv
    from bench.run import robustness as rb

    results = pd.DataFrame([{"trace": f"t{i}", "strategy": s, "cost": c + i, "cost_open_loop": c + i,
                             "retention": 1.0, "overflows": 0, "events": 1, "calls": 3, "peak_context": 10,
                             "error": ""} for i in range(3) for s, c in (("a", 1.0), ("b", 2.0), ("none", 3.0))])
    asked = []

    def fake(run_dir, info, name, top, **changes):
        asked.append(changes["open_loop_twin"])
        return results

    monkeypatch.setattr(rb, "_replay", fake)
    info = {"config": {"cache_ttl": "5m", "model": "claude-sonnet-4-5"}, "traces": []}
    for objective, twin in ((None, False), ("min-cost", False), ("overflows=0,min-cost_open_loop", True)):
        asked.clear()
        v = bv.decide(results, objective)
        changes, _ = rb.replayed_changes(tmp_path, results, v, info, objective=objective, weight="equal",
                                         summarizer=None, resamples=50)
        assert asked and set(asked) == {twin}, objective
        assert all(c.same for c in changes)
    assert rb.reads_open_loop("retention>=best,min-input_tokens_open_loop")
    assert not rb.reads_open_loop("default")


def test_a_state_that_cannot_be_copied_falls_back_to_the_twin_replayed_in_full():
    """A strategy holding what ``copy.deepcopy`` refuses (a generator): no fork, and run_task replays the twin
    from the start, with the same figures."""
    t = long_trace()
    config = RunConfig(model="claude-sonnet-4-5")
    spec = strategies.parse_spec("tests.bench.test_twin_fork:Uncopyable")
    result, twin = replay_with_twin(t, Uncopyable(), ReplayConfig(MODEL), counter=TokenCounter())
    assert twin is None and sum(c.kind == "reread" for c in result.calls) == 2
    task = run_task(t, TokenCounter(), spec, config)
    assert task.error is None and task.open_loop == _twin_totals(full_twin(t, PruneOld()))


@dataclass(frozen=True, kw_only=True)
class Uncopyable(PruneOld):
    name = "uncopyable"
    ticks: object = dataclass_field(default_factory=lambda: (i for i in range(10**9)), compare=False)
