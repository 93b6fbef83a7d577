"""Token counts: computed once per message and shared; estimators as the real agents define them."""

from __future__ import annotations

import random

import pytest

import strategies
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.tokens.counter import MESSAGE_OVERHEAD, TokenCounter
from traces.model import Message, Text, ToolResult, ToolUse, Trace


def small_trace(n: int = 12) -> Trace:
    msgs = [Message.text_message("system", "sys " * 50), Message.text_message("user", "do the task")]
    for i in range(n):
        msgs.append(Message("assistant", (ToolUse(f"c{i}", "bash", {"command": f"ls {i}"}),)))
        msgs.append(Message("user", (ToolResult(f"c{i}", f"out {i} " * 40),)))
    msgs.append(Message.text_message("assistant", "finished"))
    return Trace("small", tuple(msgs))


def test_truth_counts_each_message_once_across_strategies():
    trace = small_trace()
    counter = TokenCounter()
    config = ReplayConfig(profile("claude-sonnet-4-5"))
    for name in ("none", "none", "opencode"):
        replay(trace, strategies.build(name), config, counter=counter)
    truth_calls = len(counter._truth)
    # every trace message counted exactly once for truth, once per estimator used (chars/4 here);
    # messages built by strategies (markers, summaries) add their own, also once each.
    assert truth_calls >= len(trace.messages)
    assert counter.calls == truth_calls + len(counter._est)
    before = counter.calls
    replay(trace, strategies.build("none"), config, counter=counter)
    assert counter.calls == before  # a fourth replay counts nothing anew


def test_prime_batches_and_matches_single_counts():
    trace = small_trace(3)
    batched, single = TokenCounter(), TokenCounter()
    batched.prime(trace.messages)
    assert [batched.truth(m) for m in trace.messages] == [single.truth(m) for m in trace.messages]
    assert batched.calls == len(trace.messages)


def test_estimators_follow_the_agents_rules():
    counter = TokenCounter()
    m = Message("user", (Text("é" * 10),))  # 10 chars, 20 UTF-8 bytes
    assert counter.estimate(m, "chars/4") == round(10 / 4)  # OpenCode: round(chars/4)
    assert counter.estimate(m, "bytes/4") == 5  # Codex: ceil(bytes/4)
    assert counter.truth(m) == counter.text("é" * 10) + MESSAGE_OVERHEAD


def test_special_tokens_in_text_do_not_crash():
    counter = TokenCounter()
    assert counter.truth(Message.text_message("user", "a <|endoftext|> b")) > MESSAGE_OVERHEAD


