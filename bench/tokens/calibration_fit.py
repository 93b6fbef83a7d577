"""Fitting the per-family token models that bench.tokens.calibration reads (``python -m
bench.tokens.calibration_fit [TRACES…] [--write]``).

Apart from the stored models because the fit needs the provider attribution of each recorded
session (bench.tokens.attribution), while the attribution needs the stored models for sessions too
short to measure their own ratio: kept in one module they would import each other.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from bench.tokens.calibration import (
    BASES,
    KINDS,
    FamilyModel,
    content_kind,
    counter_for,
    family_of,
)

DEFAULT_SOURCES = ("../shared/traces/claude-code__marot-spotter", "../shared/traces/codex__madshn-localpush")


def clean_steps(trace: Any, counter: Any) -> list[tuple[int, dict[str, int]]]:
    """Per clean step, the provider's growth and our count of what was appended, by content kind.

    The same steps as ``bench.tokens.attribution.clean_growth`` (a test holds the sums equal): between two
    calls with usage, no compaction, no human turn, no model switch, the prompt grew and something
    was appended."""
    from bench.tokens.counter import render

    compacted = {c.message_index for c in trace.compactions}
    out: list[tuple[int, dict[str, int]]] = []
    prev: tuple[int, str | None] | None = None
    appended: dict[str, int] = {}
    human = False
    for i, m in enumerate(trace.messages):
        if i in compacted:
            prev = None
        if m.role == "assistant" and m.usage is not None and m.usage.prompt_tokens:
            p, model = m.usage.prompt_tokens, m.meta.get("model")
            if prev is not None and not human and model == prev[1] and p > prev[0] and sum(appended.values()) > 0:
                out.append((p - prev[0], appended))
            prev, appended, human = (p, model), {}, False
        elif m.is_human_turn:
            human = True
        kind = content_kind(render(m))
        appended = {**appended, kind: appended.get(kind, 0) + counter.truth(m)}
    return out


def _points(trace: Any, counter: Any) -> list[tuple[int, dict[str, int]]]:
    """(recorded prompt, our cumulative count by kind) at each call before the first recorded compaction."""
    from bench.tokens.counter import render
    from traces.model import recorded_calls

    first = min(recorded_calls(trace), default=trace.n_calls)
    out: list[tuple[int, dict[str, int]]] = []
    size: dict[str, int] = {}
    call = -1
    for m in trace.messages:
        if m.role == "assistant":
            call += 1
            if call >= first:
                break
            if m.usage is not None and m.usage.prompt_tokens:
                out.append((m.usage.prompt_tokens, dict(size)))
        kind = content_kind(render(m))
        size[kind] = size.get(kind, 0) + counter.truth(m)
    return out


@dataclass(frozen=True)
class _Session:
    family: str
    id: str
    growth: int
    ours: int
    steps: int
    overhead: int | None
    points: tuple[tuple[int, dict[str, int]], ...]
    step_rows: tuple[tuple[int, dict[str, int]], ...] = ()
    filled: bool = False
    """Its text is mostly the importer's stand-in for redacted strings (traces.formats.codex.filler)."""


def _session(trace: Any) -> _Session | None:
    from bench.tokens.attribution import attribute

    family = family_of(trace.model)
    if "acompact" in str(trace.source or ""):  # the compaction call: its transcript lacks what it summarized
        return None
    if family is None:
        return None
    counter = counter_for(family)
    points = _points(trace, counter)
    if not points:
        return None
    rows = clean_steps(trace, counter)
    growth, ours = sum(g for g, _ in rows), sum(sum(k.values()) for _, k in rows)
    att = attribute(trace, counter)
    overhead = att.overheads[0][1] if att is not None and att.overheads else None
    return _Session(family, trace.id, growth, ours, len(rows), overhead, tuple(points), tuple(rows),
                    _mostly_filler(trace))


def _mostly_filler(trace: Any) -> bool:
    """Whether most message text is redaction filler: a content-kind fit on it would describe the filler
    (it is code-like by construction), so such a family keeps the single ratio."""
    from bench.tokens.counter import render
    from traces.formats.codex import FILLER

    mark = FILLER[:48]
    texts = [render(m) for m in trace.messages]
    filled = sum(len(t) for t in texts if mark in t)
    return filled * 2 > sum(len(t) for t in texts)


