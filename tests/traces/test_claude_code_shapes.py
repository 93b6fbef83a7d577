"""Claude Code shapes the recordings really have (issue 22 points 2–4, 7): hand-built minimal files.

Each test writes its file into tmp_path. Record fields follow the real files in ../shared/traces
(Claude Code 2.0.76–2.1.144, §9 of MANIFEST.md) and the CLI's 2.1.88 source (see the importer's docstring).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from traces.formats import claude_code, detect, load, read_path
from traces.model import Usage

SESSION = "11111111-2222-3333-4444-555555555555"


def _rec(kind: str, uid: str, parent: str | None, **kw) -> dict:
    return {"parentUuid": parent, "isSidechain": False, "type": kind, "uuid": uid, "sessionId": SESSION,
            "timestamp": "2026-05-01T00:00:00Z", "version": "2.1.144", "userType": "external", **kw}


def _user(uid, parent, text, **kw):
    return _rec("user", uid, parent, message={"role": "user", "content": text}, **kw)


def _asst(uid, parent, mid, blocks, usage=None, model="claude-opus-4-7", **kw):
    msg = {"id": mid, "role": "assistant", "model": model, "content": blocks}
    if usage is not None:
        msg["usage"] = usage
    return _rec("assistant", uid, parent, message=msg, **kw)


def _text(t):
    return [{"type": "text", "text": t}]


def _use(tid, name="Bash", **inp):
    return [{"type": "tool_use", "id": tid, "name": name, "input": inp}]


def _result(uid, parent, tid, text="ok"):
    return _rec("user", uid, parent, message={"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": tid, "content": text}]})


def _att(uid, parent, **attachment):
    return _rec("attachment", uid, parent, attachment=attachment)


def _boundary(uid, parent=None, logical=None, trigger="auto", pre=150_000, **meta):
    return _rec("system", uid, parent, subtype="compact_boundary", content="Conversation compacted",
                logicalParentUuid=logical, compactMetadata={"trigger": trigger, "preTokens": pre, **meta})


def _summary(uid, parent, text="This session is being continued from a previous conversation. Summary: X."):
    return _user(uid, parent, text, isCompactSummary=True)


def _u(n):
    return {"input_tokens": n, "output_tokens": 5, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}


def _write(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


PLAIN = [
    _user("u1", None, "fix the bug"),
    _asst("a1", "u1", "m1", _use("t1", command="pytest"), _u(100)),
    _result("r1", "a1", "t1", "1 failed"),
    _asst("a2", "r1", "m2", _text("Fixed."), _u(120)),
]


def _passed_note(notes: list[str]) -> str:
    (note,) = [n for n in notes if "passed over" in n]
    return note


# --- point 2 / 7: record types a later version adds --------------------------------------------


def test_a_newer_record_type_neither_stops_detection_nor_drops_the_session(tmp_path):
    future = [{"type": "future-thing", "sessionId": SESSION, "payload": {"x": 1}},
              {"type": "future-thing", "sessionId": SESSION, "payload": {"x": 2}},
              {"type": "another-new-kind", "sessionId": SESSION}]
    path = _write(tmp_path / f"{SESSION}.jsonl", future + PLAIN)
    assert claude_code.sniff_file(path, path.read_text()) is None
    assert detect(path) == "claude-code"
    result = read_path(path)  # strict
    (trace,) = result.traces
    assert trace.n_calls == 2 and [m.role for m in trace.messages] == ["user", "assistant", "user", "assistant"]
    note = _passed_note(result.notes)
    assert "passed over 3 record(s) of 2 type(s)" in note and "future-thing 2" in note and "another-new-kind 1" in note
    assert trace.meta["passed_over"] == {"future-thing": 2, "another-new-kind": 1}


def test_a_newer_linked_record_type_is_counted_and_keeps_the_chain(tmp_path):
    """A later type that joins the uuid tree (like ``progress`` did) links the chain and is counted."""
    records = [PLAIN[0], PLAIN[1], _rec("future-link", "f1", "a1", data={}), _result("r1", "f1", "t1", "1 failed"),
               PLAIN[3]]
    result = read_path(_write(tmp_path / "s.jsonl", records))
    (trace,) = result.traces
    assert trace.n_calls == 2 and "future-link 1" in _passed_note(result.notes)
    assert not any("broken" in n for n in result.notes)


def test_a_head_of_metadata_only_is_still_claude_code(tmp_path):
    """2.1.144 opens a file with titles, modes and snapshots; 64 KB of them must not hide the session."""
    meta = [{"type": "file-history-snapshot", "messageId": f"m{i}", "isSnapshotUpdate": False,
             "snapshot": {"messageId": f"m{i}", "trackedFileBackups": {"f": "x" * 400}}} for i in range(200)]
    path = _write(tmp_path / "s.jsonl", [{"type": "ai-title", "aiTitle": "t", "sessionId": SESSION}] + meta + PLAIN)
    assert detect(path) == "claude-code"
    assert read_path(path).traces[0].n_calls == 2


def test_other_json_lines_are_still_declined():
    assert claude_code.sniff_file(Path("x"), '{"type":"future-thing","payload":{}}\n') is not None
    assert claude_code.sniff_file(Path("x"), '{"timestamp":1,"type":"session_meta","payload":{}}\n') is not None


# --- attachments, local commands, <synthetic> ---------------------------------------------------


def test_attachments_the_model_sees_are_imported_and_the_rest_counted(tmp_path):
    records = [
        _att("h1", None, type="hook_success", hookName="SessionStart:startup", hookEvent="SessionStart",
             content="", stdout='{"systemMessage":"linked"}', stderr="", exitCode=0),
        _att("h2", "h1", type="hook_system_message", content="linked", hookName="SessionStart:startup"),
        _att("h3", "h2", type="hook_additional_context", hookName="SessionStart:startup",
             content=["You have superpowers."]),
        _user("u1", "h3", "plan it"),
        _att("c1", "u1", type="command_permissions", allowedTools=[]),
        _att("k1", "c1", type="skill_listing", content="- review: reviews code"),
        _asst("a1", "k1", "m1", _use("t1", command="ls"), _u(100)),
        _result("r1", "a1", "t1", "a b"),
        _att("t1r", "r1", type="task_reminder", content=[{"id": "3", "subject": "Write spec", "status": "pending"}]),
        _att("x1", "t1r", type="brand_new_attachment", data="?"),
        _att("q1", "x1", type="queued_command", prompt="also run the linter"),
        _asst("a2", "q1", "m2", _text("Done."), _u(130)),
        _att("s1", "a2", type="hook_success", hookName="Stop", hookEvent="Stop", content="ok"),
    ]
    result = read_path(_write(tmp_path / "s.jsonl", records))
    (trace,) = result.traces
    texts = [(m.role, m.meta.get("attachment"), m.text) for m in trace.messages if m.role == "user"]
    assert texts[0][1] == "hook_additional_context" and "You have superpowers." in texts[0][2]
    assert texts[1] == ("user", None, "plan it")
    assert texts[2][1] == "skill_listing" and "- review: reviews code" in texts[2][2]
    assert trace.messages[4].tool_results and trace.messages[3].tool_uses  # the result, right after its call
    assert texts[4][1] == "task_reminder" and "#3 [pending] Write spec" in texts[4][2]
    assert texts[5] == ("user", None, "also run the linter")  # typed by the human mid-turn: a prompt
    assert all(m.meta.get("injected") for m in trace.messages if m.meta.get("attachment"))
    note = _passed_note(result.notes)
    for counted in ("attachment:hook_success 2", "attachment:hook_system_message 1",
                    "attachment:command_permissions 1", "attachment:brand_new_attachment (type unknown here) 1"):
        assert counted in note
    assert "passed over 5 record(s)" in note  # every record imported or counted: 13 = 8 imported + 5


def test_local_command_output_is_sent_as_a_user_message(tmp_path):
    records = PLAIN + [
        _rec("system", "l1", "a2", subtype="local_command", level="info", isMeta=False,
             content="<command-name>/model</command-name>"),
        _rec("system", "l2", "l1", subtype="local_command", level="info",
             content="<local-command-stdout>Kept model as Default</local-command-stdout>"),
        _rec("system", "d1", "l2", subtype="turn_duration", durationMs=10),
        _user("u2", "d1", "go on"),
        _asst("a3", "u2", "m3", _text("OK."), _u(140)),
    ]
    result = read_path(_write(tmp_path / "s.jsonl", records))
    (trace,) = result.traces
    local = [m.text for m in trace.messages if m.meta.get("local_command")]
    assert local == ["<command-name>/model</command-name>",
                     "<local-command-stdout>Kept model as Default</local-command-stdout>"]
    assert "system:turn_duration 1" in _passed_note(result.notes)
    assert "window_hint" not in trace.meta  # "Kept model as Default" names no 1M window


def test_synthetic_records_are_not_calls(tmp_path):
    """"No response requested." (written on resume) stays in what later requests send, as text; an
    API-error notice (isApiErrorMessage) never reaches the model: counted."""
    records = PLAIN + [
        _user("u2", "a2", "<local-command-stdout>Bye!</local-command-stdout>"),
        _asst("s1", "u2", "syn-1", _text("No response requested."), _u(0), model="<synthetic>"),
        _user("u3", "s1", "next question"),
        _asst("e1", "u3", "syn-2", _text("API Error: 529 overloaded"), _u(0), model="<synthetic>",
              isApiErrorMessage=True),
        _user("u4", "e1", "retry"),
        _asst("a3", "u4", "m3", _text("Answer."), _u(200)),
    ]
    result = read_path(_write(tmp_path / "s.jsonl", records))
    (trace,) = result.traces
    assert trace.n_calls == 3  # m1, m2, m3: no <synthetic> record is a call
    assert all(m.meta.get("model") != "<synthetic>" for m in trace.messages if m.role == "assistant")
    kept = [m for m in trace.messages if m.meta.get("synthetic_assistant")]
    assert [(m.role, m.text, m.usage) for m in kept] == [("user", "No response requested.", None)]
    assert trace.meta["synthetic_messages"] == 1 and trace.model == "claude-opus-4-7"
    assert "assistant:<synthetic> API error 1" in _passed_note(result.notes)
    assert not any("API Error" in m.text for m in trace.messages)


# --- compactions ------------------------------------------------------------------------------


def test_a_file_that_begins_with_a_compaction(tmp_path):
    """Its pre-compaction part is in another file: the compaction is kept at message_index 0."""
    from traces.model import recorded_calls

    records = [
        {"type": "permission-mode", "permissionMode": "default", "sessionId": SESSION},
        _boundary("b1", None, logical="gone-before", trigger="auto", pre=167_000),
        _summary("s1", "b1"),
        _asst("a1", "s1", "m1", _use("t1", command="ls"), _u(20_000)),
        _result("r1", "a1", "t1"),
        _asst("a2", "r1", "m2", _text("Done."), _u(21_000)),
    ]
    result = read_path(_write(tmp_path / "s.jsonl", records))
    (trace,) = result.traces
    (c,) = trace.compactions
    assert (c.message_index, c.trigger, c.pre_tokens) == (0, "auto", 167_000)
    assert trace.messages[0].meta.get("summary") and c.summary == trace.messages[0].text
    assert recorded_calls(trace) == (0,)  # no recorded call precedes it
    assert trace.n_calls == 2 and not any("broken" in n for n in result.notes)


def test_a_file_that_begins_with_a_summary_and_no_boundary(tmp_path):
    records = [_summary("s1", None), _asst("a1", "s1", "m1", _text("Continuing."), _u(9_000))]
    (trace,) = read_path(_write(tmp_path / "s.jsonl", records)).traces
    (c,) = trace.compactions
    assert (c.message_index, c.trigger) == (0, "unrecorded")


def _preserved_session(anchor_is_boundary: bool) -> list[dict]:
    """u1 a1 u2 a2(tool) r2 a3, then a manual partial /compact that keeps u2..a3 verbatim.

    As the CLI writes it: the kept records are not written again; the boundary and summary are; what
    follows hangs off the segment's tail (a3)."""
    pre = [
        _user("u1", None, "first task"),
        _asst("a1", "u1", "m1", _text("Done first."), _u(100)),
        _user("u2", "a1", "second task: run the tests"),
        _asst("a2", "u2", "m2", _use("t2", command="pytest"), _u(150)),
        _result("r2", "a2", "t2", "3 passed"),
        _asst("a3", "r2", "m3", _text("All green."), _u(180)),
    ]
    seg = {"headUuid": "u2", "anchorUuid": "b1" if anchor_is_boundary else "s1", "tailUuid": "a3"}
    post = [
        _boundary("b1", None, logical="a1", trigger="manual", pre=190, preservedSegment=seg),
        _summary("s1", "b1", "This session is being continued. Summary: the first task is done."),
        _user("u3", "a3", "third task"),
        _asst("a4", "u3", "m4", _text("On it."), _u(60)),
    ]
    return pre + post


