"""Loads the mypyc-compiled replay checks when a build of the current sources is there (issue 28).

``bench/cli/native.py`` (``python -m bench.cli.native``, run by ``make setup``) compiles a few hot, fully typed modules
(``build/native/manifest.json`` lists them) into ``build/native``, apart from the sources: this
module puts a finder for exactly those modules first on ``sys.meta_path``, so that ``import
bench.replay.references`` loads the compiled one. The compiled modules are one group (they call each
other natively), so the build is used whole or not at all: only when every source still hashes as it
did when it was compiled and the interpreter is the one it was compiled for. Otherwise, or with
``COMPACTION_BENCH_PURE=1``, everything runs as pure Python, with the same results (tests/bench/test_native.py).
Imported first by ``bench/__init__.py`` (every process, workers included): stdlib only, no failure.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import sysconfig
from importlib.machinery import ExtensionFileLoader, ModuleSpec
from importlib.util import spec_from_file_location
from pathlib import Path

ENV = "COMPACTION_BENCH_PURE"
"""Set (to anything but an empty string or 0) to run pure Python although a build is there."""
ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "native"
MANIFEST = BUILD / "manifest.json"

status = "pure Python"
"""Which path this process runs, and why (``make perf`` prints it)."""


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _Finder:
    """Finds the compiled modules of one build (by full name) and nothing else."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        file = self.files.get(name)
        if file is None:
            return None
        return spec_from_file_location(name, file, loader=ExtensionFileLoader(name, str(file)))


def _usable() -> tuple[dict[str, Path] | None, str]:
    """The compiled modules' files, or None and why not."""
    if os.environ.get(ENV, "") not in ("", "0"):
        return None, f"{ENV} is set"
    if not MANIFEST.is_file():
        return None, "no native build (make setup builds one when mypy and a C compiler are there)"
    try:
        built = json.loads(MANIFEST.read_text())
        if built.get("failed"):
            return None, f"the native build failed: {built['failed']}"
        if built.get("ext_suffix") != sysconfig.get_config_var("EXT_SUFFIX"):
            return None, "the native build is for another Python"
        stale = [src for src, sha in built["sources"].items() if digest(ROOT / src) != sha]
        if stale:
            return None, f"the native build is older than {stale[0]} (make setup rebuilds it)"
        files = {name: BUILD / rel for name, rel in built["extensions"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        return None, f"unreadable native build ({e.__class__.__name__})"
    if not all(f.is_file() for f in files.values()):
        return None, "the native build is incomplete"
    return files, f"compiled with mypyc ({len(files) - 1} modules)"


def install() -> None:
    """Put the compiled modules first on the import path when they are usable; say which path runs."""
    global status
    files, why = _usable()
    if files is None:
        status = f"pure Python ({why})"
        return
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder(files))
    status = why
