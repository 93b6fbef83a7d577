"""The cache ledger on hand-computed calls; where a model's prices and window come from (--prices,
prices.toml, genai-prices, the stated fallback) and what --strict-prices and a bad price file refuse."""

from __future__ import annotations

import pytest

from bench.cost.pricing import PromptCache, UnknownModelError, profile


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


def test_an_unknown_model_gets_the_stated_fallback_and_strict_refuses_it_in_two_lines():
    p = profile("claude-sonet-4-5")  # a typo: no table knows it
    assert p.is_fallback and p.price_source.startswith("fallback: unknown model, priced as claude-sonnet-4-6")
    assert p.window_source.startswith("fallback:") and p.context_window == 200_000
    assert p.rates == profile("claude-sonnet-4-6").rates and p.id == "claude-sonet-4-5"
    with pytest.raises(UnknownModelError) as refused:
        profile("claude-sonet-4-5", strict=True)
    message = str(refused.value)
    assert message.startswith("no price for model 'claude-sonet-4-5' in prices.toml or genai-prices 0.2.3")
    assert "Did you mean claude-sonnet-4-5" in message and "--prices FILE" in message
    assert len(message.splitlines()) <= 2 and len(message) < 400  # no list of known ids
    assert not profile("claude-sonnet-4-5", strict=True).is_fallback


@pytest.mark.parametrize(("model", "family", "window"), [
    ("acme-coder-2", "the generic default", 128_000), ("claude-imaginary-9", "claude-sonnet-4-6", 200_000),
    ("gpt-9", "gpt-5.1", 400_000), ("o9-mini", "gpt-5.1", 400_000), ("my-codex-x", "gpt-5.1", 400_000),
    ("gemini-9-ultra", "gemini-2.5-pro", 1_048_576)])
def test_the_fallback_family_is_chosen_by_name(model: str, family: str, window: int) -> None:
    p = profile(model)
    assert p.is_fallback and f"priced as {family}" in p.price_source and p.context_window == window
    assert p.rates.input > 0 and p.rates.output > 0


def test_a_provider_names_the_fallback_family_of_a_name_that_does_not() -> None:
    assert "claude-sonnet-4-6" in profile("house-model", "anthropic").price_source
    assert "generic" in profile("house-model").price_source


# --- genai-prices: the sessions' models, id forms, [1m], providers ------------------------------------

@pytest.mark.parametrize(("model", "library_id", "window"), [
    ("claude-sonnet-4-20250514", "anthropic/claude-sonnet-4-0", 200_000),
    ("claude-opus-4-20250514", "anthropic/claude-opus-4-0", 200_000),
    ("gpt-5.4", "openai/gpt-5.4", 1_050_000),
    ("gpt-5.5", "openai/gpt-5.5", 1_000_000),
    ("gemini-3-flash-preview", "google/gemini-3-flash-preview", 1_000_000),
    ("claude-opus-4-7", "anthropic/claude-opus-4-7", 1_000_000),
    ("claude-opus-5", "anthropic/claude-opus-5", 1_000_000),
    ("claude-fable-5", "anthropic/claude-fable-5", 1_000_000),
])
def test_the_recorded_sessions_models_resolve_in_genai_prices(model: str, library_id: str, window: int) -> None:
    p = profile(model, strict=True)
    assert p.price_source == p.window_source == f"genai-prices 0.2.3: {library_id}"
    assert p.context_window == window and not p.is_fallback and p.rates.output > p.rates.input > 0
    assert p.max_output > 0 and p.min_cache_prefix > 0


def test_the_sessions_model_genai_prices_lacks_is_a_stated_override() -> None:
    spark = profile("gpt-5.3-codex-spark", strict=True)
    assert spark.price_source.startswith("prices.toml: ") and spark.context_window == 128_000
    assert spark.rates == profile("gpt-5.3-codex").rates  # priced as the model it is a variant of


def test_gpt_5_5_bills_its_long_context_tier_above_272k() -> None:
    p = profile("gpt-5.5")
    assert p.cost_without_cache(272_000, 0) == pytest.approx(272_000 * 5 / 1e6)
    assert p.cost_without_cache(272_001, 1_000) == pytest.approx((272_001 * 10 + 1_000 * 45) / 1e6)


@pytest.mark.parametrize(("model", "same_as"), [
    ("claude-opus-4-5-20251101", "claude-opus-4-5"), ("anthropic/claude-opus-4.8", "claude-opus-4-8"),
    ("openrouter/anthropic/claude-3.5-sonnet", "claude-3-5-sonnet-20241022"),
    ("openai/gpt-4o-2024-08-06", "gpt-4o"), ("gemini/gemini-2.5-pro", "gemini-2.5-pro"),
    ("CLAUDE-SONNET-4-5", "claude-sonnet-4-5")])
