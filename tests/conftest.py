"""Shared fixtures: a token counter, a model profile, and the real traces in ../shared/traces.

Tests that need ../shared/traces skip with a stated reason when it is absent (a fresh clone of
this repository alone); they never pass silently.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from bench.cost.pricing import profile  # noqa: E402
from bench.tokens.counter import TokenCounter  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHARED_TRACES = Path(os.environ.get("COMPACTION_BENCH_SHARED_TRACES", REPO.parent / "shared" / "traces"))


@pytest.fixture(scope="session")
def counter() -> TokenCounter:
    return TokenCounter()


@pytest.fixture(scope="session")
def sonnet():
    return profile("claude-sonnet-4-5")


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"real traces not available: {SHARED_TRACES} is absent (they live in ../shared/traces, "
                    "beside the repository, and may not be copied into it)")
    return SHARED_TRACES
