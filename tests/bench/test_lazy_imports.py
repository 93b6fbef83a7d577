"""Nothing heavy is paid before the first replay (issue 28): the replay path and a worker's entry
import neither pandas, matplotlib, pyarrow nor Ray; they are imported where results are tabled,
stored or drawn, after the replays."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("pandas", "matplotlib", "pyarrow", "ray", "numpy")
REPLAY_PATH = ("bench.replay.loop", "strategies", "bench.run.executors", "bench.run.runner",
               "bench.run.store", "bench.scoring.metrics", "traces.synthetic", "traces.scenarios")
"""``bench.run.runner.run_job`` is what a process-pool worker unpickles first; the store and metrics
it calls import pandas and pyarrow inside the functions that need them."""


def test_replay_path_imports_no_heavy_library() -> None:
    code = ("import sys\n" + "".join(f"import {m}\n" for m in REPLAY_PATH)
            + "from bench.run.runner import run_job\n"
            + f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "", f"imported before the first replay: {done.stdout.strip()}"

