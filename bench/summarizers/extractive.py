"""The offline default: a deterministic summary extracted from the messages themselves.

It keeps what the real agents' summary prompts ask for and what can be found without a model:
the task statement, every user request (Claude Code's prompt asks for "All user messages"),
the files touched (from tool inputs), error lines from tool outputs, and the last assistant
text. Its size is bounded by the strategy's output budget (chars/4 of it, and ``max_chars``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bench.summarizers import Summary, SummaryRequest
from traces.model import Message, ToolResult

PATH_KEYS = ("path", "file_path", "filePath", "filename", "file", "target_file", "notebook_path")
ERROR_LINE = re.compile(r"(error|exception|traceback|failed|fatal|assert)", re.IGNORECASE)


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
                for line in b.content.splitlines():
                    if ERROR_LINE.search(line):
                        found.pop(line.strip()[:200], None)
                        found[line.strip()[:200]] = None
    return list(found)[-limit:]


@dataclass(frozen=True)
class ExtractiveSummarizer:
    name: str = "extractive"
    max_chars: int = 24_000
    """Hard cap whatever the budget: ~6K tokens, the order of real compaction summaries."""
    per_message_chars: int = 600

    def summarize(self, request: SummaryRequest) -> Summary:
        msgs = request.messages
        humans = user_requests(msgs)
        last_assistant = next((m.text for m in reversed(msgs) if m.role == "assistant" and m.text.strip()), "")
        # The latest request goes in whole (up to the budget): an agent that loses it cannot go on.
        latest = [" ".join(humans[-1].split())] if len(humans) > 1 else []
        sections = [
            ("Task", humans[:1]),
            ("Latest request", latest),
            ("Earlier user messages", humans[1:-1]),
            ("Files touched", files_touched(msgs)),
            ("Errors seen", error_lines(msgs)),
            ("Last assistant message", [last_assistant] if last_assistant else []),
        ]
        budget = min(self.max_chars, request.max_tokens * 4)
        out: list[str] = []
        used = 0
        for title, items in sections:
            clip = self.max_chars if title in ("Task", "Latest request") else self.per_message_chars
            lines = [f"## {title}"] + ([f"- {_clip(x, clip)}" for x in items] or ["- (none)"])
            for line in lines:
                if used + len(line) + 1 > budget:
                    break
                out.append(line)
                used += len(line) + 1
        return Summary(text="\n".join(out), input_tokens=0, output_tokens=0, model=self.name)


SECTION_REQUEST = re.compile(r"^## (?:Task|Latest request)\n- (.+)$", re.M)
QUOTED_REQUEST = re.compile(r"The user's latest message:\n(.+)\Z", re.S)


def user_requests(messages: tuple[Message, ...]) -> list[str]:
    """The user's requests in order: human turns, and those an earlier summary carried forward.

    A summary replaces the messages it covers; what it quoted of the user's requests (our own
    "## Task" / "## Latest request" sections, or a strategy's "The user's latest message:")
    is carried into the next summary, as real summary prompts ask ("all user messages",
    "carry forward what is still open").
    """
    out: list[str] = []
    for m in messages:
        if m.meta.get("summary"):
            out += [x.strip() for x in SECTION_REQUEST.findall(m.text)]
            out += [x.strip() for x in QUOTED_REQUEST.findall(m.text)]
        elif m.is_human_turn and m.text.strip():
            out.append(m.text)
    return [x for x in out if x]


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
