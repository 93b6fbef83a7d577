"""replay: the agent loop, call by call, with a strategy managing the context (loop); the rows
it writes (records); what a provider would reject (validity); what the agent later used that a strategy
took away (references); the provider's side of each request (provider)."""

from bench import lazy_face

_MODULES = {
    "loop": ("replay", "ReplayConfig",),
    "records": ("TaskResult", "CallRecord", "CallColumns", "EventRecord", "SummaryRecord",),
    "validity": ("RequestCheck",),
    "provider": ("shipped_counts", "adopt_shipped", "ProviderView", "TRUTHS",),
}
__getattr__, __all__ = lazy_face(__name__, _MODULES)
