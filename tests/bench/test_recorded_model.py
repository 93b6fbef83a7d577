"""--model recorded: each call windowed and priced as the model the trace recorded; --prices FILE."""

from __future__ import annotations

import pytest

import strategies
from bench.cost.pricing import UnknownModelError, add_prices, profile
from bench.replay.loop import ReplayConfig, replay
from bench.tokens.counter import TokenCounter
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
    from bench.cost import pricing

    monkeypatch.setattr(pricing, "_EXTRA", {})
    assert profile("acme-coder-1").is_fallback
    with pytest.raises(UnknownModelError, match="--prices FILE"):
        profile("acme-coder-1", strict=True)
    good = tmp_path / "p.toml"
    good.write_text('[models."acme-coder-1"]\nprovider = "acme"\ninput = 1.0\noutput = 2.0\ncache_read = 0.1\n'
                    'context_window = 64_000\nmax_output = 8_000\nmin_cache_prefix = 1_024\n', encoding="utf-8")
    assert add_prices(str(good)) == ["acme-coder-1"]
    assert profile("acme-coder-1").context_window == 64_000
    assert profile("acme-coder-1", strict=True).price_source == f"--prices {good}"
    bad = tmp_path / "bad.toml"
    bad.write_text('[models."x"]\nprovider = "acme"\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.toml.*lacks"):
        add_prices(str(bad))


def test_a_recorded_codex_window_becomes_the_input_limit() -> None:
    from bench.replay.loop import recorded_profile

    base = profile("gpt-5.3-codex")
    assert recorded_profile("gpt-5.3-codex", 258_400).max_input == 258_400
    assert recorded_profile("gpt-5.3-codex", None) is base
    assert recorded_profile("gpt-5.3-codex", 10_000_000) is base  # beyond the model's window: ignored


def test_a_run_prices_an_unknown_model_from_prices_file(tmp_path, monkeypatch, capsys) -> None:
    """An unknown model runs at the stated fallback and is flagged in one line (exit 0); --strict-prices
    refuses it before any work in at most two lines (exit 2); a --prices file prices it."""
    import json

    from bench.cli.main import main
    from bench.cost import pricing

    monkeypatch.setattr(pricing, "_EXTRA", {})
    args = ["run", "--traces", "synthetic:short", "--strategies", "none", "--model", "acme-coder-2",
            "--truth", "cl100k", "--workers", "1", "--out", str(tmp_path), "--quiet", "--no-report"]
    assert main([*args, "--name", "fallback"]) == 0
    err = capsys.readouterr().err
    flagged = [line for line in err.splitlines() if "acme-coder-2" in line]
    assert flagged == ["note: model acme-coder-2: no price in prices.toml or genai-prices 0.2.3; priced as the "
                       "generic default (3/15 per MTok, stated), window 128,000; pass --prices FILE or "
                       "--strict-prices"]
    assert json.loads((tmp_path / "fallback" / "run.json").read_text())["unpriced_models"] == ["acme-coder-2"]
    assert main([*args, "--name", "strict", "--strict-prices"]) == 2
    err = capsys.readouterr().err
    assert "--prices FILE" in err and len(err.strip().splitlines()) <= 2 and not (tmp_path / "strict").exists()
    prices = tmp_path / "acme.toml"
    prices.write_text('[models."acme-coder-2"]\nprovider = "acme"\ninput = 1.0\noutput = 2.0\ncache_read = 0.1\n'
                      'context_window = 400_000\nmax_output = 8_000\nmin_cache_prefix = 1_024\n', encoding="utf-8")
    assert main([*args, "--prices", str(prices), "--strict-prices"]) == 0
    assert "acme-coder-2" not in capsys.readouterr().err


def test_an_unknown_recorded_model_runs_flagged_and_strict_stops_before_its_trace(tmp_path) -> None:
    """Under --model recorded, a call's model no table knows (here after a known one) is noted once; under
    --strict-prices the run stops at that trace, naming the model, before it is replayed."""
    from bench.run.runner import RunConfig, _noting_unpriced

    msgs = (Message.text_message("user", "go"),
            Message.text_message("assistant", "a", meta={"model": "claude-opus-4-7"}),
            Message.text_message("user", "more"),
            Message.text_message("assistant", "b", meta={"model": "acme-coder-9"}))
    traces = [(0, Trace("t1", msgs, agent="claude-code", model="claude-opus-4-7")),
              (1, Trace("t2", msgs, agent="claude-code", model="claude-opus-4-7"))]
    unpriced: dict[str, str] = {}
    assert [t.id for _, t in _noting_unpriced(RunConfig(), iter(traces), unpriced)] == ["t1", "t2"]
    assert list(unpriced) == ["acme-coder-9"] and "priced as the generic default" in unpriced["acme-coder-9"]
    strict = _noting_unpriced(RunConfig(strict_prices=True), iter(traces), {})
    with pytest.raises(UnknownModelError, match="no price for model 'acme-coder-9'"):
        next(strict)


# --- the default: each real trace as the model it recorded, synthetic ones as the run's model -----------

def _recorded_trace(model: str, result: str = "") -> Trace:
    from traces.model import ToolResult, ToolUse

    msgs = [Message.text_message("system", "You are Codex."), Message.text_message("user", "go " * 300)]
    if result:
        msgs += [Message("assistant", (ToolUse("c0", "shell", {}),), meta={"model": model}),
                 Message("user", (ToolResult("c0", result),))]
    msgs.append(Message.text_message("assistant", "done " * 50, meta={"model": model}))
    return Trace(f"t-{model}", tuple(msgs), agent="codex", model=model)


def test_the_default_model_is_recorded_on_the_command_line_and_in_the_api() -> None:
    from bench.cli.main import parser
    from bench.cost.pricing import RECORDED
    from bench.run.runner import RunConfig

    args = parser().parse_args(["run"])
    assert args.model == RECORDED == RunConfig().model  # compaction_bench.run builds a RunConfig


def test_a_synthetic_trace_gets_the_run_model_and_a_recorded_one_its_own() -> None:
    """Under the default, a trace that records no model is billed as DEFAULT_MODEL (sonnet), one that
    records haiku as haiku; forcing --model applies that model to both."""
    from bench.cost.pricing import DEFAULT_MODEL
    from bench.run.runner import RunConfig, _trace_profile, run_task
    from traces.synthetic import generate

    synthetic = generate("short", seed=0)
    assert synthetic.model is None
    haiku = Trace("h", tuple(Message.text_message(m.role, m.text, meta={"model": "claude-haiku-4-5"})
                             if m.role == "assistant" else m for m in _switching_trace().messages),
                  agent="claude-code", model="claude-haiku-4-5")
    candidates = ("claude-haiku-4-5", DEFAULT_MODEL, "claude-opus-4-6")

    def billed_as(trace: Trace, config: RunConfig) -> set[str]:
        result = run_task(trace, TokenCounter(), strategies.parse_spec("none"), config)
        assert not result.error, result.error
        return {next((name for name in candidates if c.cost_no_cache == pytest.approx(
                     profile(name).cost_without_cache(c.prompt_tokens, c.output_tokens))), "?")
                for c in result.calls if c.kind == "agent"}

    default = RunConfig(truth="cl100k", executor="local", workers=1)
    assert billed_as(synthetic, default) == {DEFAULT_MODEL}
    assert billed_as(haiku, default) == {"claude-haiku-4-5"}
    forced = RunConfig(truth="cl100k", executor="local", workers=1, model="claude-opus-4-6")
    assert billed_as(synthetic, forced) == billed_as(haiku, forced) == {"claude-opus-4-6"}
    assert _trace_profile(default, synthetic).context_window == profile(DEFAULT_MODEL).context_window
    assert _trace_profile(default, _recorded_trace("gpt-5.1")).context_window == profile("gpt-5.1").context_window


def test_every_shared_trace_resolves_its_model_under_the_default(shared_traces) -> None:
    """Every model that occurs in ../shared/traces (per trace and per call) has a price and a window."""
    from bench.cost.pricing import profile_for, recorded_id
    from bench.replay.loop import recorded_profile
    from bench.run.runner import RunConfig
    from traces.formats import load

    result = load([str(shared_traces)])
    assert result.traces
    seen = set()
    for trace in result.traces:
        # strict: a model priced only by the fallback counts as unresolved
        seen.add(profile_for(RunConfig().model, trace.model, strict=True).canonical_id)
        for m in trace.messages:
            model = recorded_id(m.meta.get("model")) if m.role == "assistant" else None
            if model:
                p = recorded_profile(model, m.meta.get("context_window"))
                assert not p.is_fallback, f"{trace.source}: {p.price_source}"
                seen.add(p.canonical_id)
    assert len(seen) > 5  # many distinct models, not everything collapsed onto the default


def test_aider_cache_mark_and_model_less_records_resolve() -> None:
    from bench.cost.pricing import DEFAULT_MODEL, RECORDED, profile_for, recorded_id

    assert recorded_id("claude-3-5-sonnet-20240620\u26a1") == "claude-3-5-sonnet-20240620"
    assert recorded_id("replay") is None and recorded_id("<synthetic>") is None and recorded_id(None) is None
    assert profile_for(RECORDED, "replay").id == DEFAULT_MODEL


# --- the *-codex alias: the strategy sees the id the session used -----------------------------------

def test_an_alias_keeps_the_id_the_session_used_and_the_base_prices() -> None:
    alias, base = profile("gpt-5.1-codex"), profile("gpt-5.1")
    assert (alias.id, alias.canonical_id, base.id, base.canonical_id) == ("gpt-5.1-codex", "gpt-5.1", "gpt-5.1",
                                                                         "gpt-5.1")
    assert alias.rates == base.rates and alias.context_window == base.context_window


@pytest.mark.parametrize("as_forced", [False, True])
def test_a_codex_alias_trace_gets_token_truncation_and_its_base_byte_truncation(as_forced: bool) -> None:
    """models.json truncation_policy (strategies/codex/strategy.py): Tokens(10_000) for *-codex, Bytes(10_000)
    otherwise. A 40,000-byte tool output stays whole under the token budget (48,000 bytes) and is cut to
    12,000 bytes under the byte budget."""
    long = "".join(f"{i:07d}\n" for i in range(5_000))  # 40,000 bytes

    def kept(model: str) -> int:
        trace = _recorded_trace(model, long)
        run_model = profile(model) if as_forced else profile("claude-sonnet-4-5")
        config = ReplayConfig(run_model, recorded_models=not as_forced)
        result = replay(trace, strategies.build("codex"), config, counter=TokenCounter())
        cut = [e for e in result.events if e.hook == "on_tool_result"]
        return len(cut)

    assert kept("gpt-5.1-codex") == 0  # within Tokens(10_000): nothing cut
    assert kept("gpt-5.1") == 1  # Bytes(10_000): cut


def test_a_recorded_session_on_an_unknown_model_runs_flagged_and_strict_exits_2(tmp_path, capsys) -> None:
    """The whole command on a session file whose model no table knows: exit 0, one note naming the model
    and the fallback; with --strict-prices exit 2 and an error of at most two lines, no traceback."""
    from bench.cli.main import main
    from traces import native

    msgs = (Message.text_message("user", "inspect the logs " * 50),
            Message.text_message("assistant", "done", meta={"model": "acme-coder-7"}))
    path = native.write(Trace("acme", msgs, agent="claude-code", model="acme-coder-7"), tmp_path / "acme.cbt.jsonl")
    args = ["run", "--traces", str(path), "--strategies", "none", "--workers", "1", "--out", str(tmp_path),
            "--quiet", "--no-report"]
    assert main([*args, "--name", "ok"]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "acme-coder-7" in line]
    assert len(notes) == 1 and "priced as the generic default" in notes[0]
    assert main([*args, "--name", "strict", "--strict-prices"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("compaction-bench: error: no price for model 'acme-coder-7'") and len(err.splitlines()) <= 2
