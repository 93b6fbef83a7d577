"""`compaction-bench show`: the context sent at one call, replayed from run.json, matches the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.cli.main import main
from bench.cli.show import ShowError, context_at, format_diff, format_shown
from bench.run.runner import RunConfig, run
from bench.run.store import load_table

STRATEGIES = ("none", "codex@limit_fraction=0.05")  # a tiny threshold: it compacts on a short session


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("show")
    run(RunConfig(traces=("synthetic:short",), strategies=STRATEGIES, executor="local", workers=1, out=str(out),
                  name="r"), progress=False)
    return out / "r"


def test_the_context_shown_is_the_one_the_run_billed(run_dir: Path) -> None:
    calls = load_table(run_dir, "calls")
    agent = calls[(calls.kind == "agent") & (calls.strategy == STRATEGIES[1])]
    events = load_table(run_dir, "events")
    summarized = events[(events.strategy == STRATEGIES[1]) & (events.kind == "summarize")]
    assert len(summarized), "the fixture must compact"
    call = int(summarized.call.iloc[0])
    row = agent[agent.call == call].iloc[0]
    shown = context_at(run_dir, str(row.trace), STRATEGIES[1], call)
    assert shown.context.truth == row.prompt_tokens and len(shown.context) == row.messages
    text = format_shown(shown)
    assert "summarize via before_call" in text and "*" in text  # the summary the strategy wrote is marked


def test_diff_between_two_strategies_at_the_same_call(run_dir: Path) -> None:
    calls = load_table(run_dir, "calls")
    trace = str(calls.trace.iloc[0])
    last = int(calls[calls.kind == "agent"].call.max())
    a, b = (context_at(run_dir, trace, s, last) for s in STRATEGIES)
    diff = format_diff(a, b)
    assert diff.splitlines()[0].endswith(f"{b.strategy} sends {len(b.context)}, {b.context.truth:,}")
    removed = [line for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert removed, "none keeps history codex summarized away"
    assert len(a.context) > len(b.context)


def test_bad_requests_name_what_exists(run_dir: Path, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(ShowError, match="no agent call 9999"):
        context_at(run_dir, str(load_table(run_dir, "calls").trace.iloc[0]), "none", 9999)
    assert main(["show", str(run_dir), "--trace", "nope", "--strategy", "none", "--call", "1"]) == 2
    assert "no trace 'nope' in this run" in capsys.readouterr().err
