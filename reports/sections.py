"""HTML of the scoring sections: threshold sweeps, paired comparisons, retention, summary sizes,
cost truth, estimator vs truth and fidelity. Every number shown with its n; no bare means.

The tables come from ``reports.scoring``; this module only formats them.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from bench.scoring import stats
from reports import tables
from reports.scoring import COMPARED_TITLES, LOWER_IS_BETTER, Sweep, finite, safe_float

Fmt = Callable[[float], str]
pct: Fmt = lambda v: f"{v:.0%}"  # noqa: E731
pct1: Fmt = lambda v: f"{v:.1%}"  # noqa: E731
count: Fmt = lambda v: f"{v:,.0f}"  # noqa: E731
ratio: Fmt = lambda v: f"{v:.2f}"  # noqa: E731
tokens: Fmt = tables._tokens
usd: Fmt = tables.usd
MUTED_VERDICTS = (stats.NOT_SIGNIFICANT, "too few pairs")


@dataclass(frozen=True)
class Col:
    key: str
    label: str
    fmt: Fmt
    lower_is_better: bool | None = None
    tip: str = ""


def table(rows: pd.DataFrame, cols: Sequence[Col], *, name: str = "strategy", css: str = "plain score",
          label: str | None = None, marks: Sequence[str] = (), by_construction: frozenset[str] = frozenset()) -> str:
    """A table of ``rows`` (first column ``name``, headed ``label``) with shaded metric columns; "—" for
    missing values. ``marks`` is HTML put after the first cell's text, one per row (badges). In the
    ``by_construction`` columns the ``none`` row is neither shaded nor ranked: its value there is
    fixed by what it is (it never compacts, never acts on an estimate), not a result."""
    cols = [c for c in cols if c.key in rows]
    head = f"<th>{html.escape(label or name)}</th>" + "".join(
        f'<th class=num title="{html.escape(c.tip or c.label)}">{html.escape(c.label)}'
        f'{ {True: " ↓", False: " ↑", None: ""}[c.lower_is_better]}</th>' for c in cols)
    shades = {c.key: tables._shade(pd.to_numeric(rows[c.key], errors="coerce"), c.lower_is_better) for c in cols}
    base = (rows[name].astype(str) == tables.BASELINE).to_numpy() if name in rows else None
    if base is not None and base.any():
        for c in cols:
            if c.key in by_construction:
                rest = iter(tables._shade(pd.to_numeric(rows[c.key][~base], errors="coerce"), c.lower_is_better))
                shades[c.key] = ["" if b else next(rest) for b in base]
    body = []
    for i, (_, r) in enumerate(rows.iterrows()):
        mark = f" {marks[i]}" if i < len(marks) and marks[i] else ""
        cells = [f"<td class=name>{html.escape(str(r[name]))}{mark}</td>"]
        for c in cols:
            v = r[c.key]
            text = html.escape(v) if isinstance(v, str) else c.fmt(safe_float(v)) if finite(v) else "—"
            style = f' style="{shades[c.key][i]}"' if shades[c.key][i] else ""
            cells.append(f"<td class=num{style}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _ordered(df: pd.DataFrame, order: Sequence[str]) -> pd.DataFrame:
    rank = {s: i for i, s in enumerate(order)}
    return df.assign(_o=df.strategy.map(lambda s: rank.get(s, len(rank)))).sort_values(["_o", "strategy"]).drop(
        columns="_o")


def muted(text: str) -> str:
    return f"<p class=muted>{html.escape(text)}</p>"


# -- threshold sweeps ------------------------------------------------------------------------

SWEEP_COLS = (
    Col("cost", "cost", usd, True, "with the prompt cache, over all traces"),
    Col("input_tokens", "input tokens", tokens, True, "prompt tokens billed, agent and summarizer calls"),
    Col("saving_vs_none", "tokens saved vs none", lambda v: f"{v:+.1%}", False),
    Col("overflows", "overflows", count, True, "agent calls over the context window"),
    Col("cache_hit_rate", "cache-hit rate", pct, False, "share of prompt tokens read from the cache"),
    Col("retention", "retention", pct, False,
        "share of stated needles retained verbatim when the traces ended (as under Needle retention)"),
    Col("compactions", "compactions", count, None, "summarize and handoff events"),
)


@dataclass(frozen=True)
class Judged:
    """How a sweep's "best" setting is named in badges and the headline."""

    one: str
    many: str
    noun: str
    fmt: Fmt


