"""The page itself (issue 12): what `none` cannot have is not shaded as its failure, the cliff column
is explained, ``--help`` shows every option's default with examples and the sweep syntax, and
``list`` prints one complete sentence per strategy and each scenario's size."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from bench.cli.help_format import one_line
from bench.cli.main import main, parser
from reports import sections


def _none_row_styles(page: str) -> dict[str, str]:
    """Header label → the ``style`` of the ``none`` row's cell under it (empty when unshaded)."""
    heads = [re.sub(r"<.*?>|[↑↓]", "", h).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", page)]
    row = next(r for r in re.findall(r"<tr>(.*?)</tr>", page, re.S) if "<td class=name>none" in r)
    cells = re.findall(r"<td([^>]*)>", row)
    return {h: (re.search(r'style="([^"]*)"', c) or [None, ""])[1] for h, c in zip(heads, cells, strict=True)}


def _red(style: str) -> bool:
    m = re.search(r"hsl\((\d+)", style)
    return bool(m) and int(m.group(1)) < 40


def test_none_is_not_shaded_for_estimator_metrics_it_cannot_have() -> None:
    est = pd.DataFrame([
        {"strategy": "none", "triggers": 0, "late_triggers": 0, "calls": 90, "call_ratio_p50": 0.6,
         "hidden_overflows": 49},
        {"strategy": "codex", "triggers": 20, "late_triggers": 2, "calls": 90, "call_ratio_p50": 0.5,
         "hidden_overflows": 0},
        {"strategy": "opencode", "triggers": 3, "late_triggers": 0, "calls": 90, "call_ratio_p50": 0.45,
         "hidden_overflows": 1},
    ])
    page = sections.estimator_html(est, pd.DataFrame(), ["none", "codex", "opencode"], 200_000)
    styles = _none_row_styles(page)
    assert styles["hidden overflows"] == "" and styles["late actions"] == ""
    # the others are still ranked among themselves: opencode's one hidden overflow is the worst left
    opencode = re.search(r"<td class=name>opencode.*?</tr>", page, re.S).group(0)
    assert any(_red(s) for s in re.findall(r'style="([^"]*)"', opencode))


def test_none_keeps_every_needle_by_construction_so_its_retention_is_not_ranked() -> None:
    overall = pd.DataFrame([
        {"strategy": "none", "n": 10, "retained-verbatim": 1.0, "recoverable-by-reference": 0.0, "stale": 0.0,
         "missing": 0.0, "rounds": 0, "cliff_round": None, "controls": 2, "false_positive_rate": 0.5},
        {"strategy": "codex", "n": 10, "retained-verbatim": 0.6, "recoverable-by-reference": 0.2, "stale": 0.1,
         "missing": 0.1, "rounds": 2, "cliff_round": None, "controls": 2, "false_positive_rate": 0.0},
        {"strategy": "opencode", "n": 10, "retained-verbatim": 0.4, "recoverable-by-reference": 0.1,
         "stale": 0.0, "missing": 0.5, "rounds": 3, "cliff_round": 2, "controls": 2, "false_positive_rate": 0.0},
    ])
    page = sections.retention_html(overall, ["none", "codex", "opencode"])
    styles = _none_row_styles(page)
    for col in ("retained verbatim", "recoverable by reference", "stale", "missing"):
        assert styles[col] == "", col
    assert _red(styles["controls found"])  # a control found in none's context is a real false positive
    assert "<b>Cliff round</b>" in page and "it never compacted (as <code>none</code>)" in page


def test_run_help_shows_every_default_examples_and_the_sweep_syntax(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and "|0.7|0.9" in out and "`|` lists the values" in out
    sub = parser()._subparsers._group_actions[0].choices["run"]  # noqa: SLF001
    flat = " ".join(out.split())
    for action in sub._actions:  # noqa: SLF001
        default = action.default
        if not action.option_strings or default is None or default is False or action.dest == "help":
            continue
        assert f"{action.option_strings[0]}" in out
        said = f"(default: {default})" in flat or "default" in (action.help or "")
        assert said, f"{action.option_strings[0]} does not show its default {default!r}"


def test_one_line_is_a_whole_first_sentence() -> None:
    doc = """Cline's default context management: file-read dedup, then middle-out
    truncation keeping half. More words here.

    Details."""
    assert one_line(doc) == ("Cline's default context management: file-read dedup, then middle-out truncation "
                             "keeping half.")
    assert one_line("A " + "very " * 40 + "long sentence.").endswith("…")
    assert len(one_line("A " + "very " * 40 + "long sentence.")) <= 110


def test_list_prints_one_line_per_strategy_and_scenario_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    import strategies

    assert main(["list", "strategies"]) == 0
    out = capsys.readouterr().out
    heads = [line for line in out.splitlines() if line and not line.startswith(" ")]
    assert [h.split()[0] for h in heads] == list(strategies.names())
    for h in heads:
        description = h.split(maxsplit=1)[1]
        assert description.endswith((".", "…", ")")), h  # a sentence, not a line cut mid-phrase
    assert main(["list", "scenarios"]) == 0
    for line in capsys.readouterr().out.splitlines():
        assert re.match(r"\S+\s+~[\d,]+K tokens, \d+ human turns", line), line


def test_the_sawtooth_shows_the_trace_whose_context_grew_largest() -> None:
    """Not the tiny chat a summarizer touches every turn: the long session where compaction matters."""
    import pandas as pd

    from reports import _sawtooth_trace

    rows = pd.DataFrame({"trace": ["chat", "chat", "long", "long"], "strategy": ["none", "aider"] * 2,
                         "peak_context": [11_000, 9_000, 1_174_000, 182_000], "compactions": [0, 9, 0, 4]})
    assert _sawtooth_trace(rows) == "long"
    tie = rows.assign(peak_context=[5, 5, 5, 5])
    assert _sawtooth_trace(tie) == "chat"  # equal peaks: where strategies compacted most
