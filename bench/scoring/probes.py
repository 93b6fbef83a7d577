"""Needle retention: is each planted (or derived) fact still in what the agent sends?

Scoring is exact presence in the context as sent (evaluation.md §B6, §F.10): an **upper bound**
on what the model would recall, free and deterministic. Each (needle, probe point) row gets one
class (evaluation.md §F.7, after the conformance kit's typed canaries):

- ``retained-verbatim``: the expected answer is in the context;
- ``stale``: an update needle's superseded ``old_answer`` is there and the new answer is not;
- ``recovered-by-reread``: the answer is in the context only through a simulated re-read of its file
  (bench/replay/rereads.py): not kept by the strategy, fetched again at a price;
- ``recoverable-by-reference``: the answer is gone but the needle's ``reference`` (a path or a
  command that would fetch it again) is still there;
- ``missing``: none of these;
- control needles (never stated) are ``false-positive`` when found, else ``absent``.

LLM probe mode (§F.10, ``--probe anthropic``): pass ``asker`` (bench/scoring/llm_probe.py) to
``needle_observer``. At the end of the trace every stated needle's question is put to a real model
over the context sent; each row then also carries ``llm_answer`` and ``llm_recalled`` (the expected
answer is in the model's reply), beside the exact-match class, so the gap between what is present
and what is recalled shows (Lost in Compaction: 82-93% present, 0-7% recalled).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bench.replay.records import TaskResult
from bench.scoring.lazy import lazy
from bench.scoring.matching import normalize, path_variants, present, variants  # noqa: F401 (re-used by name)
from bench.scoring.metric import Metric

# The observer a replay runs (compiled apart from these tables: bench/scoring/observer.py), re-exported by name
from bench.scoring.observer import (  # noqa: F401
    ABSENT,
    BEHAVIOUR,
    FALSE_POSITIVE,
    MISSING,
    RECOVERABLE,
    REREAD,
    STALE,
    VERBATIM,
    Asker,
    classify,
    context_text,
    derived_needles,
    needle_observer,
)

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:  # the observers run during replays without them; the tables after (bench.scoring.lazy says why)
    np, pd = lazy("numpy"), lazy("pandas")

CLASSES = (VERBATIM, REREAD, RECOVERABLE, STALE, MISSING, FALSE_POSITIVE, ABSENT)
SCORED = CLASSES[:5]
"""The classes of stated needles (controls are false-positive or absent)."""

AGE_TOKEN_EDGES = (0, 2_000, 8_000, 32_000, 128_000, math.inf)
AGE_TOKEN_LABELS = ("< 2K", "2K–8K", "8K–32K", "32K–128K", "≥ 128K")
AGE_CALL_EDGES = (0, 5, 20, 50, 100, math.inf)
AGE_CALL_LABELS = ("< 5", "5–19", "20–49", "50–99", "≥ 100")
CLIFF = 0.5
"""A strategy's cliff round is the first compaction round whose retention falls below this."""
RULE_KINDS = {"instruction": "instructions", "skill": "skills"}
"""Needle kinds that are rules (traces/synthetic_rules.py) → the results column that scores them."""
RULE_MOMENTS = ("compaction", "end")
"""Where a rule is checked: right after every compaction, and in the last request sent."""

METRICS: tuple[Metric, ...] = (
    Metric("retention", "fraction", False,
           "Share of needles whose answer is still verbatim in the context sent (an upper bound on recall)."),
    Metric("recoverable-by-reference", "fraction", False,
           "Share of needles gone from the context whose file path or command is still there."),
    Metric("stale", "fraction", True, "Share of update needles where only the superseded value is left."),
    Metric("false_positive_rate", "fraction", True, "Share of control (never stated) needles found anyway."),
    Metric("cliff_round", "round", False, "First compaction round whose retention falls below 50%."),
    Metric("instructions", "fraction", False,
           "Share of instruction-file rules still verbatim in the context after each compaction and at the end."),
    Metric("skills", "fraction", False,
           "Share of loaded skills' rules still verbatim in the context after each compaction and at the end."),
    Metric("files_modified_f1", "fraction", False,
           "Set F1 of the files modified so far against those still named in the context."),
)



def probe_frame(results: Iterable[TaskResult]) -> pd.DataFrame:
    """All probe rows of these results, with the trace and strategy of the task that made them."""
    rows = [{**p, "trace": r.trace, "strategy": r.strategy} for r in results for p in r.probes]
    return pd.DataFrame(rows)


