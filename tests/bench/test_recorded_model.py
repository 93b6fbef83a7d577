"""--model recorded: each call windowed and priced as the model the trace recorded; --prices FILE."""

from __future__ import annotations

import pytest

import strategies
from bench.pricing import UnknownModelError, add_prices, profile
from bench.replay import ReplayConfig, replay
from bench.tokens import TokenCounter
from traces.model import Message, Trace


def _switching_trace() -> Trace:
    msgs = (Message.text_message("user", "look at the parser " * 200),
            Message.text_message("assistant", "reading it", meta={"model": "claude-haiku-4-5-20251001"}),
            Message.text_message("user", "now fix the bug " * 200),
            Message.text_message("assistant", "fixed", meta={"model": "claude-opus-4-6"}))
    return Trace("sw", msgs, agent="claude-code", model="claude-opus-4-6")


def test_a_mid_session_switch_prices_each_call_as_its_recorded_model() -> None:
    config = ReplayConfig(profile("claude-sonnet-4-5"), recorded_models=True)
    result = replay(_switching_trace(), strategies.build("none"), config, counter=TokenCounter())
    first, second = (c for c in result.calls if c.kind == "agent")
    haiku, opus = profile("claude-haiku-4-5"), profile("claude-opus-4-6")
    assert first.cost == pytest.approx(haiku.cost(uncached=first.uncached, cache_read=first.cache_read,
                                                  cache_write=first.cache_write, output=first.output_tokens))
    assert second.cost == pytest.approx(opus.cost(uncached=second.uncached, cache_read=second.cache_read,
                                                  cache_write=second.cache_write, output=second.output_tokens))
    assert second.cache_read == 0  # a new model reads nothing of the old model's cache
    plain = replay(_switching_trace(), strategies.build("none"), ReplayConfig(profile("claude-sonnet-4-5")),
                   counter=TokenCounter())
    assert plain.calls[1].cost != second.cost  # without the flag: the run's model


def test_prices_file_adds_a_model_and_an_unknown_one_names_the_way(tmp_path, monkeypatch) -> None:
    from bench import pricing

    monkeypatch.setattr(pricing, "_EXTRA", {})
    with pytest.raises(UnknownModelError, match="--prices FILE"):
        profile("acme-coder-1")
    good = tmp_path / "p.toml"
    good.write_text('[models."acme-coder-1"]\nprovider = "acme"\ninput = 1.0\noutput = 2.0\ncache_read = 0.1\n'
                    'context_window = 64_000\nmax_output = 8_000\nmin_cache_prefix = 1_024\n', encoding="utf-8")
    assert add_prices(str(good)) == ["acme-coder-1"]
    assert profile("acme-coder-1").context_window == 64_000
    bad = tmp_path / "bad.toml"
    bad.write_text('[models."x"]\nprovider = "acme"\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.toml.*lacks"):
        add_prices(str(bad))


def test_a_recorded_codex_window_becomes_the_input_limit() -> None:
    from bench.replay import recorded_profile

    base = profile("gpt-5.3-codex")
    assert recorded_profile("gpt-5.3-codex", 258_400).max_input == 258_400
    assert recorded_profile("gpt-5.3-codex", None) is base
    assert recorded_profile("gpt-5.3-codex", 10_000_000) is base  # beyond the model's window: ignored


def test_a_run_prices_an_unknown_model_from_prices_file(tmp_path, monkeypatch, capsys) -> None:
    from bench import pricing
    from bench.cli import main

    monkeypatch.setattr(pricing, "_EXTRA", {})
    args = ["run", "--traces", "synthetic:short", "--strategies", "none", "--model", "acme-coder-2",
            "--truth", "cl100k", "--workers", "1", "--out", str(tmp_path), "--quiet", "--no-report"]
    assert main(args) == 2 and "--prices FILE" in capsys.readouterr().err
    prices = tmp_path / "acme.toml"
    prices.write_text('[models."acme-coder-2"]\nprovider = "acme"\ninput = 1.0\noutput = 2.0\ncache_read = 0.1\n'
                      'context_window = 400_000\nmax_output = 8_000\nmin_cache_prefix = 1_024\n', encoding="utf-8")
    assert main([*args, "--prices", str(prices)]) == 0
