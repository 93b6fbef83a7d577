"""Does the verdict hold up under change? (issue 25, "The verdict holds up under change"; stage: decide)

A verdict chosen on one window, one cache lifetime, one price sheet, one weighting and one mix of
scenarios can flip when any of them moves, and a user shipping it should see whether it does. Each
change is measured the cheapest honest way:

* **Prices ±20%** need no replay: a call's dollars are linear in its token columns (uncached,
  cache read, cache write, output), and no strategy decides on dollars, so the tokens of a replay do
  not change with the price sheet. The per-call rates are recovered from the stored calls (a least-
  squares fit per trace and call kind, accepted only when it reproduces every stored dollar), each
  component is scaled, and the verdict is decided again. Three components, each moved on its own:
  ``input`` (every prompt-side rate: plain input, cache reads and cache writes together, as providers
  set cache prices as multiples of the input price), ``output``, and ``cache`` (cache read and write
  rates only); plus input and output in opposite directions. All prices ×1.2 together scales every
  cost alike and cannot change the ranking, so it is not shown.
* **Weighting** needs no replay: the verdict is decided again under each other ``--weight``.
* **Scenario / agent**: the verdict is decided again on each scenario's traces alone (synthetic
  runs) or each agent's (real sessions); the breakdown also gives, per group, the paired difference
  between the choice and the runner-up, so an interval that comes from one generator's seeds shows
  as such.
* **Window (200K → 1M) and cache TTL (5 min ↔ 1 h)** change what the strategies do and what the
  cache bills, so they are replayed, but only for the top candidates (``top_candidates``: the
  choice, the next two that qualify, the retention reference, the cheapest strategy the objective
  excluded, and ``none``), into ``<run>/robustness/<setting>/``; the verdict is decided again among them.
  The 1M window is the model's long-context profile, with its long-context prices above its tier.

Where the run's sessions recorded their own compaction summaries, the same replay machinery runs
the summarizing candidates through the other summarizer (``--summarizer recorded`` beside the
extractive stand-in) and ``gap`` gives retention through each, per strategy, on the traces where a
recorded summary was really used.
"""

from __future__ import annotations

import hashlib
import json
import math
import textwrap
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.decide import verdict as bv

STEP = 0.2
"""The price move tried, each way."""
PRICE_COMPONENTS: dict[str, tuple[str, ...]] = {
    "input": ("uncached", "cache_read", "cache_write"),
    "output": ("output_tokens",),
    "cache": ("cache_read", "cache_write"),
}
"""What each price change scales: ``input`` is every prompt-side rate (cache prices are set as
multiples of the input price), ``cache`` the cache rates alone."""
TOKEN_COLUMNS = ("uncached", "cache_read", "cache_write", "output_tokens")
REPLAY_DIR = "robustness"
CACHE_FILE = "robustness.json"
WINDOW_LONG = 1_000_000
VERSION = 2
"""Of what this module measures: a cached measure of another version is measured again."""
SMALL_REPLAY = 24
"""Replays of at most this many tasks run in this process (a pool's start costs more than they do)."""
OPEN_LOOP_METRICS = frozenset({"cost_open_loop", "input_tokens_open_loop"})
"""The columns only the open-loop twin of a task with re-reads gives (bench.run.runner._open_loop)."""


@dataclass(frozen=True)
class Change:
    """The verdict under one change: who wins, and whether that is the verdict's choice."""

    kind: str
    """``price``, ``weight``, ``window``, ``cache_ttl`` or ``summarizer``."""
    setting: str
    winner: str | None
    same: bool
    method: str
    note: str = ""


