"""The scoring layer's tables for the report, computed from the run folder's files alone.

Each function takes the run's DataFrames (results.csv, calls.csv, events.jsonl, summaries.jsonl,
probes.csv, fidelity.csv) and returns a small table per strategy. They call the pure scoring
functions of ``bench.scoring.stats``, ``bench.scoring.probes`` and ``bench.scoring.economics`` and fill in what an older
run folder lacks (a probe column, a results column), so any run can still be rendered.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bench.decide.verdict import check_weight, feasible_mask, trace_weights
from bench.scoring import economics, stats
from bench.scoring.metrics import FIDELITY_COLUMNS, METRIC_BY_NAME

BASELINE = "none"
# Needle scoring over probes.csv. The same rules as bench.scoring.probes (retention, false_positive_rate,
# cliff_rounds), restated here because importing bench.scoring.probes loads bench.replay.loop and the
# strategies, and the report must render from the run's files alone.
VERBATIM, RECOVERABLE, STALE, MISSING = "retained-verbatim", "recoverable-by-reference", "stale", "missing"
REREAD = "recovered-by-reread"
FALSE_POSITIVE = "false-positive"
CLASSES = (VERBATIM, REREAD, RECOVERABLE, STALE, MISSING)
CLIFF = 0.5
AGE_TOKEN_EDGES = (0, 2_000, 8_000, 32_000, 128_000, np.inf)
AGE_TOKEN_LABELS = ("< 2K", "2K–8K", "8K–32K", "32K–128K", "≥ 128K")
AGE_CALL_EDGES = (0, 5, 20, 50, 100, np.inf)
AGE_CALL_LABELS = ("< 5", "5–19", "20–49", "50–99", "≥ 100")
COMPARED_TITLES = {"cost": "cost per trace", "input_tokens": "input tokens per trace", "retention": "needle retention"}
"""Metrics compared against ``none`` per trace, in page order (retention only when present), with
their titles in the report's tables and charts."""
COMPARED = tuple(COMPARED_TITLES)
LOWER_IS_BETTER = {m: bool(METRIC_BY_NAME[m].lower_is_better) for m in COMPARED}


def resamples(info: dict) -> int:
    """Bootstrap resamples: run.json's ``config.report_resamples`` when set, else the report's B."""
    value = (info.get("config") or {}).get("report_resamples")
    try:
        return int(value) if value else stats.REPORT_B
    except (TypeError, ValueError):
        return stats.REPORT_B


def weight(info: dict) -> str:
    """The run's ``--weight`` (run.json ``config.weight``; runs from before it: equal)."""
    try:
        return check_weight((info.get("config") or {}).get("weight"))
    except ValueError:
        return "equal"


MEAN_COLUMNS = ("retention", "llm_recall", "mean_context")
"""Columns of ``reports.tables.strategy_totals`` that are means over traces (the others are sums or maxima)."""


def weighted_totals(totals: pd.DataFrame, rows: pd.DataFrame, weighting: str) -> pd.DataFrame:
    """``totals`` with its per-trace means re-taken under ``weighting`` (unchanged for ``equal``)."""
    if check_weight(weighting) == "equal" or totals.empty:
        return totals
    ok = rows[rows.error.fillna("").astype(str) == ""] if "error" in rows else rows
    w = ok.trace.map(trace_weights(ok, weighting)).astype(float)
    out = totals.copy()
    for col in MEAN_COLUMNS:
        if col not in out or col not in ok:
            continue
        x = pd.to_numeric(ok[col], errors="coerce")
        num = (x.fillna(0.0) * w).groupby(ok.strategy).sum()
        den = (x.notna() * w).groupby(ok.strategy).sum()
        out[col] = out.strategy.map(num / den.where(den > 0))
    return out


def comparisons(results: pd.DataFrame, *, resamples: int = stats.REPORT_B, weighting: str = "equal",
                baseline: str = BASELINE) -> pd.DataFrame:
    """Paired bootstrap of each strategy against ``baseline`` (``none``, or the verdict's choice for the
    report's chart), per metric, on the traces both finished (each trace weighted by ``weighting``,
    bench.decide.verdict.trace_weights)."""
    ok = results[results.error.fillna("").astype(str) == ""] if "error" in results else results
    weights = None if check_weight(weighting) == "equal" else trace_weights(ok, weighting)
    frames = []
    for metric in COMPARED:
        if metric not in ok or not pd.to_numeric(ok[metric], errors="coerce").notna().any():
            continue
        table = ok.assign(**{metric: pd.to_numeric(ok[metric], errors="coerce")})
        frames.append(stats.compare_to_baseline(table, metric, baseline=baseline, resamples=resamples,
                                                weights=weights))
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _end_probes(probes: pd.DataFrame) -> pd.DataFrame:
    """Probes taken when each trace ended (all probes when the file has no ``moment``)."""
    p = probes
    if "moment" in p:
        p = p[p.moment == "end"]
    return p


