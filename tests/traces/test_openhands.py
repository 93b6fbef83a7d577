"""OpenHands importer: the real event files, a hand-built stream with a condensation, fuzzed input."""

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
from traces.formats import detect, openhands, read_path
from traces.model import TraceError, orphans

FOLDER = "openhands__all-hands-ai"


def _raw_counts(events: list[dict]) -> tuple[int, int, int]:
    """(LLM responses, tool calls, messages) counted from the raw events, independently of the importer."""
    calls = [e for e in events if "action" in e and e.get("tool_call_metadata")]
    responses = {e["tool_call_metadata"]["model_response"]["id"] for e in calls}
    plain_agent = [e for e in events if e.get("source") == "agent" and e.get("action") == "message"
                   and not e.get("tool_call_metadata")]
    answered = {e["tool_call_metadata"]["tool_call_id"] for e in events if "observation" in e
                and e.get("tool_call_metadata")}
    # each response's results share one user message; a result-less response (finish) adds none
    result_msgs = sum(1 for rid in responses
                      if any(c["tool_call_metadata"]["tool_call_id"] in answered
                             for c in calls if c["tool_call_metadata"]["model_response"]["id"] == rid))
    system = sum(e.get("action") == "system" for e in events)
    users = sum(e.get("source") == "user" and e.get("action") == "message" for e in events)
    recalls = sum(e.get("observation") == "recall" for e in events)
    errors = sum(e.get("observation") == "error" and not e.get("tool_call_metadata") for e in events)
    messages = system + users + recalls + errors + len(responses) + len(plain_agent) + result_msgs
    return len(responses) + len(plain_agent), len(calls), messages


def assert_replays(trace, counter) -> None:
    unanswered, orphan_results = orphans(trace.messages)
    assert orphan_results == set()
    assert unanswered <= {u.id for u in trace.messages[-1].tool_uses}
    result = replay(trace, build("none"), ReplayConfig(profile("claude-sonnet-4-5")), counter=counter)
    assert len(result.calls) == trace.n_calls and result.failed is None and result.error is None


# instance: (messages, assistant calls, tool calls, summed per-call prompt tokens); MANIFEST.md §3
EVAL = {
    "ponylang__ponyc-4595": (48, 23, 23, 565_158),
    "ponylang__ponyc-4593": (69, 33, 33, 410_169),
    "ponylang__ponyc-4588": (102, 49, 49, 938_015),
}


def test_evaluation_output_jsonl(shared_traces, counter):
    path = shared_traces / FOLDER / "output.jsonl"
    assert detect(path) == "openhands"
    result = read_path(path)
    assert [t.id for t in result.traces] == list(EVAL) and result.skipped == 0 and result.notes == []
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for trace, row in zip(result.traces, rows, strict=True):
        n_messages, n_calls, n_tools, prompt = EVAL[trace.id]
        assert (len(trace.messages), trace.n_calls, trace.n_tool_calls) == (n_messages, n_calls, n_tools)
        assert _raw_counts(row["history"]) == (n_calls, n_tools, n_messages)
        usages = [m.usage for m in trace.messages if m.usage]
        assert len(usages) == n_calls
        recorded = row["metrics"]["accumulated_token_usage"]["prompt_tokens"]
        assert sum(u.prompt_tokens for u in usages) == prompt == recorded
        assert trace.messages[0].role == "system" and trace.messages[2].meta.get("recall")
        assert trace.model == "openai/openrouter-llama-4-maverick" and trace.agent == "openhands"
        assert trace.id == "ponylang__ponyc-4588" or trace.messages[-1].tool_uses[0].name == "finish"
        assert_replays(trace, counter)


@pytest.mark.parametrize("name, messages, calls, tools", [("basic.json", 4, 2, 2), ("basic_gui_mode.json", 10, 5, 4)])
def test_event_list_files(shared_traces, counter, name, messages, calls, tools):
    path = shared_traces / FOLDER / name
    assert detect(path) == "openhands"
    (trace,) = read_path(path).traces
    events = json.loads(path.read_text())
    assert (len(trace.messages), trace.n_calls, trace.n_tool_calls) == (messages, calls, tools)
    assert _raw_counts(events) == (calls, tools, messages)
    edit = trace.messages[1].tool_uses[0] if name == "basic.json" else trace.messages[3].tool_uses[0]
    assert edit.name == "str_replace_editor" and edit.input["command"] == "create"  # arguments from the raw response
    assert_replays(trace, counter)


def _write(obj, suffix=".json") -> Path:
    f = tempfile.NamedTemporaryFile("wb", suffix=suffix, delete=False)
    data = obj if isinstance(obj, bytes) else obj if isinstance(obj, str) else json.dumps(obj, indent=1)
    f.write(data if isinstance(data, bytes) else data.encode("utf-8"))
    f.close()
    return Path(f.name)


def _call(eid, cid, rid, name="execute_bash", args=None, usage=None):
    call = {"id": cid, "function": {"name": name, "arguments": json.dumps(args or {"command": "ls"})}}
    resp = {"id": rid, "model": "m", "choices": [{"message": {"content": f"thinking {eid}", "tool_calls": [call]}}]}
    if usage:
        resp["usage"] = usage
    return {"id": eid, "source": "agent", "action": "run", "args": {"command": "ls", "thought": "t"},
            "tool_call_metadata": {"function_name": name, "tool_call_id": cid, "model_response": resp}}


