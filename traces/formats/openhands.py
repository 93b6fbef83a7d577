"""OpenHands event streams (spec/formats.md §8): a JSON list of events (UI export / replay file),
or an evaluation ``output.jsonl`` with one instance a line and its events under ``history``.

Why the work: the log is events, not messages. Agent actions that came from one LLM response
share ``tool_call_metadata.model_response.id``: they become one assistant message (the response's
text plus one tool call per action, with the real arguments from the response). An observation
answers its action by ``tool_call_metadata.tool_call_id``, else by ``cause`` (the action's id).
State changes and ``null`` observations are not model context and are dropped. A ``condensation``
action (what OpenHands' condensers emit) is kept as a RecordedCompaction, not applied: the trace
stays the full history. Per-call usage comes from ``model_response.usage``, else from differences
of the cumulative ``llm_metrics``. Checked against All-Hands-AI/OpenHands @ 156d068
(evaluation/benchmarks/multi_swe_bench/examples/output.jsonl) and tests/runtime/trajs/*.json.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from traces.formats import ReadResult
from traces.formats._common import Skips, iter_jsonl, read_json, ts_seconds
from traces.formats.chat import Ids, finish, image_from_url, openai_usage, parse_arguments
from traces.model import Block, Message, RecordedCompaction, Text, ToolResult, ToolUse, Trace, TraceError, Usage

NAME = "openhands"
AGENT = "openhands"
SKIP_OBSERVATIONS = ("null", "agent_state_changed")
SKIP_ACTIONS = ("change_agent_state", "recall", "null", "condensation_request")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _tool_meta(e: dict[str, Any]) -> dict[str, Any]:
    tcm = e.get("tool_call_metadata")
    return tcm if isinstance(tcm, dict) else {}


def _response(e: dict[str, Any]) -> dict[str, Any]:
    r = _tool_meta(e).get("model_response")
    return r if isinstance(r, dict) else {}


def _response_message(resp: dict[str, Any]) -> dict[str, Any]:
    choices = resp.get("choices")
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    return first.get("message") if isinstance(first.get("message"), dict) else {}


def _tool_use(e: dict[str, Any], call_id: str) -> ToolUse:
    """The call as the model wrote it (from the raw response), else rebuilt from the action's args."""
    tcm = _tool_meta(e)
    for call in _list(_response_message(_response(e)).get("tool_calls")):
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict) and call.get("id") == call_id:
            return ToolUse(call_id, str(fn.get("name") or tcm.get("function_name") or e.get("action")),
                           parse_arguments(fn.get("arguments")))
    args = e.get("args") if isinstance(e.get("args"), dict) else {}
    return ToolUse(call_id, str(tcm.get("function_name") or e.get("action")),
                   {k: v for k, v in args.items() if k != "thought"})


def _user_blocks(e: dict[str, Any]) -> tuple[Block, ...]:
    args = e.get("args") if isinstance(e.get("args"), dict) else {}
    text = args.get("content") if isinstance(args.get("content"), str) else e.get("message")
    images = tuple(image_from_url(u) for u in _list(args.get("image_urls")) if isinstance(u, str))
    return (Text(text if isinstance(text, str) else ""),) + images


def _recall_text(e: dict[str, Any]) -> str:
    """What a workspace recall adds to the prompt: repository and microagent instructions."""
    extras = e.get("extras") if isinstance(e.get("extras"), dict) else {}
    parts = [str(e.get("content") or "")]
    parts += [str(extras[k]) for k in ("repo_instructions", "additional_agent_instructions") if extras.get(k)]
    parts += [str(k.get("content")) for k in _list(extras.get("microagent_knowledge")) if isinstance(k, dict)]
    return "\n\n".join(p for p in parts if p)