@dataclass(frozen=True)
class Robustness:
    choice: str | None
    changes: tuple[Change, ...] = ()
    groups: tuple[dict[str, Any], ...] = ()
    """Per scenario (or agent): traces, the winner there, the choice's and the runner-up's goal value,
    and their paired difference with its 95% interval."""
    group_by: str = "scenario"
    gap: tuple[dict[str, Any], ...] = ()
    """Per strategy with both: retention through the extractive stand-in and through the recorded summaries."""
    notes: tuple[str, ...] = ()

    @property
    def holds(self) -> bool:
        return all(c.same for c in self.changes)

    def to_dict(self) -> dict[str, Any]:
        flips = [f"{c.kind} {c.setting}" for c in self.changes if not c.same]
        group_flips = [g["group"] for g in self.groups if not g.get("same", g.get("winner") == self.choice)]
        return {"choice": self.choice, "holds": self.holds and not group_flips, "flips": flips,
                "group_flips": group_flips, "changes": [asdict(c) for c in self.changes],
                "group_by": self.group_by, "groups": [_clean(g) for g in self.groups],
                "summarizer_gap": [_clean(g) for g in self.gap], "notes": list(self.notes)}

    def lines(self) -> list[str]:
        """A few console lines: one per kind of change, the replayed candidates, the per-group winners, the gap."""
        if self.choice is None:
            return []
        out = []
        for kind in dict.fromkeys(c.kind for c in self.changes):
            cs = [c for c in self.changes if c.kind == kind]
            flips = [c for c in cs if not c.same]
            how = "replayed" if cs[0].method.startswith("replayed") else "recomputed"
            head = f"  {KIND_WORDS.get(kind, kind)} ({_settings(kind, cs)}), {how}: "
            ties = [c for c in cs if c.same and c.note.startswith("ties with")]
            out.append(head + ("holds" if not flips else "changes: " + "; ".join(
                f"{c.setting} → {c.winner or 'nothing qualifies'}" for c in flips))
                + "".join(f" ({c.setting}: {c.note.split(';')[0]})" for c in ties))
        replayed = next((c.method for c in self.changes if c.method.startswith("replayed")), "")
        if replayed:
            out.append(f"  ({replayed})")
        if self.groups:
            out += textwrap.wrap(f"by {self.group_by}, decided alone: " + "; ".join(
                f"{g['group']} ({g['traces']}) → {g.get('winner') or 'nothing qualifies'}"
                + (f" (the choice {g['tie']})" if g.get("tie") else "") for g in self.groups),
                118, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)
        for g in self.gap:
            out.append(f"  summarizer gap, {g['strategy']} on {g['traces']} trace{'s' * (g['traces'] != 1)}: retention "
                       f"{_pct(g['retention_extractive'])} through the extractive stand-in, "
                       f"{_pct(g['retention_recorded'])} through the recorded summaries")
        out.extend(f"  note: {n}" for n in self.notes)
        return out

    def headline(self) -> str:
        """``the choice holds`` or ``the choice changes under N of M changes``, with the groups."""
        flips = sum(not c.same for c in self.changes)
        groups = sum(not g.get("same", g.get("winner") == self.choice) for g in self.groups)
        text = "the choice holds under every change" if not flips else \
            f"the choice changes under {flips} of {len(self.changes)} changes"
        if self.groups:
            text += (f"; it wins in {len(self.groups) - groups} of {len(self.groups)} {self.group_by}s alone")
        return text


KIND_WORDS = {"price": "prices", "weight": "weighting", "window": "window", "cache_ttl": "cache TTL"}


def _settings(kind: str, cs: Sequence[Change]) -> str:
    if kind == "price":
        return f"input, output, cache ±{STEP:.0%} each; input and output opposed"
    return ", ".join(c.setting for c in cs)


def _pct(v: Any) -> str:
    return "—" if v is None or not np.isfinite(v) else f"{v:.1%}"


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def _outcome(w: bv.Verdict, choice: str | None) -> tuple[bool, str]:
    """(the choice still stands, a note): it stands when it wins, or when it qualifies and ties the winner
    on the goal (the verdict breaks ties by cost, then by name, which is no reason to call it a change)."""
    if w.recommended == choice:
        return True, ""
    mine = next((c for c in w.candidates if c.strategy == choice), None)
    won = next((c for c in w.candidates if c.strategy == w.recommended), None)
    if mine is not None and won is not None and mine.feasible and \
            math.isclose(mine.goal_value, won.goal_value, rel_tol=1e-9, abs_tol=1e-12):
        return True, f"ties with {w.recommended}"
    return False, ""


# --- prices: recomputed from the stored per-call tokens --------------------------------------------------

