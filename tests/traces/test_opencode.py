"""OpenCode importer. No real OpenCode session is licensed for reuse, so fixtures are built here
following spec/formats.md §6: the SQLite opencode.db, the JSON storage/ tree and an export."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from strategies import build
from tests.traces._fuzz import only_trace_errors
from traces.formats import detect, opencode
from traces.model import TraceError, orphans

TOK = {"input": 200, "output": 50, "reasoning": 10, "cache": {"read": 9000, "write": 300}}


def _tool(pid, call, out, status="completed", compacted=False):
    state = {
        "status": status,
        "input": {"command": call},
        "title": call,
        "metadata": {},
        "time": {"start": 1, "end": 2, **({"compacted": 3} if compacted else {})},
    }
    state.update({"output": out} if status == "completed" else {"error": out} if status == "error" else {})
    return {"id": pid, "type": "tool", "callID": f"call_{pid}", "tool": "bash", "state": state}


def _session() -> list[tuple[dict, list[dict]]]:
    """(info, parts) per message, ids time-sortable as OpenCode's are."""
    def user(mid, parts, t):
        return {"id": mid, "sessionID": "ses_1", "role": "user", "time": {"created": t}}, parts

    asst = lambda mid, parts, **kw: (  # noqa: E731
        {
            "id": mid,
            "sessionID": "ses_1",
            "role": "assistant",
            "parentID": "msg_01",
            "modelID": "claude-x",
            "providerID": "anthropic",
            "time": {"created": 1_700_000_000_000},
            "tokens": TOK,
            **kw,
        },
        parts,
    )
    return [
        user(
            "msg_01",
            [
                {"id": "prt_01", "type": "text", "text": "run the tests"},
                {"id": "prt_02", "type": "text", "text": "hidden", "ignored": True},
            ],
            1_700_000_000_000,
        ),
        asst(
            "msg_02",
            [
                {"id": "prt_03", "type": "step-start"},
                {"id": "prt_04", "type": "reasoning", "text": "think"},
                _tool("prt_05", "pytest", "2 passed", compacted=True),
                {"id": "prt_06", "type": "step-finish", "reason": "tool-calls", "tokens": TOK},
                {"id": "prt_07", "type": "step-start"},
                _tool("prt_08", "ls", "boom", status="error"),
                _tool("prt_09", "sleep", None, status="running"),
                {
                    "id": "prt_10",
                    "type": "step-finish",
                    "reason": "tool-calls",
                    "tokens": {"input": 5, "output": 1, "reasoning": 0, "cache": {"read": 20000, "write": 0}},
                },
            ],
        ),
        user("msg_03", [{"id": "prt_11", "type": "compaction", "auto": True}], 1_700_000_100_000),
        asst(
            "msg_04", [{"id": "prt_12", "type": "text", "text": "## Goal\nrun tests"}], summary=True, mode="compaction"
        ),
        user("msg_05", [{"id": "prt_13", "type": "text", "text": "thanks"}], 1_700_000_200_000),
        asst("msg_06", [{"id": "prt_14", "type": "text", "text": "ok"}]),
    ]


def _db(path: Path, session=None) -> Path:
    db = sqlite3.connect(path)
    db.executescript("""
        create table session (id text primary key, project_id text, title text, time_created integer);
        create table message (id text primary key, session_id text, time_created integer,
                              time_updated integer, data text);
        create table part (id text primary key, message_id text, session_id text, time_created integer,
                           time_updated integer, data text);""")
    db.execute("insert into session values ('ses_1', 'p', 't', 0)")
    for info, parts in session or _session():
        strip = {k: v for k, v in info.items() if k not in ("id", "sessionID")}
        db.execute("insert into message values (?, 'ses_1', 0, 0, ?)", (info["id"], json.dumps(strip)))
        for p in parts:
            data = {k: v for k, v in p.items() if k != "id"}
            db.execute("insert into part values (?, ?, 'ses_1', 0, 0, ?)", (p["id"], info["id"], json.dumps(data)))
    db.commit()
    db.close()
    return path


def _storage(root: Path, messages=None) -> Path:
    session = root / "storage" / "session" / "proj" / "ses_1.json"
    session.parent.mkdir(parents=True)
    session.write_text(json.dumps({"id": "ses_1", "projectID": "proj", "title": "t", "version": "1.0"}))
    for info, parts in messages or _session():
        m = root / "storage" / "message" / "ses_1" / f"{info['id']}.json"
        m.parent.mkdir(parents=True, exist_ok=True)
        m.write_text(json.dumps(info))
        for p in parts:
            f = root / "storage" / "part" / info["id"] / f"{p['id']}.json"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(json.dumps({**p, "messageID": info["id"], "sessionID": "ses_1"}))
    return session