def complete_probes(probes: pd.DataFrame) -> pd.DataFrame:
    """probes.csv with ``retained`` (from ``cls``) and a strategy column guaranteed."""
    p = probes.copy()
    if "strategy" not in p:
        p["strategy"] = "?"
    if "retained" not in p:
        p["retained"] = p.cls == VERBATIM
    else:
        p["retained"] = p.retained.astype(str).str.lower() == "true"
    if "needle_kind" not in p:
        p["needle_kind"] = "needle"
    return p


def retention_overall(probes: pd.DataFrame) -> pd.DataFrame:
    """Per strategy at the end of the traces: n, class shares, control false positives, cliff round."""
    every = complete_probes(probes)
    p = _end_probes(every)
    stated = p[p.needle_kind != "control"]
    if stated.empty:
        return pd.DataFrame(columns=["strategy", "n", "retention", *CLASSES])
    out = pd.crosstab(stated.strategy, stated.cls, normalize="index").reindex(columns=list(CLASSES), fill_value=0.0)
    out.insert(0, "retention", out[VERBATIM])
    out.insert(0, "n", stated.groupby("strategy").size())
    out = out.reset_index()
    controls = p[p.needle_kind == "control"].assign(fp=lambda d: d.cls == FALSE_POSITIVE).groupby("strategy").fp
    fpr = pd.DataFrame({"n": controls.size(), "false_positive_rate": controls.mean()}).reset_index()
    out = out.merge(fpr.rename(columns={"n": "controls"}), on="strategy", how="left")
    cliffs = cliff_table(every)
    if len(cliffs):
        out = out.merge(cliffs[["strategy", "rounds", "cliff_round"]], on="strategy", how="left")
    return out


def cliff_table(probes: pd.DataFrame) -> pd.DataFrame:
    """Per strategy: retention right after each compaction round and the first round below 50%
    (<NA> when it never fell below); empty when the probes carry no compaction rounds."""
    cols = ["strategy", "rounds", "retention_by_round", "cliff_round"]
    p = complete_probes(probes)
    if "round" not in p or "moment" not in p:
        return pd.DataFrame(columns=cols)
    p = p[(p.moment == "compaction") & (p.needle_kind != "control")]
    return cliff_frame((strategy, g.groupby("round").retained.mean()) for strategy, g in p.groupby("strategy"))


def cliff_frame(by_round: Iterable[tuple[str, pd.Series]]) -> pd.DataFrame:
    """One row per strategy from its retention per compaction round: the rounds, the shares and the
    first round under ``CLIFF`` (shared by the whole-frame and the streamed probe tables)."""
    rows = []
    for strategy, shares in by_round:
        shares = shares.sort_index()
        below = shares[shares < CLIFF]
        rows.append({"strategy": strategy, "rounds": len(shares),
                     "retention_by_round": {int(k): float(v) for k, v in shares.items()},
                     "cliff_round": int(below.index[0]) if len(below) else None})
    out = pd.DataFrame(rows, columns=["strategy", "rounds", "retention_by_round", "cliff_round"])
    out["cliff_round"] = out.cliff_round.astype("Int64")
    return out


def retention_by(probes: pd.DataFrame, column: str, labels: Sequence[str] | None = None) -> pd.DataFrame:
    """Strategy × ``column`` retention (end probes, controls excluded) with n per cell, long form."""
    p = _end_probes(complete_probes(probes))
    p = p[p.needle_kind != "control"]
    if column not in p or p.empty:
        return pd.DataFrame(columns=["strategy", column, "n", "retention"])
    g = p.groupby(["strategy", column], observed=True).retained
    out = pd.DataFrame({"n": g.size(), "retention": g.mean()}).reset_index()
    if labels is not None:
        out[column] = pd.Categorical(out[column], categories=list(labels), ordered=True)
    return out.sort_values(["strategy", column])


def age_buckets(probes: pd.DataFrame) -> pd.DataFrame:
    """Probes with their age in tokens and in calls put in the report's bins (where present)."""
    p = complete_probes(probes)
    if "age_tokens" in p:
        p["age_tokens_bucket"] = pd.cut(pd.to_numeric(p.age_tokens, errors="coerce"), AGE_TOKEN_EDGES,
                                        labels=AGE_TOKEN_LABELS, right=False)
    if "age_calls" in p:
        p["age_calls_bucket"] = pd.cut(pd.to_numeric(p.age_calls, errors="coerce"), AGE_CALL_EDGES,
                                       labels=AGE_CALL_LABELS, right=False)
    return p


