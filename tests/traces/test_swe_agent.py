"""SWE-agent .traj and mini-swe-agent importers: the real files, hand-built cases, fuzzed input."""

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
from traces.formats import detect, mini_swe_agent, read_path, swe_agent
from traces.model import ToolResult, TraceError, orphans

FOLDER = "swe-agent__swe-agent"

# file: (messages = len(history), assistant turns, tool calls, format); MANIFEST.md table, checked by hand
EXPECTED = {
    "pydicom__pydicom-1458.traj": (26, 12, 12, "v0-text-actions"),
    "swe-agent__test-repo-i1.traj": (12, 5, 5, "v0-text-actions"),
    "6e44b9__sweagenttestrepo-1c2844.traj": (10, 4, 4, "v1-function-calling"),
    "marshmallow-code__marshmallow-1867.traj": (28, 13, 13, "v1-function-calling"),
    "i_got_id_demo.traj": (43, 21, 21, "v0-text-actions"),
}


def _raw_counts(path: Path) -> tuple[int, int, int]:
    """(messages, assistant turns, actions) straight from the raw history."""
    history = json.loads(path.read_text())["history"]
    asst = [m for m in history if m["role"] == "assistant"]
    actions = sum(len(m["tool_calls"]) if m.get("tool_calls") else bool(m.get("action", "").strip()) for m in asst)
    return len(history), len(asst), actions


def assert_replays(trace, counter) -> None:
    unanswered, orphan_results = orphans(trace.messages)
    assert orphan_results == set()
    assert unanswered <= {u.id for u in trace.messages[-1].tool_uses}  # only the in-flight last call
    result = replay(trace, build("none"), ReplayConfig(profile("claude-sonnet-4-5")), counter=counter)
    assert len(result.calls) == trace.n_calls and result.failed is None and result.error is None


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_traj_files(shared_traces, counter, name):
    path = shared_traces / FOLDER / name
    assert detect(path) == "swe-agent"
    result = read_path(path)
    (trace,) = result.traces
    assert result.skipped == 0 and result.notes == []
    n_messages, n_calls, n_tools, fmt = EXPECTED[name]
    assert (len(trace.messages), trace.n_calls, trace.n_tool_calls) == (n_messages, n_calls, n_tools)
    assert _raw_counts(path) == (n_messages, n_calls, n_tools)
    assert trace.meta["format"] == fmt and trace.agent == "swe-agent" and trace.source == str(path)
    assert trace.messages[0].role == "system"
    assert_replays(trace, counter)


def test_v0_text_action_becomes_a_tool_call(shared_traces):
    path = shared_traces / FOLDER / "pydicom__pydicom-1458.traj"
    trace = read_path(path).traces[0]
    assert trace.messages[1].role == "user" and "DEMONSTRATION" in trace.messages[1].text  # the demo stays text
    first = trace.messages[3]
    assert first.tool_uses[0].id == "call-1" and first.tool_uses[0].name == "create"
    assert first.tool_uses[0].input == {"command": "create reproduce_bug.py"}
    assert first.text.startswith("First, I'll create a new Python script") and "```" not in first.text
    (res,) = trace.messages[4].tool_results
    assert res.tool_use_id == "call-1" and res.content.startswith("[File: /pydicom__pydicom/reproduce_bug.py")
    assert trace.messages[-1].tool_uses[0].name == "submit"
    assert trace.meta["model_stats"]["tokens_sent"] == 122_612 and trace.model is None


def test_v1_function_calls_keep_their_ids(shared_traces):
    trace = read_path(shared_traces / FOLDER / "6e44b9__sweagenttestrepo-1c2844.traj").traces[0]
    use = trace.messages[2].tool_uses[0]
    assert (use.id, use.name, use.input) == ("call_fJuazlMUN5fQDQ73G6XSpYpx", "find_file",
                                             {"file_name": "missing_colon.py"})
    assert trace.messages[3].tool_results[0].tool_use_id == use.id
    assert trace.model == "gpt-4o"


def test_mini_swe_agent_real_file(shared_traces, counter):
    path = shared_traces / "mini-swe-agent__swe-agent" / "github_issue.traj.json"
    assert detect(path) == "mini-swe-agent"
    raw = json.loads(path.read_text())
    blocks = sum(m["content"].count("```mswea_bash_command") for m in raw if m["role"] == "assistant")
    (trace,) = read_path(path).traces
    assert (len(trace.messages), trace.n_calls, trace.n_tool_calls) == (len(raw), 10, blocks) == (22, 10, 10)
    assert {u.name for m in trace.messages for u in m.tool_uses} == {"bash"}
    use = trace.messages[2].tool_uses[0]
    assert use.id == "call-1" and use.input["command"].startswith("cat /Users/fuchur/")
    assert trace.messages[3].tool_results[0].content.startswith("<returncode>1</returncode>")
    assert trace.agent == "mini-swe-agent"
    assert_replays(trace, counter)


def _write(obj, suffix=".json") -> Path:
    f = tempfile.NamedTemporaryFile("wb", suffix=suffix, delete=False)
    data = obj if isinstance(obj, bytes) else obj if isinstance(obj, str) else json.dumps(obj, indent=1)
    f.write(data if isinstance(data, bytes) else data.encode("utf-8"))
    f.close()
    return Path(f.name)


