"""Calibrated provider counts for traces without usage, and the stored fit kept honest."""

from __future__ import annotations

from dataclasses import replace

import pytest

import strategies
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.replay.provider import adopt_shipped, shipped_counts
from bench.tokens.attribution import Attribution
from bench.tokens.calibration import FamilyModel, calibrated_counts, content_kind, family_of, stored
from bench.tokens.calibration_fit import DEFAULT_SOURCES, _kind_ratios, _load_sources, clean_steps, fit
from bench.tokens.counter import TokenCounter, Tokenizer, render
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
    o200k = shipped_counts(trace, counter, truth="o200k")
    assert o200k == TokenCounter(Tokenizer("o200k_base")).counts(trace.messages)
    assert o200k != counter.counts(trace.messages)  # a different tokenizer, not cl100k under a new name
    with pytest.raises(ValueError, match="unknown --truth 'o100k'"):
        shipped_counts(trace, counter, truth="o100k")


def test_openai_models_are_calibrated_on_o200k_with_the_stored_default() -> None:
    trace = _trace("gpt-5.3-codex")
    shipped = shipped_counts(trace, TokenCounter())
    assert isinstance(shipped, Attribution)
    fitted = stored()["openai"]
    assert fitted.base == "o200k_base"
    o200k = TokenCounter(Tokenizer("o200k_base")).counts(trace.messages)
    kinds = [content_kind(render(m)) for m in trace.messages]
    assert list(shipped.counts) == [round(n * fitted.ratio_of(k)) for n, k in zip(o200k, kinds, strict=True)]
    assert shipped.overheads == ((0, fitted.overhead),)


def test_per_kind_counts_follow_the_default() -> None:
    msgs = _trace().messages
    counter = TokenCounter()
    plain = counter.counts(msgs)
    single = FamilyModel("anthropic", 1.5, 100, kind_ratios=(("prose", 2.0),), default="single")
    assert calibrated_counts(single, msgs, counter) == tuple(round(n * 1.5) for n in plain)
    kinds = replace(single, default="kinds")
    assert calibrated_counts(kinds, msgs, counter) == tuple(round(n * 2.0) for n in plain)  # all prose
    assert kinds.kind_prompt({"prose": 10, "code": 10}) == 100 + 20 + 15  # code keeps the pooled ratio


def test_content_kinds() -> None:
    assert content_kind('{"a": [1, 2], "b": null}') == "json"
    assert content_kind('Bash {"command": "ls -la"}') == "json"  # a tool call as render() shows it
    assert content_kind("def f(x):\n    return x + 1\n\nclass A:\n    pass") == "code"
    assert content_kind("2024-05-01 12:00:01 INFO started\n2024-05-01 12:00:02 ERROR boom\n") == "logs"
    trace_back = "Traceback (most recent call last):\n  File \"a.py\", line 3, in <module>\nKeyError: 1"
    assert content_kind(trace_back) == "logs"
    assert content_kind("The loader now reads the file once and caches it. I also added a test.") == "prose"
    assert content_kind("") == "prose"


def test_kind_ratios_recover_a_known_mix() -> None:
    # growth = 2 x code + 1 x prose exactly, over enough steps: least squares finds both
    rows = [(2 * c + p, {"code": c, "prose": p}) for c, p in ((100, 50), (10, 300), (60, 60), (5, 5), (200, 1),
                                                              (30, 90), (70, 20), (15, 150), (120, 40), (80, 80))]
    assert dict(_kind_ratios(rows, pooled=1.5)) == pytest.approx({"code": 2.0, "prose": 1.0})
    # a kind seen in too few steps keeps the pooled ratio (is not listed)
    rows_few_json = rows + [(1_000, {"json": 10})]
    assert "json" not in dict(_kind_ratios(rows_few_json, pooled=1.5))


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
        assert refit[family].kind_held_out_median == pytest.approx(model.kind_held_out_median, abs=0.01), family
        assert dict(refit[family].kind_ratios) == pytest.approx(dict(model.kind_ratios), abs=0.01), family
        assert refit[family].default == model.default, family
        # the default is the better of the two on held-out calls, except on redaction filler, whose
        # per-kind ratios would describe the importer's stand-in text
        better = min(("single", model.held_out_median), ("kinds", model.kind_held_out_median), key=lambda x: x[1])
        assert model.default == ("single" if model.note else better[0]), family
    assert stored()["openai"].note and stored()["openai"].default == "single"  # the Codex sessions are redacted
    assert not stored()["anthropic"].note
    # Claude counts more than cl100k on real text; the held-out error is bounded, not zero
    assert stored()["anthropic"].ratio > 1.1 and 0 < stored()["anthropic"].held_out_median < 0.2


def test_clean_steps_are_the_attribution_steps(shared_traces) -> None:
    from bench.tokens.attribution import clean_growth

    traces = _load_sources([str(shared_traces / "claude-code__marot-spotter")])
    checked = 0
    for trace in traces[:4]:
        counter = TokenCounter()
        rows = clean_steps(trace, counter)
        growth, ours, steps = clean_growth(trace, counter)
        assert (sum(g for g, _ in rows), sum(sum(k.values()) for _, k in rows), len(rows)) == (growth, ours, steps)
        checked += steps
    assert checked > 0
