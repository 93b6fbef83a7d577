"""The strategy catalogue: every built-in strategy by name, imported lazily.

A name maps to ``"module:Class"`` plus the parameters that make a named variant. Users add their
own without editing this file: ``--strategies mypkg.mod:MyStrategy`` (a module path) or an entry
point in the group ``compaction_bench.strategies`` (``strategies.loading`` imports and checks them).
Parameters override defaults with ``name@key=value,key=value`` on the command line.

Adding a built-in strategy:
1. write ``strategies/<family>.py`` with one frozen-dataclass subclass of ``Strategy``, the real
   agent's defaults as field defaults and the source cited in its docstring; an agent with several
   generations or variants gets a folder, ``strategies/<agent>/``, a short module for each (at most
   about 300 lines: tests/strategies/test_layout.py) and what they share in ``_common.py``;
2. add its name (and variants) to ``REGISTRY`` below;
3. add ``tests/strategies/test_<family>.py``; the contract suite picks it up by itself.
"""

from __future__ import annotations

import ast
import difflib
import math
from collections.abc import Mapping
from dataclasses import MISSING, fields
from importlib.metadata import entry_points
from typing import Any

from bench.context import COUNT, FRACTION, Event, Outcome, Range, Strategy, StrategySpec, event
from strategies._tools import drop_range, rewrite_results
from strategies.loading import StrategyError, _is_path, _load_class, source_files, source_hash, validate_class

__all__ = [
    "REGISTRY",
    "ENTRY_POINT_GROUP",
    "Event",
    "Outcome",
    "Strategy",
    "StrategySpec",
    "StrategyError",
    "build",
    "check_params",
    "drop_range",
    "event",
    "names",
    "parse_spec",
    "resolve",
    "rewrite_results",
    "source_files",
    "source_hash",
    "validate_class",
]

ENTRY_POINT_GROUP = "compaction_bench.strategies"

REGISTRY: dict[str, tuple[str, dict[str, Any]]] = {
    "none": ("strategies.none:NoCompaction", {}),
    "opencode": ("strategies.opencode.strategy:OpenCode", {}),
    "opencode:tail": ("strategies.opencode.strategy:OpenCode", {"generation": "tail"}),
    "opencode:1.4": ("strategies.opencode.strategy:OpenCode", {"generation": "overflow"}),
    "cline-half": ("strategies.cline.context_manager:Cline", {"keep": "half"}),
    "cline-quarter": ("strategies.cline.context_manager:Cline", {"keep": "quarter"}),
    "cline:sdk": ("strategies.cline.sdk:ClineSdk", {}),
    "codex": ("strategies.codex.strategy:Codex", {}),
    "codex:2025": ("strategies.codex.strategy:Codex", {"auto_compact_limit": 256_000, "limit_fraction": None,
                                              "history_form": "bridge", "count_old_reasoning": False,
                                              "pre_turn_check": False}),
    "codex:0.140": ("strategies.codex.strategy:Codex", {"effective_window_percent": 95}),
    "codex:remote": ("strategies.codex.strategy:Codex", {"engine": "remote"}),
    "codex:0.125-remote": ("strategies.codex.strategy:Codex", {"engine": "remote", "remote_keeps_answers": False}),
    "codex:0.140-remote": ("strategies.codex.strategy:Codex", {"effective_window_percent": 95, "engine": "remote",
                                                      "remote_keeps_answers": False}),
    "five-layer": ("strategies.layered.five_layer:FiveLayer", {}),
    "claude-code": ("strategies.claude_code:ClaudeCode", {}),
    "claude-code:microcompact": ("strategies.claude_code:ClaudeCode", {"microcompact_idle_seconds": 3_600}),
    "claude-code:2.1.89": ("strategies.claude_code:ClaudeCode", {"reactive_fit": False}),
    "claude-code:2.1.76": ("strategies.claude_code:ClaudeCode", {"reactive_fit": False, "thrash_limit": None}),
    "claude-code:2.1.21": ("strategies.claude_code:ClaudeCode", {"reactive_fit": False, "thrash_limit": None,
                                                                 "max_autocompact_failures": None}),
    "claude-code:2.1.17": ("strategies.claude_code:ClaudeCode", {"reactive_fit": False, "thrash_limit": None,
                                                                 "max_autocompact_failures": None,
                                                                 "reserve_cap": 32_000, "restore_skills": False,
                                                                 "legacy_microcompact": True}),
    "claude-code:2.0": ("strategies.claude_code:ClaudeCode", {"reactive_fit": False, "thrash_limit": None,
                                                              "max_autocompact_failures": None, "reserve_cap": 32_000,
                                                              "restore_skills": False}),
    "claude-code:1.0": ("strategies.claude_code:ClaudeCode", {"reactive_fit": False, "thrash_limit": None,
                                                              "max_autocompact_failures": None, "reserve_cap": 32_000,
                                                              "restore_skills": False, "restore_file_tokens": 10_000}),
    "amp": ("strategies.amp:Amp", {}),
    "amp:handoff": ("strategies.amp:Amp", {"mode": "handoff"}),
    "baseagent": ("strategies.baseagent:BaseAgent", {}),
    "baseagent:long-tasks": ("strategies.baseagent:BaseAgent", {"threshold": 0.70, "prune_protect": 30_000}),
    "baseagent:complex-tasks": ("strategies.baseagent:BaseAgent", {"threshold": 0.90, "prune_protect": 60_000}),
    "anthropic-clear-tool-uses": ("strategies.anthropic_clear:AnthropicClearToolUses", {}),
    "observation-masking": ("strategies.masking:ObservationMasking", {}),
    "llm-summary": ("strategies.masking:LLMSummary", {}),
    "hybrid": ("strategies.masking:Hybrid", {}),
    "openhands": ("strategies.openhands.summarizing:LLMSummarizing", {}),
    "openhands:gpt5": ("strategies.openhands.summarizing:LLMSummarizing", {"max_size": 80, "keep_first": 4}),
    "openhands:v0": ("strategies.openhands.summarizing:LLMSummarizing", {"generation": "v0", "max_size": 120,
                                                                          "keep_first": 4}),
    "openhands:masking": ("strategies.openhands.masking:ObservationMasking", {}),
    "openhands:recent": ("strategies.openhands.recent:RecentEvents", {}),
    "openhands:amortized": ("strategies.openhands.amortized:AmortizedForgetting", {}),
    "aider": ("strategies.aider:Aider", {}),
    "aider:2024": ("strategies.aider:Aider", {"generation": "2024"}),
    "goose": ("strategies.goose:Goose", {}),
    "gemini-cli": ("strategies.gemini_cli.compression:GeminiCli", {}),
    "gemini-cli:2025": ("strategies.gemini_cli.compression:GeminiCli", {"threshold": 0.7,
                                                                        "function_response_budget": None,
                                                                        "verify": False, "prompt_version": "2025",
                                                                        "size_estimate": "json",
                                                                        "output_masking": False}),
    "copilot-cli": ("strategies.copilot_cli:CopilotCli", {}),
    "swe-agent": ("strategies.swe_agent:LastNObservations", {}),
    "tiered-placeholders": ("strategies.tiered:TieredPlaceholders", {}),
}


