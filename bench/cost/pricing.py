"""Model profiles (prices, windows) and the prompt-cache model that splits a call's input.

Where a profile comes from (``profile``), first found wins:
1. ``--prices FILE`` entries (``add_prices``);
2. bench/data/prices.toml: only what genai-prices lacks or what an agent applies differently, each
   entry with its ``why`` (a partial entry replaces the library's fields it gives);
3. genai-prices (pydantic/genai-prices, MIT; about 2,300 models bundled, offline): prices, cache
   prices (read, 5-minute and 1-hour writes), long-context tiers and windows;
4. a stated fallback by family (claude → Anthropic, gpt/o/codex → OpenAI, gemini → Google, else a
   generic default): a model no table knows is priced and flagged, never refused, unless ``strict``.
Every profile says where its price and its window came from (``price_source``, ``window_source``).

The prompt cache (``PromptCache``, ``CacheSplit``) lives in bench/cost/cache.py, compiled with mypyc
(every call of every replay runs it; the tables here run once per model), and is re-exported here.
A call's prompt is split into cache-read (the longest common prefix, at message granularity,
with a request written to the cache within its lifetime), cache-write (the rest, where the
provider bills writes: Anthropic at x1.25 for 5 min or x2 for 1 h) and uncached (the rest
elsewhere, e.g. OpenAI and Gemini implicit caching). Below the model's minimum cacheable prefix
nothing is cached (pricing.md §1.1). Rewriting an old message breaks the prefix from there on:
this is how a strategy can save tokens and still cost more (evaluation.md §D).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from dataclasses import replace as dc_replace
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from functools import lru_cache
from importlib import resources
from importlib.metadata import version as _dist_version
from typing import Any

# The cache split lives apart, compiled (bench/cost/cache.py); re-exported here, where callers import it.
from bench.cost.cache import TTL_SECONDS, CacheSplit, PromptCache  # noqa: F401

LIBRARY = f"genai-prices {_dist_version('genai-prices')}"
"""The price library and its version: named in every source string and hashed into each task key."""
PRICED_AT = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
"""The moment genai-prices' dated prices are read at. Fixed, so a result does not change with the day
it is run (the library holds scheduled price changes and time-of-day rates); moved on purpose only."""
ONE_M = "[1m]"
"""Claude Code's model suffix for the 1M-context opt-in (the Entire metadata records it too)."""
ONE_M_WINDOW = 1_000_000


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
    """The entry an alias resolves to (empty for the entry itself). ``id`` stays the id the
    session used, so a policy keyed on the model family sees ``gpt-5.1-codex``, not ``gpt-5.1``
    (strategies/codex/strategy.py's truncation policy)."""
    price_source: str = ""
    """Where the rates came from: ``genai-prices 0.2.3: anthropic/claude-opus-4-7``, ``prices.toml: <why>``,
    ``--prices FILE`` or ``fallback: unknown model, priced as ...``."""
    window_source: str = ""
    """Where ``context_window`` came from, in the same words."""

    @property
    def canonical_id(self) -> str:
        """The price table's entry for this model (the id itself unless it is an alias)."""
        return self.base or self.id

    @property
    def is_fallback(self) -> bool:
        """Priced by the stated fallback: no table knows this model."""
        return self.price_source.startswith("fallback")

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


# --- the tables: fields, validation -------------------------------------------------------------------

RATE_FIELDS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")
PRICE_FIELDS = (*RATE_FIELDS, *(f"above_{f}" for f in RATE_FIELDS))
SIZE_FIELDS = ("context_window", "max_output", "max_input", "tier_threshold")
"""Positive integers."""
ENTRY_FIELDS = frozenset({*PRICE_FIELDS, *SIZE_FIELDS, "min_cache_prefix", "provider", "aliases", "why",
                          "same_as"})


