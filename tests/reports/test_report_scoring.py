"""The report's scoring sections on the fixture run of test_report.py, with hand-computed values.

Paired by trace against ``none`` (t1, t2), cost per trace: llm (−0.004, 0) → mean −$0.0020, and
with two pairs every resample mean is −0.004, −0.002 or 0, so the 95% interval is [−0.004, 0]:
it holds zero, "not significant". mask (+0.015, +0.005) → +$0.0100, interval [0.005, 0.015]:
significantly higher. Input tokens: mask (−1500, −500) → significantly lower.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import reports
from tests.reports.test_report import write_fixture_run


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    return reports.render(write_fixture_run(tmp_path_factory.mktemp("run") / "fixture")).read_text()


def section(page: str, anchor: str) -> str:
    return page.split(f'<section id="{anchor}">')[1].split("</section>")[0]


def row(html: str, strategy: str) -> str:
    return html.split(f"<td class=name>{strategy}</td>")[1].split("</tr>")[0]


def cells(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", html)]


def test_paired_comparisons(page: str) -> None:
    s = section(page, "significance")
    llm, mask = row(s, "llm"), row(s, "mask")
    assert "−$0.0020" in llm and "95% CI −$0.0040 … 0" in llm and "not significant" in llm.split("</td>")[1]
    assert "+$0.0100" in mask and "95% CI +$0.0050 … +$0.0150" in mask and "significantly higher" in mask
    assert 'class="badge bad">significantly higher' in mask
    tokens = mask.split("</td>")[2]
    assert "−1,000" in tokens and 'class="badge good">significantly lower' in tokens
    # retention from results.csv: mask (−100, −50) pp → −75.0 pp, interval [−100, −50]
    assert "−75.0 pp" in mask and "95% CI −100.0 pp … −50.0 pp" in mask
    assert "broken" not in s, "a harness error is no pair"
    assert "B = 10,000 resamples" in s and "<td class=num>2</td>" in llm
    findings = page.split('<ul class="findings">')[1].split("</ul>")[0]
    assert "not significant: <b>llm</b>" in findings and "<b>none</b> (1 call)." in findings


def test_single_trace_is_too_few_pairs(tmp_path: Path) -> None:
    page = reports.render(write_fixture_run(tmp_path / "one", traces=("t1",), config={"report_resamples": 500}))
    s = section(page.read_text(), "significance")
    assert "too few pairs" in row(s, "mask") and "95% CI" not in s
    assert "B = 500 resamples" in s
    assert not (tmp_path / "one" / "paired_ci.png").exists()


def test_retention_classes_cliffs_and_controls(page: str) -> None:
    s = section(page, "retention")
    table = s.split("</table>")[0]
    # needles | verbatim | by reference | stale | missing | cliff | controls | controls found
    assert cells(row(table, "none")) == ["2", "100%", "0%", "0%", "0%", "—", "1", "0%"]
    assert cells(row(table, "llm")) == ["2", "50%", "0%", "0%", "50%", "round 2", "1", "0%"]
    assert cells(row(table, "mask")) == ["2", "0%", "50%", "50%", "0%", "round 1", "1", "100%"]
    by_kind = s.split("Retention by needle kind")[1].split("</table>")[0]
    assert "<th class=num>error</th>" in by_kind and "0% <span class=n>n=1</span>" in row(by_kind, "mask")
    by_calls = s.split("agent calls since it was stated")[1].split("</table>")[0]
    assert "<th class=num>&lt; 5</th><th class=num>20–49</th>" in by_calls
    assert cells(row(by_calls, "llm")) == ["100% n=1", "0% n=1"]
    rounds = s.split("Retention per compaction round")[1].split("</table>")[0]
    assert cells(row(rounds, "llm")) == ["50%", "0%"]


def test_summary_sizes_with_n(page: str) -> None:
    s = section(page, "summary-sizes")
    # n | p50 | p90 | p99 | p99.9 | max | over 20K | share over 20K  (numpy linear interpolation)
    assert cells(row(s, "llm"))[:8] == ["4", "250", "17,590", "24,259", "24,926", "25,000", "1", "25.0%"]
    assert "does not record the max_tokens" in s and "over 20K" in s  # the fallback is said, not hidden


def test_summary_sizes_against_each_strategys_reserve(tmp_path: Path) -> None:
    import json

    run = write_fixture_run(tmp_path / "run")
    lines = [json.loads(line) for line in (run / "summaries.jsonl").read_text().splitlines()]
    (run / "summaries.jsonl").write_text("".join(json.dumps({**d, "max_tokens": 4_096}) + "\n" for d in lines))
    s = section(reports.render(run).read_text(), "summary-sizes")
    # 100, 200, 300, 25,000 against llm's own 4,096: one over; the column shows the reserve
    assert cells(row(s, "llm"))[5:9] == ["25,000", "4,096", "1", "25.0%"]
    assert "over its reserve" in s and "asked for" in s


def test_cost_truth(page: str) -> None:
    s = section(page, "cost-truth")
    # cost | without cache | saved by cache | summarizer | cache-hit | breaks | re-written | prefix lost
    assert cells(row(s, "mask")) == ["$0.0700", "$0.0700", "0%", "0.0%", "0%", "3", "5,000", "3,500"]
    assert cells(row(s, "llm"))[5:] == ["1", "500", "2,000"]
    assert "<b>mask</b> <span class=\"badge warn\">2 of 2 traces</span>" in s and "<b>llm</b>" not in s


def test_estimator_vs_truth(page: str) -> None:
    s = section(page, "estimator")
    # actions | p10 | p50 | p90 | late | calls | p50 over calls | hidden: mask ratios 1.05, 1.05, 0.76
    assert cells(row(s, "mask")) == ["3", "0.82", "1.05", "1.05", "1", "5", "1.00", "0"]
    assert cells(row(s, "none"))[:5] == ["0", "—", "—", "—", "0"]


def test_fidelity_rows(page: str) -> None:
    s = section(page, "fidelity")
    first, second, third = s.split("<tbody>")[1].split("</tr>")[:3]
    # # | trigger | recorded call | replayed call | Δ | pre (provider) | pre | replayed pre | post | replayed post
    # | post ratio
    assert cells(first) == ["t1", "llm", "0", "auto", "2", "3", "+1", "150,000", "120,000", "140,000", "3,000",
                            "4,000", "1.33"]
    assert cells(second)[:6] == ["t1", "llm", "1", "manual", "7", "manual: n/a"]  # a user's /compact
    assert cells(third)[:6] == ["t1", "llm", "2", "auto", "9", "not replayed"]
    assert "recorded pre (provider)" in s and "system prompt and tool definitions" in s


def test_renders_without_scoring_files_or_columns(tmp_path: Path) -> None:
    out = reports.render(write_fixture_run(tmp_path / "old", probes=False, scoring=False)).read_text()
    assert "probes.csv absent" in out and "fidelity.csv absent" in out
    s = section(out, "significance")
    assert "not significant" in row(s, "llm") and "needle retention" not in s
    assert "17,590" in section(out, "summary-sizes")
    for name in ("retention_classes.png", "retention_by_round.png", "retention_by_age.png"):
        assert not (tmp_path / "old" / name).exists()


def test_fidelity_from_results_columns_when_csv_absent(tmp_path: Path) -> None:
    run = write_fixture_run(tmp_path / "run")
    (run / "fidelity.csv").unlink()
    s = section(reports.render(run).read_text(), "fidelity")
    assert cells(s.split("<tbody>")[1].split("</tr>")[0])== ["t1", "llm", "0", "2", "3", "+1"]
