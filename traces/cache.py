"""Synthetic traces generated once and kept (issue 28: nothing paid before the first replay that
need not be).

``generate(scenario, seed)`` is deterministic: the same scenario text, seed and generator code give
the same trace, so a run needs to build it only once per machine. ``generated`` returns the kept
copy when there is one and otherwise generates it and keeps it.

Where: a user cache directory, not the run's ``out/``: a synthetic trace depends on nothing a run
chooses (not its models, strategies or output folder), so every run, every ``--out`` and every
checkout of the same generator shares one copy (``make perf`` runs the bench into a new temporary
folder each time, which a cache under ``out/`` would never serve). The folder is
``$COMPACTION_BENCH_CACHE`` when set, else ``$XDG_CACHE_HOME/compaction-bench``, else
``~/.cache/compaction-bench``; ``COMPACTION_BENCH_CACHE=off`` turns the cache off.

Keyed by the generator's version: the hash of the source of every module that shapes a
synthetic trace (``GENERATOR_MODULES``) and the Python version (pickle's format), so an edit to the
generator or its scenarios starts a new folder (older ones are removed when it is first written);
within it, one file per (scenario text, seed). A file that cannot be read is regenerated, never
trusted: the cache can only save time, never change a trace.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import sys
from functools import lru_cache
from pathlib import Path

from traces.model import Trace

GENERATOR_MODULES = ("synthetic", "synthetic_text", "synthetic_calls", "synthetic_needles", "scenarios",
                     "calibration", "model")
"""The modules of ``traces`` whose code decides what ``traces.synthetic.generate`` returns."""
OFF = "off"


def cache_root() -> Path | None:
    """The user cache folder of this project (None when ``COMPACTION_BENCH_CACHE=off``)."""
    own = os.environ.get("COMPACTION_BENCH_CACHE")
    if own is not None:
        return None if own.strip().lower() == OFF else Path(own).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "compaction-bench"


@lru_cache(maxsize=1)
def generator_version() -> str:
    """A short hash of the generator's sources and the Python version (what a kept trace depends on)."""
    h = hashlib.sha256(f"{sys.version_info[0]}.{sys.version_info[1]}".encode())
    here = Path(__file__).parent
    for name in GENERATOR_MODULES:
        h.update(name.encode())
        h.update((here / f"{name}.py").read_bytes())
    return h.hexdigest()[:16]


def _path(root: Path, scenario: str, seed: int) -> Path:
    key = hashlib.sha256(f"{scenario}\0{seed}".encode()).hexdigest()[:24]
    return root / f"synthetic-{generator_version()}" / f"{key}.pickle"


def generated(scenario: str, seed: int = 0) -> Trace:
    """``traces.synthetic.generate(scenario, seed)``, from the cache when it holds it (the same trace)."""
    root = cache_root()
    path = _path(root, scenario, seed) if root is not None else None
    if path is not None and path.is_file():
        try:
            with path.open("rb") as f:
                kept = pickle.load(f)
            if isinstance(kept, tuple) and len(kept) == 3 and kept[:2] == (scenario, seed) \
                    and isinstance(kept[2], Trace):
                return kept[2]
        except Exception:  # noqa: BLE001 - a damaged or foreign file is regenerated below
            pass
    from traces.synthetic import generate

    trace = generate(scenario, seed=seed)
    if path is not None:
        _keep(path, (scenario, seed, trace))
    return trace


def _keep(path: Path, value: object) -> None:
    """Write atomically (parallel runs may write the same file); a cache that cannot be written is skipped."""
    try:
        fresh = not path.parent.is_dir()
        path.parent.mkdir(parents=True, exist_ok=True)
        if fresh:  # a new generator version: the older versions' folders can never be read again
            for old in path.parent.parent.glob("synthetic-*"):
                if old != path.parent and old.is_dir():
                    shutil.rmtree(old, ignore_errors=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with tmp.open("wb") as f:
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(path)
    except OSError:
        pass
