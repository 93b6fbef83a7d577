"""The value strategies transform: an immutable message tuple with running token totals.

Totals are kept as running sums over per-message cached counts, so a strategy can test a
threshold in O(1) on every call; only a rewrite (which touches many messages anyway) re-sums.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import compress
from operator import is_not

from bench.tokens import TokenCounter
from traces.model import Message


@dataclass(frozen=True)
class Meter:
    """A token counter bound to the estimator of one strategy."""

    counter: TokenCounter
    estimator: str = "chars/4"
    overhead: int = 0
    """Provider tokens sent with every request that no message carries (system prompt, tool
    schemas: ``bench.attribution``); part of every Context's ``truth``, so no strategy can drop it."""

    def estimate(self, m: Message) -> int:
        return self.counter.estimate(m, self.estimator)

    def truth(self, m: Message) -> int:
        return self.counter.truth(m)

    def context(self, messages: Iterable[Message]) -> Context:
        msgs = tuple(messages)
        return Context(
            msgs,
            sum(self.estimate(m) for m in msgs),
            self.overhead + sum(self.truth(m) for m in msgs),
            self,
        )


@dataclass(frozen=True)
class Context:
    messages: tuple[Message, ...]
    estimate: int
    """Sum of the strategy's own estimate over the messages (what the agent believes)."""
    truth: int
    """Sum of tokenizer counts plus the meter's fixed overhead (what the provider would bill)."""
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

    def with_meter(self, meter: Meter) -> Context:
        """The same messages under another meter (the overhead changed: a model switch)."""
        return Context(self.messages, self.estimate, self.truth - self.meter.overhead + meter.overhead, meter)

    def replace(self, messages: Iterable[Message]) -> Context:
        """A new context with these messages (counts come from the shared cache).

        Totals move by the difference: only the messages that are not the same object at the same
        position (found at C speed) are counted, so an edit of a few messages costs a few lookups.
        """
        new = tuple(messages)
        old = self.messages
        if len(new) >= len(old):
            changed = [*compress(range(len(old)), map(is_not, old, new)), *range(len(old), len(new))]
            gone = [old[i] for i in changed if i < len(old)]
            came = [new[i] for i in changed]
        else:  # fewer messages: count what lies between the common head and the common tail
            n = len(new)
            head = next(compress(range(n), map(is_not, old, new)), n)
            tail = next(compress(range(n - head), map(is_not, reversed(old), reversed(new))), n - head)
            gone, came = old[head:len(old) - tail], new[head:n - tail]
        if len(gone) + len(came) > len(new):
            return self.meter.context(new)
        est, tok = self.meter.estimate, self.meter.truth
        return Context(
            new,
            self.estimate + sum(map(est, came)) - sum(map(est, gone)),
            self.truth + sum(map(tok, came)) - sum(map(tok, gone)),
            self.meter,
        )

    def est(self, m: Message) -> int:
        return self.meter.estimate(m)

    def tok(self, m: Message) -> int:
        return self.meter.truth(m)

    @property
    def system(self) -> Message | None:
        return self.messages[0] if self.messages and self.messages[0].role == "system" else None

    def human_turn_indices(self) -> list[int]:
        return [i for i, m in enumerate(self.messages) if m.is_human_turn]
