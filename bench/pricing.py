"""Model profiles (prices, windows) and the prompt-cache model that splits a call's input.

A call's prompt is split into cache-read (the longest common prefix, at message granularity,
with a request written to the cache within its lifetime), cache-write (the rest, where the
provider bills writes: Anthropic at x1.25 for 5 min or x2 for 1 h) and uncached (the rest
elsewhere, e.g. OpenAI and Gemini implicit caching). Below the model's minimum cacheable prefix
nothing is cached (pricing.md §1.1). Rewriting an old message breaks the prefix from there on:
this is how a strategy can save tokens and still cost more (evaluation.md §D).
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from dataclasses import replace as dc_replace
from functools import lru_cache
from importlib import resources
from itertools import compress, repeat
from operator import add, is_not
from typing import Any

from bench.prefix import first_difference

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}


class UnknownModelError(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Rates:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write_5m: float | None = None
    cache_write_1h: float | None = None


@dataclass(frozen=True)
class ModelProfile:
    id: str
    provider: str
    rates: Rates
    context_window: int
    max_output: int
    min_cache_prefix: int
    max_input: int | None = None
    tier_threshold: int | None = None
    above: Rates | None = None
    """Long-context rates that apply to the whole request once its prompt exceeds tier_threshold."""
    base: str = ""
    """The table entry an alias resolves to (empty for the entry itself). ``id`` stays the id the
    session used, so a policy keyed on the model family sees ``gpt-5.1-codex``, not ``gpt-5.1``
    (strategies/codex.py's truncation policy)."""
    price_source: str = ""
    window_source: str = ""

    @property
    def canonical_id(self) -> str:
        """The price table's entry for this model (the id itself unless it is an alias)."""
        return self.base or self.id

    @property
    def bills_cache_writes(self) -> bool:
        return self.rates.cache_write_5m is not None

    def fits(self, prompt_tokens: int, output_tokens: int) -> bool:
        """Would the provider accept this request? (prompt within max_input; prompt+output within window)."""
        if self.max_input is not None and prompt_tokens > self.max_input:
            return False
        return prompt_tokens + output_tokens <= self.context_window

    def rates_for(self, prompt_tokens: int) -> Rates:
        if self.above is not None and self.tier_threshold is not None and prompt_tokens > self.tier_threshold:
            return self.above
        return self.rates

    def cost(self, *, uncached: int, cache_read: int, cache_write: int, output: int, ttl: str = "5m") -> float:
        """Dollars for one call with this split."""
        r = self.rates_for(uncached + cache_read + cache_write)
        write_rate = (r.cache_write_1h if ttl == "1h" else r.cache_write_5m) or r.input
        micro = uncached * r.input + cache_read * r.cache_read + cache_write * write_rate + output * r.output
        return micro / 1e6

    def cost_without_cache(self, prompt_tokens: int, output: int) -> float:
        r = self.rates_for(prompt_tokens)
        return (prompt_tokens * r.input + output * r.output) / 1e6


def _rates(d: dict[str, Any], prefix: str = "") -> Rates:
    return Rates(
        input=d[prefix + "input"],
        output=d[prefix + "output"],
        cache_read=d[prefix + "cache_read"],
        cache_write_5m=d.get(prefix + "cache_write_5m"),
        cache_write_1h=d.get(prefix + "cache_write_1h"),
    )


def _profiles(raw: dict[str, Any]) -> dict[str, ModelProfile]:
    table: dict[str, ModelProfile] = {}
    for model_id, d in raw["models"].items():
        p = ModelProfile(
            id=model_id,
            provider=d["provider"],
            rates=_rates(d),
            context_window=d["context_window"],
            max_output=d["max_output"],
            min_cache_prefix=d["min_cache_prefix"],
            max_input=d.get("max_input"),
            tier_threshold=d.get("tier_threshold"),
            above=_rates(d, "above_") if "above_input" in d else None,
        )
        table[model_id] = p
        for alias in d.get("aliases", ()):
            table[alias] = dc_replace(p, id=alias, base=model_id)  # same prices, the id as used
    return table


@lru_cache(maxsize=1)
def price_table() -> tuple[str, dict[str, ModelProfile]]:
    """(table id, profiles by model id and alias) from bench/data/prices.toml."""
    raw = tomllib.loads(resources.files("bench").joinpath("data/prices.toml").read_text(encoding="utf-8"))
    return raw["table_id"], _profiles(raw)


_EXTRA: dict[str, ModelProfile] = {}
"""Profiles added with ``--prices FILE`` (``add_prices``); they take precedence over the bundled table."""


def add_prices(path: str) -> list[str]:
    """Read a TOML file of the bundled table's schema (``[models."id"]`` with provider, input,
    output, cache_read, context_window, max_output, min_cache_prefix, ...) and price its models."""
    from pathlib import Path

    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        table = _profiles(raw)
    except OSError as e:
        raise ValueError(f"{path}: cannot read the price file ({e.strerror})") from None
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path}: not TOML ({e})") from None
    except KeyError as e:
        raise ValueError(f"{path}: a [models.\"id\"] entry lacks {e}; "
                         "see bench/data/prices.toml for the schema") from None
    _EXTRA.update(table)
    return sorted(table)


