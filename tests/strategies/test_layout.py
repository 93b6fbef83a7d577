"""The layout of strategies/: short modules, an agent's generations in a folder of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

import strategies
from strategies.gemini_cli.compression import GeminiCli
from strategies.openhands.summarizing import LLMSummarizing

ROOT = Path(strategies.__file__).parent
MAX_LINES = 300

def _modules() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_strategy_module_is_over_300_lines(path):
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(ROOT)} has {n} lines (at most {MAX_LINES}): split it by generation"


def test_every_registry_target_names_the_module_that_defines_its_class():
    """A target points at the class's own module, not at a package that re-exports it."""
    for name, (target, _) in strategies.REGISTRY.items():
        module, _, attr = target.partition(":")
        cls, _ = strategies.resolve(name)
        assert (cls.__module__, cls.__qualname__) == (module, attr), name


def test_an_agent_folder_hashes_its_shared_modules_too():
    """The task key follows an edit to a helper module the class does not inherit from
    (openhands/_common.py's ``render``; gemini_cli/outputs.py's cut text)."""
    assert ROOT / "openhands" / "_common.py" in strategies.source_files(LLMSummarizing)
    assert ROOT / "gemini_cli" / "outputs.py" in strategies.source_files(GeminiCli)
    assert strategies.source_files(strategies.resolve("aider")[0]) == [ROOT / "aider.py"]
    # a flat module: itself only; the harness's own modules (the Strategy base) are versioned apart
    assert strategies.source_files(strategies.Strategy) == [ROOT.parent / "bench" / "context" / "strategy.py"]


def test_an_edit_to_a_shared_module_changes_the_source_hash(monkeypatch):
    before = strategies.source_hash(LLMSummarizing)
    common = ROOT / "openhands" / "_common.py"
    read = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda p: read(p) + b"#" if p == common else read(p))
    assert strategies.source_hash(LLMSummarizing) != before