JUDGED = {"retention": Judged("retains most", "retain most", "retention", pct),
          "saving_vs_none": Judged("saves most tokens", "save most tokens", "tokens saved", pct1)}


def _badges(sweep: Sweep) -> list[str]:
    r = sweep.rows
    judged = JUDGED.get(sweep.metric or "")
    tied = bool(r.most_retained.all())  # every setting best is no distinction
    out = []
    for cheap, best in zip(r.cheapest, r.most_retained, strict=True):
        badges = ['<span class="badge good" title="lowest cost in this sweep">cheapest</span>'] if cheap else []
        if best and judged and not tied:
            badges.append(f'<span class="badge good" title="highest {judged.noun} in this sweep">{judged.one}</span>')
        out.append(" ".join(badges))
    return out


def _sweep_table(sweep: Sweep) -> str:
    fixed = ", ".join(f"{k}={v}" for k, v in sweep.fixed.items())
    fixed = f" <span class=n>(fixed: {html.escape(fixed)})</span>" if fixed else ""
    head = f"<h3><code>{html.escape(sweep.family)}</code> by {html.escape(', '.join(sweep.keys))}{fixed}</h3>"
    cols = [*(Col(f"param:{k}", k, str) for k in sweep.keys[1:]), *SWEEP_COLS]
    body = table(sweep.rows, cols, name=f"param:{sweep.keys[0]}", label=sweep.keys[0], marks=_badges(sweep))
    return f"{head}<div class=scroll>{body}</div>"


def sweeps_html(sweeps: Sequence[Sweep], figures: str) -> str:
    """The "Threshold sweeps" section, or nothing when no family was run at two or more settings."""
    if not sweeps:
        return ""
    probed = any(s.metric == "retention" for s in sweeps)
    note = ("One row per setting, in parameter order; “default” is a parameter the setting left at the "
            "strategy's own value. Cells are shaded within each sweep; "
            + ("retention is the share of stated needles still verbatim when the traces ended. " if probed else
               "this run has no needle probes, so “saves most tokens” stands in for retention. ")
            + "A sweep whose settings all tie on that gets no badge for it.")
    return ('<section id="sweeps">\n  <h2>Threshold sweeps</h2>\n'
            + "".join(_sweep_table(s) for s in sweeps)
            + f"<p class=legend>{html.escape(note)}</p>{figures}\n</section>\n")


def sweep_lines(sweeps: Sequence[Sweep]) -> list[str]:
    """One headline sentence per sweep: its cheapest setting and the one that retains most."""
    out = []
    for sweep in sweeps:
        r = sweep.rows
        if not r.cheapest.any():
            out.append(f"Sweep <code>{html.escape(sweep.family)}</code> {html.escape(', '.join(sweep.keys))}: "
                       "every setting overflowed the window.")
            continue
        cheap = r[r.cheapest].iloc[0]
        line = (f"Sweep <code>{html.escape(sweep.family)}</code> {html.escape(', '.join(sweep.keys))}: "
                f"<b>{html.escape(sweep.setting(cheap))}</b> is cheapest ({usd(cheap.cost)})")
        overflowed = r[r.overflows > 0] if "overflows" in r else r[:0]
        if len(overflowed):
            line += (" of the settings that never overflowed (left out: "
                     + ", ".join(f"<b>{html.escape(sweep.setting(o))}</b>" for _, o in overflowed.iterrows()) + ")")
        judged = JUDGED.get(sweep.metric or "")
        best = r[r.most_retained]
        if judged and len(best):
            value = judged.fmt(float(best[sweep.metric].iloc[0]))
            if len(best) == len(r):
                line += f"; every setting has the same {judged.noun} ({value})"
            elif len(best) == 1 and bool(best.cheapest.iloc[0]):
                line += f" and {judged.one} ({value})"
            else:
                names = " and ".join(f"<b>{html.escape(sweep.setting(b))}</b>" for _, b in best.iterrows())
                line += f", {names} {judged.one if len(best) == 1 else judged.many} ({value})"
        out.append(line + ".")
    return out


