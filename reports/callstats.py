"""The per-call ledger, aggregated in bounded batches: what the report needs from the calls table.

A 10,000-trace run holds ~63M call rows; loading them into one DataFrame does not fit in memory
(issue 13). Instead the calls are read ``reports.batches.BATCH_ROWS`` rows at a time, with only the columns used
(pyarrow column projection over the Parquet parts, ``chunksize`` over a calls.csv export), and
folded into per-(trace, strategy) sums. Memory is bounded by those sums (one row per task), by
the one trace the context chart draws, and by the hidden-overflow calls listed, never by the
number of calls.

The sums are the ones ``bench.scoring.economics.cost_truth`` and ``reports.tables._call_stats`` compute
from a whole frame; the test compares them on a small run. The estimate/truth median per
strategy is exact: ``exact_percentiles`` finds each wanted order statistic with a histogram pass
and a second pass that keeps only the values in the bins holding it (numpy's linear
interpolation with numpy's own arithmetic, so equal to ``bench.scoring.stats.percentiles`` bit for bit).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bench.scoring import economics
from reports import batches as reading
from reports.scoring import cost_by_strategy

HIST_BINS = 4_096
KEYS = ["trace", "strategy"]
COLUMNS = ("trace", "strategy", "call", "kind", "prompt_tokens", "estimate_tokens", "cache_read", "cache_write",
           "uncached", "output_tokens", "cost", "cost_no_cache", "prefix_break", "overflow")
SUMS = ("agent_calls", "prompt_tokens", "cache_read", "cache_write", "uncached", "cost", "cost_no_cache",
        "summarizer_cost", "prefix_breaks", "agent_breaks", "rewritten_tokens", "lost_prefix_tokens")
"""Per-task sums. ``prefix_breaks`` counts every call (as economics.cost_truth), ``agent_breaks``
agent calls only (as the results table's column)."""


@dataclass(frozen=True)
class CallStats:
    """What the report reads from the calls of a run, small whatever the run's size."""

    per_task: pd.DataFrame
    """One row per (trace, strategy) with the ``SUMS`` columns."""
    agent_calls: int
    call_ratio: pd.DataFrame
    """Per strategy: ``calls`` (agent calls) and ``call_ratio_p50`` (estimate / truth, exact)."""
    hidden: pd.DataFrame
    """Agent calls whose estimate fit the window and whose truth did not (empty without a window)."""
    has_estimates: bool
    source: Path | None = None
    """The run folder, for ``trace_calls``; None for stats built from a frame."""

    @property
    def empty(self) -> bool:
        return self.per_task.empty


def batches(run_dir: Path, columns: Sequence[str] = COLUMNS, *,
            trace: str | None = None) -> Iterator[pd.DataFrame]:
    """The calls of a run in record order, ``reports.batches.BATCH_ROWS`` at a time, only ``columns``
    (those present), from the calls.csv export or the Parquet store (``reports.batches.batches``);
    ``trace`` keeps one trace's rows."""
    for b in reading.batches(run_dir, "calls", columns, trace=trace):
        yield b.drop(columns=reading.ORDER)


def trace_calls(stats: CallStats | pd.DataFrame, trace: str) -> pd.DataFrame:
    """The calls of one trace (the context chart): filtered while reading, never the whole run."""
    if isinstance(stats, pd.DataFrame):
        return stats[stats.trace == trace] if "trace" in stats else stats
    if stats.source is None:
        return pd.DataFrame(columns=list(COLUMNS))
    parts = list(batches(stats.source, ("trace", "strategy", "call", "kind", "prompt_tokens", "overflow"),
                         trace=trace))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=list(COLUMNS))


