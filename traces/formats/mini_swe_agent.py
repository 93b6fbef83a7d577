"""mini-swe-agent trajectories (``*.traj.json``), spec/formats.md §7.

Why: mini-swe-agent keeps the plain message list it sent, ``{info, messages, trajectory_format}``
(early versions and its test fixture: a bare list). Its one action per reply is a single fenced
```` ```mswea_bash_command ```` (older: ```` ```bash ````) block; the next user message is the
output. Like SWE-agent v0 we make that a ``bash`` tool call (``call-<n>``) and its result. A reply
with zero or several blocks is a format error in mini-swe-agent, so it stays text. Tool-calling
models (v2) write OpenAI ``tool_calls`` directly; per-message usage is read from ``extra.response``.
Checked against SWE-agent/mini-swe-agent @ a83fcae (tests/test_data/github_issue.traj.json).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from traces.formats import ReadResult
from traces.formats._common import read_json
from traces.formats.chat import Ids, finish, openai_messages
from traces.formats.swe_agent import with_text_actions
from traces.model import Trace, TraceError

NAME = "mini-swe-agent"
AGENT = "mini-swe-agent"
ROLES = ("system", "user", "assistant", "tool")
_ACTION = re.compile(r"```(?:mswea_bash_command|bash)\s*\n(.*?)\n```", re.S)
_SIGNS = (r'"trajectory_format"\s*:\s*"mini-swe-agent', r'"mini_version"\s*:', r"minisweagent\.",
          r"mswea_bash_command", r"<returncode>")


def bash_action(m: dict[str, Any]) -> tuple[str, str] | None:
    """(text without the block, command) when the reply holds exactly one bash block."""
    content = m.get("content")
    found = list(_ACTION.finditer(content)) if isinstance(content, str) else []
    if len(found) != 1 or not found[0].group(1).strip():
        return None
    block = found[0]
    command = block.group(1).strip()
    return (content[:block.start()] + content[block.end():]).strip(), command  # type: ignore[index]


def bash_call(m: dict[str, Any]) -> tuple[str, str, str] | None:
    found = bash_action(m)
    return None if found is None else (found[0], "bash", found[1])


def _flatten_extra(m: Any) -> Any:
    """Lift usage and timestamp out of mini-swe-agent's ``extra`` so the chat converter sees them."""
    if not isinstance(m, dict) or not isinstance(m.get("extra"), dict):
        return m
    extra = m["extra"]
    response = extra.get("response") if isinstance(extra.get("response"), dict) else {}
    lifted = {"usage": response.get("usage"), "timestamp": extra.get("timestamp")}
    return {**m, **{k: v for k, v in lifted.items() if v is not None and k not in m}}


def _model(info: dict[str, Any]) -> str | None:
    config = info.get("config")
    model = config.get("model") if isinstance(config, dict) else None
    name = model.get("model_name") if isinstance(model, dict) else None
    return name if isinstance(name, str) else None


def sniff_file(path: Path, head: str) -> str | None:
    text = head.lstrip("\ufeff \t\r\n")
    if not text.startswith(("[", "{")):
        return "not JSON"
    if text.startswith("[") and not re.match(r'\[\s*\{\s*"role"', text):
        return "not a list of {role, content} messages"
    if text.startswith("{") and not re.search(r'"messages"\s*:\s*\[', text[:200_000]) and \
            not re.search(_SIGNS[0], text):
        return "no \"messages\" list"
    if any(re.search(sign, text) for sign in _SIGNS):
        return None
    return "no mini-swe-agent marker (trajectory_format, mini_version, mswea_bash_command, <returncode>)"


def read_file(path: Path, *, lenient: bool = False) -> ReadResult:
    path = Path(path)
    d = read_json(path)
    info: dict[str, Any] = {}
    if isinstance(d, dict):
        info = d["info"] if isinstance(d.get("info"), dict) else {}
        d = d.get("messages")
    if not isinstance(d, list):
        raise TraceError("expected a list of messages (or an object holding \"messages\")", path=str(path))
    raw = [_flatten_extra(m) for m in d if not (isinstance(m, dict) and m.get("role") == "exit")]
    skipped = 0
    if lenient:
        good = [m for m in raw if isinstance(m, dict) and m.get("role") in ROLES]
        skipped, raw = len(raw) - len(good), good
    ids = Ids()
    try:
        messages = openai_messages(with_text_actions(raw, bash_call, ids), path=path, ids=ids)
    except TraceError:
        if not lenient:
            raise
        return ReadResult([], skipped + 1)
    notes: list[str] = []
    name = path.name.removesuffix(".json").removesuffix(".traj")
    trace = Trace(id=name, messages=finish(messages, str(path), notes), agent=AGENT, model=_model(info),
                  source=str(path), meta={"exit_status": info.get("exit_status"),
                                          "model_stats": info.get("model_stats") or {},
                                          "mini_version": info.get("mini_version")})
    return ReadResult([trace], skipped, notes)
