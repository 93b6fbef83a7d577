"""``compaction-bench conformance PATH…``: does every real session run, as recorded?

For each session: import it (strict unless ``--lenient``), then replay it with the run's default
options (``--model recorded``, ``--truth provider``, the extractive summarizer) under ``none`` and
under the strategy that re-implements its agent at the version it recorded, exactly as a worker of
``run`` does (``bench.run.runner.run_task`` on the counts ``plan`` ships). A session conforms when both
tasks finish and ``none`` overflows no call the agent sent before its first recorded compaction:
the agent did send those calls, so a window under which ``none`` overflows one of them is not the
window the session ran with.

The table is per agent and version: sessions, tasks run / failed, and the calls before the first
compaction that fit (overflow-free) over all such calls. ``rows`` is what a test asserts on.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from traces.model import Trace

COLUMNS = ("agent", "version", "sessions", "tasks", "failed", "fit_before_first_compaction", "overflowed")


@dataclass(frozen=True)
class SessionCheck:
    """One session's conformance: what ran, what failed, and what ``none`` overflowed."""

    trace: str
    agent: str
    version: str
    strategy: str | None
    """The version-matched strategy (None when no strategy re-implements the agent)."""
    tasks: int
    errors: tuple[str, ...]
    calls_before: int
    """Agent calls before the first recorded compaction (all calls when there is none)."""
    overflowed: tuple[int, ...]
    """Calls among those at which ``none`` overflowed the window (should be none)."""
    window: int | None = None
    window_source: str = ""

    @property
    def ok(self) -> bool:
        return not self.errors and not self.overflowed


def first_compaction_call(trace: Trace) -> int | None:
    """The call at which the agent first compacted (None when it never did). A file that begins with
    a compaction (message_index 0: its pre-compaction part is not in the file) has no calls before it,
    so that compaction does not bound anything: the next one does."""
    from traces.model import recorded_calls

    calls = [c for rc, c in zip(trace.compactions, recorded_calls(trace), strict=True) if rc.message_index > 0]
    return min(calls) if calls else None


def check_session(trace: Trace, config: Any = None) -> SessionCheck:
    """Replay ``trace`` under ``none`` and its agent's strategy as ``run`` would, and check both."""
    import strategies
    from bench.replay.provider import shipped_counts
    from bench.run.runner import RunConfig, run_task, shared_counter
    from bench.run.sources import counter_for
    from bench.scoring.fidelity import matching_strategy

    config = config or RunConfig()
    matched = matching_strategy(trace)
    names = ["none", *([matched] if matched and matched in strategies.names() and matched != "none" else [])]
    counts = shipped_counts(trace, counter_for(trace), model=config.model, truth=config.truth)
    counter = shared_counter(trace, counts)
    first = first_compaction_call(trace)
    errors: list[str] = []
    overflowed: tuple[int, ...] = ()
    calls_before = 0
    for name in names:
        result = run_task(trace, counter, strategies.parse_spec(name), config)
        if result.error or result.failed:
            why = (result.error or result.failed or "").splitlines()[0]
            errors.append(f"{name}: {why[:200]}{'…' if len(why) > 200 else ''}")
            continue
        if name == "none":
            agent = [c for c in result.calls if c.kind == "agent" and (first is None or c.call < first)]
            calls_before = len(agent)
            overflowed = tuple(c.call for c in agent if c.overflow)
    version = trace.meta.get("version") or trace.meta.get("cli_version")
    return SessionCheck(trace.id, trace.agent, str(version) if version else "unrecorded", matched,
                        len(names), tuple(errors), calls_before, overflowed)


def rows(checks: Iterable[SessionCheck]) -> list[dict[str, Any]]:
    """The table: one row per agent and version, in order of first appearance."""
    table: dict[tuple[str, str], dict[str, Any]] = {}
    for c in checks:
        row = table.setdefault((c.agent, c.version), {
            "agent": c.agent, "version": c.version, "sessions": 0, "tasks": 0, "failed": 0, "calls_before": 0,
            "overflowed": 0})
        row["sessions"] += 1
        row["tasks"] += c.tasks
        row["failed"] += len(c.errors)
        row["calls_before"] += c.calls_before
        row["overflowed"] += len(c.overflowed)
    for row in table.values():
        row["fit_before_first_compaction"] = f"{row['calls_before'] - row['overflowed']}/{row['calls_before']}"
    return sorted(table.values(), key=lambda r: (r["agent"], _version_key(r["version"])))


def _version_key(text: str) -> tuple[int, ...]:
    from strategies.versions import parse_version

    return parse_version(text) or (10**9,)


def format_rows(table: list[dict[str, Any]]) -> str:
    if not table:
        return "(no sessions)"
    cells = [[str(r[c]) for c in COLUMNS] for r in table]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(COLUMNS)]
    lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(COLUMNS, widths,
                                                                                          strict=True)))]
    lines += ["  ".join(v.ljust(w) if i < 2 else v.rjust(w) for i, (v, w) in enumerate(zip(row, widths, strict=True)))
              for row in cells]
    total = {c: sum(r[c] for r in table) for c in ("sessions", "tasks", "failed", "calls_before", "overflowed")}
    lines.append(f"total: {total['sessions']} sessions, {total['tasks']} tasks, {total['failed']} failed; "
                 f"{total['calls_before'] - total['overflowed']:,} of {total['calls_before']:,} calls before the "
                 f"first compaction fit the window under none")
    return "\n".join(lines)


def command(args: argparse.Namespace) -> int:
    """Print the table (and each session that does not conform, with why); exit 1 when one does not."""
    from bench.cost.pricing import add_prices
    from bench.run.runner import RunConfig
    from bench.run.sources import StreamNotes, stream

    for path in args.prices or ():
        add_prices(path)
    config = replace(RunConfig(), lenient=args.lenient, prices=tuple(args.prices or ()))
    notes = StreamNotes()
    checks = [check_session(t, config) for t in stream(args.paths, lenient=args.lenient, notes=notes)]
    print(format_rows(rows(checks)))
    bad = [c for c in checks if not c.ok]
    for c in bad:
        why = "; ".join(c.errors) or f"none overflowed call(s) {', '.join(map(str, c.overflowed[:8]))} " \
                                      f"of {c.calls_before} the agent sent before its first compaction"
        print(f"does not conform: {c.trace} ({c.agent} {c.version}): {why}")
    return 1 if bad else 0


def add_parser(sub: Any) -> None:
    """Register ``conformance`` on the CLI's subcommands."""
    p = sub.add_parser("conformance",
                       help="does every real session run as recorded (none and its agent's strategy, default "
                            "options; none overflows no call the agent sent before its first compaction)")
    p.add_argument("paths", nargs="+", metavar="SOURCE", help="session files, folders, entire:PATH")
    p.add_argument("--prices", action="append", metavar="FILE", help="a TOML price file for models no table knows")
    p.add_argument("--lenient", action="store_true", help="skip bad records, and count them")
    p.set_defaults(fn=command)
