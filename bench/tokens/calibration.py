"""Calibrated provider counts where a trace records no usage (synthetic sessions, bare logs).

Per provider family, a token model fitted on the recorded sessions in ../shared/traces: provider
tokens per ``base`` token (``ratio``, pooled over the clean steps of every session: prompt growth
between two calls without a compaction, a human turn or a model switch, over our count of what
was appended; ``bench.tokens.attribution.session_ratio``) plus the family's typical fixed overhead (the
median over sessions of what the first call holds beyond its messages: system prompt, tools).

Each family is fitted against its provider's nearest public tokenizer (``base``): Claude models
against cl100k_base, OpenAI models against o200k_base (offline, bench/tokens/counter.py). The Codex sessions
in ../shared/traces are redacted (every string replaced by filler of the recorded length), so the
OpenAI ratio describes the importer's filler, not real text: it is stored but flagged.

Content kinds were tried too: the ratio fitted per kind of message (``content_kind``: code, prose,
JSON, logs) by least squares over the clean steps, against the single pooled ratio, on the same
held-out calls. The command prints both; the stored ``default`` names the one with the lower
held-out median error per family, and ``calibrated_counts`` uses it.

The fit is stored in bench/data/token_calibration.toml with how it was made; ``python -m
bench.tokens.calibration_fit [TRACES…]`` refits, prints the held-out error (each session predicted by a
model fitted on the others) and, with ``--write``, rewrites the file. A test refits and compares.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

KINDS = ("code", "prose", "json", "logs")

_LOG_LINE = re.compile(
    r"^\s*(\[?\d{4}-\d\d-\d\d|\[?\d\d:\d\d:\d\d|\[?(TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\b|Traceback|"
    r"File \"|at \S+ \(|\S+\.\w+:\d+(:\d+)?[:\s]|npm (ERR|WARN)|PASSED|FAILED|ok \d|not ok|[-rwxd]{10} |\$ )")
_CODE_LINE = re.compile(
    r"(^\s*(def|class|import|from \S+ import|function|const|let|var|return|if|for|while|fn|pub|use|#include|package|"
    r"func|public|private|@\w+)\b)|([{};)(,:]\s*$)|(^\s*[}\])]+[;,]?\s*$)|(^\s*(//|#|/\*|\*) )")


def content_kind(text: str) -> str:
    """A message's kind, by a simple heuristic over its rendered text (``bench.tokens.counter.render``):
    ``json`` if it (or what follows a tool name) parses as a JSON object or array; else ``logs`` if at
    least 30% of its non-blank lines look like log/test/shell output (a timestamp, a level, a stack frame,
    ``path:line:``, PASSED/FAILED, an ``ls -l`` row, a ``$`` prompt); else ``code`` if at least 40% look
    like code (a keyword at the start, a bracket/colon/semicolon at the end, a comment marker); else
    ``prose``. Good enough to tell tokenizers' behaviour apart; not a language detector."""
    stripped = text.strip()
    if not stripped:
        return "prose"
    for candidate in (stripped, stripped.split(" ", 1)[-1]):
        if candidate[:1] in "{[":
            try:
                json.loads(candidate)
                return "json"
            except ValueError:
                pass
    lines = [line for line in stripped.splitlines() if line.strip()]
    if sum(1 for line in lines if _LOG_LINE.search(line)) >= 0.3 * len(lines):
        return "logs"
    if sum(1 for line in lines if _CODE_LINE.search(line)) >= 0.4 * len(lines):
        return "code"
    return "prose"


@dataclass(frozen=True)
class FamilyModel:
    family: str
    ratio: float
    """Provider tokens per ``base`` token (message framing included)."""
    overhead: int
    """Typical tokens of the fixed part every request carries (system prompt, tool schemas)."""
    sessions: int = 0
    steps: int = 0
    held_out_median: float | None = None
    held_out_p90: float | None = None
    note: str = ""
    base: str = "cl100k_base"
    """The tokenizer the ratios multiply (tiktoken encoding name)."""
    kind_ratios: tuple[tuple[str, float], ...] = ()
    """Provider tokens per ``base`` token for each content kind (``content_kind``); empty: not fitted."""
    kind_held_out_median: float | None = None
    kind_held_out_p90: float | None = None
    default: str = "single"
    """Which model ``calibrated_counts`` uses: ``single`` (``ratio``) or ``kinds`` (``kind_ratios``)."""

    def prompt(self, ours: int) -> int:
        return self.overhead + round(ours * self.ratio)

    def kind_prompt(self, ours: dict[str, int]) -> int:
        ratios = dict(self.kind_ratios)
        return self.overhead + round(sum(n * ratios.get(k, self.ratio) for k, n in ours.items()))

    def ratio_of(self, kind: str) -> float:
        return dict(self.kind_ratios).get(kind, self.ratio) if self.default == "kinds" else self.ratio

    def describe(self) -> str:
        base = self.base.removesuffix("_base")
        if self.default == "kinds":
            return ", ".join(f"{k} x{r}" for k, r in self.kind_ratios) + f" {base} + {self.overhead} overhead"
        return f"x{self.ratio} {base} + {self.overhead} overhead"


def family_of(model: str | None) -> str | None:
    """The provider family of a model id: anthropic (claude-*), openai (gpt-*, o*), else None."""
    m = (model or "").lower()
    if m.startswith("claude"):
        return "anthropic"
    if m.startswith(("gpt", "o1", "o3", "o4", "codex")):
        return "openai"
    return None


def counter_for(family: str) -> Any:
    """A fresh token counter on the family's ``base`` tokenizer."""
    return _base_counter(BASES.get(family, "cl100k_base"))


BASES = {"anthropic": "cl100k_base", "openai": "o200k_base"}
"""Which public tokenizer each family is fitted against (the issue: OpenAI models on o200k_base)."""


def calibrated_counts(model: FamilyModel, messages: Sequence[Any], counter: Any) -> tuple[int, ...]:
    """Provider counts of these messages under a fitted model: the ``base`` tokenizer's count (``counter``
    when it is that tokenizer, else a fresh one) times the model's ratio for the message's kind."""
    from bench.tokens.counter import render

    if getattr(getattr(counter, "tokenizer", None), "name", None) != model.base:
        counter = _base_counter(model.base)
    ours = counter.counts(messages)
    if model.default != "kinds":
        return tuple(round(n * model.ratio) for n in ours)
    return tuple(round(n * model.ratio_of(content_kind(render(m)))) for m, n in zip(messages, ours, strict=True))


def _base_counter(base: str) -> Any:
    from bench.tokens.counter import TokenCounter, Tokenizer

    return TokenCounter(Tokenizer(base))


def _stored_text() -> str:
    return resources.files("bench").joinpath("data/token_calibration.toml").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def calibration_key() -> str:
    """A hash of the stored fit, part of every task key: a refit never resumes rows counted with the old one."""
    import hashlib

    return hashlib.sha256(_stored_text().encode()).hexdigest()[:16]


@lru_cache(maxsize=1)
def stored() -> dict[str, FamilyModel]:
    """The fitted models in bench/data/token_calibration.toml."""
    raw = tomllib.loads(_stored_text())
    out = {}
    for name, d in raw["families"].items():
        kinds = tuple((k, float(r)) for k, r in d.pop("kind_ratios", {}).items())
        out[name] = FamilyModel(family=name, kind_ratios=kinds, **d)
    return out


def calibrated(model: str | None) -> FamilyModel | None:
    """The stored token model for a model id's family (None: no calibration, plain cl100k)."""
    family = family_of(model)
    return stored().get(family) if family else None

