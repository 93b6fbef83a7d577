"""The rendered report opened in a real headless Chromium: charts load, tables are in the DOM.

A small script is added to a copy of the page (the report itself has no script); on load it
writes what the browser saw of every <img> into the DOM, which ``--dump-dom`` then prints.
Skips, with the reason, when no Chromium is installed (Debian: ``apt-get install -y chromium``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import reports
from reports import charts
from tests.reports.test_report import PNGS, write_fixture_run
from tests.reports.test_report_sweeps import CHART, write_sweep_run

BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
pytestmark = pytest.mark.skipif(
    BROWSER is None, reason="no chromium binary on PATH: install it (Debian: apt-get install -y chromium) "
                            "to run the headless-browser test of the report")
PROBE = """<script>
window.addEventListener("load", () => {
  const imgs = Array.from(document.images);
  const probe = document.createElement("div");
  probe.id = "probe";
  probe.dataset.images = imgs.length;
  const broken = imgs.filter(i => !i.complete || i.naturalWidth === 0);
  probe.dataset.broken = broken.map(i => i.getAttribute("src")).join(" ");
  probe.dataset.sizes = imgs.map(i => i.naturalWidth + "x" + i.naturalHeight).join(" ");
  probe.dataset.tables = document.querySelectorAll("table").length;
  document.body.appendChild(probe);
});
</script>"""


def dump_dom(page: Path, profile: Path) -> str:
    """The DOM after load, as headless Chromium sees it (no network, no first-run noise)."""
    cmd = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom", page.as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def probed(report: Path, tmp_path: Path) -> tuple[dict[str, str], str]:
    page = report.with_name("probe.html")
    page.write_text(report.read_text().replace("</body>", PROBE + "</body>"))
    dom = dump_dom(page, tmp_path / "profile")
    tag = re.search(r'<div id="probe"([^>]*)>', dom)
    assert tag, "the load handler never ran"
    return dict(re.findall(r'data-(\w+)="([^"]*)"', tag.group(1))), dom


def test_charts_load_and_tables_render(tmp_path: Path) -> None:
    report = reports.render(write_fixture_run(tmp_path / "run"))
    probe, dom = probed(report, tmp_path)
    assert probe["images"] == str(len(PNGS))
    assert probe["broken"] == ""
    assert probe["sizes"].split() == ["{}x{}".format(*charts.SIZE_PIXELS)] * len(PNGS)
    assert int(probe["tables"]) >= 4  # strategies, events, per-trace (2), glossary
    for name in PNGS:
        assert re.search(rf'<img src="{re.escape(name)}"', dom)
    results = dom.split('<table class="results">')[1].split("</table>")[0]
    for strategy in ("none", "llm", "mask"):
        assert f">{strategy} " in results


def test_a_broken_chart_is_detected(tmp_path: Path) -> None:
    report = reports.render(write_fixture_run(tmp_path / "run"))
    (report.parent / "cost_cache.png").write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    (report.parent / "summary_sizes.png").unlink()
    probe, _ = probed(report, tmp_path)
    assert sorted(probe["broken"].split()) == ["cost_cache.png", "summary_sizes.png"]


def test_sweep_section_renders(tmp_path: Path) -> None:
    report = reports.render(write_sweep_run(tmp_path / "run"))
    probe, dom = probed(report, tmp_path)
    assert probe["broken"] == ""
    sweeps = dom.split('<section id="sweeps">')[1].split("</section>")[0]
    assert re.search(rf'<img src="{re.escape(CHART)}"', sweeps)
    assert sweeps.count("<tr>") == 4  # the header and one row per setting


def test_the_verdict_sentence_comes_first(tmp_path: Path) -> None:
    report = reports.render(write_sweep_run(tmp_path / "run"))
    _, dom = probed(report, tmp_path)
    body = re.sub(r"<style>.*?</style>", "", dom.split("</header>")[1], flags=re.S)
    text = re.sub(r"<[^>]+>", " ", body).split()
    # The first words a reader sees after the title are the verdict (none overflowed here, so it is
    # out and no reference; n=10 is the cheapest that keeps the best retention of the rest).
    assert " ".join(text[:2]) == "Ship mask@keep=1,n=10:"
    assert body.lstrip().startswith('<section id="findings">')
    assert re.search(r'<section id="findings">\s*<p class="verdict" id="verdict-sentence">', body)