MIN_KIND_SHARE = 0.02


MIN_KIND_STEPS = 10
"""A kind gets its own ratio only with this share of the appended tokens over at least this many steps
(else a handful of steps decide it: 42x for the redacted Codex sessions' few prose steps)."""


def _kind_ratios(rows: Sequence[tuple[int, dict[str, int]]], pooled: float) -> tuple[tuple[str, float], ...]:
    """Per-kind ratios minimising the squared error of the step growths, all >= 0: the best feasible
    least-squares fit over every subset of the kinds with enough evidence; the other kinds keep the
    pooled ratio (and are not listed)."""
    import numpy as np

    total = sum(sum(r.values()) for _, r in rows)
    enough = [k for k in KINDS if sum(r.get(k, 0) for _, r in rows) >= MIN_KIND_SHARE * total
              and sum(1 for _, r in rows if r.get(k)) >= MIN_KIND_STEPS]
    if not enough:
        return ()
    y = np.array([g for g, _ in rows], dtype=float)
    x = np.array([[r.get(k, 0) for k in KINDS] for _, r in rows], dtype=float)
    best: tuple[float, dict[str, float]] | None = None
    for size in range(len(enough), 0, -1):
        for subset in itertools.combinations(enough, size):
            cols = [KINDS.index(k) for k in subset]
            rest = [j for j in range(len(KINDS)) if j not in cols]
            coef = np.linalg.lstsq(x[:, cols], y - x[:, rest].sum(axis=1) * pooled, rcond=None)[0]
            if (coef < 0).any():
                continue
            ratios = dict.fromkeys(KINDS, pooled) | {k: float(c) for k, c in zip(subset, coef, strict=True)}
            err = float(((x @ np.array([ratios[k] for k in KINDS]) - y) ** 2).sum())
            if best is None or err < best[0]:
                best = (err, ratios)
    if best is None:
        return ()
    return tuple((k, round(best[1][k], 4)) for k in enough)


def _fit(family: str, sessions: Sequence[_Session]) -> FamilyModel | None:
    mine = [s for s in sessions if s.family == family]
    if not mine:
        return None
    with_ratio = [s for s in mine if s.ours]
    ratio = sum(s.growth for s in with_ratio) / sum(s.ours for s in with_ratio) if with_ratio else 1.0
    heads = [s.overhead for s in mine if s.overhead is not None]
    overhead = int(statistics.median(heads)) if heads else 0
    kinds = _kind_ratios([r for s in mine for r in s.step_rows], ratio)
    return FamilyModel(family, round(ratio, 4), overhead, len(mine), sum(s.steps for s in mine),
                       base=BASES.get(family, "cl100k_base"), kind_ratios=kinds)


def _errors(model: FamilyModel, session: _Session, *, kinds: bool = False) -> list[float]:
    if kinds:
        return [abs(model.kind_prompt(ours) - prompt) / prompt for prompt, ours in session.points]
    return [abs(model.prompt(sum(ours.values())) - prompt) / prompt for prompt, ours in session.points]


def _summary(errors: list[float]) -> tuple[float | None, float | None]:
    if not errors:
        return None, None
    errors = sorted(errors)
    return round(statistics.median(errors), 4), round(errors[int(0.9 * (len(errors) - 1))], 4)


def fit(traces: Sequence[Any]) -> dict[str, FamilyModel]:
    """One model per family, with the leave-one-session-out error on every held-out call, for the
    single ratio and for the per-kind ratios; ``default`` is the one with the lower median, except on
    redaction filler (single)."""
    sessions = [s for t in traces if (s := _session(t)) is not None]
    out: dict[str, FamilyModel] = {}
    for family in sorted({s.family for s in sessions}):
        model = _fit(family, sessions)
        if model is None:
            continue
        single: list[float] = []
        kinds: list[float] = []
        mine = [s for s in sessions if s.family == family]
        for held in mine:
            rest = _fit(family, [s for s in mine if s is not held])
            if rest is not None and len(mine) > 1:
                single += _errors(rest, held)
                kinds += _errors(rest, held, kinds=True)
        med, p90 = _summary(single)
        kmed, kp90 = _summary(kinds)
        filled = sum(s.filled for s in mine) * 2 > len(mine)
        better = kmed is not None and med is not None and kmed < med
        default = "kinds" if better and not filled else "single"
        note = ("redacted filler text: the ratio is the importer's filler's; per-kind ratios would describe "
                "the filler, so the single ratio is the default") if filled else ""
        out[family] = replace(model, held_out_median=med, held_out_p90=p90, note=note,
                              kind_held_out_median=kmed, kind_held_out_p90=kp90, default=default)
    return out


