"""Claude Code importer: the real sessions in ../shared/traces, a hand-built file, and fuzzed input."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.replay.loop import ReplayConfig, replay
from strategies import build
from traces.formats import claude_code, detect, read_path
from traces.model import TraceError, orphans

FOLDER = "claude-code__marot-spotter"


def _raw_counts(path: Path) -> tuple[int, int, int, int]:
    """(API responses, responses with a tool call, human/injected user records, tool calls) from the raw JSON.

    A ``local_command`` system record (a slash command's output) counts as a user record: the CLI sends it
    to the model as one (normalizeMessagesForAPI, 2.1.88)."""
    ids: dict[str, bool] = {}
    human = tools = 0
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r.get("type") == "assistant":
            blocks = r["message"]["content"]
            has_tool = any(b["type"] == "tool_use" for b in blocks)
            tools += sum(b["type"] == "tool_use" for b in blocks)
            ids[r["message"]["id"]] = ids.get(r["message"]["id"], False) or has_tool
        elif r.get("type") == "user":
            c = r["message"]["content"]
            human += isinstance(c, str) or not all(b["type"] == "tool_result" for b in c)
        elif r.get("type") == "system" and r.get("subtype") == "local_command":
            human += 1
    return len(ids), sum(ids.values()), human, tools


def _assert_replays(trace, counter) -> None:
    unanswered, orphan_results = orphans(trace.messages)
    assert orphan_results == set()
    last = trace.messages[-1]
    assert unanswered <= {u.id for u in last.tool_uses}
    result = replay(trace, build("none"), ReplayConfig(_sonnet()), counter=counter)
    assert len(result.calls) == trace.n_calls and result.failed is None


def _sonnet():
    from bench.cost.pricing import profile

    return profile("claude-sonnet-4-5")


def test_every_real_file_imports_and_replays(shared_traces, counter):
    files = sorted((shared_traces / FOLDER).rglob("*.jsonl"))
    assert len(files) == 12
    for path in files:
        assert detect(path) == "claude-code", path
        result = read_path(path)
        if path.name.startswith("agent-acompact-"):  # the summarizer call of a compaction: no session
            session = path.parent.parent.name
            assert result.traces == [] and result.skipped == 0
            assert [n for n in result.notes if session in n and "summarizer call" in n] == result.notes[:1]
            continue
        assert len(result.traces) == 1 and result.skipped == 0
        trace = result.traces[0]
        calls, with_tools, human, tools = _raw_counts(path)
        assert trace.n_calls == calls, path
        assert trace.n_tool_calls == tools, path
        assert len(trace.messages) == calls + with_tools + human, path
        assert trace.agent == "claude-code" and trace.source == str(path)
        assert trace.messages[0].role == "user"  # Claude Code logs no system prompt
        if "subagents" in path.parts:
            assert trace.meta["sidechain"] and trace.id.endswith(path.stem.removeprefix("agent-"))
        _assert_replays(trace, counter)


# every file: (messages, API calls = unique message ids, tool calls); MANIFEST.md §1 gives the calls and tools.
# None: a compaction's summarizer call (agent-acompact-*), which is no session (its usage goes to its parent).
EVERY_FILE = {
    "4d5611e5-241a-462a-8d15-5122611a9569.jsonl": (280, 139, 150),
    "4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-a2898e3.jsonl": (24, 12, 33),
    "4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-acompact-e1f845.jsonl": None,
    "258c7280-ae70-4798-800f-63464d01a85d.jsonl": (307, 152, 186),
    "258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl": (6, 3, 2),
    "258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-acompact-fffbd0.jsonl": None,
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl": (439, 217, 242),
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-aac57f5.jsonl": (6, 3, 12),
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04/subagents/agent-acompact-946d2b.jsonl": None,
    "subagent.jsonl": (27, 12, 16),
    "tool_heavy.jsonl": (17, 4, 6),  # + 2 local_command records (sent to the model as user messages)
    "short.jsonl": (6, 1, 2),  # + 2 local_command records
}


def test_every_file_has_pinned_counts(shared_traces):
    folder = shared_traces / FOLDER
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*.jsonl")) == sorted(EVERY_FILE)
    for name, counts in EVERY_FILE.items():
        if counts is None:
            assert read_path(folder / name).traces == []
            continue
        (trace,) = read_path(folder / name).traces
        assert (len(trace.messages), trace.n_calls, trace.n_tool_calls) == counts, name


@pytest.mark.parametrize(
    "name, calls, tools, trigger, pre_tokens, summary_chars",
    [
        ("4d5611e5-241a-462a-8d15-5122611a9569", 139, 150, "auto", 170_251, 15_743),
        ("258c7280-ae70-4798-800f-63464d01a85d", 152, 186, "auto", 167_094, 14_518),
        ("ae4a77f8-aedd-4bc1-888f-c94edc91af04", 217, 242, "manual", 142_431, 16_162),
    ],
)
def test_recorded_compaction(shared_traces, name, calls, tools, trigger, pre_tokens, summary_chars):
    path = shared_traces / FOLDER / f"{name}.jsonl"
    trace = read_path(path).traces[0]
    assert (trace.n_calls, trace.n_tool_calls) == (calls, tools)  # MANIFEST.md table
    boundary = summary = None
    for line in path.read_text().splitlines():  # the values again, straight from the raw records
        r = json.loads(line)
        if r.get("subtype") == "compact_boundary":
            boundary = r["compactMetadata"]
        if r.get("isCompactSummary"):
            summary = r["message"]["content"]
    assert boundary == {"trigger": trigger, "preTokens": pre_tokens}
    assert len(summary) == summary_chars
    (c,) = trace.compactions
    assert (c.trigger, c.pre_tokens, c.summary) == (trigger, pre_tokens, summary)
    kept = trace.messages[c.message_index]
    assert kept.meta.get("summary") is True and kept.text == summary
    assert kept.text.startswith("This session is being continued from a previous conversation")


def test_last_line_usage_and_grouping(shared_traces):
    trace = read_path(shared_traces / FOLDER / "short.jsonl").traces[0]
    answer = next(m for m in trace.messages if m.role == "assistant")
    assert answer.id == "msg_01MKH1ccEGrZGNPvu8pYiiQa"
    assert [b.type for b in answer.blocks][:2] == ["text", "thinking"]
    assert answer.usage is not None and answer.usage.input_tokens == 3
    assert answer.usage.cache_write_tokens + answer.usage.cache_read_tokens == 13_835 + 11_515


def _rec(kind: str, uid: str, parent: str | None, **kw) -> dict:
    return {
        "type": kind,
        "uuid": uid,
        "parentUuid": parent,
        "sessionId": "S",
        "isSidechain": False,
        "timestamp": "2026-01-01T00:00:00Z",
        **kw,
    }


def _asst(uid, parent, mid, block, usage=None):
    msg = {"id": mid, "role": "assistant", "model": "claude-x", "content": [block]}
    if usage:
        msg["usage"] = usage
    return _rec("assistant", uid, parent, message=msg)


def _result(uid, parent, tid, text="ok"):
    return _rec(
        "user",
        uid,
        parent,
        message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": text}]},
    )


SAMPLE = [
    {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {}},
    _rec("user", "u1", None, message={"role": "user", "content": "run tests"}),
    _asst("a1", "u1", "m1", {"type": "text", "text": "Running."}, {"input_tokens": 1, "output_tokens": 1}),
    _asst("a2", "a1", "m1", {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest"}}),
    _rec("progress", "p1", "a2", data={"type": "hook_progress"}),
    _asst(
        "a3",
        "p1",
        "m1",
        {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}},
        {"input_tokens": 5, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 900, "output_tokens": 40},
    ),
    _result("r1", "a2", "t1", "2 passed"),  # a parallel result on a side branch
    _result("r2", "a3", "t2", "a b"),
    _result("r9", "r2", "t_missing", "stale"),
    _rec(
        "system",
        "b1",
        None,
        subtype="compact_boundary",
        logicalParentUuid="r9",
        compactMetadata={"trigger": "auto", "preTokens": 1234},
    ),
    _rec(
        "user",
        "s1",
        "b1",
        isCompactSummary=True,
        message={"role": "user", "content": "This session is being continued. S."},
    ),
    _asst("a4", "s1", "m2", {"type": "text", "text": "Done."}, {"input_tokens": 2, "output_tokens": 3}),
]


def _write(lines: list[str]) -> Path:
    f = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8")
    f.write("\n".join(lines) + "\n")
    f.close()
    return Path(f.name)


def test_hand_built_session():
    path = _write([json.dumps(r) for r in SAMPLE])
    result = claude_code.read_file(path)
    (trace,) = result.traces
    roles = [(m.role, [b.type for b in m.blocks]) for m in trace.messages]
    assert roles == [
        ("user", ["text"]),
        ("assistant", ["text", "tool_use", "tool_use"]),
        ("user", ["tool_result", "tool_result"]),
        ("user", ["text"]),
        ("user", ["text"]),
        ("assistant", ["text"]),
    ]
    assert trace.messages[1].usage.prompt_tokens == 1005 and trace.messages[1].usage.output_tokens == 40
    assert trace.messages[3].meta["orphan"] and "[orphan tool result t_missing]" in trace.messages[3].text
    assert any("orphan" in n for n in result.notes)
    (c,) = trace.compactions
    assert (c.message_index, c.trigger, c.pre_tokens, c.summary) == (
        4,
        "auto",
        1234,
        "This session is being continued. S.",
    )
    path.unlink()


def test_bad_line_names_file_and_line():
    lines = [json.dumps(r) for r in SAMPLE]
    lines[3] = lines[3][:40]
    path = _write(lines)
    with pytest.raises(TraceError, match=rf"{path.name}:4: "):
        claude_code.read_file(path)
    assert claude_code.read_file(path, lenient=True).skipped == 1
    path.unlink()


def test_sniff_declines_other_json():
    assert claude_code.sniff_file(Path("x"), '{"type":"session_meta","payload":{}}\n') is not None
    assert claude_code.sniff_file(Path("x"), json.dumps(SAMPLE[1]) + "\n") is None


def _mutations():
    line = st.sampled_from(range(len(SAMPLE)))
    junk = st.one_of(
        st.none(),
        st.integers(),
        st.text(max_size=5),
        st.lists(st.integers(), max_size=2),
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    )
    return st.one_of(
        st.tuples(st.just("truncate"), line, st.integers(0, 200)),
        st.tuples(
            st.just("retype"), line, st.sampled_from(["type", "uuid", "parentUuid", "message", "compactMetadata"]), junk
        ),
        st.tuples(st.just("drop"), line, st.sampled_from(["type", "uuid", "message", "content", "id", "tool_use_id"])),
        st.tuples(st.just("bytes"), line, st.binary(max_size=30)),
    )


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_mutations(), min_size=1, max_size=3))
def test_fuzz_only_trace_errors(muts):
    recs = [json.loads(json.dumps(r)) for r in SAMPLE]
    raw: dict[int, bytes] = {}
    for op, i, *args in muts:
        if op == "truncate":
            raw[i] = json.dumps(recs[i]).encode()[: args[0]]
        elif op == "retype":
            recs[i][args[0]] = args[1]
        elif op == "drop":
            recs[i].pop(args[0], None)
            if isinstance(recs[i].get("message"), dict):
                recs[i]["message"].pop(args[0], None)
                for b in (
                    recs[i]["message"].get("content") if isinstance(recs[i]["message"].get("content"), list) else []
                ):
                    b.pop(args[0], None)
        else:
            raw[i] = args[0]
    data = b"\n".join(raw.get(i, json.dumps(r).encode()) for i, r in enumerate(recs))
    with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as f:
        f.write(data)
    path = Path(f.name)
    try:
        for lenient in (False, True):
            try:
                claude_code.read_file(path, lenient=lenient)
            except TraceError as e:
                assert str(path) in str(e)
    finally:
        path.unlink()


def _v1(rec: dict) -> dict:
    """A record as Claude Code 1.0.x wrote it (its version on every record; no compact_boundary)."""
    return {**rec, "version": "1.0.43", "userType": "external"}


V1_SUMMARY = "This session is being continued from a previous conversation that ran out of context. Goal: X."
V1_SESSION = [_v1(r) for r in [
    _rec("user", "u1", None, message={"role": "user", "content": "fix the bug"}),
    _asst("a1", "u1", "m1", {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a.py"}},
          {"input_tokens": 10, "output_tokens": 5}),
    _result("r1", "a1", "t1", "def f(): ..."),
    _asst("a2", "r1", "m2", {"type": "text", "text": "Found it."}, {"input_tokens": 20, "output_tokens": 3}),
    _rec("user", "u2", "a2", message={"role": "user", "content": "now run the tests"}),
    _asst("ax", "u2", "mx", {"type": "text", "text": "(rewound answer)"}, {"input_tokens": 30, "output_tokens": 3}),
    _asst("a3", "u2", "m3", {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "pytest"}},
          {"input_tokens": 30, "output_tokens": 4}),
    _result("r2", "a3", "t2", "1 failed"),
    _asst("a4", "r2", "m4", {"type": "text", "text": "One test fails."}, {"input_tokens": 40, "output_tokens": 4}),
    _rec("user", "s1", None, isCompactSummary=True, message={"role": "user", "content": V1_SUMMARY}),
    _asst("a5", "s1", "m5", {"type": "tool_use", "id": "t3", "name": "Edit", "input": {"file_path": "a.py"}},
          {"input_tokens": 15, "output_tokens": 6}),
    _result("r3", "a5", "t3", "edited"),
    _asst("a6", "r3", "m6", {"type": "text", "text": "Fixed."}, {"input_tokens": 25, "output_tokens": 2}),
]]


def test_v1_compaction_imports_calls_on_both_sides():
    """1.0.x: the summary is a parentUuid-null root; the calls before it are imported, not dropped."""
    path = _write([json.dumps(r) for r in V1_SESSION])
    try:
        result = claude_code.read_file(path)
        (trace,) = result.traces
        answers = [m.id for m in trace.messages if m.role == "assistant"]
        assert answers == ["m1", "m2", "m3", "m4", "m5", "m6"]  # both sides of the compaction
        (c,) = trace.compactions
        assert (c.trigger, c.pre_tokens, c.summary) == ("unrecorded", None, V1_SUMMARY)
        kept = trace.messages[c.message_index]
        assert kept.meta.get("summary") is True and kept.text == V1_SUMMARY
        assert [m.id for m in trace.messages[:c.message_index] if m.role == "assistant"] == ["m1", "m2", "m3", "m4"]
        assert trace.meta["version"] == "1.0.43"
        # the rewound answer is the one call not imported: counted and reported, not lost silently
        assert trace.meta["skipped_calls"] == 1
        assert any("skipped 1 model call" in n for n in result.notes)
        assert not any("broken parentUuid" in n for n in result.notes)
        assert trace.n_calls + trace.meta["skipped_calls"] == len({r["message"]["id"] for r in V1_SESSION
                                                                   if r["type"] == "assistant"})
    finally:
        path.unlink()


def test_v1_session_replays_and_fidelity_pairs_its_compaction(counter):
    from traces.model import recorded_calls

    path = _write([json.dumps(r) for r in V1_SESSION])
    try:
        (trace,) = claude_code.read_file(path).traces
    finally:
        path.unlink()
    assert recorded_calls(trace) == (4,)  # took effect after the fourth answer
    _assert_replays(trace, counter)


def test_microcompact_boundary_is_imported_as_the_ids_cleared_before_the_next_call():
    """2.1.17-2.1.22 transcripts record ``system/microcompact_boundary`` with the tool ids Claude
    Code cleared; the importer keeps them on the message the boundary follows (no longer only
    counted), and a boundary without ids is counted as passed over."""
    recs = [
        _rec("user", "u1", None, message={"role": "user", "content": "go"}),
        _asst("a1", "u1", "m1", {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/a"}},
              {"input_tokens": 5, "output_tokens": 1}),
        _result("r1", "a1", "t1", "x" * 100),
        _rec("system", "b1", "r1", subtype="microcompact_boundary",
             microcompactMetadata={"trigger": "auto", "preTokens": 9, "tokensSaved": 8, "compactedToolIds": ["t1"]}),
        _rec("system", "b2", "b1", subtype="microcompact_boundary", microcompactMetadata={}),
        _asst("a2", "b2", "m2", {"type": "text", "text": "done"}, {"input_tokens": 2, "output_tokens": 1}),
    ]
    path = _write([json.dumps(r) for r in recs])
    (trace,) = claude_code.read_file(path).traces
    marked = [(m.role, m.meta["microcompact"]) for m in trace.messages if "microcompact" in m.meta]
    assert marked == [("user", ("t1",))]
    assert trace.meta["passed_over"] == {"system:microcompact_boundary (no tool ids)": 1}
    path.unlink()


@pytest.mark.parametrize("sid", ["x" * 5_000, "../outside", "a/b", ".."])
def test_a_session_id_that_cannot_name_a_folder_is_not_looked_up_as_one(tmp_path, sid):
    """The recorded summarizer calls sit in ``<sessionId>/subagents`` beside the file; the id comes from the file.
    A 5,000-character id made the file system refuse the path (OSError: a crash found by `make fuzz`,
    claude-code #726 at seed 0), and an id with a separator must not lead the importer out of the folder."""
    outside = tmp_path / "outside" / "subagents"
    outside.mkdir(parents=True)
    (outside / "agent-acompact-1.jsonl").write_text("not json\n", encoding="utf-8")
    folder = tmp_path / "project"
    folder.mkdir()
    path = folder / "session.jsonl"
    path.write_text("\n".join(json.dumps({**r, "sessionId": sid}) for r in SAMPLE) + "\n", encoding="utf-8")
    result = claude_code.read_file(path)
    assert len(result.traces) == 1 and not any("compaction call" in n for n in result.notes)
    assert claude_code._compaction_calls_beside(path, sid) == []
