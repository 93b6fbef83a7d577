"""The strategy catalogue: every built-in strategy by name, imported lazily.

A name maps to ``"module:Class"`` plus the parameters that make a named variant. Users add their
own without editing this file: ``--strategies mypkg.mod:MyStrategy`` (a module path) or an entry
point in the group ``compaction_bench.strategies``. Parameters override defaults with
``name@key=value,key=value`` on the command line.

Adding a built-in strategy:
1. write ``strategies/<family>.py`` with one frozen-dataclass subclass of ``Strategy``, the real
   agent's defaults as field defaults and the source cited in its docstring;
2. add its name (and variants) to ``REGISTRY`` below;
3. add ``tests/strategies/test_<family>.py``; the contract suite picks it up by itself.
"""

from __future__ import annotations

import ast
import difflib
import importlib
import inspect
from dataclasses import fields, is_dataclass
from importlib.metadata import entry_points
from typing import Any

from strategies._tools import drop_range, rewrite_results
from strategies.base import HOOKS, Event, Outcome, Strategy, StrategySpec, event

__all__ = [
    "REGISTRY",
    "ENTRY_POINT_GROUP",
    "Event",
    "Outcome",
    "Strategy",
    "StrategySpec",
    "StrategyError",
    "build",
    "drop_range",
    "event",
    "names",
    "parse_spec",
    "resolve",
    "rewrite_results",
]

ENTRY_POINT_GROUP = "compaction_bench.strategies"

REGISTRY: dict[str, tuple[str, dict[str, Any]]] = {
    "none": ("strategies.none:NoCompaction", {}),
    "opencode": ("strategies.opencode:OpenCode", {}),
    "opencode:tail": ("strategies.opencode:OpenCode", {"generation": "tail"}),
    "cline-half": ("strategies.cline:Cline", {"keep": "half"}),
    "cline-quarter": ("strategies.cline:Cline", {"keep": "quarter"}),
    "cline:sdk": ("strategies.cline:ClineSdk", {}),
    "codex": ("strategies.codex:Codex", {}),
    "codex:2025": ("strategies.codex:Codex", {"auto_compact_limit": 256_000, "limit_fraction": None,
                                              "history_form": "bridge"}),
    "five-layer": ("strategies.layered:FiveLayer", {}),
    "claude-code": ("strategies.layered:ClaudeCode", {}),
    "claude-code:microcompact": ("strategies.layered:ClaudeCode", {"microcompact_idle_seconds": 3_600}),
    "amp": ("strategies.amp:Amp", {}),
    "amp:handoff": ("strategies.amp:Amp", {"mode": "handoff"}),
    "baseagent": ("strategies.baseagent:BaseAgent", {}),
    "baseagent:long-tasks": ("strategies.baseagent:BaseAgent", {"threshold": 0.70, "prune_protect": 30_000}),
    "baseagent:complex-tasks": ("strategies.baseagent:BaseAgent", {"threshold": 0.90, "prune_protect": 60_000}),
    "anthropic-clear-tool-uses": ("strategies.anthropic_clear:AnthropicClearToolUses", {}),
    "observation-masking": ("strategies.masking:ObservationMasking", {}),
    "llm-summary": ("strategies.masking:LLMSummary", {}),
    "hybrid": ("strategies.masking:Hybrid", {}),
    "openhands": ("strategies.openhands:LLMSummarizing", {}),
    "openhands:gpt5": ("strategies.openhands:LLMSummarizing", {"max_size": 80, "keep_first": 4}),
    "openhands:v0": ("strategies.openhands:LLMSummarizing", {"generation": "v0", "max_size": 120, "keep_first": 4}),
    "openhands:masking": ("strategies.openhands:ObservationMasking", {}),
    "openhands:recent": ("strategies.openhands:RecentEvents", {}),
    "openhands:amortized": ("strategies.openhands:AmortizedForgetting", {}),
    "aider": ("strategies.aider:Aider", {}),
    "goose": ("strategies.goose:Goose", {}),
    "swe-agent": ("strategies.swe_agent:LastNObservations", {}),
    "tiered-placeholders": ("strategies.tiered:TieredPlaceholders", {}),
}


