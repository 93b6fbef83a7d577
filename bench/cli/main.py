"""`compaction-bench`: a thin shell over the library (run, list, import, report)."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.run.executors import Pools


def _config(args: argparse.Namespace):
    """The bench.run.runner.RunConfig of a `run` (or `plan`) command line."""
    from bench.run.runner import RunConfig

    return RunConfig(
        objective=getattr(args, "objective", None),
        traces=tuple(args.traces or ()),
        strategies=tuple(s for group in (args.strategies or ()) for s in group.split()),
        model=args.model,
        truth=args.truth,
        prices=tuple(args.prices or ()),
        strict_prices=args.strict_prices,
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
        min_calls=args.min_calls,
        min_tokens=args.min_tokens,
        formats=tuple(args.format or ()),
        weight=args.weight,
        open_loop=getattr(args, "open_loop", False),
        **_scale_options(args),
    )


def _print_notes(notes: list[str], written: Path) -> None:
    """The importers' notes in a few lines (bench.run.sources.console_notes); all of them are in ``written``."""
    from bench.run.sources import console_notes

    for note in console_notes(notes, written if written.exists() else None):
        print(f"note: {note}", file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    """One pool of workers for the run and its robustness replays (bench.run.executors.shared_pools),
    ended before the report is drawn, and however the command ends."""
    from bench.run.executors import shared_pools

    with shared_pools() as pools:
        return _run_with(args, pools)


def _run_with(args: argparse.Namespace, pools: Pools) -> int:
    from bench.run.runner import format_fidelity, format_means, run
    from bench.run.sources import NOTES_FILE

    output = run(_config(args), progress=not args.quiet)
    _print_notes(output.notes, output.run_dir / NOTES_FILE)
    if output.skipped:
        print(f"skipped {output.skipped} bad records (--lenient)", file=sys.stderr)
    if output.errors and len(output.errors) == len(output.results):  # nothing to score, report or recommend
        _print_errors(output.errors)
        print(f"compaction-bench: every task failed ({len(output.errors)}); no report → {output.run_dir}/",
              file=sys.stderr)
        return 1
    from bench.decide.verdict import weighting_text
    from bench.run.runner import CONSOLE_WIDTH

    print(format_means(output.results, args.weight))
    print(textwrap.fill(f"(per trace: {weighting_text(args.weight)}; compact and overflows are totals; every "
                        f"metric is in {output.run_dir}/results.csv)", CONSOLE_WIDTH, break_on_hyphens=False))
    fidelity = format_fidelity(output.results)
    if fidelity:
        print("\nFidelity: the matching strategy, on provider counts (undriven) vs the real agent's first "
              "automatic compaction")
        print(fidelity)
    print(f"\n{output.tasks} tasks ({output.resumed} resumed) → {output.run_dir}/")
    if output.stopped:
        print(f"stopped: {output.stopped}", file=sys.stderr)
    from bench.decide.verdict import decide

    verdict = decide(output.results, args.objective, weight=args.weight, summarizer=args.summarizer)
    print("\n" + textwrap.fill(f"verdict: {verdict.sentence}", CONSOLE_WIDTH, subsequent_indent="  ",
                               break_on_hyphens=False))
    from bench.run.robustness import analyse, attach

    robust = None
    if args.robustness != "off":
        if not args.quiet and args.robustness == "replay":
            print("(checking the choice under other prices, weights, scenarios, window and cache TTL; the last "
                  "two replay)", file=sys.stderr)
        try:
            robust = analyse(output.run_dir, output.results, verdict, objective=args.objective, weight=args.weight,
                             summarizer=args.summarizer, replay=args.robustness == "replay")
            verdict = attach(verdict, robust)
        except Exception as e:  # noqa: BLE001 - the verdict stands without it, and says so
            print(f"robustness: not measured ({str(e).splitlines()[0][:200] if str(e) else type(e).__name__})",
                  file=sys.stderr)
    pools.close()  # the last replay is done: the workers' memory is the report's
    if robust is not None and robust.lines():
        print(f"robustness: {robust.headline()}")
        print("\n".join(textwrap.fill(line, CONSOLE_WIDTH, subsequent_indent="    ", break_on_hyphens=False,
                                       break_long_words=False) for line in robust.lines()))
    if not args.no_report:
        try:
            from reports import render
        except ImportError:
            pass
        else:
            page = render(output.run_dir, objective=args.objective, self_contained=args.self_contained,
                          progress=not args.quiet)
            print(f"report: {page}")
    if args.no_report or not (output.run_dir / "verdict.json").exists():
        from bench.run.store import atomic_write

        atomic_write(output.run_dir / "verdict.json", verdict.to_json() + "\n")
    if verdict.recommended:
        # one unbroken line, so it can be pasted into --strategies or a config as it is
        print(f"\nship (every setting written out):\n{exact_spec(verdict.recommended)}")
    _print_errors(output.errors)
    return 1 if output.errors else 0


def exact_spec(label: str) -> str:
    """The recommended strategy with every scalar setting written out (its defaults included), so what
    ships is the same whatever defaults a later version of the registry changes; it builds back to the
    same strategy (tests/test_cli.py)."""
    import dataclasses

    import strategies

    built = strategies.build(label)
    scalar = (int, float, str, bool, type(None))  # what a spec can write; a list-valued setting keeps its default
    settings = ",".join(f"{f.name}={getattr(built, f.name)!r}" for f in dataclasses.fields(built)
                        if f.init and not f.name.startswith("_") and isinstance(getattr(built, f.name), scalar))
    name = label.split("@", 1)[0]
    return f"{name}@{settings}" if settings else name


def _print_errors(errors: list[tuple[str, str, str]]) -> None:
    """Each failed session once: its first line of error, and which of its strategies it stopped
    (the same cause, a refused model or an unreadable record, fails every task of a session alike)."""
    by: dict[tuple[str, str], list[str]] = {}
    for trace, strategy, error in errors:
        by.setdefault((trace, error.splitlines()[0] if error else "failed"), []).append(strategy)
    for (trace, error), labels in by.items():
        which = labels[0] if len(labels) == 1 else f"{len(labels)} strategies ({', '.join(labels[:3])}" \
            + (", …)" if len(labels) > 3 else ")")
        print(f"error: {trace} × {which}: {error[:300]}", file=sys.stderr)


def _scale_options(args: argparse.Namespace) -> dict:
    """The run options of bench.run.runner.RunConfig for big runs (executor, shard, detail, exports, budget)."""
    return {"executor": args.executor, "ray_address": args.ray_address, "shard": args.shard,
            "detail": args.detail, "csv": args.csv, "max_cost": args.max_cost}


def _add_scale_options(r: argparse.ArgumentParser) -> None:
    r.add_argument("--executor", choices=("local", "process", "ray"), default="process",
                   help="where tasks run: this process, a process pool of --workers (default) or Ray")
    r.add_argument("--ray-address", default=None,
                   help="an existing Ray cluster (default: RAY_ADDRESS, else a local one with --workers CPUs)")
    r.add_argument("--shard", default=None, metavar="I/N",
                   help="run only shard I of N (split by trace hash); join shards with `compaction-bench merge`")
    r.add_argument("--detail", choices=("summary", "calls", "full"), default="full",
                   help="what is kept: results only, + the per-call ledger, + events, probes and summaries")
    r.add_argument("--csv", choices=("auto", "yes", "no"), default="auto",
                   help="CSV/JSONL exports beside the Parquet store (auto: runs of up to 5,000 tasks)")
    r.add_argument("--max-cost", type=float, default=None, metavar="USD",
                   help="stop before a paid-API run (--summarizer anthropic) spends more than this")


def _export(args: argparse.Namespace) -> int:
    from bench.run.store import DETAIL, export, read_plan

    run_dir = Path(args.run_dir)
    read_plan(run_dir)
    for path in export(run_dir, tuple(t for t in DETAIL["full"] if t != "results")):
        print(path)
    return 0


def _merge(args: argparse.Namespace) -> int:
    from bench.run.merge import merge_runs

    print(f"merged {len(args.runs)} runs → {merge_runs(Path(args.out), [Path(r) for r in args.runs])}/")
    return 0


def _plan(args: argparse.Namespace) -> int:
    from bench.cli.plan import estimate, format_estimate

    print(format_estimate(estimate(_config(args), sample=args.sample, report=not args.no_report)))
    return 0


def _list(args: argparse.Namespace) -> int:
    import strategies

    if args.what == "strategies":
        from bench.cli.help_format import one_line

        for name in strategies.names():
            strategy = strategies.build(name)
            params = ", ".join(f"{k}={v!r}" for k, v in strategy.params().items())
            doc = one_line(type(strategy).__doc__)
            print(f"{name:28} {doc}\n    {type(strategy).citation}\n    {params}")
    elif args.what == "models":
        from bench.cost.pricing import LIBRARY, ONE_M, override_why, price_table

        table_id, overrides = price_table()
        print(f"bench/data/prices.toml ({table_id}): what {LIBRARY} lacks or an agent applies differently")
        for model_id, p in sorted(overrides.items()):
            print(f"{model_id:32} window {p.context_window:>9,}  max out {p.max_output:>7,}  "
                  f"in ${p.rates.input}/M  out ${p.rates.output}/M\n    why: {override_why(model_id)}")
        print(f"{LIBRARY} prices every other model it knows (about 2,300; dated ids, provider prefixes and "
              f"the {ONE_M} suffix resolve); a model none knows runs at a stated fallback unless --strict-prices")
    elif args.what == "formats":
        from bench.run.sources import HF, SYNTHETIC
        from traces.formats import READERS

        for name, module in READERS.items():
            print(f"{name:16} {module}")
        print(f"{HF:16} hf:owner/name dataset rows\n{SYNTHETIC:16} synthetic:<scenario> sessions")
    elif args.what == "scenarios":
        from traces.scenarios import DEFAULT_BENCH, SCENARIOS

        for name, spec in SCENARIOS.items():
            print(f"{name:14} ~{spec.tokens / 1000:,.0f}K tokens, {spec.turns} human turns  {spec.description}"
                  f"{'  (default)' if name in DEFAULT_BENCH else ''}")
    return 0


def _import(args: argparse.Namespace) -> int:
    from bench.tokens.counter import TokenCounter
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
    from bench.run.sources import write_notes

    written = write_notes(Path(args.out), result.notes, result.details, name=".import_notes.txt")
    _print_notes(result.notes, written or Path(args.out) / ".import_notes.txt")
    if result.skipped:
        print(f"skipped {result.skipped} bad records (--lenient)", file=sys.stderr)
    if not result.traces:
        raise ValueError("no traces to import in " + ", ".join(args.files))
    return 0


def _report(args: argparse.Namespace) -> int:
    import json

    from reports import render

    run_dir = Path(args.run_dir)
    missing = [name for name in ("run.json", "results.csv", "calls.csv") if not (run_dir / name).is_file()
               and not (name == "calls.csv" and (run_dir / "data" / "plan.parquet").is_file())]
    if missing:
        raise ValueError(f"{run_dir}: not a finished run folder (no {', '.join(missing)}); "
                         "`compaction-bench run --name NAME` writes one to out/NAME/")
    try:
        json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except ValueError as e:
        raise ValueError(f"{run_dir / 'run.json'}: bad JSON ({e})") from None
    failed = _failed_tasks(run_dir)
    if failed is not None:
        print(f"compaction-bench: {run_dir}: nothing to show: {failed}", file=sys.stderr)
        return 1
    print(render(run_dir, objective=args.objective, self_contained=args.self_contained))
    return 0


def _failed_tasks(run_dir: Path) -> str | None:
    """Why a run folder has no result to show (no task, or every task failed), else None."""
    import pandas as pd

    try:
        results = pd.read_csv(run_dir / "results.csv", keep_default_na=False, low_memory=False)
    except pd.errors.EmptyDataError:
        results = pd.DataFrame()
    if results.empty:
        return "the run has no task"
    errors = results.error.astype(str) if "error" in results else pd.Series("", index=results.index)
    if (errors != "").all():
        first = f"{results.trace.iloc[0]} × {results.strategy.iloc[0]}: {errors.iloc[0]}"
        return f"every task failed ({len(results)}); the first: {first}"
    return None


RUN_EXAMPLES = """examples:
  compaction-bench run --name bench --seeds 3                    every strategy on the default scenarios
  compaction-bench run --strategies none codex opencode --traces ../shared/traces --name real
  compaction-bench run --traces ../shared/traces --min-calls 20 --format claude-code,codex --weight tokens
      only sessions of 20+ calls in those formats (what was dropped is counted), long sessions weigh more
  compaction-bench run --strategies none 'codex@limit_fraction=0.5|0.7|0.9' --name tune
      a sweep: `|` lists the values to try for one parameter (quote it for the shell);
      'a@x=1|2,y=3|4' runs every combination
  compaction-bench run --strategies none ./mine.py:Mine --objective 'retention>=0.9,min-cost'
      your own class from a file (`compaction-bench new-strategy mine` writes one)
"""
OBJECTIVE_HELP = ("what to recommend (verdict.json, the report's first sentence): a goal min-cost | max-retention "
                  "| min-<metric> | max-<metric> and constraints such as overflows=0, retention>=0.75, "
                  "retention>=none-0.05, retention>=best (not significantly below the best, paired bootstrap), "
                  "cost<=1.5 (per trace), comma-separated; overflows=0 is implied unless given; checked before "
                  "any replay (default: %(default)s = overflows=0,instructions>=0.9,retention>=best,min-cost; "
                  "instructions>=0.9 applies only where a trace plants rules)")


TUNE_EXAMPLES = """examples:
  compaction-bench tune --strategies codex --seeds 4
      Codex's limit_fraction over the grid it declares, on 20 synthetic sessions: half choose, half score
  compaction-bench tune --strategies 'observation-masking@n=4|8|12' --traces ../shared/traces --held-out 0.3
"""


def _tune(args: argparse.Namespace) -> int:
    from bench.run.sources import NOTES_FILE
    from bench.run.tune import TUNE_CSV, TUNE_JSON, format_tuning, tune

    tuning = tune(_config(args), held_out=args.held_out, split_seed=args.split_seed, progress=not args.quiet)
    _print_notes(tuning.notes, tuning.run_dir / NOTES_FILE)
    print(format_tuning(tuning))
    print(f"\nevery setting on both parts: {tuning.run_dir}/{TUNE_CSV}\nthe choices, the split and the sensitivity: "
          f"{tuning.run_dir}/{TUNE_JSON}\n(the whole run, in-sample: compaction-bench report {tuning.run_dir})")
    _print_errors(tuning.errors)
    return 1 if tuning.errors else 0


def _show(args: argparse.Namespace) -> int:
    from bench.cli.show import context_at, format_diff, format_shown

    shown = context_at(args.run_dir, args.trace, args.strategy, args.call)
    if args.diff:
        print(format_diff(shown, context_at(args.run_dir, args.trace, args.diff, args.call)))
    else:
        print(format_shown(shown))
    return 0


def _new_strategy(args: argparse.Namespace) -> int:
    from compaction_bench.scaffold import write

    for path in write(args.name, args.dir):
        print(f"wrote {path}")
    return 0


EXIT_CODES = """exit codes:
  0    done (run: every task finished; conformance: every session conforms)
  1    run: some tasks failed (each failed session is named once; the others' results are stored);
       conformance: a session does not conform
  2    refused before any work: bad option, strategy, price file, source or unreadable input
  130  interrupted (Ctrl-C): finished tasks are saved, the same command resumes"""


def parser() -> argparse.ArgumentParser:
    from bench.cli.help_format import DefaultsHelp

    p = argparse.ArgumentParser(prog="compaction-bench", description=__doc__, epilog=EXIT_CODES,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="replay traces through strategies and score them",
                       formatter_class=DefaultsHelp, epilog=RUN_EXAMPLES)
    r.add_argument("--traces", nargs="+", metavar="SOURCE",
                   help="files, folders, globs, hf:owner/name, entire:REPO (sessions the Entire CLI keeps in git) "
                        "or synthetic:<scenario> (default: the bench scenarios)")
    r.add_argument("--strategies", nargs="+", metavar="SPEC",
                   help="names, name@key=value,... or module:Class (default: every registered strategy)")
    r.add_argument("--model", default="recorded",
                   help="'recorded' (default): each trace as the model it recorded, call by call (synthetic "
                        "ones as claude-sonnet-4-5); or a model id (genai-prices, prices.toml), forced on all")
    r.add_argument("--prices", action="append", metavar="FILE",
                   help="a TOML price file (bench/data/prices.toml's schema) for models it does not know")
    r.add_argument("--strict-prices", action="store_true",
                   help="refuse a model that no price table knows (--prices, prices.toml, genai-prices), instead "
                        "of running it priced as its family's stated default and flagging it")
    r.add_argument("--truth", choices=("provider", "cl100k", "o200k", "anthropic"), default="provider",
                   help="token counts: provider (recorded usage, else calibrated per family; default), cl100k, "
                        "o200k, or anthropic (the count-tokens endpoint, ANTHROPIC_API_KEY, cached on disk)")
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
    r.add_argument("--objective", default="default", help=OBJECTIVE_HELP)
    r.add_argument("--robustness", choices=("replay", "recompute", "off"), default="replay",
                   help="does the verdict hold under change: replay (default: prices ±20%%, weighting and "
                        "scenarios recomputed, window 1M and cache TTL replayed for the top candidates), "
                        "recompute (no replay) or off")
    r.add_argument("--self-contained", action="store_true", help="embed the charts in report.html (one file)")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.add_argument("--min-calls", type=int, default=0, metavar="N",
                   help="skip traces with fewer than N agent calls (counted per filter in run.json; default 0)")
    r.add_argument("--min-tokens", type=int, default=0, metavar="N",
                   help="skip traces of fewer than N tokens, the whole session in cl100k (default 0)")
    r.add_argument("--format", action="append", metavar="NAME[,NAME]",
                   help="keep only traces read by these importers (`compaction-bench list formats`), "
                        "e.g. --format claude-code,codex (default: every format)")
    from bench.decide.verdict import WEIGHT_HELP, WEIGHTS

    r.add_argument("--weight", choices=tuple(WEIGHTS), default="equal", help=WEIGHT_HELP)
    r.add_argument("--open-loop", action="store_true",
                   help="replay the recorded future as it is: no simulated re-read of a file the strategy dropped "
                        "before the recorded agent acts on it (by default they are made and billed)")
    _add_scale_options(r)
    r.set_defaults(fn=_run)

    pl = sub.add_parser("plan", parents=[r], add_help=False, conflict_handler="resolve",
                        help="count a run's tasks and estimate its time and output size (a short calibration)")
    pl.add_argument("--sample", type=int, default=2, help="traces replayed to calibrate (default 2)")
    pl.set_defaults(fn=_plan)

    tu = sub.add_parser("tune", parents=[r], add_help=False, conflict_handler="resolve", formatter_class=DefaultsHelp,
                        help="tune a strategy's thresholds: choose on some traces, score the choice on the others",
                        epilog=TUNE_EXAMPLES)
    tu.add_argument("--strategies", nargs="+", metavar="SPEC", required=True,
                    help="the strategies to tune: a name searches the grid it declares (`tuning`), "
                         "name@key=v1|v2 the values given, name@key=v fixes a parameter")
    tu.add_argument("--name", default="tune", help="run name: results go to OUT/NAME/ (with tune.json, tune.csv)")
    tu.add_argument("--held-out", type=float, default=0.5, metavar="SHARE",
                    help="share of the traces held out to score the choice (stratified by scenario or agent)")
    tu.add_argument("--split-seed", type=int, default=0, help="the seed of the training / held-out split")
    tu.add_argument("--no-report", action="store_true", help=argparse.SUPPRESS)  # tune writes no report.html
    tu.add_argument("--self-contained", action="store_true", help=argparse.SUPPRESS)
    tu.set_defaults(fn=_tune)

    ex = sub.add_parser("export", help="write calls.csv, events.jsonl, ... of a run from its Parquet store",
                        description="Write a finished run's tables as CSV / JSONL beside its Parquet task store "
                                    "(calls.csv, events.jsonl, summaries.jsonl, probes.csv, fidelity.csv, ledger.csv, "
                                    "as far as the run kept them), for runs that skipped them (--csv no, or over "
                                    "5,000 tasks). Prints each file written.")
    ex.add_argument("run_dir", help="a finished run folder (out/NAME), the one holding run.json and data/")
    ex.set_defaults(fn=_export)

    mg = sub.add_parser("merge", help="join the outputs of shard runs (--shard i/N) into one run folder")
    mg.add_argument("runs", nargs="+", help="the shard run folders")
    mg.add_argument("--out", required=True, help="the merged run folder")
    mg.set_defaults(fn=_merge)

    ls = sub.add_parser("list", help="list strategies, models, scenarios or formats")
    ls.add_argument("what", choices=("strategies", "models", "scenarios", "formats"))
    ls.set_defaults(fn=_list)

    im = sub.add_parser("import", help="convert agent session logs to the native format",
                        description="Read agent session logs in any known format (`compaction-bench list formats`) "
                                    "and write each trace as one native JSONL file; prints a line per trace.")
    im.add_argument("files", nargs="+", help="files, folders, globs, hf:owner/name or entire:REPO")
    im.add_argument("--out", required=True, metavar="DIR",
                    help="folder for the native files, one per trace (created if missing; a trace already there "
                         "is replaced); files no importer claims are listed in DIR/.import_notes.txt")
    im.add_argument("--lenient", action="store_true",
                    help="skip bad records (and replace invalid text) and count them, instead of stopping at the "
                         "first with an error naming its file and line")
    im.set_defaults(fn=_import)

    rp = sub.add_parser("report", help="render report.html and PNG charts for a finished run")
    rp.add_argument("run_dir")
    rp.add_argument("--objective", default="default", help=OBJECTIVE_HELP)
    rp.add_argument("--self-contained", action="store_true", help="embed the charts in report.html (one file)")
    rp.set_defaults(fn=_report)

    sh = sub.add_parser("show", help="the context a strategy sent at one call (replays that one task again)",
                        epilog="example (after make bench): compaction-bench show out/bench "
                               "--trace synthetic/long/seed0 --strategy codex --call 139 --diff opencode")
    sh.add_argument("run_dir")
    sh.add_argument("--trace", required=True,
                    help="trace id: the trace column of results.csv (synthetic/<scenario>/seed<N> for the scenarios)")
    sh.add_argument("--strategy", required=True, help="strategy label, as in the report")
    sh.add_argument("--call", type=int, required=True, help="agent call index (the x axis of context_over_calls)")
    sh.add_argument("--diff", metavar="STRATEGY2", help="show what STRATEGY2 sent differently at the same call")
    sh.set_defaults(fn=_show)

    ns = sub.add_parser("new-strategy", help="write a commented strategy skeleton NAME.py and its test")
    ns.add_argument("name")
    ns.add_argument("--dir", default=".", help="where to write them (default: the current directory)")
    ns.set_defaults(fn=_new_strategy)

    from bench.cli.fidelity import add_parser as add_fidelity

    add_fidelity(sub)
    from bench.cli.conformance import add_parser as add_conformance

    add_conformance(sub)
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