def _obs(eid, cause, content, cid=None):
    e = {"id": eid, "source": "agent", "observation": "run", "cause": cause, "content": content, "extras": {}}
    if cid:
        e["tool_call_metadata"] = {"tool_call_id": cid}
    return e


SAMPLE = [
    {"id": 0, "source": "agent", "action": "system", "args": {"content": "SYS"}},
    {"id": 1, "source": "user", "action": "message", "args": {"content": "fix it"}},
    {"id": 2, "source": "environment", "observation": "agent_state_changed", "content": "", "extras": {}},
    _call(3, "c1", "r1", usage={"prompt_tokens": 1000, "completion_tokens": 10,
                                "prompt_tokens_details": {"cached_tokens": 800}}),
    _call(4, "c2", "r1"),  # same response: one assistant message, two calls
    _obs(5, 3, "out1", "c1"),
    _obs(6, 4, "out2"),  # linked by cause only
    {"id": 7, "source": "agent", "action": "condensation",
     "args": {"forgotten_events_start_id": 3, "forgotten_events_end_id": 6, "summary": "ran ls twice"}},
    _call(8, "c3", "r2", name="finish", args={"message": "done"}),
]


def test_hand_built_stream_groups_links_and_records_condensation():
    result = openhands.read_file(_write(SAMPLE))
    (trace,) = result.traces
    assert [(m.role, [b.type for b in m.blocks]) for m in trace.messages] == [
        ("system", ["text"]), ("user", ["text"]), ("assistant", ["text", "tool_use", "tool_use"]),
        ("user", ["tool_result", "tool_result"]), ("assistant", ["text", "tool_use"])]
    assert [r.content for r in trace.messages[3].tool_results] == ["out1", "out2"]
    usage = trace.messages[2].usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (200, 800, 10)
    (c,) = trace.compactions
    assert (c.message_index, c.summary, c.pre_tokens) == (4, "ran ls twice", 1000)


def test_cumulative_metrics_are_differenced():
    events = [{"id": 1, "source": "user", "action": "message", "args": {"content": "go"}}]
    for i, (total, out) in enumerate([(100, 5), (250, 9)]):
        e = _call(2 + 2 * i, f"c{i}", f"r{i}")
        e["llm_metrics"] = {"accumulated_token_usage": {"prompt_tokens": total, "completion_tokens": out,
                                                        "cache_read_tokens": 0, "cache_write_tokens": 0}}
        events += [e, _obs(3 + 2 * i, 2 + 2 * i, "x", f"c{i}")]
    (trace,) = openhands.read_file(_write(events)).traces
    assert [(m.usage.input_tokens, m.usage.output_tokens) for m in trace.messages if m.usage] == [(100, 5), (150, 4)]


def test_orphan_observation_is_flagged_and_noted():
    events = [{"id": 1, "source": "user", "action": "message", "args": {"content": "go"}}, _obs(2, 99, "lost", "zz")]
    result = openhands.read_file(_write(events))
    assert result.traces[0].messages[1].meta["orphan"] and any("orphan" in n for n in result.notes)


def test_bad_line_in_output_jsonl():
    path = _write(json.dumps({"instance_id": "a", "history": SAMPLE}) + "\n{broken\n", suffix=".jsonl")
    with pytest.raises(TraceError, match=r":2: bad JSON"):
        openhands.read_file(path)
    result = openhands.read_file(path, lenient=True)
    assert result.skipped == 1 and [t.id for t in result.traces] == ["a"]


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                       lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
                           st.sampled_from(["id", "action", "observation", "args", "cause", "content", "source",
                                            "tool_call_metadata", "tool_call_id", "model_response", "choices",
                                            "usage", "llm_metrics", "history", "instance_id", "message"]),
                           kids, max_size=4), max_leaves=12)


def _event_like():
    keys = ["id", "action", "observation", "args", "cause", "content", "source", "tool_call_metadata", "extras",
            "llm_metrics", "success", "timestamp"]
    inner = st.dictionaries(st.sampled_from(["tool_call_id", "model_response", "choices", "message", "tool_calls",
                                             "function", "usage", "prompt_tokens", "accumulated_token_usage",
                                             "content", "summary", "image_urls", "microagent_knowledge", "id"]),
                            JSONISH, max_size=4)
    values = st.one_of(JSONISH, inner, st.sampled_from(["run", "message", "system", "condensation", "recall",
                                                        "agent", "user", "c1", "r1"]))
    return st.lists(st.dictionaries(st.sampled_from(keys), values, max_size=6), max_size=6)


def _mutations():
    text = json.dumps(SAMPLE)
    line = json.dumps({"instance_id": "a", "history": SAMPLE})
    return st.one_of(
        st.integers(0, len(text)).map(lambda n: text[:n]),
        st.integers(0, len(line)).map(lambda n: line[:n] + "\n"),
        st.lists(JSONISH, max_size=4).map(json.dumps),
        _event_like().map(json.dumps),
        st.lists(JSONISH, max_size=3).map(lambda rows: "\n".join(json.dumps({"history": r}) for r in rows)),
        st.binary(max_size=40),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutations(), st.booleans())
def test_fuzz_only_trace_errors(text, lenient):
    path = _write(text)
    try:
        only_trace_errors(openhands.read_file, path, (lenient,))
    finally:
        path.unlink()
