"""compaction-bench as a library: ``run``, ``load`` and ``compare``, returning pandas DataFrames and
the verdict (what to ship under an objective).

    import compaction_bench as cb

    result = cb.run(traces=["synthetic:short", "synthetic:long"],
                    strategies=["none", "codex", "codex@limit_fraction=0.5|0.7"], name="mine", workers=2)
    print(result.verdict.sentence)          # the recommendation and why
    result.table                            # one row per trace × strategy, sweep parameters as columns
    result.summary                          # one row per strategy
    cb.compare(result.table, "codex@limit_fraction=0.5", "codex@limit_fraction=0.7")

Keyword options are the command line's (``model``, ``workers``, ``summarizer``, ``seeds``, ``name``,
``out``, ...: every field of ``bench.run.runner.RunConfig``); ``model`` defaults to ``"recorded"`` as on the
command line: each trace as the model it recorded, a synthetic one as claude-sonnet-4-5. A script needs no
``if __name__ == "__main__":`` guard: while a run's worker processes start, the script is hidden from
them (they would otherwise re-run it and the pool would wait forever), and a strategy class defined
in the script itself runs in this process.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["Result", "compare", "load", "run"]


@dataclass(frozen=True)
class Result:
    run_dir: Path
    table: pd.DataFrame
    """One row per (trace, strategy): every metric of bench.scoring.metrics.METRICS, ``family`` and a
    ``param:<key>`` column per parameter a strategy label sets."""
    summary: pd.DataFrame
    """One row per strategy (bench.decide.verdict.aggregate: mean per trace, counts summed, ``errors``)."""
    verdict: Any
    """bench.decide.verdict.Verdict: ``sentence``, ``recommended``, ``runner_up``, ``ship()``, ``to_json()``."""


@contextlib.contextmanager
def _script_hidden_from_workers() -> Iterator[None]:
    """Spawned workers re-import ``__main__`` from its file unless it has none: a script without a main
    guard would then start the run again in every worker, which fails, and the pool never returns.
    The workers need nothing from the script (tasks carry strategy specs), so hide its path while
    they start."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or path is None or getattr(main, "__spec__", None) is not None:
        yield
        return
    del main.__file__
    try:
        yield
    finally:
        main.__file__ = path


def _spec(strategy: Any) -> tuple[str, bool]:
    """(spec text, defined in the running script) for a spec string or a Strategy class."""
    if isinstance(strategy, str):
        return strategy, False
    if inspect.isclass(strategy):
        from strategies import validate_class

        validate_class(strategy, origin=f"strategy {strategy.__name__}")
        if strategy.__module__ == "__main__":
            return f"{inspect.getfile(strategy)}:{strategy.__qualname__}", True
        return f"{strategy.__module__}:{strategy.__qualname__}", False
    raise TypeError(f"a strategy is a spec string (name, name@key=value, ./file.py:Class) or a class, "
                    f"not {type(strategy).__name__}")


def run(traces: Iterable[str] | str = (), strategies: Iterable[Any] | str = (), *, objective: str | None = None,
        progress: bool = False, report: bool = False, **options: Any) -> Result:
    """Replay ``traces`` through ``strategies`` into ``out/<name>/`` and decide under ``objective``.

    Trace filters are keywords too: ``min_calls=5``, ``min_tokens=20_000``, ``formats=["claude-code"]``
    (dropped traces are counted in run.json ``filtered``); ``weight="calls"`` or ``"tokens"`` weighs each
    trace in ``summary`` and the verdict (default ``"equal"``: every trace the same).

    ``report=True`` also renders report.html (as the CLI does unless ``--no-report``).
    """
    from bench.decide import verdict as bv
    from bench.run import runner

    allowed = {f.name for f in fields(runner.RunConfig)}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise TypeError(f"run() got unknown option(s) {', '.join(unknown)}; it takes {', '.join(sorted(allowed))}")
    specs = [_spec(s) for s in ([strategies] if isinstance(strategies, str) else strategies)]
    if any(local for _, local in specs):
        options["executor"] = "local"  # the script's own class cannot be shipped to a worker
        options["workers"] = 1
    config = runner.RunConfig(traces=tuple([traces] if isinstance(traces, str) else traces),
                              strategies=tuple(s for s, _ in specs), **options)
    with contextlib.nullcontext() if config.executor == "local" else _script_hidden_from_workers():
        output = runner.run(config, progress=progress)
    verdict = bv.decide(output.table, objective, weight=config.weight, summarizer=config.summarizer)
    if report:
        from reports import render

        render(output.run_dir, objective=objective)
    else:
        from bench.run.store import atomic_write

        atomic_write(output.run_dir / "verdict.json", verdict.to_json() + "\n")
    return Result(output.run_dir, bv.with_params(output.table), bv.aggregate(output.table, config.weight), verdict)


def load(run_dir: str | Path, *, objective: str | None = None, weight: str | None = None) -> Result:
    """A finished run folder's tables and its verdict under ``objective`` (nothing is replayed);
    ``weight`` (``equal``, ``calls``, ``tokens``) defaults to the run's own ``--weight``."""
    from bench.decide import verdict as bv

    run_dir = Path(run_dir)
    if not (run_dir / "run.json").is_file():
        raise ValueError(f"{run_dir}: not a run folder (no run.json)")
    try:
        from bench.run.store import load_results

        table = load_results(run_dir)
    except (ImportError, OSError, ValueError):
        table = pd.read_csv(run_dir / "results.csv", low_memory=False)
    if weight is None:
        import json

        try:
            weight = (json.loads((run_dir / "run.json").read_text(encoding="utf-8")).get("config") or {}).get("weight")
        except ValueError:
            weight = None
    weight = bv.check_weight(weight)
    return Result(run_dir, bv.with_params(table), bv.aggregate(table, weight),
                  bv.decide(table, objective, weight=weight))


def compare(results: Result | pd.DataFrame | str | Path, a: str, b: str, metric: str = "cost", *,
            resamples: int = 10_000, weight: str = "equal") -> dict[str, Any]:
    """``b − a`` on ``metric``, paired over the traces both finished: mean, 95% CI, significance, text."""
    from bench.decide import verdict as bv

    table = results.table if isinstance(results, Result) else results if isinstance(results, pd.DataFrame) \
        else load(results).table
    c = bv.paired(table, a, b, metric, resamples=resamples, weight=weight)
    return {"a": a, "b": b, "metric": metric, "n": c.n, "mean_diff": c.mean_diff, "ci_low": c.ci_low,
            "ci_high": c.ci_high, "significant": c.significant, "text": f"{b}: {bv.describe_pair(c, metric, b, a)}"}
