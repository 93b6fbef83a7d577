"""The report's Robustness table: what needs no replay, measured from the run's files alone."""

from __future__ import annotations

import json
from pathlib import Path

import reports
from tests.reports.test_report import write_fixture_run


def test_the_report_shows_robustness_without_replaying(tmp_path: Path) -> None:
    run_dir = write_fixture_run(tmp_path / "fixture")
    page = reports.render(run_dir).read_text(encoding="utf-8")
    robustness = json.loads((run_dir / "verdict.json").read_text())["robustness"]
    assert 'id="robustness"' in page and "<h3>Robustness</h3>" in page
    kinds = {c["kind"] for c in robustness["changes"]}
    assert "weight" in kinds and not kinds & {"window", "cache_ttl"}  # the report replays nothing
    assert any("not replayed" in n for n in robustness["notes"])
    assert not (run_dir / "robustness" / "ttl-1h").exists()
