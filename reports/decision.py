"""The report's decision: the verdict sentence that opens the page, verdict.json, and the
neighbour comparisons of sweeps. The numbers come from ``bench.decide.verdict`` (a pure function of the
results table); this module only formats them and writes the file.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from bench.decide import verdict as bv
from bench.run.store import atomic_write
from bench.scoring import stats


def write(run_dir: Path, v: bv.Verdict) -> Path:
    path = Path(run_dir) / "verdict.json"
    atomic_write(path, v.to_json() + "\n")
    return path


def verdict_html(v: bv.Verdict) -> str:
    """The page's first sentence, then what the objective excluded, in a collapsed list."""
    ship = v.ship()
    spec = (f' <span class=n>ship: <code>--strategies \'{html.escape(ship["spec"])}\'</code> '
            f'(verdict.json)</span>' if ship else "")
    excluded = v.excluded
    items = "".join(f"<li><b>{html.escape(s)}</b>: {html.escape('; '.join(r))}</li>" for s, r in excluded.items())
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in v.notes)
    more = (f"<details><summary>Objective <code>{html.escape(v.objective)}</code> ({html.escape(v.weighting)}): "
            f"{len(excluded)} excluded</summary><ul>{items}{notes}</ul></details>") if items or notes else \
        (f'<p class=n>Objective <code>{html.escape(v.objective)}</code> ({html.escape(v.weighting)}); '
         "nothing excluded.</p>")
    return f'<p class="verdict" id="verdict-sentence">{html.escape(v.sentence)}{spec}</p>{more}{robustness_html(v)}'


def neighbours_html(results: pd.DataFrame, resamples: int, weight: str = "equal") -> str:
    """"0.7 vs 0.9: −$1.20 per trace, 95% CI …" for neighbouring settings of each numeric sweep."""
    parts = []
    for metric in ("cost", "retention"):
        if metric not in results or not results[metric].notna().any():
            continue
        n = bv.neighbours(results, metric, resamples=resamples, weight=weight)
        for family, g in n.groupby("family", sort=False):
            parts.append(f"<li><code>{html.escape(str(family))}</code> by {html.escape(str(g.parameter.iloc[0]))}, "
                         f"{html.escape(metric)}: " + "; ".join(html.escape(t) for t in g.text) + "</li>")
    if not parts:
        return ""
    return ("<h3>Neighbouring settings, paired on the same traces</h3><ul class=pairs>" + "".join(parts)
            + "</ul><p class=legend>Each entry is the later setting minus the earlier one, the mean over the traces "
              "both ran with a paired bootstrap 95% interval.</p>")


def pair_table(results: pd.DataFrame, order: list[str], metric: str, resamples: int, weight: str = "equal") -> str:
    """Every strategy against every other on ``metric`` (row − column), paired on the same traces."""
    names = [s for s in order if (results.strategy == s).any()]
    if len(names) < 2 or metric not in results or not results[metric].notna().any():
        return ""
    fmt = bv._signed(metric)
    head = "<tr><th>row − column</th>" + "".join(f"<th>{html.escape(s)}</th>" for s in names) + "</tr>"
    body = []
    pair = _paired(results, bv.per_trace(results, metric), resamples, weight)  # one wide table for the n × n pairs
    for a in names:
        cells = [f"<td class=name>{html.escape(a)}</td>"]
        for b in names:
            if a == b:
                cells.append("<td class=cmp>·</td>")
                continue
            c = pair(b, a)
            if c.n == 0:
                cells.append("<td class=cmp>—</td>")
                continue
            badge = "ns" if not c.significant else "good" if (c.mean_diff < 0) == (metric != "retention") else "bad"
            ci = f"<div class=ci>{fmt(c.ci_low)} … {fmt(c.ci_high)}</div>" if c.n >= 2 else ""
            cells.append(f'<td class=cmp><span class="badge {badge}">{fmt(c.mean_diff)}</span>{ci}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<details><summary>Every pair on {html.escape(metric)} "
            "(row − column, mean per trace, 95% bootstrap interval below)</summary>"
            f'<div class=scroll><table class="plain compare"><thead>{head}</thead><tbody>{"".join(body)}'
            "</tbody></table></div></details>")


