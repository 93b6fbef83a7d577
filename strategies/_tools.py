"""Helpers several strategy families share: rewriting tool outputs and cutting without orphans.

An API rejects a tool_result whose tool_use is missing and (for the last call) a tool_use with
no result, so every cut goes through ``safe_cut`` and every rewrite keeps the block ids.
What concerns files (the path a call names, the contents shown) is in ``strategies._files``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from bench.context import Block, Message, Text, ToolResult, ToolUse


def tool_names(messages: Sequence[Message]) -> dict[str, str]:
    """tool_use id → tool name."""
    return {b.id: b.name for m in messages for b in m.blocks if isinstance(b, ToolUse)}


def tool_inputs(messages: Sequence[Message]) -> dict[str, ToolUse]:
    """tool_use id → the ToolUse block."""
    return {b.id: b for m in messages for b in m.blocks if isinstance(b, ToolUse)}


def with_content(b: ToolResult, content: str) -> ToolResult:
    """``replace(b, content=content)`` without ``dataclasses.replace``'s generic path (~10 us a call,
    and every strategy that cuts or clears outputs makes one per output per call)."""
    return ToolResult(b.tool_use_id, content, b.is_error) if type(b) is ToolResult else replace(b, content=content)


def with_blocks(m: Message, blocks: tuple[Block, ...]) -> Message:
    """``m.with_blocks(blocks)`` without the generic path's cost (a subclass takes the generic one)."""
    return Message(m.role, blocks, m.usage, m.timestamp, m.id, m.meta) if type(m) is Message else m.with_blocks(blocks)


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
                b = with_content(b, new)
                changed = True
        blocks.append(b)
    return with_blocks(message, tuple(blocks)) if changed else message


def rewrite_uses(message: Message, rewrite: Callable[[ToolUse], dict | None]) -> Message:
    """Like ``rewrite_results`` for tool_use inputs (e.g. clearing inputs)."""
    changed = False
    blocks = []
    for b in message.blocks:
        if isinstance(b, ToolUse):
            new = rewrite(b)
            if new is not None and new != dict(b.input):
                b = ToolUse(b.id, b.name, new) if type(b) is ToolUse else replace(b, input=new)
                changed = True
        blocks.append(b)
    return with_blocks(message, tuple(blocks)) if changed else message


def safe_cut(messages: Sequence[Message], index: int) -> int:
    """The smallest cut point ≥ ``index`` such that messages[cut:] has no tool_result whose
    tool_use lies before the cut (moving forward over results of calls made before it).

    The result need not follow its call directly: an empty assistant message or a second answer
    may sit between them in a real log, so the walk goes on while a call before the cut is still
    unanswered (in a well-formed session it stops at once).
    """
    index = max(0, min(index, len(messages)))
    open_calls: set[str] = set()
    for m in messages[:index]:
        open_calls.update(b.id for b in m.tool_uses)
        open_calls.difference_update(r.tool_use_id for r in m.tool_results)
    cut, j = index, index
    while open_calls and j < len(messages):
        answered = {r.tool_use_id for r in messages[j].tool_results} & open_calls
        if answered:
            for m in messages[cut:j + 1]:
                open_calls.update(b.id for b in m.tool_uses)
            open_calls.difference_update(r.tool_use_id for m in messages[cut:j + 1] for r in m.tool_results)
            cut = j + 1
        j += 1
    return cut


def drop_range(messages: Sequence[Message], start: int, end: int) -> tuple[Message, ...]:
    """messages without [start, end), widened so no tool_use/tool_result pair is split."""
    end = safe_cut(messages, end)
    return tuple(without_orphan_results((*messages[:start], *messages[end:]), messages[start:end]))


def without_orphan_results(kept: Sequence[Message], dropped: Sequence[Message]) -> list[Message]:
    """``kept`` without the tool_result blocks whose calls are in ``dropped`` (a result cannot stay
    without its call; the message's other blocks stay); a message left with no blocks is not sent."""
    gone = {u.id for m in dropped for u in m.tool_uses}
    if not gone:
        return list(kept)
    out = []
    for m in kept:
        if any(r.tool_use_id in gone for r in m.tool_results):
            m = m.with_blocks(tuple(b for b in m.blocks if not (isinstance(b, ToolResult) and b.tool_use_id in gone)))
            if not m.blocks:
                continue
        out.append(m)
    return out


def last_assistant_index(messages: Sequence[Message]) -> int:
    """Index of the latest assistant message, -1 if none (walks back over the current step only)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "assistant":
            return i
    return -1


def is_empty(m: Message) -> bool:
    """No content, or only empty text: what an API refuses as a message (bench/replay/validity.py)."""
    return not any(not isinstance(b, Text) or b.text for b in m.blocks)


def is_prompt(m: Message) -> bool:
    """A human turn with something in it. An empty user message is none: a log can hold one
    between a call and its results, where no agent has a turn (the pair is one unit), and taken
    as a turn it would make that a cut point that orphans the results."""
    return m.is_human_turn and not is_empty(m)


def new_human_turn(messages: Sequence[Message], *, skip_empty: bool = False) -> int:
    """Index of the latest human turn if it arrived after the last answer (the step opens a new
    turn), else -1. Looks only at the current step, so it costs O(step), not O(history).
    ``skip_empty``: an empty user message is no turn (``is_prompt``)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role == "assistant":
            return -1
        if m.is_human_turn and not (skip_empty and is_empty(m)):
            return i
    return -1


