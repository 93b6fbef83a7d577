"""``compaction-bench fidelity PATH…``: does the re-implementation compact where the real agent did?

Each real session is replayed through the strategy matching its agent (``bench.scoring.fidelity.
matching_strategy``), *undriven*: the strategy decides on provider-attributed counts
(bench/tokens/attribution.py: the recorded usage split over the messages, the system prompt and tool
schemas sent as a fixed overhead), windowed as the model the session recorded. For every
recorded compaction it prints the recorded and replayed call, their difference, and the size
before and after, both sides in provider units with the overhead. ``--driven`` replays with the
recorded usage fed to the strategy instead (the older diagnostic: it fires where the agent did by
construction, so it checks the compaction itself, not the trigger).

``--strategy SPEC`` replays your own strategy instead (``mymod:Mine``, ``./mine.py:Mine``, a
registry name, with ``@key=value`` parameters): the question becomes "does my re-implementation
of my agent compact where my agent's logs say it did?". It is loaded and validated as ``run
--strategies`` does (strategies.build), so a load problem is the same one-line message naming the
file and line, given before any session is read.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

COLUMNS = ("trace", "strategy", "trigger", "recorded_call", "replayed_call", "call_delta",
           "recorded_pre", "replayed_pre", "recorded_post", "replayed_post")


def recorded_profile(trace: Any, fallback: str | None = None) -> Any:
    """The price/window profile of the model the trace recorded (``fallback``, else the run's default
    model, when it records none: as ``run --model recorded`` does)."""
    from bench.cost.pricing import RECORDED, UnknownModelError, profile, profile_for

    try:
        return profile(fallback) if trace.model is None and fallback else profile_for(RECORDED, trace.model)
    except UnknownModelError as e:
        raise ValueError(str(e)) from None


def load_strategy(spec: str) -> tuple[str, Any]:
    """(label, instance) of a ``--strategy`` spec, loaded as ``run --strategies`` loads it (StrategyError
    with file and line on any problem)."""
    import strategies

    parsed = strategies.parse_spec(spec)
    return parsed.label, strategies.build(parsed)


def session(trace: Any, *, driven: bool = False, model: str | None = None,
            strategy: str | None = None) -> tuple[str | None, list[dict], int]:
    """(strategy, one row per recorded compaction, the replay's own compactions) of ``trace``
    replayed through its agent's version-matched strategy (or ``strategy``); (None, [], 0) when no
    strategy re-implements its agent.

    The recorded size after a compaction is the provider's prompt of the first agent call after it
    (a summarizer call the log records between them is not one); both sides are in provider units.
    Pairing: the k-th automatic recorded compaction with the replay's k-th; one the user typed, or
    one before the file's first call (a file that begins with a compaction), is listed unpaired.
    """
    import strategies
    from bench.cost.pricing import profile
    from bench.replay.loop import COMPACTION_KINDS, ReplayConfig, replay
    from bench.replay.provider import adopt_shipped, shipped_counts
    from bench.scoring.fidelity import matching_strategy, pair_compactions, replay_recorded
    from bench.tokens.counter import TokenCounter

    if strategy is not None:
        name, instance = load_strategy(strategy)
    else:
        name = matching_strategy(trace)
        if name is None or name not in strategies.names():
            return None, [], 0
        instance = strategies.build(name)
    if not trace.compactions and driven:
        return name, [], 0
    counter = TokenCounter()
    adopt_shipped(counter, trace, shipped_counts(trace, TokenCounter()))
    recorded = not model or model == "recorded"
    config = ReplayConfig(recorded_profile(trace) if recorded else profile(model), recorded_models=recorded)
    run = replay_recorded if driven else replay
    result = run(trace, instance, config, counter=counter)
    sent = {c.call: c.prompt_tokens for c in result.calls if c.kind == "agent"}
    fired = [e for e in result.events if e.kind in COMPACTION_KINDS]
    answers = [m for m in trace.messages if m.role == "assistant"]
    out = []
    for rc, (call, e) in zip(trace.compactions, pair_compactions(trace, fired), strict=True):
        before = answers[call - 1].usage if 0 < call <= len(answers) else None
        after = next((m.usage for m in answers[call:] if m.usage is not None and m.usage.prompt_tokens
                      and not m.meta.get("summarizer")), None)
        out.append({
            "trace": trace.id, "strategy": name, "trigger": rc.trigger, "recorded_call": call,
            "replayed_call": None if e is None else e.call,
            "call_delta": None if e is None else e.call - call,
            "recorded_pre": rc.pre_tokens or (before.prompt_tokens + before.output_tokens if before else None),
            "replayed_pre": None if e is None else e.tokens_before,
            "recorded_post": after.prompt_tokens if after else None,
            "replayed_post": None if e is None else sent.get(e.call, e.tokens_after),
        })
    return name, out, len(fired)


def rows(trace: Any, *, driven: bool = False, model: str | None = None, strategy: str | None = None) -> list[dict]:
    """One row per recorded compaction of ``trace`` ([] when it has none, or when no strategy
    re-implements its agent and ``strategy`` is not given).

    ``strategy`` (a spec: ``mymod:Mine``, ``./mine.py:Mine``, ``codex@limit_fraction=0.8``) replays that
    strategy against the logged compactions instead of the version-matched built-in one.
    """
    if not trace.compactions:
        return []
    return session(trace, driven=driven, model=model, strategy=strategy)[1]


TOLERANCE = {"claude-code": 1}
"""Calls a replayed compaction may be off its recorded one and still match: ±1 for Claude Code (its
trigger reads the same usage every call), ±2 for the others (a mid-turn check, a background
compaction swapped in a few calls later)."""
DEFAULT_TOLERANCE = 2
LOGS_COMPACTIONS = frozenset({"claude-code", "codex", "opencode", "copilot-cli", "gemini-cli", "cline"})
"""Agents whose logs record each compaction; aider's chat history and OpenHands' event lists (with
the condenser off, as in ../shared/traces) do not, so a replay's compaction there is no "spurious" one."""
POST_TOLERANCE = 0.15
"""The replayed context after a compaction within ±15% of the recorded one (provider units)."""
TABLE_COLUMNS = ("agent", "version", "strategy", "sessions", "recorded", "within_calls", "median_abs_delta",
                 "within_post", "median_post_ratio", "spurious")


def conformance(traces: Any, *, model: str | None = None) -> list[dict]:
    """Per agent, version and strategy: recorded automatic compactions, how many the replay matched
    within the call tolerance, the median |Δ calls|, how many post-compaction sizes fall within
    ±15% and their median ratio (replayed / recorded), and ``spurious``: sessions where the agent
    never compacted but the replay did."""
    import statistics

    from strategies.versions import parse_version

    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    for trace in traces:
        name, table, fired = session(trace, model=model)
        if name is None:
            continue
        version = trace.meta.get("version") or trace.meta.get("cli_version")
        g = groups.setdefault((trace.agent, str(version) if version else "unrecorded", name),
                              {"sessions": 0, "recorded": 0, "deltas": [], "ratios": [], "spurious": 0,
                               "unmeasured": 0})
        g["sessions"] += 1
        auto = [r for r in table if r["trigger"] != "manual" and r["recorded_call"] > 0]
        g["recorded"] += len(auto)
        g["deltas"] += [None if r["call_delta"] is None else abs(r["call_delta"]) for r in auto]
        g["ratios"] += [r["replayed_post"] / r["recorded_post"] for r in auto
                        if r["replayed_post"] is not None and r["recorded_post"]]
        g["unmeasured"] += sum(1 for r in auto if not r["recorded_post"])
        g["spurious"] += int(not table and fired > 0 and trace.agent in LOGS_COMPACTIONS)
    out = []
    for (agent, version, name), g in sorted(groups.items(), key=lambda kv: (kv[0][0], parse_version(kv[0][1])
                                                                          or (10**9,), kv[0][2])):
        tol = TOLERANCE.get(agent, DEFAULT_TOLERANCE)
        deltas = [d for d in g["deltas"] if d is not None]
        out.append({
            "agent": agent, "version": version, "strategy": name, "sessions": g["sessions"],
            "recorded": g["recorded"], "within_calls": sum(1 for d in deltas if d <= tol),
            "median_abs_delta": statistics.median(deltas) if deltas else None,
            "within_post": sum(1 for r in g["ratios"] if abs(r - 1) <= POST_TOLERANCE),
            "median_post_ratio": round(statistics.median(g["ratios"]), 3) if g["ratios"] else None,
            "spurious": g["spurious"],
            "post_unmeasured": g["unmeasured"],
        })
    return out


UNMEASURED_WHY = {
    "copilot-cli": "its events.jsonl records token counts only at a compaction (compaction_start, "
                   "compaction_complete), no prompt size of any call after it",
}
"""Why an agent's log gives no recorded size after a compaction (``post_unmeasured``), one line each."""


def worse(table: list[dict], floor: list[dict]) -> list[str]:
    """What ``table`` does worse than ``floor`` (a stored table of the same corpus): fewer compactions
    within the call or size tolerance, or more sessions compacted where the agent never did."""
    now = {(r["agent"], r["version"], r["strategy"]): r for r in table}
    out = []
    for f in floor:
        key = (f["agent"], f["version"], f["strategy"])
        r = now.get(key)
        if r is None:
            out.append(f"{' '.join(key)}: no longer replayed")
            continue
        for col, sign in (("within_calls", 1), ("within_post", 1), ("spurious", -1)):
            if sign * (int(r[col]) - int(f[col])) < 0:
                out.append(f"{' '.join(key)}: {col} {r[col]} (was {f[col]})")
    return out


def format_table(table: list[dict]) -> str:
    if not table:
        return "(no session of an agent with a matching strategy)"
    cells = [["—" if r[c] is None else str(r[c]) for c in TABLE_COLUMNS] for r in table]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(TABLE_COLUMNS)]
    lines = ["  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(TABLE_COLUMNS, widths,
                                                                                          strict=True)))]
    lines += ["  ".join(v.ljust(w) if i < 3 else v.rjust(w) for i, (v, w) in enumerate(zip(row, widths, strict=True)))
              for row in cells]
    recorded = sum(r["recorded"] for r in table)
    lines.append(f"total: {recorded} recorded automatic compactions, {sum(r['within_calls'] for r in table)} "
                 f"within tolerance (±1 call Claude Code, ±2 others), {sum(r['within_post'] for r in table)} "
                 f"with the context after within ±15%; {sum(r['spurious'] for r in table)} sessions compacted "
                 "by the replay but never by the agent")
    for r in table:
        if r.get("post_unmeasured"):
            why = UNMEASURED_WHY.get(r["agent"], "its log records no prompt size of any call after the compaction")
            lines.append(f"{r['agent']} {r['version']}: the size after {r['post_unmeasured']} compaction(s) is not "
                         f"measurable: {why}")
    return "\n".join(lines)