def _check_entry(where: str, model_id: str, d: Any) -> dict[str, Any]:
    """One ``[models."id"]`` entry, its values checked (issue 23: a negative, NaN or infinite price, or a
    window that is not a positive integer, would ship a negative or absurd dollar figure)."""
    if not isinstance(d, dict):
        raise ValueError(f"{where}: [models.{model_id!r}] is not a table")
    for field, value in d.items():
        bad = ""
        if field in PRICE_FIELDS:
            if isinstance(value, bool) or not isinstance(value, int | float):
                bad = "is not a number"
            elif not math.isfinite(value) or value < 0:
                bad = "must be a finite price of 0 or more (USD per million tokens)"
        elif field in SIZE_FIELDS:
            if isinstance(value, bool) or not isinstance(value, int):
                bad = "must be a whole number of tokens"
            elif value <= 0:
                bad = "must be a positive number of tokens"
        elif field == "min_cache_prefix":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                bad = "must be a whole number of tokens, 0 or more"
        elif field in ("provider", "why", "same_as"):
            bad = "" if isinstance(value, str) else "must be a string"
        elif field == "aliases":
            bad = "" if isinstance(value, list) and all(isinstance(a, str) for a in value) else "must be a list of ids"
        else:
            bad = "is not a field of the schema (see bench/data/prices.toml)"
        if bad:
            raise ValueError(f"{where}: model {model_id!r}: {field} = {value!r} {bad}")
    return dict(d)


def _entries(raw: dict[str, Any], where: str, source: Callable[[str, dict[str, Any]], str]
             ) -> dict[str, dict[str, Any]]:
    """Entries by lower-cased id and alias, each with its key and its source string."""
    models = raw.get("models", {})
    if not isinstance(models, dict):
        raise ValueError(f"{where}: `models` must be a table of [models.\"id\"] entries")
    table: dict[str, dict[str, Any]] = {}
    for model_id, d in models.items():
        entry = _check_entry(where, model_id, d)
        entry["_key"], entry["_source"] = model_id, source(model_id, entry)
        for name in (model_id, *entry.get("aliases", ())):
            table[name.lower()] = entry
    return table


@dataclass(frozen=True)
class _Rule:
    match: tuple[str, ...]
    fields: dict[str, Any]
    source: str
    providers: tuple[str, ...] = ()

    def fits(self, names: Sequence[str], provider: str | None = None) -> bool:
        return (provider is not None and provider.lower() in self.providers) or any(
            fnmatchcase(n, p) for n in names for p in self.match)


@dataclass(frozen=True)
class _Table:
    table_id: str
    models: dict[str, dict[str, Any]]
    limits: tuple[_Rule, ...]
    fallbacks: tuple[_Rule, ...]


@lru_cache(maxsize=1)
def _table() -> _Table:
    where = "bench/data/prices.toml"
    raw = tomllib.loads(resources.files("bench").joinpath("data/prices.toml").read_text(encoding="utf-8"))
    models = _entries(raw, where, lambda key, e: f"prices.toml: {e.get('why') or key}")
    missing = sorted({e["_key"] for e in models.values() if not e.get("why")})
    if missing:
        raise ValueError(f"{where}: every entry says why; {', '.join(missing)} does not")
    limits = tuple(_Rule(tuple(r["match"]), {k: r[k] for k in ("max_output", "min_cache_prefix", "max_input")
                                             if k in r}, r["source"]) for r in raw.get("limits", ()))
    fallbacks = tuple(_Rule(tuple(r["match"]), {k: v for k, v in r.items() if k in ENTRY_FIELDS | {"priced_as",
                                                                                                  "family"}},
                            r["why"], tuple(r.get("providers", ()))) for r in raw.get("fallback", ()))
    return _Table(raw["table_id"], models, limits, fallbacks)


_EXTRA: dict[str, dict[str, Any]] = {}
"""Entries added with ``--prices FILE`` (``add_prices``), by lower-cased id; they come before all else."""


