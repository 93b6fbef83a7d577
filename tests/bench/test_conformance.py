"""Every session in ../shared/traces runs, as recorded (bench/cli/conformance.py).

Each must import (every file that is a session is claimed by an importer; only documentation and
the Entire CLI's metadata sidecars are not), run with default options under ``none`` and its
agent's version-matched strategy with zero failed tasks, and ``none`` must overflow no call that
the agent sent before its first compaction.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.cli.conformance import SessionCheck, check_session, format_rows, rows
from traces.model import Message, RecordedCompaction, Trace, Usage

NOT_SESSIONS = {"MANIFEST.md", "manifest.json", "metadata.json"}
"""What ../shared/traces holds besides sessions: its manifest, a sanitiser's manifest, and the Entire
CLI's metadata.json beside each transcript (read as a sidecar, never a session)."""


@pytest.fixture(scope="module")
def checks(shared_traces: Path) -> list[SessionCheck]:
    from bench.run.sources import stream

    return [check_session(t) for t in stream([str(shared_traces)])]


def test_every_session_file_is_claimed_by_an_importer(shared_traces: Path) -> None:
    from traces.formats import UnknownFormatError, detect, expand

    unclaimed = []
    for path in expand([str(shared_traces)]):
        if path.name in NOT_SESSIONS:
            continue
        try:
            detect(path)
        except UnknownFormatError as e:
            unclaimed.append(f"{path.relative_to(shared_traces)}: {str(e).splitlines()[0]}")
    assert not unclaimed, "\n".join(unclaimed)


def test_every_shared_session_runs_and_none_fits_every_call_the_agent_sent(checks: list[SessionCheck]) -> None:
    assert len(checks) > 500
    failed = [f"{c.trace} ({c.agent} {c.version}): {'; '.join(c.errors)}" for c in checks if c.errors]
    assert not failed, "\n".join(failed)
    overflowed = [f"{c.trace} ({c.agent} {c.version}): calls {c.overflowed[:10]} of {c.calls_before}"
                  for c in checks if c.overflowed]
    assert not overflowed, "\n".join(overflowed)
    assert {c.agent for c in checks} >= {"claude-code", "codex", "copilot-cli", "opencode", "gemini-cli"}
    matched = [c for c in checks if c.agent in ("claude-code", "codex", "copilot-cli", "opencode", "gemini-cli")]
    assert all(c.strategy and c.tasks == 2 for c in matched)  # each ran its agent's own strategy too


def test_the_table_counts_per_agent_and_version() -> None:
    a = SessionCheck("t1", "codex", "0.142.2", "codex:0.140-remote", 2, (), 10, ())
    b = SessionCheck("t2", "codex", "0.142.2", "codex:0.140-remote", 2, ("none: boom",), 5, (3, 4))
    c = SessionCheck("t3", "claude-code", "2.1.42", "claude-code", 2, (), 7, ())
    table = rows([a, b, c])
    assert [(r["agent"], r["version"], r["sessions"], r["failed"], r["fit_before_first_compaction"])
            for r in table] == [("claude-code", "2.1.42", 1, 0, "7/7"), ("codex", "0.142.2", 2, 1, "13/15")]
    assert "3 sessions, 6 tasks, 1 failed; 20 of 22 calls" in format_rows(table)
    assert not b.ok and a.ok


def test_a_none_overflow_before_the_first_compaction_is_caught() -> None:
    """A session whose recorded prompt the run's window refuses, with no evidence to lift it (the
    usage is absent), is reported as overflowing: the check can fail."""
    from bench.run.runner import RunConfig

    big = "word " * 110_000
    msgs = (Message.text_message("user", big), Message.text_message("assistant", "ok"),
            Message.text_message("user", big), Message.text_message("assistant", "ok"))
    trace = Trace("big", msgs, agent="claude-code", model="claude-sonnet-4-5", meta={"version": "2.1.42"},
                  compactions=(RecordedCompaction(4, "auto", 150_000, ""),))
    check = check_session(trace, RunConfig(truth="cl100k"))
    assert check.calls_before == 2 and check.overflowed == (1,) and not check.ok
    recorded = Trace("ok", (msgs[0], Message.text_message("assistant", "ok", usage=Usage(10, 5, 240_000))),
                     agent="claude-code", model="claude-sonnet-4-5", meta={"version": "2.1.42"})
    assert check_session(recorded).ok  # its recorded 240K prompt proves the longer window
