"""Codex CLI importer: the real rollouts in ../shared/traces, a hand-built rollout, and fuzzed input."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.tokens.counter import TokenCounter
from strategies import build
from traces.formats import codex, detect, read_path
from traces.model import TraceError, orphans


def _raw(path: Path) -> dict[str, int]:
    """Counts straight from the raw lines: calls = fresh cumulative token totals with a non-zero last call."""
    n = {"calls": 0, "tools": 0, "inputs": 0, "outputs": 0, "compacted": 0}
    prev = None
    for line in path.read_text().splitlines():
        d = json.loads(line)
        p = d["payload"]
        if d["type"] == "event_msg" and p.get("type") == "token_count" and p.get("info"):
            last = p["info"]["last_token_usage"]
            if p["info"]["total_token_usage"] != prev and (last["input_tokens"] or last["output_tokens"]):
                n["calls"] += 1
            prev = p["info"]["total_token_usage"]
        elif d["type"] == "response_item":
            n["tools"] += p["type"] in ("function_call", "custom_tool_call")
            n["inputs"] += p["type"] == "message" and p["role"] != "assistant"
            n["outputs"] += p["type"].endswith("_call_output")
        n["compacted"] += d["type"] == "compacted"
    return n


# file stem prefix → total messages (system + inputs + answers + result messages + summaries), measured
REAL = {
    "rollout-2026-02-23T12-40-23": 178,
    "rollout-2026-02-23T12-41-04": 63,
    "rollout-2026-02-23T12-54-34": 632,
    "rollout-2026-02-23T13-19-38": 10,
    "rollout-2026-02-23T20-34-25": 19,
    "sample_codex_session": 4,
}


def test_every_real_rollout_imports_and_replays(shared_traces, counter):
    """Every Codex rollout in ../shared/traces (however many there are: the Entire CLI's copies sit
    folders deep as full.jsonl), each checked against its raw lines, then replayed under `none`
    without a request the API would reject (no empty summary message after a recorded compaction)."""
    files = sorted(shared_traces.glob("codex*/**/*.jsonl"))
    assert files, "no Codex rollout found under codex*/"
    checked = []
    for path in files:
        assert detect(path) == "codex", path
        result = read_path(path)
        (trace,) = result.traces
        raw = _raw(path)
        assert trace.n_calls == raw["calls"] and trace.n_tool_calls == raw["tools"], path
        assert sum(len(m.tool_results) for m in trace.messages) == raw["outputs"]
        humans = [m for m in trace.messages if m.is_human_turn]
        summaries = [m for m in trace.messages if m.meta.get("summary")]
        assert len(trace.compactions) == raw["compacted"] and len(summaries) <= raw["compacted"]
        assert len(humans) == raw["inputs"] + len(summaries)
        known = [v for k, v in REAL.items() if path.name.startswith(k)]
        assert len(trace.messages) == known[0] if known else len(trace.messages) > raw["inputs"]
        assert trace.messages[0].role == "system" and trace.agent == "codex"
        assert trace.model in ("gpt-5.3-codex", "gpt-5.2-codex", "gpt-5.3-codex-spark", "gpt-5.4", "gpt-5.5")
        assert trace.meta["provider"] == "openai"
        assert all(m.usage is not None for m in trace.messages if m.role == "assistant")
        unanswered, orphan_results = orphans(trace.messages)
        assert orphan_results == set() and unanswered <= {u.id for u in trace.messages[-1].tool_uses}
        run = replay(trace, build("none"), ReplayConfig(profile("claude-sonnet-4-5")), counter=counter)
        assert len(run.calls) == trace.n_calls and run.failed is None
        invalid = [e for e in run.events if e.kind == "invalid"]
        assert not invalid, (path, invalid[:1])
        checked.append(path)
    assert len(checked) == len(files)


def test_real_compaction_and_redaction(shared_traces):
    path = next(shared_traces.glob("codex__madshn-localpush/rollout-2026-02-23T12-54-34-*.jsonl"))
    trace = read_path(path).traces[0]
    (c,) = trace.compactions
    assert c.pre_tokens == 209_950  # last_token_usage.input_tokens of the call before the compacted line
    kept = trace.messages[c.message_index]
    assert kept.meta["summary"] and kept.meta["opaque"] and kept.meta["replacement_history_items"] == 40
    assert len(c.summary) == 13_412 * 3 // 4  # encrypted summary of 13 412 chars, as plain-text size
    assert len(trace.messages[0].text) == 13_131  # base_instructions "[REDACTED_TEXT len=13131 …]"


def _line(kind: str, payload: dict, ts: str = "2026-01-01T00:00:00Z") -> dict:
    return {"timestamp": ts, "type": kind, "payload": payload}


def _tokens(total_in: int, cached: int, out: int, last_in: int, last_cached: int, last_out: int) -> dict:
    return _line(
        "event_msg",
        {
            "type": "token_count",
            "info": {
                "total_token_usage": {"input_tokens": total_in, "cached_input_tokens": cached, "output_tokens": out},
                "last_token_usage": {
                    "input_tokens": last_in,
                    "cached_input_tokens": last_cached,
                    "output_tokens": last_out,
                },
            },
        },
    )


SAMPLE = [
    _line("session_meta", {"id": "U", "cli_version": "0.1", "base_instructions": {"text": "be brief"}}),
    _line("turn_context", {"model": "gpt-5-codex"}),
    _line(
        "response_item",
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "[REDACTED_TEXT len=12 sha=abcd]"}],
        },
    ),
    _line("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]}),
    _line(
        "response_item", {"type": "function_call", "name": "shell", "arguments": '{"command": ["ls"]}', "call_id": "c1"}
    ),
    _line("response_item", {"type": "custom_tool_call", "name": "apply_patch", "input": "*** patch", "call_id": "c2"}),
    _tokens(1000, 800, 50, 1000, 800, 50),
    _line("response_item", {"type": "function_call_output", "call_id": "c1", "output": "a b"}),
    _line("response_item", {"type": "custom_tool_call_output", "call_id": "c2", "output": "done"}),
    _line("response_item", {"type": "function_call_output", "call_id": "c_gone", "output": "stale"}),
    _tokens(1000, 800, 50, 1000, 800, 50),  # a duplicate snapshot: not a call
    _line(
        "response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}
    ),
    _tokens(2200, 1800, 60, 1200, 1000, 10),
    _line("compacted", {"message": "SUMMARY", "replacement_history": []}),
    _line("event_msg", {"type": "context_compacted"}),
]


def _write(lines: list[bytes]) -> Path:
    with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as f:
        f.write(b"\n".join(lines) + b"\n")
    return Path(f.name)


def test_hand_built_rollout():
    path = _write([json.dumps(r).encode() for r in SAMPLE])
    result = codex.read_file(path)
    (t,) = result.traces
    assert [(m.role, [b.type for b in m.blocks]) for m in t.messages] == [
        ("system", ["text"]),
        ("user", ["text"]),
        ("assistant", ["thinking", "tool_use", "tool_use"]),
        ("user", ["tool_result", "tool_result", "text"]),
        ("assistant", ["text"]),
        ("user", ["text"]),
    ]
    assert t.messages[1].text.startswith("abcd ") and len(t.messages[1].text) == 12
    assert t.messages[2].tool_uses[0].input == {"command": ["ls"]}
    assert t.messages[2].tool_uses[1].input == {"input": "*** patch"}
    u1, u2 = t.messages[2].usage, t.messages[4].usage
    assert (u1.input_tokens, u1.cache_read_tokens, u1.output_tokens, u1.prompt_tokens) == (200, 800, 50, 1000)
    assert (u2.input_tokens, u2.cache_read_tokens, u2.output_tokens) == (200, 1000, 10)
    assert "[orphan tool result c_gone]" in t.messages[3].text
    (c,) = t.compactions
    assert (c.message_index, c.pre_tokens, c.summary) == (5, 1200, "SUMMARY")
    assert t.messages[5].meta["summary"] and t.model == "gpt-5-codex"
    assert any("orphan" in n for n in result.notes) and any("redacted" in n for n in result.notes)
    path.unlink()


def test_bad_line_names_file_and_line():
    lines = [json.dumps(r).encode() for r in SAMPLE]
    lines[4] = lines[4][:30]
    path = _write(lines)
    with pytest.raises(TraceError, match=rf"{path.name}:5: "):
        codex.read_file(path)
    result = codex.read_file(path, lenient=True)
    assert result.skipped == 1 and result.traces[0].n_tool_calls == 1
    path.unlink()


def _mutations():
    line = st.sampled_from(range(len(SAMPLE)))
    junk = st.one_of(
        st.none(),
        st.integers(),
        st.text(max_size=5),
        st.lists(st.integers(), max_size=2),
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    )
    keys = [
        "type",
        "payload",
        "role",
        "content",
        "call_id",
        "name",
        "arguments",
        "info",
        "output",
        "summary",
        "replacement_history",
        "message",
        "last_token_usage",
        "total_token_usage",
    ]
    return st.one_of(
        st.tuples(st.just("truncate"), line, st.integers(0, 200)),
        st.tuples(st.just("retype"), line, st.sampled_from(keys), junk),
        st.tuples(st.just("drop"), line, st.sampled_from(keys)),
        st.tuples(st.just("bytes"), line, st.binary(max_size=30)),
    )


def _edit(d: dict, key: str, value, drop: bool) -> None:
    """Change ``key`` wherever it occurs at the top two levels."""
    for target in (
        d,
        d.get("payload"),
        (d.get("payload") or {}).get("info") if isinstance(d.get("payload"), dict) else None,
    ):
        if isinstance(target, dict) and key in target:
            if drop:
                del target[key]
            else:
                target[key] = value


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_mutations(), min_size=1, max_size=3))
def test_fuzz_only_trace_errors(muts):
    recs = [json.loads(json.dumps(r)) for r in SAMPLE]
    raw: dict[int, bytes] = {}
    for op, i, *args in muts:
        if op == "truncate":
            raw[i] = json.dumps(recs[i]).encode()[: args[0]]
        elif op == "retype":
            _edit(recs[i], args[0], args[1], drop=False)
        elif op == "drop":
            _edit(recs[i], args[0], None, drop=True)
        else:
            raw[i] = args[0]
    path = _write([raw.get(i, json.dumps(r).encode()) for i, r in enumerate(recs)])
    try:
        for lenient in (False, True):
            try:
                codex.read_file(path, lenient=lenient)
            except TraceError as e:
                assert str(path) in str(e)
    finally:
        path.unlink()


def _compacted(message: str, history: list[dict]) -> dict:
    return _line("compacted", {"message": message, "replacement_history": history})


def _user_item(text: str) -> dict:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _session(*middle: dict, metas: tuple[dict, ...] = ()) -> list[dict]:
    """A rollout of two calls with ``middle`` between them (a compaction), as 0.142 writes it: each
    call's tool output comes before the call's token_count."""
    return [
        _line("session_meta", {"id": "child", "cli_version": "0.142.2", "model_provider": "openai",
                               "base_instructions": {"text": "be brief"}}),
        *metas,
        _line("turn_context", {"model": "gpt-5.3-codex-spark"}),
        _line("response_item", _user_item("fix the bug")),
        _line("response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}),
        _line("response_item", {"type": "function_call_output", "call_id": "c1", "output": "ok"}),
        {**_tokens(1000, 0, 10, 1000, 0, 10), "payload": {"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": 1000, "cached_input_tokens": 0, "output_tokens": 10},
            "last_token_usage": {"input_tokens": 1000, "cached_input_tokens": 0, "output_tokens": 10},
            "model_context_window": 121_600}}},
        *middle,
        _line("response_item", {"type": "message", "role": "assistant",
                                "content": [{"type": "output_text", "text": "done"}]}),
        _tokens(1500, 0, 15, 500, 0, 5),
    ]


def _read(records: list[dict], tmp_path: Path, raw: list[bytes] | None = None):
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(b"\n".join(raw if raw is not None else [json.dumps(r).encode() for r in records]) + b"\n")
    return codex.read_file(path), path


def _no_invalid_request(trace) -> None:
    run = replay(trace, build("none"), ReplayConfig(profile("claude-sonnet-4-5")), counter=TokenCounter())
    assert run.failed is None and not [e for e in run.events if e.kind == "invalid"]


def test_a_line_holding_two_records_reads_both_and_is_counted(tmp_path):
    records = _session()
    lines = [json.dumps(r).encode() for r in records]
    lines[3:5] = [lines[3] + lines[4]]  # the user message and the call written on one line
    result, path = _read(records, tmp_path, lines)
    (t,) = result.traces
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert t.messages[2].tool_uses[0].id == "c1"
    assert any("1 line(s) holding more than one JSON record" in n for n in result.notes)
    lines[3] = lines[3] + b"{not json"  # a joined line that is not wholly records stays a bad line
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(TraceError, match=rf"{path.name}:4: "):
        codex.read_file(path)
    assert codex.read_file(path, lenient=True).skipped == 1


def test_outputs_before_the_token_count_still_give_the_call_its_usage(tmp_path):
    """0.142 writes a call's tool output before its token_count: the call keeps its usage and window."""
    (t,), _ = _read(_session(), tmp_path)[0].traces, None
    first, second = (m for m in t.messages if m.role == "assistant")
    assert first.usage is not None and first.usage.prompt_tokens == 1000
    assert first.meta["context_window"] == 121_600 and first.meta["model"] == "gpt-5.3-codex-spark"
    assert second.usage.prompt_tokens == 500 and t.n_calls == 2
    assert t.meta["provider"] == "openai" and t.meta["model_provider"] == "openai"


