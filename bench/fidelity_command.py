"""``compaction-bench fidelity PATH…``: does the re-implementation compact where the real agent did?

Each real session is replayed through the strategy matching its agent (``bench.fidelity.
matching_strategy``), *undriven*: the strategy decides on provider-attributed counts
(bench/attribution.py: the recorded usage split over the messages, the system prompt and tool
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
from typing import Any

COLUMNS = ("trace", "strategy", "trigger", "recorded_call", "replayed_call", "call_delta",
           "recorded_pre", "replayed_pre", "recorded_post", "replayed_post")


def recorded_profile(trace: Any, fallback: str | None = None) -> Any:
    """The price/window profile of the model the trace recorded (``fallback`` when it has none)."""
    from bench.pricing import UnknownModelError, profile

    model = trace.model or fallback
    if model is None:
        raise ValueError(f"{trace.source or trace.id}: the trace records no model; pass --model ID")
    try:
        return profile(model)
    except UnknownModelError as e:
        raise ValueError(str(e)) from None


def load_strategy(spec: str) -> tuple[str, Any]:
    """(label, instance) of a ``--strategy`` spec, loaded as ``run --strategies`` loads it (StrategyError
    with file and line on any problem)."""
    import strategies

    parsed = strategies.parse_spec(spec)
    return parsed.label, strategies.build(parsed)


def rows(trace: Any, *, driven: bool = False, model: str | None = None, strategy: str | None = None) -> list[dict]:
    """One row per recorded compaction of ``trace`` ([] when it has none, or when no strategy
    re-implements its agent and ``strategy`` is not given).

    ``strategy`` (a spec: ``mymod:Mine``, ``./mine.py:Mine``, ``codex@limit_fraction=0.8``) replays that
    strategy against the logged compactions instead of the version-matched built-in one.
    """
    import strategies
    from bench.attribution import adopt_shipped, shipped_counts
    from bench.fidelity import matching_strategy, recorded_calls, replay_recorded
    from bench.pricing import profile
    from bench.replay import COMPACTION_KINDS, ReplayConfig, replay
    from bench.tokens import TokenCounter

    if not trace.compactions:
        return []
    if strategy is not None:
        name, instance = load_strategy(strategy)
    else:
        name = matching_strategy(trace)
        if name is None or name not in strategies.names():
            return []
        instance = strategies.build(name)
    counter = TokenCounter()
    adopt_shipped(counter, trace, shipped_counts(trace, TokenCounter()))
    recorded = not model or model == "recorded"
    config = ReplayConfig(recorded_profile(trace) if recorded else profile(model), recorded_models=recorded)
    run = replay_recorded if driven else replay
    result = run(trace, instance, config, counter=counter)
    sent = {c.call: c.prompt_tokens for c in result.calls if c.kind == "agent"}
    fired = [e for e in result.events if e.kind in COMPACTION_KINDS]
    usage = [m.usage for m in trace.messages if m.role == "assistant"]
    out = []
    for k, (rc, call) in enumerate(zip(trace.compactions, recorded_calls(trace), strict=True)):
        before = usage[call - 1] if 0 < call <= len(usage) else None
        after = usage[call] if call < len(usage) else None
        e = fired[k] if k < len(fired) else None
        out.append({
            "trace": trace.id, "strategy": name, "trigger": rc.trigger, "recorded_call": call,
            "replayed_call": None if e is None else e.call,
            "call_delta": None if e is None else e.call - call,
            "recorded_pre": rc.pre_tokens or (before.prompt_tokens + before.output_tokens if before else None),
            "replayed_pre": None if e is None else e.tokens_before,
            "recorded_post": after.prompt_tokens if after else None,
            "replayed_post": None if e is None else sent.get(e.call, e.tokens_after),
        })
    return out


LEDGER_COLUMNS = ("trace", "calls", "ours_cache_read", "recorded_cache_read", "ours_cache_write",
                  "recorded_cache_write", "ours_uncached", "recorded_uncached", "ours_hit", "recorded_hit")


def ledger_row(trace: Any, *, model: str | None = None) -> dict | None:
    """Our cache split of ``none`` beside the recorded one (bench/ledger_check.py); None without usage."""
    import strategies
    from bench.attribution import attribute
    from bench.ledger_check import ledger_gap
    from bench.pricing import profile
    from bench.replay import ReplayConfig, replay
    from bench.tokens import TokenCounter

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
    from bench.pricing import add_prices
    from traces.formats import load

    for path in args.prices or ():
        add_prices(path)
    if args.strategy:
        load_strategy(args.strategy)  # a load problem fails before any session is read
    loaded = load(args.paths, lenient=args.lenient)
    table = [r for t in loaded.traces for r in rows(t, driven=args.driven, model=args.model,
                                                     strategy=args.strategy)]
    print(format_rows(table))
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
    f.set_defaults(fn=command)
