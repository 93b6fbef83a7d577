"""The offline default: a deterministic summary extracted from the messages themselves.

It writes the sections the strategy's own summary prompt names, in that prompt's order and style
(bench/summarizers/template.py), and fills them with what can be found without a model: the
user's requests (the task and the latest one whole, up to half the target size each), files
touched with what was last written to them, error lines, the actions taken, the agent's own
statements, and what comes next. It aims at the size the strategy's agent writes
(bench/summarizers/sizes.py: a log-normal fitted on the recorded summaries, drawn
deterministically per request), within the strategy's output budget;
where the history holds less than that, the summary is shorter.

What a strategy injected itself (OpenCode's "What did we do so far?", Claude Code's re-read
files, Goose's "continue") is not taken for the user's request, nor what the agent wrote into the
user's turn (a loaded skill's body, Claude Code's reminders with the CLAUDE.md contents, Codex's
AGENTS.md and environment messages): the agent does not count them as the user's words either.
What an earlier summary quoted of the user's requests is carried into the next one, as real
summary prompts ask.
"""

from __future__ import annotations

import re
import weakref
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from typing import NamedTuple

from bench.summarizers import Summary, SummaryRequest
from bench.summarizers.sizes import UNIT, size_fit
from bench.summarizers.template import DEFAULT, Section, sections
from traces.model import Message, ToolResult

PATH_KEYS = ("path", "file_path", "filePath", "filename", "file", "target_file", "notebook_path")
ERROR_WORDS = ("error", "exception", "traceback", "failed", "fatal", "assert")
ERROR_LINE = re.compile("(" + "|".join(ERROR_WORDS) + ")", re.IGNORECASE)
WRITTEN_KEYS = ("new_string", "content", "file_text", "new_str", "patch", "diff")
ACTION_KEYS = ("command", "cmd", "pattern", "query", "url", *PATH_KEYS)
INJECTED = ("synthetic", "compaction", "masked", "injected")
"""Meta flags of messages a strategy or the agent made up (not the user's words): ``injected`` is what
an importer marks as the agent's own (Claude Code's ``isMeta`` skill bodies and attachments)."""
AGENT_CONTEXT = ("# agents.md instructions", "<environment_context>", "<user_instructions>", "<skill",
                 "<user_shell_command>", "<turn_aborted>", "<subagent_notification>", "<additional_context>")
"""Starts of the user-role items Codex writes itself (AGENTS.md, environment, a loaded skill's body, ...):
Codex never counts them as user messages (openai/codex @e06dd0e5 codex-rs/core/src/event_mapping.rs:27-44
``is_contextual_user_message_content``; strategies/codex/common.py ``CONTEXTUAL_MARKERS``, which a summarizer,
an earlier stage, cannot import)."""
REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
"""Claude Code's reminders inside a user turn (the CLAUDE.md contents among them): the agent's, not the user's."""
REQUEST_ITEM = "User: "
CARRIED = re.compile(r"^- User: (.+)$", re.M)
QUOTED_REQUEST = re.compile(r"The user's latest message:\n(.+)\Z", re.S)


@lru_cache(maxsize=65_536)
def _errors_in(text: str) -> tuple[str, ...]:
    """Error-looking lines of one tool output, once per distinct text (every strategy summarizes
    the same recorded outputs)."""
    if not ERROR_LINE.search(text):  # one scan of the whole text; a line's match is a match in it
        return ()
    if not text.isascii():
        return tuple(line.strip()[:200] for line in text.splitlines() if ERROR_LINE.search(line))
    # ASCII: the case-insensitive pattern matches where the lowercased text holds a keyword (no
    # other letter folds to these in ASCII), and a keyword never crosses a line end, so the lines
    # holding one are found from the keywords' positions (str.find) instead of a regex per line.
    lines = text.splitlines(keepends=True)  # strip() below takes the line end off
    starts = list(accumulate(map(len, lines), initial=0))
    low = text.lower()
    held: set[int] = set()
    for word in ERROR_WORDS:
        i = low.find(word)
        while i >= 0:
            line = bisect_right(starts, i) - 1
            held.add(line)
            i = low.find(word, starts[line + 1])  # on to the next line
    return tuple(lines[i].strip()[:200] for i in sorted(held))


def files_touched(messages: tuple[Message, ...]) -> list[str]:
    """File paths named in tool inputs, first-seen order."""
    seen: dict[str, None] = {}
    for m in messages:
        for u in m.tool_uses:
            for key in PATH_KEYS:
                value = u.input.get(key)
                if isinstance(value, str) and value:
                    seen.setdefault(value, None)
    return list(seen)


def error_lines(messages: tuple[Message, ...], limit: int = 12) -> list[str]:
    """The last ``limit`` distinct error-looking lines of tool outputs."""
    found: dict[str, None] = {}
    for m in messages:
        for b in m.blocks:
            if isinstance(b, ToolResult):
                for line in _errors_in(b.content):
                    found.pop(line, None)
                    found[line] = None
    return list(found)[-limit:]


