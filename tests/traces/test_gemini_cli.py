"""Gemini CLI importer: JSONL and legacy JSON sessions, ``/chat save`` checkpoints, bad input."""

from __future__ import annotations

import json

import pytest

from tests.traces.agent_sessions import SNAPSHOT, gemini_checkpoint, gemini_session, write_jsonl
from traces.formats import detect, gemini_cli, read_path
from traces.model import TraceError, orphans, recorded_calls


@pytest.fixture()
def session(tmp_path):
    recs, expected = gemini_session()
    return write_jsonl(tmp_path / "session-2026-05-01T10-00-gem1.jsonl", recs), recs, expected


def test_session_imports_every_call_and_its_compression(session):
    path, recs, expected = session
    assert detect(path) == "gemini-cli"
    result = read_path(path)
    (trace,) = result.traces
    assert (trace.n_calls, trace.n_tool_calls) == (expected["calls"], expected["tool_calls"])
    assert trace.agent == "gemini-cli" and trace.model == "gemini-2.5-pro" and trace.id == "gem-1"
    # every model response in the file is imported or counted: the rewound one is the only one missing
    answers = {r["id"] for r in recs if r.get("type") == "gemini" and r.get("model")}
    assert trace.n_calls + trace.meta["skipped_calls"] == len(answers)
    assert trace.meta["skipped_calls"] == expected["rewound"]
    (c,) = trace.compactions
    assert c.summary == SNAPSHOT and c.pre_tokens == expected["pre_tokens"]
    assert trace.messages[c.message_index].meta.get("summary") is True
    assert recorded_calls(trace) == (expected["compaction_call"],)
    notes = "\n".join(result.notes)
    for what in ("1 info record", "2 synthetic acknowledgement", "1 message(s) a history rewrite copied",
                 "skipped 1 model call(s) the user rewound"):
        assert what in notes
    assert orphans(trace.messages) == (set(), set())


def test_session_usage_results_and_rewrites(session):
    path, recs, _ = session
    (trace,) = read_path(path).traces
    first = next(m for m in trace.messages if m.role == "assistant")
    raw = next(r for r in recs if r.get("id") == "g0" and "tokens" in r)["tokens"]
    # promptTokenCount includes the cached part; thoughts are billed as output
    assert first.usage.prompt_tokens == raw["input"] and first.usage.cache_read_tokens == raw["cached"]
    assert first.usage.output_tokens == raw["output"] + raw["thoughts"]
    assert [b.type for b in first.blocks] == ["thinking", "tool_use"]
    # the result logged twice (in toolCalls and as a functionResponse record) is read once
    results = [b for m in trace.messages for b in m.tool_results]
    assert len(results) == len({b.tool_use_id for b in results}) == trace.n_tool_calls
    assert sum(b.is_error for b in results) == 1  # the call with status "error"
    assert "read0 line 0" in results[0].content


def test_legacy_json_session_records_no_compression(session, tmp_path):
    _, recs, expected = session
    messages: dict[str, dict] = {}
    for r in recs:
        if isinstance(r.get("id"), str) and "type" in r:
            messages[r["id"]] = r
    messages.pop("grewound")
    legacy = {**recs[0], "messages": list(messages.values())}
    path = tmp_path / "session-2025-09-01T10-00-gem1.json"
    path.write_text(json.dumps(legacy, indent=2))
    assert detect(path) == "gemini-cli"
    (trace,) = read_path(path).traces
    assert trace.n_calls == expected["calls"] and trace.compactions == ()
    assert trace.meta["format"] == "session-json"