# -- paired comparisons ---------------------------------------------------------------------

def _signed(fmt: Fmt, unit: str = "") -> Fmt:
    """+x / −x with a true minus sign, and a plain 0 (no sign) for an exact zero."""
    return lambda v: "0" + unit if v == 0 else ("+" if v > 0 else "−") + fmt(abs(v)) + unit


DIFF_FORMAT: dict[str, Fmt] = {
    "cost": _signed(usd), "input_tokens": _signed(tokens), "retention": _signed(lambda v: f"{v * 100:.1f}", " pp"),
}


def _verdict(metric: str, r: pd.Series) -> str:
    verdict = str(r.verdict)
    if verdict in MUTED_VERDICTS:
        return f'<span class="badge ns">{html.escape(verdict)}</span>'
    good = (verdict == "lower") == LOWER_IS_BETTER[metric]
    return f'<span class="badge {"good" if good else "bad"}">significantly {html.escape(verdict)}</span>'


def _compare_cell(metric: str, r: pd.Series | None) -> str:
    if r is None or not finite(r.mean_diff):
        return "<td class=cmp>—</td>"
    fmt = DIFF_FORMAT[metric]
    rel = ""
    if metric != "retention" and finite(r.mean_baseline) and r.mean_baseline:
        rel = f' <span class="delta">({r.mean_diff / abs(r.mean_baseline):+.1%})</span>'.replace("-", "−")
    ci = (f'<div class=ci>95% CI {fmt(r.ci_low)} … {fmt(r.ci_high)}</div>' if int(r.n) >= 2 else "")
    return f"<td class=cmp><b>{fmt(r.mean_diff)}</b>{rel} {_verdict(metric, r)}{ci}</td>"


def comparisons_html(comp: pd.DataFrame, order: Sequence[str], resamples: int) -> str:
    if comp.empty:
        return muted("No comparison: this run has no `none` baseline to pair the strategies with.")
    metrics = [m for m in COMPARED_TITLES if (comp.metric == m).any()]
    strategies = [s for s in order if (comp.strategy == s).any()]
    pairs = comp.groupby("strategy").n.max()
    head = "<tr><th>strategy</th><th class=num>pairs</th>" + "".join(
        f"<th>{html.escape(COMPARED_TITLES[m])} − none</th>" for m in metrics) + "</tr>"
    body = []
    for s in strategies:
        cells = [f"<td class=name>{html.escape(s)}</td><td class=num>{int(pairs[s])}</td>"]
        for m in metrics:
            hit = comp[(comp.strategy == s) & (comp.metric == m)]
            cells.append(_compare_cell(m, hit.iloc[0] if len(hit) else None))
        body.append("<tr>" + "".join(cells) + "</tr>")
    base = comp.drop_duplicates("metric").set_index("metric").mean_baseline
    note = ("Mean over the paired traces of (strategy − none); the percentage is relative to none's mean ("
            + ", ".join(f"{COMPARED_TITLES[m]} "
                        f"{(pct1 if m == 'retention' else usd if m == 'cost' else tokens)(base[m])}"
                        for m in metrics if finite(base.get(m))) +
            f"). Intervals: paired nonparametric bootstrap over traces, B = {resamples:,} resamples, seed 0. "
            "“not significant” = the interval holds zero; with a single trace there is nothing to resample.")
    if 2 <= int(comp.n.max()) < 10:
        note += (f" Only {int(comp.n.max())} paired traces: a bootstrap over so few pairs gives rough, "
                 "too-narrow intervals; treat a “significant” verdict here as a hint.")
    return (f'<div class=scroll><table class="plain compare"><thead>{head}</thead><tbody>{"".join(body)}</tbody>'
            f"</table></div><p class=legend>{html.escape(note)}</p>")