def add_prices(path: str) -> list[str]:
    """Read a TOML file of the bundled table's schema (``[models."id"]`` with input, output,
    context_window, and optionally cache_read, cache_write_5m/1h, max_output, min_cache_prefix, ...) and
    price its models. An entry for a model genai-prices knows may give only what it changes."""
    from pathlib import Path

    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise ValueError(f"{path}: cannot read the price file ({e.strerror})") from None
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path}: not TOML ({e})") from None
    table = _entries(raw, path, lambda key, e: f"--prices {path}")
    for entry in {id(e): e for e in table.values()}.values():
        if "same_as" in entry:
            continue
        have = {**_library_fields(entry["_key"], entry.get("provider"))[0], **entry}
        lacking = [f for f in ("input", "output", "context_window") if f not in have]
        if lacking:
            raise ValueError(f"{path}: model {entry['_key']!r} lacks {lacking[0]!r} (and {LIBRARY} does not "
                             "know it); see bench/data/prices.toml for the schema")
    if any(_EXTRA.get(k) != v for k, v in table.items()):
        _EXTRA.update(table)
        changed()
    return sorted({e["_key"] for e in table.values()})


_USED: list[tuple[tuple[tuple[str, bytes | None], ...], int] | None] = [None]
"""The files (path, text) ``use_prices`` last set ``_EXTRA`` to in this process, and ``_CHANGES`` then."""
_CHANGES = [0]
"""How many times the ``--prices`` entries changed in this process (``changed``)."""


def use_prices(paths: Sequence[str]) -> None:
    """Set the ``--prices`` entries to exactly those of ``paths``, as a fresh process that read them would
    have them: what a pool worker does before each job (issue 28: one pool serves every run of a command,
    so a replay's extra prices, robustness's 1M window, must not reach the next run's jobs). A file is
    read (not parsed) to see that nothing changed; a change is parsed and clears what was priced before."""
    from pathlib import Path

    def text(path: str) -> bytes | None:
        try:
            return Path(path).read_bytes()
        except OSError:
            return None  # add_prices below says why, as it would have

    files = tuple((path, text(path)) for path in paths)
    if _USED[0] == (files, _CHANGES[0]) and _CACHED_FOR[0] is _EXTRA:  # nothing changed since: the usual case
        return
    _USED[0] = None  # a file that fails to parse leaves nothing half-set behind as current
    if _EXTRA:
        _EXTRA.clear()
        changed()
    for path in paths:
        add_prices(path)
    _USED[0] = (files, _CHANGES[0])


_ON_CHANGE: list[Callable[[], None]] = []
"""What else remembers a profile (bench.replay.loop.recorded_profile), forgotten with ``_resolve``'s cache."""


def on_change(forget: Callable[[], None]) -> None:
    """Call ``forget`` whenever the ``--prices`` entries change (a memo of profiles is stale then)."""
    _ON_CHANGE.append(forget)


def changed() -> None:
    """The ``--prices`` entries (``_EXTRA``) changed: every profile resolved before is stale."""
    _CHANGES[0] += 1
    _resolve.cache_clear()
    for forget in _ON_CHANGE:
        forget()


# --- genai-prices ---------------------------------------------------------------------------------------

_LIB_FIELDS = {"input": ("input_mtok",), "output": ("output_mtok",), "cache_read": ("cache_read_mtok",),
               "cache_write_5m": ("cache_write_5m_mtok", "cache_write_mtok"),
               "cache_write_1h": ("cache_write_1h_mtok",)}


