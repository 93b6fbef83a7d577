"""decide: from a results table to what to ship (verdict). A pure function of the results;
it imports scoring only."""

from importlib import import_module

_MODULES = {
    "verdict": ("decide", "Verdict", "Objective", "parse_objective", "check_objective", "aggregate",),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}
__all__ = sorted(_HOME)


def __getattr__(name: str):
    """Each name is imported from its module on first use, so importing one module of this stage
    does not import the others (and their heavy libraries)."""
    if name in _HOME:
        return getattr(import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
