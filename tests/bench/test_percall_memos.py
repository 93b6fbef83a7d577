"""The cache split's running sums (issue 28) answer exactly what sums added up afresh do, whatever
happens between two calls: heads swapped, messages rewritten or dropped, a summarizer stream forked."""

from __future__ import annotations

import random
from functools import partial

import pytest

from bench.tokens.counter import TokenCounter
from traces.model import Message


class FreshCache:
    """The prompt cache's rules computed afresh each request: every entry keeps its own counts, every
    common prefix is found by comparing values from the start, every token sum is added up anew."""

    def __init__(self, model, ttl_seconds: float = 300.0) -> None:
        self.model, self.ttl = model, ttl_seconds
        self.entries: list[list] = []  # [messages, counts, written_at, stream]

    def request(self, msgs, count, now, stream):
        from bench.cost.pricing import CacheSplit

        counts = [count(m) for m in msgs]
        alive = [e for e in self.entries if now - e[2] <= self.ttl]
        best, best_entry = 0, None
        for e in alive:
            n = next((i for i, (a, b) in enumerate(zip(e[0], msgs, strict=False)) if a != b), min(len(e[0]), len(msgs)))
            if n and sum(e[1][:n]) > best:
                best, best_entry = sum(e[1][:n]), e
        if best < self.model.min_cache_prefix:
            best, best_entry = 0, None
        previous = next((e for e in reversed(alive) if e[3] == stream), None)
        prefix_break = previous is not None and best < sum(previous[1])
        total = sum(counts)
        cacheable = total >= self.model.min_cache_prefix
        if best_entry is not None:
            best_entry[2] = now
        if cacheable:
            self.entries = [*(e for e in alive if e is not previous), [msgs, counts, now, stream]][-4:]
        else:
            self.entries = alive
        if cacheable and self.model.bills_cache_writes:
            return CacheSplit(best, total - best, 0, prefix_break)
        return CacheSplit(best, 0, total - best, prefix_break)


@pytest.mark.parametrize("aligned_min", [64, 1])
def test_cache_splits_from_running_sums_equal_fresh_sums_when_the_head_and_old_messages_change_mid_run(
        monkeypatch, aligned_min: int):
    # The running sums are extended, cut back and shared between entries; a prompt whose head (the
    # overhead message) is swapped, whose old messages are rewritten or dropped, or that a summarizer
    # stream forks from, must split exactly as the sums added up afresh say.
    import bench.cost.cache
    from bench.cost.pricing import PromptCache, profile
    from bench.tokens.prefix import extend

    monkeypatch.setattr(bench.cost.cache, "ALIGNED_MIN", aligned_min)  # 1: steps by position past a rewrite

    rng = random.Random(2028)
    for model in (profile("claude-sonnet-4-5"), profile("gpt-5")):
        for _ in range(40):
            counter = TokenCounter()
            tok = partial(counter.truth_at, ratio=1.3)
            heads = [Message.text_message("system", "", meta={"overhead": k}) for k in (3_000, 5_000)]
            for h, k in zip(heads, (3_000, 5_000), strict=True):
                counter.adopt([h], [k])
            ours, fresh = PromptCache(model), FreshCache(model)
            head, body, now = heads[0], (), 0.0
            sent: tuple[Message, ...] = (head,)
            for step in range(60):
                roll = rng.random()
                if roll < 0.5:
                    added = (Message.text_message("user", f"turn {step} " * rng.randint(5, 400)),)
                    body = (*body, *added)
                    sent = extend(sent, added) if sent[0] is head else (head, *body)
                else:
                    if roll < 0.6:
                        head = heads[1] if head is heads[0] else heads[0]  # a model switch re-measures it
                    elif roll < 0.75 and body:
                        i = rng.randrange(len(body))
                        body = (*body[:i], Message.text_message("user", f"[cut {step}]"), *body[i + 1:])
                    elif roll < 0.85 and len(body) > 2:
                        body = (Message.text_message("assistant", f"summary {step} " * 80), *body[-2:])
                    sent = (head, *body)
                now += rng.choice((5.0, 60.0, 400.0))
                if rng.random() < 0.15:
                    request, stream = (*sent, Message.text_message("user", "summarize")), "summarizer"
                else:
                    request, stream = sent, "agent"
                assert ours.request(request, tok, now, stream) == fresh.request(request, tok, now, stream)
                held = {id(e) for e in ours._entries}  # no key of a dropped entry, whose id a new object may take
                assert set(ours._common) <= held
