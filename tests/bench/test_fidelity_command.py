"""Undriven fidelity: replayed on provider-attributed counts, the re-implementations compact where
the real agents did (compaction-bench fidelity)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bench.cli import main
from bench.fidelity_command import recorded_profile, rows
from traces.model import Trace


def _load(path):
    from traces.formats import load

    return load([str(path)]).traces


@pytest.mark.slow
def test_claude_code_fires_at_every_recorded_automatic_compaction(shared_traces):
    checked = 0
    for trace in _load(shared_traces / "claude-code__marot-spotter"):
        for row in rows(trace):
            if row["trigger"] != "auto":
                continue  # a manual /compact is the user's decision, not a trigger to reproduce
            assert row["replayed_call"] is not None, trace.id
            assert abs(row["call_delta"]) <= 1, row
            # provider units on both sides: the size the agent compacted at, within 10%
            assert abs(row["replayed_pre"] - row["recorded_pre"]) <= 0.1 * row["recorded_pre"], row
            checked += 1
    assert checked == 2


@pytest.mark.slow
def test_the_codex_compaction_was_not_its_local_trigger(shared_traces):
    """Codex compacts locally at 90% of the window its turn_context records (model_context_window);
    the one recorded compaction in ../shared/traces happened well below that (MANIFEST: a remote,
    server-side compaction), so the re-implementation must not fire before it."""
    folder = shared_traces / "codex__madshn-localpush"
    path = next(folder.glob("rollout-2026-02-23T12-54-34-*.jsonl"))
    windows = {json.loads(line)["payload"]["info"]["model_context_window"]
               for line in path.read_text(encoding="utf-8").splitlines()
               if '"model_context_window"' in line and '"token_count"' in line}
    (window,) = windows
    (trace,) = _load(path)
    assert {m.meta.get("context_window") for m in trace.messages if m.role == "assistant"} == {window}
    (recorded,) = trace.compactions
    assert recorded.pre_tokens < 0.9 * window  # 209,950 < 232,560: not Codex's local auto-compact
    (row,) = rows(trace)
    assert row["replayed_call"] is None or row["replayed_call"] >= row["recorded_call"]


@pytest.mark.slow
def test_driven_keeps_the_old_diagnostic(shared_traces):
    trace = next(t for t in _load(shared_traces / "claude-code__marot-spotter") if t.compactions
                 and t.compactions[0].trigger == "auto")
    (row,) = rows(trace, driven=True)
    assert row["call_delta"] == 0


def test_the_command_prints_a_row_per_recorded_compaction(shared_traces, capsys):
    path = shared_traces / "claude-code__marot-spotter" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    assert main(["fidelity", str(path)]) == 0
    out = capsys.readouterr().out
    assert "recorded_call" in out and "claude-code" in out and "61" in out


def test_an_unknown_recorded_model_names_the_file_to_write():
    trace = Trace("x", (), agent="claude-code", model="claude-future-9")
    with pytest.raises(ValueError, match="bench/data/prices.toml"):
        recorded_profile(trace)
    assert recorded_profile(replace(trace, model="claude-opus-4-6")).context_window == 200_000
