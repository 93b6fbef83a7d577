"""Summary sizes folded in bounded batches: ``bench.scoring.stats.summary_sizes`` without holding the summaries.

The summary-size table needs per strategy: n and p50/p90/p99/p99.9 of the output tokens (exact,
``reports.callstats.exact_percentiles``: numpy's result bit for bit from three passes that read
only ``strategy`` and ``tokens``), the max, the output reserve each summary asked for and how many
went over it (per-batch sums), and the median size of the texts in cl100k. The texts are read in
one pass, counted batch by batch and dropped: what stays is one integer per summary for that
median (summaries are one per compaction, far fewer than calls, events or probes). The chart's
points are every summary of a strategy up to ``eventstats.CHART_POINTS``, above that a
deterministic sample; its n and median come from the exact table. Summary texts themselves are
read only for the per-strategy compaction pages, one strategy at a time (``reports.compactions``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bench.scoring import stats
from reports import batches, callstats
from reports.eventstats import CHART_POINTS

READ = ("strategy", "tokens", "max_tokens", "text", "trace", "call")


@dataclass(frozen=True)
class SummaryStats:
    """What the report reads from the summaries of a run."""

    sizes: pd.DataFrame
    """``bench.scoring.stats.summary_sizes``'s table (empty when the run recorded no ``tokens``)."""
    points: pd.DataFrame
    """``strategy``, ``tokens`` per summary in record order (all, or a sample per strategy)."""
    rows: int


def _sample(kept: pd.DataFrame | None, new: pd.DataFrame) -> pd.DataFrame:
    key = [c for c in ("trace", "strategy", "call", "tokens") if c in new]
    h = pd.util.hash_pandas_object(new[key].astype(str), index=False).to_numpy()
    new = pd.DataFrame({"strategy": new.strategy.to_numpy(), "tokens": new.tokens.to_numpy(), "_h": h,
                        "_pos": new._pos.to_numpy(), "_seq": new._seq.to_numpy()})
    both = new if kept is None else pd.concat([kept, new], ignore_index=True)
    if both.strategy.value_counts().max() <= CHART_POINTS:
        return both
    return both.sort_values(["strategy", "_h"], kind="stable").groupby("strategy", sort=False).head(CHART_POINTS)


def collect(scan: Callable[[], Iterator[pd.DataFrame]], reserve: int = stats.SUMMARY_RESERVE) -> SummaryStats:
    """Fold the batches ``scan()`` yields (a second scan for the percentiles reads no text)."""
    from bench.summarizers.sizes import UNIT
    from bench.tokens.counter import Tokenizer

    total: dict[str, int] = defaultdict(int)
    limited: dict[str, int] = defaultdict(int)
    over: dict[str, int] = defaultdict(int)
    top: dict[str, float] = {}
    biggest_reserve: dict[str, float] = {}
    cl100k: dict[str, list[int]] = defaultdict(list)
    kept: pd.DataFrame | None = None
    rows, tokens_seen = 0, False
    counter = None
    for b in scan():
        rows += len(b)
        if not len(b) or "tokens" not in b or "strategy" not in b:
            continue
        tokens_seen = True
        own = pd.to_numeric(b["max_tokens"], errors="coerce") if "max_tokens" in b else pd.Series(np.nan, b.index)
        limits = own.fillna(reserve).to_numpy(dtype=float)
        tokens = b.tokens.to_numpy(dtype=float)
        groups = b.groupby("strategy").indices
        texts = {s: b.text.iloc[idx].dropna().astype(str).tolist() for s, idx in groups.items()} if "text" in b else {}
        if any(texts.values()):  # each distinct text of the batch counted once (a pure function of the text)
            counter = counter or Tokenizer(UNIT)
            distinct = list(dict.fromkeys(t for ts in texts.values() for t in ts))
            counted = dict(zip(distinct, counter.count_many(distinct), strict=True))
        for s, idx in groups.items():
            total[s] += len(idx)
            limited[s] += int(own.iloc[idx].notna().sum())
            over[s] += int((tokens[idx] > limits[idx]).sum())
            top[s] = max(top.get(s, -np.inf), float(tokens[idx].max()))
            biggest_reserve[s] = max(biggest_reserve.get(s, -np.inf), float(limits[idx].max()))
            if texts.get(s):
                cl100k[s] += [counted[t] for t in texts[s]]
        kept = _sample(kept, b)
    cols = ["strategy", "n", *(stats._label(q) for q in stats.QUANTILES), "max", "reserve", "reserve_source",
            "over_reserve", "over_reserve_share", "p50_cl100k", "recorded_agent", "recorded_p50_cl100k", "recorded_n"]
    if not tokens_seen:
        return SummaryStats(pd.DataFrame(), pd.DataFrame(columns=["strategy", "tokens"]), rows)
    pct = callstats.exact_percentiles(
        lambda: ((b.strategy.astype(str).to_numpy(), b.tokens.to_numpy(dtype=float))
                 for b in scan() if len(b) and "tokens" in b and "strategy" in b), stats.QUANTILES)
    out = []
    for s in sorted(total):
        n = total[s]
        source = "strategy" if limited[s] == n else "default" if limited[s] == 0 else "mixed"
        recorded = stats._beside_recorded(s, pd.DataFrame())  # the recorded agent's fit; p50_cl100k below
        counts = cl100k.get(s, [])
        recorded["p50_cl100k"] = float(np.median(counts)) if counts else float("nan")
        q = pct.get(s, {"n": 0, **{stats._label(x): float("nan") for x in stats.QUANTILES}})
        out.append({"strategy": s, **q, "max": top[s], "reserve": biggest_reserve[s], "reserve_source": source,
                    "over_reserve": over[s], "over_reserve_share": over[s] / n, **recorded})
    points = batches.in_order([kept.drop(columns="_h")], ["strategy", "tokens"]) if kept is not None else \
        pd.DataFrame(columns=["strategy", "tokens"])
    return SummaryStats(pd.DataFrame(out, columns=cols), points, rows)


def read(run_dir: Path) -> SummaryStats:
    """The summary aggregates of a run folder; the percentile passes read no text."""
    first = [True]

    def scan() -> Iterator[pd.DataFrame]:
        cols = READ if first[0] else ("strategy", "tokens")
        first[0] = False
        return batches.batches(run_dir, "summaries", cols)
    return collect(scan)


def from_frame(summaries: pd.DataFrame) -> SummaryStats:
    """The same from a summaries DataFrame in memory (tests, small callers)."""
    def scan() -> Iterator[pd.DataFrame]:
        for i in range(0, len(summaries), batches.BATCH_ROWS):
            b = summaries.iloc[i:i + batches.BATCH_ROWS]
            yield b.assign(_pos=np.arange(i, i + len(b)), _seq=np.arange(i, i + len(b)))
    return collect(scan)