def _fold(b: pd.DataFrame, carry: dict[str, float], window: int | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One batch's per-task sums and its hidden-overflow rows. ``carry`` holds each task's last
    agent prompt, so a prefix break's lost tokens are right across batch boundaries."""
    b = b.reset_index(drop=True)
    agent = (b.kind == "agent").to_numpy()
    brk = b.prefix_break.astype(bool).to_numpy() if "prefix_break" in b else np.zeros(len(b), bool)
    cache_write = b.cache_write.to_numpy(float) if "cache_write" in b else np.zeros(len(b))
    task = b.trace.astype(str) + "\x00" + b.strategy.astype(str)
    # economics.cost_truth: the previous agent call's prompt less what this call read back.
    a = b[agent]
    ta = task[agent]
    prev = a.prompt_tokens.groupby(ta.to_numpy(), sort=False).shift(1)
    first = prev.isna()
    prev[first] = ta[first].map(carry)
    carry.update(a.prompt_tokens.groupby(ta.to_numpy(), sort=False).last().to_dict())
    lost = np.zeros(len(b))
    lost[np.flatnonzero(agent)] = np.where(brk[agent], (prev - a.cache_read).clip(lower=0).fillna(0), 0)
    zero = np.zeros(len(b))
    frame = pd.DataFrame({
        "trace": b.trace.to_numpy(), "strategy": b.strategy.to_numpy(),
        "agent_calls": agent.astype(int),
        "prompt_tokens": b.prompt_tokens.to_numpy(float),
        "cache_read": b.cache_read.to_numpy(float) if "cache_read" in b else zero,
        "cache_write": cache_write,
        "uncached": b.uncached.to_numpy(float) if "uncached" in b else zero,
        "cost": b.cost.to_numpy(float),
        "cost_no_cache": b.cost_no_cache.to_numpy(float) if "cost_no_cache" in b else zero,
        "summarizer_cost": np.where((b.kind == "summarizer").to_numpy(), b.cost.to_numpy(float), 0.0),
        "prefix_breaks": brk.astype(int), "agent_breaks": (brk & agent).astype(int),
        "rewritten_tokens": np.where(agent & brk, cache_write, 0.0), "lost_prefix_tokens": lost,
    })
    sums = frame.groupby(KEYS, sort=False).sum()
    hidden = b.iloc[:0]
    if window and "estimate_tokens" in b and "output_tokens" in b:
        hidden = b[agent & ((b.estimate_tokens + b.output_tokens <= window)
                            & (b.prompt_tokens + b.output_tokens > window)).to_numpy()]
    return sums, hidden


def _ratios(b: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(strategy, estimate / truth) of the batch's agent calls, 0 where the truth is 0 (as economics)."""
    a = b[b.kind == "agent"]
    ratio = (a.estimate_tokens.astype(float) / a.prompt_tokens.astype(float).where(a.prompt_tokens != 0)).fillna(0.0)
    return a.strategy.astype(str).to_numpy(), ratio.to_numpy(float)


def collect(scan: Callable[[], Iterator[pd.DataFrame]], window: int | None, source: Path | None = None) -> CallStats:
    """Fold every batch ``scan()`` yields; ``scan`` is called again for the percentile passes."""
    carry: dict[str, float] = {}
    partial: list[pd.DataFrame] = []
    hidden: list[pd.DataFrame] = []
    estimates = False
    for b in scan():
        if b.empty:
            continue
        estimates = estimates or "estimate_tokens" in b
        sums, h = _fold(b, carry, window)
        partial.append(sums)
        if len(h):
            hidden.append(h)
        if len(partial) >= 64:  # a task's rows can span batches: re-fold so the list stays short
            partial = [pd.concat(partial).groupby(level=[0, 1], sort=False).sum()]
    if not partial:
        empty = pd.DataFrame(columns=[*KEYS, *SUMS])
        return CallStats(empty, 0, pd.DataFrame(columns=["strategy", "calls", "call_ratio_p50"]),
                         pd.DataFrame(), False, source)
    per_task = pd.concat(partial).groupby(level=[0, 1]).sum().reset_index()  # sorted: the same from any store
    for col in ("agent_calls", "prefix_breaks", "agent_breaks"):
        per_task[col] = per_task[col].astype(int)
    ratio = pd.DataFrame(columns=["strategy", "calls", "call_ratio_p50"])
    if estimates:
        p = exact_percentiles(lambda: (_ratios(b) for b in scan() if len(b) and "estimate_tokens" in b), (50,))
        ratio = pd.DataFrame([{"strategy": s, "calls": v["n"], "call_ratio_p50": v["p50"]} for s, v in p.items()])
    return CallStats(per_task, int(per_task.agent_calls.sum()), ratio,
                     pd.concat(hidden, ignore_index=True) if hidden else pd.DataFrame(), estimates, source)


def read(run_dir: Path, window: int | None) -> CallStats:
    """The call aggregates of a run folder, read in batches."""
    return collect(lambda: batches(run_dir), window, Path(run_dir))


def from_frame(calls: pd.DataFrame, window: int | None = None) -> CallStats:
    """The same aggregates from a calls DataFrame already in memory (tests, small callers)."""
    def scan() -> Iterator[pd.DataFrame]:
        for i in range(0, len(calls), reading.BATCH_ROWS):
            yield calls.iloc[i:i + reading.BATCH_ROWS]
    return collect(scan, window)


HELD_VALUES = 1 << 21
"""Values the first pass of ``exact_percentiles`` keeps for passes 2 and 3 (with their group labels, some
tens of MB): a scan of no more than that is read once, not three times; a larger one is scanned again."""


def exact_percentiles(scan: Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]],
                      qs: Sequence[float], held_values: int = HELD_VALUES) -> dict[str, dict[str, float]]:
    """Per group, ``{"n": count, "p50": ...}`` exactly as ``np.percentile`` (linear) would give on
    all the group's values, reading (group, value) batches three times and holding only counts:
    1) n, min, max; 2) a histogram of ``HIST_BINS`` bins; 3) the distinct values (with their
    counts) of the bins that hold the wanted order statistics. NaNs are left out, as stats.percentiles.
    When the first pass read no more than ``held_values`` values (every table of ``make bench``), its
    batches serve passes 2 and 3: reading the calls twice more was most of their load step. Group
    labels are looked up as codes (``pd.Index.get_indexer``) once per batch, not one by one."""
    lo: dict[str, float] = {}
    hi: dict[str, float] = {}
    n: Counter[str] = Counter()
    held: list[tuple[np.ndarray, np.ndarray]] | None = []
    seen = 0
    for g, v in scan():
        if held is not None:  # kept for passes 2 and 3 rather than read twice more, while it is small
            held.append((g, v))
            seen += len(v)
            held = held if seen <= held_values else None
        keep = ~np.isnan(v)
        frame = pd.DataFrame({"g": g[keep], "v": v[keep]}).groupby("g").v.agg(["size", "min", "max"])
        for key, r in frame.iterrows():
            n[key] += int(r["size"])
            lo[key] = min(lo.get(key, math.inf), float(r["min"]))
            hi[key] = max(hi.get(key, -math.inf), float(r["max"]))
    groups = sorted(n)
    index = {k: i for i, k in enumerate(groups)}
    labels = pd.Index(groups, dtype=object)
    low_of = np.array([lo[k] for k in groups], dtype=float)
    width_of = np.array([hi[k] - lo[k] for k in groups], dtype=float)

    def known(g: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The values of a group seen in pass 1 (not NaN), with that group's place in ``groups``."""
        gi = labels.get_indexer(g) if len(g) else np.zeros(0, np.int64)
        keep = ~np.isnan(v) & (gi >= 0)
        return gi[keep].astype(np.int64), v[keep]

    def bins(gi: np.ndarray, v: np.ndarray) -> np.ndarray:
        low, width = low_of[gi], width_of[gi]
        b = np.where(width > 0, np.floor((v - low) / np.where(width > 0, width, 1) * HIST_BINS), 0)
        return np.clip(b, 0, HIST_BINS - 1).astype(np.int64)

    if held is not None:
        ready = [known(g, v) for g, v in held]
        del held

        def coded() -> Iterator[tuple[np.ndarray, np.ndarray]]:
            return iter(ready)
    else:
        def coded() -> Iterator[tuple[np.ndarray, np.ndarray]]:
            return (known(g, v) for g, v in scan())

    hist = np.zeros(len(groups) * HIST_BINS, dtype=np.int64)
    for gi, v in coded():
        b = bins(gi, v)
        hist += np.bincount(gi * HIST_BINS + b, minlength=hist.size)
    hist = hist.reshape(len(groups), HIST_BINS)
    wanted: set[tuple[int, int]] = set()  # (group, bin) of every order statistic needed
    for k in groups:
        cum = np.cumsum(hist[index[k]])
        for q in qs:
            for rank in set(_ranks(n[k], q)[:2]):
                wanted.add((index[k], int(np.searchsorted(cum, rank, side="right"))))
    values: dict[tuple[int, int], Counter[float]] = {key: Counter() for key in wanted}
    flat = np.array([gi * HIST_BINS + b for gi, b in wanted], dtype=np.int64)
    for gi, v in coded():
        cell = gi * HIST_BINS + bins(gi, v)
        hit = np.isin(cell, flat)
        for c in np.unique(cell[hit]):
            uniq, counts = np.unique(v[hit][cell[hit] == c], return_counts=True)
            values[(int(c) // HIST_BINS, int(c) % HIST_BINS)].update(dict(zip(uniq.tolist(), counts.tolist(),
                                                                              strict=True)))

    def order_stat(k: str, rank: int) -> float:
        i = index[k]
        cum = np.cumsum(hist[i])
        b = int(np.searchsorted(cum, rank, side="right"))
        inside = rank - (int(cum[b - 1]) if b else 0)
        seen = 0
        for value in sorted(values[(i, b)]):
            seen += values[(i, b)][value]
            if inside < seen:
                return float(value)
        raise AssertionError("order statistic outside its bin")  # the passes saw different data

    out: dict[str, dict[str, float]] = {}
    for k in groups:
        row: dict[str, float] = {"n": n[k]}
        for q in qs:
            row[f"p{q:g}"] = numpy_linear(n[k], q, lambda rank, k=k: order_stat(k, rank))
        out[k] = row
    return out


