"""Helpers several strategy families share: rewriting tool outputs and cutting without orphans.

An API rejects a tool_result whose tool_use is missing and (for the last call) a tool_use with
no result, so every cut goes through ``safe_cut`` and every rewrite keeps the block ids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from traces.model import Message, Text, ToolResult, ToolUse


def tool_names(messages: Sequence[Message]) -> dict[str, str]:
    """tool_use id → tool name."""
    return {b.id: b.name for m in messages for b in m.blocks if isinstance(b, ToolUse)}


def tool_inputs(messages: Sequence[Message]) -> dict[str, ToolUse]:
    """tool_use id → the ToolUse block."""
    return {b.id: b for m in messages for b in m.blocks if isinstance(b, ToolUse)}


def rewrite_results(message: Message, rewrite: Callable[[ToolResult], str | None]) -> Message:
    """A copy of ``message`` whose tool results are rewritten where ``rewrite`` returns a string.

    Returns the same object when nothing changes, so token counts and cache prefixes survive.
    """
    changed = False
    blocks = []
    for b in message.blocks:
        if isinstance(b, ToolResult):
            new = rewrite(b)
            if new is not None and new != b.content:
                b = replace(b, content=new)
                changed = True
        blocks.append(b)
    return replace(message, blocks=tuple(blocks)) if changed else message


def rewrite_uses(message: Message, rewrite: Callable[[ToolUse], dict | None]) -> Message:
    """Like ``rewrite_results`` for tool_use inputs (e.g. clearing inputs)."""
    changed = False
    blocks = []
    for b in message.blocks:
        if isinstance(b, ToolUse):
            new = rewrite(b)
            if new is not None and new != dict(b.input):
                b = replace(b, input=new)
                changed = True
        blocks.append(b)
    return replace(message, blocks=tuple(blocks)) if changed else message


def safe_cut(messages: Sequence[Message], index: int) -> int:
    """The smallest cut point ≥ ``index`` such that messages[cut:] has no tool_result whose
    tool_use lies before the cut (moving forward over results of calls made before it)."""
    index = max(0, min(index, len(messages)))
    before = {b.id for m in messages[:index] for b in m.tool_uses}
    while index < len(messages) and any(r.tool_use_id in before for r in messages[index].tool_results):
        before.update(b.id for b in messages[index].tool_uses)
        index += 1
    return index


def drop_range(messages: Sequence[Message], start: int, end: int) -> tuple[Message, ...]:
    """messages without [start, end), widened so no tool_use/tool_result pair is split."""
    end = safe_cut(messages, end)
    kept = (*messages[:start], *messages[end:])
    dropped_uses = {b.id for m in messages[start:end] for b in m.tool_uses}
    if not dropped_uses:
        return tuple(kept)
    # a result after the range whose call was dropped cannot stay as a tool_result
    out = []
    for m in kept:
        if any(r.tool_use_id in dropped_uses for r in m.tool_results):
            blocks = tuple(b for b in m.blocks if not (isinstance(b, ToolResult) and b.tool_use_id in dropped_uses))
            if not blocks:
                continue
            m = replace(m, blocks=blocks)
        out.append(m)
    return tuple(out)


def last_human_index(messages: Sequence[Message]) -> int:
    """Index of the latest user message that is a human turn (not only tool results); -1 if none."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].is_human_turn:
            return i
    return -1


def text_user(text: str, **meta: object) -> Message:
    return Message("user", (Text(text),), meta=dict(meta))


def text_assistant(text: str, **meta: object) -> Message:
    return Message("assistant", (Text(text),), meta=dict(meta))
