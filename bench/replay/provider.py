"""The provider's side of a replay: which count is the run's truth, and how a request looks to it.

``shipped_counts`` picks a trace's counts once (attributed from recorded usage, a family's calibrated
model, a tokenizer, or Anthropic's count-tokens endpoint) for every strategy of the trace;
``ProviderView`` puts the unseen overhead in front of each request and takes off the reasoning the
provider no longer counts. Apart from bench.tokens.attribution because both need the model and
cache tables (bench.cost), which come after counting.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bench.cost.cache import CacheSplit, PromptCache
from bench.tokens.attribution import Attribution, ReasoningDrop, attribute
from bench.tokens.prefix import extend, grew_from
from traces.model import Message, Trace

if TYPE_CHECKING:
    from bench.tokens.counter import TokenCounter


class ProviderView:
    """How one replay's requests look to the provider: the overhead in front, old reasoning dropped.

    Without an adopted attribution (synthetic traces, plain tokenizer runs) the overhead is 0 and
    nothing is dropped, so requests are exactly the strategy's messages; so it is with no ``trace``
    (where ``__deepcopy__`` starts from).
    """

    def __init__(self, trace: Trace | None, counter: TokenCounter) -> None:
        self.counter = counter
        self.attribution: Attribution | None = counter.attribution(trace.id) if trace is not None else None
        self._heads: dict[int, Message] = {}
        self._last_request: tuple[Message | None, tuple[Message, ...], tuple[Message, ...]] = (None, (), ())
        """(head, messages, the request sent for them) of the last agent request."""
        drop = ReasoningDrop(trace, self.attribution, counter) if trace is not None and self.attribution else None
        self._drop: ReasoningDrop | None = drop if drop else None
        self._tok: Callable[[Message], int] = counter.truth if self.ratio == 1.0 else counter.truth_in(self.ratio)
        """Each message's count in the provider's units, bound once (``request`` runs every call)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> ProviderView:
        """A copy of exactly this state, each part deep-copied with ``memo`` as ``copy.deepcopy`` copies a
        plain object. Said outright because the compiled class (bench/cli/native.py) has no default copy
        (the twin fork, bench.replay.loop._Loop.fork, copies the provider view)."""
        new = ProviderView(None, copy.deepcopy(self.counter, memo))
        memo[id(self)] = new
        new.attribution = copy.deepcopy(self.attribution, memo)
        new._heads = copy.deepcopy(self._heads, memo)
        new._last_request = copy.deepcopy(self._last_request, memo)
        new._drop = copy.deepcopy(self._drop, memo)
        # A function of the counter alone: the same one while the counter is shared (as the fork shares
        # it), else bound to the copy. Never copied itself: a compiled counter's ``truth_in`` function has no copy.
        new._tok = self._tok if new.counter is self.counter else \
            new.counter.truth if new.ratio == 1.0 else new.counter.truth_in(new.ratio)
        return new

    def overhead_at(self, call: int) -> int:
        return self.attribution.overhead_at(call) if self.attribution else 0

    @property
    def ratio(self) -> float:
        """Provider tokens per tokenizer token for text the strategy writes (1 without attribution)."""
        return self.attribution.ratio if self.attribution else 1.0

    def head(self, overhead: int) -> Message | None:
        """The overhead as one stable message object, first in every request the cache ledger sees."""
        if not overhead:
            return None
        m = self._heads.get(overhead)
        if m is None:
            m = Message.text_message("system", "", meta={"overhead": overhead})
            self.counter.adopt([m], [overhead])
            self._heads[overhead] = m
        return m

    def _with_head(self, head: Message, messages: tuple[Message, ...]) -> tuple[Message, ...]:
        """``(head, *messages)``, grown from the last such request when ``messages`` grew from its
        messages (the prompt cache then compares nothing it already saw)."""
        last_head, last, last_request = self._last_request
        if head is last_head and grew_from(messages, last):
            request = extend(last_request, messages[len(last):]) if len(messages) > len(last) else last_request
        else:
            request = (head, *messages)
        self._last_request = (head, messages, request)
        return request

    def dropped(self, messages: tuple[Message, ...], call: int) -> int:
        """Tokens of these messages the provider no longer counts at this call (old reasoning)."""
        return self._drop(messages, call) if self._drop is not None else 0

    def prompt(self, sent: Any, call: int) -> int:
        """The provider's prompt size of a context sent at this call (overhead included)."""
        return sent.truth - self.dropped(sent.messages, call)

    def request(self, cache: PromptCache, messages: tuple[Message, ...], overhead: int, now: float,
                call: int) -> CacheSplit:
        """The cache split of one request, its provider prompt size equal to overhead + messages − dropped."""
        head = self.head(overhead)
        split = cache.request(self._with_head(head, messages) if head is not None else messages, self._tok, now)
        dropped = self._drop(messages, call) if self._drop is not None else 0
        if not dropped:
            return split
        # The dropped reasoning lies in the prefix: taken off what the ledger read from the cache first.
        read = min(split.cache_read, dropped)
        rest = dropped - read
        write = min(split.cache_write, rest)
        return CacheSplit(split.cache_read - read, split.cache_write - write,
                          max(split.uncached - (rest - write), 0), split.prefix_break)