LEDGER_COLUMNS = ("trace", "calls", "ours_cache_read", "recorded_cache_read", "ours_cache_write",
                  "recorded_cache_write", "ours_uncached", "recorded_uncached", "ours_hit", "recorded_hit")


def ledger_row(trace: Any, *, model: str | None = None) -> dict | None:
    """Our cache split of ``none`` beside the recorded one (bench/scoring/ledger_check.py); None without usage."""
    import strategies
    from bench.cost.pricing import profile
    from bench.replay.loop import ReplayConfig, replay
    from bench.scoring.ledger_check import ledger_gap
    from bench.tokens.attribution import attribute
    from bench.tokens.counter import TokenCounter

    counter = TokenCounter()
    attribution = attribute(trace, TokenCounter())
    if attribution is None:
        return None
    counter.adopt_attribution(trace, attribution)
    recorded = not model or model == "recorded"
    config = ReplayConfig(recorded_profile(trace) if recorded else profile(model), recorded_models=recorded)
    return ledger_gap(trace, replay(trace, strategies.build("none"), config, counter=counter))


def format_rows(table: list[dict], columns: tuple[str, ...] = COLUMNS) -> str:
    if not table:
        return "(no recorded compaction with a matching strategy)"
    cells = [[_cell(r[c]) for c in columns] for r in table]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.1%}"
    return str(value)[:24]


