"""The HTML report of a finished run: ``render(out/<run>)`` writes report.html and its PNGs there.

It reads only the run's files (results.csv, run.json, and the calls, events, summaries and probes
from the Parquet store under data/, column by column, or from their exports calls.csv, events.jsonl,
summaries.jsonl and probes.csv where the store does not hold them: ``reports.batches.source``) and never imports
``strategies`` or replays anything, so any run can be re-rendered later, on another machine, from
its folder alone. The scoring tables come from the pure functions of bench.scoring.stats / bench.scoring.probes /
bench.scoring.economics (``reports.scoring``). The calls, events, summaries and probes are never loaded
whole: each is folded in bounded batches into the small aggregates the page shows
(``reports.callstats``, ``eventstats``, ``summarystats``, ``probestats``), and the per-strategy
compaction pages read one strategy's rows at a time.

Adding a chart: 1. write one function in ``reports/charts.py`` (or ``score_charts.py``) that draws
one PNG from the run's tables; 2. add it to ``_charts`` below with its caption and the section it
belongs to; 3. extend the fixture test.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

import pandas as pd

from bench.decide import verdict as bv
from bench.scoring import stats
from reports import (
    callstats,
    charts,
    compactions,
    decision,
    eventstats,
    listings,
    probestats,
    score_charts,
    scoring,
    sections,
    summarystats,
    sweep_charts,
    tables,
)
from reports.callstats import CallStats
from reports.ledger import ledger_html

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
    """The tables of one run folder, as written by the runner. Only the results are loaded whole
    (one row per task); the calls, events, summaries and probes are their aggregates, read in
    bounded batches."""

    name: str
    results: pd.DataFrame
    calls: CallStats
    events: eventstats.EventStats
    summaries: summarystats.SummaryStats
    probes: probestats.ProbeStats | None
    info: dict[str, Any]
    fidelity: pd.DataFrame | None = None


def _jsonl(path: Path) -> pd.DataFrame:
    if not path.exists():
        return pd.DataFrame()
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return pd.DataFrame(lines)


def load(run_dir: Path, steps: Steps | None = None) -> RunData:
    run_dir = Path(run_dir)
    info = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    from bench.run.store import has_table, load_table  # fidelity: its export when written, else the store (small)

    def ticked(kind: str, value: Any) -> Any:
        if steps is not None:
            steps.tick("load")
        return value

    win = scoring.window(info)
    results = pd.read_csv(run_dir / "results.csv", keep_default_na=True, low_memory=False)
    return RunData(
        name=str(info.get("config", {}).get("name") or run_dir.name),
        results=results,
        calls=ticked("calls", callstats.read(run_dir, win)),
        events=ticked("events", eventstats.read(run_dir, win)),
        summaries=ticked("summaries", summarystats.read(run_dir)),
        probes=ticked("probes", probestats.read(run_dir) if has_table(run_dir, "probes") else None),
        info=info,
        fidelity=load_table(run_dir, "fidelity") if has_table(run_dir, "fidelity") else None,
    )


def _sawtooth_trace(rows: pd.DataFrame) -> str:
    """The trace whose context grew largest (ties: where strategies compacted most, then by name): a
    sawtooth shows what compaction does where it matters; "compacted most" alone picked a ten-call
    chat that Aider summarizes every turn on the real sessions."""
    g = rows.groupby("trace").agg(peak=("peak_context", "max"), compactions=("compactions", "sum"))
    g = g.reset_index().sort_values(["peak", "compactions", "trace"], ascending=[False, False, True])
    return str(g.trace.iloc[0])


def _sawtooth_strategies(rows: pd.DataFrame, trace: str) -> list[str]:
    """``none`` and the cheapest others on that trace: more lines than this become a tangle."""
    r = rows[rows.trace == trace].sort_values(["cost", "strategy"])
    others = [s for s in r.strategy if s != tables.BASELINE][: SAWTOOTH_LINES - 1]
    return ([tables.BASELINE] if (r.strategy == tables.BASELINE).any() else []) + others


@dataclass(frozen=True)
class Scores:
    """The scoring layer's tables for one run (see ``reports.scoring``)."""

    comparisons: pd.DataFrame
    resamples: int
    retention: pd.DataFrame
    cliffs: pd.DataFrame
    ages: probestats.ProbeStats | None
    sizes: pd.DataFrame
    cost: pd.DataFrame
    window: int | None
    gaps: pd.DataFrame
    """Trigger points to scatter (``strategy``, ``ratio``): all, or a sample per strategy."""
    triggers: pd.DataFrame
    """Per strategy: exact trigger counts and ratio percentiles (``reports.eventstats``)."""
    estimator: pd.DataFrame
    hidden: pd.DataFrame
    fidelity: pd.DataFrame
    sweeps: list[scoring.Sweep]