def _check(trace) -> None:
    kinds = [(m.role, [b.type for b in m.blocks]) for m in trace.messages]
    assert kinds == [
        ("user", ["text"]),
        ("assistant", ["thinking", "tool_use"]),
        ("user", ["tool_result"]),
        ("assistant", ["tool_use", "tool_use"]),
        ("user", ["tool_result", "tool_result"]),
        ("user", ["text"]),
        ("assistant", ["text"]),
        ("user", ["text"]),
        ("assistant", ["text"]),
    ]
    assert trace.messages[0].text == "run the tests"  # the ignored part is not sent
    assert trace.messages[2].tool_results[0].content == "[Old tool result content cleared]"
    err, interrupted = trace.messages[4].tool_results
    assert (err.content, err.is_error) == ("boom", True)
    assert (interrupted.content, interrupted.is_error) == ("[Tool execution was interrupted]", True)
    assert trace.messages[1].usage.prompt_tokens == 9500 and trace.messages[1].usage.output_tokens == 60
    assert trace.messages[3].usage.prompt_tokens == 20005
    assert trace.messages[5].text == "What did we do so far?"
    (c,) = trace.compactions
    assert (c.message_index, c.trigger, c.pre_tokens, c.summary) == (6, "auto", 20005, "## Goal\nrun tests")
    assert trace.messages[6].meta["summary"] and trace.agent == "opencode" and trace.model == "claude-x"
    assert trace.n_tool_calls == 3 and trace.n_calls == 4 and orphans(trace.messages) == (set(), set())


def test_sqlite_database(tmp_path, counter):
    path = _db(tmp_path / "opencode.db")
    assert detect(path) == "opencode"
    (trace,) = opencode.read_file(path).traces
    _check(trace)
    assert trace.id == "ses_1" and trace.source == str(path)
    run = replay(trace, build("none"), ReplayConfig(profile("claude-sonnet-4-5")), counter=counter)
    assert len(run.calls) == 4 and run.failed is None


def test_json_storage_and_export(tmp_path):
    session = _storage(tmp_path)
    assert detect(session) == "opencode"
    result = opencode.read_file(session)
    _check(result.traces[0])
    assert result.traces[0].meta["title"] == "t"
    part = next((tmp_path / "storage" / "part").rglob("*.json"))
    assert detect(part) == "opencode" and opencode.read_file(part).traces == []
    export = tmp_path / "export.json"
    export.write_text(
        json.dumps({"info": {"id": "ses_1"}, "messages": [{"info": i, "parts": p} for i, p in _session()]})
    )
    _check(opencode.read_file(export).traces[0])


def test_each_call_keeps_the_provider_that_served_it(tmp_path):
    """OpenCode 1.4.3 through github-copilot: the window is the provider's for the model (models.dev per
    provider), so the provider is kept per call and for the session (the most used one)."""
    raws = _session()
    for k, (info, _) in enumerate(r for r in raws if r[0]["role"] == "assistant"):
        info["providerID"] = "github-copilot" if k else "anthropic"
    export = tmp_path / "export.json"
    export.write_text(json.dumps({"info": {"id": "ses_1", "version": "1.4.3"},
                                  "messages": [{"info": i, "parts": p} for i, p in raws]}))
    (trace,) = opencode.read_file(export).traces
    answers = [m for m in trace.messages if m.role == "assistant"]
    assert [m.meta["provider"] for m in answers] == ["anthropic", "anthropic", "github-copilot", "github-copilot"]
    assert trace.meta["provider"] == "github-copilot" and trace.meta["version"] == "1.4.3"


def test_bad_part_data_names_the_database(tmp_path):
    path = _db(tmp_path / "b.db")
    with sqlite3.connect(path) as db:
        db.execute("update part set data = '{\"type\": \"tool\"' where id = 'prt_05'")
    with pytest.raises(TraceError, match=str(path)):
        opencode.read_file(path)
    assert opencode.read_file(path, lenient=True).skipped == 1


