"""Helpers several strategy families share about files: the path a tool call names, whether a call
only looks, and the file contents a session has shown (for the attachments some agents restore after
a compaction: layered, amp). Apart from ``_tools`` (cuts, rewrites, turns), which is about messages.
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.context import Message, ToolResult, ToolUse

PATH_KEYS = ("file_path", "path", "filePath", "filename", "file", "target_file", "notebook_path")
READ_TOOLS = frozenset({"read", "read_file", "readfile", "view", "view_file", "cat", "open_file"})
READ_ONLY_WORDS = ("read", "view", "cat", "grep", "glob", "ls", "list", "find", "search", "fetch", "get", "web")


def file_path(use: ToolUse) -> str | None:
    """The file a tool call names, if any (the first path-like input key)."""
    for key in PATH_KEYS:
        value = use.input.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def is_read_only(use: ToolUse) -> bool:
    """A call that only looks (read, grep, list, fetch): its output can be re-obtained by calling again."""
    name = use.name.lower()
    if use.input.get("command") == "view":
        return True
    return name.startswith(READ_ONLY_WORDS)


def file_snapshot(use: ToolUse, result: ToolResult) -> tuple[str, str] | None:
    """(path, content) a successful call shows of a file: a read's output, or a write's content."""
    path = file_path(use)
    if path is None or result.is_error:
        return None
    for key in ("content", "file_text"):
        written = use.input.get(key)
        if isinstance(written, str):
            return path, written
    if use.name.lower() in READ_TOOLS or use.input.get("command") == "view":
        return path, result.content
    return None


def files_shown(messages: Sequence[Message]) -> list[tuple[str, str]]:
    """(path, content) of files the last message's tool results show (calls matched backwards)."""
    last = messages[-1] if messages else None
    if last is None or not last.tool_results:
        return []
    calls: dict[str, ToolUse] = {}
    for m in reversed(messages[:-1]):
        if m.role == "assistant":
            calls = {u.id: u for u in m.tool_uses}
            break
    shown = (file_snapshot(calls[r.tool_use_id], r) for r in last.tool_results if r.tool_use_id in calls)
    return [s for s in shown if s is not None]


def remember_files(messages: Sequence[Message], files: dict[str, str]) -> None:
    """Update a path → latest content map (most recent last) from the newest tool results."""
    for path, content in files_shown(messages):
        files.pop(path, None)
        files[path] = content