def price_components(calls: pd.DataFrame | Iterable[pd.DataFrame]) -> tuple[pd.DataFrame, list[str]]:
    """Per (trace, strategy) the dollars of each token column (``usd_uncached``, ...), and the traces
    whose stored dollars the fitted rates do not reproduce (left out of the price changes).

    The rates are fitted per trace over every call of every strategy (all of them run as the trace's
    model), by least squares, else per trace and call kind (a ``--summarizer-model``); a fit is accepted
    only when it reproduces the stored dollars (residual within a millionth of the trace's total) and
    every token column used can be told apart. A session that switched model, or crossed a
    long-context price tier, fails the check and is named (the rates are not in the calls table, so
    they are recovered rather than looked up again). ``calls`` may come in batches (``call_batches``):
    only sums are kept, per (trace, kind) and per (trace, strategy, kind).
    """
    cols = ["trace", "strategy", *(f"usd_{c}" for c in TOKEN_COLUMNS)]
    need = {"trace", "strategy", "kind", "cost", *TOKEN_COLUMNS}
    fits, sums = [], []
    for batch in ([calls] if isinstance(calls, pd.DataFrame) else calls):
        if batch.empty or not need <= set(batch.columns):
            continue
        x = batch[list(TOKEN_COLUMNS)].apply(pd.to_numeric, errors="coerce").fillna(0.0).to_numpy(float)
        y = pd.to_numeric(batch.cost, errors="coerce").fillna(0.0).to_numpy(float)
        stats = {f"xx{i}{j}": x[:, i] * x[:, j] for i in range(4) for j in range(4)}
        stats.update({f"xy{i}": x[:, i] * y for i in range(4)})
        stats.update({"yy": y * y, "ay": np.abs(y)})
        keys = {"trace": batch.trace.astype(str).to_numpy(), "kind": batch.kind.astype(str).to_numpy()}
        fits.append(pd.DataFrame({**keys, **stats}).groupby(["trace", "kind"], sort=False).sum())
        sums.append(pd.DataFrame({**keys, "strategy": batch.strategy.astype(str).to_numpy(),
                                  **{c: x[:, i] for i, c in enumerate(TOKEN_COLUMNS)}})
                    .groupby(["trace", "strategy", "kind"], sort=False).sum())
    if not fits:
        return pd.DataFrame(columns=cols), []
    fit = pd.concat(fits).groupby(level=[0, 1], sort=False).sum()
    tokens = pd.concat(sums).groupby(level=[0, 1, 2], sort=False).sum()
    rates: dict[tuple[str, str], np.ndarray] = {}
    bad = []
    for trace, g in fit.groupby(level=0, sort=False):
        joint = _solve(g.sum())  # one set of rates for the whole trace
        if joint is not None:
            rates.update({(trace, kind): joint for kind in g.index.get_level_values(1)})
            continue
        per_kind = {kind: _solve(row) for (_, kind), row in g.iterrows()}
        if len(per_kind) > 1 and all(r is not None for r in per_kind.values()):
            rates.update({(trace, kind): r for kind, r in per_kind.items()})
        else:
            bad.append(str(trace))
    tokens = tokens[[(t, k) in rates for t, _, k in tokens.index]]
    if tokens.empty:
        return pd.DataFrame(columns=cols), sorted(bad)
    r = np.vstack([rates[(t, k)] for t, _, k in tokens.index])
    usd = pd.DataFrame(tokens.to_numpy(float) * r, columns=cols[2:], index=tokens.index)
    usd = usd.groupby(level=[0, 1], sort=False).sum().reset_index()
    return usd[cols], sorted(bad)


def _solve(row: pd.Series) -> np.ndarray | None:
    """The rates (USD per token, one per token column) that reproduce a group's dollars, from its sums;
    None when none does or a used column cannot be told apart from the others."""
    xx = np.array([[row[f"xx{i}{j}"] for j in range(4)] for i in range(4)], float)
    xy = np.array([row[f"xy{i}"] for i in range(4)], float)
    used = np.flatnonzero(np.diag(xx) > 0)
    rates = np.zeros(4)
    if len(used):
        d = 1.0 / np.sqrt(np.diag(xx)[used])  # unit columns, so the rank test sees shape, not size
        c = xx[np.ix_(used, used)] * np.outer(d, d)
        if np.linalg.matrix_rank(c, tol=1e-9) < len(used):
            return None
        rates[used] = d * np.linalg.solve(c, xy[used] * d)
    rss = row["yy"] - 2 * rates @ xy + rates @ xx @ rates
    return rates if math.sqrt(max(rss, 0.0)) <= 1e-6 * max(row["ay"], 1e-9) else None


