"""The README and the docs stay true: the tables generated from code are the code's, the example
strategy runs, every command line shown parses with the real parser and names real strategies and
objectives, every Python block compiles, and every link from the README reaches a file."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

import strategies
from bench.cli.main import parser
from bench.decide.verdict import check_objective
from bench.scoring.metrics import glossary
from bench.summarizers.sizes import stored
from tests.bench.test_replay import growing_trace
from tests.strategies.test_contract import CONFIG, check_strategy
from traces.calibration import FITTED, markdown

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
DOCS = {p.relative_to(ROOT).as_posix(): p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))}
PAGES = {"README.md": README, **DOCS}
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def _block(page: str, marker: str) -> str:
    return DOCS[page].split(f"<!-- {marker}")[1].split(f"<!-- /{marker} -->")[0]


def test_readme_is_short():
    assert len(README.splitlines()) <= 200


def test_glossary_matches_the_metric_specs():
    assert glossary() in _block("docs/metrics.md", "glossary")


def test_calibration_table_is_the_stored_fit():
    assert markdown(FITTED) in _block("docs/metrics.md", "calibration")


def test_summary_size_table_is_the_stored_fit():
    block = _block("docs/metrics.md", "summary sizes")
    for agent, fit in stored().items():
        assert re.search(rf"^\| {re.escape(agent)} \| {fit.median_tokens:,.0f} \|", block, re.M), agent


def test_every_registered_strategy_is_on_the_strategies_page():
    page = DOCS["docs/strategies.md"]
    missing = [n for n in strategies.REGISTRY if f"`{n}`" not in page and f"`:{n.partition(':')[2]}`" not in page]
    assert not missing


def test_the_example_strategy_runs_as_a_plugin(tmp_path, monkeypatch):
    code = re.search(r"## Writing a strategy.*?```python\n(.*?)```", DOCS["docs/strategies.md"], re.S).group(1)
    assert len(code.strip().splitlines()) <= 26
    (tmp_path / "readme_example.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        from bench.replay import replay
        from bench.tokens import TokenCounter

        s = strategies.build("readme_example:ClearOldOutputs@keep=2")
        result = replay(growing_trace(14, 2500), s, CONFIG, counter=TokenCounter())
        prunes = [e for e in result.events if e.kind == "prune"]
        assert prunes and all(e.tokens_after < e.tokens_before for e in prunes)
        check_strategy("readme_example:ClearOldOutputs", growing_trace(14, 2500))
    finally:
        sys.modules.pop("readme_example", None)


def _blocks(language: str) -> list[tuple[str, str]]:
    return [(page, m.group(2)) for page, text in PAGES.items() for m in FENCE.finditer(text) if m.group(1) == language]


def test_every_python_block_compiles():
    blocks = _blocks("python")
    assert len(blocks) >= 4
    for page, code in blocks:
        compile(code, page, "exec")


def _command_lines() -> list[tuple[str, list[str]]]:
    """Every `compaction-bench …` line of an unlabelled code block (continuations joined, comments dropped);
    the synopsis lines (`.venv/bin/compaction-bench …`, with placeholders) are not commands to run."""
    lines = []
    for page, code in _blocks(""):
        for line in code.replace("\\\n", " ").splitlines():
            if line.startswith("compaction-bench "):
                lines.append((page, shlex.split(line, comments=True)[1:]))
    return lines


def _first_of_each_sweep(spec: str) -> str:
    return re.sub(r"=([^,|]+)(\|[^,]+)+", r"=\1", spec)


@pytest.mark.parametrize("page,argv", _command_lines(), ids=lambda v: v if isinstance(v, str) else " ".join(v[:2]))
def test_every_command_shown_parses(page, argv, capsys):
    try:
        args = parser().parse_args(argv)
    except SystemExit:
        pytest.fail(f"{page}: compaction-bench {' '.join(argv)}: {capsys.readouterr().err.strip()}")
    for spec in getattr(args, "strategies", None) or ():
        if spec.partition("@")[0] in strategies.REGISTRY:
            strategies.build(_first_of_each_sweep(spec))
        else:  # a user's class: ./file.py:Class or module:Class
            assert re.fullmatch(r"[\w./]+:[A-Z]\w*(@.*)?", spec), f"{page}: {spec} is no strategy"
    if getattr(args, "objective", "default") != "default":
        check_objective(args.objective)


def test_the_command_lines_were_found():
    subcommands = {argv[0] for _, argv in _command_lines()}
    assert {"run", "import", "show", "conformance", "fidelity", "merge", "report", "new-strategy"} <= subcommands


def test_readme_links_reach_files():
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target
