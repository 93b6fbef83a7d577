"""Issue 23: one validation layer at the edge, shared by every importer (traces.formats._common).

Counts are whole numbers in [0, 2^53), windows above 0, ids and names at most MAX_ID characters,
numeric fields of the wrong type refused. Strict: a TraceError (at most two lines) naming the file,
the line (or the message) and the field, and saying that --lenient would get past it. --lenient: a
counted repair in the notes. Each case is a minimal hand-built file written into tmp_path.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tests.traces import agent_sessions
from tests.traces.test_claude_code import SAMPLE
from traces import native
from traces.formats import read_path
from traces.formats._common import get_int
from traces.model import MAX_COUNT, MAX_ID, Message, Text, ToolResult, ToolUse, Trace, TraceError, Usage


def _claude(tmp_path: Path, output_tokens: object, name: str = "cc.jsonl") -> Path:
    """SAMPLE with the usage of its third line (line 3 of the file) set to ``output_tokens``."""
    recs = copy.deepcopy(SAMPLE)
    recs[2]["message"]["usage"]["output_tokens"] = output_tokens
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


EDGES = [1e300, 2**63, 2**64, -1e30, -5, MAX_COUNT]


@pytest.mark.parametrize("bad", EDGES, ids=str)
def test_a_count_out_of_range_is_named_strictly_and_repaired_leniently(tmp_path, bad):
    path = _claude(tmp_path, bad)
    with pytest.raises(TraceError) as e:
        read_path(path)
    message = str(e.value)
    assert message.startswith(f"{path}:3: field 'output_tokens' is ") and "[0, 2^53)" in message
    assert "--lenient would skip or repair it and count it" in message and message.count("\n") <= 1
    result = read_path(path, lenient=True)
    usages = [m.usage for m in result.traces[0].messages if m.usage]
    assert all(0 <= getattr(u, f) < MAX_COUNT for u in usages for f in
               ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"))
    kind = "count below 0 (set to 0)" if bad < 0 else "count out of range (dropped)"
    assert any(f"repaired 1 {kind} (--lenient)" in n for n in result.notes), result.notes


@pytest.mark.parametrize("bad", ["12", True, [1], {"n": 1}], ids=repr)
def test_a_count_of_the_wrong_type_is_refused_and_its_record_skipped_leniently(tmp_path, bad):
    path = _claude(tmp_path, bad)
    with pytest.raises(TraceError, match=rf"cc\.jsonl:3: field 'output_tokens' should be an integer, got "
                                         rf"{type(bad).__name__}; --lenient would"):
        read_path(path)
    assert read_path(path, lenient=True).skipped == 1


def test_infinity_and_nan_literals_are_not_counts(tmp_path):
    for literal in ("Infinity", "-Infinity", "NaN"):
        path = _claude(tmp_path, 0)
        path.write_text(path.read_text().replace('"output_tokens": 0', f'"output_tokens": {literal}', 1))
        with pytest.raises(TraceError, match=r"cc\.jsonl:3: field 'output_tokens' should be an integer"):
            read_path(path)


def test_get_int_keeps_the_default_for_a_dropped_count_and_clamps_a_negative_one():
    from traces.formats._common import checking

    with checking(True) as check:
        assert get_int({"n": 2**64}, "n", None) is None
        assert get_int({"n": 2**64}, "n", 0) == 0
        assert get_int({"n": -3}, "n", None) == 0
        assert get_int({"n": 7.0}, "n") == 7
    assert sum(check.repaired.values()) == 3


def test_negative_gemini_input_is_refused_and_set_to_zero_leniently(tmp_path):
    recs, _ = agent_sessions.gemini_session()
    line = next(i for i, r in enumerate(recs, start=1) if "tokens" in r)
    recs[line - 1]["tokens"]["input"] = -5_000_000
    path = agent_sessions.write_jsonl(tmp_path / "session-2026-05-01T10-00-gem1.jsonl", recs)
    with pytest.raises(TraceError, match=rf"gem1\.jsonl:{line}: field 'input' is -5000000"):
        read_path(path)
    result = read_path(path, lenient=True)
    assert all(m.usage.input_tokens >= 0 for m in result.traces[0].messages if m.usage)
    assert any("repaired 1 count below 0" in n for n in result.notes)


def _native(tmp_path: Path, trace: Trace) -> Path:
    return native.write(trace, tmp_path / "t.cbt.jsonl")


def _trace(**answer_kw) -> Trace:
    msgs = (Message.text_message("user", "go"),
            Message("assistant", (ToolUse("c1", "bash", {"cmd": "ls"}),), **answer_kw),
            Message("user", (ToolResult("c1", "a b"),)),
            Message.text_message("assistant", "done"))
    return Trace("t", msgs, "claude-code", "claude-sonnet-4-5")


def test_a_window_of_the_wrong_type_is_refused_on_import_not_in_every_task(tmp_path):
    """A string context_window used to pass import and fail every task with a TypeError in replay."""
    for window in ("200000", 0, -1, 2**64, True):
        path = _native(tmp_path, _trace(meta={"context_window": window, "model": "claude-sonnet-4-5"}))
        with pytest.raises(TraceError, match=r"t\.cbt\.jsonl: message 1: field 'context_window' is .*\[1, 2\^53\)"):
            read_path(path)
        result = read_path(path, lenient=True)
        assert "context_window" not in result.traces[0].messages[1].meta
        assert any("repaired 1 count out of range (dropped)" in n or "count below 1" in n for n in result.notes)


def test_a_timestamp_that_is_not_finite_is_refused(tmp_path):
    path = _native(tmp_path, _trace(timestamp=1.7e9))
    path.write_text(path.read_text().replace("1700000000.0", "Infinity"))
    with pytest.raises(TraceError, match=r"message 1: timestamp is inf"):
        read_path(path)
    assert read_path(path, lenient=True).traces[0].messages[1].timestamp is None


def test_a_usage_built_from_text_is_checked_too(tmp_path):
    """check_trace is the backstop for counts an importer computed (Aider's text, a difference of totals)."""
    path = _native(tmp_path, _trace(usage=Usage(10, 5)))
    path.write_text(path.read_text().replace('"output_tokens": 5', '"output_tokens": -5'))
    with pytest.raises(TraceError, match=r"t\.cbt\.jsonl:3: bad message record: field 'output_tokens' is -5"):
        read_path(path)
    from traces.formats._common import check_trace, checking

    bad = _trace(usage=Usage(10, -5))
    with pytest.raises(TraceError, match=r"x\.jsonl: message 1: field 'usage\.output_tokens' is -5"):
        check_trace(bad, path="x.jsonl")
    with checking(True) as check:
        fixed = check_trace(bad, path="x.jsonl")
    assert fixed.messages[1].usage == Usage(10, 0) and check.repaired


def test_a_huge_tool_id_is_refused_or_cut_keeping_the_call_and_its_result_paired(tmp_path):
    huge = "t" * 5_000_000
    recs = copy.deepcopy(SAMPLE)
    for r in recs:
        for b in r.get("message", {}).get("content", []) if isinstance(r.get("message", {}).get("content"),
                                                                       list) else []:
            if b.get("id") == "t2":
                b["id"] = huge
            if b.get("tool_use_id") == "t2":
                b["tool_use_id"] = huge
    path = tmp_path / "cc.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    with pytest.raises(TraceError) as e:
        read_path(path)
    assert "tool call id is 5,000,000 characters long (the limit is 4,096)" in str(e.value)
    assert len(str(e.value)) < 400 and str(e.value).count("\n") <= 1
    result = read_path(path, lenient=True)
    (trace,) = result.traces
    ids = [b.id for m in trace.messages for b in m.tool_uses]
    results = [b.tool_use_id for m in trace.messages for b in m.tool_results]
    assert all(len(i) <= MAX_ID for i in ids + results)
    cut = next(i for i in ids if i.startswith("ttt"))
    assert cut in results  # the call still finds its result
    assert any(f"id over {MAX_ID:,} characters (cut)" in n for n in result.notes)


def test_real_sessions_pass_the_checks_unchanged(shared_traces):
    """Every real session imports strictly: the limits are far from anything an agent records."""
    from traces.formats import UnknownFormatError, expand

    read = 0
    for path in expand([str(shared_traces)]):
        try:
            result = read_path(path)
        except UnknownFormatError:
            continue
        read += len(result.traces)
        assert not any("repaired" in n for n in result.notes), result.notes
    assert read > 20


def test_text_blocks_are_not_limited_to_the_id_length(tmp_path):
    path = _native(tmp_path, Trace("t", (Message("user", (Text("x" * (MAX_ID * 4)),)),
                                         Message.text_message("assistant", "ok"))))
    assert read_path(path).traces[0].messages[0].text == "x" * (MAX_ID * 4)


def test_a_header_value_of_the_wrong_type_is_refused_or_made_text(tmp_path):
    """Found by `make fuzz` (seed 7): a native header whose `source` was a list passed import and then
    failed every task (an unhashable key in the probes). Strict: named; --lenient: made text, counted.
    A compaction's trigger and summary are held to text the same way."""
    trace = Trace("t", (Message("user", (Text("hi"),)), Message("assistant", (Text("ok"),))), agent="claude-code")
    path = native.write(trace, tmp_path / "t.cbt.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    head = json.loads(lines[0])
    head["source"] = [1, "a"]
    head["compactions"] = [{"message_index": 1, "trigger": ["auto"], "pre_tokens": 10, "summary": 3}]
    path.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(TraceError, match="source is \\[1, 'a'\\]: expected a string; --lenient"):
        read_path(path)
    (fixed,) = read_path(path, lenient=True).traces
    assert fixed.source == "[1, 'a']" and fixed.compactions[0].trigger == "['auto']"
    assert fixed.compactions[0].summary == "3"


def test_a_codex_reasoning_item_whose_content_is_a_number_is_named(tmp_path):
    """Found by `make fuzz` (seed 0): a reasoning item's `content` mutated to a number crashed the Codex
    importer (it iterated it); now it is a clear error naming the line, and --lenient skips it."""
    lines = [{"timestamp": "2026-02-23T11:40:40.000Z", "type": "session_meta",
              "payload": {"id": "s1", "cli_version": "0.104.0", "model_provider": "openai"}},
             {"timestamp": "2026-02-23T11:40:41.000Z", "type": "response_item",
              "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}},
             {"timestamp": "2026-02-23T11:40:42.000Z", "type": "response_item",
              "payload": {"type": "reasoning", "summary": [], "content": -7}},
             {"timestamp": "2026-02-23T11:40:43.000Z", "type": "response_item",
              "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}}]
    path = tmp_path / "rollout-1.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    with pytest.raises(TraceError, match=r"rollout-1\.jsonl:3: .*content"):
        read_path(path)
    assert read_path(path, lenient=True).skipped == 1