def significance_line(comp: pd.DataFrame) -> str | None:
    """One headline sentence: which strategies' cost differs from none beyond chance."""
    c = comp[comp.metric == "cost"] if len(comp) else comp
    if c.empty:
        return None
    n = int(c.n.max())
    if n < 2:
        return f"Only {n} trace paired with <code>none</code>: too few pairs for confidence intervals."
    groups = {v: [html.escape(s) for s in c[c.verdict == v].strategy]
              for v in ("lower", "higher", stats.NOT_SIGNIFICANT)}
    parts = [f"{label}: " + ", ".join(f"<b>{s}</b>" for s in groups[v])
             for v, label in (("lower", "significantly cheaper"), ("higher", "significantly dearer"),
                              (stats.NOT_SIGNIFICANT, "not significant")) if groups[v]]
    return f"Cost vs <code>none</code>, paired over up to {n} traces (95% CI): " + "; ".join(parts) + "."


# -- needle retention ------------------------------------------------------------------------

RETENTION_COLS = (
    Col("n", "needles", count, None, "stated needles probed when the trace ended (controls excluded)"),
    Col("retained-verbatim", "retained verbatim", pct, False, "answer still verbatim in the context sent"),
    Col("recovered-by-reread", "recovered by re-read", pct, None,
        "answer in the context only through a simulated re-read of its file (not kept: fetched again, billed)"),
    Col("recoverable-by-reference", "recoverable by reference", pct, False,
        "answer gone, but the file path or command that fetches it is still there"),
    Col("stale", "stale", pct, True, "only an update needle's superseded value is left"),
    Col("missing", "missing", pct, True, "none of the above"),
    Col("cliff", "cliff round", str, None,
        "first compaction round whose retention fell below 50% (never: it compacted and never did; —: no rounds)"),
    Col("controls", "control needles", count, None, "never-stated needles probed"),
    Col("false_positive_rate", "controls found", pct, True, "share of never-stated control needles found anyway"),
)

RETENTION_FIXED = frozenset({"retained-verbatim", "recovered-by-reread", "recoverable-by-reference", "stale",
                             "missing"})
"""``none`` keeps every message, so it keeps every needle: its retention is not a result."""


def _first_cells(long: pd.DataFrame, column: str) -> dict[tuple[object, object], tuple[object, object]]:
    """(strategy, ``column`` value) → the (retention, n) of its first row: what filtering ``long`` on
    both for each cell of the grid kept, read in one pass. A missing key equals nothing there, so it
    is left out; keys compare with ``==`` as that filter did."""
    out: dict[tuple[object, object], tuple[object, object]] = {}
    for s, c, v, n in zip(long.strategy.tolist(), long[column].tolist(), long.retention.tolist(), long.n.tolist(),
                          strict=True):
        if s is None or c is None or pd.isna(s) is True or pd.isna(c) is True:
            continue
        try:
            out.setdefault((s, c), (v, n))
        except TypeError:  # unhashable: equal to no strategy name or bucket
            continue
    return out


def _cell(first: dict[tuple[object, object], tuple[object, object]], s: object, c: object
          ) -> tuple[object, object] | None:
    try:
        return first.get((s, c))
    except TypeError:
        return None


