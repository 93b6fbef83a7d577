"""cost: what a call costs and how large a window is. Model profiles, prices and the prompt
cache's split of a request (pricing, from genai-prices plus bench/data/prices.toml), and the window a
recorded session really ran with (windows)."""

from importlib import import_module

_MODULES = {
    "pricing": ("ModelProfile", "PromptCache", "CacheSplit", "UnknownModelError", "profile",
                "profile_for", "known", "price_table", "add_prices",),
    "windows": ("session_windows", "SessionWindows",),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}
__all__ = sorted(_HOME)


def __getattr__(name: str):
    """Each name is imported from its module on first use, so importing one module of this stage
    does not import the others (and their heavy libraries)."""
    if name in _HOME:
        return getattr(import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