def _load_sources(sources: Sequence[str]) -> list[Any]:
    from traces.formats import load

    return load(list(sources), lenient=True).traces


def dumps(models: dict[str, FamilyModel], sources: Sequence[str]) -> str:
    lines = ["# Provider token models per family, fitted by `python -m bench.tokens.calibration --write`",
             "# (bench/tokens/calibration.py) on the recorded sessions of: " + ", ".join(sources) + ".",
             "# ratio: provider tokens per `base` token (pooled clean steps); overhead: median first-call",
             "# overhead; held_out_*: |predicted - recorded| / recorded of each call before the first",
             "# recorded compaction, each session predicted by a model fitted on the others.",
             "# kind_ratios: the ratio per content kind (token_calibration.content_kind), least squares over",
             "# the clean steps, >= 0; kind_held_out_*: its held-out error on the same calls. default: the",
             "# model with the lower held-out median (single or kinds; single on redaction filler), what calibrated",
             "# counts use.", ""]
    for name, m in models.items():
        if m.kind_held_out_median is not None and m.held_out_median is not None:
            lines.append(f"# {name}: held-out median {m.held_out_median:.1%} single ratio vs "
                         f"{m.kind_held_out_median:.1%} per kind: {m.default} kept")
        lines += [f"[families.{name}]", f"ratio = {m.ratio}", f"overhead = {m.overhead}", f"sessions = {m.sessions}",
                  f"steps = {m.steps}"]
        if m.held_out_median is not None:
            lines += [f"held_out_median = {m.held_out_median}", f"held_out_p90 = {m.held_out_p90}"]
        lines.append(f"base = {json.dumps(m.base)}")
        if m.kind_ratios:
            lines.append("kind_ratios = { " + ", ".join(f"{k} = {r}" for k, r in m.kind_ratios) + " }")
        if m.kind_held_out_median is not None:
            lines += [f"kind_held_out_median = {m.kind_held_out_median}", f"kind_held_out_p90 = {m.kind_held_out_p90}"]
        lines.append(f"default = {json.dumps(m.default)}")
        if m.note:
            lines.append(f"note = {json.dumps(m.note)}")
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.tokens.calibration", description=__doc__.split("\n\n")[0])
    p.add_argument("sources", nargs="*", default=list(DEFAULT_SOURCES))
    p.add_argument("--write", action="store_true", help="rewrite bench/data/token_calibration.toml")
    args = p.parse_args(argv)
    missing = [s for s in args.sources if not Path(s).exists()]
    if missing:
        print(f"error: {', '.join(missing)} not found", file=sys.stderr)
        return 2
    models = fit(_load_sources(args.sources))
    def pct(x: float | None) -> str:
        return "—" if x is None else f"{x:.1%}"

    print(f"{'family':<10} {'base':<12} {'model':<7} {'ratio':<44} {'overhead':>9} {'sessions':>8} "
          f"{'held-out median':>16} {'p90':>7}")
    for m in models.values():
        kinds = " ".join(f"{k}={r:.3f}" for k, r in m.kind_ratios) or "—"
        for name, ratio, med, p90 in (("single", f"{m.ratio:.3f}", m.held_out_median, m.held_out_p90),
                                      ("kinds", kinds, m.kind_held_out_median, m.kind_held_out_p90)):
            mark = "*" if name == m.default else " "
            print(f"{m.family:<10} {m.base:<12} {name + mark:<7} {ratio:<44} {m.overhead:>9,} {m.sessions:>8} "
                  f"{pct(med):>16} {pct(p90):>7}")
    print("* the default (lower held-out median; single where the text is redaction filler), used for traces "
          "without usage")
    if args.write:
        path = Path(str(resources.files("bench").joinpath("data/token_calibration.toml")))
        path.write_text(dumps(models, args.sources), encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
