"""Counterfactual re-reads (bench/replay/rereads.py): a call acting on a file the strategy dropped reads it
again first."""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median

import pytest

import strategies
from bench.context.strategy import Outcome, Strategy, event
from bench.cost.pricing import profile
from bench.replay import ReplayConfig, replay
from bench.replay.rereads import META
from bench.run.runner import RunConfig, run_task
from bench.scoring.metrics import task_row
from bench.scoring.probes import REREAD, VERBATIM, needle_observer
from bench.tokens import TokenCounter
from strategies.opencode import PRUNED
from traces.model import Message, Needle, Text, ToolResult, ToolUse, Trace

OLD = "def parse_config(path):\n    return load(path)\n"
SRC = ("def parse_config(path, *, strict=True):\n    return load(path, strict=strict)\nMAX_PARSER_RETRIES = 7\n"
       + "# padding line\n" * 300)
PART = "    10→    timeout_seconds = 30\n    11→    retries = 3\n"
MODEL = profile("claude-sonnet-4-5")


def trace(*, last_read: dict | None = None, last_shown: str = SRC, end_at_edit: bool = False) -> Trace:
    """Read app.py twice (the second read is what the session last showed), run the tests, then edit app.py
    (the session ends there with ``end_at_edit``). The system prompt is long enough to be cached."""
    msgs = [Message.text_message("system", "You are a coding agent. " * 400),
            Message.text_message("user", "fix the config parser"),
            Message("assistant", (ToolUse("r0", "read_file", {"path": "/r/app.py"}),)),
            Message("user", (ToolResult("r0", OLD),)),
            Message("assistant", (ToolUse("r1", "read_file", last_read or {"path": "/r/app.py"}),)),
            Message("user", (ToolResult("r1", last_shown),)),
            Message("assistant", (ToolUse("b1", "bash", {"command": "pytest -q"}),)),
            Message("user", (ToolResult("b1", "1 failed"),)),
            Message("assistant", (Text("Fixing it."), ToolUse("e1", "edit_file", {
                "path": "/r/app.py", "old_text": "    return load(path, strict=strict)", "new_text": "..."}))),
            Message("user", (ToolResult("e1", "ok"),)),
            Message.text_message("assistant", "done")]
    needle = Needle("n1", "fact", "retries", "how many retries does the parser make?", "MAX_PARSER_RETRIES = 7", 5)
    return Trace("rereads", tuple(msgs[:-2] if end_at_edit else msgs), needles=(needle,))


@dataclass(frozen=True, kw_only=True)
class PruneOld(Strategy):
    """Before each call, clears every tool output but those of the last message (a re-read survives the call it
    was made for); over ``limit`` truth tokens it drops everything but the system prompt and the last message.
    Records what it sent (``sent``) for the test to look at."""

    name = "prune-old"
    citation = "test"
    limit: int = 10**9
    limit_from: int = 0
    """The first call at which ``limit`` applies."""
    sent: list = field(default_factory=list, compare=False)

    def before_call(self, ctx, session):
        keep = len(ctx.messages) - 1
        new = ctx.replace(strategies.rewrite_results(m, lambda r: PRUNED if r.content != PRUNED else None)
                          if i < keep else m for i, m in enumerate(ctx.messages))
        events = (event("prune", ctx, new),) if new.messages != ctx.messages else ()
        if new.truth > self.limit and session.call_index >= self.limit_from:
            dropped = new.replace((new.messages[0], new.messages[-1]))
            events += (event("drop", new, dropped),)
            new = dropped
        return Outcome(new, events) if events else None

    def project(self, ctx, session):
        self.sent.append(ctx.messages)
        return ctx


def run(strategy: Strategy, t: Trace | None = None, *, open_loop: bool = False, observers=()):
    t = t or trace()
    return replay(t, strategy, ReplayConfig(MODEL, open_loop=open_loop), counter=TokenCounter(),
                  observers=observers)