class StrategyError(ValueError):
    """A strategy name, path or parameter that cannot be used; the message says why."""


def _entry_points() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def names() -> list[str]:
    return sorted({*REGISTRY, *_entry_points()})


def _load_class(target: str, *, origin: str) -> type[Strategy]:
    module_name, _, attr = target.partition(":")
    if not attr:
        raise StrategyError(f"{origin}: {target!r} is not of the form 'module:Class'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise StrategyError(f"{origin}: cannot import module {module_name!r} ({e})") from None
    cls = getattr(module, attr, None)
    if cls is None:
        raise StrategyError(f"{origin}: module {module_name!r} has no attribute {attr!r}")
    validate_class(cls, origin=origin)
    return cls


def validate_class(cls: Any, *, origin: str) -> None:
    """Refuse a class that could not run in the replay, naming what is missing."""
    if not inspect.isclass(cls):
        raise StrategyError(f"{origin}: {cls!r} is not a class")
    if not is_dataclass(cls):
        raise StrategyError(f"{origin}: {cls.__name__} must be a (frozen) dataclass of its parameters")
    if not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        raise StrategyError(f"{origin}: {cls.__name__} must be frozen (@dataclass(frozen=True))")
    for hook in HOOKS:
        fn = getattr(cls, hook, None)
        if not callable(fn):
            raise StrategyError(f"{origin}: {cls.__name__} has no callable hook {hook!r}")
        n_args = len(inspect.signature(fn).parameters)
        if n_args != 3:
            raise StrategyError(
                f"{origin}: {cls.__name__}.{hook} must take (self, ctx, session), it takes {n_args} arguments"
            )
    if not getattr(cls, "name", ""):
        raise StrategyError(f"{origin}: {cls.__name__} needs a class attribute 'name'")


def resolve(name: str) -> tuple[type[Strategy], dict[str, Any]]:
    """The class and preset parameters for a registry name, entry point or ``module:Class``."""
    if name in REGISTRY:
        target, preset = REGISTRY[name]
        return _load_class(target, origin=f"strategy {name!r}"), dict(preset)
    eps = _entry_points()
    if name in eps:
        return _load_class(eps[name], origin=f"entry point {name!r} ({ENTRY_POINT_GROUP})"), {}
    module_name, sep, attr = name.partition(":")
    if sep and "." in module_name or (sep and attr[:1].isupper()):
        return _load_class(name, origin=f"strategy {name!r}"), {}
    close = difflib.get_close_matches(name, names(), n=3, cutoff=0.5)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise StrategyError(f"unknown strategy {name!r}.{hint} Known: {', '.join(names())}")


def _coerce(value: str) -> Any:
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value


def parse_spec(text: str) -> StrategySpec:
    """``name`` or ``name@key=value,key=value`` → StrategySpec (values parsed as Python literals)."""
    name, _, rest = text.partition("@")
    params: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise StrategyError(f"strategy {text!r}: parameter {item!r} is not key=value")
        params[key.strip()] = _coerce(value.strip())
    return StrategySpec(name.strip(), params)


def build(spec: StrategySpec | str) -> Strategy:
    """Instantiate a strategy from its spec, refusing parameters its dataclass does not declare."""
    if isinstance(spec, str):
        spec = parse_spec(spec)
    cls, preset = resolve(spec.name)
    allowed = {f.name for f in fields(cls)}
    unknown = sorted(set(spec.params) - allowed)
    if unknown:
        raise StrategyError(
            f"strategy {spec.name!r} has no parameter {', '.join(map(repr, unknown))}; "
            f"it takes: {', '.join(sorted(allowed))}"
        )
    try:
        return cls(**{**preset, **spec.params})
    except (TypeError, ValueError) as e:
        raise StrategyError(f"strategy {spec.name!r}: {e}") from None
