"""The summaries the real agent wrote: replay a real trace with its own compaction summaries.

A real session that compacted (Claude Code's ``isCompactSummary`` record, an OpenCode summary
message, …) holds the summary its model wrote at that point. Using it in place of a generated
one removes the summarizer from the comparison: what differs between strategies is then only
*when* they compact and *what they keep verbatim*, which is what a fidelity check asks.

A request is answered with the first recorded summary written after the newest trace message it
contains (the compaction the real agent made from about that history); past the last recorded
compaction, with the last one. A trace without recorded summaries (a synthetic session) falls
back to the extractive summarizer, and the summary's model says so in summaries.jsonl.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.summarizers import Summary, SummaryRequest
from bench.summarizers.extractive import ExtractiveSummarizer
from traces.model import Trace


@dataclass(frozen=True)
class RecordedSummarizer:
    trace: Trace | None = None
    """The trace being replayed (the runner passes it; None only when validating the name)."""
    fallback: ExtractiveSummarizer = field(default_factory=ExtractiveSummarizer)
    name: str = "recorded"

    def summarize(self, request: SummaryRequest) -> Summary:
        recorded = [c for c in (self.trace.compactions if self.trace else ()) if c.summary.strip()]
        if not recorded:
            s = self.fallback.summarize(request)
            return Summary(s.text, s.input_tokens, s.output_tokens, model=f"{self.fallback.name} (no recorded summary)")
        position = {id(m): i for i, m in enumerate(self.trace.messages)} if self.trace else {}
        newest = max((position[id(m)] for m in request.messages if id(m) in position), default=-1)
        chosen = next((c for c in recorded if c.message_index > newest), recorded[-1])
        return Summary(chosen.summary, input_tokens=0, output_tokens=0, model=f"recorded:{self.trace.agent}")
