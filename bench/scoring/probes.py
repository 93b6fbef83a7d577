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

import bisect
import itertools
import math
from collections import OrderedDict
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bench.context.messages import Context
from bench.replay.loop import Observer
from bench.replay.records import TaskResult
from bench.replay.rereads import META as REREAD_META
from bench.scoring.lazy import lazy
from bench.scoring.matching import normalize, path_variants, present, variants  # noqa: F401 (re-used by name)
from bench.scoring.metric import Metric
from bench.tokens.counter import render
from traces.model import Message, Needle, Trace

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
else:  # the observers run during replays without them; the tables after (bench.scoring.lazy says why)
    np, pd = lazy("numpy"), lazy("pandas")

VERBATIM, RECOVERABLE, STALE, MISSING = "retained-verbatim", "recoverable-by-reference", "stale", "missing"
REREAD = "recovered-by-reread"
BEHAVIOUR = "behaviour"
"""The moment of the behaviour probes' rows (bench/scoring/action_probe.py): scored apart from needles."""
FALSE_POSITIVE, ABSENT = "false-positive", "absent"
CLASSES = (VERBATIM, REREAD, RECOVERABLE, STALE, MISSING, FALSE_POSITIVE, ABSENT)
SCORED = CLASSES[:5]
"""The classes of stated needles (controls are false-positive or absent)."""

Asker = Callable[[Sequence[Message], Sequence[Needle]], dict[str, str | None]]
"""LLM probe (bench/scoring/llm_probe.py): (context sent, needles) → the model's answer per needle id
(None: not asked)."""

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
def classify(needle: Needle, haystack: Container[str]) -> str:
    """The retention class of one needle against a normalized context text (or the set of the needle
    forms it holds: ``present`` only asks whether each form is in it)."""
    is_path = needle.kind == "artifact"
    found = present(needle.answer, haystack, is_path=is_path)
    if needle.kind == "control":
        return FALSE_POSITIVE if found else ABSENT
    if found:
        return VERBATIM
    if needle.old_answer and present(needle.old_answer, haystack):
        return STALE
    if needle.reference and present(needle.reference, haystack, is_path=True):
        return RECOVERABLE
    return MISSING


def context_text(messages: Sequence[Message]) -> str:
    return normalize("\n".join(render(m) for m in messages))


def _forms(needles: Iterable[Needle]) -> frozenset[str]:
    """Every normalized form ``classify`` looks for among these needles: answers (as paths for
    artifacts), superseded answers, references (as paths)."""
    return frozenset(v for n in needles for v in (
        *variants(n.answer, n.kind == "artifact"),
        *(variants(n.old_answer, False) if n.old_answer else ()),
        *(variants(n.reference, True) if n.reference else ())))


class _Found:
    """Which of a needle set's forms each message holds, once per message object.

    A form is normalized, so it holds no newline, and the context text joins its messages' normalized
    texts with newlines: a form is in the context text exactly when one message's text holds it. So
    each message is rendered, normalized and searched once per trace (every strategy replayed over
    it sends most of the same message objects at every probe point), and a probe point takes the
    union of its messages' sets instead of searching a joined context text for every needle.
    Held by identity and checked (``hit[0] is m``): a strategy's new message, even at a reused id,
    is searched afresh.
    """

    def __init__(self, forms: frozenset[str]) -> None:
        self.forms = tuple(sorted(forms))
        self._hits: dict[int, tuple[Message, frozenset[str]]] = {}

    def __call__(self, m: Message) -> frozenset[str]:
        hit = self._hits.get(id(m))
        if hit is None or hit[0] is not m:
            text = normalize(render(m))
            hit = (m, frozenset([v for v in self.forms if v in text]))
            self._hits[id(m)] = hit
        return hit[1]