def heat(long: pd.DataFrame, column: str, order: Sequence[str], title: str) -> str:
    """A strategy × ``column`` retention grid; each cell shows its share and its n."""
    if long.empty:
        return ""
    cats = [c for c in (long[column].cat.categories if hasattr(long[column], "cat") else sorted(long[column].unique()))
            if (long[column] == c).any()]
    head = "<tr><th>strategy</th>" + "".join(f"<th class=num>{html.escape(str(c))}</th>" for c in cats) + "</tr>"
    body = []
    first = _first_cells(long, column)
    for s in [s for s in order if (long.strategy == s).any()]:
        cells = []
        for c in cats:
            hit = _cell(first, s, c)
            if hit is None:
                cells.append("<td class=num>·</td>")
                continue
            v, n = float(hit[0]), int(hit[1])
            cells.append(f'<td class=num style="background:hsl({v * 125:.0f},62%,86%)">{v:.0%}'
                         f" <span class=n>n={n}</span></td>")
        body.append(f"<tr><td class=name>{html.escape(s)}</td>{''.join(cells)}</tr>")
    return (f"<h3>{html.escape(title)}</h3><div class=scroll><table class=\"plain heat\"><thead>{head}</thead>"
            f"<tbody>{''.join(body)}</tbody></table></div>")


def retention_html(overall: pd.DataFrame, order: Sequence[str]) -> str:
    if overall.empty:
        return muted("No stated needles were probed at the end of a trace.")
    o = overall.copy()
    rounds = o["rounds"] if "rounds" in o else pd.Series(0, index=o.index)
    cliff = o["cliff_round"] if "cliff_round" in o else pd.Series(pd.NA, index=o.index)
    o["cliff"] = [("—" if pd.isna(r) or not r else "never") if pd.isna(c) else f"round {int(c)}"
                  for r, c in zip(rounds, cliff, strict=True)]
    reread = "recovered-by-reread"  # shown only where re-reads recovered something (not in an --open-loop run)
    cols = [c for c in RETENTION_COLS if c.key != reread or (reread in o and o[reread].fillna(0).any())]
    return (f"<div class=scroll>{table(_ordered(o, order), cols, by_construction=RETENTION_FIXED)}</div>"
            "<p class=legend><b>Cliff round</b>: needles are probed right after every compaction; a strategy's "
            "cliff is the first compaction round after which fewer than half of the needles stated so far were "
            "still verbatim in the context (round 1 = its first compaction). “never”: it compacted and never "
            "fell under half; “—”: it never compacted (as <code>none</code>), so there is no round to judge.</p>")


def rounds_html(cliffs: pd.DataFrame, order: Sequence[str]) -> str:
    """The retention-by-round numbers behind the chart, collapsed."""
    have = cliffs[cliffs.rounds.fillna(0) > 0] if len(cliffs) else cliffs
    if have.empty:
        return ""
    top = max(max(d) for d in have.retention_by_round)
    head = "<tr><th>strategy</th>" + "".join(f"<th class=num>round {k}</th>" for k in range(1, top + 1)) + "</tr>"
    body = "".join(
        f"<tr><td class=name>{html.escape(r.strategy)}</td>" + "".join(
            f"<td class=num>{r.retention_by_round[k]:.0%}</td>" if k in r.retention_by_round else "<td class=num>·</td>"
            for k in range(1, top + 1)) + "</tr>" for _, r in _ordered(have, order).iterrows())
    return (f"<details><summary>Retention per compaction round (numbers)</summary><table class=plain><thead>{head}"
            f"</thead><tbody>{body}</tbody></table></details>")


# -- summary sizes, cost truth, estimator, fidelity --------------------------------------------