@lru_cache(maxsize=4096)
def _library_fields(name: str, provider: str | None) -> tuple[dict[str, Any], str]:
    """(fields in this table's schema, "provider/model id") of genai-prices' row for ``name``; ({}, "")
    when it has none. A long-context tier becomes tier_threshold and above_*: the lowest tier's start
    (every tier in the data starts at one threshold for all fields but two OpenRouter rows)."""
    from genai_prices import data_snapshot
    from genai_prices.types import TieredPrices

    snapshot = data_snapshot.get_snapshot()
    try:
        prov, model = snapshot.find_provider_model(name, None, provider, None)
    except LookupError:
        return {}, ""
    price = model.get_prices(PRICED_AT)
    values = {field: next((v for k in keys if (v := getattr(price, k, None)) is not None), None)
              for field, keys in _LIB_FIELDS.items()}
    starts = [v.tiers[0].start for v in values.values() if isinstance(v, TieredPrices) and v.tiers]
    out: dict[str, Any] = {"provider": prov.id}
    threshold = min(starts) if starts else None
    for field, v in values.items():
        if v is None:
            continue
        if isinstance(v, TieredPrices):
            out[field] = float(v.base)
            at = [t.price for t in v.tiers if t.start == threshold]
            out[f"above_{field}"] = float(at[0]) if at else float(v.base)
        else:
            out[field] = float(v)
            if threshold is not None:
                out[f"above_{field}"] = float(v)
    if threshold is not None:
        out["tier_threshold"] = threshold
    if model.context_window:
        out["context_window"] = int(model.context_window)
    return out, f"{prov.id}/{model.id}"


def _library_ids() -> list[str]:
    from genai_prices import data_snapshot

    return [m.id for p in data_snapshot.get_snapshot().providers for m in p.models]


# --- resolution -------------------------------------------------------------------------------------------

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


def profile_for(model_id: str, trace_model: str | None, *, strict: bool = False) -> ModelProfile:
    """The run's model, or under ``recorded`` the trace's own (``DEFAULT_MODEL`` when it has none)."""
    if model_id != RECORDED:
        return profile(model_id, strict=strict)
    return profile(recorded_id(trace_model) or DEFAULT_MODEL, strict=strict)


def profile(model_id: str, provider: str | None = None, *, strict: bool = False) -> ModelProfile:
    """The profile of a model id as an agent recorded it (dated, provider-prefixed, ``[1m]``), served
    by ``provider`` when given (e.g. ``github-copilot``, whose windows can be smaller than the model's
    own). A model no table knows gets the stated fallback (``is_fallback``); ``strict`` refuses it."""
    if _CACHED_FOR[0] is not _EXTRA:  # the --prices entries were replaced (a test's monkeypatch)
        changed()
        _CACHED_FOR[0] = _EXTRA
    p = _resolve(model_id.strip(), provider.lower() if provider else None)
    if strict and p.is_fallback:
        raise UnknownModelError(refusal(model_id, p))
    return p


_CACHED_FOR: list[dict[str, dict[str, Any]]] = [_EXTRA]
"""The ``_EXTRA`` that ``_resolve``'s cache was filled with."""


def refusal(model_id: str, fallback: ModelProfile) -> str:
    """The two-line refusal of an unknown model under ``--strict-prices``."""
    import difflib

    names = [*(e["_key"] for e in _EXTRA.values()), *(e["_key"] for e in _table().models.values()),
             *_library_ids()]
    close = difflib.get_close_matches(model_id.lower(), list(dict.fromkeys(names)), n=3)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    return (f"no price for model {model_id!r} in prices.toml or {LIBRARY}.{hint}\n"
            f"  Pass --prices FILE (bench/data/prices.toml's schema), or drop --strict-prices to run it "
            f"{fallback.price_source.removeprefix('fallback: unknown model, ')}.")


def fallback_note(model_id: str, p: ModelProfile) -> str:
    """The one warning line a run prints for a model priced by the fallback."""
    return (f"model {model_id}: no price in prices.toml or {LIBRARY}; "
            f"{p.price_source.removeprefix('fallback: unknown model, ')}, window {p.context_window:,}; "
            "pass --prices FILE or --strict-prices")


def known(model_id: str) -> bool:
    """Whether a table prices this id (a ``--prices`` file, prices.toml or genai-prices)."""
    return not profile(model_id).is_fallback