class _PerTrace:
    """What every replay of one trace can share: each needle set's ``_Found`` and the derived needles."""

    def __init__(self) -> None:
        self.found: dict[frozenset[str], _Found] = {}
        self.derived: tuple[Needle, ...] | None = None

    def finder(self, needles: Sequence[Needle]) -> _Found:
        forms = _forms(needles)
        hit = self.found.get(forms)
        if hit is None:
            hit = self.found[forms] = _Found(forms)
        return hit


_DERIVED: OrderedDict[tuple[str, str | None, int], tuple[Trace, tuple[Needle, ...]]] = OrderedDict()


def derived_needles(trace: Trace) -> tuple[Needle, ...]:
    """``bench.scoring.derived_probes.derive_needles(trace)``, once per trace in this process.

    Keyed by the trace's id, source and length, checked against its messages: a worker that gets
    the same trace again in another job (a new object, unpickled) does not derive them again.
    """
    key = (trace.id, trace.source, len(trace.messages))
    hit = _DERIVED.get(key)
    if hit is not None and (hit[0] is trace or hit[0].messages == trace.messages):
        _DERIVED.move_to_end(key)
        return hit[1]
    from bench.scoring.derived_probes import derive_needles

    needles = tuple(derive_needles(trace))
    _DERIVED[key] = (trace, needles)
    while len(_DERIVED) > _KEEP:
        _DERIVED.popitem(last=False)
    return needles


_SHARED: OrderedDict[int, tuple[Trace, _PerTrace]] = OrderedDict()
_KEEP = 4
"""Traces whose shared state is kept (a run replays every strategy of a trace before the next)."""


def _shared(trace: Trace) -> _PerTrace:
    hit = _SHARED.get(id(trace))
    if hit is not None and hit[0] is trace:
        _SHARED.move_to_end(id(trace))
        return hit[1]
    shared = _PerTrace()
    _SHARED[id(trace)] = (trace, shared)
    while len(_SHARED) > _KEEP:
        _SHARED.popitem(last=False)
    return shared


class _Positions:
    """Where the forms sit in one probed context: the last message holding each, and the truth tokens
    after each message (a needle's distance from the end is that of the last message holding it)."""

    def __init__(self, ctx: Context, found: Sequence[frozenset[str]]) -> None:
        self.last: dict[str, int] = {}
        for j, forms in enumerate(found):
            for v in forms:
                self.last[v] = j
        # after[j]: the tokens of the messages after j, summed from the end (exact ints, in C)
        self.after = [0, *itertools.accumulate(map(ctx.meter._tok, reversed(ctx.messages[1:])))][::-1]

    def tokens_after_match(self, needle: Needle) -> int | None:
        """Truth tokens after the last message holding the answer (its distance from the end)."""
        last = self.last
        j = max((last[v] for v in variants(needle.answer, needle.kind == "artifact") if v in last), default=-1)
        if j < 0:
            return None
        return self.after[j]


class _Timeline:
    """Where each trace message sits: its call index and cumulative truth tokens."""

    def __init__(self, trace: Trace, ctx: Context) -> None:
        self.answers = [i for i, m in enumerate(trace.messages) if m.role == "assistant"]
        # Python ints (no numpy in the replay path): the same totals, taken exactly
        self.cumulative = list(itertools.accumulate((ctx.tok(m) for m in trace.messages), initial=0))
        self.n = len(trace.messages)

    def call_of(self, index: int) -> int:
        """The call whose prompt first carries message ``index`` (its step index)."""
        return bisect.bisect_left(self.answers, index)

    def tokens_between(self, index: int, cut: int) -> int:
        """Truth tokens of the messages after ``index`` and before ``cut``."""
        return int(self.cumulative[cut] - self.cumulative[index + 1])

    def cut(self, call: int, moment: str) -> int:
        """Messages seen when probing: before call's answer (after it, at the end of the replay)."""
        if call >= len(self.answers):
            return self.n
        return self.answers[call] + (1 if moment == "end" else 0)