def test_preserved_segment_is_the_context_after_a_manual_compact(tmp_path):
    result = read_path(_write(tmp_path / "s.jsonl", _preserved_session(anchor_is_boundary=False)))
    (trace,) = result.traces
    assert trace.n_calls == 4 and [m.id for m in trace.messages if m.role == "assistant"] == ["m1", "m2", "m3", "m4"]
    (c,) = trace.compactions
    assert (c.trigger, c.pre_tokens) == ("manual", 190)
    before = trace.messages[:c.message_index]
    assert [m.id for m in before if m.role == "assistant"] == ["m1", "m2", "m3"]  # the kept calls, as recorded
    summary, kept, *after = trace.messages[c.message_index:]
    assert summary.meta.get("summary") and summary.text == c.summary
    assert kept.role == "user" and kept.meta["preserved"] and kept.meta["preserved_messages"] == 4
    for text in ("second task: run the tests", "pytest", "3 passed", "All green."):
        assert text in kept.text
    assert [m.text for m in after] == ["third task", "On it."]
    assert not any("skipped" in n or "broken" in n for n in result.notes)


def test_preserved_segment_before_the_summary_when_the_boundary_is_its_anchor(tmp_path):
    (trace,) = read_path(_write(tmp_path / "s.jsonl", _preserved_session(anchor_is_boundary=True))).traces
    (c,) = trace.compactions
    kept, summary = trace.messages[c.message_index:c.message_index + 2]
    assert kept.meta["preserved"] and summary.meta.get("summary") and c.summary == summary.text
    assert trace.n_calls == 4


