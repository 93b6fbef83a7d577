"""`compaction-bench merge`: join the outputs of shard runs (``--shard i/N``) into one run folder.

For schedulers without Ray (a Slurm array: one shard per job). The shards' Parquet batches are
copied (a task stored by two shards counts once), their plans united in the unsharded order, and
the results table, run.json and (for small runs) the CSV exports written as one run would have.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.run.finish import finish
from bench.run.runner import CSV_AUTO_TASKS
from bench.run.store import DETAIL, export, merge, read_plan, write_run


def merge_runs(out_dir: Path, runs: list[Path]) -> Path:
    """Merge shard run folders into ``out_dir``; refuses runs of different configurations."""
    infos = []
    for run in runs:
        path = Path(run) / "run.json"
        try:
            infos.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as e:
            raise ValueError(f"{path}: not a finished run ({e})") from None
    configs = [{k: v for k, v in info["config"].items() if k not in ("shard", "name", "out")} for info in infos]
    if any(c != configs[0] for c in configs[1:]):
        raise ValueError("the runs to merge differ in configuration (beyond --shard, --name and --out)")
    out_dir = Path(out_dir)
    if (out_dir / "data").exists():
        raise ValueError(f"{out_dir}: already holds a run; merge into a new folder")
    merge(out_dir, [Path(r) for r in runs])
    plan = read_plan(out_dir)
    finish(out_dir, plan, ())  # results.csv, streamed
    first = plan.drop_duplicates("trace").set_index("trace").tpos
    traces = {t["id"]: t for info in infos for t in info.get("traces", [])}
    info = {**infos[0], "config": {**infos[0]["config"], "shard": None, "name": out_dir.name,
                                   "out": str(out_dir.parent)},
            "traces": sorted(traces.values(), key=lambda t: first.get(t["id"], 0)),
            "merged_from": [str(r) for r in runs]}
    info.pop("schema_version", None)
    write_run(out_dir, info)
    detail = infos[0]["config"].get("detail", "full")
    csv = infos[0]["config"].get("csv", "auto")
    if csv == "yes" or (csv == "auto" and len(plan) <= CSV_AUTO_TASKS):
        export(out_dir, tuple(t for t in DETAIL[detail] if t != "results"))
    return out_dir
