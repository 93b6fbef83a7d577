"""scoring: from a replay's rows to numbers. Needle retention (probes, derived_probes,
matching, llm_probe), per-task metrics (metric, metrics), cost truth (economics, ledger_check),
fidelity to the recorded agent (fidelity) and spread and significance (stats)."""

from importlib import import_module

_MODULES = {
    "metric": ("Metric",),
    "metrics": ("METRICS", "task_row", "results_table", "finish_table",),
    "probes": ("needle_observer",),
    "derived_probes": ("derive_needles",),
    "fidelity": ("fidelity_rows", "pair_compactions",),
    "stats": ("paired_bootstrap", "percentiles", "summary_sizes",),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}
__all__ = sorted(_HOME)


def __getattr__(name: str):
    """Each name is imported from its module on first use, so importing one module of this stage
    does not import the others (and their heavy libraries)."""
    if name in _HOME:
        return getattr(import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
