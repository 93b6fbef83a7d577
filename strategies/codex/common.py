"""Codex: the prompts, text helpers and history predicates every Codex variant shares.

Split out of the one-module strategies/codex.py (issue 24): the trigger (``trigger.py``), the local
and the remote compaction (``local.py``, ``remote.py``) and the registered class (``strategy.py``)
all read these.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

from bench.context import Message, Text, ToolResult
from strategies._tools import last_assistant_index

SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its thinking process. "
    "You also have access to the state of the tools that were used by that language model. Use this to build "
    "on the work that has already been done and avoid duplicating work. Here is the summary produced by the "
    "other language model, use the information in this summary to  assist with your own analysis:")
COMPACT_PROMPT = (
    "CONTEXT CHECKPOINT COMPACTION. Write a handoff summary for another model that will pick this task up "
    "without seeing the conversation. Include: the user's goal; progress so far and key decisions; important "
    "context, constraints and preferences; what remains to be done (next steps); critical data, examples and "
    "references. Be concise and structured.")
BRIDGE_LEAD = ("You were originally given instructions from a user over one or more turns. "
               "Here were the user messages:")
SESSION_PREFIXES = ("# AGENTS.md instructions", "<environment_context>", "<user_instructions>")
"""The user-role items ``build_initial_context`` writes (AGENTS.md, environment context; the legacy
``<user_instructions>``): what Codex puts back after compacting (``latest_initial_context``)."""
CONTEXTUAL_MARKERS = (*SESSION_PREFIXES, "<skill", "<user_shell_command>", "<turn_aborted>",
                      "<subagent_notification>", "<additional_context>")
"""Starts of the user-role items Codex does not count as the user's own words (``is_contextual_user_message``):
the initial context above plus a loaded skill's body, a ``!`` shell command, an aborted-turn note, a
sub-agent notice and editor context. openai/codex @e06dd0e5d5694c24968bf49b62466cdedae04aaa
codex-rs/core/src/event_mapping.rs:27-44 (``is_contextual_user_message_content``: AGENTS.md, ``<skill``,
session prefixes, user shell commands) and instructions/user_instructions.rs:8 (``SKILL_INSTRUCTIONS_PREFIX``);
@07247fbfe770a94b82734c8b268c46fece4ae4ba contextual_user_message.rs:8-21, 101-109 (the fragment table,
matched case-insensitively after leading whitespace; it adds turn-aborted, sub-agent and additional
context). Such an item is neither kept as a user message by a compaction (``collect_user_messages`` and
remote ``should_keep_compacted_history_item`` go through ``parse_turn_item``, which returns None for it)
nor a user-turn boundary; of them only the initial context is rebuilt afterwards."""


def approx_tokens(text: str) -> int:
    """Codex's approx_token_count: ceil(bytes / 4)."""
    return math.ceil(len(text.encode("utf-8")) / 4)