def summary_sizes_html(sizes: pd.DataFrame, order: Sequence[str], reserve: int) -> str:
    """Percentiles with n, and the share of summaries over each strategy's own output reserve
    (``reserve`` where summaries.jsonl does not record the ``max_tokens`` each summary asked for)."""
    if sizes.empty:
        return muted("No strategy wrote a summary in this run.")
    source = sizes["reserve_source"] if "reserve_source" in sizes else pd.Series("default", index=sizes.index)
    own = (source != "default").any()
    cols = [Col("n", "n", count), *(Col(f"p{q:g}", f"p{q:g}", count, True) for q in stats.QUANTILES),
            Col("max", "max", count, True)]
    if own:
        cols.append(Col("reserve", "output reserve", count, None, "the max_tokens the strategy asked its summary for"))
        label = "over its reserve"
    else:
        label = f"over {reserve / 1000:g}K"
    cols += [Col("over_reserve", label, count, True),
             Col("over_reserve_share", f"share {label}", pct1, True,
                 "summaries longer than the output reserve would have been cut off")]
    if "recorded_p50_cl100k" in sizes:
        cols += [Col("p50_cl100k", "p50 (cl100k)", count, None, "median size of this strategy's summaries in cl100k"),
                 Col("recorded_agent", "recorded agent", str, None,
                     "whose recorded summaries the size is compared with (pooled: an agent with none)"),
                 Col("recorded_p50_cl100k", "recorded p50 (cl100k)", count, None,
                     "median of that agent's automatic summaries in ../shared/traces (bench/data/summary_sizes.toml)"),
                 Col("recorded_n", "recorded n", count, None, "recorded summaries fitted (0: pooled assumption)")]
    note = ("Output tokens per summary written, with n. A high percentile needs many summaries (p99.9 needs about "
            "1,000 of them): with fewer it is close to the max. ")
    if own:
        note += ("Each summary is tested against the output budget its own strategy asked for (max_tokens: "
                 "e.g. Claude Code 20K, OpenCode 32K, Cline 4,096).")
        if (source == "default").any() or (source == "mixed").any():
            note += f" Where a summary does not record it, {reserve:,} stands in."
    else:
        note += (f"This run's summaries.jsonl does not record the max_tokens each strategy asked for, so every "
                 f"strategy is tested against one reserve, {reserve:,} tokens (Claude Code's, which the seed "
                 "justifies by a p99.99 of 17,387), not its own.")
    return f"<div class=scroll>{table(_ordered(sizes, order), cols)}</div><p class=legend>{html.escape(note)}</p>"


COST_COLS = (
    Col("cost", "cost", usd, True, "with the prompt cache"), Col("cost_no_cache", "cost without cache", usd, True),
    Col("cache_saving", "saved by the cache", pct, False, "1 − cost / cost without cache"),
    Col("summarizer_share", "summarizer share", pct1, True), Col("cache_hit_rate", "cache-hit rate", pct, False),
    Col("prefix_breaks", "prefix breaks", count, True),
    Col("rewritten_tokens", "tokens re-written", tokens, True, "cache writes of agent calls that broke the prefix"),
    Col("lost_prefix_tokens", "prefix lost", tokens, True, "previous request's tokens not read back after a break"),
)


def cost_html(cost: pd.DataFrame, order: Sequence[str]) -> str:
    if cost.empty:
        return muted("No calls recorded.")
    c = _ordered(cost, order)
    body = table(c, COST_COLS, by_construction=frozenset({"summarizer_share"}))
    flagged = c[c.false_economy > 0]
    note = ("No false economy: no strategy billed fewer tokens than <code>none</code> on a trace while costing more."
            if flagged.empty else "False economy (fewer input tokens than <code>none</code> on the same trace, more "
            "dollars): " + ", ".join(f'<b>{html.escape(r.strategy)}</b> <span class="badge warn">{int(r.false_economy)}'
                                      f" of {int(r.traces)} traces</span>" for _, r in flagged.iterrows()) + ".")
    return f"<div class=scroll>{body}</div><p class=legend>{note}</p>"


