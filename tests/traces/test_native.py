"""The native format round-trips losslessly and refuses what it cannot read, naming file and line."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.traces._fuzz import only_trace_errors
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


JUNK = st.one_of(st.none(), st.integers(), st.text(max_size=4), st.lists(st.integers(), max_size=2), st.just({}))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_only_trace_errors(data):
    """What ``import --out`` writes and ``run --traces`` reads: truncated, retyped, dropped, random bytes."""
    records = [json.loads(line) for line in native.dumps(full_trace()).splitlines()]
    raw: dict[int, bytes] = {}
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(records) - 1))
        op = data.draw(st.sampled_from(["truncate", "retype", "drop", "bytes"]))
        if op == "truncate":
            text = json.dumps(records[i]).encode()
            raw[i] = text[: data.draw(st.integers(0, len(text) - 1))]
        elif op == "bytes":
            raw[i] = data.draw(st.binary(max_size=30))
        else:
            blocks = records[i].get("blocks")
            target = data.draw(st.sampled_from([records[i], *[b for b in (blocks if isinstance(blocks, list) else [])
                                                              if isinstance(b, dict)]]))
            if not target:
                continue
            key = data.draw(st.sampled_from(sorted(target)))
            if op == "drop":
                del target[key]
            else:
                target[key] = data.draw(JUNK)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.cbt.jsonl"
        path.write_bytes(b"\n".join(raw.get(i, json.dumps(r).encode()) for i, r in enumerate(records)))
        only_trace_errors(native.read_file, path)


def test_not_utf8_line_is_named_and_lenient_skips_bad_records(tmp_path):
    lines = native.dumps(full_trace()).encode().splitlines()
    lines[2] = b"\xff\xfe" + lines[2]
    lines[3] = lines[3][:10]
    path = tmp_path / "bytes.cbt.jsonl"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(TraceError, match=r"bytes\.cbt\.jsonl:3: not UTF-8 \(byte 0xff"):
        native.read(path)
    result = native.read_file(path, lenient=True)
    assert result.skipped == 2 and len(result.traces[0].messages) == len(full_trace().messages) - 2
