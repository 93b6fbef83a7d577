"""The value strategies transform: an immutable message tuple with running token totals.

Totals are kept as running sums over per-message cached counts, so a strategy can test a
threshold in O(1) on every call; only a rewrite (which touches many messages anyway) re-sums.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from bench.tokens import TokenCounter
from traces.model import Message


@dataclass(frozen=True)
class Meter:
    """A token counter bound to the estimator of one strategy."""

    counter: TokenCounter
    estimator: str = "chars/4"

    def estimate(self, m: Message) -> int:
        return self.counter.estimate(m, self.estimator)

    def truth(self, m: Message) -> int:
        return self.counter.truth(m)

    def context(self, messages: Iterable[Message]) -> Context:
        msgs = tuple(messages)
        return Context(
            msgs,
            sum(self.estimate(m) for m in msgs),
            sum(self.truth(m) for m in msgs),
            self,
        )


@dataclass(frozen=True)
class Context:
    messages: tuple[Message, ...]
    estimate: int
    """Sum of the strategy's own estimate over the messages (what the agent believes)."""
    truth: int
    """Sum of tokenizer counts (what the provider would bill)."""
    meter: Meter = field(compare=False, repr=False)

    def __len__(self) -> int:
        return len(self.messages)

    def append(self, *msgs: Message) -> Context:
        return Context(
            self.messages + msgs,
            self.estimate + sum(self.meter.estimate(m) for m in msgs),
            self.truth + sum(self.meter.truth(m) for m in msgs),
            self.meter,
        )

    def replace(self, messages: Iterable[Message]) -> Context:
        """A new context with these messages (counts come from the shared cache)."""
        return self.meter.context(messages)

    def est(self, m: Message) -> int:
        return self.meter.estimate(m)

    def tok(self, m: Message) -> int:
        return self.meter.truth(m)

    @property
    def system(self) -> Message | None:
        return self.messages[0] if self.messages and self.messages[0].role == "system" else None

    def human_turn_indices(self) -> list[int]:
        return [i for i, m in enumerate(self.messages) if m.is_human_turn]
