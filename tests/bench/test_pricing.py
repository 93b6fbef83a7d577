"""The cache ledger on hand-computed calls, and the price table's refusals."""

from __future__ import annotations

import pytest

from bench.pricing import PromptCache, UnknownModelError, profile


def test_three_call_example_by_hand():
    """Sonnet 4.5: input $3, 5-min write $3.75, read $0.30 per MTok; min prefix 1,024."""
    m = profile("claude-sonnet-4-5")
    cache = PromptCache(m)
    # call 1: system (2,000) + user (500): nothing to read, all 2,500 written
    s1 = cache.request(["S", "U1"], [2000, 500], now=0)
    assert (s1.cache_read, s1.cache_write, s1.uncached) == (0, 2500, 0)
    # call 2: prefix kept, the answer (100) and a tool result (400) appended: reads 2,500, writes 500
    s2 = cache.request(["S", "U1", "A1", "R1"], [2000, 500, 100, 400], now=10)
    assert (s2.cache_read, s2.cache_write, s2.uncached, s2.prefix_break) == (2500, 500, 0, False)
    # call 3: U1 rewritten (a prune): only the system prompt is read, the rest re-written
    s3 = cache.request(["S", "U1*", "A1", "R1", "A2", "R2"], [2000, 50, 100, 400, 100, 300], now=20)
    assert (s3.cache_read, s3.cache_write, s3.uncached, s3.prefix_break) == (2000, 950, 0, True)
    cost = m.cost(uncached=0, cache_read=2000, cache_write=950, output=0)
    assert cost == pytest.approx((2000 * 0.30 + 950 * 3.75) / 1e6)


def test_below_minimum_prefix_nothing_is_cached():
    m = profile("claude-haiku-4-5")  # min cacheable prefix 4,096
    cache = PromptCache(m)
    s1 = cache.request(["S", "U"], [2000, 500], now=0)
    s2 = cache.request(["S", "U", "A", "R"], [2000, 500, 100, 400], now=5)
    assert (s1.cache_read, s1.cache_write, s1.uncached) == (0, 0, 2500)
    assert (s2.cache_read, s2.cache_write, s2.uncached) == (0, 0, 3000)


def test_cache_expires_after_its_lifetime():
    cache = PromptCache(profile("claude-sonnet-4-5"))
    cache.request(["S"], [5000], now=0)
    assert cache.request(["S", "U"], [5000, 10], now=299).cache_read == 5000  # a hit refreshes it
    assert cache.request(["S", "U", "V"], [5000, 10, 10], now=299 + 301).cache_read == 0


def test_openai_bills_no_writes():
    cache = PromptCache(profile("gpt-5"))
    s1 = cache.request(["S"], [3000], now=0)
    s2 = cache.request(["S", "U"], [3000, 700], now=1)
    assert (s1.cache_write, s1.uncached) == (0, 3000)
    assert (s2.cache_read, s2.cache_write, s2.uncached) == (3000, 0, 700)


def test_long_context_tier_applies_to_the_whole_request():
    m = profile("claude-sonnet-4-5-1m")
    below = m.cost(uncached=200_000, cache_read=0, cache_write=0, output=1000)
    above = m.cost(uncached=200_001, cache_read=0, cache_write=0, output=1000)
    assert below == pytest.approx((200_000 * 3 + 1000 * 15) / 1e6)
    assert above == pytest.approx((200_001 * 6 + 1000 * 22.5) / 1e6)


def test_window_check_uses_input_limit_and_output_room():
    gpt5 = profile("gpt-5")
    assert gpt5.fits(272_000, 1000) and not gpt5.fits(272_001, 10)
    sonnet = profile("claude-sonnet-4-5")
    assert sonnet.fits(199_000, 1000) and not sonnet.fits(199_500, 1000)


def test_unknown_model_is_refused_with_suggestions():
    with pytest.raises(UnknownModelError, match=r"no price for model 'claude-sonet-4-5'.*Did you mean claude-sonnet-4-5"):  # noqa: E501
        profile("claude-sonet-4-5")


def test_a_changed_price_file_changes_the_task_key(tmp_path):
    """Rows billed at old prices are never resumed: the task key hashes the prices the run bills with."""
    import strategies
    from bench.runner import RunConfig, _prices_key, task_key

    prices = tmp_path / "p.toml"
    prices.write_text('[models."m"]\ninput = 1.0\n', encoding="utf-8")
    spec = strategies.parse_spec("none")
    before = task_key("sha", spec, RunConfig(prices=(str(prices),)))
    assert before == task_key("sha", spec, RunConfig(prices=(str(prices),)))
    prices.write_text('[models."m"]\ninput = 2.0\n', encoding="utf-8")
    _prices_key.cache_clear()
    assert task_key("sha", spec, RunConfig(prices=(str(prices),))) != before
    assert task_key("sha", spec, RunConfig()) != before


