"""Plain OpenAI chat / Anthropic Messages importer: file shapes, usage semantics, fuzzed input."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from strategies import build
from tests.traces._fuzz import only_trace_errors
from traces.formats import chat, detect
from traces.model import Image, Thinking, ToolResult, ToolUse, TraceError, Usage

OPENAI = [
    {"role": "system", "content": "be brief"},
    {"role": "developer", "content": "use tools"},
    {"role": "user", "content": [{"type": "text", "text": "fix"},
                                 {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"cmd\": \"ls\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "bash", "arguments": "not json"}}],
     "usage": {"prompt_tokens": 1000, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 700}}},
    {"role": "tool", "tool_call_id": "call_1", "content": "a.py"},
    {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "err"}]},
    {"role": "tool", "tool_call_id": "call_9", "content": "stray"},
    {"role": "assistant", "content": "done", "reasoning_content": "hmm"},
]
ANTHROPIC = {"model": "claude-x", "system": "be brief", "messages": [
    {"role": "user", "content": "fix"},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"},
                                      {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"cmd": "ls"}}],
     "usage": {"input_tokens": 3, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 100,
               "output_tokens": 40}},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}]},
    {"role": "assistant", "content": "done"},
]}


def _write(text: str | bytes, suffix: str = ".json") -> Path:
    f = tempfile.NamedTemporaryFile("wb", suffix=suffix, delete=False)
    f.write(text.encode("utf-8") if isinstance(text, str) else text)
    f.close()
    return Path(f.name)


def test_openai_list(counter):
    path = _write(json.dumps(OPENAI, indent=2))
    assert detect(path) == "chat"
    result = chat.read_file(path)
    (trace,) = result.traces
    assert trace.agent == "openai-chat" and trace.id == path.stem
    assert [m.role for m in trace.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert trace.messages[0].text == "be brief\n\nuse tools"
    assert trace.messages[1].blocks[1] == Image("image/png", 3)
    call = trace.messages[2]
    assert call.tool_uses == (ToolUse("call_1", "bash", {"cmd": "ls"}),
                              ToolUse("call_2", "bash", {"arguments": "not json"}))
    assert call.usage == Usage(input_tokens=300, output_tokens=20, cache_read_tokens=700)
    results = trace.messages[3]
    assert results.blocks[:2] == (ToolResult("call_1", "a.py"), ToolResult("call_2", "err"))
    assert results.meta["orphan"] and "[orphan tool result call_9]" in results.text
    assert any("1 orphan" in n for n in result.notes)
    assert trace.messages[4].blocks[0] == Thinking("hmm")
    run = replay(trace, build("none"), ReplayConfig(profile("claude-sonnet-4-5")), counter=counter)
    assert len(run.calls) == 2 and run.error is None


def test_anthropic_object():
    (trace,) = chat.read_file(_write(json.dumps(ANTHROPIC, indent=1))).traces
    assert trace.agent == "anthropic-messages" and trace.model == "claude-x"
    assert [m.role for m in trace.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert trace.messages[2].usage == Usage(3, 40, 900, 100)
    assert trace.messages[3].tool_results == (ToolResult("toolu_1", "a.py"),)


def test_jsonl_one_conversation_per_line_and_per_message():
    lines = [json.dumps({"id": "a", "messages": OPENAI[:3]}), json.dumps(ANTHROPIC), json.dumps(OPENAI[2:4])]
    path = _write("\n".join(lines) + "\n", ".jsonl")
    result = chat.read_file(path)
    assert [t.id for t in result.traces] == ["a", f"{path.stem}#2", f"{path.stem}#3"]
    assert [t.agent for t in result.traces] == ["openai-chat", "anthropic-messages", "openai-chat"]
    # the third ends on a call without a result: the in-flight last message is left alone
    assert result.traces[2].messages[-1].tool_uses
    per_message = chat.read_file(_write("\n".join(json.dumps(m) for m in OPENAI[:4]), ".jsonl"))
    (trace,) = per_message.traces
    assert [m.role for m in trace.messages] == ["system", "user", "assistant"]


def test_unanswered_call_gets_flagged_result():
    msgs = [OPENAI[2], OPENAI[3], {"role": "user", "content": "next"}, {"role": "assistant", "content": "ok"}]
    result = chat.read_file(_write(json.dumps(msgs)))
    roles = [(m.role, [b.type for b in m.blocks]) for m in result.traces[0].messages]
    assert roles[2] == ("user", ["tool_result", "tool_result"]) and any("without a recorded result" in n
                                                                        for n in result.notes)


def test_errors_name_file_and_line():
    with pytest.raises(TraceError, match=r":3: bad JSON"):
        chat.read_file(_write('[\n {"role": "user", "content": "a"},\n oops]'))
    bad = _write(json.dumps(OPENAI[:2]) + "\n{nope\n" + json.dumps(OPENAI[2:4]) + "\n", ".jsonl")
    with pytest.raises(TraceError, match=r":2: bad JSON line"):
        chat.read_file(bad)
    lenient = chat.read_file(bad, lenient=True)
    assert lenient.skipped == 1 and len(lenient.traces) == 2
    with pytest.raises(TraceError, match=r":1: unknown message role 'robot'"):
        chat.read_file(_write(json.dumps([{"role": "robot", "content": "x"}]) + "\n" + json.dumps(OPENAI), ".jsonl"))


@pytest.mark.parametrize("head, claimed", [
    ('[\n  {\n    "role": "system",', True), ('{"messages": [{"content": "x", "role": "user"}]}', True),
    ('{"role": "user", "content": "hi"}\n', True), ('[{"id": 1, "action": "run"}]', False), ("# title", False),
])
def test_sniff(head, claimed):
    assert (chat.sniff_file(Path("x"), head) is None) == claimed


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                       lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
                           st.sampled_from(["role", "content", "messages", "tool_calls", "function", "id", "name",
                                            "arguments", "tool_call_id", "type", "text", "usage", "system",
                                            "prompt_tokens", "input", "tool_use_id", "image_url", "url"]),
                           kids, max_size=4), max_leaves=12)
ROLE = st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant", "tool", "function", "x"])},
                             optional={"content": JSONISH, "tool_calls": JSONISH, "usage": JSONISH,
                                       "tool_call_id": JSONISH, "function_call": JSONISH})


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.lists(ROLE, max_size=5).map(json.dumps),
                 st.lists(ROLE, max_size=5).map(lambda ms: "\n".join(json.dumps(m) for m in ms)),
                 st.integers(0, 400).map(lambda n: json.dumps(ANTHROPIC)[:n]),
                 JSONISH.map(json.dumps), st.binary(max_size=40)),
       st.booleans())
def test_fuzz_only_trace_errors(text, lenient):
    path = _write(text)
    try:
        only_trace_errors(chat.read_file, path, (lenient,))
    finally:
        path.unlink()
