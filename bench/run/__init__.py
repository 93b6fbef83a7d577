"""run: a sweep from traces to a finished run folder. Traces stream in (sources), tasks run locally,
in a process pool or on Ray (executors), are stored as Parquet (store) and joined across shards
(merge); runner orchestrates them and ends with the verdict; tune splits the traces to choose
thresholds on some and score them on the others."""

from bench import lazy_face

_MODULES = {
    "runner": ("RunConfig", "RunOutput", "run",),
    "store": ("Store", "load_results",),
    "merge": ("merge_runs",),
}
__getattr__, __all__ = lazy_face(__name__, _MODULES)