def test_a_dropped_read_is_read_again_once_billed_with_the_content_last_shown():
    strategy = PruneOld()
    result = run(strategy)
    rereads = [c for c in result.calls if c.kind == "reread"]
    assert [(c.call, c.rereads) for c in rereads] == [(3, 1)]  # before the edit (call 3), one file
    [c] = rereads
    assert c.cache_read > 0  # it read the cached prefix (the system prompt) and is billed so
    assert c.cost == MODEL.cost(uncached=c.uncached, cache_read=c.cache_read, cache_write=c.cache_write,
                                output=c.output_tokens, ttl="5m") > 0
    # its output: the trace's own read calls, the median of their counts
    counter = TokenCounter()
    reads = [m for m in trace().messages if m.tool_uses and m.tool_uses[0].name == "read_file"]
    assert c.output_tokens == round(median(counter.truth(m) for m in reads))
    # the recorded edit was then sent with the read call and its result: the content the session last showed
    edit_request = strategy.sent[-2]
    asked, shown = edit_request[-2:]
    assert asked.meta.get(META) and shown.meta.get(META)
    assert [(u.name, dict(u.input)) for u in asked.tool_uses] == [("read_file", {"path": "/r/app.py"})]
    assert [r.content for r in shown.tool_results] == [SRC]
    assert asked.tool_uses[0].id == shown.tool_results[0].tool_use_id
    assert c.reread_tokens == counter.truth(asked) + counter.truth(shown)
    # nothing is left unseen by the edit once the file was read again; without re-reads the edit's file is unseen
    assert sum(x.unseen_refs for x in result.calls) == 0
    open_result = run(PruneOld(), open_loop=True)
    assert not any(x.kind == "reread" for x in open_result.calls)
    assert sum(x.unseen_refs for x in open_result.calls) == 1
    row, open_row = task_row(result), task_row(open_result)
    assert row["rereads"] == 1 and open_row["rereads"] == 0
    assert row["cost"] > open_row["cost"] and row["input_tokens"] > open_row["input_tokens"]
    assert row["calls"] == open_row["calls"]  # the extra call is a re-read, not an agent call


def test_a_file_shown_in_part_is_read_again_in_that_part_only():
    strategy = PruneOld()
    ranged = {"path": "/r/app.py", "offset": 10, "limit": 2}
    result = run(strategy, trace(last_read=ranged, last_shown=PART))
    assert [c.rereads for c in result.calls if c.kind == "reread"] == [1]
    asked, shown = strategy.sent[-2][-2:]
    assert dict(asked.tool_uses[0].input) == ranged  # the same ranged read
    assert shown.tool_results[0].content == PART


def test_none_and_a_strategy_that_keeps_the_file_make_no_reread():
    assert not any(c.kind == "reread" for c in run(strategies.build("none")).calls)
    # the edit names a file whose content is still sent: nothing to read again
    kept = trace()
    msgs = list(kept.messages)
    msgs[6:8] = []  # no call in between: the read result is the last message before the edit
    assert not any(c.kind == "reread" for c in run(PruneOld(), Trace("kept", tuple(msgs))).calls)


def test_the_next_compaction_counts_the_inserted_messages():
    """Under the limit without re-reads; the re-read's messages push the context over it, so the strategy
    drops at the re-read's call, measuring a context that holds them."""
    base = run(PruneOld(), open_loop=True)
    limit = next(c.prompt_tokens for c in base.calls if c.call == 3) + 50  # the edit's call, without re-reads
    strategy = PruneOld(limit=limit, limit_from=3)
    opened = run(PruneOld(limit=limit, limit_from=3), open_loop=True)
    assert not any(e.kind == "drop" for e in opened.events)
    result = run(strategy)
    [reread] = [c for c in result.calls if c.kind == "reread"]
    # at the edit's call: a prune before the re-read, then (the re-read appended) a prune and the drop
    acts = [(e.kind, e.tokens_before, e.tokens_after) for e in result.events
            if e.call == reread.call and e.kind != "invalid"]  # (the test strategy drops a call, keeps its result)
    assert [a[0] for a in acts] == ["prune", "prune", "drop"]
    (_, before, _), (_, after_insert, pruned), (_, dropped_from, _) = acts
    assert after_insert == reread.prompt_tokens + reread.reread_tokens  # the context with the inserted messages
    assert dropped_from == pruned > strategy.limit