def _names(ref: str) -> list[str]:
    """The id, then the id without each leading provider or gateway segment (``openrouter/anthropic/x``
    → ``anthropic/x`` → ``x``): lower-cased, as genai-prices matches."""
    parts = ref.lower().split("/")
    return ["/".join(parts[i:]) for i in range(len(parts)) if parts[i]]


def _lookup(table: dict[str, dict[str, Any]], names: Sequence[str]) -> dict[str, Any] | None:
    return next((table[n] for n in names if n in table), None)


def _layers() -> tuple[dict[str, dict[str, Any]], ...]:
    return (_EXTRA, _table().models)


def _library(names: Sequence[str], provider: str | None) -> tuple[dict[str, Any], str]:
    """genai-prices' row: the provider's own when one is given; else the most specific name the model's
    own provider knows (a gateway prefix is the list price of the model it routes to, as before); else
    the gateway's row."""
    if provider is not None:
        for name in names:
            fields, found = _library_fields(name, provider)
            if found:
                return fields, found
    for name in names:
        fields, found = _library_fields(name, None)
        if found:
            return fields, found
    for i, name in enumerate(names[:-1]):
        gateway = name.split("/", 1)[0]
        fields, found = _library_fields(names[i + 1], gateway)
        if found:
            return fields, found
    return {}, ""


@lru_cache(maxsize=1024)
def _resolve(model_id: str, provider: str | None) -> ModelProfile:
    ref, one_m = model_id, model_id.lower().endswith(ONE_M)
    if one_m:
        ref = model_id[: -len(ONE_M)]
    names = _names(ref)
    entry = next((e for layer in _layers() if (e := _lookup(layer, names)) is not None), None)
    if entry is not None and "same_as" in entry:
        same = _resolve(entry["same_as"], provider)
        return dc_replace(same, id=model_id, base=same.canonical_id, price_source=f"{entry['_source']} "
                          f"({same.price_source})", window_source=same.window_source)
    lib, found = _library([entry["_key"].lower()], provider) if entry else ({}, "")
    if not found:
        lib, found = _library(names, provider)
    if entry is None and found:
        lib_id = found.split("/", 1)[1].lower()
        entry = next((e for layer in _layers() if (e := layer.get(lib_id)) is not None), None)
    fields = dict(lib)
    if provider is not None and found and "context_window" not in lib:
        # the provider lists the model without a window: the model's own provider's, said so
        own, own_found = _library(names, None)
        if "context_window" in own:
            fields["context_window"] = own["context_window"]
            lib_window_source = f"{LIBRARY}: {own_found} ({provider} lists no window)"
        else:
            lib_window_source = ""
    else:
        lib_window_source = f"{LIBRARY}: {found}" if "context_window" in lib else ""
    mine = {k: v for k, v in (entry or {}).items() if not k.startswith("_") and k not in ("aliases", "why")}
    fields.update(mine)
    canonical = entry["_key"] if entry else (found.split("/", 1)[1] if found else "")
    patch = None
    if one_m:
        patch = next((e for layer in _layers() for n in (f"{canonical.lower()}{ONE_M}", *(f"{n}{ONE_M}" for n in names))
                      if (e := layer.get(n)) is not None), None)
        if patch is not None:
            fields.update({k: v for k, v in patch.items() if not k.startswith("_") and k not in ("aliases", "why")})
    price_source = (entry["_source"] if entry and "input" in mine else f"{LIBRARY}: {found}")
    if one_m and patch is not None:
        price_source += f"; {ONE_M} tier: {patch['_source']}"
    window_source = (entry["_source"] if entry and "context_window" in mine else lib_window_source)
    fallback_rule = None
    if "input" not in fields or "output" not in fields:
        fallback_rule = next(r for r in _table().fallbacks if r.fits(names, provider))
        fields = _fallback_fields(fallback_rule, fields)
        family = fallback_rule.fields.get("family", "generic")
        priced_as = fallback_rule.fields.get("priced_as")
        price_source = (f"fallback: unknown model, priced as {priced_as} ({family} default, stated)" if priced_as
                        else f"fallback: unknown model, priced as the generic default "
                             f"({fields['input']:g}/{fields['output']:g} per MTok, stated)")
        canonical = priced_as or ""
    if "context_window" not in fields:
        rule = fallback_rule or next(r for r in _table().fallbacks if r.fits(names, provider))
        fields["context_window"] = rule.fields["context_window"]
        window_source = (f"fallback: {rule.fields.get('family', 'generic')} default window "
                         f"{fields['context_window']:,} (stated)")
    window = fields["context_window"]
    if one_m and window < ONE_M_WINDOW:
        window = ONE_M_WINDOW
        window_source = f"{ONE_M}: the 1M-context opt-in"
    limit_names = [*names, canonical.lower(), *([found.split("/", 1)[1].lower()] if found else [])]
    limits = next((r.fields for r in _table().limits if r.fits(limit_names)), {})
    threshold = fields.get("tier_threshold")
    if threshold is not None and threshold >= window:
        threshold = None  # no accepted request exceeds it: the tier belongs to a longer opt-in window
    rates = Rates(input=fields["input"], output=fields["output"],
                  cache_read=fields.get("cache_read", fields["input"]),  # no cached rate: no discount
                  cache_write_5m=fields.get("cache_write_5m"), cache_write_1h=fields.get("cache_write_1h"))
    above = None
    if threshold is not None:
        above_input = fields.get("above_input", rates.input)
        above = Rates(input=above_input, output=fields.get("above_output", rates.output),
                      cache_read=fields.get("above_cache_read", rates.cache_read if "cache_read" in fields
                                            else above_input),
                      cache_write_5m=fields.get("above_cache_write_5m", rates.cache_write_5m),
                      cache_write_1h=fields.get("above_cache_write_1h", rates.cache_write_1h))
    base = canonical + (ONE_M if one_m else "")
    return ModelProfile(
        id=model_id,
        provider=fields.get("provider") or (found.split("/", 1)[0] if found else "unknown"),
        rates=rates,
        context_window=window,
        max_output=fields.get("max_output", limits.get("max_output", 32_768)),
        min_cache_prefix=fields.get("min_cache_prefix", limits.get("min_cache_prefix", 1_024)),
        max_input=fields.get("max_input", limits.get("max_input")),
        tier_threshold=threshold,
        above=above,
        base="" if base.lower() == model_id.lower() else base,
        price_source=price_source,
        window_source=window_source,
    )


