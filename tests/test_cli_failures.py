"""A run in which every task fails says why, task by task, and exits 1 without a traceback."""

from __future__ import annotations

import sys

import pytest

from bench.cli.main import main
from tests.test_cli import trace_file  # noqa: F401  (the fixture)

PLUGIN = '''
from dataclasses import dataclass
from bench.context.strategy import Strategy

@dataclass(frozen=True, kw_only=True)
class Boom(Strategy):
    name = "boom"

    def before_call(self, ctx, session):
        raise RuntimeError("boom strategy gave up on purpose")
'''


@pytest.fixture
def boom(tmp_path, monkeypatch):
    (tmp_path / "boom_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "boom_plugin:Boom"
    sys.modules.pop("boom_plugin", None)


def run_args(trace, out, *strategies):
    return ["run", "--traces", str(trace), "--strategies", *strategies, "--workers", "1", "--executor", "local",
            "--name", "f", "--out", str(out), "--quiet"]


def test_a_run_where_every_task_fails_prints_each_error_and_exits_1(tmp_path, trace_file, boom, capsys):  # noqa: F811
    code = main(run_args(trace_file, tmp_path / "out", boom))
    captured = capsys.readouterr()
    assert code == 1
    assert "Traceback" not in captured.err + captured.out
    assert "error: tiny × boom_plugin:Boom: RuntimeError: boom strategy gave up on purpose" in captured.err
    assert "every task failed (1)" in captured.err
    assert not (tmp_path / "out" / "f" / "report.html").exists()


def test_report_on_a_run_where_every_task_failed_says_there_is_nothing_to_show(tmp_path, trace_file, boom,  # noqa: F811
                                                                                 capsys):
    main(run_args(trace_file, tmp_path / "out", boom))
    capsys.readouterr()
    assert main(["report", str(tmp_path / "out" / "f")]) == 1
    err = capsys.readouterr().err
    assert "nothing to show: every task failed (1)" in err and "boom strategy gave up on purpose" in err


def test_a_run_where_some_tasks_fail_still_reports_the_others(tmp_path, trace_file, boom, capsys):  # noqa: F811
    code = main(run_args(trace_file, tmp_path / "out", boom, "none"))
    captured = capsys.readouterr()
    assert code == 1
    assert "error: tiny × boom_plugin:Boom" in captured.err and "every task failed" not in captured.err
    assert (tmp_path / "out" / "f" / "report.html").exists()
    assert main(["report", str(tmp_path / "out" / "f")]) == 0


def test_a_session_that_fails_every_strategy_alike_is_named_once(capsys) -> None:
    """One cause (a refused model, an unreadable record) fails each task of a session alike: one line
    per session, its first line of error, not one 2 KB block per task."""
    from bench.cli.main import _print_errors

    long = "UnknownModelError: no price for 'acme-1'.\n" + "Known: " + ", ".join(f"m{i}" for i in range(500))
    _print_errors([("s1", "none", long), ("s1", "codex", long), ("s1", "aider", long), ("s1", "amp", long),
                   ("s2", "none", "KeyError: 'x'")])
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["error: s1 × 4 strategies (none, codex, aider, …): UnknownModelError: no price for 'acme-1'.",
                     "error: s2 × none: KeyError: 'x'"]


def test_reusing_a_name_with_other_settings_is_said(tmp_path, capsys) -> None:
    from bench.cli.main import main

    base = ["run", "--traces", "synthetic:short", "--truth", "cl100k", "--workers", "1", "--out", str(tmp_path),
            "--quiet", "--no-report"]
    assert main([*base, "--strategies", "none"]) == 0
    assert "held an earlier run" not in capsys.readouterr().err
    assert main([*base, "--strategies", "none"]) == 0  # the same run again: a resume, nothing to say
    assert "held an earlier run" not in capsys.readouterr().err
    assert main([*base, "--strategies", "none", "codex"]) == 0
    assert "held an earlier run with other strategies: its results and report are replaced" in capsys.readouterr().err