ESTIMATOR_COLS = (
    Col("triggers", "actions measured", count, None, "strategy events taken on a measured context"),
    Col("trigger_ratio_p10", "ratio p10", ratio), Col("trigger_ratio_p50", "ratio p50", ratio),
    Col("trigger_ratio_p90", "ratio p90", ratio),
    Col("late_triggers", "late actions", count, True, "acted when the truth was already over the window"),
    Col("calls", "calls", count), Col("call_ratio_p50", "ratio p50 over calls", ratio),
    Col("hidden_overflows", "hidden overflows", count, True, "estimate fit the window, the truth did not"),
)
ESTIMATOR_FIXED = frozenset({"triggers", "late_triggers", "hidden_overflows"})
"""``none`` never acts on an estimate: it cannot act late, and no overflow of its is one it missed."""


def estimator_html(est: pd.DataFrame, hidden: pd.DataFrame, order: Sequence[str], win: int | None) -> str:
    if win is None:
        return muted("run.json names no known model, so there is no window to test the estimates against.")
    if est.empty:
        return muted("calls.csv carries no estimates (an older run): nothing to compare.")
    out = f"<div class=scroll>{table(_ordered(est, order), ESTIMATOR_COLS, by_construction=ESTIMATOR_FIXED)}</div>"
    if len(hidden):
        h = hidden.sort_values(["strategy", "trace", "call"]).head(50)
        rows = [(r.trace, r.strategy, int(r.call), f"{int(r.estimate_tokens):,}", f"{int(r.prompt_tokens):,}",
                 f"{int(r.output_tokens):,}") for _, r in h.iterrows()]
        from reports.listings import details as _details

        more = f" (first 50 of {len(hidden)})" if len(hidden) > 50 else ""
        out += _details(f"{len(hidden)} hidden overflows: calls whose estimate fit the {win:,}-token window "
                        f"and whose truth did not{more}",
                        ("trace", "strategy", "call", "estimate", "true prompt", "output"), rows)
    return out


FIDELITY_COLS = (
    ("compaction", "#", count), ("trigger", "trigger", str), ("recorded_call", "recorded call", count),
    ("replayed_call", "replayed call", count), ("call_delta", "Δ calls", lambda v: "0" if v == 0 else f"{v:+,.0f}"),
    ("recorded_pre_tokens", "recorded pre (provider)", count),
    ("recorded_pre_truth", "recorded pre", count), ("replayed_pre_tokens", "replayed pre", count),
    ("recorded_post_tokens", "recorded post", count), ("replayed_post_tokens", "replayed post", count),
    ("post_ratio", "post ratio", ratio),
)
FIDELITY_TIPS = {
    "recorded_pre_tokens": "the agent's own count when it compacted (preTokens): its system prompt and tools "
                           "included, in the provider's tokenizer",
    "recorded_pre_truth": "our tokenizer over the messages the agent held when it compacted",
    "replayed_pre_tokens": "our tokenizer over the replay's context when its strategy fired",
    "recorded_post_tokens": "our tokenizer: system message + recorded summary + what the agent appended before "
                            "its next call",
    "replayed_post_tokens": "our tokenizer: the replay's first request after its compaction",
    "post_ratio": "replayed post / recorded post",
}
FIDELITY_NOTE = (
    "Sizes in tokens. “recorded pre (provider)” is the agent's own count and holds its system prompt and tool "
    "definitions, which a trace does not carry: compare “replayed pre” with “recorded pre”, both our tokenizer "
    "over trace messages. The replay also holds the inputs of the step it fired in, and after compacting it still "
    "carries the recorded summary (the trace's future is fixed), so a post ratio above 1 is partly that. "
    "A manual compaction (the user's /compact) has no automatic trigger for a replay to match."
)


