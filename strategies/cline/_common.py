"""What both Cline generations share: the tools that read a file and the path a call names."""

from __future__ import annotations

from bench.context import PATH_KEYS, ToolUse

READ_TOOLS = ("read_file", "Read", "read", "view", "view_file")


def _path(use: ToolUse | None) -> str | None:
    if use is None:
        return None
    return next((v for k in PATH_KEYS if isinstance(v := use.input.get(k), str) and v), None)