def test_checkpoint_pairs_calls_without_ids(tmp_path):
    history = gemini_checkpoint()
    for shape, body in (("object", {"history": history}), ("list", history)):
        path = tmp_path / f"checkpoint-{shape}.json"
        path.write_text(json.dumps(body, indent=2))
        assert detect(path) == "gemini-cli"
        result = read_path(path)
        (trace,) = result.traces
        model_turns = sum(c["role"] == "model" for c in history)
        assert trace.n_calls == model_turns - 1  # the "Got it" after the snapshot is not a call
        (c,) = trace.compactions
        assert c.summary == SNAPSHOT and trace.messages[c.message_index].meta["summary"]
        uses = [u for m in trace.messages for u in m.tool_uses]
        results = [r for m in trace.messages for r in m.tool_results]
        assert [r.tool_use_id for r in results] == [u.id for u in uses]  # the id-less response found its call
        assert [r.is_error for r in results] == [False, True]
        assert orphans(trace.messages) == (set(), set())


def test_bad_line_names_file_and_line(session):
    path, recs, _ = session
    lines = [json.dumps(r) for r in recs]
    lines[3] = lines[3][:25]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=rf"{path.name}:4: "):
        gemini_cli.read_file(path)
    assert gemini_cli.read_file(path, lenient=True).skipped == 1


def test_bad_record_field_names_the_line(session):
    path, recs, _ = session
    recs = [dict(r) for r in recs]
    recs[4]["toolCalls"] = "oops"  # the second write of g0 (line 5) replaces the first
    write_jsonl(path, recs)
    with pytest.raises(TraceError, match=rf"{path.name}:5: .*toolCalls"):
        gemini_cli.read_file(path)
    assert gemini_cli.read_file(path, lenient=True).skipped == 1


def test_sniff_declines_other_formats():
    from pathlib import Path

    p = Path("x")
    assert gemini_cli.sniff_file(p, '{"type":"session.start","data":{},"id":"1","parentId":null}\n') is not None
    assert gemini_cli.sniff_file(p, '{"type":"user","sessionId":"s","parentUuid":null}\n') is not None
    assert gemini_cli.sniff_file(p, '[{"role": "user", "content": "hi"}]') is not None
    assert gemini_cli.sniff_file(p, '{"sessionId":"s","projectHash":"h","startTime":"t"}\n') is None


def _unversioned(paths) -> None:
    """Each file imports with version None, and the version table routes it to the current generation."""
    from bench.scoring.fidelity import matching_strategy as for_trace
    from strategies.versions import GENERATIONS, matching_strategy

    current = next(g.strategy for g in GENERATIONS if g.agent == "gemini-cli" and g.until is None)
    for p in paths:
        (trace,) = read_path(p).traces
        assert trace.agent == "gemini-cli" and trace.meta["version"] is None, p
        assert matching_strategy("gemini-cli", trace.meta["version"]) == current == "gemini-cli"
        assert for_trace(trace) == "gemini-cli"


def test_a_session_without_a_version_runs_as_the_current_generation(tmp_path):
    """Gemini CLI session files record no CLI version: the version is None, and it runs as the current
    generation (gemini-cli), never as an older one (gemini-cli:2025 is chosen by hand only)."""
    path = tmp_path / "session.json"
    path.write_text(json.dumps({"sessionId": "g0", "projectHash": "p" * 64, "startTime": "2026-04-14T09:55:12Z",
                                "lastUpdated": "2026-04-14T09:56:00Z", "messages": [
                                    {"id": "u", "timestamp": "2026-04-14T09:55:26Z", "type": "user",
                                     "content": [{"text": "Add a contribution guide"}]},
                                    {"id": "g", "timestamp": "2026-04-14T09:55:31Z", "type": "gemini",
                                     "content": "Done.", "model": "gemini-3-flash-preview",
                                     "tokens": {"input": 900, "output": 20, "cached": 0, "total": 920}}]}))
    _unversioned([path])


def test_the_real_unversioned_sessions_run_as_the_current_generation(shared_traces):
    """The two 2026 sessions the Entire CLI stored (../shared/traces MANIFEST §9)."""
    real = sorted(shared_traces.glob("gemini-cli__*/**/full.jsonl"))
    assert real
    _unversioned(real)
