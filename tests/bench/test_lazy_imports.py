"""Nothing heavy is paid before the first replay (issue 28): the command line, the replay path and a
worker's entry import neither pandas, numpy, matplotlib, pyarrow nor Ray; they are imported where
results are tabled, stored or drawn, after the replays."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("pandas", "numpy", "matplotlib", "pyarrow", "ray")
REPLAY_PATH = ("bench.cli.main", "bench.replay.loop", "strategies", "bench.run.executors", "bench.run.runner",
               "bench.run.store", "bench.scoring.metrics", "bench.scoring.probes", "bench.scoring.llm_probe",
               "bench.decide.verdict", "traces.synthetic", "traces.cache")
"""``bench.run.runner.run_job`` is what a process-pool worker unpickles first; the CLI's parser reads
the verdict's weights; the store, metrics, probes' tables and the verdict import pandas and pyarrow
inside the functions that need them."""

FIRST_REPLAY = """
import sys
{imports}
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.run.runner import run_job, _observers
from bench.tokens.counter import TokenCounter
from traces.synthetic import generate

trace = generate("short@tokens=30000", 0)
replay(trace, strategies.build("codex"), ReplayConfig(profile("claude-sonnet-4-5")), counter=TokenCounter(),
       observers=_observers(trace))
print(",".join(m for m in {heavy!r} if m in sys.modules))
"""


def test_first_replay_imports_no_heavy_library() -> None:
    """A replay with the run's needle observer, as a worker runs it, loads none of them."""
    code = FIRST_REPLAY.format(imports="".join(f"import {m}\n" for m in REPLAY_PATH), heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-1000:]
    assert done.stdout.strip() == "", f"imported before the first replay ended: {done.stdout.strip()}"