def test_dated_and_provider_prefixed_ids_resolve_as_the_library_matches(model: str, same_as: str) -> None:
    p, q = profile(model, strict=True), profile(same_as)
    assert (p.rates, p.context_window, p.above) == (q.rates, q.context_window, q.above) and p.id == model


def test_the_1m_suffix_selects_the_1m_window_and_the_tier_where_one_is_billed() -> None:
    standard, opted = profile("claude-opus-4-6"), profile("claude-opus-4-6[1m]")
    assert standard.context_window == 200_000 and "prices.toml" in standard.window_source
    assert opted.context_window == 1_000_000 and opted.window_source == "[1m]: the 1M-context opt-in"
    assert opted.rates == standard.rates and opted.id == "claude-opus-4-6[1m]"
    sonnet = profile("claude-sonnet-4-5")  # genai-prices' >200K tier: unreachable in the 200K window
    assert sonnet.context_window == 200_000 and sonnet.above is None
    sonnet_1m = profile("claude-sonnet-4-5[1m]")
    assert sonnet_1m.tier_threshold == 200_000 and sonnet_1m.above.input == 6.0 and sonnet_1m.above.output == 22.5
    assert sonnet_1m.rates_for(200_001).cache_write_5m == 7.5
    sonnet_4 = profile("claude-sonnet-4-20250514[1m]")  # the tier genai-prices lacks: prices.toml's
    assert sonnet_4.above is not None and sonnet_4.above.input == 6.0 and "prices.toml" in sonnet_4.price_source
    assert profile("claude-opus-4-7[1m]").context_window == 1_000_000


def test_a_provider_id_selects_that_providers_row_and_window() -> None:
    copilot = profile("claude-fable-5", "github-copilot")
    assert copilot.context_window == 264_000 and "github-copilot/claude-fable-5" in copilot.window_source
    assert profile("claude-fable-5").context_window == 1_000_000
    unlisted = profile("claude-sonnet-4.6", "github-copilot")  # the provider gives no window: the model's own
    assert "github-copilot lists no window" in unlisted.window_source
    assert profile("gpt-5.4", "no-such-provider").price_source == profile("gpt-5.4").price_source


def test_the_bundled_table_keeps_its_rates_for_models_both_know() -> None:
    """What the table had before genai-prices: these must not move (ids, windows, limits, tiers)."""
    assert profile("gpt-4.1").context_window == 1_047_576
    assert (profile("gpt-5").max_input, profile("gpt-5.2-codex").rates.input) == (272_000, 1.75)
    assert profile("claude-opus-4-8-fast").rates.output == 50.0  # genai-prices matches it to Opus 4.8 at x1
    gemini = profile("gemini-1.5-pro-exp-0801")
    assert (gemini.rates.cache_read, gemini.above.cache_read, gemini.context_window) == (0.3125, 0.625, 2_097_152)
    assert (profile("claude-haiku-4-5").min_cache_prefix, profile("claude-opus-4-1").max_output) == (4_096, 32_000)
    assert profile("gpt-4").rates.cache_read == 30.0  # no cached rate: no discount
    assert profile("openai/openrouter-llama-4-maverick").rates.input == 0.15
    assert profile("claude-3-5-sonnet-20240620").max_output == 4_096
    assert profile("openrouter/openai/gpt-4-mini").rates == profile("gpt-4o-mini").rates


def test_every_prices_toml_entry_says_why() -> None:
    from bench.cost.pricing import _table, price_table

    table = _table()
    assert all(e.get("why") for e in table.models.values())
    assert set(price_table()[1]) >= {"claude-opus-4-6", "gpt-5.3-codex-spark"}


# --- --prices files are validated (issue 23 point 3) ---------------------------------------------------

ENTRY = ('[models."acme-coder-3"]\nprovider = "acme"\ninput = 1.0\noutput = 2.0\ncache_read = 0.1\n'
         'context_window = 64_000\nmax_output = 8_000\nmin_cache_prefix = 1_024\n')


@pytest.mark.parametrize(("line", "field"), [
    ("input = -3.0", "input"), ("output = nan", "output"), ("cache_read = inf", "cache_read"),
    ("context_window = 0", "context_window"), ("context_window = 1.5", "context_window"),
    ("max_output = -1", "max_output"), ("input = \"free\"", "input"), ("above_output = -inf", "above_output"),
    ("min_cache_prefix = -5", "min_cache_prefix")])
