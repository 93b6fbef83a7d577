"""tokens: how big a text is. Our tokenizer's counts (counter), where two message tuples part
(prefix), each message's size as the provider counted it (attribution), the per-family calibrated
models for traces without usage (calibration, fitted by calibration_fit) and Anthropic's count-tokens
endpoint (count_tokens). Imports only the trace model."""

from importlib import import_module

_MODULES = {
    "counter": ("TokenCounter", "Tokenizer", "render", "MESSAGE_OVERHEAD",),
    "prefix": ("starts_with", "derived", "first_difference",),
    "attribution": ("Attribution", "attribute",),
    "calibration": ("FamilyModel", "calibrated",),
    "count_tokens": ("anthropic_attribution",),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}
__all__ = sorted(_HOME)


def __getattr__(name: str):
    """Each name is imported from its module on first use, so importing one module of this stage
    does not import the others (and their heavy libraries)."""
    if name in _HOME:
        return getattr(import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
