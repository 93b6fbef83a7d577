"""Amp: threshold compaction and Handoff (strategies/amp.py)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

import strategies
from bench.context.messages import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.summarizers.extractive import ExtractiveSummarizer
from strategies.amp import Amp
from traces.model import Message, ToolResult, ToolUse, Trace, orphans


def session(counter) -> Session:
    return Session(profile("claude-sonnet-4-5"), Meter(counter, "truth"), ExtractiveSummarizer())


def read(i: int, path: str, output: str, name: str = "read_file", **extra) -> list[Message]:
    return [Message("assistant", (ToolUse(f"t{i}", name, {"path": path, **extra}),)),
            Message("user", (ToolResult(f"t{i}", output),))]


def build(counter, strat: Amp, sess: Session, msgs: list[Message]):
    """Append messages one by one, calling on_tool_result as the replay does."""
    meter, ctx = Meter(counter, strat.estimator), None
    out: list[Message] = []
    for m in msgs:
        out.append(m)
        ctx = meter.context(out)
        if m.tool_results:
            strat.on_tool_result(ctx, sess)
    return ctx


def test_defaults():
    a = Amp()
    assert (a.threshold, a.mode, a.handoff_max_files, a.handoff_token_budget, a.max_file_bytes, a.bytes_per_token) == (
        100_000, "compact", 10, 25_000, 32_768, 3.5)
    assert strategies.build("amp:handoff").mode == "handoff"


def test_compaction_summary_replaces_everything_before_the_current_step(counter):
    strat, sess = Amp(threshold=500), session(counter)
    msgs = [Message.text_message("system", "sys"), Message.text_message("user", "Task: refactor parser")]
    for i in range(4):
        msgs += read(i, f"/src/m{i}.py", "code " * 300)
    ctx = build(counter, strat, sess, msgs)
    assert strat.before_call(ctx.replace(ctx.messages[:2]), sess) is None  # under the threshold
    out = strat.before_call(ctx, sess)
    system, summary, *tail = out.context.messages
    assert system is msgs[0] and summary.meta["summary"] and "Task: refactor parser" in summary.text
    assert tail == msgs[-2:]  # the in-flight call and its result stay
    assert out.events[0].kind == "summarize" and orphans(out.context.messages) == (set(), set())


def test_handoff_attaches_at_most_ten_files_newest_first(counter):
    strat, sess = Amp(mode="handoff", threshold=0), session(counter)
    msgs = [Message.text_message("system", "sys"), Message.text_message("user", "Task: port module")]
    for i in range(12):
        msgs += read(i, f"/f{i}.py", f"content of file {i}\n" * 50)
    msgs.append(Message.text_message("user", "Now implement this for teams as well"))
    out = strat.before_call(build(counter, strat, sess, msgs), sess)
    system, handoff = out.context.messages
    attached = [line for line in handoff.text.splitlines() if line.startswith("<file path=")]
    assert attached == [f'<file path="/f{i}.py">' for i in range(11, 1, -1)]
    assert "Goal for this thread:\nNow implement this for teams as well" in handoff.text
    (ev,) = out.events
    assert ev.kind == "handoff" and "approximate" in ev.detail and "10 files" in ev.detail


def test_handoff_file_budget_is_25k_tokens_at_3_5_bytes_per_token():
    files = {f"/big{i}.txt": "x" * 10_240 for i in range(10)}  # 2,926 tokens each
    chosen, used = Amp().attachments(files)
    assert len(chosen) == 8 and used == 8 * math.ceil(10_240 / 3.5) == 23_408
    assert [p for p, _ in chosen] == [f"/big{i}.txt" for i in range(9, 1, -1)]


def test_handoff_caps_each_file_at_32_kb_and_skips_files_that_do_not_fit():
    files = {"/small.txt": "s" * 1_000, "/huge.log": "h" * 100_000, "/mid.txt": "m" * 60_000}
    chosen, used = Amp().attachments(files)
    assert [(p, len(c)) for p, c in chosen] == [("/mid.txt", 32_768), ("/huge.log", 32_768), ("/small.txt", 1_000)]
    # two capped files are 2 × 9,363 = 18,726 tokens: both fit, then the small one (286)
    assert used == 2 * math.ceil(32_768 / 3.5) + math.ceil(1_000 / 3.5) == 19_012
    tight = replace(Amp(), handoff_token_budget=10_000)
    assert [p for p, _ in tight.attachments(files)[0]] == ["/mid.txt", "/small.txt"]


def test_file_contents_are_the_latest_read_or_write(counter):
    strat, sess = Amp(mode="handoff", threshold=0), session(counter)
    msgs = [Message.text_message("system", "sys"), Message.text_message("user", "Task")]
    msgs += read(1, "/a.py", "old text")
    msgs += read(2, "/a.py", "File written", name="write_file", content="new text")
    msgs += read(3, "/b.py", "boom")
    msgs[-1] = Message("user", (ToolResult("t3", "no such file", is_error=True),))
    build(counter, strat, sess, msgs)
    assert sess.state["files"] == {"/a.py": "new text"}


@pytest.mark.parametrize("name", ["amp@threshold=3000", "amp:handoff@threshold=3000"])
def test_replays_end_to_end_without_orphans(counter, name):
    strat = strategies.build(name)
    msgs = [Message.text_message("system", "You are Amp."), Message.text_message("user", "Task: fix the build")]
    for i in range(10):
        msgs += read(i, f"/src/f{i % 4}.py", "line of code\n" * 120)
    msgs.append(Message.text_message("assistant", "Build fixed."))
    sent = []

    class Recording:
        name, estimator = strat.name, strat.estimator

        def __getattr__(self, hook):
            return getattr(strat, hook)

        def project(self, ctx, sess):
            sent.append(ctx.messages)
            return ctx

    tiny = replace(profile("claude-sonnet-4-5"), context_window=50_000, max_output=4_000)
    result = replay(Trace("amp", tuple(msgs)), Recording(), ReplayConfig(tiny), counter=counter)
    kind = "handoff" if "handoff" in name else "summarize"
    assert kind in {e.kind for e in result.events} and result.failed is None
    assert all(orphans(m) == (set(), set()) and m[0] is msgs[0] for m in sent)
