"""How long a summary each agent writes, fitted on the summaries real sessions recorded.

Size drives the cost of every call after a compaction, so the offline summarizer aims at the
size the strategy's own agent writes rather than at whatever it can extract. The fit reads every
*automatic* recorded compaction of the traces given (a manual ``/compact`` may carry the user's
own instructions, and Cline's manual "basic" compaction is a deterministic notice, not a model's
summary) and fits a log-normal per agent on the summary's size in cl100k tokens: a fixed, offline
unit, so the target does not move with the run's truth tokenizer, and the summarizer measures
what it writes in the same unit (its text is denser than a model's prose: more paths and code).

Where an agent has no recorded summary the pooled fit stands in, and the data file says so:
``python -m bench.summarizers.sizes ../shared/traces`` prints the fit, ``--write`` stores it in
bench/data/summary_sizes.toml; a test refits the traces and requires the stored numbers.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import random
import statistics
import sys
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from traces.model import Trace

DATA = Path(__file__).resolve().parent.parent / "data" / "summary_sizes.toml"
SIGMA_FLOOR = 0.25
"""Fewer than five summaries cannot show an agent's spread; Claude Code's are reported at 2.7-4.1K
tokens across sessions (issue 10), about ±0.2 in log space, so no fit is tighter than this."""

STRATEGY_FAMILY: dict[str, str] = {
    "claude-code": "claude-code", "five-layer": "claude-code", "codex": "codex", "cline": "cline",
    "opencode": "opencode", "amp": "amp", "goose": "goose", "openhands": "openhands", "aider": "aider",
    "baseagent": "baseagent", "llm-summary": "openhands", "hybrid": "openhands", "gemini-cli": "gemini-cli",
    "copilot-cli": "copilot-cli",
}
"""Registry name prefix → the agent whose summaries a strategy's summarizer imitates. The Complexity
Trap's summarizer is OpenHands' LLM summarizing condenser; strategies of no agent use the pooled fit."""


UNIT = "cl100k_base"


@dataclass(frozen=True)
class SizeFit:
    median_tokens: float
    """In cl100k tokens (:data:`UNIT`)."""
    sigma: float
    """Standard deviation of ln tokens."""
    median_chars: float
    n: int
    source: str
    """Where the numbers come from: the files fitted, or the assumption made."""

    def sample(self, key: str) -> int:
        """A size drawn from the fit, deterministically for ``key`` (within 2.5 sigma)."""
        seed = int.from_bytes(hashlib.sha256(key.encode("utf-8", "replace")).digest()[:8], "big")
        z = max(-2.5, min(2.5, random.Random(seed).gauss(0.0, 1.0)))
        return round(self.median_tokens * math.exp(self.sigma * z))


def family(strategy_label: str) -> str | None:
    """The agent a strategy label (``codex@limit_fraction=0.5``, ``cline:sdk``) belongs to."""
    name = strategy_label.split("@", 1)[0].split(":", 1)[0]
    return next((f for prefix, f in STRATEGY_FAMILY.items() if name.startswith(prefix)), None)


NOT_AUTOMATIC = frozenset({"manual", "unrecorded"})
"""Triggers whose summaries are left out: the user's /compact, and compactions whose trigger the log
does not say (Claude Code 1.0.x). Each agent's own word for an automatic one counts ("auto",
Copilot CLI's "threshold")."""


def _short(source: str) -> str:
    """A file's name, or for a transcript the Entire CLI keeps in git (``…/<2hex>/<10hex>/<n>/full.jsonl``)
    its checkpoint path, so that two sessions' summaries are not both named ``full.jsonl``."""
    p = Path(source)
    return "/".join(p.parts[-4:]) if p.name in ("full.jsonl", "raw_transcript") else p.name


