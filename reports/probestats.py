"""Needle probes folded into counts in bounded batches: the report's retention tables and charts.

A ``--detail full`` run of 10,000 traces × 30 strategies holds millions of probe rows; every
retention figure the report shows is a share of probes in a cell (strategy × class, × needle
kind, × age bucket, × compaction round), so each batch is reduced to the number of probes per
distinct cell and the cells are summed. Memory is bounded by the number of cells (a few thousand),
never by the rows.

The functions below are ``reports.scoring``'s ``retention_overall``, ``cliff_table``,
``retention_by`` and ``charts.retention_by_age``'s grid restated over those counts (a mean of a
boolean is a count over a count, the same float division); the tests compare them with the
whole-frame functions.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from reports import batches, charts, scoring
from reports.scoring import CLASSES, FALSE_POSITIVE, VERBATIM

READ = ("strategy", "moment", "needle_kind", "cls", "retained", "round", "age_tokens", "age_calls")
"""The probe columns the counts need (a probe's trace, needle and call only matter on the compaction pages)."""
CELL = ["strategy", "moment", "needle_kind", "cls", "retained", "round", "age_tokens_bucket", "age_calls_bucket",
        "chart_bucket"]
BUCKETS = {"age_tokens_bucket": scoring.AGE_TOKEN_LABELS, "age_calls_bucket": scoring.AGE_CALL_LABELS,
           "chart_bucket": charts.AGE_LABELS}
REFOLD = 64
"""Partial count tables kept before they are summed into one (a cell recurs across batches)."""


@dataclass(frozen=True)
class ProbeStats:
    """Probe counts per cell, and which of the probe table's columns the run wrote."""

    counts: pd.DataFrame
    """One row per distinct ``CELL`` (NaN where the probe had no value) with ``n`` probes."""
    columns: frozenset[str]
    rows: int

    @property
    def scored(self) -> bool:
        """What the report calls having probes: rows, with a class each."""
        return self.rows > 0 and "cls" in self.columns

    def has(self, column: str) -> bool:
        """Whether ``scoring.age_buckets`` would have made ``column`` (or the table has it)."""
        source = {"age_tokens_bucket": "age_tokens", "age_calls_bucket": "age_calls"}.get(column, column)
        return column == "needle_kind" or source in self.columns


def _cells(b: pd.DataFrame) -> pd.DataFrame:
    """One batch's probes counted per cell (``scoring.age_buckets`` applied to the batch)."""
    p = scoring.age_buckets(b.drop(columns=batches.ORDER, errors="ignore"))
    if "age_tokens" in b:  # the chart bins the raw column, as charts.retention_by_age did
        p["chart_bucket"] = pd.cut(b.age_tokens, charts.AGE_EDGES, labels=charts.AGE_LABELS, right=False)
    frame = pd.DataFrame({c: (p[c].astype(object) if c in p else pd.Series(np.nan, index=p.index, dtype=object))
                          for c in CELL})
    return frame.groupby(CELL, dropna=False, sort=False).size().rename("n").reset_index()


def collect(scan: Iterator[pd.DataFrame]) -> ProbeStats:
    """Fold every batch of probes into cell counts."""
    partial: list[pd.DataFrame] = []
    columns: set[str] = set()
    rows = 0
    for b in scan:
        columns |= set(b.columns) - set(batches.ORDER)
        if not len(b):
            continue
        rows += len(b)
        partial.append(_cells(b))
        if len(partial) >= REFOLD:
            partial = [_sum(partial)]
    counts = _sum(partial) if partial else pd.DataFrame(columns=[*CELL, "n"])
    return ProbeStats(counts, frozenset(columns), rows)


def _sum(parts: list[pd.DataFrame]) -> pd.DataFrame:
    both = pd.concat(parts, ignore_index=True)
    return both.groupby(CELL, dropna=False, sort=False).n.sum().reset_index()


def read(run_dir: Path) -> ProbeStats:
    """The probe counts of a run folder, read in batches."""
    return collect(batches.batches(run_dir, "probes", READ))


def from_frame(probes: pd.DataFrame) -> ProbeStats:
    """The same counts from a probes DataFrame in memory (tests, small callers)."""
    size = batches.BATCH_ROWS
    return collect(probes.iloc[i:i + size] for i in range(0, len(probes), size))


# -- the report's figures from the counts ---------------------------------------------------------

def _end(stats: ProbeStats) -> pd.DataFrame:
    c = stats.counts
    return c[c.moment == "end"] if "moment" in stats.columns else c


def _stated(c: pd.DataFrame) -> pd.DataFrame:
    return c[c.needle_kind != "control"]


def _retained_share(c: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per ``keys``: ``n`` probes and the share retained (``scoring``'s ``retained.mean()``)."""
    kept = c.n.where(c.retained.astype(bool), 0)
    g = c.assign(kept=kept).groupby(keys, observed=True)
    n, k = g.n.sum().astype("int64"), g.kept.sum()
    return pd.DataFrame({"n": n, "retention": k / n})


def retention_overall(stats: ProbeStats, cliffs: pd.DataFrame | None = None) -> pd.DataFrame:
    """``scoring.retention_overall`` from the counts. ``cliffs``: ``cliff_table(stats)`` when the caller
    has it already (the report shows both; each was computed twice)."""
    p = _end(stats)
    stated = _stated(p)
    if not stated.n.sum():
        return pd.DataFrame(columns=["strategy", "n", "retention", *CLASSES])
    by_cls = stated[stated.cls.notna()].groupby(["strategy", "cls"]).n.sum().unstack(fill_value=0)
    share = by_cls.div(by_cls.sum(axis=1), axis=0)
    share.columns.name, share.index.name = "cls", "strategy"
    out = share.reindex(columns=list(CLASSES), fill_value=0.0)
    out.insert(0, "retention", out[VERBATIM])
    out.insert(0, "n", stated.groupby("strategy").n.sum().astype("int64"))
    out = out.reset_index()
    controls = p[p.needle_kind == "control"]
    fp = controls.n.where(controls.cls == FALSE_POSITIVE, 0)
    g = controls.assign(fp=fp).groupby("strategy")
    n = g.n.sum().astype("int64")
    fpr = pd.DataFrame({"n": n, "false_positive_rate": g.fp.sum() / n}).reset_index()
    out = out.merge(fpr.rename(columns={"n": "controls"}), on="strategy", how="left")
    cliffs = cliff_table(stats) if cliffs is None else cliffs
    if len(cliffs):
        out = out.merge(cliffs[["strategy", "rounds", "cliff_round"]], on="strategy", how="left")
    return out


def cliff_table(stats: ProbeStats) -> pd.DataFrame:
    """``scoring.cliff_table`` from the counts."""
    cols = ["strategy", "rounds", "retention_by_round", "cliff_round"]
    if "round" not in stats.columns or "moment" not in stats.columns:
        return pd.DataFrame(columns=cols)
    c = stats.counts
    p = _stated(c[c.moment == "compaction"])
    return scoring.cliff_frame(
        (strategy, _retained_share(g.assign(round=pd.to_numeric(g["round"])), ["round"]).retention)
        for strategy, g in p.groupby("strategy"))


def retention_by(stats: ProbeStats, column: str) -> pd.DataFrame:
    """``scoring.retention_by(scoring.age_buckets(probes), column)`` from the counts."""
    p = _stated(_end(stats))
    if not stats.has(column) or not p.n.sum():
        return pd.DataFrame(columns=["strategy", column, "n", "retention"])
    if column in BUCKETS:
        p = p.assign(**{column: pd.Categorical(p[column], categories=list(BUCKETS[column]), ordered=True)})
    out = _retained_share(p, ["strategy", column]).reset_index()
    return out.sort_values(["strategy", column])


@dataclass(frozen=True)
class AgeGrid:
    """What ``charts.retention_by_age`` draws: strategies × age buckets of end probes (controls out)."""

    rows: list[str]
    cols: list[str]
    verbatim: np.ndarray
    by_ref: np.ndarray
    counts: list[int]

    @property
    def empty(self) -> bool:
        return not self.rows


def age_grid(stats: ProbeStats, strategies: list[str]) -> AgeGrid:
    """The chart's grid: the share verbatim and by reference per cell, the probes per bucket."""
    c = stats.counts
    p = c[c.needle_kind != "control"] if "needle_kind" in stats.columns else c
    p = p[p.moment == "end"] if "moment" in stats.columns else p
    p = p[p.n > 0]
    if p.empty:
        return AgeGrid([], [], np.zeros((0, 0)), np.zeros((0, 0)), [])
    per_bucket = p.groupby("chart_bucket").n.sum()
    cols = [b for b in charts.AGE_LABELS if per_bucket.get(b, 0) > 0]
    present = set(p.strategy)
    rows = [s for s in strategies if s in present]
    verbatim = np.full((len(rows), len(cols)), np.nan)
    by_ref = np.zeros_like(verbatim)
    cell = p.assign(v=p.n.where(p.cls == VERBATIM, 0), r=p.n.where(p.cls == scoring.RECOVERABLE, 0))
    sums = cell.groupby(["strategy", "chart_bucket"])[["n", "v", "r"]].sum()
    for i, s in enumerate(rows):
        for j, b in enumerate(cols):
            if (s, b) in sums.index and sums.loc[(s, b), "n"]:
                n = sums.loc[(s, b), "n"]
                verbatim[i, j] = sums.loc[(s, b), "v"] / n
                by_ref[i, j] = sums.loc[(s, b), "r"] / n
    return AgeGrid(rows, cols, verbatim, by_ref, [int(per_bucket[b]) for b in cols])


# -- the behaviour probes (--probe anthropic): a handful of rows per compaction, read apart ----------------

BEHAVIOUR_READ = ("strategy", "trace", "moment", "probe", "agrees_full", "agrees_recorded", "obeyed", "obeyed_full",
                  "obeyed_restated", "obeyed_unstated", "retained_exact", "retained_judged", "requests", "paid",
                  "skipped", "cost")


def behaviour(run_dir: Path, info: dict, resamples: int) -> pd.DataFrame:
    """bench.scoring.behaviour's per-strategy table from the run's behaviour rows; empty (without a
    scan of the probes) for a run that did not ask a model (``config.probe`` other than anthropic)."""
    from bench.scoring.behaviour import COLUMNS, behaviour_table

    if (info.get("config") or {}).get("probe") != "anthropic":
        return pd.DataFrame(columns=COLUMNS)
    parts = [b[b.moment == "behaviour"] for b in batches.batches(run_dir, "probes", BEHAVIOUR_READ)
             if "moment" in b and "probe" in b]
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    return behaviour_table(pd.concat(parts, ignore_index=True).drop(columns=batches.ORDER, errors="ignore"),
                           resamples=resamples)
