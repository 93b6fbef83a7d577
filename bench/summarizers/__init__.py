"""Summarizers: what a strategy calls when it needs an LLM to write a summary.

``extractive`` (offline, deterministic, the default) builds a bounded summary from the messages
themselves; ``recorded`` answers with the summaries a real trace already holds; ``anthropic``
calls the real API through the official SDK. Every summarizer returns its text and the usage of
the call, which the replay bills as its own ledger row.

Adding a summarizer: 1. write ``bench/summarizers/<name>.py`` with a class that has
``summarize(request) -> Summary``; 2. add it to ``SUMMARIZERS``; 3. test it offline.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from traces.model import Message

__all__ = ["SUMMARIZERS", "Summary", "SummaryRequest", "Summarizer", "SummarizerError", "build"]


class SummarizerError(ValueError):
    """A summarizer that cannot run (no API key, unknown model, an unusable response)."""


@dataclass(frozen=True)
class SummaryRequest:
    messages: tuple[Message, ...]
    """The history to summarize, as the strategy sends it."""
    prompt: str
    """The strategy's own summary instructions (appended as the last user message)."""
    max_tokens: int
    """The output budget the strategy gives the summary."""
    strategy: str = ""


@dataclass(frozen=True)
class Summary:
    text: str
    input_tokens: int
    output_tokens: int
    model: str
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    billed: bool = False
    """True when the usage came from a real provider response (the replay then bills it as is)."""


class Summarizer(Protocol):
    name: str

    def summarize(self, request: SummaryRequest) -> Summary: ...


SUMMARIZERS: dict[str, str] = {
    "extractive": "bench.summarizers.extractive:ExtractiveSummarizer",
    "anthropic": "bench.summarizers.anthropic:AnthropicSummarizer",
    "recorded": "bench.summarizers.recorded:RecordedSummarizer",
}
PER_TRACE = frozenset({"recorded"})
"""Summarizers built per trace (the runner passes ``trace=``)."""


def build(name: str, **kwargs: Any) -> Summarizer:
    try:
        target = SUMMARIZERS[name]
    except KeyError:
        raise SummarizerError(f"unknown summarizer {name!r}; known: {', '.join(SUMMARIZERS)}") from None
    module, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    return cls(**kwargs)  # type: ignore[no-any-return]


def transcript(messages: Sequence[Message]) -> str:
    """A plain-text rendering of messages, for summarizers that send text."""
    from bench.tokens.counter import render

    return "\n\n".join(f"[{m.role}] {render(m)}" for m in messages)
