"""cli: the `compaction-bench` command (main) and the commands beside it (plan, show,
conformance, fidelity, perf, perf_scale)."""

from bench.cli.main import main

__all__ = ["main"]
