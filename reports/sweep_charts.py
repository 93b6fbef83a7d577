"""Sweep charts: a metric against the parameter it sweeps (small multiples, one column per family),
and a two-parameter sweep as a heat-map. The setting the verdict chose (or, in a family it did not
choose from, the family's cheapest that never overflowed) is ringed; settings that overflowed are
drawn as red crosses and never ringed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from reports.charts import DPI, SIZE_INCHES, STYLE
from reports.scoring import DEFAULT, Sweep, safe_float

CHOSEN = "#1a7f37"
OVERFLOW = "#b42318"
LINE = "#0b62c4"


def _numeric(sweep: Sweep) -> pd.DataFrame | None:
    """The sweep's rows with a float ``x`` when it varies one numeric parameter, else None."""
    if len(sweep.keys) != 1:
        return None
    x = sweep.rows[f"param:{sweep.keys[0]}"].map(lambda v: np.nan if v == DEFAULT else safe_float(v))
    rows = sweep.rows.assign(x=x).dropna(subset=["x"]).sort_values("x")
    return rows if len(rows) >= 2 else None


def _chosen(rows: pd.DataFrame, recommended: str | None) -> str | None:
    if recommended in set(rows.strategy):
        return recommended
    ok = rows[rows.get("overflows", 0) == 0] if "overflows" in rows else rows
    return None if ok.empty else str(ok.sort_values("cost").strategy.iloc[0])


def line_sweeps(sweeps: Sequence[Sweep], recommended: str | None, traces: int, path: Path) -> Path | None:
    """Cost per trace and retention against the swept value; None when no sweep is one numeric parameter."""
    panels = [(s, rows) for s in sweeps if (rows := _numeric(s)) is not None]
    if not panels:
        return None
    metrics = [m for m in ("cost", "retention") if any(m in r and r[m].notna().any() for _, r in panels)]
    import matplotlib

    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=SIZE_INCHES, dpi=DPI)
        axes = fig.subplots(len(metrics), len(panels), squeeze=False, sharex="col")
        for col, (sweep, rows) in enumerate(panels):
            chosen = _chosen(rows, recommended)
            over = rows.overflows > 0 if "overflows" in rows else pd.Series(False, index=rows.index)
            for r, metric in enumerate(metrics):
                ax = axes[r][col]
                y = rows[metric] / (traces if metric == "cost" else 1)
                ax.plot(rows.x, y, color=LINE, lw=1.8, marker="o", markersize=5, zorder=2)
                if over.any():
                    ax.scatter(rows.x[over], y[over], marker="x", s=70, color=OVERFLOW, zorder=3,
                               label="overflowed the window")
                if chosen is not None:
                    pick = rows.strategy == chosen
                    ax.scatter(rows.x[pick], y[pick], s=180, facecolor="none", edgecolor=CHOSEN, lw=2, zorder=4,
                               label="chosen" if chosen == recommended else "cheapest without overflow")
                if metric == "cost":
                    ax.yaxis.set_major_formatter(lambda v, _: f"${v:,.2f}")
                    ax.set_ylabel("cost per trace ↓" if col == 0 else "")
                else:
                    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=None))  # 62.5%, not a rounded 63%
                    ax.set_ylabel("needle retention ↑" if col == 0 else "")
                ax.set_xticks(rows.x.tolist())
                if r == 0:
                    ax.set_title(f"{sweep.family}", fontsize=11)
                if r == len(metrics) - 1:
                    ax.set_xlabel(sweep.keys[0])
        handles = {}
        for ax in fig.axes:
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                handles.setdefault(lab, h)
        if handles:
            fig.legend(handles.values(), handles.keys(), loc="lower right", ncols=len(handles), fontsize=8)
        fig.suptitle("Each sweep: the metric against the setting it varies", x=0.01, ha="left",
                     fontsize=12, fontweight="bold")
        fig.tight_layout(rect=(0, 0.05, 1, 1))
        tmp = path.with_name(f".{path.name}.tmp")
        fig.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None})
        tmp.replace(path)
    return path


def heat_sweeps(sweeps: Sequence[Sweep], traces: int, path: Path) -> Path | None:
    """The first two-parameter sweep as a heat-map of cost per trace, retention written in each cell."""
    sweep = next((s for s in sweeps if len(s.keys) == 2), None)
    if sweep is None:
        return None
    a, b = (f"param:{k}" for k in sweep.keys)
    rows = sweep.rows
    order = {k: sorted(rows[k].unique(), key=lambda v: (not np.isfinite(safe_float(v)), safe_float(v), str(v)))
             for k in (a, b)}
    cost = rows.pivot_table(index=a, columns=b, values="cost", aggfunc="first").reindex(
        index=order[a], columns=order[b]) / traces
    import matplotlib

    with matplotlib.rc_context({**STYLE, "axes.grid": False}):
        fig = Figure(figsize=SIZE_INCHES, dpi=DPI)
        ax = fig.add_subplot()
        im = ax.imshow(cost.to_numpy(dtype=float), cmap="RdYlGn_r", aspect="auto")
        fig.colorbar(im, ax=ax, label="cost per trace (USD)")
        ax.set_xticks(range(len(cost.columns)), cost.columns)
        ax.set_yticks(range(len(cost.index)), cost.index)
        ax.set_xlabel(sweep.keys[1])
        ax.set_ylabel(sweep.keys[0])
        for _, r in rows.iterrows():
            i, j = order[a].index(r[a]), order[b].index(r[b])
            text = f"${safe_float(r.cost) / traces:,.2f}"
            if "retention" in r and np.isfinite(safe_float(r.retention)):
                text += f"\n{safe_float(r.retention):.0%} kept"
            if safe_float(r.get("overflows", 0)) > 0:
                text += "\noverflowed"
            ax.text(j, i, text, ha="center", va="center", fontsize=8)
        ax.set_title(f"{sweep.family}: cost per trace by {sweep.keys[0]} and {sweep.keys[1]}")
        fig.tight_layout()
        tmp = path.with_name(f".{path.name}.tmp")
        fig.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None})
        tmp.replace(path)
    return path
