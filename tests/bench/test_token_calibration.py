"""Calibrated provider counts for traces without usage, and the stored fit kept honest."""

from __future__ import annotations

import pytest

import strategies
from bench.attribution import Attribution, adopt_shipped, shipped_counts
from bench.pricing import profile
from bench.replay import ReplayConfig, replay
from bench.token_calibration import DEFAULT_SOURCES, _load_sources, family_of, fit, stored
from bench.tokens import TokenCounter
from traces.model import Message, Trace


def _trace(model: str | None = None) -> Trace:
    msgs = (Message.text_message("user", "please refactor the config loader " * 20),
            Message.text_message("assistant", "done: moved parsing into its own function " * 10),
            Message.text_message("user", "now add a test for the empty file case " * 15),
            Message.text_message("assistant", "added test_empty_config " * 5))
    return Trace("syn", msgs, model=model)


def test_a_claude_trace_without_usage_gets_the_calibrated_family_model() -> None:
    trace = _trace()
    counter = TokenCounter()
    shipped = shipped_counts(trace, counter, model="claude-sonnet-4-5")
    assert isinstance(shipped, Attribution)
    fitted = stored()["anthropic"]
    plain = counter.counts(trace.messages)
    assert list(shipped.counts) == [round(n * fitted.ratio) for n in plain]
    worker = TokenCounter()
    adopt_shipped(worker, trace, shipped)
    result = replay(trace, strategies.build("none"), ReplayConfig(profile("claude-sonnet-4-5")), counter=worker)
    first, second = (c.prompt_tokens for c in result.calls if c.kind == "agent")
    assert first == fitted.overhead + shipped.counts[0]  # the overhead is sent with every request
    assert second == fitted.overhead + sum(shipped.counts[:3])


def test_cl100k_truth_and_unknown_families_keep_the_tokenizer_counts() -> None:
    trace = _trace()
    counter = TokenCounter()
    assert shipped_counts(trace, counter, model="claude-sonnet-4-5", truth="cl100k") == counter.counts(trace.messages)
    assert shipped_counts(trace, counter, model="gemini-2.5-pro") == counter.counts(trace.messages)
    with pytest.raises(ValueError, match="not bundled offline"):
        shipped_counts(trace, counter, truth="o200k")


def test_families() -> None:
    assert family_of("claude-opus-4-6") == "anthropic" and family_of("gpt-5.3-codex") == "openai"
    assert family_of("gemini-2.5-pro") is None and family_of(None) is None


@pytest.mark.slow
def test_the_stored_fit_is_what_the_recorded_sessions_give(shared_traces) -> None:
    sources = [str(shared_traces / p.rsplit("/", 1)[-1]) for p in DEFAULT_SOURCES]
    refit = fit(_load_sources(sources))
    for family, model in stored().items():
        assert refit[family].ratio == pytest.approx(model.ratio, abs=0.005), family
        assert refit[family].overhead == pytest.approx(model.overhead, rel=0.02), family
        assert refit[family].held_out_median == pytest.approx(model.held_out_median, abs=0.01), family
    # Claude counts more than cl100k on real text; the held-out error is bounded, not zero
    assert stored()["anthropic"].ratio > 1.1 and 0 < stored()["anthropic"].held_out_median < 0.2
