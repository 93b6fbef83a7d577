"""The prompt cache and the provider view copy themselves (``__deepcopy__``): the twin fork
(bench.replay.loop._Loop.fork) deep-copies both, and compiled with mypyc (bench/cli/native.py) a class
has no default copy. A copy must go on exactly as its original does, running sums and all; a split
copies and pickles as its fields."""

from __future__ import annotations

import copy
import pickle
import random

from bench.cost.cache import CacheSplit
from bench.cost.pricing import PromptCache, profile
from bench.replay.loop import SHARED_TYPES, _sharing
from bench.replay.provider import ProviderView, adopt_shipped, shipped_counts
from bench.tokens.attribution import Attribution
from bench.tokens.counter import TokenCounter
from bench.tokens.prefix import extend
from tests.bench.test_attribution import _answer, _result
from traces.model import Message, Trace


def _shared_pairs(cache: PromptCache) -> list[tuple[int, int]]:
    """Which entries (``_entries`` then ``_last``) share one running-sums list."""
    entries = [*cache._entries, *([cache._last] if cache._last is not None else [])]
    return [(i, j) for i, a in enumerate(entries) for j, b in enumerate(entries) if i < j and a.sums is b.sums]


def test_a_copied_cache_splits_every_later_request_as_its_original():
    rng = random.Random(11)
    for model in (profile("claude-sonnet-4-5"), profile("gpt-5")):
        for _ in range(30):
            counter = TokenCounter()
            cache, body, now, twin = PromptCache(model), (), 0.0, None
            sent: tuple[Message, ...] = ()
            fork_at = rng.randrange(5, 35)
            for step in range(40):
                roll = rng.random()
                if roll < 0.6 or not body:
                    added = (Message.text_message("user", f"turn {step} " * rng.randint(50, 600)),)
                    body, sent = (*body, *added), extend(sent, added)
                else:  # a rewrite of an old message (a mask), or a summary in place of the history
                    i = rng.randrange(len(body))
                    body = (*body[:i], Message.text_message("user", f"[cut {step}]"), *body[i + 1:]) \
                        if roll < 0.85 else (Message.text_message("assistant", f"summary {step} " * 300),)
                    sent = body
                request, stream = ((*sent, Message.text_message("user", "summarize")), "summarizer") \
                    if rng.random() < 0.15 else (sent, "agent")
                now += rng.choice((5.0, 60.0, 400.0))
                split = cache.request(request, counter.truth, now, stream)
                if twin is not None:
                    assert twin.request(request, counter.truth, now, stream) == split
                    assert twin._last.sums[:len(request)] == cache._last.sums[:len(request)]
                if step == fork_at:
                    memo: dict = {}
                    with _sharing(SHARED_TYPES):
                        twin = copy.deepcopy(cache, memo)
                    assert twin is not cache and twin.model is model  # a profile is shared, not copied
                    assert twin._common == cache._common  # the originals' ids (held by the fork's memo)
                    assert _shared_pairs(twin) == _shared_pairs(cache)  # shared sums stay shared, in the copy
                    assert not {id(e.sums) for e in twin._entries} & {id(e.sums) for e in cache._entries}
            assert twin is not None


def _reasoning_trace() -> Trace:
    """A Codex session whose first turn's reasoning leaves the prompt at the next human turn (an
    attribution with an overhead and a reasoning drop)."""
    a0 = _answer("a0 go", 20_000, output=800, thinking="let me think " * 100)
    a1 = _answer("a1 go", 21_200, output=300, thinking="more thought " * 30)
    msgs = [Message.text_message("user", "task"), a0, _result("r0 " + "x " * 50), a1,
            Message.text_message("user", "now do something else"), _answer("a2 go", 20_900, output=100)]
    return Trace("c", tuple(msgs), agent="codex", model="gpt-5.3-codex")


def test_a_copied_provider_view_sends_every_later_request_as_its_original():
    trace = _reasoning_trace()
    shipped = shipped_counts(trace, TokenCounter())
    assert isinstance(shipped, Attribution)
    counter = TokenCounter()
    adopt_shipped(counter, trace, shipped)
    model = profile("gpt-5.3-codex")
    for fork_at in range(len(trace.messages)):
        view, cache, twin = ProviderView(trace, counter), PromptCache(model), None
        assert view._drop is not None and view.overhead_at(0) > 0
        for i in range(1, len(trace.messages) + 1):
            messages, call = trace.messages[:i], i // 2
            split = view.request(cache, messages, view.overhead_at(call), float(i), call)
            if twin is not None:
                assert twin[0].request(twin[1], messages, twin[0].overhead_at(call), float(i), call) == split
            if i == fork_at:
                with _sharing(SHARED_TYPES):
                    twin = copy.deepcopy((view, cache), {})
                assert twin[0].counter is counter and twin[0].attribution is view.attribution  # shared values
                assert twin[0]._drop is not view._drop and twin[0]._last_request == view._last_request
                assert twin[0]._tok is view._tok  # the shared counter's function, not a copy
        assert fork_at == 0 or twin is not None


def test_a_split_copies_and_pickles_as_its_fields():
    split = CacheSplit(1_200, 300, 45, True)
    for again in (copy.copy(split), copy.deepcopy(split), pickle.loads(pickle.dumps(split))):
        assert again == split and again.prompt == 1_545 and type(again) is CacheSplit


def test_a_replay_with_provider_attributed_counts_forks_its_twin():
    """Counts in provider units (ratio ≠ 1: ``truth_in``'s function is bound in the provider view, the meter
    and a strategy's memos) must not stop the fork: a failed copy falls back silently to the twin replayed
    in full (the same figures, paid twice), so only this says it happened."""
    import strategies
    from bench.replay.loop import ReplayConfig, replay_with_twin
    from bench.run.runner import shared_counter
    from traces.synthetic import generate

    trace = generate("multitask", seed=0)
    counter = shared_counter(trace, shipped_counts(trace, TokenCounter(), model="claude-sonnet-4-5", truth="provider"))
    assert ProviderView(trace, counter).ratio != 1.0
    for name in ("codex", "gemini-cli", "claude-code"):
        result, twin = replay_with_twin(trace, strategies.build(name), ReplayConfig(profile("claude-sonnet-4-5")),
                                        counter=counter)
        assert any(c.rereads for c in result.calls) and twin is not None, name
