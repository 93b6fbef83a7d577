"""Codex CLI importer: the real rollouts in ../shared/traces, a hand-built rollout, and fuzzed input."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.pricing import profile
from bench.replay import ReplayConfig, replay
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
    files = sorted(shared_traces.glob("codex*/*.jsonl"))
    assert len(files) == 6
    for path in files:
        assert detect(path) == "codex", path
        result = read_path(path)
        (trace,) = result.traces
        raw = _raw(path)
        assert trace.n_calls == raw["calls"] and trace.n_tool_calls == raw["tools"], path
        assert sum(len(m.tool_results) for m in trace.messages) == raw["outputs"]
        humans = [m for m in trace.messages if m.is_human_turn]
        assert len(humans) == raw["inputs"] + raw["compacted"]
        assert len(trace.messages) == next(v for k, v in REAL.items() if path.name.startswith(k))
        assert trace.messages[0].role == "system" and trace.agent == "codex"
        assert trace.model in ("gpt-5.3-codex", "gpt-5.2-codex")
        assert all(m.usage is not None for m in trace.messages if m.role == "assistant")
        unanswered, orphan_results = orphans(trace.messages)
        assert orphan_results == set() and unanswered <= {u.id for u in trace.messages[-1].tool_uses}
        run = replay(trace, build("none"), ReplayConfig(profile("claude-sonnet-4-5")), counter=counter)
        assert len(run.calls) == trace.n_calls and run.failed is None


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