def needle_observer(
    trace: Trace,
    *,
    needles: Sequence[Needle] | None = None,
    strategy: str | None = None,
    asker: Asker | None = None,
    prober: Any = None,
) -> Observer:
    """An observer for ``bench.replay.loop.replay``: one row per (needle, probe point).

    Needles default to the trace's planted ones, else ``derive_needles(trace)`` so real traces
    are scored too. Use one observer per replay: it counts compaction rounds as it is called.
    With ``prober`` (bench/scoring/action_probe.ActionProber, ``--probe anthropic``) every compaction also
    gets behaviour rows (moment ``behaviour``): the next-action and constraint-choice probes.
    """
    source = "planted"
    shared = _shared(trace)
    if needles is None:
        needles = trace.needles
        if not needles:
            if shared.derived is None:
                shared.derived = derived_needles(trace)
            needles, source = shared.derived, "derived"
    state: dict[str, Any] = {"round": 0, "timeline": None}
    found_in = shared.finder(needles)

    def observe(moment: str, call: int, ctx: Context) -> list[dict]:
        if moment == "compaction":
            state["round"] += 1
        if state["timeline"] is None:
            state["timeline"] = _Timeline(trace, ctx)
        timeline: _Timeline = state["timeline"]
        cut = timeline.cut(call, moment)
        found = [found_in(m) for m in ctx.messages]
        haystack = frozenset().union(*found)  # the forms the context text holds (``_Found`` says why)
        kept: frozenset[str] | None = None  # the same without what re-reads inserted, when it holds some
        if any(m.meta.get(REREAD_META) for m in ctx.messages):
            kept = frozenset().union(*(f for f, m in zip(found, ctx.messages, strict=True)
                                       if not m.meta.get(REREAD_META)))
        rows = []
        positions: _Positions | None = None
        stated = [n for n in needles if n.message_index < cut]  # not yet stated: not probed
        answers: dict[str, str | None] = {}
        if asker is not None and moment == "end":
            answers = asker(ctx.messages, [n for n in stated if n.kind != "control"])
        for n in stated:
            cls = classify(n, haystack)
            if kept is not None and cls == VERBATIM and n.kind != "control" and not present(
                    n.answer, kept, is_path=n.kind == "artifact"):
                cls = REREAD
            answer = answers.get(n.id)
            llm = {} if asker is None else {
                "llm_answer": answer,
                "llm_recalled": None if answer is None else present(n.answer, normalize(answer),
                                                                     is_path=n.kind == "artifact")}
            planted = n.message_index
            if cls in (VERBATIM, FALSE_POSITIVE):
                positions = positions or _Positions(ctx, found)
            rows.append({
                "trace": trace.id, **({"strategy": strategy} if strategy else {}),
                "moment": moment, "call": call, "round": state["round"],
                "needle": n.id, "needle_kind": n.kind, "source": source, "planted": planted,
                "planted_call": timeline.call_of(planted) if planted >= 0 else None,
                "age_tokens": timeline.tokens_between(planted, cut) if planted >= 0 else None,
                "age_calls": call - timeline.call_of(planted) if planted >= 0 else None,
                "cls": cls, "retained": cls == VERBATIM,
                "tokens_after_match": (positions.tokens_after_match(n)
                                       if positions is not None and cls in (VERBATIM, FALSE_POSITIVE) else None),
                **llm,
            })
        if prober is not None and moment == "compaction":
            from bench.scoring.action_probe import probe_rows

            rows.extend({"trace": trace.id, **({"strategy": strategy} if strategy else {}),
                         "moment": BEHAVIOUR, "call": call, "round": state["round"], **r}
                        for r in probe_rows(prober, trace.messages, cut, ctx.messages, needles))
        if prober is not None and moment == "end":  # what this replay's behaviour probes asked and paid
            rows.append({"trace": trace.id, **({"strategy": strategy} if strategy else {}), "moment": BEHAVIOUR,
                         "call": call, "probe": "prober", "requests": prober.asked, "paid": prober.paid,
                         "skipped": getattr(prober, "skipped", 0),
                         "cost": prober.cost})
        if moment == "end":
            state["round"] = 0
        return rows

    return observe


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
