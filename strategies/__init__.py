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
import hashlib
import importlib
import importlib.util
import inspect
import math
import os
import re
import sys
import traceback
from collections.abc import Mapping
from dataclasses import MISSING, fields, is_dataclass
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from strategies._tools import drop_range, rewrite_results
from strategies.base import COUNT, FRACTION, HOOKS, Event, Outcome, Range, Strategy, StrategySpec, event

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
    "source_hash",
]

ENTRY_POINT_GROUP = "compaction_bench.strategies"

REGISTRY: dict[str, tuple[str, dict[str, Any]]] = {
    "none": ("strategies.none:NoCompaction", {}),
    "opencode": ("strategies.opencode:OpenCode", {}),
    "opencode:tail": ("strategies.opencode:OpenCode", {"generation": "tail"}),
    "opencode:1.4": ("strategies.opencode:OpenCode", {"generation": "overflow"}),
    "cline-half": ("strategies.cline.context_manager:Cline", {"keep": "half"}),
    "cline-quarter": ("strategies.cline.context_manager:Cline", {"keep": "quarter"}),
    "cline:sdk": ("strategies.cline.sdk:ClineSdk", {}),
    "codex": ("strategies.codex:Codex", {}),
    "codex:2025": ("strategies.codex:Codex", {"auto_compact_limit": 256_000, "limit_fraction": None,
                                              "history_form": "bridge", "count_old_reasoning": False,
                                              "pre_turn_check": False}),
    "codex:0.140": ("strategies.codex:Codex", {"effective_window_percent": 95}),
    "codex:remote": ("strategies.codex:Codex", {"engine": "remote"}),
    "codex:0.125-remote": ("strategies.codex:Codex", {"engine": "remote", "remote_keeps_answers": False}),
    "codex:0.140-remote": ("strategies.codex:Codex", {"effective_window_percent": 95, "engine": "remote",
                                                      "remote_keeps_answers": False}),
    "five-layer": ("strategies.layered.five_layer:FiveLayer", {}),
    "claude-code": ("strategies.claude_code:ClaudeCode", {}),
    "claude-code:microcompact": ("strategies.claude_code:ClaudeCode", {"microcompact_idle_seconds": 3_600}),
    "claude-code:2.1.89": ("strategies.claude_code:ClaudeCode", {"reactive_fit": False}),
    "claude-code:2.1.76": ("strategies.claude_code:ClaudeCode", {"reactive_fit": False, "thrash_limit": None}),
    "claude-code:2.1.21": ("strategies.claude_code:ClaudeCode", {"reactive_fit": False, "thrash_limit": None,
                                                                 "max_autocompact_failures": None}),
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


class StrategyError(ValueError):
    """A strategy name, path or parameter that cannot be used; the message says why."""


def _entry_points() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def names() -> list[str]:
    return sorted({*REGISTRY, *_entry_points()})


def _where(obj: Any) -> str:
    """``file.py:line`` of a class or function, for messages; '' when it has no source file."""
    try:
        return f"{inspect.getsourcefile(obj)}:{inspect.getsourcelines(obj)[1]}"
    except (OSError, TypeError):
        return ""


def _is_path(module_name: str) -> bool:
    return module_name.endswith(".py") or "/" in module_name or "\\" in module_name


def _import_file(path_text: str, *, origin: str) -> ModuleType:
    """Import ``./dir/file.py`` under a name unique to its absolute path (workers do the same)."""
    path = Path(path_text).expanduser().resolve()
    if not path.is_file():
        raise StrategyError(f"{origin}: no such file {path_text!r}")
    main = sys.modules.get("__main__")
    if getattr(main, "__file__", None) and Path(main.__file__).resolve() == path:
        return main  # the running script's own class (compaction_bench.run runs it in this process)
    name = "_user_strategy_" + re.sub(r"\W", "_", path.stem) + "_" + hashlib.sha1(str(path).encode()).hexdigest()[:8]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise StrategyError(f"{origin}: cannot load {path_text!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class body runs
    try:
        spec.loader.exec_module(module)
    except BaseException as e:
        sys.modules.pop(name, None)
        if isinstance(e, KeyboardInterrupt | SystemExit):
            raise
        raise StrategyError(f"{origin}: {_import_failure(e, path)}") from None
    return module


def _import_failure(e: BaseException, path: Path | None = None) -> str:
    """``file:line: Error: message`` at the user's line (the deepest frame outside the standard library)."""
    if isinstance(e, SyntaxError) and e.filename:
        return f"{e.filename}:{e.lineno}: SyntaxError: {e.msg}"
    frames = traceback.extract_tb(e.__traceback__)
    mine = [f for f in frames if path is not None and Path(f.filename).resolve() == path] or \
        [f for f in frames if "importlib" not in f.filename and "/strategies/__init__.py" not in f.filename] or frames
    where = f"{mine[-1].filename}:{mine[-1].lineno}: " if mine else ""
    return f"{where}{type(e).__name__}: {e}"


def _import_module(module_name: str, *, origin: str) -> ModuleType:
    """A module by dotted name; a module in the current directory works too (as ``python -c`` would)."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        top = module_name.split(".")[0]
        here = Path(top + ".py").is_file() or Path(top, "__init__.py").is_file()
        if e.name == top and here and os.getcwd() not in sys.path:
            sys.path.append(os.getcwd())
            try:
                return importlib.import_module(module_name)
            except ModuleNotFoundError:
                pass
            except Exception as inner:  # noqa: BLE001 - the user's module failed while importing
                raise StrategyError(f"{origin}: {_import_failure(inner)}") from None
        if e.name and module_name.startswith(e.name):
            raise StrategyError(f"{origin}: cannot import module {module_name!r} ({e}); a file in the current "
                                "directory works as module:Class, any other as ./path/file.py:Class") from None
        raise StrategyError(f"{origin}: {_import_failure(e)}") from None
    except Exception as e:  # noqa: BLE001 - the user's module failed while importing
        raise StrategyError(f"{origin}: {_import_failure(e)}") from None


def _load_class(target: str, *, origin: str) -> type[Strategy]:
    module_name, _, attr = target.rpartition(":") if _is_path(target.rpartition(":")[0]) else target.partition(":")
    if not attr or not module_name:
        raise StrategyError(f"{origin}: {target!r} is not of the form 'module:Class' or './file.py:Class'")
    if _is_path(module_name):
        module = _import_file(module_name, origin=origin)
    else:
        module = _import_module(module_name, origin=origin)
    cls = getattr(module, attr, None)
    if cls is None:
        where = getattr(module, "__file__", None) or module_name
        raise StrategyError(f"{origin}: {where} has no attribute {attr!r}")
    validate_class(cls, origin=origin)
    return cls


def source_files(klass: type) -> list[Path]:
    """The files whose source ``klass`` runs: its module's, and when that module lies in an agent's
    folder (``strategies/<agent>/``), every module of the folder, as its generations share helper
    modules that no class of theirs inherits from. [] for a class without a source file."""
    module = sys.modules.get(klass.__module__)
    path = getattr(module, "__file__", None)
    if not path or klass is object:
        return []
    if (getattr(module, "__package__", None) or "").startswith(__name__ + "."):
        return sorted(Path(path).parent.glob("*.py"))
    return [Path(path)]


def source_hash(cls: type) -> str:
    """A digest of the source of every module the class and its bases come from (``source_files``).

    Part of the task key (bench.runner.task_key): editing a strategy's code and re-running
    replays it again instead of resuming stale results, with or without a ``version`` bump.
    """
    digest = hashlib.sha256()
    for klass in cls.__mro__:
        for path in source_files(klass):
            try:
                digest.update(path.read_bytes())
            except OSError:
                digest.update(klass.__qualname__.encode())
    return digest.hexdigest()[:16]


def validate_class(cls: Any, *, origin: str) -> None:
    """Refuse a class that could not run in the replay, naming what is missing and where."""
    if not inspect.isclass(cls):
        raise StrategyError(f"{origin}: {cls!r} is not a class")

    def at() -> str:  # the source is read only for a message: every build validates its class
        where = _where(cls)
        return f" ({where})" if where else ""

    if not is_dataclass(cls) or "__dataclass_params__" not in vars(cls):  # a plain subclass inherits the flag
        raise StrategyError(f"{origin}: {cls.__name__}{at()} must be a (frozen) dataclass of its parameters: "
                            "add @dataclass(frozen=True)")
    if not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        raise StrategyError(f"{origin}: {cls.__name__}{at()} must be frozen (@dataclass(frozen=True))")
    for hook in HOOKS:
        fn = getattr(cls, hook, None)
        if not callable(fn):
            raise StrategyError(f"{origin}: {cls.__name__}{at()} has no callable hook {hook!r}")
        n_args = len(inspect.signature(fn).parameters)
        if n_args != 3:
            where = _where(fn) or _where(cls)
            raise StrategyError(
                f"{origin}: {cls.__name__}.{hook} ({where}) must take (self, ctx, session), it takes {n_args} "
                "arguments"
            )
    if not getattr(cls, "name", ""):
        raise StrategyError(f"{origin}: {cls.__name__}{at()} needs a class attribute 'name'")


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