def call_batches(run_dir: Path, rows: int = 262_144) -> Iterator[pd.DataFrame]:
    """The run's calls, a stored part (or a CSV chunk) at a time, only the columns the price fit
    needs: a large run's calls are never held at once."""
    from bench.run import store

    columns = ["trace", "strategy", "kind", "cost", *TOKEN_COLUMNS]
    parts = store._parts(Path(run_dir) / "data", "calls")
    if parts:
        for part in parts:
            yield store.read_parts([part], columns).to_pandas()
            store.release()  # what Arrow's allocator keeps of the batch goes back: flat over thousands of parts
        return
    export = Path(run_dir) / store.EXPORTS["calls"]
    if export.is_file():
        yield from pd.read_csv(export, usecols=lambda c: c in columns, chunksize=rows)


def price_variants() -> list[tuple[str, dict[str, float]]]:
    """(label, factor per token column) for every price change tried."""
    out = []
    for comp, columns in PRICE_COMPONENTS.items():
        for sign in (+1, -1):
            out.append((f"{comp} {'+' if sign > 0 else '−'}{STEP:.0%}", dict.fromkeys(columns, 1 + sign * STEP)))
    out.append((f"input +{STEP:.0%} & output −{STEP:.0%}", {**dict.fromkeys(PRICE_COMPONENTS["input"], 1 + STEP),
                                                          "output_tokens": 1 - STEP}))
    out.append((f"input −{STEP:.0%} & output +{STEP:.0%}", {**dict.fromkeys(PRICE_COMPONENTS["input"], 1 - STEP),
                                                          "output_tokens": 1 + STEP}))
    return out


def repriced(results: pd.DataFrame, usd: pd.DataFrame, factors: dict[str, float]) -> pd.DataFrame:
    """``results`` with ``cost`` moved by the price change (rows of traces without components unchanged)."""
    delta = sum((f - 1.0) * usd[f"usd_{c}"] for c, f in factors.items())
    key = pd.MultiIndex.from_frame(usd[["trace", "strategy"]])
    shift = pd.Series(np.asarray(delta, float), index=key)
    at = pd.MultiIndex.from_frame(results[["trace", "strategy"]])
    out = results.copy()
    out["cost"] = pd.to_numeric(out.cost, errors="coerce") + shift.reindex(at).fillna(0.0).to_numpy()
    return out


# --- groups --------------------------------------------------------------------------------------------

def trace_groups(results: pd.DataFrame, info: dict[str, Any] | None) -> tuple[str, pd.Series]:
    """("scenario" or "agent", trace → group): a synthetic trace's scenario (``synthetic/<scenario>/seedN``),
    a real session's agent (run.json's traces); ``agent`` as soon as one trace is not synthetic."""
    traces = pd.unique(results.trace)
    agents = {t.get("id"): t.get("agent") for t in (info or {}).get("traces", []) if isinstance(t, dict)}
    synthetic = all(str(t).startswith("synthetic/") for t in traces)
    if synthetic:
        return "scenario", pd.Series({t: str(t).split("/")[1] for t in traces}, dtype=object)
    return "agent", pd.Series({t: agents.get(t) or "unknown agent" for t in traces}, dtype=object)


def by_group(results: pd.DataFrame, v: bv.Verdict, *, info: dict[str, Any] | None, objective: str | None,
             weight: str | None, summarizer: str | None, resamples: int) -> tuple[str, list[dict[str, Any]]]:
    """The verdict decided on each group's traces alone, and the choice vs runner-up paired within it."""
    kind, groups = trace_groups(results, info)
    if groups.nunique() < 2:  # one group is the pooled verdict again
        return kind, []
    goal = bv.parse_objective(objective).goal
    rows = []
    for name, traces in groups.groupby(groups, sort=True):
        sub = results[results.trace.isin(traces.index)]
        w = bv.decide(sub, objective, resamples=resamples, weight=weight, summarizer=summarizer)
        same, tie = _outcome(w, v.recommended)
        row: dict[str, Any] = {"group": str(name), "traces": int(len(traces)), "winner": w.recommended,
                               "same": same, "tie": tie, "metric": goal}
        if v.recommended and v.runner_up:
            p = bv.paired(sub, v.recommended, v.runner_up, goal, resamples=resamples, weight=weight)
            row.update({"runner_up": v.runner_up, "n": p.n, "mean_diff": float(p.mean_diff),
                        "ci_low": float(p.ci_low), "ci_high": float(p.ci_high), "significant": bool(p.significant),
                        "text": bv.describe_pair(p, goal, v.runner_up, v.recommended)})
        rows.append(row)
    return kind, rows


