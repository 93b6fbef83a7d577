"""The value strategies transform: an immutable message tuple with running token totals.

Totals are kept as running sums over per-message cached counts, so a strategy can test a
threshold in O(1) on every call; only a rewrite (which touches many messages anyway) re-sums.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import compress
from operator import is_not

from bench.tokens.counter import TokenCounter
from bench.tokens.prefix import derived, extend
from traces.model import Message


@dataclass(frozen=True)
class Meter:
    """A token counter bound to the estimator of one strategy."""

    counter: TokenCounter
    estimator: str = "chars/4"
    overhead: int = 0
    """Provider tokens sent with every request that no message carries (system prompt, tool
    schemas: ``bench.tokens.attribution``); part of every Context's ``truth``, so no strategy can drop it."""
    ratio: float = 1.0
    """Provider tokens per tokenizer token of the session (``Attribution.ratio``): what a strategy
    writes is counted at it (``TokenCounter.truth_at``); recorded messages keep their attributed count."""
    _est: Callable[[Message], int] = field(init=False, repr=False, compare=False)
    _tok: Callable[[Message], int] = field(init=False, repr=False, compare=False)
    """The counter's own functions, bound once: a replay asks them a million times, and each
    wrapper frame in between cost as much as the (cached) lookup itself."""

    def __post_init__(self) -> None:
        counter = self.counter
        tok = counter.truth if self.ratio == 1.0 else counter.truth_in(self.ratio)
        est = tok if self.estimator == "truth" else partial(counter.estimate, estimator=self.estimator)
        object.__setattr__(self, "_tok", tok)
        object.__setattr__(self, "_est", est)
        # ``truth`` and ``estimate`` below, called by strategies 500K times a bench, answered by these
        # functions directly (an instance attribute comes before a method): no wrapper frame.
        object.__setattr__(self, "truth", tok)
        object.__setattr__(self, "estimate", est)

    def estimate(self, m: Message) -> int:
        return self._est(m)

    def truth(self, m: Message) -> int:
        return self._tok(m)

    def context(self, messages: Iterable[Message]) -> Context:
        msgs = tuple(messages)
        return Context(msgs, sum(map(self._est, msgs)), self.overhead + sum(map(self._tok, msgs)), self)


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
        meter = self.meter
        return Context(extend(self.messages, msgs), self.estimate + sum(map(meter._est, msgs)),
                       self.truth + sum(map(meter._tok, msgs)), meter)

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
            gone: Sequence[Message] = [old[i] for i in changed if i < len(old)]  # a tuple below: typed
            came: Sequence[Message] = [new[i] for i in changed]  # once, as a compiled build needs
        else:  # fewer messages: count what lies between the common head and the common tail
            n = len(new)
            head = next(compress(range(n), map(is_not, old, new)), n)
            changed = [head]
            tail = next(compress(range(n - head), map(is_not, reversed(old), reversed(new))), n - head)
            gone, came = old[head:len(old) - tail], new[head:n - tail]
        derived(new, old, changed[0] if changed else len(old))  # what came before stays known
        if len(gone) + len(came) > len(new):
            return self.meter.context(new)
        est, tok = self.meter._est, self.meter._tok
        return Context(
            new,
            self.estimate + sum(map(est, came)) - sum(map(est, gone)),
            self.truth + sum(map(tok, came)) - sum(map(tok, gone)),
            self.meter,
        )

    def patch(self, changes: Mapping[int, Message], added: tuple[Message, ...] = ()) -> Context:
        """These messages with ``changes`` (position → message) put in place and ``added`` appended.

        For a view that rewrites a few known positions each call (masking): the totals move by the
        changed messages only, with no pass over the others to find what changed (``replace``).
        Without changes it is an ``append`` (so the result is known to grow from these messages).
        """
        changes = {i: m for i, m in changes.items() if self.messages[i] is not m}
        if not changes:
            return self.append(*added) if added else self
        msgs = list(self.messages)
        est, tok = self.meter._est, self.meter._tok
        estimate, truth = self.estimate, self.truth
        for i, m in changes.items():
            old = msgs[i]
            estimate += est(m) - est(old)
            truth += tok(m) - tok(old)
            msgs[i] = m
        msgs += added
        new = tuple(msgs)
        derived(new, self.messages, min(changes))
        return Context(new, estimate + sum(map(est, added)), truth + sum(map(tok, added)), self.meter)

    def est(self, m: Message) -> int:
        return self.meter._est(m)

    def tok(self, m: Message) -> int:
        return self.meter._tok(m)

    @property
    def system(self) -> Message | None:
        return self.messages[0] if self.messages and self.messages[0].role == "system" else None

    def human_turn_indices(self) -> list[int]:
        return [i for i, m in enumerate(self.messages) if m.is_human_turn]
