"""bench.context.messages: totals moved by the difference equal a recount, and derived tuples are remembered
with how far they hold their parent's objects (what ``bench.tokens.prefix`` then skips)."""

from __future__ import annotations

import random

from bench.context.messages import Meter
from bench.tokens import prefix
from bench.tokens.counter import TokenCounter
from bench.tokens.prefix import first_difference, grew_from, shared_head
from traces.model import Message


def _messages(rng: random.Random, n: int) -> list[Message]:
    return [Message.text_message(rng.choice(("user", "assistant")), "word " * rng.randint(1, 40)) for _ in range(n)]


def test_patch_and_replace_keep_the_totals_a_recount_gives(monkeypatch) -> None:
    monkeypatch.setattr(prefix, "LINEAGE_MIN", 1)  # short contexts: remember every derivation
    rng = random.Random(3)
    meter = Meter(TokenCounter(), "chars/4", overhead=7)
    pool = _messages(rng, 30)
    for _ in range(200):
        ctx = meter.context(rng.sample(pool, rng.randint(0, 12)))
        changes = {i: rng.choice(pool) for i in rng.sample(range(len(ctx)), rng.randint(0, len(ctx)))}
        added = tuple(rng.sample(pool, rng.randint(0, 3)))
        patched = ctx.patch(changes, added)
        expected = [*ctx.messages, *added]
        for i, m in changes.items():
            expected[i] = m
        fresh = meter.context(expected)
        assert patched.messages == fresh.messages and all(map(lambda a, b: a is b, patched.messages, expected))
        assert (patched.estimate, patched.truth) == (fresh.estimate, fresh.truth)
        replaced = ctx.replace(expected)
        assert (replaced.estimate, replaced.truth) == (fresh.estimate, fresh.truth)
        for derived in (patched, replaced):  # what is known to be shared is really the same objects
            k = shared_head(ctx.messages, derived.messages)
            assert all(a is b for a, b in zip(ctx.messages[:k], derived.messages[:k], strict=True))


def test_a_patch_at_one_position_is_known_up_to_it_and_an_append_entirely(monkeypatch) -> None:
    monkeypatch.setattr(prefix, "LINEAGE_MIN", 1)
    rng = random.Random(4)
    meter = Meter(TokenCounter())
    ctx = meter.context(_messages(rng, 50))
    masked = Message.text_message("user", "[masked]")
    view = ctx.patch({30: masked, 41: masked})
    assert shared_head(ctx.messages, view.messages) == 30
    assert first_difference(ctx.messages, view.messages) == 30
    grown = view.append(*_messages(rng, 2))
    assert grew_from(grown.messages, view.messages)
    assert shared_head(ctx.messages, grown.messages) == 30  # through two derivations
    assert view.patch({}) is view and grew_from(view.patch({}, (masked,)).messages, view.messages)
    dropped = ctx.replace((*ctx.messages[:10], *ctx.messages[20:]))
    assert shared_head(ctx.messages, dropped.messages) == 10


def test_a_short_shared_head_is_not_remembered() -> None:
    # Below LINEAGE_MIN a comparison costs less than the bookkeeping: nothing is remembered.
    rng = random.Random(5)
    ctx = Meter(TokenCounter()).context(_messages(rng, prefix.LINEAGE_MIN - 1))
    assert shared_head(ctx.messages, ctx.append(*_messages(rng, 1)).messages) == 0
    longer = ctx.append(*_messages(rng, 1))
    assert shared_head(longer.messages, longer.append(*_messages(rng, 1)).messages) == len(longer)
