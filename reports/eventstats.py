"""Strategy events folded in bounded batches: the events table and the estimator's trigger points.

The report shows, from the events, a strategy × kind count table, each strategy's estimate/truth
ratio where it acted (n, p10/p50/p90 and late triggers, exact) and a scatter of those ratios.
The counts and the late triggers are per-batch sums; the percentiles come from
``reports.callstats.exact_percentiles`` (three passes holding only counts, numpy's result bit for
bit); the scatter keeps every point of a strategy up to ``CHART_POINTS`` and above that a
deterministic sample (the ``CHART_POINTS`` points of least hash), so memory is bounded by the
number of strategies, never by the number of events. A run whose strategies all stay under the
cap draws exactly the chart the whole-frame code drew.

Trigger points are ``reports.scoring.trigger_points`` (``bench.scoring.economics.trigger_gaps``) batch by
batch: the row before a batch's first is carried over, so ``economics.chained`` sees the same
previous row as on the whole table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bench.scoring import economics
from reports import batches, callstats

CHART_POINTS = 20_000
"""Trigger points per strategy drawn in the scatter; beyond it a deterministic sample (figures stay exact)."""
NEED = ("trace", "strategy", "call", "hook", "kind", "estimate_before", "tokens_before")
READ = (*NEED, "tokens_after")
TRIGGER_COLUMNS = ["strategy", "triggers", "trigger_ratio_p10", "trigger_ratio_p50", "trigger_ratio_p90",
                   "late_triggers"]
QS = (50, 90, 10)
"""As ``economics.estimator_vs_truth``: ``stats.QUANTILES[:2] + (10,)``."""


@dataclass(frozen=True)
class EventStats:
    """What the report reads from the events of a run, small whatever the run's size."""

    kinds: pd.DataFrame
    """Strategy (index) × event kind (columns): number of events (``listings.events_html``)."""
    triggers: pd.DataFrame
    """Per strategy that acted on a measured context: ``TRIGGER_COLUMNS`` (empty without a window)."""
    points: pd.DataFrame
    """``strategy``, ``ratio`` per trigger point in record order (all, or a sample per strategy)."""
    rows: int

    @property
    def empty(self) -> bool:
        return self.rows == 0


def _gaps(scan: Iterator[pd.DataFrame], window: int) -> Iterator[pd.DataFrame]:
    """``scoring.trigger_points`` of each batch, chained events judged against the carried row."""
    carry: pd.DataFrame | None = None
    for b in scan:
        if not set(NEED) <= set(b.columns):
            continue
        e = b[b.kind != economics.INVALID]
        if "tokens_after" in e and len(e):
            joined = e if carry is None else pd.concat([carry, e], ignore_index=True)
            skip = 0 if carry is None else len(carry)
            chained = economics.chained(joined.reset_index(drop=True)).to_numpy()[skip:]
            carry = e.iloc[-1:]
            e = e[~chained]
        if not len(e):
            continue
        e = e.assign(ratio=economics._ratio(e.estimate_before.astype(float), e.tokens_before.astype(float)),
                     late=(e.tokens_before > window) & (e.estimate_before <= window))
        yield e[pd.to_numeric(e.tokens_before, errors="coerce").fillna(0) > 0]


def _sample(kept: pd.DataFrame | None, new: pd.DataFrame) -> pd.DataFrame:
    """Per strategy, the ``CHART_POINTS`` points of least hash among those seen (all while fewer)."""
    h = pd.util.hash_pandas_object(new[["trace", "strategy", "call", "hook", "tokens_before"]].astype(str),
                                   index=False).to_numpy()
    new = pd.DataFrame({"strategy": new.strategy.to_numpy(), "ratio": new.ratio.to_numpy(float),
                        "_h": h, "_pos": new._pos.to_numpy(), "_seq": new._seq.to_numpy()})
    both = new if kept is None else pd.concat([kept, new], ignore_index=True)
    if both.strategy.value_counts().max() <= CHART_POINTS:
        return both
    return both.sort_values(["strategy", "_h"], kind="stable").groupby("strategy", sort=False).head(CHART_POINTS)


def collect(scan: Callable[[], Iterator[pd.DataFrame]], window: int | None) -> EventStats:
    """Fold the batches ``scan()`` yields; called again for the percentile passes."""
    kinds: list[pd.Series] = []
    late: list[pd.Series] = []
    kept: pd.DataFrame | None = None
    rows = 0

    def counted() -> Iterator[pd.DataFrame]:
        nonlocal rows
        for b in scan():
            rows += len(b)
            if {"strategy", "kind", "trace"} <= set(b.columns):  # pivot_table counted non-null traces
                kinds.append(b[b.trace.notna()].groupby(["strategy", "kind"]).size())
            yield b

    if window:
        for g in _gaps(counted(), window):
            late.append(g.groupby("strategy").late.sum())
            kept = _sample(kept, g)
    else:
        for _ in counted():
            pass
    pivot = (pd.concat(kinds).groupby(level=[0, 1]).sum().unstack(fill_value=0) if kinds
             else pd.DataFrame())
    if len(pivot):
        pivot.index.name, pivot.columns.name = "strategy", "kind"
    triggers = pd.DataFrame(columns=TRIGGER_COLUMNS)
    points = pd.DataFrame(columns=["strategy", "ratio"])
    if kept is not None and len(kept):
        p = callstats.exact_percentiles(
            lambda: ((g.strategy.astype(str).to_numpy(), g.ratio.to_numpy(float)) for g in _gaps(scan(), window)),
            QS)
        lates = pd.concat(late).groupby(level=0).sum()
        triggers = pd.DataFrame([{"strategy": s, "triggers": v["n"], "trigger_ratio_p10": v["p10"],
                                  "trigger_ratio_p50": v["p50"], "trigger_ratio_p90": v["p90"],
                                  "late_triggers": int(lates.get(s, 0))} for s, v in p.items()],
                                columns=TRIGGER_COLUMNS)
        points = batches.in_order([kept.drop(columns="_h")], ["strategy", "ratio"])
    return EventStats(pivot, triggers, points, rows)


def read(run_dir: Path, window: int | None) -> EventStats:
    """The event aggregates of a run folder, read in batches (only the columns used)."""
    return collect(lambda: batches.batches(run_dir, "events", READ), window)


def from_frame(events: pd.DataFrame, window: int | None) -> EventStats:
    """The same from an events DataFrame in memory (tests, small callers)."""
    def scan() -> Iterator[pd.DataFrame]:
        for i in range(0, len(events), batches.BATCH_ROWS):
            b = events.iloc[i:i + batches.BATCH_ROWS]
            yield b.assign(_pos=np.arange(i, i + len(b)), _seq=np.arange(i, i + len(b)))
    return collect(scan, window)
