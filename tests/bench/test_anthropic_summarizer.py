"""The Anthropic summarizer driven through the real SDK over an httpx2 mock transport.

No fake classes: the handler sees the HTTP request the official SDK builds and answers with a
Messages API JSON body, so the request shape, the usage mapping, retries and the disk cache are
all exercised as they would be against the live API.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx2
import pytest

from bench.summarizers import SummaryRequest, build
from bench.summarizers.anthropic import AnthropicSummarizer, SummarizerError
from traces.model import Message, Text, Thinking, ToolResult, ToolUse

Handler = Callable[[httpx2.Request], httpx2.Response]


def reply(text: str = "SUMMARY", *, input_tokens: int = 120, output_tokens: int = 30,
          cache_read: int | None = None, cache_write: int | None = None) -> httpx2.Response:
    """A streamed Messages API answer (server-sent events), as the live API sends it."""
    usage: dict[str, object] = {"input_tokens": input_tokens, "output_tokens": 1}
    if cache_read is not None:
        usage["cache_read_input_tokens"] = cache_read
    if cache_write is not None:
        usage["cache_creation_input_tokens"] = cache_write
    message = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-haiku-4-5-20251001",
               "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}
    half = len(text) // 2
    events = [
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        *[("content_block_delta", {"type": "content_block_delta", "index": 0,
                                   "delta": {"type": "text_delta", "text": part}})
          for part in (text[:half], text[half:])],
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": output_tokens}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    sse = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=sse.encode())


class Recorder:
    """A MockTransport handler that keeps every request body it saw."""

    def __init__(self, *responses: httpx2.Response) -> None:
        self.responses = list(responses)
        self.bodies: list[dict] = []
        self.paths: list[str] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.paths.append(request.url.path)
        self.bodies.append(json.loads(request.content))
        return self.responses.pop(0)


def summarizer(handler: Handler, tmp_path: Path, **kw) -> AnthropicSummarizer:
    client = httpx2.Client(transport=httpx2.MockTransport(handler))
    return AnthropicSummarizer(api_key="sk-test", cache_dir=tmp_path / "cache", http_client=client, **kw)


HISTORY = (
    Message.text_message("system", "You are a coding agent."),
    Message.text_message("user", "Fix the failing test in calc.py"),
    Message("assistant", (Thinking("look at the file first"), Text("Reading it."),
                          ToolUse("toolu_1", "read_file", {"path": "calc.py"}))),
    Message("user", (ToolResult("toolu_1", "def add(a, b): return a - b"),)),
    Message("assistant", (ToolUse("call:2", "bash", {"cmd": "pytest"}),)),
    Message("user", (Text("also keep the API stable"), ToolResult("call:2", "1 failed", is_error=True))),
)


def test_request_body_and_usage(tmp_path: Path) -> None:
    rec = Recorder(reply("The user wants calc.py fixed.", input_tokens=90, output_tokens=12,
                         cache_read=4000, cache_write=None))
    s = summarizer(rec, tmp_path)
    out = s.summarize(SummaryRequest(HISTORY, "Summarize the conversation.", 2000, "claude-code"))

    body = rec.bodies[0]
    assert rec.paths == ["/v1/messages"]
    assert body["model"] == "claude-haiku-4-5"
    assert body["max_tokens"] == 2000
    assert body["cache_control"] == {"type": "ephemeral"}
    assert body["stream"] is True
    assert body["system"] == [{"type": "text", "text": "You are a coding agent."}]
    msgs = body["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user", "user"]
    assert msgs[-1] == {"role": "user", "content": [{"type": "text", "text": "Summarize the conversation."}]}
    # thinking dropped, text and tool_use kept in order
    assert msgs[1]["content"] == [
        {"type": "text", "text": "Reading it."},
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "calc.py"}},
    ]
    assert msgs[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "def add(a, b): return a - b"}]
    # an id the API would refuse ("call:2") is rewritten the same way on both sides;
    # the tool result is moved before the text of the same user message, as the API requires
    assert msgs[3]["content"][0]["id"] == "call_2"
    assert msgs[4]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_2", "content": "1 failed", "is_error": True},
        {"type": "text", "text": "also keep the API stable"},
    ]
    # tool blocks need declared tools; the summarizer must not call them
    assert [t["name"] for t in body["tools"]] == ["read_file", "bash"]
    assert body["tool_choice"] == {"type": "none"}

    assert out.text == "The user wants calc.py fixed."
    assert (out.input_tokens, out.output_tokens, out.cache_read_tokens, out.cache_write_tokens) == (90, 12, 4000, 0)
    assert out.model == "claude-haiku-4-5" and out.billed is True


def test_disk_cache_makes_reruns_free(tmp_path: Path) -> None:
    rec = Recorder(reply("first", cache_write=5000))
    request = SummaryRequest(HISTORY, "Summarize.", 1000)
    first = summarizer(rec, tmp_path).summarize(request)
    # a new instance (a rerun) with a handler that would fail if called
    def refuse(_: httpx2.Request) -> httpx2.Response:
        raise AssertionError("cached request went to the network")
    again = summarizer(refuse, tmp_path).summarize(request)
    assert again == first and first.cache_write_tokens == 5000
    assert len(rec.bodies) == 1
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 1
    assert not list((tmp_path / "cache").rglob("*.tmp"))
    # a different prompt is a different request
    rec2 = Recorder(reply("second"))
    assert summarizer(rec2, tmp_path).summarize(SummaryRequest(HISTORY, "Other prompt.", 1000)).text == "second"
    assert len(rec2.bodies) == 1


def test_overloaded_529_is_retried(tmp_path: Path) -> None:
    overloaded = httpx2.Response(529, headers={"retry-after-ms": "1"},
                                 json={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    rec = Recorder(overloaded, overloaded, reply("after retries"))
    out = summarizer(rec, tmp_path, max_retries=2).summarize(SummaryRequest(HISTORY, "Summarize.", 500))
    assert out.text == "after retries"
    assert len(rec.bodies) == 3 and rec.bodies[0] == rec.bodies[2]


def test_overloaded_beyond_retries_raises(tmp_path: Path) -> None:
    import anthropic

    overloaded = httpx2.Response(529, headers={"retry-after-ms": "1"},
                                 json={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    rec = Recorder(overloaded, overloaded)
    with pytest.raises(anthropic.APIStatusError) as info:
        summarizer(rec, tmp_path, max_retries=1).summarize(SummaryRequest(HISTORY, "Summarize.", 500))
    assert info.value.status_code == 529
    assert not list((tmp_path / "cache").rglob("*.json")), "a failure must not be cached"


def test_missing_key_is_our_error_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(SummarizerError, match="ANTHROPIC_API_KEY"):
        build("anthropic")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-env")
    assert build("anthropic").model == "claude-haiku-4-5"


def test_unknown_model_refused_at_construction() -> None:
    with pytest.raises(SummarizerError, match="no price for model"):
        AnthropicSummarizer(api_key="sk-test", model="claude-imaginary-9")


def test_orphans_and_assistant_first_are_made_valid(tmp_path: Path) -> None:
    rec = Recorder(reply())
    history = (
        Message("user", (ToolResult("gone", "output of a call cut away"),)),
        Message("assistant", (Text("done"), ToolUse("inflight", "bash", {"cmd": "ls"}))),
    )
    summarizer(rec, tmp_path).summarize(SummaryRequest(history, "Summarize.", 100))
    msgs = rec.bodies[0]["messages"]
    orphan = {"type": "text", "text": "[tool result gone]\noutput of a call cut away"}
    assert msgs[0] == {"role": "user", "content": [orphan]}
    assert msgs[1] == {"role": "assistant", "content": [{"type": "text", "text": "done"}]}
    assert "tools" not in rec.bodies[0] and "system" not in rec.bodies[0]
    assert rec.bodies[0]["max_tokens"] == 100


def test_max_tokens_capped_at_model_output(tmp_path: Path) -> None:
    rec = Recorder(reply())
    summarizer(rec, tmp_path).summarize(SummaryRequest(HISTORY, "Summarize.", 1_000_000))
    assert rec.bodies[0]["max_tokens"] == 64_000