# --- replays of the top candidates -------------------------------------------------------------------------

def top_candidates(v: bv.Verdict, k: int = 3) -> list[str]:
    """What a replayed change re-runs: the choice and the next ``k - 1`` that qualify (by the goal),
    the retention reference (the best retention without overflow or error, which ``retention>=best``
    measures from) and the best strategy on the goal that the objective excluded (a changed setting
    may admit it), and ``none`` (a larger window may stop it overflowing: then it is the retention
    reference)."""
    if v.recommended is None:
        return []
    feasible = [c for c in v.candidates if c.feasible]
    sign = -1.0 if v.goal.startswith("max-") else 1.0
    feasible.sort(key=lambda c: (sign * c.goal_value, c.strategy))
    out = [c.strategy for c in feasible[:k]]
    clean = [c for c in v.candidates if c.values.get("overflows", 0) == 0
             and not any(r.startswith(("harness error", "no finished")) for r in c.reasons)
             and np.isfinite(c.values.get("retention", math.nan))]
    if clean:
        out.append(max(clean, key=lambda c: (c.values["retention"], -c.values.get("cost", 0.0))).strategy)
    excluded = sorted((c for c in v.candidates if not c.feasible and np.isfinite(c.goal_value)),
                      key=lambda c: (sign * c.goal_value, c.strategy))
    if excluded:
        out.append(excluded[0].strategy)
    if any(c.strategy == bv.BASELINE for c in v.candidates):
        out.append(bv.BASELINE)  # a larger window may stop it overflowing, and make it the retention reference
    return list(dict.fromkeys(out))


def _run_config(info: dict[str, Any], **changes: Any) -> Any:
    from bench.run.runner import RunConfig

    known = {f.name for f in fields(RunConfig)}
    cfg = {k: (tuple(v) if isinstance(v, list) else v) for k, v in (info.get("config") or {}).items() if k in known}
    return RunConfig(**{**cfg, **changes})


def _models(info: dict[str, Any]) -> list[str]:
    from bench.cost.pricing import DEFAULT_MODEL, recorded_id

    cfg = info.get("config") or {}
    if cfg.get("model") and cfg.get("model") != "recorded":
        return [str(cfg["model"])]
    return sorted({recorded_id(t.get("model")) or DEFAULT_MODEL for t in info.get("traces", []) if isinstance(t, dict)})


def _base_windows(info: dict[str, Any]) -> set[int]:
    """The standard windows of the run's models (the price table's), below the long context."""
    from bench.cost.pricing import UnknownModelError, profile

    out = set()
    for m in _models(info):
        try:
            w = profile(m).context_window
        except (UnknownModelError, ValueError):
            continue
        if w < WINDOW_LONG:
            out.add(w)
    return out


def long_window_prices(info: dict[str, Any], path: Path) -> tuple[Path | None, list[str]]:
    """A ``--prices`` file that runs each of the run's models with its long-context (``[1m]``) profile:
    the 1M window, and its long-context rates above the tier. (None, notes) when no model has one."""
    from bench.cost.pricing import RATE_FIELDS, UnknownModelError, profile

    lines, notes = [], []
    for m in _models(info):
        try:
            base, long = profile(m), profile(m.removesuffix("[1m]") + "[1m]")
        except (UnknownModelError, ValueError):
            notes.append(f"{m}: no long-context profile; its window is unchanged")
            continue
        if base.context_window >= WINDOW_LONG or long.context_window < WINDOW_LONG:
            notes.append(f"{m}: already {base.context_window:,} tokens; not varied"
                         if base.context_window >= WINDOW_LONG else f"{m}: no 1M profile; its window is unchanged")
            continue
        entry = [f'[models."{m}"]', f"context_window = {long.context_window}"]
        entry += [f"{f} = {getattr(long.rates, f)}" for f in RATE_FIELDS if getattr(long.rates, f) is not None]
        if long.tier_threshold and long.above is not None:
            entry.append(f"tier_threshold = {long.tier_threshold}")
            entry += [f"above_{f} = {getattr(long.above, f)}" for f in RATE_FIELDS
                      if getattr(long.above, f) is not None]
        lines.append("\n".join(entry))
    if not lines:
        return None, notes
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# written by bench.run.robustness: each model with its long-context window and prices\n"
                    + "\n\n".join(lines) + "\n", encoding="utf-8")
    return path, notes


