"""The behaviour probes per strategy (``--probe anthropic``): each share with its interval and n, the
forced choice's effect retention against its floor and upper bound, the retention judges' agreement,
and what the probes cost and how many the budget stopped.

A pure function of the behaviour rows of probes.csv (``moment == "behaviour"``, written by
bench/scoring/action_probe.probe_rows and the prober's last row per task), so the report renders it
from the run folder alone. Every share is the mean over traces of each trace's share, as results.csv
and the verdict take it; its interval is stats.rate_ci's two-stage bootstrap (traces, then probes
within a trace), and ``*_n`` counts the probes answered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bench.scoring import stats
from bench.scoring.lazy import lazy

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:
    np, pd = lazy("numpy"), lazy("pandas")

BEHAVIOUR = "behaviour"
SHARES: tuple[tuple[str, str, str], ...] = (
    ("next_action_agreement", "next_action", "agrees_full"),
    ("next_action_recorded_agreement", "next_action", "agrees_recorded"),
    ("constraint_obedience", "constraint_choice", "obeyed"),
    ("constraint_obedience_full", "constraint_choice", "obeyed_full"),
    ("constraint_obedience_restated", "constraint_choice", "obeyed_restated"),
    ("constraint_obedience_unstated", "constraint_choice", "obeyed_unstated"),
)
"""(column, probe kind, the probe row's yes/no field)."""
COLUMNS = ["strategy", *(f"{c}{s}" for c, _, _ in SHARES for s in ("", "_low", "_high", "_n")),
           "constraint_effect_retention", "constraint_effect_low", "constraint_effect_high",
           "judge_n", "judge_agreement", "judge_kappa", "retained_exact", "retained_judged",
           "probes_asked", "probes_paid", "probes_skipped", "probe_cost"]


def yes_no(v: Any) -> bool | None:
    """A probe cell as stored (a bool, or "True" / "False" read back from CSV, NaN or empty) → bool or None."""
    if v is None or v is pd.NA:
        return None
    if isinstance(v, bool | np.bool_):
        return bool(v)
    if isinstance(v, float):
        return None if np.isnan(v) else bool(v)
    text = str(v).strip().lower()
    return True if text in ("true", "1", "1.0") else False if text in ("false", "0", "0.0") else None


def _counts(rows: pd.DataFrame, field: str, traces: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(yes, answered) per trace for one field, in the order of ``traces``."""
    if field not in rows:
        return np.zeros(len(traces)), np.zeros(len(traces))
    v = rows[field].map(yes_no)
    answered = v.notna()
    yes = v.where(answered, False).astype(bool)
    k = yes.groupby(rows.trace).sum().reindex(traces, fill_value=0).to_numpy(dtype=float)
    n = answered.groupby(rows.trace).sum().reindex(traces, fill_value=0).to_numpy(dtype=float)
    return k, n


def behaviour_table(probes: pd.DataFrame, *, resamples: int = stats.DEFAULT_B, seed: int = 0) -> pd.DataFrame:
    """One row per strategy that has behaviour rows (empty, with ``COLUMNS``, when none has)."""
    if probes.empty or "moment" not in probes or "probe" not in probes:
        return pd.DataFrame(columns=COLUMNS)
    rows = probes[probes.moment == BEHAVIOUR]
    out = []
    for strategy, g in rows.groupby("strategy", sort=True):
        traces = sorted(g.trace.astype(str).unique())
        g = g.assign(trace=g.trace.astype(str))
        rec: dict[str, Any] = {"strategy": strategy}
        counts: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for col, kind, field in SHARES:
            k, n = counts[field] = _counts(g[g.probe == kind], field, traces)
            ci = stats.rate_ci(k, n, resamples=resamples, seed=seed)
            rec.update({col: ci.rate, f"{col}_low": ci.low, f"{col}_high": ci.high, f"{col}_n": ci.probes})
        er = stats.effect_retention_ci(counts["obeyed"], counts["obeyed_unstated"], counts["obeyed_restated"],
                                       resamples=resamples, seed=seed)
        rec.update({"constraint_effect_retention": er.value, "constraint_effect_low": er.low,
                    "constraint_effect_high": er.high})
        choice = g[g.probe == "constraint_choice"]
        exact = [yes_no(v) for v in choice.get("retained_exact", pd.Series(dtype=object))]
        judged = [yes_no(v) for v in choice.get("retained_judged", pd.Series(dtype=object))]
        a = stats.agreement(exact, judged)
        rec.update({"judge_n": a.n, "judge_agreement": a.share, "judge_kappa": a.kappa,
                    "retained_exact": a.a_yes, "retained_judged": a.b_yes})
        meta = g[g.probe == "prober"]
        for col, field in (("probes_asked", "requests"), ("probes_paid", "paid"), ("probes_skipped", "skipped")):
            rec[col] = int(pd.to_numeric(meta[field], errors="coerce").fillna(0).sum()) if field in meta else 0
        rec["probe_cost"] = float(pd.to_numeric(meta["cost"], errors="coerce").fillna(0).sum()) if "cost" in meta \
            else 0.0
        out.append(rec)
    return pd.DataFrame(out, columns=COLUMNS)


def _share(r: pd.Series, col: str) -> str:
    v, n = r[col], r[f"{col}_n"]
    if not n or not np.isfinite(v):
        return "—"
    return f"{v:.0%} [{r[f'{col}_low']:.0%}, {r[f'{col}_high']:.0%}] n={n:.0f}"


def behaviour_lines(table: pd.DataFrame) -> list[str]:
    """The table as plain lines (the report and the console): one line per strategy and figure."""
    lines = []
    for _, r in table.iterrows():
        er = r.constraint_effect_retention
        er_text = "—" if not np.isfinite(er) else (
            f"{er:.2f}" + (f" [{r.constraint_effect_low:.2f}, {r.constraint_effect_high:.2f}]"
                           if np.isfinite(r.constraint_effect_low) else ""))
        judge = "—" if not r.judge_n else f"{r.judge_agreement:.0%} agree, kappa {r.judge_kappa:.2f}, n={r.judge_n:.0f}"
        lines += [
            f"{r.strategy}: next action agrees with the full context {_share(r, 'next_action_agreement')}, "
            f"with the recorded step {_share(r, 'next_action_recorded_agreement')}",
            f"{r.strategy}: rules kept: compacted {_share(r, 'constraint_obedience')}, "
            f"full {_share(r, 'constraint_obedience_full')}, restated (upper bound) "
            f"{_share(r, 'constraint_obedience_restated')}, unstated (floor) "
            f"{_share(r, 'constraint_obedience_unstated')}; effect retention {er_text}",
            f"{r.strategy}: retention judges (exact vs model) {judge}; probe requests {r.probes_asked:.0f} asked, "
            f"{r.probes_paid:.0f} paid (${r.probe_cost:,.4f}), {r.probes_skipped:.0f} stopped by --max-cost",
        ]
    return lines