def cost_truth(calls: pd.DataFrame) -> pd.DataFrame:
    """bench.scoring.economics.cost_truth summed per strategy; ``false_economy`` counts traces."""
    per_trace = economics.cost_truth(calls)
    if per_trace.empty:
        return per_trace
    return cost_by_strategy(per_trace)


def cost_by_strategy(per_trace: pd.DataFrame) -> pd.DataFrame:
    """Per-trace cost rows (economics.COST_COLUMNS, ``false_economy`` a flag) summed per strategy, with
    the shares computed from the sums (shared by the whole-frame and the streamed call tables)."""
    g = per_trace.groupby("strategy")
    out = g[["input_tokens", "cache_read", "cost", "cost_no_cache", "summarizer_cost", "prefix_breaks",
             "rewritten_tokens", "lost_prefix_tokens"]].sum()
    out["traces"] = g.size()
    out["false_economy"] = g.false_economy.sum().astype(int)
    out["cache_hit_rate"] = out.cache_read / out.input_tokens.where(out.input_tokens != 0)
    out["summarizer_share"] = out.summarizer_cost / out.cost.where(out.cost != 0)
    out["cache_saving"] = 1 - out.cost / out.cost_no_cache.where(out.cost_no_cache != 0)
    return out.fillna({"cache_hit_rate": 0.0, "summarizer_share": 0.0}).reset_index()


def window(info: dict) -> int | None:
    """The run model's context window; under ``recorded`` the one window its traces share (None when
    they differ or run.json names no known model)."""
    try:
        from bench.cost.pricing import profile_for

        model = str(info["config"]["model"])
        windows = {profile_for(model, t.get("model")).context_window for t in info.get("traces") or [{}]}
        return windows.pop() if len(windows) == 1 else None
    except Exception:  # noqa: BLE001 - an unknown or missing model just leaves the window out
        return None


def trigger_points(events: pd.DataFrame, win: int) -> pd.DataFrame:
    """bench.scoring.economics.trigger_gaps over the actions that measured a context (tokens_before > 0),
    each outcome's first event only (``bench.scoring.economics.chained``)."""
    need = {"trace", "strategy", "call", "hook", "kind", "estimate_before", "tokens_before"}
    if events.empty or not need <= set(events.columns):
        return pd.DataFrame(columns=[*need, "ratio", "late"])
    gaps = economics.trigger_gaps(events, win)  # drops chained events, in full record order
    return gaps[pd.to_numeric(gaps.tokens_before, errors="coerce").fillna(0) > 0]


def estimator(gaps: pd.DataFrame, calls: pd.DataFrame, win: int) -> pd.DataFrame:
    """bench.scoring.economics.estimator_vs_truth over ``trigger_points`` (events that measured nothing left out)."""
    if "estimate_tokens" not in calls or calls.empty:
        return pd.DataFrame()
    return economics.estimator_vs_truth(gaps.drop(columns=["ratio", "late"], errors="ignore"), calls, win)


def hidden_overflow_calls(calls: pd.DataFrame, win: int) -> pd.DataFrame:
    if "estimate_tokens" not in calls or calls.empty:
        return pd.DataFrame()
    return economics.hidden_overflows(calls, win)


def fidelity(fidelity_rows: pd.DataFrame | None, results: pd.DataFrame) -> pd.DataFrame:
    """fidelity.csv as is, else the first compaction per trace from results.csv's fidelity columns."""
    if fidelity_rows is not None and len(fidelity_rows):
        return fidelity_rows
    cols = [f"fidelity_{c}" for c in FIDELITY_COLUMNS]
    if "fidelity_recorded_call" not in results:
        return pd.DataFrame()
    r = results[results.fidelity_recorded_call.notna()]
    if r.empty:
        return pd.DataFrame()
    out = r[["trace", "strategy", *(c for c in cols if c in r)]].rename(columns=lambda c: c.removeprefix("fidelity_"))
    out.insert(2, "compaction", 0)
    if "call_delta" not in out and "replayed_call" in out:
        out["call_delta"] = out.replayed_call - out.recorded_call
    return out.reset_index(drop=True)


def safe_float(v: object) -> float:
    try:
        return float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return float("nan")


def finite(v: object) -> bool:
    return bool(np.isfinite(safe_float(v)))


# -- threshold sweeps ---------------------------------------------------------------------------

DEFAULT = "default"
"""Shown for a parameter a setting left at the strategy's own default (the report cannot know its value)."""
SWEEP_METRICS = ("cost", "input_tokens", "saving_vs_none", "overflows", "cache_hit_rate", "retention", "compactions")
JUDGED_ON = ("retention", "saving_vs_none")
"""What a sweep's best setting is judged on: retention when the run has probes, else the token saving."""


