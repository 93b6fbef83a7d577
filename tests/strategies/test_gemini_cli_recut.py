"""Gemini CLI's failed-compression state, computed by difference: the same messages and counts as
cutting every old output anew and tokenizing it whole, over many calls, both encodings, odd texts."""

from __future__ import annotations

import random

import pytest

from bench.context.messages import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from bench.summarizers import Summary, SummaryRequest
from bench.tokens.counter import TokenCounter, Tokenizer
from strategies._tools import last_assistant_index
from strategies.gemini_cli.compression import GeminiCli
from strategies.gemini_cli.cuts import Cuts
from strategies.gemini_cli.outputs import pointer_lead, truncated_output
from tests.strategies.test_gemini_cli import old_truncate
from traces.model import Message, Text, ToolResult, ToolUse, Usage

SONNET = profile("claude-sonnet-4-5")
ODD = ["word", "Line", "  indented", "\n", "\n\n", "\t", "/", "!", "...", "'s", "é", "日本", "\r\n", "_", " \n",
       "\u00a0", "\u2028", "12345", "x/y", "→", "😀", "Output too large", ".txt\n", "compression_7_"]
IDS = ["c1", "toolu_01ABC", "call_9", "123", "", "x y", "é_日", "a\nb", "_", "--", "'s", "9z", "/p", "😀"]


class Refuse:
    """A summarizer whose snapshot is longer than anything: every compression is refused."""

    name = "refuse"

    def summarize(self, request: SummaryRequest) -> Summary:
        return Summary("long " * 50_000, 0, 0, "refuse")


