"""scoring: from a replay's rows to numbers. Needle retention (probes, derived_probes,
matching, llm_probe), per-task metrics (metric, metrics), cost truth (economics, ledger_check),
fidelity to the recorded agent (fidelity) and spread and significance (stats)."""

from bench import lazy_face

_MODULES = {
    "metric": ("Metric",),
    "metrics": ("METRICS", "task_row", "results_table", "finish_table",),
    "probes": ("needle_observer",),
    "derived_probes": ("derive_needles",),
    "fidelity": ("fidelity_rows", "pair_compactions",),
    "stats": ("paired_bootstrap", "percentiles", "summary_sizes",),
}
__getattr__, __all__ = lazy_face(__name__, _MODULES)