def score(run: RunData, rows: pd.DataFrame, totals: pd.DataFrame) -> Scores:
    b = scoring.resamples(run.info)
    win = scoring.window(run.info)
    has_probes = run.probes is not None and run.probes.scored
    probes = run.probes if has_probes else None
    cliffs = probestats.cliff_table(probes) if probes is not None else pd.DataFrame()
    retention = probestats.retention_overall(probes, cliffs) if probes is not None else pd.DataFrame()
    gaps = run.events.points if win else pd.DataFrame()
    return Scores(
        comparisons=scoring.comparisons(rows, resamples=b, weighting=scoring.weight(run.info)), resamples=b,
        retention=retention,
        cliffs=cliffs,
        ages=probes,
        sizes=run.summaries.sizes,
        cost=callstats.cost_truth(run.calls), window=win,
        gaps=gaps, triggers=run.events.triggers,
        estimator=callstats.estimator(run.events.triggers, run.calls, win) if win else pd.DataFrame(),
        hidden=run.calls.hidden if win else pd.DataFrame(),
        fidelity=scoring.fidelity(run.fidelity, rows),
        sweeps=scoring.sweeps(run.info, totals),
    )


def _charts(run: RunData, run_dir: Path, rows: pd.DataFrame, totals: pd.DataFrame, s: Scores,
            trace: str | None, sawtooth: list[str] | None,
            recommended: str | None = None, runner_up: str | None = None,
            steps: Steps | None = None) -> dict[str, list[tuple[str, str]]]:
    """Draw every chart; returns, per page section, (file name, caption) in page order.

    Each of the ``CHART_SLOTS`` slots ticks ``steps`` once, drawn or passed over."""
    order = totals.strategy.tolist()
    colors = charts.palette(order)
    finished = rows[rows.error == ""]
    trace = trace or _sawtooth_trace(finished)
    own, recorded = _recorded(run.fidelity, trace)
    shown = [x for x in sawtooth if x in colors] if sawtooth else _sawtooth_strategies(finished, trace)
    if own in colors and own not in shown:  # the agent's own strategy beside what it recorded
        shown.append(own)
    out: dict[str, list[tuple[Path, str]]] = {key: [] for key in ("results", "sweeps", "compare", "retention",
                                                                  "cost", "summaries", "estimator")}
    slots = [0]

    def add(section: str, chart: tuple[Path | None, str] | None) -> None:
        if chart is not None and chart[0] is not None:
            out[section].append(chart)
        slots[0] += 1
        if steps is not None:
            steps.tick("chart")

    add("results", (charts.context_over_calls(callstats.trace_calls(run.calls, trace), trace, shown, colors,
                                              run_dir / "context_over_calls.png", window=s.window,
                                              recorded=recorded, own=own),
                    f"Prompt tokens sent at each agent call of trace <code>{html.escape(trace)}</code>: each drop is a "
                    f"compaction. {len(shown)} of {len(order)} strategies shown"
                    + ("." if sawtooth else ": <code>none</code> and the cheapest on this trace"
                       + (f", and <code>{html.escape(own)}</code>, the re-implementation of the agent that recorded "
                          "it" if own in shown else "") + ".")
                    + (f" The red bands mark the {len(recorded)} compaction{'s' * (len(recorded) != 1)} the agent "
                       "itself recorded (at the call where it took effect): where the agent's own line drops "
                       "beside one, the replay reproduced it." if recorded else "")))
    add("results", (charts.cost_vs_saving(totals, colors, run_dir / "cost_vs_saving.png"),
                    "Input-token saving against dollar change, both relative to <code>none</code>. Points in the red "
                    "quadrant bill fewer tokens yet cost more: rewriting old messages broke the prompt cache."))
    n_traces = max(1, rows.trace.nunique())
    if s.sweeps:
        add("sweeps", _sweep_chart(totals, s, colors, run_dir / "sweep_cost_retention.png"))
        add("sweeps", (sweep_charts.line_sweeps(s.sweeps, recommended, n_traces, run_dir / "sweep_by_parameter.png"),
                       "Each one-parameter sweep as cost per trace and needle retention against "
                       "the value swept, one column per family. The ring marks the setting the "
                       "verdict chose (in other families, the cheapest that never overflowed); a "
                       "red cross is a setting that overflowed the window."))
        add("sweeps", (sweep_charts.heat_sweeps(s.sweeps, n_traces, run_dir / "sweep_heat.png"),
                       "A two-parameter sweep: cost per trace in each cell (green cheaper), with its needle "
                       "retention."))
    else:
        add("results", (score_charts.cost_vs_retention(totals, [], colors, run_dir / "cost_vs_retention.png"),
                        "Cost over all traces against needle retention (the mean over traces of the stated needles "
                        "still verbatim at the end), one point per strategy. The green staircase is the Pareto front: "
                        "the strategies nothing beats on both, cheaper and retaining at least as much; the choice is "
                        "among them.") if _retained(totals) else None)  # without a sweep: what to pick from
        add("results", None)
        add("results", None)
    reference = recommended if recommended in set(finished.strategy) else tables.BASELINE
    compared = s.comparisons if reference == tables.BASELINE else scoring.comparisons(
        rows, resamples=s.resamples, weighting=scoring.weight(run.info), baseline=reference)
    add("compare", (score_charts.paired_ci(compared, order, run_dir / "paired_ci.png", reference=reference,
                                           runner_up=runner_up),
                    (f"Each strategy against the verdict's choice <code>{html.escape(reference)}</code>, paired "
                     "trace by trace: the mean difference and its 95% bootstrap interval. A grey interval holds 0: "
                     "on these traces that strategy is not distinguishable from the choice, so it is an equal "
                     "alternative; green is better than the choice, red worse."
                     + (f" The runner-up, <code>{html.escape(runner_up)}</code>, is drawn first and in bold."
                        if runner_up else "")
                     if reference != tables.BASELINE else
                     "Each strategy's mean difference from <code>none</code> over the paired traces, with its 95% "
                     "bootstrap interval (the verdict chose no strategy to compare with)."))
        if len(compared) and (compared.n >= 2).any() else None)
    if run.probes is not None:
        add("retention", (score_charts.retention_classes(s.retention, order, run_dir / "retention_classes.png"),
                          "Share of stated needles in each class when the trace ended (n = needle probes)."))
        add("retention", (charts.retention_by_age_grid(probestats.age_grid(run.probes, order),
                                                       run_dir / "retention_by_age.png"),
                          "Share of stated needles (planted, or derived from a real trace) still present "
                          "verbatim when the trace ended, by needle age; “+x% ref” is the further share "
                          "recoverable through a file path or command still in context."))
        add("retention", (score_charts.retention_by_round(s.cliffs, colors, run_dir / "retention_by_round.png"),
                          "Needles retained verbatim right after each compaction round; a strategy's cliff is its "
                          "first round under 50%. Where strategies compact very different numbers of times, each "
                          "agent has its own panel and x-axis (its own number of rounds): compare the shapes and "
                          "the cliffs, not the x positions.")
            if len(s.cliffs) and (s.cliffs.rounds > 1).any() else None)  # one round is a dot: the table says it
    else:
        add("retention", None)
        add("retention", None)
        add("retention", None)
    add("cost", (charts.cost_with_without_cache(totals, colors, run_dir / "cost_cache.png"),
                 "Dollars with the prompt cache (the bars) and what the prompt cache saved each strategy: its "
                 "cost had every prompt token been billed at the plain input rate is the figure in the label, "
                 "not a bar, so the strategies of interest are not slivers beside <code>none</code>'s. A "
                 "strategy whose saving is well below the others' rewrites its prefix (see the hit rate below)."))
    add("cost", (charts.cache_hit_rate(totals, colors, run_dir / "cache_hit_rate.png"),
                 "Share of prompt tokens read from the cache; a prefix break is an agent call that re-used less of "
                 "the cached prefix than the previous request had written."))
    add("summaries", (charts.summary_sizes(run.summaries.points, order, colors, run_dir / "summary_sizes.png",
                                           exact=s.sizes),
                      "Length of each summary written (output tokens), per strategy that summarizes.")
        if len(s.sizes) else None)  # with no summary the table's note says it; an empty chart adds nothing
    add("estimator", (score_charts.estimate_ratio(s.gaps, order, colors, run_dir / "estimate_ratio.png",
                                                  exact=s.triggers), ESTIMATE_CAPTION) if len(s.gaps) else None)
    return {k: [(path.name, caption) for path, caption in v] for k, v in out.items()}