def test_a_compaction_whose_summary_is_not_recorded_adds_no_empty_message(tmp_path):
    """0.118: message empty, no encrypted item; the Entire CLI's bare "REDACTED" item: size unknown."""
    marker = _line("event_msg", {"type": "context_compacted"})
    cases = [
        (_compacted("", [_user_item("fix the bug")]), marker),
        (_compacted("", [_user_item("fix the bug"), {"type": "compaction", "encrypted_content": "REDACTED"}]), marker),
        (marker,),  # the event without its record
    ]
    for middle in cases:
        result, _ = _read(_session(*middle), tmp_path)
        (t,) = result.traces
        assert all(m.blocks and (m.text or m.tool_uses or m.tool_results) for m in t.messages)
        assert not [m for m in t.messages if m.meta.get("summary")]
        (c,) = t.compactions
        assert c.summary == "" and c.pre_tokens == 1000
        assert t.messages[c.message_index].role == "assistant" and t.messages[c.message_index].text == "done"
        assert any("1 recorded compaction(s) with no summary message" in n for n in result.notes)
        _no_invalid_request(t)


def test_the_summary_is_read_where_codex_keeps_it(tmp_path):
    """message (local, before mid-2026), a prefixed user message in replacement_history (local since
    openai/codex PR #27016), or the encrypted item's size (remote)."""
    prefixed = codex.SUMMARY_HEAD + " of its thinking process. ...\nThe bug is in parse()."
    cases = {
        "message": (_compacted("SUMMARY", []), "SUMMARY"),
        "replacement_history": (_compacted("", [_user_item("fix the bug"), _user_item(prefixed)]), prefixed),
        "encrypted": (_compacted("", [{"type": "compaction", "encrypted_content": "x" * 400}]), 300),
    }
    for source, (middle, expected) in cases.items():
        (t,) = _read(_session(middle), tmp_path)[0].traces
        (c,) = t.compactions
        kept = t.messages[c.message_index]
        assert kept.meta["summary"] and kept.meta["summary_source"] == source and kept.role == "user"
        assert (len(kept.text) if isinstance(expected, int) else kept.text) == expected
        assert c.summary == kept.text and kept.meta["opaque"] == (source == "encrypted")
        _no_invalid_request(t)


