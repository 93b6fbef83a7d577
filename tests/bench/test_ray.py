"""The Ray executor gives the process pool's results (a local Ray instance with 2 CPUs, started once)."""

from __future__ import annotations

import pytest

from bench.cli.main import main

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'compaction-bench[ray]')")
pytestmark = pytest.mark.ray

ARGS = ("--traces", "synthetic:short", "--seeds", "2", "--strategies", "none", "opencode", "codex",
        "--quiet", "--no-report")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="warning")
    yield
    ray.shutdown()


def test_ray_and_the_process_pool_give_identical_results(tmp_path, local_ray):
    assert main(["run", *ARGS, "--executor", "process", "--workers", "2", "--name", "p", "--out", str(tmp_path)]) == 0
    assert main(["run", *ARGS, "--executor", "ray", "--name", "r", "--out", str(tmp_path)]) == 0
    for name in ("results.csv", "calls.csv", "events.jsonl", "probes.csv"):
        assert (tmp_path / "p" / name).read_bytes() == (tmp_path / "r" / name).read_bytes(), name
    assert ray.is_initialized()  # the executor left the instance it did not start