@dataclass(frozen=True)
class Sweep:
    """One strategy family run at several parameter settings (labels sharing a registry name)."""

    family: str
    keys: tuple[str, ...]
    """The parameters whose value differs between settings, sorted."""
    fixed: dict[str, Any]
    """Parameters every setting gave the same value."""
    rows: pd.DataFrame
    """One row per setting in parameter order: ``strategy``, ``param:<key>`` (text) per key, the
    ``SWEEP_METRICS`` present, and the booleans ``cheapest`` and ``most_retained``."""

    def setting(self, row: pd.Series) -> str:
        """One row's swept values: ``0.5``, or ``a=1, b=2`` when several parameters vary."""
        values = [str(row[f"param:{k}"]) for k in self.keys]
        return values[0] if len(values) == 1 else ", ".join(f"{k}={v}" for k, v in zip(self.keys, values, strict=True))

    @property
    def metric(self) -> str | None:
        """What "retains most" is judged on: retention when probed, else the token saving vs ``none``."""
        return next((m for m in JUDGED_ON if m in self.rows), None)


def _spec(entry: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(label, registry name, params) of one run.json strategy; older files only had the label."""
    label = str(entry.get("label") or entry.get("name"))
    if "name" in entry and "params" in entry:
        return label, str(entry["name"]), dict(entry["params"] or {})
    name, _, rest = label.partition("@")
    return label, name, dict(item.partition("=")[::2] for item in filter(None, rest.split(",")))


_MISSING = object()


def _order_key(value: object) -> tuple[int, float, str]:
    """Numbers by value, then other values by text, the strategy's default last."""
    if value is _MISSING:
        return (2, 0.0, "")
    number = safe_float(value)
    return (0, number, "") if np.isfinite(number) and not isinstance(value, bool) else (1, 0.0, str(value))


def pareto_front(points: pd.DataFrame, x: str = "cost", y: str = "retention") -> pd.Series:
    """True for each point no other point dominates: none at most as dear and retaining at least
    as much, and strictly better on one of the two (rows missing either value are never on it)."""
    have = points[[x, y]].apply(pd.to_numeric, errors="coerce")
    cx, cy = have[x].to_numpy(dtype=float), have[y].to_numpy(dtype=float)
    ok = np.isfinite(cx) & np.isfinite(cy)
    front = []
    for i in range(len(have)):
        if not ok[i]:
            front.append(False)
            continue
        others = ok & (cx <= cx[i]) & (cy >= cy[i]) & ((cx < cx[i]) | (cy > cy[i]))
        front.append(not others.any())
    return pd.Series(front, index=points.index, dtype=bool)  # empty stays a mask, not a column list


def sweeps(info: dict[str, Any], totals: pd.DataFrame) -> list[Sweep]:
    """Every family run.json lists at two or more parameter settings, with each setting's totals.

    ``totals`` is ``reports.tables.strategy_totals`` (its ``retention`` is the mean over traces;
    without probes the sweep judges on ``saving_vs_none``). Settings that have no totals (every
    task a harness error) are left out.
    """
    metrics = totals.set_index("strategy")
    families: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for entry in info.get("strategies", []):
        label, name, params = _spec(entry)
        if label in metrics.index and label not in (lab for lab, _ in families.get(name, [])):
            families.setdefault(name, []).append((label, params))
    out = []
    for family, members in families.items():
        keys = sorted({k for _, p in members for k in p})
        values = {k: [p.get(k, _MISSING) for _, p in members] for k in keys}
        varying = tuple(k for k in keys if len({repr(v) for v in values[k]}) > 1)
        if len(members) < 2 or not varying:
            continue
        fixed = {k: values[k][0] for k in keys if k not in varying}
        members = sorted(members, key=lambda m: tuple(_order_key(m[1].get(k, _MISSING)) for k in varying))
        rows = pd.DataFrame({"strategy": [label for label, _ in members],
                             **{f"param:{k}": [str(p[k]) if k in p else DEFAULT for _, p in members]
                                for k in varying}})
        have = [m for m in SWEEP_METRICS if m in metrics and metrics[m].notna().any()]
        rows = rows.join(metrics[have], on="strategy")
        judged = next((m for m in JUDGED_ON if m in rows), None)
        best = pd.to_numeric(rows[judged], errors="coerce") if judged else pd.Series(np.nan, index=rows.index)
        # A setting that overflowed the window is never badged best (bench.decide.verdict.feasible_mask).
        ok = feasible_mask(rows)
        rows["cheapest"] = ok & (rows.cost == rows.cost[ok].min())
        good = best.where(ok)
        rows["most_retained"] = ok & np.isclose(best, good.max()) if good.notna().any() else False
        out.append(Sweep(family, varying, fixed, rows))
    return out
