"""Loading your own strategy: file paths, modules in the current directory, clear errors with file and
line, and the task key that follows the class's source (editing it never resumes stale results)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import strategies
from bench.run.runner import RunConfig, task_key

GOOD = """\
from dataclasses import dataclass
from strategies import Strategy


@dataclass(frozen=True)
class Mine(Strategy):
    name = "mine"
    keep: int = 3
"""


def write(tmp_path: Path, text: str, name: str = "mine.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_a_file_path_strategy_loads_with_parameters(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    s = strategies.build(f"{path}:Mine@keep=5")
    assert type(s).__name__ == "Mine" and s.keep == 5


def test_a_module_in_the_current_directory_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, GOOD, "h12_cwd_strategy.py")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.path", [p for p in __import__("sys").path if p not in ("", str(tmp_path))])
    assert strategies.build("h12_cwd_strategy:Mine").keep == 3


@pytest.mark.parametrize(("text", "match"), [
    ("from dataclasses import dataclass\nx = 1\nimport no_such_module_h12\n",
     r"mine\.py:3: ModuleNotFoundError: No module named 'no_such_module_h12'"),
    ("def broken(:\n    pass\n", r"mine\.py:1: SyntaxError"),
    ("from strategies import Strategy\n\n\nclass Mine(Strategy):\n    name = 'mine'\n",
     r"Mine \(.*mine\.py:4\) must be a \(frozen\) dataclass"),
    ("from dataclasses import dataclass\nfrom strategies import Strategy\n\n\n@dataclass(frozen=True)\n"
     "class Mine(Strategy):\n    name = 'mine'\n\n    def before_call(self, ctx):\n        return None\n",
     r"Mine\.before_call \(.*mine\.py:9\) must take \(self, ctx, session\)"),
])
def test_load_problems_name_file_and_line(tmp_path: Path, text: str, match: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(strategies.StrategyError, match=match):
        strategies.build(f"{path}:Mine")


def test_missing_file_or_class_is_clear(tmp_path: Path) -> None:
    with pytest.raises(strategies.StrategyError, match="no such file"):
        strategies.build(f"{tmp_path}/absent.py:Mine")
    path = write(tmp_path, GOOD)
    with pytest.raises(strategies.StrategyError, match="has no attribute 'Other'"):
        strategies.build(f"{path}:Other")


def test_editing_the_class_changes_the_task_key(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD, "edited.py")
    spec = strategies.parse_spec(f"{path}:Mine")
    before = task_key("sha", spec, RunConfig())
    path.write_text(GOOD + "\n    # a behaviour change, version not bumped\n")
    import sys
    for name in [n for n in sys.modules if n.startswith("_user_strategy_edited")]:
        del sys.modules[name]  # a new run is a new process: nothing cached
    assert task_key("sha", spec, RunConfig()) != before
    assert task_key("sha", spec, RunConfig()) == task_key("sha", spec, RunConfig())


def test_editing_a_helper_module_of_a_strategy_package_changes_the_source_hash(tmp_path: Path, monkeypatch) -> None:
    """strategies/codex/ and strategies/opencode/ keep their helpers beside the class (issue 24): a
    class two levels down hashes its whole package, so editing a helper replays again."""
    package = tmp_path / "hashpkg" / "agent"
    package.mkdir(parents=True)
    (tmp_path / "hashpkg" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text("LIMIT = 3\n")
    (package / "strategy.py").write_text(GOOD.replace("keep: int = 3", "keep: int = 3  # uses helper.LIMIT"))
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    cls = importlib.import_module("hashpkg.agent.strategy").Mine
    before = strategies.source_hash(cls)
    (package / "helper.py").write_text("LIMIT = 4\n")
    assert strategies.source_hash(cls) != before
    assert strategies.source_hash(strategies.build("codex").__class__) == strategies.source_hash(
        strategies.build("codex:remote").__class__)