RECORDED = "recorded"
"""``--model recorded`` (the default): each trace windowed and priced as the model it recorded (per
call); a trace that records none (a synthetic one) as ``DEFAULT_MODEL``. ``--model X`` forces X on all."""
DEFAULT_MODEL = "claude-sonnet-4-5"
"""What a trace that records no model (a synthetic one) is run as under ``--model recorded``."""
NO_MODEL = frozenset({"", "<synthetic>", "replay"})
"""Recorded "models" that name no priced model: Claude Code's ``<synthetic>`` (messages it wrote itself)
and SWE-agent's ``replay`` (a trajectory replayed without any model call)."""
_AIDER_CACHE_MARK = "\u26a1"
"""aider appends a lightning mark to the announced model when prompt caching is on (aider-ai/aider
commit 4d36518, ``Coder.get_announcements``), so ``Model: claude-3-5-sonnet-20240620\u26a1`` names the model
without it; the aider importer keeps the banner's word as is."""


def recorded_id(model: str | None) -> str | None:
    """The model id a trace or call recorded, without decorations; None when it names no model."""
    if model is None:
        return None
    model = model.strip().removesuffix(_AIDER_CACHE_MARK).strip()
    return None if model in NO_MODEL else model


def profile_for(model_id: str, trace_model: str | None) -> ModelProfile:
    """The run's model, or under ``recorded`` the trace's own (``DEFAULT_MODEL`` when it has none)."""
    if model_id != RECORDED:
        return profile(model_id)
    return profile(recorded_id(trace_model) or DEFAULT_MODEL)


def profile(model_id: str) -> ModelProfile:
    """The profile of an exact model id or alias; unknown ids are refused, never priced at $0."""
    _, table = price_table()
    if model_id in _EXTRA:
        return _EXTRA[model_id]
    if model_id in table:
        return table[model_id]
    import difflib

    close = difflib.get_close_matches(model_id, [*table, *_EXTRA], n=3)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise UnknownModelError(
        f"no price for model {model_id!r}.{hint} Write its prices and window in a TOML file of the schema of "
        f"bench/data/prices.toml and pass it with --prices FILE. Known: {', '.join(sorted(table))}")


@dataclass(frozen=True)
class CacheSplit:
    cache_read: int
    cache_write: int
    uncached: int
    prefix_break: bool
    """A cached request existed within its lifetime but this one re-used less than all of it."""

    @property
    def prompt(self) -> int:
        return self.cache_read + self.cache_write + self.uncached


@dataclass
class _Entry:
    messages: tuple[Any, ...]
    sums: list[int]
    """Running token sums: ``sums[i]`` is the tokens of ``messages[:i + 1]``. The list may run on
    past this request (entries that extend one another share it), so only ``len(messages)`` count."""
    written_at: float
    stream: str
    counted: int = 0
    """From here on each step of ``sums`` is the count of this request's own message there (before
    it, a step may be an earlier request's, for a value-equal message)."""

    @property
    def total(self) -> int:
        return self.sums[len(self.messages) - 1] if self.messages else 0


ALIGNED_MIN = 64
"""Positions past the shared prefix from which ``_tail_sums`` takes steps by position: on fewer,
counting each message is cheaper than the slicing."""


