"""`compaction-bench plan` estimates what the run really writes: the store, the CSV/JSONL exports,
the report with its compaction pages and charts (left out, the estimate ran 20–200× short)."""

from __future__ import annotations

from pathlib import Path

from bench.cli.plan import KINDS, _sizes, estimate, format_estimate
from bench.run.runner import RunConfig, run


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def test_plans_output_size_is_within_a_factor_of_two_of_what_the_run_writes(tmp_path: Path) -> None:
    from reports import render

    config = RunConfig(traces=("synthetic:short", "synthetic:tiny"), seeds=2, strategies=("none", "codex", "opencode"),
                       workers=1, executor="local", out=str(tmp_path / "out"), name="small")
    e = estimate(config, sample=2)
    assert e.tasks == 12 and e.csv and e.report
    assert set(e.bytes_by_kind) == set(KINDS) and e.output_bytes == sum(e.bytes_by_kind.values())
    out = run(config, progress=False)
    render(out.run_dir)
    written = _size(out.run_dir)
    assert written / 2 <= e.output_bytes <= written * 2, (e.bytes_by_kind, _sizes(out.run_dir))
    real = _sizes(out.run_dir)
    for kind in ("exports", "pages", "charts"):  # the kinds the estimate left out
        assert real[kind] and e.bytes_by_kind[kind], kind
    text = format_estimate(e)
    assert "CSV exports on" in text and "compaction pages" in text


def test_no_report_and_no_csv_are_left_out_of_the_estimate(tmp_path: Path) -> None:
    config = RunConfig(traces=("synthetic:tiny",), seeds=2, strategies=("none",), workers=1, executor="local",
                       out=str(tmp_path / "out"), name="bare", csv="no")
    e = estimate(config, sample=1, report=False)
    assert not e.csv and not e.report
    assert e.bytes_by_kind["exports"] == e.bytes_by_kind["pages"] == e.bytes_by_kind["charts"] == 0
    assert e.bytes_by_kind["store"] > 0
