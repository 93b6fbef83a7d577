"""What a strategy sees of the running agent besides its context.

The session carries the model profile, the provider-reported usage of the previous call (as the
agent would see it: several agents trigger on it, one call late), the call index and clock, the
strategy's own memory across calls (``state``), and ``summarize`` for the LLM-backed families.
A summary call is billed as its own ledger row by the replay.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.context.messages import Meter
from bench.cost.pricing import ModelProfile
from bench.summarizers import Summarizer, Summary, SummaryRequest
from traces.model import Message, Usage


@dataclass
class Session:
    model: ModelProfile
    meter: Meter
    summarizer: Summarizer
    strategy: str = ""
    call_index: int = 0
    now: float = 0.0
    """Seconds since the session started (recorded timestamps, else a fixed pace per call)."""
    last_usage: Usage | None = None
    """Usage of the previous agent call as the provider would report it (prompt in input_tokens)."""
    state: dict[str, Any] = field(default_factory=dict)
    """The strategy's memory across calls (e.g. Cline's growing deleted range)."""
    on_summary: Callable[[SummaryRequest, Summary], None] | None = None

    def summarize(self, messages: Sequence[Message], *, prompt: str, max_tokens: int) -> Summary:
        """Ask the summarizer; the usage is measured (or taken from the provider) and billed."""
        request = SummaryRequest(tuple(messages), prompt, max_tokens, self.strategy)
        summary = self.summarizer.summarize(request)
        if not summary.billed:
            counter = self.meter.counter
            input_tokens = sum(counter.truth(m) for m in request.messages) + counter.text(prompt)
            summary = Summary(
                text=summary.text,
                input_tokens=input_tokens,
                output_tokens=counter.text(summary.text),
                model=summary.model,
            )
        if self.on_summary is not None:
            self.on_summary(request, summary)
        return summary
