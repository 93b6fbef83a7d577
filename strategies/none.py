"""The baseline: never touch the context.

Every other strategy's saving is measured against this one on the same trace. Requests that no
longer fit the window are counted as overflows (and billed as if accepted, see bench/replay/loop.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.context import Strategy


@dataclass(frozen=True, kw_only=True)
class NoCompaction(Strategy):
    """Send the whole history on every call (what an agent without compaction does)."""

    name = "none"
    citation = "baseline (no agent): the uncompacted history"