def command(args: argparse.Namespace) -> int:
    from bench.cost.pricing import add_prices
    from traces.formats import load

    for path in args.prices or ():
        add_prices(path)
    if args.strategy:
        load_strategy(args.strategy)  # a load problem fails before any session is read
    loaded = load(args.paths, lenient=args.lenient)
    table = [r for t in loaded.traces for r in rows(t, driven=args.driven, model=args.model,
                                                     strategy=args.strategy)]
    print(format_rows(table))
    if not args.driven and not args.strategy:
        summary = conformance(loaded.traces, model=args.model)
        print("\nPer agent and version (undriven, default options)")
        print(format_table(summary))
        if args.write:
            _write(Path(args.write), summary)
            print(f"written: {args.write}")
    if args.ledger:
        ledger = [r for t in loaded.traces if (r := ledger_row(t, model=args.model)) is not None]
        print("\nPrompt cache, ours (replaying none) beside the recorded split, calls before the first compaction")
        print(format_rows(ledger, LEDGER_COLUMNS) if ledger else "(no session with recorded usage)")
    for note in loaded.notes:
        print(f"note: {note}")
    return 0


def add_parser(sub: Any) -> None:
    """Register ``fidelity`` on the CLI's subcommands."""
    f = sub.add_parser("fidelity", help="recorded vs replayed compactions of real sessions (undriven)")
    f.add_argument("paths", nargs="+", metavar="PATH", help="session files or folders")
    f.add_argument("--driven", action="store_true", help="feed the recorded usage to the strategy (diagnostic)")
    f.add_argument("--model", default="recorded", help="'recorded' (the trace's own model, default) or a model id")
    f.add_argument("--prices", action="append", metavar="FILE",
                   help="a TOML price file (bench/data/prices.toml's schema) for models it does not know")
    f.add_argument("--strategy", metavar="SPEC", default=None,
                   help="replay this strategy against the logged compactions instead of the version-matched "
                        "built-in one: mymod:Mine, ./mine.py:Mine or name@key=value (default: the matching one)")
    f.add_argument("--ledger", action="store_true",
                   help="also set our prompt-cache split beside the recorded one, per session")
    f.add_argument("--lenient", action="store_true", help="skip bad records, and count them")
    f.add_argument("--write", metavar="FILE", default=None,
                   help="also write the per-agent-and-version table as CSV (e.g. out/fidelity.csv)")
    f.set_defaults(fn=command)


def _write(path: Path, table: list[dict]) -> None:
    import csv

    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=TABLE_COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(table)
