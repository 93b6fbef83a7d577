"""The per-call path's memos and running sums (issue 28) answer exactly what a fresh computation does,
whatever happens between two calls: counts adopted, copies made, messages dropped, prompts rewritten."""

from __future__ import annotations

import gc
import random
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
            for m in rng.sample(live, min(len(live), 5)):
                expected = fresh_truth_at(counter, m, ratio)
                assert counter.truth_at(m, ratio) == expected
                assert counter.truth_at(m, ratio) == expected  # and again, from the memo