def user_requests(messages: tuple[Message, ...]) -> list[str]:
    """The user's requests in order: human turns, and those an earlier summary carried forward.

    A summary replaces the messages it covers; what it quoted of the user's requests (our
    ``- User: …`` items, or a strategy's "The user's latest message:") is carried into the next
    summary, as real summary prompts ask ("all user messages", "carry forward what is still open").
    Messages a strategy injected itself are not the user's.
    """
    return [x for m in messages for x in _requests_in(m)]


def _requests_in(m: Message) -> tuple[str, ...]:
    """What ``user_requests`` takes from one message (none of them empty)."""
    if any(m.meta.get(flag) for flag in INJECTED) or m.meta.get("role") == "developer":
        return ()
    out: list[str] = []
    if m.meta.get("summary"):
        out += [x.strip() for x in CARRIED.findall(m.text)]
        out += [x.strip() for x in QUOTED_REQUEST.findall(m.text)]
    elif m.is_human_turn and m.text.strip() and not m.text.lstrip()[:40].lower().startswith(AGENT_CONTEXT):
        out.append(REMINDER.sub("", m.text).strip() if "<system-reminder>" in m.text else m.text)
    return tuple(x for x in out if x)


@lru_cache(maxsize=65_536)
def _size(text: str) -> int:
    """cl100k tokens of one line of the summary (the unit of the size fit), once per distinct line."""
    from bench.tokens.counter import Tokenizer

    return Tokenizer(UNIT).count(text) + 1


class _Item(NamedTuple):
    """A candidate line (a named tuple, not a dataclass: ``_pools`` makes some thousand a summary)."""

    order: int
    """Position in the history (items are written in history order, whatever order chose them)."""
    text: str


_PER_MESSAGE: dict[tuple[int, int], tuple[weakref.ref, tuple]] = {}
"""id(message), clip → (a weak reference to the message, what ``_found`` read of it); an entry
goes when its message does, so the memo holds only what a live trace or context holds."""


def _forget(key: tuple[int, int]) -> Callable[[weakref.ref], None]:
    def drop(ref: weakref.ref) -> None:
        hit = _PER_MESSAGE.get(key)
        if hit is not None and hit[0] is ref:  # not a newer message that took the same id
            del _PER_MESSAGE[key]
    return drop


def _found(m: Message, clip: int) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...], tuple[str, ...], str | None,
                                           tuple[str, ...]]:
    """What ``_pools`` takes from one message: (path, file item) pairs, action items, error
    lines, the statement item and the user's requests in it, once per message object: some twenty
    strategies summarize the same recorded messages, most of them many times over."""
    key = (id(m), clip)
    hit = _PER_MESSAGE.get(key)
    if hit is not None and hit[0]() is m:
        return hit[1]
    files: list[tuple[str, str]] = []
    actions: list[str] = []
    for u in m.tool_uses:
        path = next((v for k in PATH_KEYS if isinstance(v := u.input.get(k), str) and v), None)
        if path is not None:
            written = next((v for k in WRITTEN_KEYS if isinstance(v := u.input.get(k), str) and v), "")
            files.append((path, path + (f" (last written: {_clip(written, 300)})" if written else "")))
        arg = next((v for k in ACTION_KEYS if isinstance(v := u.input.get(k), str) and v), "")
        actions.append(_clip(f"{u.name}: {arg}" if arg else u.name, 160))
    errors = tuple(line for b in m.blocks if isinstance(b, ToolResult) for line in _errors_in(b.content))
    statement = _clip(m.text, clip) if m.role == "assistant" and m.text.strip() else None
    found = (tuple(files), tuple(actions), errors, statement, _requests_in(m))
    _PER_MESSAGE[key] = (weakref.ref(m, _forget(key)), found)
    return found


def _pools(msgs: tuple[Message, ...], clip: int, whole: int = 10**9) -> dict[str, list[_Item]]:
    """Candidate items per section kind, most important first; the task and the latest request
    are kept up to ``whole`` tokens (``_clip_tokens``), the others to ``clip`` characters."""
    humans: list[str] = []
    files: dict[str, tuple[int, str]] = {}
    actions: list[_Item] = []
    statements: list[_Item] = []
    errors: dict[str, int] = {}
    """Each distinct error line → the last position it was seen at (in that order: an item is made
    only for the line kept, not for each time a log repeats it)."""
    for i, m in enumerate(msgs):
        paths, acts, lines, statement, asked = _found(m, clip)
        if asked:
            humans += asked
        for path, item in paths:
            files.pop(path, None)
            files[path] = (i, item)
        if acts:
            actions += [_Item(i, a) for a in acts]
        for line in lines:
            errors.pop(line, None)
            errors[line] = i
        if statement is not None:
            statements.append(_Item(i, statement))
    requests = [_Item(0, REQUEST_ITEM + _clip_tokens(humans[0], whole))] if humans else []
    if len(humans) > 1:
        requests.append(_Item(len(humans) - 1, REQUEST_ITEM + _clip_tokens(humans[-1], whole)))
        requests += [_Item(i, REQUEST_ITEM + _clip(humans[i], clip)) for i in range(len(humans) - 2, 0, -1)]
    last = statements.pop() if statements else None
    upcoming = ([_Item(len(msgs), _clip(last.text, 2 * clip))] if last else [])
    if humans:
        upcoming.append(_Item(len(msgs) + 1, "Continue with the user's latest request: " + _clip(humans[-1], clip)))
    return {
        "requests": requests,
        "files": [_Item(i, item) for i, item in reversed(files.values())],
        "errors": [_Item(i, line) for line, i in reversed(errors.items())],
        "actions": list(reversed(actions)),
        "statements": list(reversed(statements)),
        "next": upcoming,
    }