def fidelity_html(fid: pd.DataFrame) -> str:
    if fid.empty:
        return muted("No fidelity check: no trace in this run carries a recorded compaction of an agent "
                     "we re-implement (fidelity.csv absent).")
    cols = [c for c in FIDELITY_COLS if c[0] in fid]
    head = "<tr><th>trace</th><th>strategy</th>" + "".join(
        f'<th class=num title="{html.escape(FIDELITY_TIPS.get(key, label))}">{html.escape(label)}</th>'
        for key, label, _ in cols) + "</tr>"
    body = []
    for _, r in fid.iterrows():
        cells = [f"<td><code>{html.escape(str(r.trace))}</code></td><td class=name>{html.escape(str(r.strategy))}</td>"]
        manual = str(r.get("trigger", "")) == "manual"
        for key, _, fmt in cols:
            v = r[key]
            ok = isinstance(v, str) and v or finite(v)
            text = html.escape(fmt(v) if fmt is str else fmt(safe_float(v))) if ok else "—"
            if key == "replayed_call" and not ok:
                text = ('<span class="badge ns" title="a user-triggered /compact: no threshold to reproduce">'
                        "manual: n/a</span>" if manual else '<span class="badge warn">not replayed</span>')
            cells.append(f"<td class=num>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class=scroll><table class="plain fidelity"><thead>{head}</thead><tbody>{"".join(body)}</tbody>'
            f"</table></div><p class=legend>{html.escape(FIDELITY_NOTE)}</p>")


def _with_ci(v: float, low: float, high: float, n: float, fmt: Fmt = pct) -> str:
    if not finite(v):
        return "—"
    bounds = f" [{fmt(low)}, {fmt(high)}]" if finite(low) and finite(high) else ""
    return f"{fmt(v)}{bounds}" + (f" n={n:,.0f}" if finite(n) else "")


def behaviour_html(table_: pd.DataFrame, order: Sequence[str]) -> str:
    """The behaviour probes per strategy (bench.scoring.behaviour.behaviour_table), every share with its 95%
    interval and n; nothing when the run asked no model."""
    if table_.empty:
        return ""
    t = _ordered(table_, order)
    shares = [("next_action_agreement", "next step as on the full context"),
              ("next_action_recorded_agreement", "next step as recorded"),
              ("constraint_obedience", "rules kept, compacted"), ("constraint_obedience_full", "full (baseline)"),
              ("constraint_obedience_restated", "restated (upper bound)"),
              ("constraint_obedience_unstated", "unstated (floor)")]
    head = "".join(f"<th class=num>{html.escape(label)}</th>" for _, label in shares) + (
        "<th class=num>effect retention</th><th class=num>retention judges agree (κ)</th>"
        "<th class=num>requests paid / stopped by --max-cost</th>")
    body = []
    for _, r in t.iterrows():
        cells = [_with_ci(r[c], r[f"{c}_low"], r[f"{c}_high"], r[f"{c}_n"]) for c, _ in shares]
        cells.append(_with_ci(r.constraint_effect_retention, r.constraint_effect_low, r.constraint_effect_high,
                              float("nan"), ratio))
        cells.append("—" if not r.judge_n else f"{r.judge_agreement:.0%} (κ {r.judge_kappa:.2f}) n={r.judge_n:,.0f}")
        cells.append(f"{r.probes_paid:,.0f} ({usd(r.probe_cost)}) / {r.probes_skipped:,.0f}")
        body.append(f"<tr><td class=name>{html.escape(str(r.strategy))}</td>"
                    + "".join(f"<td class=num>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return ("<h3>What the agent still does (behaviour probes)</h3><div class=scroll>"
            f'<table class="plain score"><thead><tr><th>strategy</th>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>"
            "<p class=legend>A real model asked after every compaction (<code>--probe anthropic</code>). Shares are "
            "means over traces with a 95% two-stage bootstrap interval (traces, then probes within a trace) and n "
            "answers. Rules: a forced choice per only / never / always rule on the compacted context, the full "
            "context, the compacted context with the rule restated (upper bound) and the full context with the "
            "rule cut out (floor); effect retention = (compacted − floor) / (upper bound − floor), COMPINT's "
            "score, 1 lossless, 0 all lost. Judges: the exact-presence probe and the model, asked whether the "
            "compacted context states each rule.</p>")
