"""decide: from a results table to what to ship (verdict). A pure function of the results;
it imports scoring only."""

from bench import lazy_face

_MODULES = {
    "verdict": ("decide", "Verdict", "Objective", "parse_objective", "check_objective", "aggregate",),
}
__getattr__, __all__ = lazy_face(__name__, _MODULES)
