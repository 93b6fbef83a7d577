"""The cache ledger of a run over recorded sessions: written beside the other tables, shown in the report."""

from __future__ import annotations

import pandas as pd
import pytest

from bench.cli.main import main
from bench.scoring.ledger_check import cached_blocks, ledger_gap
from reports.ledger import finding, per_session
from traces.formats import load
from traces.model import recorded_calls

SMALL = ("short.jsonl", "tool_heavy.jsonl")


def _recorded(trace) -> tuple[int, int, int]:
    """The recorded split summed over the calls before the first recorded compaction, from the trace itself."""
    first = min(recorded_calls(trace), default=trace.n_calls)
    usage = [m.usage for m in trace.messages if m.role == "assistant"][:first]
    return (sum(u.cache_read_tokens for u in usage if u), sum(u.cache_write_tokens for u in usage if u),
            sum(u.input_tokens for u in usage if u))


def test_a_run_over_recorded_claude_code_sessions_writes_the_ledger_and_reports_it(shared_traces, tmp_path):
    files = [str(shared_traces / "claude-code__marot-spotter" / name) for name in SMALL]
    code = main(["run", "--traces", *files, "--strategies", "none", "claude-code", "--workers", "1",
                 "--name", "l", "--out", str(tmp_path), "--quiet"])
    assert code == 0
    ledger = pd.read_csv(tmp_path / "l" / "ledger.csv")
    traces = {t.id: t for t in load(files).traces}
    assert set(ledger.trace) == set(traces) and set(ledger.strategy) == {"none", "claude-code"}
    for _, row in ledger.iterrows():
        split = (row.recorded_cache_read, row.recorded_cache_write, row.recorded_uncached)
        assert split == _recorded(traces[row.trace])
        ours = row.ours_cache_read + row.ours_cache_write + row.ours_uncached
        recorded = row.recorded_cache_read + row.recorded_cache_write + row.recorded_uncached
        assert ours == pytest.approx(recorded, rel=0.01)  # the same prompts (provider-attributed), split differently
        assert row.ours_hit == pytest.approx(row.ours_cache_read / ours)
    assert (tmp_path / "l" / "data" / "ledger").is_dir()  # in the Parquet store too, not only the export
    page = (tmp_path / "l" / "report.html").read_text(encoding="utf-8")
    section = page[page.index("<h3 id=ledger>"):]
    assert all(t in section for t in traces)
    assert "sessions agree within" in section


def test_codex_reads_are_counted_in_whole_128_token_blocks(shared_traces):
    import strategies
    from bench.cli.fidelity import recorded_profile
    from bench.replay.loop import ReplayConfig, replay
    from bench.tokens.attribution import attribute
    from bench.tokens.counter import TokenCounter

    folder = shared_traces / "codex__madshn-localpush"
    trace = next(t for t in load([str(p) for p in sorted(folder.glob("*ec25*.jsonl"))]).traces)
    counter = TokenCounter()
    counter.adopt_attribution(trace, attribute(trace, TokenCounter()))
    result = replay(trace, strategies.build("none"), ReplayConfig(recorded_profile(trace)), counter=counter)
    gap = ledger_gap(trace, result)
    assert gap is not None and gap["blocks"] and gap["calls"] > 1
    first = min(recorded_calls(trace), default=trace.n_calls)
    usage = [m.usage for m in trace.messages if m.role == "assistant"]
    kept = [c for c in result.calls if c.kind == "agent" and c.call < first and usage[c.call] is not None]
    assert len(kept) == gap["calls"]
    unblocked = sum(c.cache_read for c in kept)
    assert gap["ours_cache_read"] % 128 == 0 and gap["recorded_cache_read"] % 128 == 0
    assert unblocked - 128 * gap["calls"] < gap["ours_cache_read"] <= unblocked


def test_cached_blocks() -> None:
    assert cached_blocks(1_023) == 0  # below OpenAI's minimum nothing is cached
    assert cached_blocks(1_024) == 1_024 and cached_blocks(1_151) == 1_024 and cached_blocks(1_152) == 1_152


def test_the_finding_names_the_warm_first_call_and_the_blocks() -> None:
    rows = pd.DataFrame([
        {"trace": "a", "strategy": "claude-code", "hit_gap": -0.3, "ours_first_read": 0, "recorded_first_read": 900,
         "subagent": True, "blocks": False},
        {"trace": "a", "strategy": "none", "hit_gap": -0.4, "ours_first_read": 0, "recorded_first_read": 1000,
         "subagent": True, "blocks": False},
        {"trace": "b", "strategy": "none", "hit_gap": 0.01, "ours_first_read": 0, "recorded_first_read": 0,
         "subagent": False, "blocks": True},
    ])
    one = per_session(rows)
    assert list(one.trace) == ["a", "b"] and list(one.strategy) == ["none", "none"]
    text = finding(one)
    assert text.startswith("1 of 2 sessions agree within 2%")
    assert "first call already read 1,000 tokens" in text and "1 of them subagent" in text
    assert "the 1 OpenAI-family sessions" in text