def odd_text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(ODD) for _ in range(n))


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_a_pointer_is_counted_as_its_three_parts_and_so_is_every_start_of_it(encoding):
    # "…/compression" | "_{call}" | "_{id}.txt": no pre-token spans either place, whatever the id
    tok = Tokenizer(encoding)
    counter = TokenCounter(tok)
    rng = random.Random(3)
    for limit in (40_000, 2_000, 777):
        cuts = Cuts(counter, limit, {})
        for _ in range(40):
            call = rng.choice([0, 7, 10, 999, 1000, 12345, rng.randrange(10**7)])
            name = rng.choice(IDS) if rng.random() < 0.6 else odd_text(rng, rng.randint(0, 6))
            mark = (f"_{call}", f"_{name}.txt")
            pointer = pointer_lead(limit // 5, limit - limit // 5) + f"tool-outputs/compression_{call}_{name}.txt"
            assert cuts.prefix + mark[0] + mark[1] == pointer
            assert cuts.prefix_tokens + tok.count(mark[0]) + tok.count(mark[1]) == tok.count(pointer)
            for n in range(1, len(pointer) + 1):
                assert cuts.pointer_start(mark, n) == tok.count(pointer[:n] + "\n\n"), (pointer, n)


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_an_output_cut_again_and_again_has_the_text_and_count_of_a_fresh_cut(encoding):
    # each call cuts the previous call's cut: the head fills with old pointer lines, the tail stays
    tok = Tokenizer(encoding)
    rng = random.Random(11)
    kinds = [lambda n: odd_text(rng, n), lambda n: "x" * 4 * n, lambda n: "  y\n" * n]  # the last two: no safe place
    for limit in (2_000, 600, 300, *rng.sample(range(560, 1_500), 8)):
        counter = TokenCounter(tok)
        cuts = Cuts(counter, limit, {})
        for name in ("c1", "toolu_x", "a\nb", "😀", "call_" + "9" * rng.randint(1, 30)):
            text = rng.choice(kinds)(rng.randint(limit // 3, limit))
            for call in range(1, 60):
                where = f"tool-outputs/compression_{call}_{name}.txt"
                got, (closed, end) = cuts.cut(text, name, call)
                assert got == truncated_output(text, where, limit)
                assert closed + counter.text(end) == tok.count(got), (limit, name, call)
                if rng.random() < 0.1:  # sometimes a text that is not our cut: counted from scratch
                    got = got[:-1] + "z"
                text = got


def trace(seed: int, rounds: int) -> list[Message]:
    """Tool rounds with odd outputs of every size, some results beside a text block or a second
    result, odd tool ids, a user turn now and then."""
    rng = random.Random(seed)
    msgs = [Message.text_message("system", "agent"), Message.text_message("user", "task")]
    for i in range(rounds):
        ids = [f"{rng.choice(IDS)}{i}"] + ([f"{rng.choice(IDS)}{i}b"] if rng.random() < 0.2 else [])
        msgs.append(Message("assistant", tuple(ToolUse(x, "read", {"path": f"f{i}"}) for x in ids)))
        blocks: list = [ToolResult(x, odd_text(rng, rng.choice([30, 300, 1_500, 4_000]))) for x in ids]
        if rng.random() < 0.1:
            blocks.insert(rng.randrange(len(blocks) + 1), Text(odd_text(rng, 40)))
        msgs.append(Message("user", tuple(blocks)))
        if rng.random() < 0.1:
            msgs.append(Message.text_message("assistant", "ok"))
            msgs.append(Message.text_message("user", odd_text(rng, 30)))
    msgs.append(Message.text_message("assistant", "done"))
    return msgs


@pytest.mark.parametrize(("seed", "encoding", "budget"),
                         [(0, "cl100k_base", 3_000), (1, "o200k_base", 3_000), (2, "cl100k_base", 40_000)])
def test_the_failed_state_over_many_calls_matches_the_original_walk_and_whole_counts(seed, encoding, budget):
    # refused compressions now and then (the result is not taken: the next call cannot build on
    # it), a successful one once (the history changes at its start), the rest truncation only;
    # with the larger budget nothing is cut for a while
    s = GeminiCli(threshold=0.01, function_response_budget=budget, truncate_chars=2_000)
    counter, fresh = TokenCounter(Tokenizer(encoding)), TokenCounter(Tokenizer(encoding))
    meter = Meter(counter, s.estimator)
    session = Session(SONNET, meter, Refuse())
    ctx = meter.context(())
    rng = random.Random(seed)
    fired = refused = 0
    for m in trace(seed, 150):
        if m.role == "assistant" and len(ctx) > 2:
            session.call_index += 1
            session.state["gemini_failed"] = True
            step = last_assistant_index(ctx.messages) + 1
            head, history, pending = ctx.messages[:1], ctx.messages[1:step], ctx.messages[step:]
            expected = old_truncate(s, history, session.call_index)
            total = sum(fresh.truth(x) for x in expected)
            original = ctx.truth if rng.random() < 0.9 else total
            session.last_usage = Usage(original, 10)
            outcome = s.before_call(ctx, session)
            if expected == history or total >= original:
                assert outcome is None
                refused += expected != history
            else:
                fired += 1
                assert outcome.context.messages == (*head, *expected, *pending)
                for x in outcome.context.messages:
                    assert counter.truth(x) == fresh.truth(x)
                ctx = outcome.context
            if session.call_index == 60:  # a compression that succeeds: the history changes at its start
                session.state["gemini_failed"] = False
                session.summarizer = _Short()
                session.last_usage = Usage(ctx.truth, 10)
                out = s.before_call(ctx, session)
                assert out is not None and out.events[0].kind == "summarize"
                ctx = out.context
                session.summarizer = Refuse()
        ctx = ctx.append(m)
    assert fired > (60 if budget > 10_000 else 100) and refused > 3


class _Short:
    name = "short"

    def summarize(self, request: SummaryRequest) -> Summary:
        return Summary("<state_snapshot>s</state_snapshot>", 0, 0, "short")


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_a_recut_reuses_its_parts_only_when_they_still_hold(encoding):
    # what a re-cut takes from the previous cut (the id's part of the pointer, the note, the last
    # part) must be made anew when the id differs, the call is no number, or the omitted count
    # moves (the call's number gains a digit: 9 → 10, 99 → 100); calls repeat, go back and jump
    tok = Tokenizer(encoding)
    rng = random.Random(5)
    # the last two are one line: their tail is one part, which a re-cut takes from the previous one
    kinds = [lambda n: odd_text(rng, n), lambda n: "x" * n, lambda n: "{\"k\": 1, " * (n // 9 + 1)]
    for limit in (2_000, 700, *rng.sample(range(560, 1_500), 4)):
        counter = TokenCounter(tok)
        cuts = Cuts(counter, limit, {})
        for _ in range(4):
            name = rng.choice(IDS)
            text = rng.choice(kinds)(rng.randint(limit + 1, 3 * limit))  # ``cut`` takes outputs longer than the limit
            call = rng.choice([1, 8, 97, 995])
            for _ in range(40):
                r = rng.random()
                if r < 0.1:
                    name = rng.choice(IDS)  # the same text under another id
                elif r < 0.15:
                    call = -call - 1  # no call number: the pointer is counted whole
                elif r < 0.2:
                    call = abs(call) - rng.randint(0, 3)
                else:
                    call = abs(call) + rng.choice([0, 1, 1, 1, 2, 7])
                got, (closed, end) = cuts.cut(text, name, call)
                assert got == truncated_output(text, f"tool-outputs/compression_{call}_{name}.txt", limit)
                assert closed + counter.text(end) == tok.count(got), (limit, name, call)
                text = got
