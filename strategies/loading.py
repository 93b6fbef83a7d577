"""Loading a strategy class: from a module path, a file or an entry point target (``module:Class``,
``./file.py:Class``), with errors that name the user's file and line, and the checks that refuse a
class the replay could not run (``validate_class``); ``source_hash``, the part of the task key that
follows edits to a strategy's code. The names and the presets are in ``strategies`` (``REGISTRY``).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
import traceback
from dataclasses import is_dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.context import HOOKS, Strategy

_LOADER = ("/strategies/__init__.py", "/strategies/loading.py")
"""The files that load a strategy: their frames are not the user's (``_import_failure``)."""


class StrategyError(ValueError):
    """A strategy name, path or parameter that cannot be used; the message says why."""


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
        [f for f in frames if "importlib" not in f.filename and not f.filename.endswith(_LOADER)] or frames
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
    """The files whose source ``klass`` runs: its module's, and when that module lies in a package of
    its own (an agent's folder, ``strategies/<agent>/``, or a user's package), every module of the
    folder, as its generations share helper modules that no class of theirs inherits from. [] for a
    class without a source file."""
    module = sys.modules.get(klass.__module__)
    path = getattr(module, "__file__", None)
    if not path or klass is object:
        return []
    package = getattr(module, "__package__", None) or ""
    if package and package != __package__ and not package.startswith("bench"):  # the harness versions itself
        return sorted(Path(path).parent.glob("*.py"))
    return [Path(path)]


def source_hash(cls: type) -> str:
    """A digest of the source of every module the class and its bases come from (``source_files``).

    Part of the task key (bench.run.runner.task_key): editing a strategy's code and re-running
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
