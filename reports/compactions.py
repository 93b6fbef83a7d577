"""A static page per strategy: what each of its compactions did, trace by trace (linked from the
report's strategy table): the event, tokens before and after, messages touched, the summary it wrote,
and the needles lost at that moment. From the stored run alone; for the full context sent at a call,
``compaction-bench show`` replays that one task.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable
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
    lost = _lost_mask(probes)
    out: Lost = {}
    for trace, call, needle in zip(probes.trace[lost], probes.call[lost], probes.needle[lost], strict=True):
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
    while reading): a page holds its own strategy's rows, never the run's. A JSONL export is indexed
    once (``batches.ByStrategy``; from the Parquet store each part is decoded once for all the
    strategies, ``batches.Held``) and the probes (store or probes.csv) folded once into every
    strategy's lost needles (only those are kept), rather than each read whole again for every
    strategy."""
    from reports import batches

    events = batches.ByStrategy(run_dir, "events", rows=True)
    summaries = batches.ByStrategy(run_dir, "summaries", ("trace", "strategy", "call", "text"), rows=True)
    every: list[dict[str, Lost]] = []

    def read(strategy: str) -> tuple[pd.DataFrame, pd.DataFrame | None, Lost]:
        e = batches.in_order(events(strategy))
        s = batches.in_order(summaries(strategy))
        if not every:
            every.append(_lost_by_strategy(batches.batches(run_dir, "probes", PROBE_COLUMNS)))
        return e, s if len(s) and "strategy" in s else None, every[0].get(strategy, {})
    return read


PROBE_COLUMNS = ("trace", "strategy", "moment", "call", "needle", "needle_kind", "retained")


def _lost_by_strategy(frames: Iterable[pd.DataFrame]) -> dict[str, Lost]:
    """Every strategy's lost needles from one pass over the probes: each batch split by the rule
    ``batches`` filters a CSV export with for one strategy (``strategy`` as text equal to the name;
    the store's column is text, so its filter keeps the same rows), so each strategy gets what its
    own read would have given, in the same order. A batch's ``call`` may be float where another
    strategy's row lacks one; the pages look needles up by ``(str(trace), int(call))``, so that
    does not change a page."""
    out: dict[str, Lost] = {}
    for p in frames:
        if "strategy" not in p or "moment" not in p or p.empty:
            continue
        lost = _lost_mask(p)  # ``lost_needles``' rows, taken from the batch once rather than from each strategy's slice
        for name, trace, call, needle in zip(p["strategy"].astype(str)[lost], p.trace[lost], p.call[lost],
                                             p.needle[lost], strict=True):
            out.setdefault(name, {}).setdefault((str(trace), call), []).append(str(needle))
    return out


def _lost_mask(p: pd.DataFrame) -> pd.Series:
    """The rows ``lost_needles`` lists: a needle (not a control) a probe right after a compaction found gone."""
    mask = p.moment == "compaction"
    if "needle_kind" in p:
        mask &= p.needle_kind != "control"
    if "retained" not in p:  # nothing says a needle is gone
        return pd.Series(False, p.index)
    mask &= ~p.retained.astype(str).str.lower().isin(("true", "1"))
    return mask.fillna(False).astype(bool)


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
            texts = _summary_texts(s)
            for trace, g in e.groupby("trace", sort=True):
                out.write(_trace_html(trace, g, s, lost_at, texts))
                wrote = True
            if not wrote:
                out.write("<p class=muted>This strategy did nothing on any trace.</p>")
            out.write(tail.format())
        links[strategy] = f"compactions/{name}"
    return links


def _missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and value != value)


def _summary_texts(s: pd.DataFrame | None) -> dict[tuple[object, object], object]:
    """(trace, call) → the first summary text written there, in ``s``'s order: what filtering the
    strategy's summaries on trace and call found for each event, looked up instead of filtered per
    event (that filter was most of the pages' time). Keys compare as the filter did (``==``, so
    call 3 finds 3.0); a missing trace or call matches nothing, as there."""
    if s is None or not {"trace", "call", "text"} <= set(s.columns):
        return {}
    out: dict[tuple[object, object], object] = {}
    for trace, call, text in zip(s.trace.tolist(), s.call.tolist(), s.text.tolist(), strict=True):
        if _missing(trace) or _missing(call):
            continue
        try:
            out.setdefault((trace, call), text)
        except TypeError:  # an unhashable value equals no event's trace or call
            continue
    return out


def _event_rows(g: pd.DataFrame) -> list[dict[str, object]]:
    """``g``'s rows as ``iterrows`` gives them (its ``values``, one object row each), without a Series
    per row. ``iterrows`` builds each row's Series from that object row, which stays as it is unless
    every value in it is text (then pandas would infer a string dtype and turn None into NaN): a
    column of integers rules that out; without one, ``iterrows`` itself is used."""
    columns = g.columns.tolist()
    values = g.values
    if values.dtype == object and not any(pd.api.types.is_integer_dtype(t) or pd.api.types.is_bool_dtype(t)
                                          for t in g.dtypes):
        return [{c: r[c] for c in columns} for _, r in g.iterrows()]
    return [dict(zip(columns, v, strict=True)) for v in values]


def _trace_html(trace: object, g: pd.DataFrame, s: pd.DataFrame | None, lost_at: Lost,
                texts: dict[tuple[object, object], object] | None = None) -> str:
    """One trace's events: call, kind, hook, tokens before → after, messages, detail, lost needles, summary.

    ``texts``: ``_summary_texts(s)``, when the caller has it for the strategy (once, not per trace)."""
    if texts is None:
        texts = _summary_texts(s)
    rows = []
    for r in _event_rows(g.sort_values("call")):
        call = r["call"]
        text = ""
        if s is not None and r["kind"] in ("summarize", "handoff"):
            hit = _lookup(texts, trace, call)
            text = "" if hit is _NONE else f"<pre>{html.escape(str(hit))}</pre>"
        lost = sorted(lost_at.get((str(trace), int(call)), []))
        lost_html = f'<div class=lost>needles lost here: {html.escape(", ".join(lost))}</div>' if lost else ""
        rows.append(f"<tr><td class=num>{int(call)}</td><td>{html.escape(str(r['kind']))}</td>"
                    f"<td>{html.escape(str(r.get('hook', '')))}</td>"
                    f"<td class=num>{int(r['tokens_before']):,} → {int(r['tokens_after']):,}</td>"
                    f"<td class=num>{int(r.get('messages_touched', 0) or 0):,}</td>"
                    f"<td>{html.escape(str(r.get('detail', '') or ''))}{lost_html}{text}</td></tr>")
    return (f"<details open><summary><code>{html.escape(str(trace))}</code>: {len(g)} events</summary>"
            "<table><thead><tr><th>call</th><th>event</th><th>hook</th><th>tokens before → after</th>"
            "<th>messages</th><th>detail, needles lost, summary written</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></details>")


_NONE = object()
"""No summary at that trace and call (a summary's text may itself be None)."""


def _lookup(texts: dict[tuple[object, object], object], trace: object, call: object) -> object:
    try:
        return texts.get((trace, call), _NONE)
    except TypeError:
        return _NONE