# --- sub-agents: the compaction call -----------------------------------------------------------


def _acompact(parent_dir: Path, session: str, summary_body: str) -> Path:
    agent = "acompact-abc123"
    side = {"isSidechain": True, "agentId": agent}
    records = [
        {**_user("c1", "a2", "Your task is to create a detailed summary of the conversation so far."), **side},
        {**_asst("c2", "c1", "mc", _text(f"<analysis>thinking</analysis>\n<summary>{summary_body}</summary>"),
                 {"input_tokens": 3, "output_tokens": 2_100, "cache_read_input_tokens": 160_000,
                  "cache_creation_input_tokens": 4_000}, timestamp="2026-05-01T00:00:30Z"), **side},
    ]
    return _write(parent_dir / session / "subagents" / f"agent-{agent}.jsonl", records)


def _parent(folder: Path, body: str) -> Path:
    records = PLAIN + [
        _boundary("b1", None, logical="a2", pre=170_000),
        {**_summary("s1", "b1", f"This session is being continued. Summary:\n{body}"),
         "timestamp": "2026-05-01T00:00:31Z"},
        _asst("a3", "s1", "m3", _text("Resuming."), _u(30_000)),
    ]
    return _write(folder / f"{SESSION}.jsonl", records)


BODY = ("1. Primary request: fix the failing test in the parser module and keep the public interface as is. "
        "2. Files: parser.py, test_parser.py. 3. Pending: run the full suite after the fix.")


