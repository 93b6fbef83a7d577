"""Work shared by every replay of a trace: counts per distinct text, batched counting in bounded
batches, derived needles and normalized texts per trace, tool blocks per message."""

from __future__ import annotations

import bench.scoring.derived_probes
import bench.tokens.tokenizer
import strategies
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.scoring.probes import needle_observer
from bench.tokens.counter import MESSAGE_OVERHEAD, TokenCounter, Tokenizer
from traces.model import Message, ToolResult, ToolUse, Trace


def test_a_text_is_tokenized_once_however_many_messages_carry_it():
    counter = TokenCounter()
    a, b = Message.text_message("user", "[Old tool result content cleared]"), \
        Message.text_message("user", "[Old tool result content cleared]")
    assert counter.truth(a) == counter.truth(b) == counter.text(a.text) + MESSAGE_OVERHEAD
    assert counter.tokenized == 1
    assert counter.calls == 2  # two messages counted, one tokenizer call


def test_batched_counting_in_small_batches_gives_the_single_counts(monkeypatch):
    texts = [f"line {i} " * (i % 7 + 1) for i in range(50)]
    monkeypatch.setattr(bench.tokens.tokenizer, "BATCH_CHARS", 40)  # many batches, some texts alone in theirs
    tokenizer = Tokenizer()
    assert tokenizer.count_many(texts) == [tokenizer.count(t) for t in texts]
    assert tokenizer.count_many([]) == []


def test_derived_needles_are_derived_once_per_trace(monkeypatch):
    calls = []
    real = bench.scoring.derived_probes.derive_needles
    monkeypatch.setattr(bench.scoring.derived_probes, "derive_needles", lambda t: calls.append(t) or real(t))
    trace = Trace("real", (Message.text_message("system", "agent"),
                           Message.text_message("user", "Fix src/app.py, keep Python 3.9 support."),
                           Message("assistant", (ToolUse("e", "Edit", {"file_path": "/r/src/app.py",
                                                                       "old_string": "a", "new_string": "b"}),)),
                           Message("user", (ToolResult("e", "ok"),)), Message.text_message("assistant", "done")))
    config, counter = ReplayConfig(profile("claude-sonnet-4-5")), TokenCounter()
    rows = [replay(trace, strategies.build(n), config, counter=counter, observers=(needle_observer(trace),)).probes
            for n in ("none", "opencode", "swe-agent")]
    assert len(calls) == 1
    assert rows[0] and rows[0] == [{**r, "strategy": "none"} for r in rows[1]] == [
        {**r, "strategy": "none"} for r in rows[2]]  # same needles, same classes at the end


def test_tool_blocks_are_computed_once_per_message():
    m = Message("assistant", (ToolUse("a", "bash", {}), ToolUse("b", "bash", {})))
    assert m.tool_uses is m.tool_uses and [u.id for u in m.tool_uses] == ["a", "b"]
    assert m == Message("assistant", m.blocks) and m.tool_results == ()
