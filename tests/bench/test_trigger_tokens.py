"""``trigger_tokens``: an absolute trigger for any strategy whose trigger is a share of the window
(bench.context.strategy ``arm_trigger_tokens``), in specs and in ``tune``."""

from __future__ import annotations

import pickle

import pytest

import strategies
from bench.context import Session
from bench.context.strategy import _set_for, _share_param
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.run.tune import search_space
from bench.tokens import TokenCounter
from traces.synthetic import generate

MODELS = ("claude-sonnet-4-5", "claude-sonnet-4-5[1m]", "gpt-5")


def solved(spec: str, model: str) -> strategies.Strategy:
    s = strategies.build(spec)
    return _set_for(s, _share_param(s), Session(profile(model), None, None))  # type: ignore[arg-type]


@pytest.mark.parametrize("model", MODELS)
def test_the_share_is_solved_so_the_agents_own_threshold_lands_on_the_tokens(model: str) -> None:
    """After the agent's own reserves and buffers (Claude Code: the window less 20K, less a 13K buffer
    after the share), per model: the same 150K on a 200K, a 1M and a 272K-input window."""
    session = Session(profile(model), None, None)  # type: ignore[arg-type]
    assert abs(solved("claude-code@trigger_tokens=150000", model).autocompact_threshold(session) - 150_000) <= 1
    assert abs(solved("five-layer@trigger_tokens=150000", model).autocompact_threshold(session) - 150_000) <= 1
    assert solved("cline:sdk@trigger_tokens=150000", model).trigger(session.model) == pytest.approx(150_000)
    assert solved("goose@trigger_tokens=150000", model).threshold == pytest.approx(
        150_000 / profile(model).context_window)


def test_a_share_trigger_is_unchanged_without_trigger_tokens_and_nothing_is_wrapped() -> None:
    plain = strategies.build("claude-code")
    assert plain.trigger_tokens is None and "before_call" not in plain.__dict__
    assert strategies.build("claude-code@trigger_tokens=150000") != plain


def test_an_agents_own_absolute_trigger_is_set_directly() -> None:
    assert strategies.build("codex@trigger_tokens=150000").auto_compact_limit == 150_000  # Codex caps it at 90%
    assert strategies.build("anthropic-clear-tool-uses@trigger_tokens=80000").trigger == 80_000
    assert strategies.build("amp@trigger_tokens=80000").threshold == 80_000
    assert strategies.build("goose@trigger_tokens=1.5e5").trigger_tokens == 150_000


@pytest.mark.parametrize("spec, words", [
    ("tiered-placeholders@trigger_tokens=150000", "has no share-of-the-window trigger"),
    ("claude-code@trigger_tokens=0", "above 0"),
    ("claude-code@trigger_tokens=1.5", "whole number"),
])
def test_what_cannot_take_an_absolute_trigger_is_refused_at_build(spec: str, words: str) -> None:
    with pytest.raises(strategies.StrategyError, match=words):
        strategies.build(spec)


def test_a_strategy_with_trigger_tokens_survives_pickling() -> None:
    """The process executor ships tasks to workers; a strategy built there or sent there keeps its trigger."""
    s = pickle.loads(pickle.dumps(strategies.build("claude-code@trigger_tokens=150000")))
    assert s.before_call.strategy is s and s.trigger_tokens == 150_000


def first_compaction(spec: str, trace) -> int:
    r = replay(trace, strategies.build(spec), ReplayConfig(profile(trace.model or "claude-sonnet-4-5"),
                                                            recorded_models=True), counter=TokenCounter())
    return next(e.tokens_before for e in r.events if e.kind == "summarize")


def test_a_replay_compacts_at_the_absolute_trigger_on_a_200k_and_a_1m_window() -> None:
    """On 200K Claude Code compacts near 167K; at trigger_tokens=100000 near 100K, on the 1M window too
    (where its share would wait for ~967K: late_trigger)."""
    trace = generate("long@tokens=300000", seed=0)
    default, absolute = first_compaction("claude-code", trace), first_compaction("claude-code@trigger_tokens=100000",
                                                                                  trace)
    assert default > 150_000 and 100_000 <= absolute < 115_000, (default, absolute)
    big = generate("window-1m@tokens=300000", seed=0)
    assert 100_000 <= first_compaction("claude-code@trigger_tokens=100000", big) < 115_000


def test_tune_sweeps_the_trigger_in_tokens_and_leaves_the_share_it_replaces() -> None:
    search = search_space("claude-code@trigger_tokens=100000|150000")
    assert search.grid == {"trigger_tokens": (100_000, 150_000)} and search.source == {"trigger_tokens": "given"}
    assert search.labels() == ["claude-code@trigger_tokens=100000", "claude-code@trigger_tokens=150000"]
    assert search_space("codex@trigger_tokens=100000|150000").grid == {"trigger_tokens": (100_000, 150_000)}
    assert "limit_fraction" in search_space("codex").grid  # the declared grid without trigger_tokens
    with pytest.raises(strategies.StrategyError, match="no share-of-the-window trigger"):
        search_space("tiered-placeholders@trigger_tokens=100000|150000")