class _Builder:
    """Folds events into messages; one instance per trace."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.compactions: list[RecordedCompaction] = []
        self.call_of: dict[Any, str] = {}
        self.open_response: tuple[str, int] | None = None
        self.last_totals: dict[str, int] = {}
        self.model: str | None = None
        self.ids = Ids()

    def _usage(self, e: dict[str, Any]) -> Usage | None:
        usage = openai_usage(_response(e).get("usage"))
        metrics = e.get("llm_metrics")
        acc = metrics.get("accumulated_token_usage") if isinstance(metrics, dict) else None
        if isinstance(acc, dict):
            keys = ("prompt_tokens", "completion_tokens", "cache_read_tokens", "cache_write_tokens")
            totals = {k: acc[k] for k in keys if isinstance(acc.get(k), int) and not isinstance(acc.get(k), bool)}
            if usage is None and len(totals) == len(keys):
                d = {k: totals[k] - self.last_totals.get(k, 0) for k in keys}
                usage = Usage(max(d["prompt_tokens"] - d["cache_read_tokens"] - d["cache_write_tokens"], 0),
                              d["completion_tokens"], d["cache_read_tokens"], d["cache_write_tokens"])
            self.last_totals = totals
        return usage

    def _append_result(self, result: ToolResult, ts: float | None) -> None:
        if self.messages and self.messages[-1].is_tool_result:
            last = self.messages[-1]
            self.messages[-1] = Message("user", last.blocks + (result,), timestamp=last.timestamp)
        else:
            self.messages.append(Message("user", (result,), timestamp=ts))

    def action(self, e: dict[str, Any]) -> None:
        kind, source, ts = e.get("action"), e.get("source"), ts_seconds(e.get("timestamp"))
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        call_id = _tool_meta(e).get("tool_call_id")
        if kind == "condensation":
            summary = args.get("summary")
            before = next((m.usage.prompt_tokens for m in reversed(self.messages) if m.usage), None)
            self.compactions.append(RecordedCompaction(len(self.messages), "auto", before,
                                                       summary if isinstance(summary, str) else ""))
        elif kind == "system":
            text = args.get("content") if isinstance(args.get("content"), str) else str(e.get("message") or "")
            if not self.messages or self.messages[0].role != "system":
                self.messages.insert(0, Message.text_message("system", text, timestamp=ts))
        elif kind in SKIP_ACTIONS:
            return
        elif isinstance(call_id, str) and call_id:
            self._tool_action(e, call_id, ts)
        elif source == "user" and kind == "message":
            self.messages.append(Message("user", _user_blocks(e), timestamp=ts, id=str(e.get("id"))))
            self.open_response = None
        elif source == "agent":
            text = args.get("content") or args.get("thought") or e.get("message") or ""
            self.messages.append(Message("assistant", (Text(str(text)),), usage=self._usage(e), timestamp=ts,
                                         id=str(e.get("id"))))
            self.open_response = None

    def _tool_action(self, e: dict[str, Any], call_id: str, ts: float | None) -> None:
        resp = _response(e)
        if isinstance(resp.get("model"), str):
            self.model = resp["model"]
        self.call_of[str(e.get("id"))] = call_id
        use = _tool_use(e, call_id)
        rid = resp.get("id") if isinstance(resp.get("id"), str) else None
        if rid and self.open_response and self.open_response[0] == rid:
            i = self.open_response[1]
            self.messages[i] = self.messages[i].with_blocks(self.messages[i].blocks + (use,))
            return
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        text = _response_message(resp).get("content") if resp else args.get("thought")
        blocks: tuple[Block, ...] = ((Text(text),) if isinstance(text, str) and text else ()) + (use,)
        self.messages.append(Message("assistant", blocks, usage=self._usage(e), timestamp=ts, id=rid))
        self.open_response = (rid, len(self.messages) - 1) if rid else None

    def observation(self, e: dict[str, Any]) -> None:
        kind, ts = e.get("observation"), ts_seconds(e.get("timestamp"))
        if kind in SKIP_OBSERVATIONS:
            return
        call_id = _tool_meta(e).get("tool_call_id") or self.call_of.get(str(e.get("cause")))
        content = e.get("content") if isinstance(e.get("content"), str) else str(e.get("content") or "")
        if kind == "recall":
            self.messages.append(Message.text_message("user", _recall_text(e), timestamp=ts, meta={"recall": True}))
        elif isinstance(call_id, str) and call_id:
            self._append_result(ToolResult(call_id, content, kind == "error" or e.get("success") is False), ts)
        elif content:
            self.messages.append(Message.text_message("user", content, timestamp=ts, meta={"observation": kind}))


def events_trace(events: Any, *, trace_id: str, path: Path, line: int | None, meta: dict[str, Any],
                 notes: list[str]) -> Trace:
    if not isinstance(events, list):
        raise TraceError(f"events should be a list, got {type(events).__name__}", path=str(path), line=line)
    b = _Builder()
    for i, e in enumerate(events):
        at = f"history[{i}]" if line else f"[{i}]"
        if not isinstance(e, dict) or not ("action" in e or "observation" in e):
            raise TraceError("an event is an object with \"action\" or \"observation\"", path=str(path), line=line,
                             at=at)
        try:
            b.action(e) if "action" in e else b.observation(e)
        except TraceError as err:  # a field checked deep in the builder: name the file, line and event
            raise TraceError(str(err), path=str(path), line=line, at=at) from None
    model = meta.get("model") if isinstance(meta.get("model"), str) else b.model
    where = f"{path}:{line}" if line else str(path)
    return Trace(id=trace_id, messages=finish(b.messages, where, notes), agent=AGENT, model=model, source=str(path),
                 compactions=tuple(b.compactions), meta=meta)


def sniff_file(path: Path, head: str) -> str | None:
    text = head.lstrip("\ufeff \t\r\n")
    event = r'"source"\s*:\s*"(?:agent|user|environment)"'
    if text.startswith("[") and re.search(event, text) and re.search(r'"(?:action|observation)"\s*:', text):
        return None
    if text.startswith("{") and re.search(r'"instance_id"\s*:', text) and \
            (re.search(r'"history"\s*:\s*\[', text) or re.search(r'"agent_class"\s*:', text)):
        return None
    return "no OpenHands events (a list with source/action/observation, or output.jsonl with history)"


def read_file(path: Path, *, lenient: bool = False) -> ReadResult:
    path = Path(path)
    result = ReadResult([])
    if path.read_bytes()[:4096].lstrip().startswith(b"["):
        result.traces.append(events_trace(read_json(path), trace_id=path.stem, path=path, line=None,
                                          meta={}, notes=result.notes))
        return result
    skips = Skips()
    for lineno, row in iter_jsonl(path, lenient, skips):
        try:
            meta = row.get("metadata") if isinstance(row.get("metadata"), dict) else {}
            trace_id = str(row.get("instance_id") or f"{path.stem}#{lineno}")
            llm = meta.get("llm_config") if isinstance(meta.get("llm_config"), dict) else {}
            condenser = meta.get("condenser_config") if isinstance(meta.get("condenser_config"), dict) else {}
            kept = {"agent_class": meta.get("agent_class"), "model": llm.get("model"),
                    "condenser": condenser.get("type"), "error": row.get("error")}
            result.traces.append(events_trace(row.get("history"), trace_id=trace_id, path=path, line=lineno,
                                              meta=kept, notes=result.notes))
        except TraceError:
            if not lenient:
                raise
            skips.count += 1
    result.skipped = skips.count
    if not result.traces and not lenient:
        raise TraceError("no OpenHands instance found", path=str(path))
    return result
