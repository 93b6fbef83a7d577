"""A static page per strategy: what each of its compactions did, trace by trace (linked from the
report's strategy table): the event, tokens before and after, messages touched, the summary it wrote,
and the needles lost at that moment. From the stored run alone; for the full context sent at a call,
``compaction-bench show`` replays that one task.
"""

from __future__ import annotations

import html
import re
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


def _lost(probes: pd.DataFrame | None, trace: str, strategy: str, call: int) -> list[str]:
    if probes is None or probes.empty or "moment" not in probes:
        return []
    p = probes[(probes.trace == trace) & (probes.strategy == strategy) & (probes.moment == "compaction")
               & (probes.call == call)]
    if "needle_kind" in p:
        p = p[p.needle_kind != "control"]
    kept = p.retained.astype(str).str.lower().isin(("true", "1")) if "retained" in p else pd.Series(True, p.index)
    return sorted(map(str, p[~kept].needle))


def write(run_dir: Path, strategies: list[str], events: pd.DataFrame, summaries: pd.DataFrame,
          probes: pd.DataFrame | None) -> dict[str, str]:
    """Write compactions/<strategy>.html for every strategy; returns strategy → relative link."""
    folder = Path(run_dir) / "compactions"
    folder.mkdir(exist_ok=True)
    links = {}
    for strategy in strategies:
        if not len(events) or not {"strategy", "trace", "call"} <= set(events.columns):
            e = pd.DataFrame(columns=["trace", "call", "kind", "tokens_before", "tokens_after"])
        else:
            e = events[events.strategy == strategy]
        s = summaries[summaries.strategy == strategy] if len(summaries) and "strategy" in summaries else None
        parts = []
        for trace, g in e.groupby("trace", sort=True):
            rows = []
            for _, r in g.sort_values("call").iterrows():
                text = ""
                if s is not None and r.kind in ("summarize", "handoff"):
                    hit = s[(s.trace == trace) & (s.call == r.call)]
                    text = "" if hit.empty else f"<pre>{html.escape(str(hit.text.iloc[0]))}</pre>"
                lost = _lost(probes, str(trace), strategy, int(r.call))
                lost_html = (f'<div class=lost>needles lost here: {html.escape(", ".join(lost))}</div>'
                             if lost else "")
                rows.append(f"<tr><td class=num>{int(r.call)}</td><td>{html.escape(str(r.kind))}</td>"
                            f"<td>{html.escape(str(r.get('hook', '')))}</td>"
                            f"<td class=num>{int(r.tokens_before):,} → {int(r.tokens_after):,}</td>"
                            f"<td class=num>{int(r.get('messages_touched', 0) or 0):,}</td>"
                            f"<td>{html.escape(str(r.get('detail', '') or ''))}{lost_html}{text}</td></tr>")
            parts.append(f"<details open><summary><code>{html.escape(str(trace))}</code>: {len(g)} events</summary>"
                         "<table><thead><tr><th>call</th><th>event</th><th>hook</th><th>tokens before → after</th>"
                         "<th>messages</th><th>detail, needles lost, summary written</th></tr></thead><tbody>"
                         + "".join(rows) + "</tbody></table></details>")
        body = "".join(parts) or "<p class=muted>This strategy did nothing on any trace.</p>"
        note = ("Every event the strategy caused, per trace. The context sent at any call: "
                f"<code>compaction-bench show {html.escape(str(run_dir))} --trace T --strategy "
                f"'{html.escape(strategy)}' --call N</code> (replays that one task).")
        name = f"{slug(strategy)}.html"
        (folder / name).write_text(PAGE.format(title=html.escape(f"{strategy}: its compactions"), note=note,
                                               body=body), encoding="utf-8")
        links[strategy] = f"compactions/{name}"
    return links
