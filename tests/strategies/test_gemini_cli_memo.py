"""Gemini CLI's per-call memos give what a fresh computation gives: the masking counts kept across a
history that is not the last one grown (a compression) and the per-message sizes of the split."""

from __future__ import annotations

import gc
from dataclasses import replace

from bench.context.messages import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from strategies.gemini_cli import masking
from strategies.gemini_cli.compression import GeminiCli, _chars, sized, split_point
from traces.model import Message, ToolResult, ToolUse, Usage

SONNET = replace(profile("claude-sonnet-4-5"), context_window=1_048_576)
OUT = 48_000  # 12,005 of the CLI's tokens as a read_file output


def rounds(n: int, prefix: str = "c") -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        out += [Message("assistant", (ToolUse(f"{prefix}{i}", "read_file", {"path": f"f{i}"}),)),
                Message("user", (ToolResult(f"{prefix}{i}", "y" * OUT),))]
    return out


def history(n: int) -> list[Message]:
    msgs = [Message.text_message("system", "You are Gemini CLI."), Message.text_message("user", "read everything")]
    return msgs + rounds(n) + [Message("assistant", (ToolUse("last", "read_file", {"path": "g"}),)),
                   Message("user", (ToolResult("last", "ok"),))]


def fresh(counter) -> Session:
    s = Session(SONNET, Meter(counter, "truth"), None)
    s.last_usage = Usage(1_000, 10)
    return s


def test_mask_counts_kept_across_a_rebuilt_history_follow_a_renamed_call(counter, monkeypatch):
    """Seven rounds: c6..c3 protected (48,020), c2..c0 prunable (36,015 ≥ 30,000): masked. The same
    outputs after a rebuild whose c0 call is now an exempt tool: 24,010 prunable, nothing masked. A
    count kept from before the rebuild under the old name would mask again."""
    meter = Meter(counter, "truth")
    msgs = history(7)
    s = fresh(counter)
    assert GeminiCli().mask(meter.context(msgs), s) is not None
    renamed = list(msgs)
    renamed[2] = Message("assistant", (ToolUse("c0", "ask_user", {"path": "f0"}),))
    assert GeminiCli().mask(meter.context(renamed), fresh(counter)) is None
    assert GeminiCli().mask(meter.context(renamed), s) is None


def test_mask_counts_of_outputs_a_rebuilt_history_still_holds_are_not_taken_again(counter, monkeypatch):
    """A compression replaces the head: the outputs it kept are not JSON-dumped again (the re-compression
    loop of a long tool chain rebuilt the whole history's counts every call), and the answer is a fresh one's."""
    meter = Meter(counter, "truth")
    msgs = history(5)
    s = fresh(counter)
    taken: list[str] = []
    counted = masking.response_tokens
    monkeypatch.setattr(masking, "response_tokens", lambda name, content: taken.append(name) or counted(name, content))
    assert GeminiCli().mask(meter.context(msgs), s) is None  # 60,025 in all, 12,005 prunable
    assert len(taken) == 5
    compressed = [msgs[0], Message.text_message("user", "<state_snapshot>x</state_snapshot>"),
                  Message.text_message("assistant", "Got it."), *msgs[6:]]  # c2, c3, c4 kept
    taken.clear()
    assert GeminiCli().mask(meter.context(compressed), s) is None
    assert taken == []
    grown = [*compressed[:-2], *rounds(5, "d"), *compressed[-2:]]  # c2..c4, then d0..d4: masks
    ours, theirs = GeminiCli().mask(meter.context(grown), s), GeminiCli().mask(meter.context(grown), fresh(counter))
    assert ours is not None and ours.context.messages == theirs.context.messages and ours.events == theirs.events


def test_split_sizes_memo_follows_each_message_and_equals_the_direct_split():
    memo: dict = {}
    size = sized(memo, _chars)
    msgs = tuple(history(6))
    assert split_point(msgs, 0.7, size) == split_point(msgs, 0.7)
    assert len(memo) == len(msgs)
    for n in range(50):  # a message that dies leaves no size behind for one born at its address
        m = Message.text_message("user", "z" * n)
        assert size(m) == _chars(m)
        del m
        gc.collect()
    assert len(memo) == len(msgs)