def test_a_compaction_call_read_alone_is_no_session(tmp_path):
    path = _acompact(tmp_path, SESSION, BODY)
    assert detect(path) == "claude-code"
    result = read_path(path)  # strict: no error either
    assert result.traces == []
    (note,) = result.notes
    assert SESSION in note and "summarizer call" in note


def test_a_compaction_call_gives_its_usage_to_the_parents_compaction(tmp_path):
    parent = _parent(tmp_path, BODY)
    _acompact(tmp_path, SESSION, BODY)
    (trace,) = read_path(parent).traces
    (c,) = trace.compactions
    assert c.call_usage == Usage(3, 2_100, 160_000, 4_000)
    folder = load([str(tmp_path)])  # a folder: one session, and one note for the call file
    assert [t.id for t in folder.traces] == [SESSION] and folder.traces[0].compactions[0].call_usage is not None
    assert sum("summarizer call" in n for n in folder.notes) == 1


def test_a_compaction_call_is_matched_by_time_when_its_text_differs(tmp_path):
    parent = _parent(tmp_path, "a summary the CLI reworded entirely, sharing no text with the answer at all")
    _acompact(tmp_path, SESSION, BODY)
    (c,) = read_path(parent).traces[0].compactions
    assert c.call_usage is not None and c.call_usage.output_tokens == 2_100


def test_other_sidechains_stay_traces_of_their_own(tmp_path):
    side = {"isSidechain": True, "agentId": "a77"}
    path = _write(tmp_path / SESSION / "subagents" / "agent-a77.jsonl",
                  [{**_user("x1", None, "explore the repo"), **side},
                   {**_asst("x2", "x1", "mx", _text("Found it."), _u(50)), **side}])
    (trace,) = read_path(path).traces
    assert trace.id == f"{SESSION}/a77" and trace.meta["sidechain"]