def test_a_forked_rollout_is_named_by_its_first_session_meta(tmp_path):
    """A sub-agent forked with its parent's history: the parent's session_meta is copied in after the
    child's own (openai/codex core/src/agent/control.rs keeps SessionMeta in a fork)."""
    parent = _line("session_meta", {"id": "parent", "cli_version": "0.140.0", "model_provider": "azure",
                                    "base_instructions": {"text": "the parent's"}})
    result, _ = _read(_session(metas=(parent,)), tmp_path)
    (t,) = result.traces
    assert t.id == "child" and t.meta["cli_version"] == "0.142.2" and t.meta["provider"] == "openai"
    assert t.meta["forked_from"] == ["parent"] and t.messages[0].text == "be brief"
    assert any("1 session_meta record(s) of another thread" in n for n in result.notes)


def test_each_answer_keeps_its_reasoning_blob_sizes_and_reported_reasoning_tokens(tmp_path):
    """What Codex's trigger needs (history.rs get_non_last_reasoning_items_tokens): every reasoning
    item's encrypted_content length (a real blob, or the len=N of a [REDACTED_… len=N] marker), a
    count of the ones a bare "REDACTED" left unsized, none for a reasoning item without encrypted
    content, and the call's reasoning_output_tokens, also when its outputs came before its usage."""
    reasoning = [
        {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA" + "x" * 995},
        {"type": "reasoning", "summary": [], "encrypted_content": "[REDACTED_ENCRYPTED_CONTENT len=4000 sha=ab12]"},
        {"type": "reasoning", "summary": [], "encrypted_content": "REDACTED"},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "plain"}]},
    ]
    records = _session()
    records[4:4] = [_line("response_item", r) for r in reasoning]  # before the first call's function_call
    info = next(r["payload"]["info"] for r in records if r["payload"].get("type") == "token_count")
    info["last_token_usage"]["reasoning_output_tokens"] = 7
    (t,) = _read(records, tmp_path)[0].traces
    first, second = (m for m in t.messages if m.role == "assistant")
    assert first.meta["reasoning_encrypted_lengths"] == [1_000, 4_000]
    assert first.meta["reasoning_encrypted_unsized"] == 1
    assert first.meta["reasoning_output_tokens"] == 7 and first.meta["context_window"] == 121_600
    assert "reasoning_encrypted_lengths" not in second.meta and "reasoning_encrypted_unsized" not in second.meta
    assert codex.encrypted_length(None) is None and codex.encrypted_length("[REDACTED]") == codex.UNSIZED_LENGTH


def test_real_rollouts_keep_what_the_trigger_counts(shared_traces):
    """The 0.104 rollout (lengths kept by its redaction) and the Entire CLI copies (bare markers):
    every reasoning item with encrypted content is in an answer's meta, sized or counted."""
    files = sorted(shared_traces.glob("codex*/**/*.jsonl"))
    if not files:
        pytest.skip("no Codex rollout under ../shared/traces")
    for path in files:
        raw = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        items = [r["payload"] for r in raw if r["type"] == "response_item" and r["payload"].get("type") == "reasoning"
                 and r["payload"].get("encrypted_content") is not None]
        (trace,) = read_path(path).traces
        answers = [m for m in trace.messages if m.role == "assistant"]
        sized = sum(len(m.meta.get("reasoning_encrypted_lengths", ())) for m in answers)
        unsized = sum(m.meta.get("reasoning_encrypted_unsized", 0) for m in answers)
        assert sized + unsized == len(items), path
        assert all("reasoning_output_tokens" in m.meta for m in answers if m.usage is not None), path
