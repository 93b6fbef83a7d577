"""compaction_bench, the Python API: run / load / compare from a real script, with no main guard."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import compaction_bench as cb

ROOT = Path(__file__).resolve().parent.parent


def run_script(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=180)


@pytest.mark.slow
def test_a_script_without_main_guard_runs_with_a_worker_pool(tmp_path: Path) -> None:
    done = run_script(tmp_path, """
        import compaction_bench as cb
        r = cb.run(traces=["synthetic:short"], strategies=["none", "codex"], name="api", out="out", workers=2)
        print("VERDICT", r.verdict.recommended)
        print("ROWS", len(r.table))
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ROWS 2" in done.stdout and "VERDICT " in done.stdout
    verdict = json.loads((tmp_path / "out" / "api" / "verdict.json").read_text())
    # synthetic:short never fills the window: no strategy acts, and the verdict says no compaction is needed
    assert verdict["ship"] is None and verdict["extra"]["no_compaction_needed"]


@pytest.mark.slow
def test_a_strategy_class_defined_in_the_script_runs(tmp_path: Path) -> None:
    done = run_script(tmp_path, """
        from dataclasses import dataclass
        import compaction_bench as cb
        from strategies import Strategy

        @dataclass(frozen=True)
        class Mine(Strategy):
            name = "mine"

        r = cb.run(traces=["synthetic:short"], strategies=["none", Mine], name="own", out="out", workers=2)
        print("STRATEGIES", sorted(r.summary.strategy))
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "script.py:Mine" in done.stdout


def test_unknown_option_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="unknown option.*colour.*it takes"):
        cb.run(traces=["synthetic:short"], strategies=["none"], colour="red")


def test_load_and_compare_a_run(tmp_path: Path) -> None:
    r = cb.run(traces=["synthetic:short"], strategies=["none", "codex@limit_fraction=0.5|0.7"], name="r",
               out=str(tmp_path), executor="local", workers=1, seeds=2)
    assert {"family", "param:limit_fraction"} <= set(r.table.columns)
    assert sorted(r.table["param:limit_fraction"].dropna().unique()) == [0.5, 0.7]
    again = cb.load(tmp_path / "r")
    assert again.verdict.recommended == r.verdict.recommended
    c = cb.compare(again, "codex@limit_fraction=0.5", "codex@limit_fraction=0.7")
    assert c["n"] == 2 and c["text"].startswith("codex@limit_fraction=0.7: ")


def test_new_strategy_writes_a_skeleton_whose_test_passes(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import importlib.util

    from bench.cli.main import main

    assert main(["new-strategy", "my-idea", "--dir", str(tmp_path / "mine")]) == 0
    assert "my_idea.py" in capsys.readouterr().out
    spec = importlib.util.spec_from_file_location("test_my_idea_h12", tmp_path / "mine" / "test_my_idea.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.test_my_idea_runs_and_saves(tmp_path / "run")  # the generated test, as pytest would call it
    assert main(["new-strategy", "my-idea", "--dir", str(tmp_path / "mine")]) == 2  # never overwrites
