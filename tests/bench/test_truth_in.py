"""TokenCounter.truth_in: ``truth_at`` as one bound function, answering as ``truth_at`` does at the moment it is
asked. A copy sharing a recorded message's blocks takes the recorded (given) count, and keeps it once the recorded
message is gone: a count does not depend on how long another object lives."""

from __future__ import annotations

import gc
from dataclasses import replace
from functools import partial

from bench.context.messages import Meter
from bench.tokens import TokenCounter
from traces.model import Message


def test_truth_in_follows_truth_at_and_a_copy_stays_given_after_its_original_dies():
    counter = TokenCounter()
    ratio = 1.3
    old, new = partial(counter.truth_at, ratio=ratio), counter.truth_in(ratio)
    recorded = Message.text_message("user", "the recorded turn " * 50)
    counter.adopt([recorded], [1_000])  # the provider's count, unlike the tokenizer's
    copy = replace(recorded, meta={"kept": True})  # shares the blocks: sends the same content
    written = Message.text_message("user", "a placeholder the strategy wrote")
    assert copy.blocks is recorded.blocks and copy is not recorded
    for m in (recorded, copy, written):
        assert new(m) == old(m)
    assert new(recorded) == new(copy) == 1_000  # given, through the original
    assert new(written) == round(counter.truth(written) * ratio)
    del recorded
    gc.collect()
    # the original is gone; the copy, still in some context, keeps the count it was added with (it used to fall to
    # the tokenizer's count times the ratio, and the context's running total drifted from the bill)
    assert new(copy) == old(copy) == counter.truth(copy) == 1_000 != round(counter.truth(copy) * ratio)


def test_a_meter_answers_with_the_bound_functions():
    counter = TokenCounter()
    m = Message.text_message("user", "hello there " * 20)
    meter = Meter(counter, "chars/4", 0, 1.3)
    assert meter.truth(m) == counter.truth_at(m, 1.3) and meter.estimate(m) == counter.estimate(m, "chars/4")
    assert Meter(counter, "truth").truth(m) == counter.truth(m) == Meter(counter, "truth").estimate(m)
    assert meter == Meter(counter, "chars/4", 0, 1.3)  # the bound functions are no fields