class PromptCache:
    """The provider-side prefix cache of one conversation with one model.

    Keeps the most recent cached requests (an agent's own request and a summarizer's request are
    separate entries, as real cache lines are) and looks each new request up by the longest
    common prefix at message granularity. Token counts are taken only for what a request adds to
    the last one it shares a prefix with (running sums, extended in place when it extends it, cut
    back in place when no kept entry reads past the shared prefix), and only the previous request
    is compared in full: each other entry's common prefix follows from the one it had with the
    previous request, so a growing conversation costs each call its new messages, not its whole
    history.
    """

    MAX_ENTRIES = 4

    def __init__(self, model: ModelProfile, ttl: str = "5m") -> None:
        self.model = model
        self.ttl = ttl
        self.ttl_seconds = TTL_SECONDS[ttl]
        self._entries: list[_Entry] = []
        self._last: _Entry | None = None
        """The previous request, cached or not and however old: its running sums are reused."""
        self._common: dict[int, int] = {}
        """id of an entry in ``_entries`` → the length of its common prefix with ``_last``."""

    def _commons(self, msgs: tuple[Any, ...]) -> list[tuple[_Entry, int]]:
        """Each candidate entry (``_entries``, then ``_last``) with its common prefix with ``msgs``.

        With k = common(e, last) and c = common(last, msgs): common(e, msgs) is k when k < c and c
        when k > c (equality is transitive, and at the first position one pair differs the other
        agrees); only k == c needs a look past it.
        """
        last = self._last
        c = first_difference(last.messages, msgs) if last is not None else 0
        out: list[tuple[_Entry, int]] = []
        for e in (*self._entries, *([last] if last is not None else [])):
            k = c if e is last else self._common.get(id(e))
            if k is None:
                n = first_difference(e.messages, msgs)
            elif k != c:
                n = min(k, c)
            else:
                n = c if e is last else first_difference(e.messages, msgs, k)
            out.append((e, n))
        return out

    def request(
        self, messages: Sequence[Any], counts: Sequence[int] | Callable[[Any], int], now: float,
        stream: str = "agent",
    ) -> CacheSplit:
        """Split one request; ``counts`` is each message's tokens, or a function giving them;
        ``stream`` tells the agent's requests from a summarizer's."""
        msgs = tuple(messages)
        alive = [e for e in self._entries if now - e.written_at <= self.ttl_seconds]
        best_tokens, best_entry = 0, None
        reuse, reuse_n = None, 0
        alive_ids = {id(e) for e in alive}
        commons = self._commons(msgs)
        for e, n in commons:
            if n > reuse_n:
                reuse, reuse_n = e, n
            if id(e) in alive_ids and n and e.sums[n - 1] > best_tokens:
                best_tokens, best_entry = e.sums[n - 1], e
        if best_tokens < self.model.min_cache_prefix:
            best_tokens, best_entry = 0, None
        previous = next((e for e in reversed(alive) if e.stream == stream), None)
        prefix_break = previous is not None and best_tokens < previous.total
        known = reuse.sums if reuse is not None else []
        tail = self._tail_sums(msgs, counts, reuse, reuse_n)
        total = tail[-1] if tail else known[reuse_n - 1] if reuse_n else 0
        cacheable = total >= self.model.min_cache_prefix
        kept = [e for e in alive if e is not previous] if cacheable else alive
        if len(known) == reuse_n or (reuse is not None and all(e.sums is not known for e in kept)):
            # extended in place (entries that extend one another share the list: each reads only its
            # own length), or cut back to the shared prefix first when no entry kept reads past it
            del known[reuse_n:]
            known += tail
            sums = known
        else:
            sums = known[:reuse_n] + tail
        rest = total - best_tokens
        if cacheable and self.model.bills_cache_writes:
            split = CacheSplit(best_tokens, rest, 0, prefix_break)
        else:
            split = CacheSplit(best_tokens, 0, rest, prefix_break)
        if best_entry is not None:
            best_entry.written_at = now  # a hit refreshes the lifetime
        entry = _Entry(msgs, sums, now, stream, reuse_n)
        self._last = entry
        # The new request extends (or replaces) its stream's previous line when it can be cached.
        self._entries = [*kept, entry][-self.MAX_ENTRIES:] if cacheable else alive
        self._common = {id(e): n for e, n in commons}
        return split

    @staticmethod
    def _tail_sums(msgs: tuple[Any, ...], counts: Sequence[int] | Callable[[Any], int],
                   reuse: _Entry | None, n: int) -> list[int]:
        """Cumulative tokens of ``msgs`` from position ``n`` on, the first ``n`` being those of
        ``reuse`` (the entry sharing the longest prefix). Past ``n``, where ``reuse`` counted its own
        messages, a position holding the same object as there takes its step (found at C speed): a
        request that rewrites a few old positions (a re-cut, a mask) counts those, not everything
        after the first."""
        known = reuse.sums if reuse is not None else []
        out: list[int] = []
        acc = known[n - 1] if n else 0
        start = n
        if reuse is not None and callable(counts):
            old = reuse.messages
            lo, hi = max(n, reuse.counted), min(len(old), len(msgs))
            if hi - lo >= ALIGNED_MIN:
                for i in range(n, lo):
                    acc += counts(msgs[i])
                    out.append(acc)
                delta, prev = acc - (known[lo - 1] if lo else 0), lo  # step p: known[p] + delta
                for p in compress(range(lo, hi), map(is_not, old[lo:hi], msgs[lo:hi])):
                    out.extend(map(add, known[prev:p], repeat(delta, p - prev)))
                    delta += counts(msgs[p]) - known[p] + (known[p - 1] if p else 0)
                    out.append(known[p] + delta)
                    prev = p + 1
                out.extend(map(add, known[prev:hi], repeat(delta, hi - prev)))
                acc, start = known[hi - 1] + delta, hi
        if callable(counts):
            for m in msgs[start:]:
                acc += counts(m)
                out.append(acc)
        else:
            for i in range(start, len(msgs)):
                acc += counts[i]
                out.append(acc)
        return out