def _replay(run_dir: Path, info: dict[str, Any], name: str, strategies: Sequence[str], **changes: Any) -> pd.DataFrame:
    """The top candidates replayed with one setting changed, into ``<run>/robustness/<name>/``; a
    second call resumes (the store skips finished tasks). The price table is restored afterwards:
    a ``--prices`` file added here must not reprice the rest of this process."""
    from bench.cost import pricing
    from bench.run.runner import run

    tasks = len(strategies) * max(len(info.get("traces") or ()), 1)
    small = {"executor": "local"} if tasks <= SMALL_REPLAY else {}  # no process pool to start for a few tasks
    config = _run_config(info, strategies=tuple(strategies), out=str(run_dir / REPLAY_DIR), name=name,
                         csv="no", shard=None, objective=None, **{"detail": "summary", **small, **changes})
    saved = dict(pricing._EXTRA)
    try:
        return run(config, progress=False).table
    finally:
        if saved != pricing._EXTRA:
            pricing._EXTRA.clear()
            pricing._EXTRA.update(saved)
            pricing.changed()


def reads_open_loop(objective: str | None) -> bool:
    """Whether a verdict under ``objective`` reads a column of the open-loop twin: its goal or a constraint
    names one. ``bv.decide`` reads the objective's metrics, ``cost`` (ties), ``overflows`` and ``events``
    (nothing acted), the weights' ``calls`` or ``peak_context``, and ``retention`` for the candidates'
    values; the twin gives none of those, so a replay whose verdict reads no twin column runs none (its
    rows say NaN there, under their own task key). Observers stay: the default objective reads ``retention``
    and ``instructions``, which they measure."""
    obj = bv.parse_objective(objective)
    return bool(OPEN_LOOP_METRICS & {obj.goal, *(c.metric for c in obj.constraints)})


def replayed_changes(run_dir: Path, results: pd.DataFrame, v: bv.Verdict, info: dict[str, Any], *,
                     objective: str | None, weight: str | None, summarizer: str | None, resamples: int
                     ) -> tuple[list[Change], list[str]]:
    """Window and cache-TTL changes, each replayed for ``top_candidates`` only."""
    cfg = info.get("config") or {}
    top = top_candidates(v)
    if not top or not cfg:
        return [], []
    if cfg.get("summarizer") == "anthropic" or cfg.get("probe") == "anthropic":
        return [], ["window and cache TTL not replayed: the run used a paid API (--summarizer/--probe anthropic)"]
    method = f"replayed for {len(top)} candidates: " + ", ".join(top)
    notes: list[str] = []
    changes = []
    base = results[results.strategy.isin(top)]
    settings: list[tuple[str, str, str, dict[str, Any]]] = []
    ttl = "1h" if cfg.get("cache_ttl", "5m") == "5m" else "5m"
    settings.append(("cache_ttl", f"{cfg.get('cache_ttl', '5m')} → {ttl}", f"ttl-{ttl}", {"cache_ttl": ttl}))
    prices, why = long_window_prices(info, run_dir / REPLAY_DIR / "window-1m.toml")
    notes += why
    if prices is not None:
        was = "/".join(f"{w / 1000:,.0f}K" for w in sorted(_base_windows(info))) or "the run's"
        settings.append(("window", f"{was} → 1M", "window-1m",
                         {"prices": (*tuple(cfg.get("prices") or ()), str(prices))}))
    alone = bv.decide(base, objective, resamples=resamples, weight=weight, summarizer=summarizer).recommended
    twin = reads_open_loop(objective)
    for kind, label, name, change in settings:
        try:
            table = _replay(run_dir, info, name, top, open_loop_twin=twin, **change)
        except Exception as e:  # noqa: BLE001 - a failed check is said, never fails the verdict
            notes.append(f"{kind} {label} not replayed: {(str(e) or type(e).__name__).splitlines()[0][:200]}")
            continue
        w = bv.decide(table, objective, resamples=resamples, weight=weight, summarizer=summarizer)
        same, tie = _outcome(w, v.recommended)
        note = "; ".join(filter(None, [tie, "" if alone == v.recommended else
                                       f"among these candidates alone the unchanged run picks {alone}"]))
        changes.append(Change(kind, label, w.recommended, same, method, note))
    return changes, notes


