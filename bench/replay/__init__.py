"""replay: the agent loop, call by call, with a strategy managing the context (loop); the rows
it writes (records); what a provider would reject (validity); what the agent later used that a strategy
took away (references); the provider's side of each request (provider)."""

from importlib import import_module

_MODULES = {
    "loop": ("replay", "ReplayConfig",),
    "records": ("TaskResult", "CallRecord", "EventRecord", "SummaryRecord",),
    "validity": ("RequestCheck",),
    "provider": ("shipped_counts", "adopt_shipped", "ProviderView", "TRUTHS",),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}
__all__ = sorted(_HOME)


def __getattr__(name: str):
    """Each name is imported from its module on first use, so importing one module of this stage
    does not import the others (and their heavy libraries)."""
    if name in _HOME:
        return getattr(import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