def test_a_fact_recovered_by_a_reread_is_its_own_class():
    t = trace(end_at_edit=True)
    rows = run(PruneOld(), t, observers=(needle_observer(t),)).probes
    opened = run(PruneOld(), t, open_loop=True, observers=(needle_observer(t),)).probes
    # the session ends at the edit: the re-read result is still sent; without it the fact was pruned
    assert [r["cls"] for r in rows if r["moment"] == "end"] == [REREAD]
    assert [r["cls"] for r in opened if r["moment"] == "end"] != [VERBATIM]
    assert not any(r["retained"] for r in rows if r["moment"] == "end")


def test_run_task_keeps_the_open_loop_figures():
    t = trace()
    spec = strategies.parse_spec("tests.bench.test_rereads:PruneOld")
    counter = TokenCounter()
    closed = task_row(run_task(t, counter, spec, RunConfig(model="claude-sonnet-4-5")))
    opened = task_row(run_task(t, counter, spec, RunConfig(model="claude-sonnet-4-5", open_loop=True)))
    assert closed["rereads"] == 1 and opened["rereads"] == 0
    assert closed["cost_open_loop"] == opened["cost"] == opened["cost_open_loop"] < closed["cost"]
    assert closed["input_tokens_open_loop"] == opened["input_tokens"] < closed["input_tokens"]


def _bench_traces(seeds: range):
    from traces.scenarios import DEFAULT_BENCH
    from traces.synthetic import generate

    return [generate(s, seed=seed) for s in DEFAULT_BENCH for seed in seeds]


def test_none_never_rereads_on_the_bench_traces_seed_0():
    for t in _bench_traces(range(1)):
        result = replay(t, strategies.build("none"), ReplayConfig(MODEL), counter=TokenCounter())
        assert not any(c.kind == "reread" for c in result.calls), t.id


@pytest.mark.slow
def test_none_never_rereads_on_every_bench_trace():
    for t in _bench_traces(range(3)):  # make bench: --seeds 3
        result = replay(t, strategies.build("none"), ReplayConfig(MODEL), counter=TokenCounter())
        assert not any(c.kind == "reread" for c in result.calls), t.id


def test_costs_only_bills_as_the_open_loop_and_skips_the_proxy_and_the_validity_check():
    """The open-loop twin (bench.run.runner._open_loop) reads only the bills: with ``costs_only`` every call is
    billed as before, and the re-read proxy and the validity check are not run (their columns 0, no event)."""
    from dataclasses import astuple

    orphan = trace().messages[:3] + (Message("user", (ToolResult("nobody", "stray"),)),) + trace().messages[3:]
    t = Trace("rereads", orphan, needles=trace().needles)
    full = replay(t, PruneOld(), ReplayConfig(MODEL, open_loop=True), counter=TokenCounter())
    cheap = replay(t, PruneOld(), ReplayConfig(MODEL, open_loop=True, costs_only=True), counter=TokenCounter())
    assert sum(c.unseen_refs for c in full.calls) == 1 and sum(c.invalid for c in full.calls) > 0
    assert any(e.kind == "invalid" for e in full.events)
    assert [astuple(c)[:16] for c in cheap.calls] == [astuple(c)[:16] for c in full.calls]  # the bills
    assert sum(c.unseen_refs for c in cheap.calls) == 0 and sum(c.invalid for c in cheap.calls) == 0
    assert not any(e.kind == "invalid" for e in cheap.events)