def fit(traces: Iterable[Trace]) -> dict[str, SizeFit]:
    """Per agent, a log-normal over the cl100k size of its automatic recorded summaries, plus ``pooled``."""
    from bench.tokens.counter import Tokenizer

    tokenizer = Tokenizer(UNIT)
    rows_by_agent: dict[str, list[tuple[int, int, str]]] = {}
    for t in traces:
        for c in t.compactions:
            if c.trigger not in NOT_AUTOMATIC and c.summary.strip():
                rows_by_agent.setdefault(t.agent, []).append(
                    (tokenizer.count(c.summary), len(c.summary), t.source or t.id))
    fits: dict[str, SizeFit] = {}
    for agent, rows in sorted(rows_by_agent.items()):
        logs = [math.log(n) for n, _, _ in rows]
        sigma = statistics.stdev(logs) if len(logs) > 1 else 0.0
        files = sorted({_short(src) for _, _, src in rows})
        fits[agent] = SizeFit(round(math.exp(statistics.fmean(logs))), round(max(sigma, SIGMA_FLOOR), 3),
                              round(math.exp(statistics.fmean(math.log(c) for _, c, _ in rows))),
                              len(rows), f"fitted on {len(rows)} automatic summaries: {', '.join(files)}")
    if fits:
        medians = [math.log(f.median_tokens) for f in fits.values()]
        spread = statistics.stdev(medians) if len(medians) > 1 else 0.0
        fits["pooled"] = SizeFit(
            round(math.exp(statistics.fmean(medians))), SIGMA_FLOOR,
            round(math.exp(statistics.fmean(math.log(f.median_chars) for f in fits.values()))),
            sum(f.n for f in fits.values()),
            "assumed for agents with no recorded summary: geometric mean of the medians of "
            f"{', '.join(a for a in fits)} (they differ by a factor of {math.exp(spread):.1f} in sigma), "
            "the per-summary spread floor as sigma")
    return fits


@lru_cache(maxsize=1)
def stored() -> dict[str, SizeFit]:
    """The fit kept in bench/data/summary_sizes.toml."""
    with DATA.open("rb") as f:
        data = tomllib.load(f)
    return {name: SizeFit(**row) for name, row in data["agents"].items()}


def size_fit(strategy_label: str) -> tuple[str, SizeFit]:
    """(agent, fit) for a strategy's summaries: its agent's own fit, else the pooled one."""
    fits = stored()
    agent = family(strategy_label)
    if agent in fits:
        return agent, fits[agent]
    return "pooled", fits["pooled"]


def to_toml(fits: dict[str, SizeFit]) -> str:
    lines = ["# Summary sizes per agent, in cl100k tokens (log-normal: median, sigma of ln tokens).",
             "# Written by `python -m bench.summarizers.sizes ../shared/traces --write`; refitted by a test.", ""]
    for name, f in fits.items():
        lines += [f'[agents."{name}"]', f"median_tokens = {f.median_tokens}", f"sigma = {f.sigma}",
                  f"median_chars = {f.median_chars}", f"n = {f.n}",
                  f"source = {_quote(f.source)}", ""]
    return "\n".join(lines)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(argv: list[str] | None = None) -> int:
    from traces.formats import load

    parser = argparse.ArgumentParser(prog="python -m bench.summarizers.sizes", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="trace files or folders (e.g. ../shared/traces)")
    parser.add_argument("--write", action="store_true", help=f"store the fit in {DATA.name}")
    args = parser.parse_args(argv)
    fits = fit(load(args.paths, lenient=True).traces)
    if not fits:
        print("no automatic recorded summaries in " + ", ".join(args.paths), file=sys.stderr)
        return 2
    print(f"{'agent':14} {'n':>3} {'median tokens':>14} {'sigma':>6} {'median chars':>13}  source")
    for name, f in fits.items():
        print(f"{name:14} {f.n:>3} {f.median_tokens:>14,.0f} {f.sigma:>6.3f} {f.median_chars:>13,.0f}  {f.source}")
    if args.write:
        DATA.write_text(to_toml(fits), encoding="utf-8")
        print(f"wrote {DATA}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
