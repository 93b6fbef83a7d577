"""A run over the real Claude Code traces fills the fidelity columns for the strategy matching their version
(`claude-code:2.1.21` for these 2.1.39 sessions, strategies/versions.py) and shows them."""

from __future__ import annotations

import pandas as pd

from bench.cli.main import main

CC = "claude-code:2.1.21"
AUTO = ("258c7280-ae70-4798-800f-63464d01a85d.jsonl", "4d5611e5-241a-462a-8d15-5122611a9569.jsonl")


def test_fidelity_columns_are_filled_for_the_matching_strategy(shared_traces, tmp_path, capsys):
    files = [str(shared_traces / "claude-code__marot-spotter" / name) for name in AUTO]
    code = main(["run", "--traces", *files, "--strategies", CC, "none", "--workers", "1",
                 "--name", "f", "--out", str(tmp_path), "--quiet", "--no-report"])
    assert code == 0
    out = capsys.readouterr().out
    assert "Fidelity" in out and "recorded_call" in out
    table = pd.read_csv(tmp_path / "f" / "results.csv")
    cc = table[table.strategy == CC]
    assert len(cc) == 2
    assert cc.fidelity_recorded_call.notna().all() and cc.fidelity_replayed_call.notna().all()
    # driven by the recorded usage, the re-implementation fires at the very call the real agent did
    assert (cc.fidelity_call_delta == 0).all()
    assert set(cc.fidelity_recorded_pre_tokens) == {167_094, 170_251}
    assert table[table.strategy == "none"].fidelity_recorded_call.isna().all()
    fidelity = pd.read_csv(tmp_path / "f" / "fidelity.csv")
    assert set(fidelity.strategy) == {CC}