def middle_truncate(text: str, max_bytes: int, unit: str = "tokens") -> str:
    """Keep the head and tail halves of ``text`` around Codex's marker, all within ``max_bytes``.

    The marker's own bytes come out of the budget; its count is settled in a second pass.
    """
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    label, marker, head, tail = ("tokens" if unit == "tokens" else "chars"), "", "", ""
    for _ in range(2):
        keep = max(0, max_bytes - len(marker.encode("utf-8")))
        head = data[: keep // 2].decode("utf-8", "ignore")
        tail = data[len(data) - (keep - keep // 2):].decode("utf-8", "ignore") if keep else ""
        removed = text[len(head): len(text) - len(tail)]
        marker = f"…{approx_tokens(removed) if unit == 'tokens' else len(removed)} {label} truncated…"
    return head + marker + tail


def user_messages(history: tuple[Message, ...]) -> list[str]:
    """Text of the human user messages (compact.rs ``collect_user_messages``), without earlier
    summaries and without contextual items (instructions, environment, skill bodies: ``contextual``)."""
    return [m.text for m in history
            if m.is_human_turn and m.text and not m.text.startswith(SUMMARY_PREFIX + "\n")
            and not contextual(m)]


def _starts(text: str, markers: tuple[str, ...]) -> bool:
    head = text.lstrip()[:40].lower()
    return any(head.startswith(marker.lower()) for marker in markers)


def contextual(m: Message) -> bool:
    """Not the user's own words, for Codex: a developer message, or a user message one of whose text
    blocks opens with a contextual marker (``CONTEXTUAL_MARKERS``: instructions, environment context,
    a skill body, ...)."""
    if m.meta.get("role") == "developer":
        return True
    return m.role == "user" and any(isinstance(b, Text) and _starts(b.text, CONTEXTUAL_MARKERS) for b in m.blocks)


def initial_context_item(m: Message) -> bool:
    """One of the items ``build_initial_context`` writes, which come back after a compaction: a
    developer message, or a user message opening with AGENTS.md / environment context
    (``SESSION_PREFIXES``). A ``<skill>`` body is contextual but not among them: Codex rebuilds only
    the list of available skills (a developer section), never a loaded skill's body."""
    if m.meta.get("role") == "developer":
        return True
    return m.role == "user" and any(isinstance(b, Text) and _starts(b.text, SESSION_PREFIXES) for b in m.blocks)


def remote_kept(m: Message, *, answers: bool = True) -> Message | None:
    """What survives a remote compaction of ``m`` (the recorded server answer, then Codex's
    ``should_keep_compacted_history_item``): a real user message (images included, tool outputs
    not; an older local summary parses as one and stays) or, when the server keeps them
    (``answers``), a final answer (an assistant message with text and no tool call; thinking and
    its reasoning sizes dropped). An earlier opaque item is replaced: the server answers with
    exactly one (v2 fails on any other count, issue #28592)."""
    if m.meta.get("opaque") or contextual(m):
        return None
    if m.is_human_turn:
        blocks = tuple(b for b in m.blocks if not isinstance(b, ToolResult))
        return m if len(blocks) == len(m.blocks) else replace(m, blocks=blocks)
    if answers and m.role == "assistant" and not m.tool_uses and m.text:
        blocks = tuple(b for b in m.blocks if isinstance(b, Text))
        meta = {k: v for k, v in m.meta.items() if k not in REASONING_META}
        return m if len(blocks) == len(m.blocks) and meta == m.meta else replace(m, blocks=blocks, meta=meta)
    return None


def latest_initial_context(history: tuple[Message, ...]) -> tuple[Message, ...]:
    """What ``build_initial_context`` injects again, as the trace shows it: the session's first run
    of initial-context items (developer instructions, AGENTS.md, environment context: the full set
    Codex builds for a turn context), each kind replaced by its newest copy when a later run holds
    one (a trace has no turn context to rebuild it from). Later runs alone are usually diffs (an
    updated environment context), not the whole set: the recorded replacement_history of 0.104 and
    0.119 hold the full developer instructions and AGENTS.md again."""
    runs: list[list[Message]] = []
    for i, m in enumerate(history):
        if initial_context_item(m):
            if runs and i > 0 and initial_context_item(history[i - 1]):
                runs[-1].append(m)
            else:
                runs.append([m])
    if not runs:
        return ()
    newest: dict[str, Message] = {}
    for run in runs:
        for m in run:
            newest[context_kind(m)] = m
    seen: set[str] = set()
    out: list[Message] = []
    for m in runs[0]:
        kind = context_kind(m)
        if kind not in seen:
            seen.add(kind)
            out.append(newest[kind])
    return tuple(out)


def context_kind(m: Message) -> str:
    """Which initial-context item ``m`` is: the tag a developer message opens with
    (``<permissions instructions>``, ...) or the session prefix of a user one; an untagged
    (e.g. redacted) developer message is its own kind, never replaced."""
    if m.meta.get("role") == "developer":
        tag = re.match(r"<([\w -]+)>", m.text)
        return f"developer:{tag.group(1)}" if tag else f"developer@{id(m)}"
    return next((p for p in SESSION_PREFIXES if _starts(m.text, (p,))), f"other@{id(m)}")


REASONING_META = ("reasoning_encrypted_lengths", "reasoning_encrypted_unsized", "reasoning_output_tokens")
"""What the importer keeps of an answer's reasoning for the trigger (traces/formats/codex.py)."""


def recorded_window(msgs: tuple[Message, ...]) -> int | None:
    """The ``model_context_window`` the rollout recorded with the latest answer that has one."""
    for m in reversed(msgs):
        if m.role == "assistant" and isinstance(m.meta.get("context_window"), int):
            return m.meta["context_window"]
    return None


def checked_end(msgs: tuple[Message, ...], last: int) -> int:
    """End of what Codex holds at the check after answer ``last``: the tool outputs recorded after it
    count; the first message that is not one (a new turn's input) and everything after it do not."""
    end = last + 1
    while end < len(msgs) and msgs[end].is_tool_result:
        end += 1
    return end


def turn_boundary(m: Message) -> bool:
    """history.rs ``is_user_turn_boundary``: a real user message (not session-prefixed context, not
    a developer message, not the opaque compaction item, which Codex holds as a model item)."""
    return m.is_human_turn and not m.meta.get("opaque") and not contextual(m)


def new_turn_input(msgs: tuple[Message, ...]) -> int:
    """Index where a new turn's input begins (after the last answer and its tool outputs), or
    ``len(msgs)`` when there is none. A pre-turn compaction runs before that input is recorded
    (``run_pre_sampling_compact`` comes first in ``run_turn``), so it is appended after the new
    history, not compacted."""
    last = last_assistant_index(msgs)
    if last < 0:
        return len(msgs)
    end = checked_end(msgs, last)
    return end if any(m.is_human_turn for m in msgs[end:]) else len(msgs)