@dataclass(frozen=True)
class ExtractiveSummarizer:
    name: str = "extractive"
    max_chars: int = 48_000
    """Hard cap whatever the target and budget (12K tokens, past any recorded summary)."""
    per_message_chars: int = 600
    request_share: float = 0.5
    """The task and the latest request are kept whole up to this share of the target size each (issue
    24): a real summary restates a long request (a pasted spec, an attached file) in a few lines, so
    one message never takes the summary past the size its agent writes. The recorded OpenCode 1.4.3
    summary (1,101 tokens) restates a 9,957-token request (the typed line plus an attached file)
    whose whole text kept here made a 10,057-token summary; OpenCode's prompt asks for the goal in the
    summary's words ("## Goal / [What goal(s) is the user trying to accomplish?]", anomalyco/opencode
    @001aa6cc packages/opencode/src/session/compaction.ts, ``SessionCompaction.process``'s
    ``defaultPrompt``), not the request verbatim. Claude Code's (median 2,879) keep "all user messages"
    by their prompt yet none recorded reaches 5K tokens (bench/data/summary_sizes.toml)."""
    sized: bool = True
    """Aim at the size the strategy's agent writes (False: only what the sections' first items hold)."""

    def __deepcopy__(self, memo: dict) -> ExtractiveSummarizer:
        """Itself: frozen, of immutable fields, so a copy would be equal in every way. Said outright
        because the compiled build (bench/cli/native.py) cannot copy a frozen class field by field,
        and the twin fork (bench.replay.loop._Loop.fork) deep-copies the session that holds it."""
        return self

    def summarize(self, request: SummaryRequest) -> Summary:
        msgs = request.messages
        layout = sections(request.prompt)
        if not any(s.kind == "requests" for s in layout):  # the user's requests always go first
            layout = (DEFAULT[0], *layout)
        budget = min(self.max_chars // 4, request.max_tokens)
        target = budget
        if self.sized:
            first = msgs[0].text[:200] if msgs else ""
            last = msgs[-1].text[:200] if msgs else ""
            target = min(budget, size_fit(request.strategy)[1].sample(f"{request.strategy}|{len(msgs)}|{first}|{last}"))
        whole = max(self.per_message_chars // 4, int(target * self.request_share)) if self.sized else 10**9
        pools = _pools(msgs, self.per_message_chars, whole)
        text = _fill(layout, pools, target, budget)
        return Summary(text=text, input_tokens=0, output_tokens=0, model=self.name)


def _fill(layout: tuple[Section, ...], pools: dict[str, list[_Item]], target: int, budget: int) -> str:
    """Sections in the prompt's order; items taken round-robin until the target size (tokens),
    never past the budget. The task and the latest request come first and whole (an agent that loses them
    cannot go on); sections sharing a kind share its items."""
    cursor = {kind: 0 for kind in pools}
    chosen: list[list[_Item]] = [[] for _ in layout]
    used = sum(_size(s.heading(i + 1)) + 1 for i, s in enumerate(layout))

    def take(si: int) -> bool:
        nonlocal used
        kind = layout[si].kind
        pool = pools[kind]
        while cursor[kind] < len(pool):
            item = pool[cursor[kind]]
            cursor[kind] += 1
            cost = _size("- " + item.text)
            if used + cost <= budget:
                chosen[si].append(item)
                used += cost
                return True
        return False

    requests = next(i for i, s in enumerate(layout) if s.kind == "requests")
    take(requests)
    take(requests)
    for si in range(len(layout)):
        take(si)
    progress = True
    while progress and used < target:
        progress = False
        for si in range(len(layout)):
            if used >= target:
                break
            progress = take(si) or progress
    out = []
    for i, (section, items) in enumerate(zip(layout, chosen, strict=True)):
        lines = [f"- {x.text}" for x in sorted(items, key=lambda x: x.order)] or ["- (none)"]
        out.append("\n".join([section.heading(i + 1), *lines]))
    return "\n\n".join(out)


def _clip_tokens(text: str, tokens: int) -> str:
    """``text`` whitespace-collapsed, cut to at most ``tokens`` (the size unit, :data:`UNIT`) from
    its head: a request says what it wants first, what it pastes or attaches after."""
    text = " ".join(text.split())
    if _size(text) <= tokens:
        return text
    limit = min(len(text), tokens * 4)
    while limit > 1 and _size(text[: limit - 1] + "…") > tokens:
        limit = max(1, limit * tokens // _size(text[: limit - 1] + "…") - 1)
    return text[: limit - 1] + "…"


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