def test_a_prices_file_with_a_bad_value_is_refused_naming_file_model_and_field(tmp_path, monkeypatch, line: str,
                                                                               field: str) -> None:
    from bench.cost import pricing

    monkeypatch.setattr(pricing, "_EXTRA", {})
    bad = tmp_path / "bad.toml"
    key = line.split(" =")[0]
    bad.write_text("\n".join(x for x in ENTRY.splitlines() if not x.startswith(key + " ")) + f"\n{line}\n",
                   encoding="utf-8")
    with pytest.raises(ValueError) as refused:
        pricing.add_prices(str(bad))
    message = str(refused.value)
    assert str(bad) in message and "'acme-coder-3'" in message and f"{field} = " in message
    assert len(message.splitlines()) <= 2
    assert pricing.profile("acme-coder-3").is_fallback  # nothing of the bad file was taken


def test_a_prices_file_may_change_one_field_of_a_library_model(tmp_path, monkeypatch) -> None:
    from bench.cost import pricing

    monkeypatch.setattr(pricing, "_EXTRA", {})
    f = tmp_path / "window.toml"
    f.write_text('[models."gpt-5.5"]\ncontext_window = 272_000\n', encoding="utf-8")
    assert pricing.add_prices(str(f)) == ["gpt-5.5"]
    p = pricing.profile("gpt-5.5")
    assert p.context_window == 272_000 and p.window_source == f"--prices {f}"
    assert p.rates.input == 5.0 and p.price_source == "genai-prices 0.2.3: openai/gpt-5.5"


def test_a_changed_price_file_changes_the_task_key(tmp_path):
    """Rows billed at old prices are never resumed: the task key hashes the prices the run bills with."""
    import strategies
    from bench.run.runner import RunConfig, _prices_key, task_key

    prices = tmp_path / "p.toml"
    prices.write_text('[models."m"]\ninput = 1.0\n', encoding="utf-8")
    spec = strategies.parse_spec("none")
    before = task_key("sha", spec, RunConfig(prices=(str(prices),)))
    assert before == task_key("sha", spec, RunConfig(prices=(str(prices),)))
    prices.write_text('[models."m"]\ninput = 2.0\n', encoding="utf-8")
    _prices_key.cache_clear()
    assert task_key("sha", spec, RunConfig(prices=(str(prices),))) != before
    assert task_key("sha", spec, RunConfig()) != before


def test_a_new_genai_prices_version_changes_the_task_key(monkeypatch):
    import strategies
    from bench.cost import pricing
    from bench.run.runner import RunConfig, _prices_key, task_key

    spec = strategies.parse_spec("none")
    _prices_key.cache_clear()
    before = task_key("sha", spec, RunConfig())
    monkeypatch.setattr(pricing, "LIBRARY", "genai-prices 0.2.4")
    _prices_key.cache_clear()
    assert task_key("sha", spec, RunConfig()) != before
    monkeypatch.undo()
    _prices_key.cache_clear()


def test_common_prefixes_inferred_from_the_previous_request_equal_a_full_comparison():
    # Only the previous request is compared in full; every other entry's common prefix is derived
    # from the one it had with the previous request. Random request streams that grow, get
    # rewritten in the middle, fork (a summarizer stream) and hold equal-but-distinct objects.
    import random

    from bench.tokens.prefix import first_difference

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

    import bench.cost.cache

    # ours takes steps by position past 1 shared message (short requests too); the other never does, which
    # is the earlier rule: every message past the shared prefix counted
    aligned = (1, 10**9)
    rng = random.Random(5)
    for _ in range(80):
        caches = (PromptCache(profile("claude-sonnet-4-5")), PromptCache(profile("claude-sonnet-4-5")))
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
            splits = []
            for c, a in zip(caches, aligned, strict=True):
                monkeypatch.setattr(bench.cost.cache, "ALIGNED_MIN", a)
                splits.append(c.request(msgs, count, now, stream=stream))
            assert splits[0] == splits[1]
            assert caches[0]._last.sums[:len(msgs)] == caches[1]._last.sums[:len(msgs)]


@pytest.mark.parametrize("aligned_min, counted", [(1, 1), (10**9, 100)])
def test_past_aligned_min_a_rewritten_old_message_is_the_only_one_counted(monkeypatch, aligned_min, counted):
    # The cache's module constant decides when steps are taken by position (compiled or not, a patch of it
    # must reach the split, or the tests above that patch it would prove nothing).
    import bench.cost.cache

    monkeypatch.setattr(bench.cost.cache, "ALIGNED_MIN", aligned_min)
    cache, seen = PromptCache(profile("claude-sonnet-4-5")), []
    msgs = [object() for _ in range(101)]

    def count(m: object) -> int:
        seen.append(m)
        return 100

    cache.request(tuple(msgs), count, 0.0)
    msgs[1] = object()  # one old message rewritten (a mask): the 99 after it are the same objects
    seen.clear()
    split = cache.request(tuple(msgs), count, 1.0)
    assert len(seen) == counted and split.prompt == 101 * 100
