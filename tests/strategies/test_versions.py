"""strategies.versions: a recorded (agent, version) picks the registry generation that matches it."""

from __future__ import annotations

import pytest

import strategies
from strategies.versions import GENERATIONS, matching_strategy, parse_version


@pytest.mark.parametrize(("text", "parsed"), [
    ("1.0.43", (1, 0, 43)), ("v0.140.2-alpha.1", (0, 140, 2)), ("2.1.38", (2, 1, 38)),
    ("0.104.0-alpha.1", (0, 104, 0)), ("", None), (None, None), ("unknown", None),
])
def test_parse_version(text, parsed):
    assert parse_version(text) == parsed


@pytest.mark.parametrize(("agent", "version", "strategy"), [
    ("claude-code", "1.0.43", "claude-code:1.0"),
    ("claude-code", "2.1.38", "claude-code:2.1.21"),
    ("claude-code", None, "claude-code"),  # no version: today's generation
    ("codex", "0.46.0", "codex:2025"),
    ("codex", "0.60.0", "codex"),
    ("codex", "0.77.0", "codex:remote"),  # no provider recorded: Codex's default, OpenAI
    ("codex", "0.104.0-alpha.1", "codex:remote"),
    ("codex", "0.140.0", "codex:0.140-remote"),
    ("codex", "garbage", "codex:0.140-remote"),
    ("cline", "3.20.1", "cline:sdk"),
    ("openhands", "0.59.0", "openhands:v0"),
    ("openhands", "1.2.0", "openhands"),
    ("mystery-agent", "1.0", None),
])
def test_matching_strategy_picks_the_generation(agent, version, strategy):
    assert matching_strategy(agent, version) == strategy


@pytest.mark.parametrize(("version", "provider", "strategy"), [
    ("0.104.0", "openai", "codex:remote"), ("0.104.0", "OpenAI", "codex:remote"),
    ("0.104.0", "ollama", "codex"), ("0.104.0", "azure", "codex"),  # is_openai() only, then
    ("0.140.0", "azure", "codex:0.140-remote"), ("0.140.0", "oss", "codex:0.140"),
    (None, "lmstudio", "codex:0.140"), ("0.46.0", "openai", "codex:2025"),
])
def test_codex_compacts_remotely_only_for_the_providers_that_support_it(version, provider, strategy):
    assert matching_strategy("codex", version, provider) == strategy


def test_the_fidelity_command_reads_the_recorded_provider():
    from bench.scoring.fidelity import matching_strategy as for_trace
    from traces.model import Trace

    trace = Trace("x", (), agent="codex", meta={"cli_version": "0.104.0-alpha.1", "model_provider": "openai"})
    assert for_trace(trace) == "codex:remote"
    local = Trace("y", (), agent="codex", meta={"cli_version": "0.104.0", "model_provider": "ollama"})
    assert for_trace(local) == "codex"


def test_every_generation_names_a_registry_variant_and_cites_its_evidence():
    for g in GENERATIONS:
        assert g.strategy in strategies.REGISTRY, g
        assert g.source, g
        strategies.build(g.strategy)


def test_ranges_of_one_agent_and_provider_set_do_not_overlap():
    """Rows of one agent may overlap only across provider sets (Codex: remote rows for OpenAI
    first, the local rows behind them for everyone else)."""
    by_agent: dict[tuple, list] = {}
    for g in GENERATIONS:
        by_agent.setdefault((g.agent, g.providers), []).append(g)
    for rows in by_agent.values():
        probes = {v for g in rows for v in (g.since, g.until) if v is not None} | {(0,), (99, 0)}
        for v in probes:
            assert sum(g.covers(v) for g in rows) <= 1, (rows[0].agent, v)


def test_claude_code_1_0_triggers_at_window_less_32k_less_13k(counter):
    from bench.context.messages import Meter
    from bench.context.session import Session
    from bench.cost.pricing import profile
    from bench.summarizers.extractive import ExtractiveSummarizer

    session = Session(profile("claude-sonnet-4-5"), Meter(counter), ExtractiveSummarizer())
    old, new = strategies.build("claude-code:1.0"), strategies.build("claude-code")
    assert old.autocompact_threshold(session) == 155_000  # 200K - 32K - 13K (the recorded 1.0.53 session)
    assert new.autocompact_threshold(session) == 167_000  # 200K - 20K - 13K


def test_codex_limit_is_90_percent_of_the_raw_window_for_every_generation():
    """openai_models.rs auto_compact_token_limit: 90% of the raw window (272,000 → 244,800); the
    95% effective window is what the rollout records, not what the 90% applies to."""
    for name in ("codex", "codex:0.140", "codex:remote", "codex:0.125-remote", "codex:0.140-remote"):
        assert strategies.build(name).limit(272_000) == pytest.approx(244_800), name