# --- the summarizer gap ------------------------------------------------------------------------------------

def summarizer_gap(run_dir: Path, results: pd.DataFrame, v: bv.Verdict, info: dict[str, Any]
                   ) -> tuple[list[dict[str, Any]], list[str]]:
    """Retention through the extractive stand-in beside retention through the summaries the sessions
    recorded, per strategy that summarized, on the traces where a recorded summary was really used
    (the recorded summarizer falls back to the stand-in, and says so, where a session recorded none).
    The other summarizer is replayed for the summarizing top candidates only."""
    cfg = info.get("config") or {}
    mine = cfg.get("summarizer") or "extractive"
    if mine not in ("extractive", "recorded") or "retention" not in results:
        return [], []
    if all(str(t).startswith("synthetic/") for t in pd.unique(results.trace)):
        return [], []  # synthetic sessions record no summaries
    summarizing = set(results.loc[pd.to_numeric(results.get("compactions", 0), errors="coerce").fillna(0) > 0,
                                  "strategy"])
    sign = -1.0 if v.goal.startswith("max-") else 1.0
    best = [c.strategy for c in sorted(v.candidates, key=lambda c: (not np.isfinite(c.goal_value),
                                                                    sign * c.goal_value, c.strategy))]
    top = [s for s in top_candidates(v) if s in summarizing] or [s for s in best if s in summarizing][:3]
    if not top:
        return [], []
    other = "recorded" if mine == "extractive" else "extractive"
    try:
        table = _replay(run_dir, info, f"summarizer-{other}", top, summarizer=other, detail="full",
                        open_loop_twin=False)  # only retention is read
    except Exception as e:  # noqa: BLE001
        return [], [f"summarizer gap not replayed: {(str(e) or type(e).__name__).splitlines()[0][:200]}"]
    from bench.run import store

    here = run_dir / REPLAY_DIR / f"summarizer-{other}" if other == "recorded" else run_dir
    parts = store._parts(here / "data", "summaries")  # which summarizer wrote each, not the texts
    summaries = store.read_parts(parts, ["trace", "strategy", "summarizer"]).to_pandas() if parts else \
        store.load_table(here, "summaries")
    if summaries.empty or "summarizer" not in summaries:
        return [], ["summarizer gap: no summaries were written"]
    used = summaries[summaries.summarizer.astype(str).str.startswith("recorded:")]
    pairs = set(zip(used.trace, used.strategy, strict=False))
    ext, rec = (results, table) if mine == "extractive" else (table, results)
    rows = []
    for s in top:
        traces = sorted(t for t, st in pairs if st == s)
        if not traces:
            continue
        a = ext[(ext.strategy == s) & ext.trace.isin(traces)].set_index("trace").retention
        b = rec[(rec.strategy == s) & rec.trace.isin(traces)].set_index("trace").retention
        both = pd.concat([a.rename("e"), b.rename("r")], axis=1).dropna()
        if both.empty:
            continue
        rows.append({"strategy": s, "traces": int(len(both)), "retention_extractive": float(both.e.mean()),
                     "retention_recorded": float(both.r.mean()), "gap": float((both.r - both.e).mean()),
                     "source_extractive": bv.RETENTION_SOURCES["extractive"],
                     "source_recorded": bv.RETENTION_SOURCES["recorded"]})
    return rows, []


# --- all of it ---------------------------------------------------------------------------------------------

def _fingerprint(results: pd.DataFrame, v: bv.Verdict, **what: Any) -> str:
    """The same results (in any row order and dtype) and the same verdict and options give the same key,
    so the report reuses what the console measured."""
    view = results[["trace", "strategy"]].astype(str)
    for c in ("cost", "retention", "overflows"):
        if c in results:
            view[c] = pd.to_numeric(results[c], errors="coerce").astype(float).round(9)
    view = view.sort_values(["trace", "strategy"], kind="stable")
    digest = hashlib.sha256(pd.util.hash_pandas_object(view, index=False).to_numpy().tobytes())
    digest.update(json.dumps({"choice": v.recommended, "version": VERSION, **what}, sort_keys=True,
                             default=str).encode())
    return digest.hexdigest()[:16]