ESTIMATE_CAPTION = (
    "Why a threshold may not fire where it says. Each strategy decides when to compact from its own token "
    "count (most agents estimate, e.g. characters ÷ 4, rather than ask the provider); the ratio is that estimate "
    "over the run's token count of the same context, at each point the strategy acted. A threshold is set in the "
    "strategy's own units, so at a ratio of 0.5 a trigger at 80% of the window fires only when the real context "
    "is at 160% of it: the strategy overflows, or needs a threshold about half as high. Near 1: it fires where "
    "its setting says. Read this before tuning or shipping a threshold.")


def _recorded(fidelity: pd.DataFrame | None, trace: str) -> tuple[str | None, list[tuple[int, str]]]:
    """The strategy that re-implements the agent that recorded ``trace``, and the calls (with their
    trigger) at which that agent's own compactions took effect, from the run's fidelity rows."""
    if fidelity is None or not len(fidelity) or not {"trace", "strategy", "recorded_call"} <= set(fidelity.columns):
        return None, []
    f = fidelity[fidelity.trace.astype(str) == str(trace)]
    if f.empty:
        return None, []
    triggers = f.trigger.astype(str) if "trigger" in f else pd.Series("?", index=f.index)
    recorded = [(int(call), trigger) for call, trigger in zip(f.recorded_call, triggers, strict=True)
                if pd.notna(call)]
    return str(f.strategy.iloc[0]), sorted(recorded)


