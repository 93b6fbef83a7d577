"""LLM probes: ask a real model the needles' questions over the context a strategy left.

Exact presence (bench/scoring/probes.py) is an upper bound: Lost in Compaction (evaluation.md §0.4)
found keywords in 82-93% of compacted contexts while the model recalled 0-7%. This mode puts
the question to the model: the context *as sent* at the end of the trace, then one user message
with every stated needle's question, numbered, answered one line each. An answer is correct when
it holds the expected answer (normalized as for exact match; a path also by its last two parts).

One request per (trace, strategy), through the official SDK, cached on disk by the hash of the
request body like the summarizer's, so a rerun costs nothing. A context over the probe model's
window is not asked (its answers are empty, not wrong). Run-to-run spread is real even at
a fixed prompt: compare strategies on several traces, never on one answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.scoring.probes import Asker
from bench.summarizers import SummarizerError
from bench.summarizers.anthropic import (
    DEFAULT_MODEL,
    CachedMessages,
    default_cache_dir,
    response_text,
    to_messages_api,
)
from bench.tokens.counter import TokenCounter
from traces.model import Message, Needle

PROMPT = ("Answer each question below from the conversation above only, one line per question in the form "
          "`N. answer`, with the exact value (number, path, command, name) where there is one. Write `N. unknown` "
          "when the conversation does not say. Do not call tools.")
ANSWER_LINE = re.compile(r"^\s*\**\s*(\d+)\s*[.):]\s*\**\s*(.*?)\s*$")
"""``N. answer``, tolerating Markdown bold around the number (``**2.** answer``)."""
PER_QUESTION_TOKENS = 80
HEADROOM = 2_000
"""Tokens kept free of the probe model's window for the questions and the answers."""


def questions_prompt(needles: Sequence[Needle]) -> str:
    return PROMPT + "\n\n" + "\n".join(f"{i}. {n.question}" for i, n in enumerate(needles, 1))


def parse_answers(text: str, needles: Sequence[Needle]) -> dict[str, str | None]:
    """``N. answer`` lines → answer per needle id; a number the model skipped is an empty answer."""
    by_number: dict[int, str] = {}
    for line in text.splitlines():
        if (m := ANSWER_LINE.match(line)) is not None:
            by_number.setdefault(int(m.group(1)), m.group(2))
    return {n.id: by_number.get(i, "") for i, n in enumerate(needles, 1)}


class AnthropicProbe:
    """Asks Claude the needles' questions (``claude-haiku-4-5`` by default), cached on disk."""

    name = "anthropic"

    def __init__(self, *, model: str = DEFAULT_MODEL, api_key: str | None = None,
                 cache_dir: str | Path | None = None, max_retries: int = 4, http_client: Any = None,
                 counter: TokenCounter | None = None) -> None:
        from bench.cost.pricing import UnknownModelError, profile

        self.api = CachedMessages(
            api_key=api_key, max_retries=max_retries, http_client=http_client,
            cache_dir=Path(cache_dir) if cache_dir is not None else default_cache_dir().parent / "probes",
            who="the LLM probe", instead="score by exact match only (--probe exact)")
        try:
            self.window = profile(model, strict=True).context_window  # the id goes to a paid API: no guess
        except UnknownModelError as e:
            raise SummarizerError(f"LLM probe: {str(e).splitlines()[0]}") from None
        self.model = model
        self.counter = counter or TokenCounter()

    def request_body(self, messages: Sequence[Message], needles: Sequence[Needle]) -> dict[str, Any]:
        return {"model": self.model, "max_tokens": 256 + PER_QUESTION_TOKENS * len(needles),
                **to_messages_api(tuple(messages), questions_prompt(needles))}

    def __call__(self, messages: Sequence[Message], needles: Sequence[Needle]) -> dict[str, str | None]:
        if not needles:
            return {}
        if sum(self.counter.truth(m) for m in messages) + HEADROOM > self.window:
            return {n.id: None for n in needles}
        stored = self.api.answer(self.request_body(messages, needles),
                                 lambda r: {"text": response_text(r), "served_by": r.model})
        return parse_answers(stored["text"], needles)


PROBES: dict[str, type[AnthropicProbe] | None] = {"exact": None, "anthropic": AnthropicProbe}


def build(name: str, **kwargs: Any) -> Asker | None:
    """The asker for ``--probe NAME`` (None for exact match only)."""
    if name not in PROBES:
        raise SummarizerError(f"unknown probe mode {name!r}; known: {', '.join(PROBES)}")
    cls = PROBES[name]
    return None if cls is None else cls(**kwargs)
