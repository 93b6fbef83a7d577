"""The report's decision: the verdict sentence that opens the page, verdict.json, and the
neighbour comparisons of sweeps. The numbers come from ``bench.decide.verdict`` (a pure function of the
results table); this module only formats them and writes the file.
"""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from bench.decide import verdict as bv
from bench.run.store import atomic_write


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
    return f'<p class="verdict" id="verdict-sentence">{html.escape(v.sentence)}{spec}</p>{more}'


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
    for a in names:
        cells = [f"<td class=name>{html.escape(a)}</td>"]
        for b in names:
            if a == b:
                cells.append("<td class=cmp>·</td>")
                continue
            c = bv.paired(results, b, a, metric, resamples=resamples, weight=weight)
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