CHART_SLOTS = 13
"""The chart slots of ``_charts`` (each drawn or, when the run has nothing for it, passed over): with
the load, scoring and page steps and one compaction page per strategy, the report bar's total."""
LOAD_STEPS = ("calls", "events", "summaries", "probes", "verdict", "scores", "tables", "page")


class Steps:
    """The report phase's progress: a bar whose total is known when it opens (the tables read, the
    chart slots and one compaction page per strategy; the ~40 s of ``make bench``'s report had no
    bar) and the seconds each kind of step took, which ``compaction-bench plan`` scales from its
    sample run (charts cost the same whatever the run's size; loading and pages grow with it)."""

    def __init__(self, strategies: int, *, progress: bool = False) -> None:
        import time

        from tqdm import tqdm

        self._clock = time.perf_counter
        self._last = self._clock()
        self.seconds: dict[str, float] = {}
        self.n = 0
        self.ticks: list[tuple[str, float]] = []
        self.total = len(LOAD_STEPS) + CHART_SLOTS + strategies
        self.bar = tqdm(total=self.total, desc="report", unit="step", disable=not progress)

    def tick(self, kind: str, n: int = 1) -> None:
        now = self._clock()
        self.seconds[kind] = self.seconds.get(kind, 0.0) + now - self._last
        self.ticks.append((kind, now - self._last))
        self._last = now
        self.n += n
        self.bar.update(n)

    def close(self) -> None:
        self.bar.close()


def _ticking(records: compactions.Records, steps: Steps) -> compactions.Records:
    """``records`` that tick one step as each strategy's page is finished (when the next is asked for)."""
    first = [True]

    def read(strategy: str):
        if not first[0]:
            steps.tick("page")
        first[0] = False
        return records(strategy)
    return read


def _tokenizer_note(info: dict[str, Any]) -> str:
    """Why absolute figures run low: the truth tokenizer against the provider's (pricing.md §2), and
    what the run's own recorded sessions measured (``bench.scoring.fidelity.usage_ratio``)."""
    model = str(info.get("config", {}).get("model", ""))
    note = ""
    if "claude" in model and str(info.get("tokenizer", "")).startswith("cl100k"):
        note = (" Tokens are counted with tiktoken's cl100k_base: Claude's own tokenizer is not public and "
                "counts some 15–20% more on typical text (more on code), so absolute token and dollar figures "
                f"for {model} run low by about that much; the comparison between strategies is not affected.")
    by_model: dict[str, list[float]] = {}
    for t in info.get("traces", []):
        if t.get("usage_ratio"):
            by_model.setdefault(str(t.get("model") or t.get("agent") or "?"), []).append(float(t["usage_ratio"]))
    if by_model:
        measured = "; ".join(
            f"{m} {min(r):.2f}" + (f"–{max(r):.2f}" if len(r) > 1 else "") + f" ({len(r)} session{'s' * (len(r) > 1)})"
            for m, r in sorted(by_model.items()))
        note += (" Measured on this run's recorded sessions (their provider's prompt growth between calls over "
                 f"ours for the same messages, framing included): {measured}.")
    return note


