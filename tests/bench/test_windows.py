"""bench/cost/windows.py: a session is windowed as it ran (its recording, its agent's rules, what it sent).

Hand-built Claude Code sessions: a 1M session whose transcript names plain ``claude-opus-4-6``
must not be charged overflows on prompts the agent really sent, and the agent's strategy must not
compact there; a 200K session stays at 200K.
"""

from __future__ import annotations

import strategies
from bench.cost.pricing import profile
from bench.cost.windows import LONG_CONTEXT, session_windows
from bench.replay.loop import ReplayConfig, replay
from bench.tokens.counter import TokenCounter
from traces.model import Message, Trace, Usage


def _session(prompts: list[int], *, model: str = "claude-opus-4-6", version: str = "2.1.108",
             meta: dict | None = None) -> Trace:
    """One call per prompt size, each with recorded usage of that size."""
    msgs = []
    for i, p in enumerate(prompts):
        msgs.append(Message.text_message("user", f"step {i}: " + "lorem ipsum " * 50))
        msgs.append(Message.text_message("assistant", f"done {i}", meta={"model": model},
                                         usage=Usage(input_tokens=10, cache_read_tokens=p - 10, output_tokens=200)))
    return Trace("s", tuple(msgs), agent="claude-code", model=model, meta={"version": version, **(meta or {})})


def _window(trace: Trace, model: str = "claude-opus-4-6") -> tuple[int, str]:
    m = session_windows(trace).apply(profile(model))
    return m.context_window, m.window_source


def test_a_200k_session_keeps_the_standard_window() -> None:
    window, source = _window(_session([20_000, 90_000, 150_000]))
    assert window == profile("claude-opus-4-6").context_window == 200_000
    assert "session" not in source and "CHANGELOG" not in source


def test_a_prompt_over_the_window_proves_the_long_context_one() -> None:
    window, source = _window(_session([50_000, 180_000, 414_000]))
    assert window == LONG_CONTEXT
    assert "call 2 sent 414,200 tokens" in source


def test_the_recording_says_1m() -> None:
    trace = _session([30_000], meta={"window_hint": "1m", "window_evidence": "entire metadata.json model "
                                                                             "claude-opus-4-6[1m]"})
    window, source = _window(trace)
    assert window == LONG_CONTEXT and "claude-opus-4-6[1m]" in source
    haiku = session_windows(trace).apply(profile("claude-haiku-4-5"))
    assert haiku.context_window == profile("claude-haiku-4-5").context_window  # a side model keeps its own


def test_claude_code_runs_opus_4_7_at_1m_from_2_1_117() -> None:
    """CHANGELOG 2.1.117: Opus 4.7's native 1M window. The version before keeps 200K."""
    from dataclasses import replace

    from bench.cost.windows import SessionWindows

    opus47 = replace(profile("claude-opus-4-6"), id="claude-opus-4-7")

    def at(version: str) -> SessionWindows:
        return session_windows(_session([30_000], model="claude-opus-4-7", version=version))

    assert at("2.1.117").apply(opus47).context_window == LONG_CONTEXT
    assert "2.1.117" in at("2.1.144").apply(opus47).window_source
    assert at("2.1.116").apply(opus47).context_window == 200_000


def test_none_never_overflows_and_claude_code_never_compacts_a_1m_session() -> None:
    trace = _session([50_000, 180_000, 300_000, 414_000])
    counter = TokenCounter()
    from bench.replay.provider import adopt_shipped, shipped_counts

    adopt_shipped(counter, trace, shipped_counts(trace, TokenCounter()))
    config = ReplayConfig(profile("claude-opus-4-6"), recorded_models=True)
    none = replay(trace, strategies.build("none"), config, counter=counter)
    assert [c.overflow for c in none.calls] == [False] * 4
    cc = replay(trace, strategies.build("claude-code"), config, counter=counter)
    assert not [e for e in cc.events if e.kind in ("summarize", "handoff")]
    # The same session forced onto the standard window overflows: the rule is what keeps it whole.
    forced = replay(trace, strategies.build("none"), ReplayConfig(profile("claude-opus-4-6")), counter=counter)
    assert any(c.overflow for c in forced.calls)