def test_common_prefixes_inferred_from_the_previous_request_equal_a_full_comparison():
    # Only the previous request is compared in full; every other entry's common prefix is derived
    # from the one it had with the previous request. Random request streams that grow, get
    # rewritten in the middle, fork (a summarizer stream) and hold equal-but-distinct objects.
    import random

    from bench.prefix import first_difference

    rng = random.Random(3)
    for _ in range(60):
        cache = PromptCache(profile("claude-sonnet-4-5"))
        history: list[object] = []
        now = 0.0
        for _ in range(40):
            roll = rng.random()
            if roll < 0.5:
                history.append(rng.randint(0, 4))
                msgs = tuple(history)
            elif roll < 0.7 and history:
                i = rng.randrange(len(history))
                history[i] = rng.randint(0, 4)  # a rewrite (sometimes to the same value)
                msgs = tuple(history)
            elif roll < 0.85:
                msgs = (*history[: rng.randint(0, len(history))], "summarize")  # another stream's request
            else:
                msgs = tuple(list(history))  # equal values, a new tuple
            expected = [(e, first_difference(e.messages, msgs))
                        for e in (*cache._entries, *([cache._last] if cache._last else []))]
            assert cache._commons(msgs) == expected
            now += rng.choice([1.0, 30.0, 400.0])
            split = cache.request(msgs, lambda m: 1_000 + (m if isinstance(m, int) else 7), now,
                                  stream="summarizer" if msgs[-1:] == ("summarize",) else "agent")
            assert split.prompt == sum(1_000 + (m if isinstance(m, int) else 7) for m in msgs)


def test_running_sums_taken_from_the_entry_by_position_equal_counting_each_message_after_the_prefix(monkeypatch):
    # A request that rewrites a few old positions takes the other positions' steps from the entry
    # it shares most with; the sums must be exactly those of counting every message after the
    # shared prefix (the earlier rule), including equal-but-distinct messages whose counts differ
    # (a step inherited through such a message belongs to the earlier request, not this one).
    import random

    class Msg:
        def __init__(self, v: int) -> None:
            self.v = v

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Msg) and other.v == self.v

        __hash__ = None  # type: ignore[assignment]

    class Counting(PromptCache):  # the earlier rule: every message past the shared prefix counted
        @staticmethod
        def _tail_sums(msgs, counts, reuse, n):
            out, acc = [], reuse.sums[n - 1] if n else 0
            for m in msgs[n:]:
                acc += counts(m)
                out.append(acc)
            return out

    import bench.pricing

    monkeypatch.setattr(bench.pricing, "ALIGNED_MIN", 1)  # short requests: take steps by position anyway
    rng = random.Random(5)
    for _ in range(80):
        caches = (PromptCache(profile("claude-sonnet-4-5")), Counting(profile("claude-sonnet-4-5")))
        tokens: dict[int, int] = {}
        keep: list[Msg] = []  # ids stay valid

        def count(m: Msg, tokens: dict[int, int] = tokens) -> int:
            return tokens.setdefault(id(m), 500 + rng.randrange(800))

        def fresh(v: int, keep: list[Msg] = keep) -> Msg:
            keep.append(Msg(v))
            return keep[-1]

        history = [fresh(rng.randint(0, 3)) for _ in range(3)]
        for call in range(40):
            roll = rng.random()
            if roll < 0.45:
                history.append(fresh(rng.randint(0, 3)))
            elif roll < 0.75 and history:
                for i in rng.sample(range(len(history)), min(len(history), rng.randint(1, 3))):
                    history[i] = fresh(history[i].v if rng.random() < 0.5 else rng.randint(0, 3))  # a re-cut
            elif roll < 0.85 and len(history) > 2:
                del history[rng.randrange(len(history))]
            msgs = tuple(history) if rng.random() < 0.8 else (*history[:rng.randint(0, len(history))], fresh(9))
            stream = "summarizer" if msgs and msgs[-1].v == 9 else "agent"
            now = call + (400.0 * (call // 13))  # now and then past the lifetime: entries expire
            splits = [c.request(msgs, count, now, stream=stream) for c in caches]
            assert splits[0] == splits[1]
            assert caches[0]._last.sums[:len(msgs)] == caches[1]._last.sums[:len(msgs)]
