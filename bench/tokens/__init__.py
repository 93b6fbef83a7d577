"""tokens: how big a text is. Our tokenizer's counts (counter), where two message tuples part
(prefix), each message's size as the provider counted it (attribution), the per-family calibrated
models for traces without usage (calibration, fitted by calibration_fit) and Anthropic's count-tokens
endpoint (count_tokens). Imports only the trace model."""

from bench import lazy_face

_MODULES = {
    "counter": ("TokenCounter", "Tokenizer", "render", "MESSAGE_OVERHEAD",),
    "prefix": ("starts_with", "derived", "first_difference",),
    "attribution": ("Attribution", "attribute",),
    "calibration": ("FamilyModel", "calibrated",),
    "count_tokens": ("anthropic_attribution",),
}
__getattr__, __all__ = lazy_face(__name__, _MODULES)