def test_mini_v2_format_error_and_usage():
    doc = {"info": {"exit_status": "Submitted", "config": {"model": {"model_name": "m1"}}},
           "trajectory_format": "mini-swe-agent-1.1",
           "messages": [
               {"role": "system", "content": "sys"},
               {"role": "user", "content": "task"},
               {"role": "assistant", "content": "two\n```mswea_bash_command\nls\n```\n```mswea_bash_command\npwd\n```",
                "extra": {"response": {"usage": {"prompt_tokens": 100, "completion_tokens": 7,
                                                 "prompt_tokens_details": {"cached_tokens": 60}}}}},
               {"role": "user", "content": "format error: exactly one block"},
               {"role": "assistant", "content": "ok\n```mswea_bash_command\nls\n```"},
               {"role": "user", "content": "<returncode>0</returncode>"},
               {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}}]}
    path = _write(doc)
    assert mini_swe_agent.sniff_file(path, path.read_text()) is None
    (trace,) = mini_swe_agent.read_file(path).traces
    assert [m.role for m in trace.messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert trace.messages[2].tool_uses == () and trace.messages[3].text.startswith("format error")
    assert trace.messages[2].usage.input_tokens == 40 and trace.messages[2].usage.cache_read_tokens == 60
    assert trace.messages[5].tool_results[0] == ToolResult("call-1", "<returncode>0</returncode>")
    assert trace.model == "m1"


def test_history_missing_falls_back_to_last_step_messages():
    doc = {"trajectory": [{"action": "ls\n", "observation": "a.py", "thought": "look", "response": "look\n```\nls\n```",
                           "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]}],
           "info": {}}
    (trace,) = swe_agent.read_file(_write(doc)).traces
    assert [m.role for m in trace.messages] == ["system", "user", "assistant"]
    assert trace.messages[-1].tool_uses[0].input == {"command": "ls"}


def test_bad_json_names_the_line():
    path = _write('{\n "history": [\n  {"role": "user",\n  oops\n ]\n}')
    with pytest.raises(TraceError, match=r":4: bad JSON"):
        swe_agent.read_file(path)


def test_lenient_skips_bad_messages():
    doc = {"trajectory": [], "history": [{"role": "system", "content": "s"}, 7, {"role": "robot"},
                                         {"role": "user", "content": "u"}]}
    with pytest.raises(TraceError, match="unknown message role|expected an object"):
        swe_agent.read_file(_write(doc))
    result = swe_agent.read_file(_write(doc), lenient=True)
    assert result.skipped == 2 and len(result.traces[0].messages) == 2


GOOD = {"trajectory": [], "history": [
    {"role": "system", "content": "s"}, {"role": "user", "content": "task"},
    {"role": "assistant", "content": "x", "thought": "x", "action": "ls -a"},
    {"role": "user", "content": "out"},
    {"role": "assistant", "content": "t", "tool_calls": [{"id": "c", "function": {"name": "bash", "arguments": "{}"}}]},
    {"role": "tool", "content": "r", "tool_call_ids": ["c"]}]}
JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                       lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
                           st.sampled_from(["role", "content", "history", "tool_calls", "function", "id", "name",
                                            "arguments", "action", "thought", "tool_call_ids", "messages", "extra"]),
                           kids, max_size=4), max_leaves=12)


def _mutations():
    text = json.dumps(GOOD)
    return st.one_of(
        st.integers(0, len(text)).map(lambda n: text[:n]),
        JSONISH.map(json.dumps),
        st.builds(lambda msgs: json.dumps({"trajectory": [], "history": msgs}), st.lists(JSONISH, max_size=4)),
        st.builds(lambda msgs: json.dumps(msgs), st.lists(JSONISH, max_size=4)),
        st.binary(max_size=40),
    )


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutations(), st.booleans())
def test_fuzz_only_trace_errors(text, lenient):
    path = _write(text)
    try:
        for module in (swe_agent, mini_swe_agent):
            only_trace_errors(module.read_file, path, (lenient,))
    finally:
        path.unlink()


MINI_V2 = {"info": {"exit_status": "Submitted", "config": {"model": {"model_name": "m1"}}},
           "trajectory_format": "mini-swe-agent-1.1",
           "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"},
                        {"role": "assistant", "content": "look\n```mswea_bash_command\nls\n```",
                         "extra": {"response": {"usage": {"prompt_tokens": 9, "completion_tokens": 2}}}},
                        {"role": "user", "content": "<returncode>0</returncode>"},
                        {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}}]}
MINI_V1 = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"},
           {"role": "assistant", "content": "look\n```bash\nls\n```"},
           {"role": "user", "content": "<returncode>0</returncode>\n<output>a.py</output>"}]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_mini_swe_agent_only_trace_errors(data):
    """mini-swe-agent's own shapes (a bare message list, the 1.1 document): truncated, retyped, dropped, bytes."""
    doc = json.loads(json.dumps(data.draw(st.sampled_from([MINI_V1, MINI_V2]))))
    messages = doc["messages"] if isinstance(doc, dict) else doc
    op = data.draw(st.sampled_from(["truncate", "retype", "drop", "bytes"]))
    if op in ("retype", "drop"):
        target = data.draw(st.sampled_from(([doc, doc["info"]] if isinstance(doc, dict) else []) + messages))
        key = data.draw(st.sampled_from(sorted(target)))
        if op == "drop":
            del target[key]
        else:
            target[key] = data.draw(JSONISH)
    text = json.dumps(doc).encode()
    if op == "truncate":
        text = text[: data.draw(st.integers(0, len(text) - 1))]
    elif op == "bytes":
        text = data.draw(st.binary(max_size=40))
    path = _write(text, ".traj.json")
    try:
        only_trace_errors(mini_swe_agent.read_file, path)
    finally:
        path.unlink()