def _retained(totals: pd.DataFrame) -> bool:
    return "retention" in totals and bool(totals.retention.notna().any())


def _front_line(totals: pd.DataFrame) -> list[str]:
    """The headline's Pareto front on cost and retention (cheapest first), over the feasible set:
    a strategy that overflowed the window is never on it, and the line says which were left out."""
    if not _retained(totals):
        return []
    ok = bv.feasible_mask(totals)
    feasible = totals[ok]
    front = feasible[scoring.pareto_front(feasible, "cost", "retention")].sort_values("cost")
    left_out = totals[~ok]
    excluded = (" Left out as infeasible (overflowed the window): "
                + ", ".join(f"<b>{html.escape(r.strategy)}</b>" for _, r in left_out.iterrows()) + "."
                if len(left_out) else "")
    return ["Pareto front on cost and needle retention (nothing is both cheaper and retains more), "
            "over the strategies that never overflowed: "
            + ", ".join(f"<b>{html.escape(r.strategy)}</b> ({tables.usd(r.cost)}, {r.retention:.0%})"
                        for _, r in front.iterrows()) + "." + excluded]


def _sweep_chart(totals: pd.DataFrame, s: Scores, colors: dict[str, str], path: Path) -> tuple[Path, str]:
    """Cost against retention, or against the token saving when the run has no probes."""
    probed = _retained(totals)
    y = "retention" if probed else "saving_vs_none"
    caption = ("Cost over all traces against " + ("needle retention (stated needles still verbatim when the "
               "traces ended)" if probed else "the input-token saving vs <code>none</code>: this run has no "
               "needle probes, so the saving stands in for retention") + ", one point per strategy. A sweep's "
               "settings are joined in parameter order and labelled with their values; the green staircase is "
               "the Pareto front: no other strategy is at most as dear and "
               + ("retains" if probed else "saves") + " at least as much.")
    return score_charts.cost_vs_retention(totals, s.sweeps, colors, path, y=y), caption


def _embed(page: str, run_dir: Path) -> str:
    """Every ``<img src="x.png">`` of the run folder inlined as a data URI: one file to mail."""
    import base64
    import re

    def inline(m: re.Match[str]) -> str:
        path = run_dir / m.group(1)
        if not path.is_file():
            return m.group(0)
        return f'src="data:image/png;base64,{base64.b64encode(path.read_bytes()).decode("ascii")}"'

    return re.sub(r'src="([^"/:]+\.png)"', inline, page)


def _figures(figures: list[tuple[str, str]]) -> str:
    return "".join(
        f'<figure><img src="{name}" alt="{html.escape(name)}" width="{charts.SIZE_PIXELS[0]}" '
        f'height="{charts.SIZE_PIXELS[1]}" loading="eager"><figcaption>{caption}</figcaption></figure>'
        for name, caption in figures)


def _retention(s: Scores, order: list[str], has_probes: bool) -> str:
    if not has_probes:
        return "<p class=muted>No needle probes in this run (probes.csv absent): retention is not charted.</p>"
    out = sections.retention_html(s.retention, order) + sections.rounds_html(s.cliffs, order)
    for col, title in (("needle_kind", "Retention by needle kind"),
                       ("age_tokens_bucket", "Retention by needle age (tokens since it was stated)"),
                       ("age_calls_bucket", "Retention by needle age (agent calls since it was stated)")):
        if s.ages is not None and s.ages.has(col):
            out += sections.heat(probestats.retention_by(s.ages, col), col, order, title)
    return out


def render(run_dir: Path, *, trace: str | None = None, sawtooth: list[str] | None = None,
           objective: str | None = None, self_contained: bool = False, progress: bool | Steps = False) -> Path:
    """Write report.html, its PNG charts and verdict.json into ``run_dir``; returns the HTML's path.

    ``trace`` picks the trace of the context-over-calls chart (default: where compaction was busiest)
    and ``sawtooth`` its strategies (default: ``none`` and the five cheapest on that trace).
    ``objective`` is ``bench.decide.verdict``'s (default: the cheapest that never overflows with retention
    not significantly below the best of those); ``self_contained`` embeds the PNGs in the page (one file to mail).
    ``progress``: a bar on stderr (or a ``Steps`` to tick, whose seconds per kind of step the planner reads).
    """
    run_dir = Path(run_dir)
    steps = progress if isinstance(progress, Steps) else Steps(_strategy_count(run_dir), progress=bool(progress))
    try:
        return _render(run_dir, steps, trace=trace, sawtooth=sawtooth, objective=objective,
                       self_contained=self_contained)
    finally:
        steps.close()