def _fallback_fields(rule: _Rule, have: dict[str, Any]) -> dict[str, Any]:
    """The fields of a fallback profile: the rates of the family's default model (or the generic
    rule's own); the window is the family's standard one, kept only when no table gave one."""
    priced_as = rule.fields.get("priced_as")
    if priced_as:
        p = _resolve(priced_as, None)
        fields: dict[str, Any] = {f: getattr(p.rates, f) for f in RATE_FIELDS if getattr(p.rates, f) is not None}
        fields["provider"] = p.provider
        if p.above is not None:
            fields["tier_threshold"] = p.tier_threshold
            fields.update({f"above_{f}": getattr(p.above, f) for f in RATE_FIELDS if getattr(p.above, f) is not None})
    else:
        fields = {k: v for k, v in rule.fields.items() if k in PRICE_FIELDS or k == "provider"}
    if "context_window" in have:
        fields["context_window"] = have["context_window"]
    return fields


def price_table() -> tuple[str, dict[str, ModelProfile]]:
    """(table id, the profile of each prices.toml entry): the id names both tables and the price date."""
    table = _table()
    keys = dict.fromkeys(e["_key"] for e in table.models.values())
    return (f"{table.table_id} + {LIBRARY} at {PRICED_AT:%Y-%m-%d}",
            {k: _resolve(k, None) for k in keys})


def override_why(model_id: str) -> str:
    """The ``why`` of a prices.toml entry ('' when it has none)."""
    entry = _table().models.get(model_id.lower())
    return entry.get("why", "") if entry else ""