def test_copilot_cli_runs_a_claude_model_at_its_default_tier() -> None:
    """Copilot CLI's default context tier holds a 1M model to ~200K (its compaction_start total of
    160,095 is 80% of it); the long_context tier keeps the model's window."""
    from dataclasses import replace

    fable = replace(profile("claude-opus-4-6"), id="claude-fable-5", context_window=LONG_CONTEXT)

    def copilot(tier: str) -> Trace:
        t = _session([30_000], model="claude-fable-5", version="1.0.74", meta={"context_tier": tier})
        return replace(t, agent="copilot-cli")

    default = session_windows(copilot("default")).apply(fable)
    assert default.context_window == 200_000 and "tier" in default.window_source
    assert session_windows(copilot("long_context")).apply(fable).context_window == LONG_CONTEXT


def test_copilot_cli_tiers_govern_the_window_from_1_0_52() -> None:
    """Changelog 1.0.52 (L992): the chosen tier (default ~200K, long_context 1M) constrains
    compaction from then on; a session that records no tier ran at the default one. Before
    1.0.52 the tier did not govern compaction: the model's own window stays."""
    from dataclasses import replace

    fable = replace(profile("claude-opus-4-6"), id="claude-fable-5", context_window=LONG_CONTEXT)
    small = replace(fable, context_window=200_000)

    def copilot(version: str, **meta) -> Trace:
        return replace(_session([30_000], model="claude-fable-5", version=version, meta=meta), agent="copilot-cli")

    assert session_windows(copilot("1.0.74")).apply(fable).context_window == 200_000  # no tier recorded
    assert session_windows(copilot("1.0.51", context_tier="default")).apply(fable).context_window == LONG_CONTEXT
    assert session_windows(copilot("1.0.74", context_tier="long_context")).apply(small).context_window == LONG_CONTEXT


def _opencode(model: str, provider: str, when: str) -> Trace:
    from dataclasses import replace

    from traces.formats._common import ts_seconds

    t = _session([30_000], model=model, version="1.4.3", meta={"provider": provider})
    stamped = tuple(replace(m, timestamp=ts_seconds(when)) for m in t.messages)
    return replace(t, agent="opencode", messages=stamped)


def test_opencode_runs_with_the_providers_limits_of_the_session_date() -> None:
    """OpenCode reads limits per provider from models.dev: github-copilot's Claude Sonnet 4.6 had
    200K context / 128K input / 32K output from cda892e0d (2026-03-19) to 6aa32ba56 (2026-05-28),
    128K context and no input limit before, 168K input after; the model's maker gives 1M."""
    sonnet = profile("claude-sonnet-4.6")

    def limits(provider: str, when: str, model: str = "claude-sonnet-4.6", base=sonnet):
        m = session_windows(_opencode(model, provider, when)).apply(base)
        return m.context_window, m.max_input, m.max_output

    assert limits("github-copilot", "2026-04-13T10:00:00Z") == (200_000, 128_000, 32_000)
    assert limits("github-copilot", "2026-03-01T10:00:00Z") == (128_000, None, 32_000)
    assert limits("github-copilot", "2026-07-01T10:00:00Z") == (200_000, 168_000, 32_000)
    assert limits("anthropic", "2026-04-13T10:00:00Z") == (sonnet.context_window, sonnet.max_input, sonnet.max_output)
    gpt = profile("gpt-5.1")
    assert limits("github-copilot", "2026-04-13T10:00:00Z", "gpt-5.4", gpt) == (400_000, 272_000, 128_000)
    assert limits("github-copilot", "2026-04-13T10:00:00Z", "gpt-5.4-mini", gpt)[1] == gpt.max_input  # whole ids
    source = session_windows(_opencode("claude-sonnet-4.6", "github-copilot", "2026-04-13T10:00:00Z")).apply(
        sonnet).window_source
    assert "models.dev@cda892e0d" in source