def _paired(results: pd.DataFrame, wide: pd.DataFrame, resamples: int, weight: str
            ) -> Callable[[str, str], stats.PairedComparison]:
    """``bv.paired(results, a, b, metric, resamples=, weight=, wide=wide)`` for many pairs: the same
    comparison (the same pairs, weights and draws into ``stats.paired_bootstrap``), with each column
    and the trace weights taken out of ``wide`` once rather than sliced and ``dropna``-ed per pair
    (that pandas work was two thirds of the every-pair table's time). ``pair(a, b)`` also finds
    ``pair(b, a)`` from the same draws (``_both``), kept until it is asked for: the table asks for both."""
    columns: dict[str, np.ndarray] = {}
    weights: list[np.ndarray | None] = []
    mirrored: dict[tuple[str, str], stats.PairedComparison] = {}

    def column(s: str) -> np.ndarray:
        if s not in columns:
            columns[s] = wide[s].to_numpy(dtype=float, na_value=np.nan)
        return columns[s]

    def pair(a: str, b: str) -> stats.PairedComparison:
        if (a, b) in mirrored:
            return mirrored.pop((a, b))
        if a not in wide or b not in wide:
            return stats.paired_bootstrap([], [], resamples=resamples, seed=0)
        x, y = column(a), column(b)
        keep = ~(np.isnan(x) | np.isnan(y))  # ``dropna`` of the two columns
        if not weights:
            weights.append(None if bv.check_weight(weight) == "equal" else
                           bv.trace_weights(results, weight).reindex(wide.index).fillna(0.0).to_numpy())
        w = weights[0]
        if w is None:
            ab, ba = _both(x[keep], y[keep], resamples, None)
        else:
            w = w[keep]
            ab, ba = _both(x[keep][w > 0], y[keep][w > 0], resamples, w[w > 0])
        mirrored[(b, a)] = ba
        return ab
    return pair


def _both(x: np.ndarray, y: np.ndarray, resamples: int, weights: np.ndarray | None
          ) -> tuple[stats.PairedComparison, stats.PairedComparison]:
    """``stats.paired_bootstrap(x, y, ...)`` and ``stats.paired_bootstrap(y, x, ...)`` (seed 0, 95%), equal
    to them bit for bit, from one set of draws: the same seed draws the same pairs in both directions,
    and each resample's mean of ``x − y`` is exactly minus that of ``y − x`` (IEEE negation is exact
    and rounding symmetric), except where that mean is zero (``x − y`` and ``y − x`` are both +0 for
    equal values, and minus +0 is −0): those resamples are averaged again. Fewer than two pairs, or
    weights ``paired_bootstrap`` would refuse, go to it directly."""
    n = x.size
    w = np.ones_like(x) if weights is None else np.asarray(weights, dtype=float)
    if n < 2 or (weights is not None and (not np.isfinite(w).all() or (w <= 0).any())):
        return (stats.paired_bootstrap(x, y, resamples=resamples, seed=0, weights=weights),
                stats.paired_bootstrap(y, x, resamples=resamples, seed=0, weights=weights))
    d, e = y - x, x - y
    means = {"ab": np.empty(resamples), "ba": np.empty(resamples)}
    ratios = {"ab": np.empty(resamples), "ba": np.empty(resamples)}
    for start, stop, idx in stats.draws(0, n, resamples):  # kept between pairs of the same n
        if weights is None:
            m = d[idx].mean(axis=1)
        else:
            total = w[idx].sum(axis=1)
            m = (w[idx] * d[idx]).sum(axis=1) / total
        weighed = None if weights is None else w
        base_x, base_y = stats.resampled_mean(x, weighed, idx), stats.resampled_mean(y, weighed, idx)
        minus = -m
        zero = m == 0
        if zero.any():
            again = idx[zero]
            minus[zero] = e[again].mean(axis=1) if weights is None else \
                (w[again] * e[again]).sum(axis=1) / total[zero]
        means["ab"][start:stop], means["ba"][start:stop] = m, minus
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios["ab"][start:stop] = np.where(base_x != 0, m / base_x, np.nan)
            ratios["ba"][start:stop] = np.where(base_y != 0, minus / base_y, np.nan)
    tail = (1 - 0.95) / 2 * 100
    out = []
    for key, a, b, diff in (("ab", x, y, d), ("ba", y, x, e)):
        low, high = np.percentile(means[key], [tail, 100 - tail])
        rel_low, rel_high = (np.nanpercentile(ratios[key], [tail, 100 - tail]) if np.isfinite(ratios[key]).any()
                             else (float("nan"), float("nan")))
        out.append(stats.PairedComparison(n, float(np.average(a, weights=w)), float(np.average(b, weights=w)),
                                          float(np.average(diff, weights=w)), float(low), float(high), resamples,
                                          float(rel_low), float(rel_high)))
    return out[0], out[1]