def _ranks(n: int, q: float) -> tuple[int, int, np.float64]:
    """The two order statistics (0-based ranks) numpy's linear percentile of ``n`` values reads, and its weight."""
    virtual = (n - 1) * np.true_divide(q, 100)
    below = min(max(int(np.floor(virtual)), 0), n - 1)
    above = min(below + 1, n - 1) if virtual < n - 1 else n - 1
    return below, above, virtual - np.float64(below)


def numpy_linear(n: int, q: float, order_stat: Callable[[int], float]) -> float:
    """The ``q``-th percentile of ``n`` values given their order statistics, with numpy's own
    arithmetic for the default (linear) method, so the result equals ``np.percentile`` bit for bit:
    the virtual index ``(n - 1) * q / 100`` and numpy's two-sided lerp (numpy
    ``lib/_function_base_impl.py``: ``_quantile``, ``_get_indexes``, ``_lerp``)."""
    below, above, gamma = _ranks(n, q)
    a, b = np.float64(order_stat(below)), np.float64(order_stat(above))
    diff = b - a
    return float(b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma)


def cost_truth(stats: CallStats) -> pd.DataFrame:
    """``reports.scoring.cost_truth`` (economics.cost_truth summed per strategy) from the sums."""
    if stats.empty:
        return pd.DataFrame(columns=[*KEYS, *economics.COST_COLUMNS])
    t = stats.per_task.rename(columns={"agent_calls": "calls", "prompt_tokens": "input_tokens"})
    base = t[t.strategy == economics.BASELINE].set_index("trace")
    t["false_economy"] = economics.false_economy(t.input_tokens, t.cost, t.trace.map(base.input_tokens),
                                                 t.trace.map(base.cost))
    return cost_by_strategy(t)


