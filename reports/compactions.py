"""A static page per strategy: what each of its compactions did, trace by trace (linked from the
report's strategy table): the event, tokens before and after, messages touched, the summary it wrote,
and the needles lost at that moment. From the stored run alone; for the full context sent at a call,
``compaction-bench show`` replays that one task.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd

PAGE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title><style>
body{{font:14px/1.5 -apple-system,"Segoe UI",Arial,sans-serif;color:#1f2328;max-width:1100px;margin:0 auto;
padding:20px}} table{{border-collapse:collapse;width:100%;font-size:13px}} th,td{{padding:4px 8px;
border-bottom:1px solid #eaeef2;text-align:left;vertical-align:top}} td.num{{text-align:right;
font-variant-numeric:tabular-nums}} pre{{white-space:pre-wrap;background:#f6f8fa;padding:6px;border-radius:6px;
max-height:16em;overflow:auto;font-size:12px}} .lost{{color:#b42318}} .muted{{color:#656d76}}</style></head>
<body><p><a href="../report.html">← report</a></p><h1>{title}</h1><p class=muted>{note}</p>{body}</body></html>
"""


def slug(strategy: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", strategy)


Lost = dict[tuple[str, object], list[str]]
"""(trace, call) → the needles a compaction lost there (unsorted)."""
Records = Callable[[str], tuple[pd.DataFrame, "pd.DataFrame | None", Lost]]
"""strategy → its events, its summaries (None without any) and its lost needles."""


def lost_needles(probes: pd.DataFrame | None) -> Lost:
    """Needles (not controls) a probe right after a compaction found gone, by (trace, call)."""
    if probes is None or probes.empty or "moment" not in probes:
        return {}
    p = probes[probes.moment == "compaction"]
    if "needle_kind" in p:
        p = p[p.needle_kind != "control"]
    kept = p.retained.astype(str).str.lower().isin(("true", "1")) if "retained" in p else pd.Series(True, p.index)
    out: Lost = {}
    for trace, call, needle in zip(p.trace[~kept], p.call[~kept], p.needle[~kept], strict=True):
        out.setdefault((str(trace), call), []).append(str(needle))
    return out


def from_frames(events: pd.DataFrame, summaries: pd.DataFrame, probes: pd.DataFrame | None) -> Records:
    """``Records`` over tables already in memory (tests, small callers)."""
    def read(strategy: str) -> tuple[pd.DataFrame, pd.DataFrame | None, Lost]:
        e = events[events.strategy == strategy] if "strategy" in events else events.iloc[:0]
        s = summaries[summaries.strategy == strategy] if len(summaries) and "strategy" in summaries else None
        p = probes[probes.strategy == strategy] if probes is not None and "strategy" in probes else None
        return e, s if s is not None and len(s) else None, lost_needles(p)
    return read


def from_run(run_dir: Path) -> Records:
    """``Records`` read from the run folder one strategy at a time (``reports.batches``, filtered
    while reading): a page holds its own strategy's rows, never the run's."""
    from reports import batches

    def read(strategy: str) -> tuple[pd.DataFrame, pd.DataFrame | None, Lost]:
        e = batches.in_order(batches.batches(run_dir, "events", strategy=strategy, rows=True))
        s = batches.in_order(batches.batches(run_dir, "summaries", ("trace", "strategy", "call", "text"),
                                             strategy=strategy, rows=True))
        lost: Lost = {}
        for p in batches.batches(run_dir, "probes", ("trace", "strategy", "moment", "call", "needle", "needle_kind",
                                                     "retained"), strategy=strategy):
            for at, needles in lost_needles(p).items():  # only the lost ones are kept, batch by batch
                lost.setdefault(at, []).extend(needles)
        return e, s if len(s) and "strategy" in s else None, lost
    return read


def write(run_dir: Path, strategies: list[str], records: Records) -> dict[str, str]:
    """Write compactions/<strategy>.html for every strategy; returns strategy → relative link."""
    folder = Path(run_dir) / "compactions"
    folder.mkdir(exist_ok=True)
    links = {}
    for strategy in strategies:
        events, s, lost_at = records(strategy)
        if not len(events) or not {"strategy", "trace", "call"} <= set(events.columns):
            e = pd.DataFrame(columns=["trace", "call", "kind", "tokens_before", "tokens_after"])
        else:
            e = events
        note = ("Every event the strategy caused, per trace. The context sent at any call: "
                f"<code>compaction-bench show {html.escape(str(run_dir))} --trace T --strategy "
                f"'{html.escape(strategy)}' --call N</code> (replays that one task).")
        name = f"{slug(strategy)}.html"
        head, tail = PAGE.split("{body}")
        with (folder / name).open("w", encoding="utf-8") as out:  # trace by trace: the page is never one string
            out.write(head.format(title=html.escape(f"{strategy}: its compactions"), note=note))
            wrote = False
            for trace, g in e.groupby("trace", sort=True):
                out.write(_trace_html(trace, g, s, lost_at))
                wrote = True
            if not wrote:
                out.write("<p class=muted>This strategy did nothing on any trace.</p>")
            out.write(tail.format())
        links[strategy] = f"compactions/{name}"
    return links


def _trace_html(trace: object, g: pd.DataFrame, s: pd.DataFrame | None, lost_at: Lost) -> str:
    """One trace's events: call, kind, hook, tokens before → after, messages, detail, lost needles, summary."""
    rows = []
    for _, r in g.sort_values("call").iterrows():
        text = ""
        if s is not None and r.kind in ("summarize", "handoff"):
            hit = s[(s.trace == trace) & (s.call == r.call)]
            text = "" if hit.empty else f"<pre>{html.escape(str(hit.text.iloc[0]))}</pre>"
        lost = sorted(lost_at.get((str(trace), int(r.call)), []))
        lost_html = f'<div class=lost>needles lost here: {html.escape(", ".join(lost))}</div>' if lost else ""
        rows.append(f"<tr><td class=num>{int(r.call)}</td><td>{html.escape(str(r.kind))}</td>"
                    f"<td>{html.escape(str(r.get('hook', '')))}</td>"
                    f"<td class=num>{int(r.tokens_before):,} → {int(r.tokens_after):,}</td>"
                    f"<td class=num>{int(r.get('messages_touched', 0) or 0):,}</td>"
                    f"<td>{html.escape(str(r.get('detail', '') or ''))}{lost_html}{text}</td></tr>")
    return (f"<details open><summary><code>{html.escape(str(trace))}</code>: {len(g)} events</summary>"
            "<table><thead><tr><th>call</th><th>event</th><th>hook</th><th>tokens before → after</th>"
            "<th>messages</th><th>detail, needles lost, summary written</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></details>")
