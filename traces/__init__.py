"""The trace model and its I/O: real agents' session formats in, our native JSONL, synthetic scenarios."""

from traces.model import (
    Block,
    Image,
    Message,
    Needle,
    RecordedCompaction,
    Step,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Trace,
    TraceError,
    Usage,
)

__all__ = [
    "Block", "Image", "Message", "Needle", "RecordedCompaction", "Step", "Text", "Thinking",
    "ToolResult", "ToolUse", "Trace", "TraceError", "Usage",
]