def triggers_from_gaps(gaps: pd.DataFrame, win: int) -> pd.DataFrame:
    """The trigger columns of ``economics.estimator_vs_truth`` from trigger points in memory
    (``reports.eventstats`` computes the same table in batches)."""
    none = pd.DataFrame(columns=list(COLUMNS))
    return economics.estimator_vs_truth(gaps.drop(columns=["ratio", "late"], errors="ignore"), none, win)


def estimator(triggers: pd.DataFrame, stats: CallStats, win: int) -> pd.DataFrame:
    """``economics.estimator_vs_truth`` from the streamed aggregates: per-call columns from the
    calls, trigger columns from ``triggers`` (``eventstats.EventStats.triggers`` or
    ``triggers_from_gaps``)."""
    if not stats.has_estimates or stats.empty:
        return pd.DataFrame()
    calls = stats.call_ratio.set_index("strategy")
    hidden = stats.hidden.strategy.value_counts() if len(stats.hidden) else pd.Series(dtype=int)
    strategies = sorted(set(calls.index) | set(triggers.strategy if len(triggers) else []))
    t = triggers.set_index("strategy") if len(triggers) else pd.DataFrame()
    rows = []
    for s in strategies:
        have = s in t.index
        rows.append({"strategy": s, "triggers": int(t.triggers[s]) if have else 0,
                     "trigger_ratio_p10": t.trigger_ratio_p10[s] if have else np.nan,
                     "trigger_ratio_p50": t.trigger_ratio_p50[s] if have else np.nan,
                     "trigger_ratio_p90": t.trigger_ratio_p90[s] if have else np.nan,
                     "late_triggers": int(t.late_triggers[s]) if have else 0,
                     "calls": int(calls.calls[s]) if s in calls.index else 0,
                     "call_ratio_p50": float(calls.call_ratio_p50[s]) if s in calls.index else np.nan,
                     "hidden_overflows": int(hidden.get(s, 0))})
    return pd.DataFrame(rows)
