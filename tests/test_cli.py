"""The command line end to end on a tiny trace: run, list, import, clear errors."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from bench.cli.main import main
from bench.replay.records import SCHEMA_VERSION
from traces import native
from traces.model import Message, ToolResult, ToolUse, Trace


@pytest.fixture
def trace_file(tmp_path):
    msgs = [Message.text_message("system", "sys"), Message.text_message("user", "inspect the logs")]
    for i in range(6):
        msgs.append(Message("assistant", (ToolUse(f"c{i}", "bash", {"command": f"cat {i}.log"}),)))
        msgs.append(Message("user", (ToolResult(f"c{i}", f"line {i}\n" * 300),)))
    msgs.append(Message.text_message("assistant", "done"))
    return native.write(Trace("tiny", tuple(msgs)), tmp_path / "tiny.cbt.jsonl")


def test_run_writes_every_output_and_prints_the_table(tmp_path, trace_file, capsys):
    code = main(["run", "--traces", str(trace_file), "--strategies", "none", "opencode", "--workers", "1",
                 "--name", "t", "--out", str(tmp_path / "out"), "--quiet", "--no-report"])
    assert code == 0
    out = capsys.readouterr().out
    assert "none" in out and "opencode" in out and "$/trace" in out
    run_dir = tmp_path / "out" / "t"
    for name in ("results.csv", "calls.csv", "events.jsonl", "summaries.jsonl", "run.json"):
        assert (run_dir / name).exists(), name
    results = pd.read_csv(run_dir / "results.csv")
    assert set(results.strategy) == {"none", "opencode"}
    calls = pd.read_csv(run_dir / "calls.csv")
    assert len(calls[(calls.kind == "agent") & (calls.strategy == "none")]) == 7
    info = json.loads((run_dir / "run.json").read_text())
    assert info["schema_version"] == SCHEMA_VERSION and info["config"]["model"] == "recorded"
    assert info["traces"][0]["sha256"] and info["tokenizer"] == "cl100k_base"
    assert {s["label"] for s in info["strategies"]} == {"none", "opencode"}


def test_a_second_run_resumes_finished_tasks(tmp_path, trace_file, capsys):
    args = ["run", "--traces", str(trace_file), "--strategies", "none", "--workers", "1",
            "--name", "r", "--out", str(tmp_path), "--quiet", "--no-report"]
    assert main(args) == 0
    first = (tmp_path / "r" / "results.csv").read_text()
    assert main(args) == 0
    assert "(1 resumed)" in capsys.readouterr().out
    assert (tmp_path / "r" / "results.csv").read_text() == first


def test_unknown_strategy_fails_before_any_replay(tmp_path, trace_file, capsys):
    out = tmp_path / "out"
    code = main(["run", "--traces", str(trace_file), "--strategies", "opencod", "--out", str(out), "--quiet"])
    assert code == 2
    assert "Did you mean 'opencode'" in capsys.readouterr().err
    assert not out.exists()


def test_unknown_model_is_refused_under_strict_prices(tmp_path, trace_file, capsys):
    assert main(["run", "--traces", str(trace_file), "--model", "gpt-9", "--out", str(tmp_path),
                 "--strict-prices"]) == 2
    assert "no price for model 'gpt-9'" in capsys.readouterr().err


def test_missing_trace_file_is_named(tmp_path, capsys):
    assert main(["run", "--traces", str(tmp_path / "nope.jsonl"), "--strategies", "none", "--out", str(tmp_path)]) == 2
    assert "nope.jsonl" in capsys.readouterr().err


def test_list_strategies_shows_citations_and_defaults(capsys):
    assert main(["list", "strategies"]) == 0
    out = capsys.readouterr().out
    assert "opencode" in out and "prune" in out.lower()


def test_import_writes_native_and_prints_a_line_per_trace(tmp_path, trace_file, capsys):
    assert main(["import", str(trace_file), "--out", str(tmp_path / "imp")]) == 0
    out = capsys.readouterr().out
    assert "tiny: unknown, 15 messages, 6 tool calls" in out and "replaced" not in out
    assert native.read(tmp_path / "imp" / "tiny.cbt.jsonl") == native.read(trace_file)
    assert main(["import", str(trace_file), "--out", str(tmp_path / "imp")]) == 0
    assert "(replaced the file that was there)" in capsys.readouterr().out


def test_missing_api_key_is_a_clear_error_before_any_replay(tmp_path, trace_file, capsys, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    out = tmp_path / "out"
    code = main(["run", "--traces", str(trace_file), "--strategies", "opencode", "--summarizer", "anthropic",
                 "--out", str(out), "--quiet"])
    assert code == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err
    assert not out.exists()


def test_a_threshold_sweep_expands_into_one_strategy_per_value(tmp_path, trace_file):
    from bench.run.runner import expand_grid

    assert expand_grid("opencode@prune_protect=20000|40000,prune_minimum=0|5") == [
        "opencode@prune_protect=20000,prune_minimum=0", "opencode@prune_protect=20000,prune_minimum=5",
        "opencode@prune_protect=40000,prune_minimum=0", "opencode@prune_protect=40000,prune_minimum=5"]
    assert expand_grid("opencode") == ["opencode"]
    code = main(["run", "--traces", str(trace_file), "--strategies", "none", "observation-masking@n=2|4", "none",
                 "--workers", "1", "--name", "s", "--out", str(tmp_path), "--quiet", "--no-report"])
    assert code == 0
    results = pd.read_csv(tmp_path / "s" / "results.csv")
    assert sorted(results.strategy) == ["none", "observation-masking@n=2", "observation-masking@n=4"]
    tokens = results.set_index("strategy").input_tokens
    assert tokens["observation-masking@n=2"] < tokens["observation-masking@n=4"] < tokens["none"]


def test_seeds_give_several_sessions_per_scenario(tmp_path, capsys):
    code = main(["run", "--traces", "synthetic:tiny", "--seeds", "2", "--seed", "5", "--strategies", "none",
                 "--workers", "1", "--name", "s", "--out", str(tmp_path), "--quiet", "--no-report"])
    assert code == 0
    assert sorted(pd.read_csv(tmp_path / "s" / "results.csv").trace) == ["synthetic/tiny/seed5", "synthetic/tiny/seed6"]
    assert main(["run", "--traces", "synthetic:tiny", "--seeds", "0", "--out", str(tmp_path), "--quiet"]) == 2
    assert "--seeds must be at least 1" in capsys.readouterr().err


def test_lenient_run_says_how_many_records_it_skipped_and_what_it_passed_over(tmp_path, trace_file, capsys):
    folder = tmp_path / "in"
    folder.mkdir()
    lines = trace_file.read_text().splitlines(keepends=True)
    (folder / "tiny.cbt.jsonl").write_text("".join(lines[:3]) + "{garbage\n" + "".join(lines[3:]))
    (folder / "notes.csv").write_text("a,b\n1,2\n")
    args = ["run", "--traces", str(folder), "--strategies", "none", "--workers", "1", "--out", str(tmp_path),
            "--quiet", "--no-report"]
    assert main(args) == 2
    assert "tiny.cbt.jsonl:4: bad message record" in capsys.readouterr().err
    assert main([*args, "--lenient"]) == 0
    err = capsys.readouterr().err
    assert "skipped 1 bad records (--lenient)" in err
    assert "passed over 1 files in no known format: notes.csv" in err


def test_a_folder_with_no_trace_is_an_error_naming_it(tmp_path, capsys):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "x.csv").write_text("a,b\n")
    (tmp_path / "empty.jsonl").write_text("")
    assert main(["run", "--traces", str(tmp_path / "in"), "--strategies", "none", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"no traces to replay in {tmp_path / 'in'}" in err and "x.csv" in err
    assert main(["import", str(tmp_path / "in"), "--out", str(tmp_path / "imp")]) == 2
    assert "no traces to import" in capsys.readouterr().err
    assert main(["import", str(tmp_path / "empty.jsonl"), "--out", str(tmp_path / "imp")]) == 2
    assert "empty.jsonl: empty file" in capsys.readouterr().err


def test_a_parameter_of_the_wrong_type_fails_before_any_replay(tmp_path, trace_file, capsys):
    out = tmp_path / "out"
    code = main(["run", "--traces", str(trace_file), "--strategies", "opencode@prune_protect=20000|abc",
                 "--out", str(out), "--quiet"])
    assert code == 2
    assert "parameter 'prune_protect' takes a number (default 40000), not 'abc'" in capsys.readouterr().err
    assert not out.exists()


def test_an_unknown_summarizer_model_fails_before_any_replay(tmp_path, trace_file, capsys):
    out = tmp_path / "out"
    assert main(["run", "--traces", str(trace_file), "--strategies", "none", "--summarizer-model", "gpt-9",
                 "--out", str(out), "--quiet", "--strict-prices"]) == 2
    assert "no price for model 'gpt-9'" in capsys.readouterr().err
    assert not out.exists()


def test_report_on_a_folder_that_is_not_a_run_is_a_clear_error(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert f"{tmp_path}: not a finished run folder (no run.json, results.csv, calls.csv)" in capsys.readouterr().err
    for name in ("results.csv", "calls.csv"):
        (tmp_path / name).write_text("a\n1\n")
    (tmp_path / "run.json").write_text("{bad")
    assert main(["report", str(tmp_path)]) == 2
    assert f"{tmp_path / 'run.json'}: bad JSON" in capsys.readouterr().err


def test_an_interrupted_run_keeps_its_finished_tasks_and_resumes(tmp_path, trace_file, capsys, monkeypatch):
    from bench.run import runner

    real, calls = runner.run_task, []

    def interrupted(*args):
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(runner, "run_task", interrupted)
    args = ["run", "--traces", str(trace_file), "--strategies", "none", "opencode", "--workers", "1",
            "--name", "i", "--out", str(tmp_path), "--quiet", "--no-report"]
    assert main(args) == 130
    assert "interrupted; finished tasks are saved" in capsys.readouterr().err
    monkeypatch.setattr(runner, "run_task", real)
    assert main(args) == 0
    assert "2 tasks (1 resumed)" in capsys.readouterr().out


def test_the_exact_spec_to_ship_builds_back_to_the_same_strategy():
    """`ship:` writes every scalar setting out; parsed again it is the very strategy the verdict chose."""
    import strategies
    from bench.cli.main import exact_spec

    for label in [*strategies.names(), "codex@limit_fraction=0.7"]:
        spec = exact_spec(label)
        assert strategies.build(spec) == strategies.build(label), label
    assert "limit_fraction=0.7" in exact_spec("codex@limit_fraction=0.7")
    assert "limit_fraction=0.9" in exact_spec("codex")  # a default is written out too
