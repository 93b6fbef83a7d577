"""The end of a run, streamed: results.csv written batch by batch from the task store, and the few
columns the console, the verdict and its robustness read kept in memory.

Why: the main process of a 10,000-session run streams its tasks at a flat 200-300 MB, and used to
peak at the end, when every result row was tabled at once (the stored rows, their pandas frame, the
finished table and the CSV text are each a full copy). Here the stored rows are read in plan order a
batch at a time (bench.run.store.ordered_frames), each batch finished (bench.scoring.metrics.finish_table
with every task of a trace in the same batch, so the paired columns find its ``none`` row there) and
appended to results.csv, byte for byte the file the one-frame path writes. What stays
is ``END_COLUMNS`` plus the objective's metrics per task: O(tasks × a few floats), which the verdict
needs anyway (its paired bootstrap resamples per-trace values).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from bench.run.store import ORDERED_ROWS, ordered_frames

if TYPE_CHECKING:
    import pandas as pd

END_COLUMNS = ("trace", "strategy", "calls", "input_tokens", "saving_vs_none", "peak_context", "compactions",
               "events", "overflows", "cost", "retention", "summarizer_cost_share", "fidelity_recorded_call",
               "fidelity_replayed_call", "fidelity_call_delta", "fidelity_recorded_pre_tokens",
               "fidelity_replayed_pre_tokens", "error")
"""What the end of a run reads from the results table, besides the objective's metrics: the console
means (bench.run.runner.CONSOLE_COLUMNS) and fidelity lines, the verdict (cost for ties, overflows and
events for "nothing acted", calls and peak_context for ``--weight``, retention and saving_vs_none for
the candidates' values), the robustness fingerprint and summarizer gap (compactions), the budget
(summarizer_cost_share) and the errors."""


def end_columns(objective: str | None = None) -> list[str]:
    """``END_COLUMNS`` and the metrics ``objective`` names (its goal and constraints), in results.csv order."""
    from bench.decide.verdict import parse_objective
    from bench.scoring.metrics import METRICS

    obj = parse_objective(objective)
    wanted = {*END_COLUMNS, obj.goal, *(c.metric for c in obj.constraints)}
    order = ["trace", "strategy", *(m.name for m in METRICS)]
    return [c for c in order if c in wanted] + [c for c in END_COLUMNS if c not in order]


def finished(run_dir: Path, plan: pd.DataFrame | None = None, rows: int = ORDERED_ROWS) -> Iterator[pd.DataFrame]:
    """The results table (bench.scoring.metrics.finish_table of every stored row) a batch at a time. A batch
    holds every task of its traces (the plan keeps them together), so each task's paired columns find
    their trace's ``none`` row in the same batch."""
    from bench.scoring.metrics import finish_table

    for rows_ in ordered_frames(run_dir, "results", plan, rows=rows, whole="trace"):
        yield finish_table(rows_)


def finish(run_dir: Path, plan: pd.DataFrame | None = None, columns: Iterable[str] | None = None, *,
           csv: bool = True, rows: int = ORDERED_ROWS) -> pd.DataFrame:
    """Write results.csv (when ``csv``) batch by batch and return the results table's ``columns`` (every
    column when None, which is the one-frame table: bench.run.runner.aggregate)."""
    import pandas as pd

    run_dir = Path(run_dir)
    keep = None if columns is None else list(columns)
    path = run_dir / "results.csv"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    kept: list[pd.DataFrame] = []
    out = tmp.open("w", encoding="utf-8", newline="") if csv else None
    try:
        first = True
        for table in finished(run_dir, plan, rows):
            if out is not None:
                out.write(table.to_csv(index=False, header=first))
            first = False
            kept.append(table if keep is None else table[[c for c in keep if c in table]])
        if out is not None and first:  # no stored row: what the one-frame path writes for an empty table
            out.write(pd.DataFrame().to_csv(index=False))
    finally:
        if out is not None:
            out.close()
    if out is not None:
        tmp.replace(path)
    if not kept:
        return pd.DataFrame()
    return pd.concat(kept, ignore_index=True) if len(kept) > 1 else kept[0].reset_index(drop=True)
