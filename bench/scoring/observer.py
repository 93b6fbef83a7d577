"""The needle observer: what a replay runs at each probe point (after each compaction, at the end) to
class each needle against the context sent (bench/scoring/probes.py says what the classes mean and
scores the rows after the replays).

Apart from the tables so that it can be compiled with mypyc (bench/cli/native.py): it runs inside
every replay, and holds no pandas (a compiled module runs an ``if TYPE_CHECKING:`` block's ``else:``
as unreachable code, which the tables' lazy pandas needs). bench.scoring.probes re-exports every
name here.
"""

from __future__ import annotations

import bisect
import itertools
from collections import OrderedDict
from collections.abc import Callable, Container, Iterable, Sequence
from typing import Any

from bench.context.messages import Context
from bench.replay.loop import Observer
from bench.replay.rereads import META as REREAD_META
from bench.scoring.matching import normalize, present, variants
from bench.tokens.counter import render
from traces.model import Message, Needle, Trace

VERBATIM, RECOVERABLE, STALE, MISSING = "retained-verbatim", "recoverable-by-reference", "stale", "missing"
REREAD = "recovered-by-reread"
BEHAVIOUR = "behaviour"
"""The moment of the behaviour probes' rows (bench/scoring/action_probe.py): scored apart from needles."""
FALSE_POSITIVE, ABSENT = "false-positive", "absent"

Asker = Callable[[Sequence[Message], Sequence[Needle]], dict[str, str | None]]
"""LLM probe (bench/scoring/llm_probe.py): (context sent, needles) → the model's answer per needle id
(None: not asked)."""


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