def _junk():
    return st.one_of(st.none(), st.integers(), st.text(max_size=4), st.lists(st.integers(), max_size=2), st.just({}))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_only_trace_errors(data):
    session = json.loads(json.dumps(_session()))
    for _ in range(data.draw(st.integers(1, 3))):
        info, parts = data.draw(st.sampled_from(session))
        target = data.draw(st.sampled_from([info] + parts + [p["state"] for p in parts if "state" in p]))
        key = data.draw(st.sampled_from(sorted(target)))
        if key == "id":
            continue
        if data.draw(st.booleans()):
            target[key] = data.draw(_junk())
        else:
            del target[key]
    doc = json.dumps({"info": {"id": "ses_1"}, "messages": [{"info": i, "parts": p} for i, p in session]}).encode()
    if data.draw(st.booleans()):
        doc = (
            doc[: data.draw(st.integers(0, len(doc)))]
            if data.draw(st.booleans())
            else data.draw(st.binary(max_size=40))
        )
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        f.write(doc)
    path = Path(f.name)
    try:
        for lenient in (False, True):
            try:
                opencode.read_file(path, lenient=lenient)
            except TraceError as e:
                assert str(path) in str(e)
    finally:
        path.unlink()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_database_and_storage_only_trace_errors(data):
    """The two on-disk layouts: fields retyped or dropped, a row's or file's JSON truncated or random bytes."""
    session = json.loads(json.dumps(_session()))
    info, parts = data.draw(st.sampled_from(session))
    target = data.draw(st.sampled_from([info] + parts + [p["state"] for p in parts if "state" in p]))
    key = data.draw(st.sampled_from(sorted(k for k in target if k not in ("id", "sessionID"))))
    if data.draw(st.booleans()):
        target[key] = data.draw(_junk())
    else:
        del target[key]
    raw = data.draw(st.one_of(st.none(), st.binary(max_size=40), st.integers(0, 60)))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if data.draw(st.booleans()):
            path = _db(root / "opencode.db", session)
            if raw is not None:  # a row's data column: random bytes or cut short
                with sqlite3.connect(path) as db:
                    (row, text) = db.execute("select id, data from part order by id limit 1").fetchone()
                    db.execute("update part set data = ? where id = ?",
                               (raw if isinstance(raw, bytes) else text[:raw], row))
        else:
            path = _storage(root, session)
            if raw is not None:
                f = data.draw(st.sampled_from(sorted((root / "storage").rglob("*.json"))))
                f.write_bytes(raw if isinstance(raw, bytes) else f.read_bytes()[:raw])
        only_trace_errors(opencode.read_file, path, names=str(root))


def test_the_summary_answer_is_a_summarizer_call_not_the_first_call_after(tmp_path):
    """The compaction agent's answer (``summary: true``) is a summarizer call: the context after a
    compaction is the agent's next request (the recorded 1.4.3 session: 16,303 tokens, not the
    summary call's 98,608)."""
    from bench.cli.fidelity import session as fidelity

    export = tmp_path / "export.json"
    raws = _session()
    raws[-1][0]["tokens"] = {"input": 300, "output": 2, "reasoning": 0, "cache": {"read": 1200, "write": 0}}
    export.write_text(json.dumps({"info": {"id": "ses_1", "version": "1.4.3"},
                                  "messages": [{"info": i, "parts": p} for i, p in raws]}))
    (trace,) = opencode.read_file(export).traces
    summary = trace.messages[trace.compactions[0].message_index]
    assert summary.meta["summarizer"] is True and summary.meta["summary"] is True
    assert not trace.messages[-1].meta.get("summarizer")
    (row,) = fidelity(trace, model="claude-sonnet-4-5")[1]
    assert row["recorded_post"] == 1_500  # the agent's call after it, not the summarizer's


def test_opencodes_own_words_are_flagged_and_an_attached_files_read_is_not_the_users_request(tmp_path):
    """Issue 24: an @file mention adds synthetic text parts (the read it made) to the user's message, and
    after a summary OpenCode writes a synthetic "Continue if you have next steps" (compaction.ts): the
    user's request is what they typed (the recorded 1.4.3 session: one line, then 37,776 characters of
    the file read), the rest is flagged ``synthetic``; the compaction request and the continue note are
    flagged ``compaction`` (bench.replay leaves the recorded compaction's messages out)."""
    raws = _session()
    raws[0] = (raws[0][0], [
        {"id": "prt_01", "type": "text", "text": "move them into @src/app.ts"},
        {"id": "prt_01f", "type": "file", "mime": "text/plain", "filename": "src/app.ts", "url": "file:///src/app.ts"},
        {"id": "prt_01s", "type": "text", "synthetic": True, "text": "Called the Read tool with the following input"},
        {"id": "prt_01t", "type": "text", "synthetic": True, "text": "<content>1: export const x = 1</content>"},
    ])
    raws.insert(4, ({"id": "msg_045", "sessionID": "ses_1", "role": "user", "time": {"created": 1_700_000_150_000}},
                    [{"id": "prt_125", "type": "text", "synthetic": True, "text": "Continue if you have next steps"}]))
    export = tmp_path / "export.json"
    export.write_text(json.dumps({"info": {"id": "ses_1", "version": "1.4.3"},
                                  "messages": [{"info": i, "parts": p} for i, p in raws]}))
    (trace,) = opencode.read_file(export).traces
    typed, read = trace.messages[0], trace.messages[1]
    assert typed.text.startswith("move them into @src/app.ts") and "[file src/app.ts" in typed.text
    assert not typed.meta and typed.is_human_turn
    assert read.meta == {"synthetic": True} and read.text.startswith("Called the Read tool")
    question = next(m for m in trace.messages if m.text == "What did we do so far?")
    cont = next(m for m in trace.messages if m.text == "Continue if you have next steps")
    assert question.meta == {"compaction": True} and cont.meta == {"synthetic": True, "compaction": True}
    assert trace.messages[trace.compactions[0].message_index].meta["summary"]