ODD = ["word", "Line", "  indented", "\n", "\n\n", "\t", "/", "!", "...", "'s", "é", "日本", "\r\n", "_", " \n",
       "\u00a0", "\u2028", "12345", "x/y", "→", "  ", "//", "\n/", "a\n", "\n "]


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_a_long_text_counted_by_its_parts_has_the_count_of_the_whole(encoding):
    # safe_split cuts only where the encoding's own pre-tokenizer always cuts, so the parts' counts
    # add up to the whole text's, on texts built to sit on every boundary the rule distinguishes
    from bench.tokens.counter import PART_CHARS, Tokenizer, safe_split

    whole = Tokenizer(encoding)
    rng = random.Random(11)
    counter = TokenCounter(Tokenizer(encoding))
    for _ in range(300):
        text = "".join(rng.choice(ODD) for _ in range(rng.randint(PART_CHARS // 3, 2 * PART_CHARS)))
        parts = safe_split(text)
        assert "".join(parts) == text
        assert sum(map(whole.count, parts)) == whole.count(text)
        assert counter.text(text) == whole.count(text)
    assert len(counter._parts) > 0  # the long ones went by parts


def test_parts_are_shared_between_texts_and_short_texts_are_counted_whole():
    from bench.tokens.counter import PART_CHARS, Tokenizer

    calls: list[str] = []

    class Spy(Tokenizer):
        def count(self, text: str) -> int:
            calls.append(text)
            return super().count(text)

    lines = [f"line {i}: some output of a command" for i in range(200)]
    head, tail = "\n".join(lines[:150]), "\n".join(lines[150:])
    counter = TokenCounter(Tokenizer())
    counter.tokenizer.count = Spy().count  # type: ignore[method-assign]
    cut = head + "\n[... 1,000 characters omitted ...]\n" + tail
    assert len(cut) >= PART_CHARS
    assert counter.text(cut) == Tokenizer().count(cut)
    first = len(calls)
    other = "\n".join(lines[:120]) + "\n[... 2,000 characters omitted ...]\n" + tail
    assert counter.text(other) == Tokenizer().count(other)
    assert len(calls) - first <= 2  # only the new marker line is tokenized: the rest are known parts
    assert counter.text("short") == 1 and calls[-1] == "short"


def test_a_message_counted_on_demand_is_remembered_while_it_lives_and_forgotten_with_it() -> None:
    import gc

    from bench.replay.validity import RequestCheck

    counter, check = TokenCounter(), RequestCheck()
    kept = Message.text_message("user", "a trace's message " * 5)
    counter.prime([kept])
    built = Message.text_message("user", "a cut the replay made " * 5)
    n = counter.truth(built)
    counter.estimate(built, "chars/4")
    check.shape(built)
    shaped = id(built)
    calls = counter.calls
    assert counter.truth(built) == n and counter.calls == calls  # remembered while it lives
    copy = counter.messages_only()
    assert copy.truth(built) == n and copy.calls == 0
    del built
    gc.collect()
    assert len(counter._truth) == 1 and not counter._est and shaped not in check._shapes and len(copy._truth) == 1
    assert counter.truth(kept) and counter.calls == calls  # the primed message stays
    again = Message.text_message("user", "a cut the replay made " * 5)
    assert counter.truth(again) == n  # a new object is counted (its text once: by text)
    adopted = Message.text_message("user", "counted elsewhere")
    counter.adopt([adopted], [7])
    assert counter.truth(adopted) == 7
    del adopted, again
    gc.collect()
    assert len(counter._truth) == 1  # what a strategy adopts goes with it too


def test_a_copy_that_shares_a_counted_messages_blocks_takes_its_count_even_the_providers():
    # cline:sdk marks the messages it keeps by copying them with a flag in meta: the same content
    # goes to the provider, so the copy costs what the original costs, also when the original's
    # count is the provider's (adopted), not the tokenizer's.
    from dataclasses import replace

    trace = small_trace()
    counter = TokenCounter()
    tokenizer_counts = counter.counts(trace.messages)
    counter.adopt(trace.messages, [2 * n for n in tokenizer_counts])  # the provider counts otherwise
    for m, n in zip(trace.messages, tokenizer_counts, strict=True):
        assert counter.truth(replace(m, meta={**m.meta, "preserved": True})) == 2 * n
        twin = Message(m.role, tuple(list(m.blocks)), m.meta)  # equal blocks, another tuple: counted afresh
        assert twin.blocks is not m.blocks
        assert counter.truth(twin) == n
    fresh = Message.text_message("user", "built during a replay")
    counter.adopt([fresh], [999])
    copy = replace(fresh, meta={"x": 1})
    assert counter.truth(copy) == 999
    del fresh  # the original is gone: a new copy of its blocks is counted by the tokenizer
    other = replace(copy, meta={"y": 1})
    assert counter.truth(other) == counter.text("built during a replay") + MESSAGE_OVERHEAD


def test_the_tokenizer_stays_pure_python_and_the_counter_re_exports_it(monkeypatch) -> None:
    """The counter may be compiled (bench/cli/native.py), the tokenizer never: tests monkeypatch its
    methods and subclass it, which a compiled class refuses. The old import path keeps working."""
    import bench.tokens.counter as counter
    import bench.tokens.tokenizer as tokenizer
    from bench.cli.native import MODULES

    assert "bench/tokens/tokenizer.py" not in MODULES and tokenizer.__file__.endswith(".py")
    for name in ("Tokenizer", "TokenizerDataError", "bundled_o200k", "o200k_spec", "verified_ranks", "O200K_FILE"):
        assert getattr(counter, name) is getattr(tokenizer, name)
    calls: list[int] = []
    original = tokenizer.Tokenizer.count

    def spied(self: tokenizer.Tokenizer, text: str) -> int:
        calls.append(len(text))
        return original(self, text)

    monkeypatch.setattr(tokenizer.Tokenizer, "count", spied)  # seen by a compiled counter too
    assert TokenCounter().text("a text the counter has not seen") > 0 and calls == [31]
