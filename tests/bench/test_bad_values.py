"""Issue 23: a bad value never costs a finished result.

A folder of two good sessions and one bad one (hand-built): strictly the bad one is named with its
line and field; with --lenient it is repaired and counted; and when a bad value gets past the
importers (a trace built in Python, here the limit lifted) the task store keeps the good sessions'
results, which resume on a re-run, and names the bad one as a failed row. No negative dollar
figure comes out of negative usage in either of two formats, strict or lenient.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd
import pytest

from bench.cli.main import main
from bench.replay.records import CallRecord, TaskResult
from bench.run.runner import RunConfig, run
from bench.run.store import Store, failed_output, load_results, row_problem, task_output
from tests.traces import agent_sessions
from tests.traces.test_claude_code import SAMPLE

MODEL = "claude-sonnet-4-5"


def _session(session: str, output_tokens: object = 40) -> str:
    """A Claude Code session (SAMPLE) of its own id and text, with a known model; its last line (12),
    the final answer, carries the usage whose ``output_tokens`` is given."""
    recs = copy.deepcopy(SAMPLE)
    for r in recs:
        if "sessionId" in r:
            r["sessionId"] = session
        msg = r.get("message")
        if isinstance(msg, dict) and msg.get("role") == "assistant":
            msg["model"] = MODEL
        if isinstance(msg, dict) and msg.get("content") == "run tests":
            msg["content"] = f"run the tests of {session}"
    recs[-1]["message"]["usage"]["output_tokens"] = output_tokens
    return "".join(json.dumps(r) + "\n" for r in recs)


@pytest.fixture
def folder(tmp_path) -> Path:
    d = tmp_path / "sessions"
    d.mkdir()
    (d / "a-good.jsonl").write_text(_session("good-a"))
    (d / "b-bad.jsonl").write_text(_session("bad-b", 1e300))
    (d / "c-good.jsonl").write_text(_session("good-c"))
    return d


def _config(folder: Path, out: Path, **kw) -> RunConfig:
    return RunConfig(traces=(str(folder),), strategies=("none", "opencode"), model=MODEL, workers=1,
                     executor="local", out=str(out), name="r", csv="no", **kw)


def test_strict_names_the_bad_session_its_line_and_field_and_points_to_lenient(folder, tmp_path, capsys):
    code = main(["run", "--traces", str(folder), "--strategies", "none", "--model", MODEL, "--workers", "1",
                 "--executor", "local", "--out", str(tmp_path / "out"), "--quiet", "--no-report"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"{folder / 'b-bad.jsonl'}:12: field 'output_tokens' is " in err
    assert "--lenient would skip or repair it and count it" in err
    assert len([line for line in err.splitlines() if line.strip()]) <= 2


def test_lenient_repairs_and_counts_the_bad_value_and_every_session_is_stored_and_resumes(folder, tmp_path):
    first = run(_config(folder, tmp_path / "out", lenient=True), progress=False)
    assert any("b-bad.jsonl: repaired 1 count out of range (dropped)" in n for n in first.notes)
    recorded = json.loads((first.run_dir / "run.json").read_text())["import_notes"]
    assert any("b-bad.jsonl: repaired 1 count out of range (dropped)" in n for n in recorded)  # the run's files
    table = first.table
    assert len(table) == 6 and (table.error.fillna("") == "").all()
    again = run(_config(folder, tmp_path / "out", lenient=True), progress=False)
    assert again.resumed == 6


def test_a_bad_value_past_the_importers_fails_its_tasks_only_and_the_good_ones_resume(folder, tmp_path,
                                                                                      monkeypatch):
    """The limit lifted, 1e300 gets into a trace (as from Python code): it used to crash the Parquet
    write (OverflowError) and lose every task of its batch, on every re-run."""
    import traces.formats._common as common

    monkeypatch.setattr(common, "MAX_COUNT", 2**1100)
    out = run(_config(folder, tmp_path / "out"), progress=False)
    table = out.table.set_index(["trace", "strategy"])
    errors = table.error.fillna("")
    bad = [t for t in table.index.get_level_values(0).unique() if t.startswith("bad-b")]
    assert bad and all("unstorable result" in errors[(bad[0], s)] for s in ("none", "opencode"))
    good = errors[[t != bad[0] for t in table.index.get_level_values(0)]]
    assert len(good) == 4 and (good == "").all()
    assert sorted({t for t, _, _ in out.errors}) == bad  # the bad one is named
    stored = load_results(out.run_dir)
    assert len(stored) == 6
    again = run(_config(folder, tmp_path / "out"), progress=False)
    assert again.resumed == 4  # the good sessions' finished tasks; the bad one runs again
    assert sorted({t for t, _, _ in again.errors}) == bad


def _good(key: str) -> object:
    return task_output(key, TaskResult(f"trace-{key}", "none"), None)


def test_a_batch_write_isolates_a_row_that_cannot_be_stored(tmp_path):
    store = Store(tmp_path / "run", batch_tasks=100)
    store.add(_good("k1"))
    good = _good("k2")
    bad = type(good)("k3", {**good.row, "trace": "trace-k3", "input_tokens": 2**64}, {"probes": [{"x": 1}]})
    clash = type(good)("k4", {**good.row, "trace": "trace-k4", "calls": "three"})  # a column of another type
    store.add(bad)
    store.add(good)
    store.add(clash)
    store.add(_good("k5"))
    store.flush()
    assert store.done() == {"k1", "k2", "k5"}
    from bench.run.store import _parts, read_parts

    rows = read_parts(_parts(store.data, "results")).to_pandas().set_index("key")
    assert "unstorable result" in rows.loc["k3", "error"] and rows.loc["k3", "trace"] == "trace-k3"
    assert "unstorable result" in rows.loc["k4", "error"]
    assert not (store.data / "probes").exists() or "k3" not in set(
        read_parts(_parts(store.data, "probes")).column("key").to_pylist())


def test_task_output_never_raises_and_names_why(tmp_path):
    call = CallRecord("t", "none", 0, "agent", 2, 2**64, 10, 0, 0, 2**64, 5, 1.0, 1.0, False, False, 0.0)
    out = task_output("k", TaskResult("t", "none", calls=[call]), None)
    assert out.error.startswith("unstorable result") and not out.tables
    assert row_problem({"a": 2**63}) and row_problem({"a": [1, {"b": -(2**64)}]})
    assert not row_problem({"a": 2**63 - 1, "b": [1, 2], "c": "x" * 100})
    assert failed_output("k", "t", "s", "why").row["error"] == "why"


def _gemini_negative(tmp_path: Path) -> Path:
    recs, _ = agent_sessions.gemini_session()
    for r in recs:
        if "tokens" in r:
            r["tokens"]["input"] = -5_000_000
            r["tokens"]["cached"] = -7
            break
    folder = tmp_path / "gem"
    folder.mkdir()
    agent_sessions.write_jsonl(folder / "session-2026-05-01T10-00-gem1.jsonl", recs)
    return folder


def _claude_negative(tmp_path: Path) -> Path:
    folder = tmp_path / "cc"
    folder.mkdir()
    (folder / "neg.jsonl").write_text(_session("neg", -1e30).replace('"input_tokens": 2,', '"input_tokens": -5,'))
    return folder


@pytest.mark.parametrize("make", [_gemini_negative, _claude_negative], ids=["gemini-cli", "claude-code"])
def test_negative_usage_never_gives_a_negative_dollar_figure(tmp_path, make, capsys):
    folder = make(tmp_path)
    assert main(["run", "--traces", str(folder), "--strategies", "none", "--workers", "1", "--executor", "local",
                 "--out", str(tmp_path / "strict"), "--quiet", "--no-report"]) == 2
    assert "is -" in capsys.readouterr().err
    out = run(RunConfig(traces=(str(folder),), strategies=("none", "opencode"), workers=1, executor="local",
                        out=str(tmp_path / "out"), name="r", lenient=True, csv="yes"), progress=False)
    table = out.table
    assert (table.error.fillna("") == "").all()
    money = [c for c in table.columns if "cost" in c or c.startswith("$")]
    assert money and all((pd.to_numeric(table[c], errors="coerce").dropna() >= 0).all() for c in money)
    calls = pd.read_csv(out.run_dir / "calls.csv")
    assert len(calls) and (calls.cost >= 0).all() and (calls.cost_no_cache >= 0).all()
    assert (calls[["prompt_tokens", "cache_read", "cache_write", "uncached", "output_tokens"]] >= 0).all().all()
