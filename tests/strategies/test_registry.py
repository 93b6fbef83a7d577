"""The catalogue: names, variants, user strategies by module path and entry point, clear refusals."""

from __future__ import annotations

import sys
import textwrap

import pytest

import strategies
from strategies import StrategyError

PLUGIN = '''
from dataclasses import dataclass
from strategies import Strategy

@dataclass(frozen=True, kw_only=True)
class KeepAll(Strategy):
    """A user's strategy that never compacts."""
    name = "keep-all"
    citation = "a test plugin"
    patience: int = 3

class NotADataclass:
    name = "x"

@dataclass
class NotFrozen:
    name = "not-frozen"
    def on_tool_result(self, ctx, session): return None
    def before_call(self, ctx, session): return None
    def on_overflow(self, ctx, session): return None
    def project(self, ctx, session): return ctx

@dataclass(frozen=True, kw_only=True)
class BadHook(Strategy):
    name = "bad-hook"
    def before_call(self, ctx):
        return None
'''


@pytest.fixture
def plugin_module(tmp_path, monkeypatch):
    (tmp_path / "my_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "my_plugin"
    sys.modules.pop("my_plugin", None)


def test_module_path_strategy_builds_with_params(plugin_module):
    s = strategies.build(f"{plugin_module}:KeepAll@patience=7")
    assert s.name == "keep-all" and s.patience == 7


@pytest.mark.parametrize(("cls", "message"), [
    ("NotADataclass", "must be a \\(frozen\\) dataclass"),
    ("NotFrozen", "NotFrozen \\(.*my_plugin.py:\\d+\\) must be frozen"),
    ("BadHook", "BadHook.before_call .*must take \\(self, ctx, session\\)"),
    ("Missing", "has no attribute 'Missing'"),
])
def test_invalid_user_strategies_are_refused_naming_the_problem(plugin_module, cls, message):
    with pytest.raises(StrategyError, match=message):
        strategies.build(f"{plugin_module}:{cls}")


def test_undeclared_parameter_is_refused(plugin_module):
    with pytest.raises(StrategyError, match="has no parameter 'patiense'; it takes: estimator, patience"):
        strategies.build(f"{plugin_module}:KeepAll@patiense=2")


def test_misspelt_name_gets_did_you_mean():
    with pytest.raises(StrategyError, match="unknown strategy 'opencod'. Did you mean 'opencode'"):
        strategies.build("opencod")


def test_entry_point_strategy_is_found(tmp_path, monkeypatch, plugin_module):
    dist = tmp_path / "my_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent("""
        [compaction_bench.strategies]
        keep-all = my_plugin:KeepAll
    """))
    assert "keep-all" in strategies.names()
    assert strategies.build("keep-all@patience=1").patience == 1


def test_every_registered_strategy_builds_and_cites_its_source():
    for name in strategies.names():
        s = strategies.build(name)
        assert type(s).citation, f"{name} has no citation"
        assert type(s).__doc__ and len(type(s).__doc__) > 40, f"{name} has no docstring"


def test_spec_labels_round_trip():
    spec = strategies.parse_spec("opencode@prune_protect=30000,generation='tail'")
    assert spec.params == {"prune_protect": 30000, "generation": "tail"}
    assert strategies.parse_spec(spec.label) == spec
