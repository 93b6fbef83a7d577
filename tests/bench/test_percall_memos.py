"""The per-call path's memos and running sums (issue 28) answer exactly what a fresh computation does,
whatever happens between two calls: counts adopted, copies made, messages dropped, prompts rewritten."""

from __future__ import annotations

import gc
import random

import pytest
from dataclasses import replace

from bench.tokens.counter import TokenCounter
from traces.model import Message


def fresh_truth_at(counter: TokenCounter, m: Message, ratio: float) -> int:
    """``truth_at`` without its memo: the count, and whether it (or a live copy's) was given."""
    n = counter.truth(m)
    return n if counter._is_given(m) is not False else round(n * ratio)


def test_truth_at_after_an_adopt_answers_the_adopted_count_not_the_remembered_one():
    counter = TokenCounter()
    m = Message.text_message("assistant", "a summary the strategy wrote " * 9)
    scaled = counter.truth_at(m, 1.37)
    assert scaled == round(counter.truth(m) * 1.37) and id(m) in counter._at
    counter.adopt([m], [11])
    assert counter.truth_at(m, 1.37) == 11
    # a copy sharing the blocks of a message adopted after the copy was counted: the provider's count
    copy = replace(m, meta={"kept": True})
    other = Message.text_message("user", "a placeholder " * 7)
    twin = replace(other, meta={"preserved": True})
    assert counter.truth_at(twin, 1.37) == round(counter.truth(twin) * 1.37)
    counter.adopt([other], [5])
    assert counter.truth_at(twin, 1.37) == counter.truth(twin)  # given through its twin: not scaled
    assert counter.truth_at(copy, 1.37) == 11
    assert counter.truth_at(m, 2.0) == 11 and counter.truth_at(other, 0.5) == 5


def test_truth_at_under_random_adopts_copies_deaths_and_ratios_equals_a_fresh_computation():
    rng = random.Random(28)
    for _ in range(30):
        counter = TokenCounter()
        trace = [Message.text_message("user", f"recorded {i} " * rng.randint(1, 30)) for i in range(6)]
        counter.prime(trace)
        live: list[Message] = list(trace)
        scaled = {r: counter.scaled(r) for r in (1.0, 1.25, 0.8)}
        for step in range(120):
            roll = rng.random()
            if roll < 0.2:
                live.append(Message.text_message("assistant", f"built {step} " * rng.randint(1, 20)))
            elif roll < 0.35 and live:
                src = rng.choice(live)
                live.append(replace(src, meta={**src.meta, "copy": step}))  # shares src's blocks
            elif roll < 0.5 and live:
                picked = rng.sample(live, min(len(live), rng.randint(1, 3)))
                counter.adopt(picked, [rng.randint(1, 500) for _ in picked])
            elif roll < 0.6 and len(live) > len(trace):
                del live[rng.randrange(len(trace), len(live))]  # a message the replay let go
                gc.collect()
            ratio = rng.choice((1.0, 1.25, 0.8))
            bound = scaled[ratio]
            for m in rng.sample(live, min(len(live), 5)):
                expected = fresh_truth_at(counter, m, ratio)
                assert counter.truth_at(m, ratio) == expected
                assert counter.truth_at(m, ratio) == expected  # and again, from the memo
                assert bound(m) == expected  # bound before any of this happened (a Meter's)


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
            n = next((i for i, (a, b) in enumerate(zip(e[0], msgs)) if a != b), min(len(e[0]), len(msgs)))
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
    import bench.cost.pricing
    from bench.cost.pricing import PromptCache, profile
    from bench.tokens.prefix import extend

    monkeypatch.setattr(bench.cost.pricing, "ALIGNED_MIN", aligned_min)  # 1: steps by position past a rewrite

    rng = random.Random(2028)
    for model in (profile("claude-sonnet-4-5"), profile("gpt-5")):
        for _ in range(40):
            counter = TokenCounter()
            tok = counter.scaled(1.3)
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
