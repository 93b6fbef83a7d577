"""cost: what a call costs and how large a window is. Model profiles, prices and the prompt
cache's split of a request (pricing, from genai-prices plus bench/data/prices.toml), and the window a
recorded session really ran with (windows)."""

from bench import lazy_face

_MODULES = {
    "pricing": ("ModelProfile", "PromptCache", "CacheSplit", "UnknownModelError", "profile",
                "profile_for", "known", "price_table", "add_prices",),
    "windows": ("session_windows", "SessionWindows",),
}
__getattr__, __all__ = lazy_face(__name__, _MODULES)
