"""run: a sweep from traces to a finished run folder. Traces stream in (sources), tasks run locally,
in a process pool or on Ray (executors), are stored as Parquet (store) and joined across shards
(merge); runner orchestrates them and ends with the verdict; tune splits the traces to choose
thresholds on some and score them on the others."""

from importlib import import_module

_MODULES = {
    "runner": ("RunConfig", "RunOutput", "run",),
    "store": ("Store", "load_results",),
    "merge": ("merge_runs",),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}
__all__ = sorted(_HOME)


def __getattr__(name: str):
    """Each name is imported from its module on first use, so importing one module of this stage
    does not import the others (and their heavy libraries)."""
    if name in _HOME:
        return getattr(import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
