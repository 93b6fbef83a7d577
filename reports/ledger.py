"""The cache ledger against reality: per recorded session, our cache-read / write / uncached split
beside the provider's (ledger.csv, written by the run from ``bench.scoring.ledger_check``), and one sentence
on where the two differ systematically, computed from the rows shown.

One row per session: the ``none`` replay's when the run has it (it sends exactly the recorded
prompts up to the first recorded compaction), else the first strategy's.
"""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

LEDGER_COLS = (("calls", "calls", "{:,.0f}"), ("ours_hit", "our hit", "{:.1%}"),
               ("recorded_hit", "recorded hit", "{:.1%}"), ("hit_gap", "gap", "{:+.1%}"),
               ("ours_cache_write", "our write", "{:,.0f}"), ("recorded_cache_write", "recorded write", "{:,.0f}"),
               ("ours_uncached", "our uncached", "{:,.0f}"), ("recorded_uncached", "recorded uncached", "{:,.0f}"),
               ("ours_first_read", "our 1st-call read", "{:,.0f}"),
               ("recorded_first_read", "recorded 1st-call read", "{:,.0f}"))
CLOSE = 0.02
"""A hit-share gap within this is agreement."""


def per_session(ledger: pd.DataFrame) -> pd.DataFrame:
    """One row per trace: ``none``'s if present, else the first row."""
    if ledger.empty:
        return ledger
    order = (ledger.strategy != "none").astype(int) if "strategy" in ledger else 0
    return ledger.assign(_o=order).sort_values(["trace", "_o"], kind="stable").drop_duplicates("trace").drop(
        columns="_o").reset_index(drop=True)


def finding(rows: pd.DataFrame) -> str:
    """Where ours and the recorded split differ systematically, and why, from these rows."""
    n = len(rows)
    warm = rows[(rows.recorded_first_read > 0) & (rows.ours_first_read == 0)]
    blocks = int(rows.get("blocks", pd.Series(dtype=bool)).fillna(False).astype(bool).sum())
    close = int((rows.hit_gap.abs() <= CLOSE).sum())
    parts = [f"{close} of {n} sessions agree within {CLOSE:.0%} on the share read from the cache"]
    if len(warm):
        sub = int(warm.get("subagent", pd.Series(dtype=bool)).fillna(False).astype(bool).sum())
        parts.append(f"in {len(warm)} the provider's first call already read {int(warm.recorded_first_read.sum()):,} "
                     f"tokens from the cache while ours starts empty ({sub} of them subagent or compaction "
                     "transcripts, which share the parent session's cache across transcripts; the others start on "
                     "the system prompt and tools an earlier session cached)")
    if blocks:
        parts.append(f"for the {blocks} OpenAI-family sessions our reads are rounded down to whole 128-token blocks, "
                     "as OpenAI reports cached input")
    return "; ".join(parts) + "."


def ledger_html(run_dir: Path) -> str:
    """The section's HTML, '' when the run kept no ledger (no trace with recorded usage, or --detail summary)."""
    from bench.run.store import has_table, load_table  # the CSV export when written, else the Parquet store

    if not has_table(run_dir, "ledger"):
        return ""
    rows = per_session(load_table(run_dir, "ledger"))
    if rows.empty:
        return ""
    cols = [c for c in LEDGER_COLS if c[0] in rows]
    head = "<tr><th>trace</th><th>agent</th><th>model</th>" + "".join(
        f"<th class=num>{html.escape(label)}</th>" for _, label, _ in cols) + "</tr>"
    body = []
    for _, r in rows.iterrows():
        cells = [f"<td><code>{html.escape(str(r.trace))}</code></td><td>{html.escape(str(r.get('agent', '')))}</td>"
                 f"<td>{html.escape(str(r.get('model', '')))}</td>"]
        cells += [f"<td class=num>{fmt.format(r[key]) if pd.notna(r[key]) else '—'}</td>" for key, _, fmt in cols]
        body.append("<tr>" + "".join(cells) + "</tr>")
    return ("<h3 id=ledger>Cache ledger against the recorded usage</h3>"
            "<p class=legend>Per recorded session, over the calls before its first compaction (recorded or "
            "replayed): tokens our prompt-cache ledger reads, writes and leaves uncached beside what the provider "
            "recorded (Claude Code cache_read / cache_creation, Codex cached_input_tokens). Measured, not fitted.</p>"
            f'<div class=scroll><table class="plain ledger"><thead>{head}</thead><tbody>{"".join(body)}</tbody>'
            f"</table></div><p class=legend>{html.escape(finding(rows))}</p>")