def last_human_index(messages: Sequence[Message], *, skip_empty: bool = False) -> int:
    """Index of the latest user message that is a human turn (not only tool results); -1 if none.
    ``skip_empty``: an empty user message is no turn (``is_prompt``)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].is_human_turn and not (skip_empty and is_empty(messages[i])):
            return i
    return -1


def text_user(text: str, **meta: object) -> Message:
    return Message("user", (Text(text),), meta=dict(meta))


def text_assistant(text: str, **meta: object) -> Message:
    return Message("assistant", (Text(text),), meta=dict(meta))


# --- step boundaries (added for layered / amp / baseagent) ---------------------------------------

def step_start(messages: Sequence[Message]) -> int:
    """Where the current step begins: after the last assistant message, or at it when it made
    calls or the step holds results (so a cut there never orphans the in-flight pair). When the
    step's results answer calls made further back (an empty assistant message or a second answer
    in between, as real logs have), it begins at the message that made them. O(step)."""
    last = last_assistant_index(messages)
    if last < 0:
        return min(1, len(messages))
    start = last if messages[last].tool_uses or any(m.tool_results for m in messages[last + 1:]) else last + 1
    tail_uses = {b.id for m in messages[start:] for b in m.tool_uses}
    need = {r.tool_use_id for m in messages[start:] for r in m.tool_results} - tail_uses
    i = start
    while need and i > 0:
        i -= 1
        tail_uses.update(b.id for b in messages[i].tool_uses)
        need = (need | {r.tool_use_id for r in messages[i].tool_results}) - tail_uses
    return i if not need else start  # a result whose call is nowhere before: the log's own orphan


def unanswered_start(messages: Sequence[Message]) -> int:
    """Index of the oldest assistant message since the latest human turn whose calls still wait
    for a result (a log where the answer to a call comes after another assistant message);
    ``len(messages)`` if none. A compaction that summarizes "everything" keeps from there, as the
    real agent never compacts a call in flight: its result would come back without its call.
    An empty user message is no turn (``is_prompt``): the walk goes on past one."""
    answered: set[str] = set()
    start = len(messages)
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if is_prompt(m) and not m.tool_results:
            break
        answered.update(r.tool_use_id for r in m.tool_results)
        if any(u.id not in answered for u in m.tool_uses):
            start = i
    return start


def waiting_from(messages: Sequence[Message]) -> int:
    """Index of the first assistant message since the latest human turn with a call still waiting
    for its result; ``len(messages)`` if none. A call whose id was answered earlier in the log (a
    log's own misordering) is not waiting. Walks back to the latest human turn (more when a call
    waits). A log can hold an assistant message between a call and its result, so the replay asks
    for an answer while the call is in flight, which no agent does."""
    start = unanswered_start(messages)
    if start == len(messages):
        return start
    answered = {r.tool_use_id for m in messages for r in m.tool_results}
    return next((k for k in range(start, len(messages)) if any(u.id not in answered for u in messages[k].tool_uses)),
                len(messages))


def latest_human_index(messages: Sequence[Message], *, skip_empty: bool = False) -> int:
    """Index of the latest real human turn (not a summary or other message a strategy made up); -1 if none.
    ``skip_empty``: an empty user message is no turn (``is_prompt``)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if (m.is_human_turn and not m.meta.get("summary") and not m.meta.get("synthetic")
                and not (skip_empty and is_empty(m))):
            return i
    return -1


def latest_human(messages: Sequence[Message]) -> Message | None:
    """The latest real human turn (not a summary or other message a strategy made up), one that
    says something: an empty user message is no request (``is_prompt``)."""
    i = latest_human_index(messages, skip_empty=True)
    return messages[i] if i >= 0 else None


# --- added for masking / openhands / aider / goose / tiered -------------------------------------

QUOTE_LEAD = "\n\nThe user's latest message:\n"


def latest_human_text(messages: Sequence[Message]) -> tuple[Message, str] | None:
    """(message, text) of the user's latest request: a real human turn, or the request an earlier
    summary stands for (when that summary is newer than every human turn left): the one its
    ``request`` meta names (a summary that holds the request in its own words, or a handoff's
    goal), else the quote it carries. None if neither.
    An empty user message is no request (``is_prompt``): taken for the latest, it would leave the
    real one before it unquoted when a summary replaces it."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if not m.meta.get("summary") and not m.meta.get("synthetic") and is_prompt(m):
            return m, m.text
        if m.meta.get("summary"):
            request = m.meta.get("request")
            if isinstance(request, str) and request:
                return m, request
            if QUOTE_LEAD in m.text:
                return m, m.text.rsplit(QUOTE_LEAD, 1)[1]
    return None


def carry_request(text: str, messages: Sequence[Message], kept: Sequence[Message], lead: str = QUOTE_LEAD
                  ) -> tuple[str, dict[str, str]]:
    """``text`` with the latest request quoted after ``lead`` unless it is kept verbatim or already in
    ``text``, and the ``request`` meta of the summary that carries it on (``latest_human_text``): for
    agents whose summary quotes the request only when it is missing (amp, baseagent)."""
    found = latest_human_text(messages)
    if found is None or any(m is found[0] for m in kept):
        return text, {}
    request = found[1]
    return (text if request in text else f"{text}{lead}{request}"), {"request": request}


def quote_latest_human(text: str, messages: Sequence[Message], kept: Sequence[Message]) -> str:
    """``text`` plus the latest human turn, when that turn is neither kept nor already quoted.

    Summaries that replace the message holding the user's latest request must carry it on
    (the harness contract; most real summary prompts ask for it too), whole, however long, and
    again when a later compaction summarizes that summary: the quote is explicit even when the
    summary happens to contain the text, so a later compaction can find it (``latest_human_text``).
    """
    found = latest_human_text(messages)
    if found is None or any(m is found[0] for m in kept) or not found[1] or QUOTE_LEAD + found[1] in text:
        return text
    return f"{text}{QUOTE_LEAD}{found[1]}"