TRUTHS = ("provider", "cl100k", "o200k", "anthropic")
"""``--truth``: ``provider`` (attributed from recorded usage, else the family's calibrated model
for Claude and OpenAI models, else cl100k), ``cl100k`` / ``o200k`` (that tokenizer over the
transcript, no overhead; both offline, bench/tokens/counter.py) or ``anthropic`` (the count-tokens
endpoint, bench/tokens/count_tokens.py)."""


def calibrated_attribution(trace: Trace, counter: TokenCounter, model: str | None) -> Attribution | None:
    """Counts from the family's fitted token model (bench/tokens/calibration.py) for a trace without usage."""
    from bench.cost.pricing import DEFAULT_MODEL, RECORDED
    from bench.tokens.calibration import calibrated, calibrated_counts

    fitted = calibrated(trace.model or (DEFAULT_MODEL if model == RECORDED else model))
    if fitted is None:
        return None
    counts = calibrated_counts(fitted, trace.messages, counter)
    note = f"calibrated {fitted.family} token model: {fitted.describe()}"
    return Attribution(counts, ((0, fitted.overhead),), (), fitted.ratio, (note,))


def shipped_counts(trace: Trace, counter: TokenCounter, *, model: str | None = None,
                   truth: str = "provider") -> Attribution | list[int]:
    """What the runner computes once per trace and ships to workers (``truth`` as ``TRUTHS``):
    provider-attributed counts where the trace records usage, else the calibrated family model of
    its model (or the run's ``model``), else our tokenizer's. ``counter`` keeps its tokenizer counts
    (for ``usage_ratio``)."""
    if truth not in TRUTHS:
        raise ValueError(f"unknown --truth {truth!r}; known: {', '.join(TRUTHS)}")
    if truth == "cl100k":
        return counter.counts(trace.messages)
    if truth == "o200k":
        from bench.tokens.counter import TokenCounter, Tokenizer

        return TokenCounter(Tokenizer("o200k_base")).counts(trace.messages)
    if truth == "anthropic":
        from bench.cost.pricing import DEFAULT_MODEL, RECORDED
        from bench.tokens.count_tokens import anthropic_attribution

        claude = trace.model or (DEFAULT_MODEL if model in (None, RECORDED) else model)
        if not claude.startswith("claude"):
            raise ValueError(f"--truth anthropic counts Claude models only; {trace.source or trace.id} is {claude}")
        return anthropic_attribution(trace, claude)
    return (attribute(trace, counter) or calibrated_attribution(trace, counter, model)
            or counter.counts(trace.messages))


def adopt_shipped(counter: TokenCounter, trace: Trace, counts: Attribution | list[int]) -> None:
    """A worker's side of ``shipped_counts``."""
    if isinstance(counts, Attribution):
        counter.adopt_attribution(trace, counts)
    else:
        counter.adopt(trace.messages, counts, hold=True)  # the trace's own: held as long as it lives
