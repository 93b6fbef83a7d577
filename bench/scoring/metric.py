"""What a metric is (name, unit, better direction, one-sentence meaning), apart from any computation.

The tables that declare metrics (bench.scoring.metrics, bench.scoring.probes) and the code that reads
them (the console table, the report's arrows, the docs glossary) share this one definition, so the
modules that compute metrics need not import each other for it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    lower_is_better: bool | None
    """None where neither direction is better (a count of what happened)."""
    description: str
