"""Issue 23: strategy parameters are checked against their range before any replay.

A strategy declares the range of a parameter its agent documents (``ranges``, bench.context.strategy.Range);
every other numeric parameter follows the generic rule of ``strategies.check_params``: finite, a
share of the window in (0, 1], any other number in [0, 2^53). The error names the parameter and its
range.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import pytest

import strategies
from bench.cli.main import main
from bench.context.strategy import FRACTION, Range, Strategy
from tests.test_cli import trace_file  # noqa: F401  (the fixture)


@pytest.mark.parametrize(("value", "says"), [
    ("-5", "is -5, outside its range [0, 2^53) (declared by the strategy)"),
    ("1e30", "is 1e+30, outside its range [0, 2^53)"),
    ("1e400", "is inf: it takes a finite number in [0, 2^53)"),
    ("1.5", "takes a whole number in [0, 2^53) (default 40000), not 1.5"),
    ("True", "takes a number (default 40000), not True"),
])
def test_opencode_prune_protect_out_of_range_is_refused_naming_the_range(value, says):
    with pytest.raises(strategies.StrategyError) as e:
        strategies.build(f"opencode@prune_protect={value}")
    assert f"parameter 'prune_protect' {says}" in str(e.value)


@pytest.mark.parametrize(("spec", "says"), [
    ("codex@limit_fraction=2", "'limit_fraction' is 2, outside its range (0, 1] (declared by the strategy)"),
    ("codex@effective_window_percent=101",
     "'effective_window_percent' is 101, outside its range (0, 100] (declared by the strategy)"),
    ("amp@bytes_per_token=0", "'bytes_per_token' is 0, outside its range (0, 2^53)"),
    ("gemini-cli@threshold=0", "'threshold' is 0, outside its range (0, 1]"),
    ("goose@threshold=1.5", "'threshold' is 1.5, outside its range (0, 1] (a share of the window)"),
    ("observation-masking@n=-1", "'n' is -1, outside its range [0, 2^53) (a count or threshold)"),
    ("claude-code@persist_pct=2", "'persist_pct' is 2, outside its range (0, 1] (a share of the window)"),
    ("opencode@auto=1", "'auto' takes True or False (default True), not 1"),
])
def test_declared_and_generic_ranges(spec, says):
    with pytest.raises(strategies.StrategyError) as e:
        strategies.build(spec)
    assert f"parameter {says}" in str(e.value)


@pytest.mark.parametrize("spec", ["opencode@prune_protect=0", "opencode@prune_protect=30000", "goose@threshold=1",
                                  "cline-half@dedup_threshold=0", "openhands@minimum_progress=0",
                                  "codex@limit_fraction=0.5", "anthropic-clear-tool-uses@trigger=1e5",
                                  "codex@auto_compact_limit=256000", "gemini-cli@token_limit=100000"])
def test_values_inside_their_range_build(spec):
    strategies.build(spec)


def test_the_whole_registry_builds_with_its_defaults_and_lists(capsys):
    for name in strategies.names():
        strategies.build(name)
    assert main(["list", "strategies"]) == 0
    assert "opencode" in capsys.readouterr().out


@dataclass(frozen=True, kw_only=True)
class Mine(Strategy):
    name = "mine"
    ranges = {"keep": Range(1, 10)}
    keep: int = 3
    share: float = 0.5


def test_a_user_class_declares_its_ranges(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "Mine", Mine)
    with pytest.raises(strategies.StrategyError, match=r"'keep' is 11, outside its range \[1, 10\]"):
        strategies.build(f"{__name__}:Mine@keep=11")
    with pytest.raises(strategies.StrategyError, match=r"'share' is 0, outside its range \(0, 1\]"):
        strategies.build(f"{__name__}:Mine@share=0")
    assert strategies.build(f"{__name__}:Mine@keep=10,share=1").keep == 10
    assert 0.5 in FRACTION and 0 not in FRACTION and True not in FRACTION


def test_a_run_refuses_an_absurd_parameter_before_any_replay(tmp_path, trace_file, capsys):  # noqa: F811
    out = tmp_path / "out"
    for value in ("-5", "1e30", "1e400"):
        code = main(["run", "--traces", str(trace_file), "--strategies", "none", f"opencode@prune_protect={value}",
                     "--out", str(out), "--quiet"])
        err = capsys.readouterr().err
        assert code == 2 and "parameter 'prune_protect'" in err and "[0, 2^53)" in err and "Traceback" not in err
        assert not out.exists()
