"""The per-agent-and-version fidelity table (`compaction-bench fidelity`) never gets worse on
../shared/traces: tests/bench/fidelity_floor.csv holds the last accepted table (regenerate it with
`compaction-bench fidelity ../shared/traces --write tests/bench/fidelity_floor.csv` when a change
makes it better, and say so in the commit)."""

from __future__ import annotations

import csv
from pathlib import Path

from bench.cli.fidelity import conformance, format_table, worse

FLOOR = Path(__file__).with_name("fidelity_floor.csv")


def test_the_table_is_no_worse_than_the_stored_floor(shared_traces: Path) -> None:
    from traces.formats import load

    table = conformance(load([str(shared_traces)]).traces)
    with FLOOR.open(encoding="utf-8") as f:
        floor = list(csv.DictReader(f))
    assert floor, "the floor is empty"
    problems = worse(table, floor)
    assert not problems, "\n".join(problems) + "\n" + format_table(table)


def test_worse_names_each_regression() -> None:
    row = {"agent": "codex", "version": "0.142.2", "strategy": "codex", "within_calls": 2, "within_post": 1,
           "spurious": 0}
    assert worse([row], [row]) == []
    assert worse([{**row, "within_calls": 1, "spurious": 1}], [row]) == [
        "codex 0.142.2 codex: within_calls 1 (was 2)", "codex 0.142.2 codex: spurious 1 (was 0)"]
    assert worse([], [row]) == ["codex 0.142.2 codex: no longer replayed"]
    assert worse([{**row, "within_post": 2}], [row]) == []  # better is fine


def test_an_unmeasurable_size_after_compaction_is_said_in_one_line(tmp_path: Path) -> None:
    """Copilot CLI's log has no prompt size after its compaction: the table says so and why, in one line,
    instead of a bare dash; the CSV keeps its columns."""
    from bench.cli.fidelity import TABLE_COLUMNS, _write

    row = {"agent": "copilot-cli", "version": "1.0.74", "strategy": "copilot-cli", "sessions": 3, "recorded": 1,
           "within_calls": 1, "median_abs_delta": 0, "within_post": 0, "median_post_ratio": None, "spurious": 0,
           "post_unmeasured": 1}
    text = format_table([row])
    notes = [line for line in text.splitlines() if "not measurable" in line]
    assert notes == ["copilot-cli 1.0.74: the size after 1 compaction(s) is not measurable: its events.jsonl "
                     "records token counts only at a compaction (compaction_start, compaction_complete), no "
                     "prompt size of any call after it"]
    assert "not measurable" not in format_table([{**row, "post_unmeasured": 0}])
    other = format_table([{**row, "agent": "someagent"}])
    assert "its log records no prompt size of any call after the compaction" in other
    _write(tmp_path / "t.csv", [row])
    with (tmp_path / "t.csv").open(encoding="utf-8") as f:
        assert tuple(next(csv.reader(f))) == TABLE_COLUMNS
