"""The HTML report of a finished run: ``render(out/<run>)`` writes report.html and its PNGs there.

It reads only the run's files (results.csv, calls.csv, events.jsonl, summaries.jsonl, optional
probes.csv, run.json) and never imports ``strategies`` or replays anything, so any run can be
re-rendered later, on another machine, from its folder alone.

Adding a chart: 1. write one function in ``reports/charts.py`` that draws one PNG from the run's
tables; 2. add it to ``_charts`` below with its caption; 3. extend the fixture test.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

import pandas as pd

from reports import charts, tables

__all__ = ["RunData", "load", "render"]

TEMPLATE = Path(__file__).parent / "templates" / "report.html"
SAWTOOTH_LINES = 6
LIMITATION = (
    "Every strategy replays the same recorded future. After a compaction the agent's next messages are "
    "still the ones it wrote with its full history in view: a live agent that had forgotten something "
    "would re-read files, repeat work or take more turns, and one that kept too little might fail. None of "
    "that shows here, so token and dollar savings are upper bounds on what a live agent would save, and "
    "needle retention measures what is still present in the context, not what a model would recall from it."
)


@dataclass(frozen=True)
class RunData:
    """The tables of one run folder, as written by the runner."""

    name: str
    results: pd.DataFrame
    calls: pd.DataFrame
    events: pd.DataFrame
    summaries: pd.DataFrame
    probes: pd.DataFrame | None
    info: dict[str, Any]


def _jsonl(path: Path) -> pd.DataFrame:
    if not path.exists():
        return pd.DataFrame()
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return pd.DataFrame(lines)


def load(run_dir: Path) -> RunData:
    run_dir = Path(run_dir)
    info = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    probes = run_dir / "probes.csv"
    return RunData(
        name=str(info.get("config", {}).get("name") or run_dir.name),
        results=pd.read_csv(run_dir / "results.csv", keep_default_na=True),
        calls=pd.read_csv(run_dir / "calls.csv"),
        events=_jsonl(run_dir / "events.jsonl"),
        summaries=_jsonl(run_dir / "summaries.jsonl"),
        probes=pd.read_csv(probes) if probes.exists() else None,
        info=info,
    )


def _sawtooth_trace(rows: pd.DataFrame) -> str:
    """The trace where strategies compacted most (ties: the longest, then by name)."""
    g = rows.groupby("trace").agg(compactions=("compactions", "sum"), calls=("calls", "max"))
    g = g.reset_index().sort_values(["compactions", "calls", "trace"], ascending=[False, False, True])
    return str(g.trace.iloc[0])


def _sawtooth_strategies(rows: pd.DataFrame, trace: str) -> list[str]:
    """``none`` and the cheapest others on that trace: more lines than this become a tangle."""
    r = rows[rows.trace == trace].sort_values(["cost", "strategy"])
    others = [s for s in r.strategy if s != tables.BASELINE][: SAWTOOTH_LINES - 1]
    return ([tables.BASELINE] if (r.strategy == tables.BASELINE).any() else []) + others


def _window(info: dict[str, Any]) -> int | None:
    try:
        from bench.pricing import profile

        return profile(str(info["config"]["model"])).context_window
    except Exception:  # noqa: BLE001 - the line is a nicety; an unknown model just omits it
        return None


def _charts(run: RunData, run_dir: Path, rows: pd.DataFrame, totals: pd.DataFrame,
            trace: str | None, sawtooth: list[str] | None) -> list[tuple[str, str]]:
    """Draw every chart; returns (file name, caption) in page order."""
    order = totals.strategy.tolist()
    colors = charts.palette(order)
    finished = rows[rows.error == ""]
    trace = trace or _sawtooth_trace(finished)
    shown = [s for s in sawtooth if s in colors] if sawtooth else _sawtooth_strategies(finished, trace)
    out = [
        (charts.context_over_calls(run.calls, trace, shown, colors, run_dir / "context_over_calls.png",
                                   window=_window(run.info)),
         f"Prompt tokens sent at each agent call of trace <code>{html.escape(trace)}</code>: each drop is a "
         f"compaction. {len(shown)} of {len(order)} strategies shown"
         + ("." if sawtooth else ": <code>none</code> and the cheapest on this trace.")),
        (charts.cost_vs_saving(totals, colors, run_dir / "cost_vs_saving.png"),
         "Input-token saving against dollar change, both relative to <code>none</code>. Points in the red "
         "quadrant bill fewer tokens yet cost more: rewriting old messages broke the prompt cache."),
        (charts.cost_with_without_cache(totals, colors, run_dir / "cost_cache.png"),
         "Dollars with the prompt cache, beside dollars had every prompt token been billed at the input rate."),
        (charts.cache_hit_rate(totals, colors, run_dir / "cache_hit_rate.png"),
         "Share of prompt tokens read from the cache; a prefix break is an agent call that re-used less of "
         "the cached prefix than the previous request had written."),
        (charts.summary_sizes(run.summaries, order, colors, run_dir / "summary_sizes.png"),
         "Length of each summary written (output tokens), per strategy that summarizes."),
    ]
    if run.probes is not None:
        out.append((charts.retention_by_age(run.probes, order, run_dir / "retention_by_age.png"),
                    "Share of planted needles still present verbatim when probed, by needle age; "
                    "“+ ref” is the extra share recoverable through a file path or command still in context."))
    return [(p.name, caption) for p, caption in out]


def _provenance(info: dict[str, Any], name: str) -> str:
    config, prov = info.get("config", {}), info.get("provenance", {})
    sha = str(prov.get("git_sha") or "unknown")[:12] + (" (dirty)" if prov.get("git_dirty") else "")
    summarizer = str(config.get("summarizer", "?"))
    if config.get("summarizer_model"):
        summarizer += f" ({config['summarizer_model']})"
    items = [
        ("run", name), ("model", config.get("model")), ("summarizer", summarizer),
        ("cache TTL", config.get("cache_ttl")), ("seconds per call", config.get("seconds_per_call")),
        ("seed", config.get("seed")), ("tokenizer", info.get("tokenizer")),
        ("pricing table", info.get("pricing_table")), ("schema version", info.get("schema_version")),
        ("git", sha), ("python", prov.get("python")), ("platform", prov.get("platform")),
        ("packages", ", ".join(f"{k} {v}" for k, v in (prov.get("packages") or {}).items() if v)),
    ]
    dl = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(str(v))}</dd>" for k, v in items if v not in (None, ""))
    traces = [(t.get("id"), t.get("agent", ""), t.get("calls", ""), str(t.get("sha256", ""))[:12])
              for t in info.get("traces", [])]
    strategies = [(s.get("label"), s.get("version", ""), s.get("citation", "")) for s in info.get("strategies", [])]
    return (f"<dl>{dl}</dl>"
            + _details(f"{len(traces)} traces", ("trace", "agent", "calls", "sha256"), traces)
            + _details(f"{len(strategies)} strategies and their sources", ("strategy", "version", "source"),
                       strategies))


def _details(title: str, header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> str:
    """A collapsed plain table, or nothing when there are no rows."""
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in r) + "</tr>" for r in rows)
    return (f"<details><summary>{html.escape(title)}</summary><table class=plain><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table></details>")


def _events_html(events: pd.DataFrame, order: list[str]) -> str:
    if events.empty:
        return "<p class=muted>No strategy events in this run.</p>"
    pivot = events.pivot_table(index="strategy", columns="kind", values="trace", aggfunc="count", fill_value=0)
    pivot = pivot.reindex([s for s in order if s in pivot.index])
    head = "<tr><th>strategy</th>" + "".join(f"<th class=num>{html.escape(k)}</th>" for k in pivot.columns) + "</tr>"
    body = "".join(f"<tr><td class=name>{html.escape(s)}</td>"
                   + "".join(f"<td class=num>{v if v else '·'}</td>" for v in r) + "</tr>" for s, r in pivot.iterrows())
    return f"<table class=plain><thead>{head}</thead><tbody>{body}</tbody></table>"


def _failures_html(rows: pd.DataFrame) -> str:
    bad = rows[(rows.failed != "") | (rows.error != "")]
    if bad.empty:
        return "<p class=muted>Every task finished.</p>"
    items = "".join(
        f"<li><code>{html.escape(str(r.trace))}</code> × <b>{html.escape(str(r.strategy))}</b>: "
        + (f"harness error, left out of the totals: {html.escape(r.error)}" if r.error else
           f"stopped by the strategy: {html.escape(r.failed)}") + "</li>" for _, r in bad.iterrows())
    return f"<ul class=failures>{items}</ul>"


def render(run_dir: Path, *, trace: str | None = None, sawtooth: list[str] | None = None) -> Path:
    """Write report.html and its PNG charts into ``run_dir``; returns the HTML's path.

    ``trace`` picks the trace of the context-over-calls chart (default: where compaction was busiest)
    and ``sawtooth`` its strategies (default: ``none`` and the five cheapest on that trace).
    """
    run_dir = Path(run_dir)
    run = load(run_dir)
    rows = tables.trace_rows(run.results, run.calls)
    totals = tables.strategy_totals(rows, run.calls)
    figures = _charts(run, run_dir, rows, totals, trace, sawtooth)
    per_trace = "".join(
        f"<details><summary><code>{html.escape(str(t))}</code> — {len(r)} strategies</summary>"
        + tables.table_html(r.sort_values("cost"), css_class="results compact") + "</details>"
        for t, r in rows.groupby("trace", sort=True))
    context = {
        "title": html.escape(f"compaction-bench — {run.name}"),
        "run_name": html.escape(run.name),
        "subtitle": html.escape(f"{rows.trace.nunique()} traces × {len(totals)} strategies, "
                                f"{int((run.calls.kind == 'agent').sum()):,} agent calls replayed"),
        "headline": "".join(f"<li>{line}</li>" for line in tables.headline(totals, int((rows.error != "").sum()))),
        "limitation": html.escape(LIMITATION),
        "summary_table": tables.table_html(totals, keys=tables.SUMMARY_COLUMNS),
        "charts": "".join(
            f'<figure><img src="{name}" alt="{html.escape(name)}" width="{charts.SIZE_PIXELS[0]}" '
            f'height="{charts.SIZE_PIXELS[1]}" loading="eager"><figcaption>{caption}</figcaption></figure>'
            for name, caption in figures),
        "events_table": _events_html(run.events, totals.strategy.tolist()),
        "per_trace": per_trace,
        "failures": _failures_html(rows),
        "glossary": tables.glossary_html(),
        "provenance": _provenance(run.info, run.name),
        "no_probes": "" if run.probes is not None else
        "<p class=muted>No needle probes in this run (probes.csv absent): retention is not charted.</p>",
    }
    page = Template(TEMPLATE.read_text(encoding="utf-8")).substitute(context)
    out = run_dir / "report.html"
    tmp = out.with_name(".report.html.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out)
    return out