def _strategy_count(run_dir: Path) -> int:
    """The run's strategies (one compaction page each), from run.json, without loading any table."""
    try:
        return len(json.loads((run_dir / "run.json").read_text(encoding="utf-8")).get("strategies") or [])
    except (OSError, ValueError):
        return 0


def _render(run_dir: Path, steps: Steps, *, trace: str | None, sawtooth: list[str] | None, objective: str | None,
            self_contained: bool) -> Path:
    run = load(run_dir, steps)
    rows = tables.trace_rows(run.results, run.calls)
    totals = scoring.weighted_totals(tables.strategy_totals(rows, run.calls), rows, scoring.weight(run.info))
    order = totals.strategy.tolist()
    verdict = bv.decide(rows, objective, resamples=scoring.resamples(run.info), weight=scoring.weight(run.info),
                        summarizer=(run.info.get("config") or {}).get("summarizer"))
    verdict = decision.with_robustness(run_dir, rows, verdict, run.info, objective)
    decision.write(run_dir, verdict)
    steps.tick("tables")
    s = score(run, rows, totals)
    steps.tick("tables")
    figures = _charts(run, run_dir, rows, totals, s, trace, sawtooth, verdict.recommended, verdict.runner_up, steps)
    per_trace = "".join(
        f"<details><summary><code>{html.escape(str(t))}</code> — {len(r)} strategies</summary>"
        + tables.table_html(r.sort_values("cost"), css_class="results compact") + "</details>"
        for t, r in rows.groupby("trace", sort=True))
    headline = [*tables.headline(totals, int((rows.error != "").sum())), *_front_line(totals),
                *tables.detector_lines(rows), *sections.sweep_lines(s.sweeps)]
    significance = sections.significance_line(s.comparisons) if len(s.comparisons) else None
    pairs = decision.pair_table(rows, order, "cost", stats.DEFAULT_B, scoring.weight(run.info))
    steps.tick("tables")
    links = compactions.write(run_dir, order, _ticking(compactions.from_run(run_dir), steps))
    steps.tick("page", max(0, steps.total - 1 - steps.n))  # the last page: all but the page's own step done
    context = {
        "title": html.escape(f"compaction-bench — {run.name}"),
        "run_name": html.escape(run.name),
        "verdict": decision.verdict_html(verdict),
        "subtitle": html.escape(f"{rows.trace.nunique()} traces × {len(totals)} strategies, "
                                f"{run.calls.agent_calls:,} agent calls replayed"),
        "headline": "".join(f"<li>{line}</li>" for line in [*headline, *([significance] if significance else [])]),
        "limitation": html.escape(LIMITATION + _tokenizer_note(run.info)),
        "summary_table": tables.table_html(totals, keys=tables.SUMMARY_COLUMNS, links=links),
        "results_charts": _figures(figures["results"]),
        "sweeps": sections.sweeps_html(s.sweeps, _figures(figures["sweeps"])
                                       + decision.neighbours_html(rows, stats.DEFAULT_B, scoring.weight(run.info))),
        "comparisons": sections.comparisons_html(s.comparisons, order, s.resamples) + _figures(figures["compare"])
        + pairs,
        "retention": _retention(s, order, run.probes is not None) + _figures(figures["retention"])
        + sections.behaviour_html(probestats.behaviour(run_dir, run.info, s.resamples), order),
        "cost_truth": sections.cost_html(s.cost, order) + _figures(figures["cost"]),
        "summary_sizes": sections.summary_sizes_html(s.sizes, order, stats.SUMMARY_RESERVE)
        + _figures(figures["summaries"]),
        "estimator": sections.estimator_html(s.estimator, s.hidden, order, s.window) + _figures(figures["estimator"]),
        "fidelity": sections.fidelity_html(s.fidelity) + ledger_html(run_dir),
        "events_table": listings.events_html(run.events.kinds, order),
        "per_trace": per_trace,
        "failures": listings.failures_html(rows),
        "glossary": tables.glossary_html(),
        "provenance": listings.provenance_html(run.info, run.name),
    }
    page = Template(TEMPLATE.read_text(encoding="utf-8")).substitute(context)
    if self_contained:
        page = _embed(page, run_dir)
    out = run_dir / "report.html"
    tmp = out.with_name(".report.html.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out)
    steps.tick("html")
    return out