def with_robustness(run_dir: Path, rows: pd.DataFrame, v: bv.Verdict, info: dict, objective: str | None) -> bv.Verdict:
    """``v`` with its robustness (bench.run.robustness). The report reads files only, so it replays nothing:
    the run's own measure (``run --robustness replay``, cached in the run folder) is reused when it
    is for the same results and verdict, else what needs no replay is recomputed."""
    from bench.run import robustness

    config = info.get("config") or {}
    try:
        r = robustness.analyse(run_dir, rows, v, objective=objective, weight=config.get("weight") or "equal",
                               summarizer=config.get("summarizer"), info=info, replay=False)
    except Exception as e:  # noqa: BLE001 - the page stands without it, and says so
        r = robustness.Robustness(v.recommended, notes=(f"not measured: {(str(e) or type(e).__name__)[:200]}",))
    return robustness.attach(v, r)


def robustness_html(v: bv.Verdict) -> str:
    """The decision section's *Robustness*: whether the choice changes under each change, the winner by
    scenario (or agent) with the choice − runner-up difference there, and the summarizer gap."""
    r = v.robustness
    if not r or not r.get("choice"):
        return ""
    choice = html.escape(str(r["choice"]))
    rows = "".join(
        f"<tr><td>{html.escape(c['kind'])}</td><td>{html.escape(c['setting'])}</td>"
        f"<td>{html.escape(c['winner'] or 'nothing qualifies')}</td>"
        f"<td>{'same' if c['same'] else '<b>changes</b>'}</td><td class=n>{html.escape(c['method'])}"
        f"{(' — ' + html.escape(c['note'])) if c.get('note') else ''}</td></tr>" for c in r.get("changes", ()))
    out = [f"<h3>Robustness</h3><p>Does <code>{choice}</code> stay the choice? "
           + ("Yes, under every change below." if r.get("holds") else "Not under every change: see below.") + "</p>"]
    if rows:
        out.append("<table class=plain><thead><tr><th>change</th><th>setting</th><th>winner</th><th>vs the choice</th>"
                   f"<th>how</th></tr></thead><tbody>{rows}</tbody></table>")
    groups = r.get("groups") or []
    if groups:
        by = html.escape(r.get("group_by", "scenario"))
        body = "".join(
            f"<tr><td>{html.escape(g['group'])}</td><td>{g['traces']}</td>"
            f"<td>{html.escape(g.get('winner') or 'nothing qualifies')}"
            f"{(' (the choice ' + html.escape(g['tie']) + ')') if g.get('tie') else ''}</td>"
            f"<td>{html.escape(g.get('text', '—'))}</td></tr>" for g in groups)
        runner = html.escape(str(groups[0].get("runner_up") or "the runner-up"))
        out.append(f"<table class=plain><thead><tr><th>{by}</th><th>traces</th><th>winner there</th>"
                   f"<th>{runner} − {choice}, within the {by}</th></tr></thead><tbody>{body}</tbody></table>"
                   f"<p class=legend>Each {by} decided on its traces alone. An interval within one {by} comes only "
                   f"from that generator's seeds (or that agent's sessions): when the pooled interval holds but the "
                   f"winners differ by {by}, the choice depends on the mix of {by}s.</p>")
    gap = r.get("summarizer_gap") or []
    if gap:
        body = "".join(
            f"<tr><td>{html.escape(g['strategy'])}</td><td>{g['traces']}</td>"
            f"<td>{_pct(g.get('retention_extractive'))}</td><td>{_pct(g.get('retention_recorded'))}</td>"
            f"<td>{_pts(g.get('gap'))}</td></tr>" for g in gap)
        out.append("<table class=plain><thead><tr><th>strategy</th><th>traces with a recorded summary</th>"
                   "<th>retention, extractive stand-in</th><th>retention, recorded summaries</th><th>gap</th></tr>"
                   f"</thead><tbody>{body}</tbody></table><p class=legend>Sources: "
                   f"{html.escape(bv.RETENTION_SOURCES['extractive'])}; {html.escape(bv.RETENTION_SOURCES['recorded'])}"
                   ". Only the sessions where the recorded summarizer found a recorded summary count.</p>")
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in r.get("notes", ()))
    if notes:
        out.append(f"<ul class=n>{notes}</ul>")
    return '<div id="robustness">' + "".join(out) + "</div>"


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.1%}"


def _pts(v: float | None) -> str:
    return "—" if v is None else f"{v * 100:+.1f} pts"