def analyse(run_dir: Path | None, results: pd.DataFrame, v: bv.Verdict, *, objective: str | None = None,
            weight: str | None = "equal", summarizer: str | None = None, calls: pd.DataFrame | None = None,
            info: dict[str, Any] | None = None, replay: bool = True, resamples: int = 2000) -> Robustness:
    """Every change of the module docstring for verdict ``v`` of ``results``. ``run_dir`` gives the stored
    calls and run.json (and where the replays go); ``replay=False`` keeps to what needs no replay.
    The result is cached in ``<run>/robustness/robustness.json`` for the same results and verdict."""
    if v.recommended is None or results.empty:
        return Robustness(v.recommended, notes=("no choice to test",) if v.recommended is None else ())
    run_dir = Path(run_dir) if run_dir is not None else None
    if info is None and run_dir is not None and (run_dir / "run.json").is_file():
        info = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    info = info or {}
    key = _fingerprint(results, v, objective=objective or "default", weight=bv.check_weight(weight),
                       resamples=resamples)
    cache = run_dir / REPLAY_DIR / CACHE_FILE if run_dir is not None else None
    if cache is not None and cache.is_file():  # a replayed measure serves a request that replays nothing
        try:
            saved = json.loads(cache.read_text(encoding="utf-8"))
            if saved.get("key") == key and (saved.get("replayed") or not replay):
                return _from_dict(saved["robustness"])
        except (ValueError, KeyError, TypeError):
            pass
    decide = {"objective": objective, "summarizer": summarizer, "resamples": resamples}
    changes: list[Change] = []
    notes: list[str] = []
    if calls is None and run_dir is not None:
        from bench.run.store import has_table

        calls = call_batches(run_dir) if has_table(run_dir, "calls") else None
    if calls is not None:
        usd, bad = price_components(calls)
        if bad:
            notes.append(f"prices: {len(bad)} trace{'s' * (len(bad) != 1)} not decomposed into price components "
                         f"(kept at their cost): {', '.join(bad[:3])}{', …' if len(bad) > 3 else ''}")
        if not usd.empty:
            for label, factors in price_variants():
                w = bv.decide(repriced(results, usd, factors), weight=weight, **decide)
                same, tie = _outcome(w, v.recommended)
                changes.append(Change("price", label, w.recommended, same,
                                      "recomputed from the stored per-call tokens", tie))
    if calls is None:
        notes.append("prices: not varied (the run kept no per-call table: --detail summary)")
    mine = bv.check_weight(weight)
    for other in bv.WEIGHTS:
        if other != mine:
            try:
                w = bv.decide(results, weight=other, **decide)
            except ValueError as e:
                notes.append(f"weight {other}: {e}")
                continue
            same, tie = _outcome(w, v.recommended)
            changes.append(Change("weight", other, w.recommended, same, "recomputed from the results", tie))
    group_by, groups = by_group(results, v, info=info, objective=objective, weight=weight, summarizer=summarizer,
                                resamples=resamples)
    gap: list[dict[str, Any]] = []
    if not replay:
        notes.append("window and cache TTL not replayed (compaction-bench run --robustness replay measures them)")
    elif run_dir is not None and info.get("config"):
        more, why = replayed_changes(run_dir, results, v, info, weight=weight, **decide)
        changes += more
        notes += why
        gap, why = summarizer_gap(run_dir, results, v, info)
        notes += why
    out = Robustness(v.recommended, tuple(changes), tuple(groups), group_by, tuple(gap), tuple(notes))
    if cache is not None:
        from bench.run.store import atomic_write

        atomic_write(cache, json.dumps({"key": key, "replayed": bool(replay and info.get("config")),
                                        "robustness": out.to_dict()}, indent=1, default=str) + "\n")
    return out


def _from_dict(d: dict[str, Any]) -> Robustness:
    return Robustness(d.get("choice"), tuple(Change(**c) for c in d.get("changes", ())),
                      tuple(d.get("groups", ())), d.get("group_by", "scenario"), tuple(d.get("summarizer_gap", ())),
                      tuple(d.get("notes", ())))


def attach(v: bv.Verdict, r: Robustness) -> bv.Verdict:
    """``v`` with its robustness (in verdict.json's ``robustness``)."""
    from dataclasses import replace

    return replace(v, robustness=r.to_dict())


__all__ = ["Change", "Robustness", "analyse", "attach", "by_group", "price_components", "price_variants",
           "repriced", "summarizer_gap", "top_candidates", "trace_groups"]