def _entry_points() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def names() -> list[str]:
    return sorted({*REGISTRY, *_entry_points()})


def resolve(name: str) -> tuple[type[Strategy], dict[str, Any]]:
    """The class and preset parameters for a registry name, entry point or ``module:Class``."""
    if name in REGISTRY:
        target, preset = REGISTRY[name]
        return _load_class(target, origin=f"strategy {name!r}"), dict(preset)
    eps = _entry_points()
    if name in eps:
        return _load_class(eps[name], origin=f"entry point {name!r} ({ENTRY_POINT_GROUP})"), {}
    module_name, sep, attr = name.partition(":")
    if _is_path(name.rpartition(":")[0]) or sep and "." in module_name or (sep and attr[:1].isupper()):
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
    """Instantiate a strategy from its spec, refusing parameters its dataclass does not declare and
    values of the wrong type or outside their range (``check_params``)."""
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
    check_params(cls, spec, preset)
    try:
        return cls(**{**preset, **spec.params})
    except (TypeError, ValueError) as e:
        raise StrategyError(f"strategy {spec.name!r}: {e}") from None


_FRACTION_NAMES = ("_pct", "fraction")


def param_range(cls: type[Strategy], key: str, default: Any) -> tuple[Range, str]:
    """The range of one numeric parameter and where it comes from: the strategy's own ``ranges``
    (bounds its agent documents), else the generic rule: a share of the window (a float default in
    (0, 1], or a name ending in ``_pct`` / ``fraction``) in (0, 1], any other number in [0, 2^53)."""
    declared = getattr(cls, "ranges", {})
    if isinstance(declared, Mapping) and key in declared:
        return declared[key], "declared by the strategy"
    share = (isinstance(default, float) and 0 < default <= 1) or key.endswith(_FRACTION_NAMES)
    return (FRACTION, "a share of the window") if share else (COUNT, "a count or threshold")


def check_params(cls: type[Strategy], spec: StrategySpec, preset: Mapping[str, Any] | None = None) -> None:
    """Refuse a parameter value of the wrong type, not finite, or outside its range, before any replay.

    Types are compared with the default (the preset's, else the dataclass's): a flag takes True or
    False, a number a number (a whole number where the default is an int). Numbers must be finite
    (``1e400`` parses as infinity) and inside ``param_range``. The error names the parameter and
    its range. Presets in REGISTRY are ours and are not re-checked.
    """
    defaults = {f.name: f.default for f in fields(cls) if f.default is not MISSING}
    defaults.update(preset or {})
    for key, value in spec.params.items():
        default = defaults.get(key)
        where = f"strategy {spec.label!r}: parameter {key!r}"
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise StrategyError(f"{where} takes True or False (default {default!r}), not {value!r}")
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if isinstance(default, int | float) and not number:
            raise StrategyError(f"{where} takes a number (default {default!r}), not {value!r}")
        if not number:
            continue
        rng, why = param_range(cls, key, default)
        if not math.isfinite(value):
            raise StrategyError(f"{where} is {value!r}: it takes a finite number in {rng} ({why})")
        if isinstance(default, int) and isinstance(value, float) and not value.is_integer():
            raise StrategyError(f"{where} takes a whole number in {rng} (default {default!r}), not {value!r}")
        if value not in rng:
            raise StrategyError(f"{where} is {value!r}, outside its range {rng} ({why})")
