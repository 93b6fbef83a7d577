"""The native format round-trips losslessly and refuses what it cannot read, naming file and line."""

from __future__ import annotations

import json

import pytest

from traces import native
from traces.model import (
    Image,
    Message,
    Needle,
    RecordedCompaction,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Trace,
    TraceError,
    Usage,
)


def full_trace() -> Trace:
    return Trace(
        id="t/1",
        agent="claude-code",
        model="claude-sonnet-4-5",
        source="/x/y.jsonl",
        meta={"cwd": "/repo"},
        needles=(Needle("n1", "update", "port is 8081", "Which port?", "8081", 3, old_answer="8080",
                        reference="config.toml"),),
        compactions=(RecordedCompaction(4, "auto", 167_000, "summary text"),),
        messages=(
            Message.text_message("system", "You are an agent."),
            Message("user", (Text("fix it ünïcode"), Image("image/png", 1234)), timestamp=1.5),
            Message("assistant", (Thinking("hmm"), Text("ok"), ToolUse("c1", "Read", {"path": "a.py", "n": [1, 2]})),
                    usage=Usage(10, 20, 30, 40), id="msg_1"),
            Message("user", (ToolResult("c1", "line\n" * 3, is_error=True),), meta={"orphan": False}),
            Message("assistant", (Text("done"),), meta={"summary": True}),
        ),
    )


def test_round_trip_is_lossless(tmp_path):
    trace = full_trace()
    path = native.write(trace, tmp_path / "t.cbt.jsonl")
    again = native.read(path)
    assert again == trace
    assert native.dumps(again) == native.dumps(trace)


def test_header_carries_schema_version(tmp_path):
    head = json.loads(native.dumps(full_trace()).splitlines()[0])
    assert head["format"] == "compaction-bench-trace"
    assert head["schema_version"] == native.SCHEMA_VERSION


def test_newer_schema_is_refused_with_upgrade_hint(tmp_path):
    lines = native.dumps(full_trace()).splitlines()
    head = json.loads(lines[0])
    head["schema_version"] = native.SCHEMA_VERSION + 1
    path = tmp_path / "future.cbt.jsonl"
    path.write_text("\n".join([json.dumps(head), *lines[1:]]))
    with pytest.raises(TraceError, match=r"future\.cbt\.jsonl:1: .*newer compaction-bench.*upgrade"):
        native.read(path)


def test_bad_message_line_names_file_and_line(tmp_path):
    lines = native.dumps(full_trace()).splitlines()
    lines[3] = lines[3][: len(lines[3]) // 2]  # a truncated record
    path = tmp_path / "cut.cbt.jsonl"
    path.write_text("\n".join(lines))
    with pytest.raises(TraceError, match=r"cut\.cbt\.jsonl:4: bad message record"):
        native.read(path)


def test_unknown_block_type_is_a_trace_error(tmp_path):
    lines = native.dumps(full_trace()).splitlines()
    lines.append(json.dumps({"role": "user", "blocks": [{"type": "video"}]}))
    path = tmp_path / "odd.cbt.jsonl"
    path.write_text("\n".join(lines))
    with pytest.raises(TraceError, match=r"odd\.cbt\.jsonl:7: .*unknown block type 'video'"):
        native.read(path)


def test_steps_split_on_assistant_messages():
    steps = list(full_trace().steps())
    assert [len(s.inputs) for s in steps] == [2, 1]
    assert steps[0].answer.id == "msg_1"
    assert steps[1].answer.text == "done"