# --- the 1M window, versions ------------------------------------------------------------------


@pytest.mark.parametrize("extra, evidence", [
    ([_rec("system", "l1", "a2", subtype="local_command",
           content="<local-command-stdout>Set model to \x1b[1mOpus 4.6 (1M context)\x1b[22m</local-command-stdout>")],
     "/model output"),
    ([_asst("a9", "a2", "m9", _use("t9", command='git commit -m "x\n\nCo-Authored-By: Claude Opus 4.6 (1M context) '
                                                  '<noreply@anthropic.com>"'), _u(10))],
     "commit trailer"),
    ([_att("h9", "a2", type="hook_success", hookEvent="SessionStart", hookName="SessionStart:startup", content="",
           stderr="INFO session-start model=claude-opus-4-7[1m]")],
     "SessionStart hook output"),
])
def test_the_1m_window_is_set_where_the_session_shows_it(tmp_path, extra, evidence):
    (trace,) = read_path(_write(tmp_path / "s.jsonl", PLAIN + extra)).traces
    assert trace.meta["window_hint"] == "1m" and evidence in trace.meta["window_evidence"]


def test_the_1m_window_is_not_invented(tmp_path):
    """``[1m]`` in a tool result (another session, documentation) or a prompt says nothing of this one."""
    records = [_user("u1", None, "what does claude-opus-4-6[1m] mean?"),
               _asst("a1", "u1", "m1", _use("t1", command="entire status"), _u(10)),
               _result("r1", "a1", "t1", '{"model": "claude-opus-4-7[1m]", "status": "active"}'),
               _asst("a2", "r1", "m2", _text("Another session runs with 1M context."), _u(20))]
    (trace,) = read_path(_write(tmp_path / "s.jsonl", records)).traces
    assert "window_hint" not in trace.meta and "window_evidence" not in trace.meta


def test_the_version_is_the_last_one_and_all_are_listed(tmp_path):
    records = [{**r, "version": v} for r, v in zip(PLAIN, ["2.1.36", "2.1.36", "2.1.37", "2.1.37"], strict=True)]
    (trace,) = read_path(_write(tmp_path / "s.jsonl", records)).traces
    assert trace.meta["version"] == "2.1.37" and trace.meta["versions"] == ["2.1.36", "2.1.37"]
    (one,) = read_path(_write(tmp_path / "t.jsonl", PLAIN)).traces
    assert one.meta["version"] == "2.1.144" and "versions" not in one.meta


def test_a_newer_record_with_fields_we_do_not_expect_is_counted_not_an_error(tmp_path):
    odd = [{"type": "future-thing", "uuid": "f1", "parentUuid": 7, "sessionId": SESSION},
           {"type": "future-link", "uuid": "f2", "parentUuid": None, "isSidechain": True, "agentId": 5,
            "sessionId": SESSION}]
    later = [_rec("attachment", "x1", "a2", attachment="a later shape")]
    result = read_path(_write(tmp_path / "s.jsonl", odd + PLAIN + later))  # strict
    (trace,) = result.traces
    assert trace.n_calls == 2
    note = _passed_note(result.notes)
    assert "future-thing 1" in note and "future-link 1" in note and "attachment:None (type unknown here) 1" in note


def test_v1_task_runs_in_the_session_file_are_traces_of_their_own(tmp_path):
    """1.0.x wrote each Task sub-agent run into the session file (``isSidechain``, no ``agentId``)."""
    side = {"isSidechain": True, "version": "1.0.53"}
    runs = [{**r, **side} for r in [
        _user("x1", None, "read the files"), _asst("x2", "x1", "mx1", _text("Read."), _u(10)),
        _user("y1", None, "examine the backends"), _asst("y2", "y1", "my1", _use("ty", command="ls"), _u(10)),
        _result("y3", "y2", "ty"), _asst("y4", "y3", "my2", _text("Examined."), _u(12)),
    ]]
    result = read_path(_write(tmp_path / f"{SESSION}.jsonl", PLAIN + runs))
    assert [(t.id.split("/")[-1], t.n_calls, t.meta["skipped_calls"]) for t in result.traces] == [
        (SESSION, 2, 0), ("sidechain-1", 1, 0), ("sidechain-2", 2, 0)]
    assert not any("skipped" in n for n in result.notes)