def _scored(probes: pd.DataFrame, moment: str | None) -> pd.DataFrame:
    p = probes[probes.needle_kind != "control"]
    if "moment" in p:
        p = p[p.moment != BEHAVIOUR]  # the behaviour probes' rows hold no needle class
    return p if moment is None else p[p.moment == moment]


def retention(probes: pd.DataFrame, by: Sequence[str] = (), *, moment: str | None = "end") -> pd.DataFrame:
    """Share of needles per class per strategy (and ``by`` columns), with n; controls excluded.

    ``moment="end"`` scores what the agent holds when the trace ends; ``None`` pools every probe.
    """
    p = _scored(probes, moment)
    keys = ["strategy", *by]
    if p.empty:
        return pd.DataFrame(columns=[*keys, "n", "retention", *SCORED])
    shares = pd.crosstab([p[k] for k in keys], p.cls, normalize="index")
    out = shares.reindex(columns=list(SCORED), fill_value=0.0)
    out.insert(0, "retention", out[VERBATIM])
    out.insert(0, "n", p.groupby(keys).size())
    return out.reset_index()


def with_age_buckets(probes: pd.DataFrame) -> pd.DataFrame:
    """Add ``age_tokens_bucket`` and ``age_calls_bucket`` (the report's heat-map bins)."""
    out = probes.copy()
    out["age_tokens_bucket"] = pd.cut(out.age_tokens, AGE_TOKEN_EDGES, labels=AGE_TOKEN_LABELS, right=False)
    out["age_calls_bucket"] = pd.cut(out.age_calls, AGE_CALL_EDGES, labels=AGE_CALL_LABELS, right=False)
    return out


def false_positive_rate(probes: pd.DataFrame, *, moment: str | None = "end") -> pd.DataFrame:
    """Per strategy: share of control (never stated) needles found anyway, with n."""
    p = probes[probes.needle_kind == "control"]
    if moment is not None:
        p = p[p.moment == moment]
    g = p.assign(fp=p.cls == FALSE_POSITIVE).groupby("strategy").fp
    return pd.DataFrame({"n": g.size(), "false_positive_rate": g.mean()}).reset_index()


def cliff_rounds(probes: pd.DataFrame, threshold: float = CLIFF) -> pd.DataFrame:
    """Per strategy: retention at each compaction round and the first round below ``threshold``
    (<NA> when retention never falls below it)."""
    p = _scored(probes, "compaction")
    rows = []
    for strategy, g in p.groupby("strategy"):
        by_round = g.groupby("round").retained.mean().sort_index()
        below = by_round[by_round < threshold]
        rows.append({"strategy": strategy, "rounds": len(by_round),
                     "retention_by_round": {int(k): float(v) for k, v in by_round.items()},
                     "cliff_round": int(below.index[0]) if len(below) else None})
    out = pd.DataFrame(rows, columns=["strategy", "rounds", "retention_by_round", "cliff_round"])
    out["cliff_round"] = out.cliff_round.astype("Int64")
    return out


DERIVED_KINDS = (("derived:early:", "early fact"), ("derived:request:", "request"), ("derived:file:", "artifact"),
                 ("derived:error", "error"), ("derived:constraint:", "constraint"))
"""Derived needle id prefixes → the probe kind a table shows (planted needles keep their ``needle_kind``)."""


def probe_kind(needle_id: str, needle_kind: str) -> str:
    """``early fact``, ``request``, ``artifact``, ``error`` or ``constraint`` for a derived needle, else its kind."""
    return next((label for prefix, label in DERIVED_KINDS if str(needle_id).startswith(prefix)), str(needle_kind))


def rule_retention(probes: pd.DataFrame) -> pd.DataFrame:
    """Strategy × rule kind (``instruction``, ``skill``): the share of (rule, probe point) rows retained
    verbatim after each compaction and at the end, pooled, with n; plus the share at each compaction round.

    A rule may survive because the strategy kept the message that held it or because the agent
    re-injected it after compacting (Claude Code's invoked skills): both count, as the model sees both.
    """
    cols = ["strategy", "kind", "n", "retention", "by_round"]
    if probes.empty or "needle_kind" not in probes:
        return pd.DataFrame(columns=cols)
    p = probes[probes.needle_kind.isin(list(RULE_KINDS)) & probes.moment.isin(list(RULE_MOMENTS))]
    rows = []
    for (strategy, kind), g in p.groupby(["strategy", "needle_kind"]):
        after = g[g.moment == "compaction"]
        rows.append({"strategy": strategy, "kind": kind, "n": len(g), "retention": float(g.retained.mean()),
                     "by_round": {int(k): float(v) for k, v in after.groupby("round").retained.mean().items()}})
    return pd.DataFrame(rows, columns=cols)


