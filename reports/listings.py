"""The report's listings: provenance, events per strategy, failed tasks, collapsed tables."""

from __future__ import annotations

import html
from typing import Any

import pandas as pd


def provenance_html(info: dict[str, Any], name: str) -> str:
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
            + details(f"{len(traces)} traces", ("trace", "agent", "calls", "sha256"), traces)
            + details(f"{len(strategies)} strategies and their sources", ("strategy", "version", "source"),
                       strategies))


def details(title: str, header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> str:
    """A collapsed plain table, or nothing when there are no rows."""
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in r) + "</tr>" for r in rows)
    return (f"<details><summary>{html.escape(title)}</summary><table class=plain><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table></details>")


def events_html(kinds: pd.DataFrame, order: list[str]) -> str:
    """``kinds``: strategy × event kind counts (``reports.eventstats.EventStats.kinds``)."""
    if kinds.empty:
        return "<p class=muted>No strategy events in this run.</p>"
    pivot = kinds
    pivot = pivot.reindex([s for s in order if s in pivot.index])
    head = "<tr><th>strategy</th>" + "".join(f"<th class=num>{html.escape(k)}</th>" for k in pivot.columns) + "</tr>"
    body = "".join(f"<tr><td class=name>{html.escape(s)}</td>"
                   + "".join(f"<td class=num>{v if v else '·'}</td>" for v in r) + "</tr>" for s, r in pivot.iterrows())
    return f"<table class=plain><thead>{head}</thead><tbody>{body}</tbody></table>"


def failures_html(rows: pd.DataFrame) -> str:
    bad = rows[(rows.failed != "") | (rows.error != "")]
    if bad.empty:
        return "<p class=muted>Every task finished.</p>"
    items = "".join(
        f"<li><code>{html.escape(str(r.trace))}</code> × <b>{html.escape(str(r.strategy))}</b>: "
        + (f"harness error, left out of the totals: {html.escape(r.error)}" if r.error else
           f"stopped by the strategy: {html.escape(r.failed)}") + "</li>" for _, r in bad.iterrows())
    return f"<ul class=failures>{items}</ul>"
