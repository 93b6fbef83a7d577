"""`compaction-bench`: a thin shell over the library (run, list, import, report)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path


def _run(args: argparse.Namespace) -> int:
    from bench.runner import RunConfig, format_fidelity, format_summary, run

    config = RunConfig(
        traces=tuple(args.traces or ()),
        strategies=tuple(s for group in (args.strategies or ()) for s in group.split()),
        model=args.model,
        summarizer=args.summarizer,
        summarizer_model=args.summarizer_model,
        seed=args.seed,
        seeds=args.seeds,
        seconds_per_call=args.seconds_per_call,
        cache_ttl=args.cache_ttl,
        workers=args.workers,
        lenient=args.lenient,
        name=args.name,
        out=args.out,
        summarizer_options={"model": args.summarizer_model}
        if args.summarizer == "anthropic" and args.summarizer_model else {},
        probe=args.probe,
        probe_model=args.probe_model,
    )
    output = run(config, progress=not args.quiet)
    for note in output.notes:
        print(f"note: {note}", file=sys.stderr)
    if output.skipped:
        print(f"skipped {output.skipped} bad records (--lenient)", file=sys.stderr)
    print(format_summary(output.summary))
    fidelity = format_fidelity(output.table)
    if fidelity:
        print("\nFidelity: the matching strategy, driven by the recorded usage, vs the real agent's first compaction")
        print(fidelity)
    print(f"\n{len(output.results)} tasks ({output.resumed} resumed) → {output.run_dir}/")
    if not args.no_report:
        try:
            from reports import render
        except ImportError:
            pass
        else:
            print(f"report: {render(output.run_dir)}")
    for r in output.errors:
        print(f"error: {r.trace} × {r.strategy}: {r.error}", file=sys.stderr)
    return 1 if output.errors else 0


def _list(args: argparse.Namespace) -> int:
    import strategies

    if args.what == "strategies":
        for name in strategies.names():
            strategy = strategies.build(name)
            params = ", ".join(f"{k}={v!r}" for k, v in strategy.params().items())
            print(f"{name}\n    {type(strategy).citation}\n    {params}")
    elif args.what == "models":
        from bench.pricing import price_table

        for model_id, p in sorted(price_table()[1].items()):
            print(f"{model_id:32} window {p.context_window:>9,}  max out {p.max_output:>7,}  "
                  f"in ${p.rates.input}/M  out ${p.rates.output}/M")
    elif args.what == "scenarios":
        from traces.scenarios import DEFAULT_BENCH, SCENARIOS

        for name in SCENARIOS:
            print(f"{name}{'  (default)' if name in DEFAULT_BENCH else ''}")
    return 0


def _import(args: argparse.Namespace) -> int:
    from bench.tokens import TokenCounter
    from traces import native
    from traces.formats import load

    result = load(args.files, lenient=args.lenient)
    counter = TokenCounter()
    for trace in result.traces:
        replaced = (Path(args.out) / f"{native.safe_name(trace.id)}{native.SUFFIX}").exists()
        path = native.write_many([trace], args.out)[0]
        tokens = sum(counter.counts(trace.messages))
        print(f"{trace.id}: {trace.agent}, {len(trace.messages)} messages, {trace.n_tool_calls} tool calls, "
              f"{tokens:,} tokens, {len(trace.compactions)} recorded compactions → {path}"
              + (" (replaced the file that was there)" if replaced else ""))
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    if result.skipped:
        print(f"skipped {result.skipped} bad records (--lenient)", file=sys.stderr)
    if not result.traces:
        raise ValueError("no traces to import in " + ", ".join(args.files))
    return 0


def _report(args: argparse.Namespace) -> int:
    import json

    from reports import render

    run_dir = Path(args.run_dir)
    missing = [name for name in ("run.json", "results.csv", "calls.csv") if not (run_dir / name).is_file()]
    if missing:
        raise ValueError(f"{run_dir}: not a finished run folder (no {', '.join(missing)}); "
                         "`compaction-bench run --name NAME` writes one to out/NAME/")
    try:
        json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except ValueError as e:
        raise ValueError(f"{run_dir / 'run.json'}: bad JSON ({e})") from None
    print(render(run_dir))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="compaction-bench", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="replay traces through strategies and score them")
    r.add_argument("--traces", nargs="+", metavar="SOURCE",
                   help="files, folders, globs, hf:owner/name or synthetic:<scenario> (default: the bench scenarios)")
    r.add_argument("--strategies", nargs="+", metavar="SPEC",
                   help="names, name@key=value,... or module:Class (default: every registered strategy)")
    r.add_argument("--model", default="claude-sonnet-4-5", help="model id priced in bench/data/prices.toml")
    r.add_argument("--summarizer", default="extractive",
                   help="extractive (offline, the default), recorded (a real trace's own summaries) or anthropic")
    r.add_argument("--summarizer-model", default=None,
                   help="the summarizer's model (anthropic: the model called; extractive: the model billed)")
    r.add_argument("--probe", choices=("exact", "anthropic"), default="exact",
                   help="score needles by exact presence (offline), or also ask a real model (anthropic)")
    r.add_argument("--probe-model", default=None, help="the model the anthropic probe asks (claude-haiku-4-5)")
    r.add_argument("--seed", type=int, default=0, help="the first seed of the synthetic sessions")
    r.add_argument("--seeds", type=int, default=1, help="synthetic sessions per scenario (seed, seed+1, ...)")
    r.add_argument("--seconds-per-call", type=float, default=10.0,
                   help="clock pace when a trace has no timestamps (drives the cache lifetime)")
    r.add_argument("--cache-ttl", choices=("5m", "1h"), default="5m")
    r.add_argument("--workers", type=int, default=2)
    r.add_argument("--lenient", action="store_true", help="skip bad records in imported traces, and count them")
    r.add_argument("--name", default="run", help="run name: results go to OUT/NAME/")
    r.add_argument("--out", default="out")
    r.add_argument("--no-report", action="store_true", help="skip the HTML report")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.set_defaults(fn=_run)

    ls = sub.add_parser("list", help="list strategies, models or scenarios")
    ls.add_argument("what", choices=("strategies", "models", "scenarios"))
    ls.set_defaults(fn=_list)

    im = sub.add_parser("import", help="convert agent session logs to the native format")
    im.add_argument("files", nargs="+")
    im.add_argument("--out", required=True)
    im.add_argument("--lenient", action="store_true")
    im.set_defaults(fn=_import)

    rp = sub.add_parser("report", help="render report.html and PNG charts for a finished run")
    rp.add_argument("run_dir")
    rp.set_defaults(fn=_report)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from strategies import StrategyError
    from traces.model import TraceError

    try:
        return int(args.fn(args))
    except BrokenPipeError:  # `compaction-bench list strategies | head`: the reader has gone, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (StrategyError, TraceError, ValueError, KeyError, OSError) as e:  # SummarizerError is a ValueError
        print(f"compaction-bench: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        resume = "; finished tasks are saved: run the same command again to resume" if args.command == "run" else ""
        print(f"compaction-bench: interrupted{resume}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