def retention_by_kind(probes: pd.DataFrame, *, moment: str | None = None) -> pd.DataFrame:
    """Strategy × probe kind: the share of (needle, probe point) rows retained verbatim, with n.

    ``moment`` ``compaction`` scores the context right after every compaction (where derived probes
    tell strategies apart), ``end`` the end of each trace, None both pooled. Controls excluded.
    """
    p = _scored(probes, moment)
    if p.empty:
        return pd.DataFrame(columns=["strategy", "kind", "n", "retention"])
    kinds = [probe_kind(i, k) for i, k in zip(p.needle, p.needle_kind, strict=True)]
    g = p.assign(kind=kinds).groupby(["strategy", "kind"]).retained
    return pd.DataFrame({"n": g.size(), "retention": g.mean()}).reset_index()


# --- one task's scores in one pass (the worker's fast path) ------------------------------------------
# retention / false_positive_rate / cliff_rounds above answer these for many tasks at once with pandas
# (crosstab, groupby); called per task in a worker, building those frames cost about a fifth of a
# synthetic task's CPU (issue 13, profiled with py-spy). probe_scores counts the same shares in one pass
# over the rows, a count divided by a count as pandas divides them, so the floats are equal
# (tests/bench/test_scale.py checks them against the functions above).


def _present(value: Any) -> bool:
    """Not missing in pandas' sense (None or NaN are dropped by crosstab, groupby and mean)."""
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def probe_scores(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``retention``, ``compaction_retention`` (the stated needles retained right after each compaction,
    pooled), ``constraint_retention`` (the same for the user's constraint needles alone),
    ``false_positive_rate`` (NaN when nothing to score), ``cliff_round`` (None when retention never
    falls below bench.scoring.probes.CLIFF), and ``instructions`` and ``skills`` (the rules retained
    after each compaction and at the end, pooled, as ``rule_retention``; NaN without rules) of one
    task's probe rows (one strategy)."""
    kept = scored = controls = false_pos = constraints_kept = constraints = 0
    rounds: dict[int, list[int]] = {}  # round → [retained, probed]
    rules = {col: [0, 0] for col in RULE_KINDS.values()}  # column → [retained, probed]
    for p in rows:
        if not _present(p.get("strategy")):  # pandas groups by strategy: rows without one count nowhere
            continue
        moment, control = p.get("moment"), p.get("needle_kind") == "control"
        rule = RULE_KINDS.get(p.get("needle_kind"))  # type: ignore[arg-type]
        if rule is not None and moment in RULE_MOMENTS and _present(p.get("retained")):
            rules[rule][0] += bool(p["retained"])
            rules[rule][1] += 1
        if control:
            if moment == "end":  # a control without a class counts as not found, as in bench.scoring.probes
                controls += 1
                false_pos += p.get("cls") == FALSE_POSITIVE
        elif moment == "end":
            if _present(p.get("cls")):
                scored += 1
                kept += p.get("cls") == VERBATIM
        elif moment == "compaction" and _present(p.get("round")) and _present(p.get("retained")):
            tally = rounds.setdefault(int(p["round"]), [0, 0])
            tally[0] += bool(p["retained"])
            tally[1] += 1
            if p.get("needle_kind") == "constraint":
                constraints += 1
                constraints_kept += bool(p["retained"])
    below = [r for r, (k, n) in sorted(rounds.items()) if k / n < CLIFF]
    after_kept, after_probed = sum(k for k, _ in rounds.values()), sum(n for _, n in rounds.values())
    return {"retention": kept / scored if scored else math.nan,
            "compaction_retention": after_kept / after_probed if after_probed else math.nan,
            "false_positive_rate": false_pos / controls if controls else math.nan,
            "constraint_retention": constraints_kept / constraints if constraints else math.nan,
            "cliff_round": below[0] if below else None,
            **{col: k / n if n else math.nan for col, (k, n) in rules.items()}}
