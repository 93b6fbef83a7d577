"""Cline importer: the SDK fixtures in ../shared/traces, a hand-built VS Code task, and fuzzed input."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from strategies import build
from tests.traces._fuzz import only_trace_errors
from traces.formats import cline, detect, read_path
from traces.model import TraceError, orphans

FOLDER = "cline-sdk__cline"


def test_every_real_file_imports_and_replays(shared_traces, counter):
    files = sorted((shared_traces / FOLDER).glob("*.json"))
    assert len(files) == 5
    for path in files:
        assert detect(path) == "cline", path
        result = read_path(path)
        raw = json.loads(path.read_text())
        if "messages" not in raw:  # session.json: metadata only
            assert result.traces == [] and "metadata" in result.notes[0]
            continue
        (trace,) = result.traces
        msgs = raw["messages"]
        has_system = bool(raw.get("system_prompt"))
        assert len(trace.messages) == len(msgs) + has_system, path
        assert (trace.messages[0].role == "system") == has_system
        assert trace.n_calls == sum(m["role"] == "assistant" for m in msgs)
        assert trace.n_tool_calls == sum(b["type"] == "tool_use" for m in msgs for b in m["content"])
        assert orphans(trace.messages) == (set(), set())
        run = replay(trace, build("none"), ReplayConfig(profile("claude-sonnet-4-5")), counter=counter)
        assert len(run.calls) == trace.n_calls and run.failed is None


# every file: (traces, messages, calls, tool calls); MANIFEST.md §5 (its message counts leave out the system prompt)
EVERY_FILE = {
    "session.json": None,
    "session.messages.json": (33, 16, 11),
    "basic.compaction.json": (11, 5, 0),
    "agentic.compaction.json": (4, 1, 0),
    "success.messages.json": (4, 2, 1),
}


def test_every_file_has_pinned_counts(shared_traces):
    assert sorted(p.name for p in (shared_traces / FOLDER).iterdir()) == sorted(EVERY_FILE)
    for name, counts in EVERY_FILE.items():
        traces = read_path(shared_traces / FOLDER / name).traces
        if counts is None:
            assert traces == []
            continue
        (trace,) = traces
        assert (len(trace.messages), trace.n_calls, trace.n_tool_calls) == counts, name


def test_session_counts_and_usage(shared_traces):
    trace = read_path(shared_traces / FOLDER / "session.messages.json").traces[0]
    assert (len(trace.messages), trace.n_calls, trace.n_tool_calls) == (33, 16, 11)  # MANIFEST: 32 msgs, 11 calls
    second = [m for m in trace.messages if m.role == "assistant"][1]
    # metrics {inputTokens 35912, cacheReadTokens 34332}: inputTokens is the whole prompt
    assert (second.usage.input_tokens, second.usage.cache_read_tokens, second.usage.prompt_tokens) == (
        1580,
        34332,
        35912,
    )
    assert trace.model == "anthropic/claude-opus-4.8-fast"


def test_compactions(shared_traces):
    basic = read_path(shared_traces / FOLDER / "basic.compaction.json").traces[0]
    (c,) = basic.compactions
    raw = json.loads((shared_traces / FOLDER / "basic.compaction.json").read_text())["messages"][0]
    assert raw["metadata"]["messagesRemoved"] == 22
    assert (c.message_index, c.trigger, c.pre_tokens) == (1, "manual", None)
    assert c.summary == raw["content"][1]["text"] and c.summary.startswith("<SYSTEM_NOTICE>")
    assert basic.messages[1].meta["summary"] and basic.messages[2].meta["preserved"]
    agentic = read_path(shared_traces / FOLDER / "agentic.compaction.json").traces[0]
    (c,) = agentic.compactions
    assert (c.message_index, c.pre_tokens) == (1, 21_919) and c.summary.startswith("## Goal")


def _task(tmp: Path, history: list, ui: list | None) -> Path:
    (tmp / "api_conversation_history.json").write_text(json.dumps(history))
    if ui is not None:
        (tmp / "ui_messages.json").write_text(json.dumps(ui))
    return tmp / "api_conversation_history.json"


VSCODE = [
    {"role": "user", "content": [{"type": "text", "text": "<task>add a test</task>"}], "ts": 1700000000000},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}},
            {"type": "tool_use", "id": "toolu_2", "name": "list_files", "input": {}},
        ],
        "modelInfo": {"modelId": "claude-x", "providerId": "anthropic", "mode": "act"},
        "metrics": {"tokens": {"prompt": 10, "completion": 80, "cached": 9573}},
    },
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "[list_files] Result:\na.py"},
            {"type": "text", "text": "[read_file for 'a.py'] Result:\nx = 1"},
            {"type": "text", "text": "<environment_details>…</environment_details>"},
        ],
    },
    {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
]


def test_vscode_task_links_text_results_and_reads_ui_usage(tmp_path):
    ui = [
        {"ts": 1, "type": "say", "say": "api_req_started", "text": json.dumps({"tokensIn": 1, "tokensOut": 2})},
        {
            "ts": 2,
            "type": "say",
            "say": "api_req_started",
            "text": json.dumps({"tokensIn": 7, "tokensOut": 3, "cacheReads": 100, "cacheWrites": 5}),
        },
    ]
    path = _task(tmp_path, VSCODE, ui)
    assert detect(path) == "cline" and detect(tmp_path / "ui_messages.json") == "cline"
    assert cline.read_file(tmp_path / "ui_messages.json").traces == []
    result = cline.read_file(path)
    (t,) = result.traces
    results = t.messages[2].tool_results
    assert {r.tool_use_id: r.content.splitlines()[-1] for r in results} == {"toolu_1": "x = 1", "toolu_2": "a.py"}
    assert t.messages[2].text == "<environment_details>…</environment_details>"
    assert t.messages[1].usage.prompt_tokens == 10 + 9573  # Anthropic provider: prompt is the uncached part
    assert t.messages[3].usage.prompt_tokens == 112  # second api_req_started (the first answer had metrics)
    assert orphans(t.messages) == (set(), set()) and any("linked" in n for n in result.notes)


def test_unanswered_call_gets_flagged_result(tmp_path):
    history = VSCODE[:2] + [{"role": "user", "content": [{"type": "text", "text": "stop"}]}] + VSCODE[3:]
    (t,) = cline.read_file(_task(tmp_path, history, None)).traces
    assert orphans(t.messages) == (set(), set())
    assert all(r.is_error for r in t.messages[2].tool_results) and t.messages[2].meta["synthetic"]


def test_bad_message_names_file(tmp_path):
    path = _task(tmp_path, [*VSCODE[:2], {"role": "tool", "content": "x"}], None)
    try:
        cline.read_file(path)
    except TraceError as e:
        assert str(path) in str(e) and "role" in str(e)
    else:
        raise AssertionError("no TraceError")
    assert cline.read_file(path, lenient=True).skipped == 1


SDK = {
    "version": 1,
    "sessionId": "S",
    "agent": "lead",
    "system_prompt": "be brief",
    "messages": [
        {
            "id": "m1",
            "role": "user",
            "content": [{"type": "text", "text": "hi"}, {"type": "file", "path": "a", "content": "x"}],
        },
        {
            "id": "m2",
            "role": "assistant",
            "ts": 1,
            "modelInfo": {"id": "m"},
            "content": [{"type": "tool_use", "id": "t1", "name": "editor", "input": {"p": 1}}],
            "metrics": {"inputTokens": 10, "outputTokens": 2, "cacheReadTokens": 4, "cacheWriteTokens": 1},
        },
        {
            "id": "m3",
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
            "metadata": {"kind": "compaction", "reason": "auto", "tokensBefore": 5},
        },
    ],
}


def _junk():
    return st.one_of(st.none(), st.integers(), st.text(max_size=4), st.lists(st.integers(), max_size=2), st.just({}))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_only_trace_errors(data):
    doc = json.loads(json.dumps(SDK))
    op = data.draw(st.sampled_from(["retype", "drop", "truncate", "bytes", "list"]))
    targets = [doc] + doc["messages"] + [b for m in doc["messages"] for b in m["content"]]
    target = data.draw(st.sampled_from(targets))
    key = data.draw(st.sampled_from(sorted(target)))
    if op == "retype":
        target[key] = data.draw(_junk())
    elif op == "drop":
        del target[key]
    text = json.dumps(doc if op != "list" else doc["messages"]).encode()
    if op == "truncate":
        text = text[: data.draw(st.integers(0, len(text) - 1))]
    elif op == "bytes":
        text = data.draw(st.binary(max_size=40))
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        f.write(text)
    path = Path(f.name)
    try:
        for lenient in (False, True):
            try:
                cline.read_file(path, lenient=lenient)
            except TraceError as e:
                assert str(path) in str(e)
    finally:
        path.unlink()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_vscode_task_only_trace_errors(data):
    """The VS Code layout: api_conversation_history.json and its ui_messages.json, either one corrupted."""
    history = json.loads(json.dumps(VSCODE))
    ui = [{"ts": 1, "type": "say", "say": "api_req_started", "text": json.dumps({"tokensIn": 7, "tokensOut": 3})},
          {"ts": 2, "type": "say", "say": "text", "text": "hi"}]
    which = data.draw(st.sampled_from(["history", "ui"]))
    doc = history if which == "history" else ui
    op = data.draw(st.sampled_from(["retype", "drop", "truncate", "bytes"]))
    if op in ("retype", "drop"):
        target = data.draw(st.sampled_from(doc + [b for m in doc for b in (m.get("content") or [])
                                                  if isinstance(b, dict)]))
        key = data.draw(st.sampled_from(sorted(target)))
        if op == "drop":
            del target[key]
        else:
            target[key] = data.draw(_junk())
    texts = {"history": json.dumps(history).encode(), "ui": json.dumps(ui).encode()}
    if op == "truncate":
        texts[which] = texts[which][: data.draw(st.integers(0, len(texts[which]) - 1))]
    elif op == "bytes":
        texts[which] = data.draw(st.binary(max_size=40))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "api_conversation_history.json").write_bytes(texts["history"])
        (folder / "ui_messages.json").write_bytes(texts["ui"])
        only_trace_errors(cline.read_file, folder / "api_conversation_history.json")
        only_trace_errors(cline.read_file, folder / "ui_messages.json")
