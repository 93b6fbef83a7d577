"""Hugging Face dataset loader: local parquet/JSONL files in each dataset's schema, the offline hub error."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from traces.formats import hf, load
from traces.model import TraceError

SYSTEM = "You are an autonomous programmer."
# nebius/SWE-agent-trajectories: trajectory of {cutoff_date, mask, role, system_prompt, text}, text actions
SWE_AGENT_ROW = {
    "instance_id": "owner__repo-1", "model_name": "qwen-72b", "target": True, "exit_status": "submitted",
    "generated_patch": "diff --git a b", "eval_logs": "ok",
    "trajectory": [
        {"cutoff_date": "2024-01-01", "mask": False, "role": "system", "system_prompt": SYSTEM, "text": ""},
        {"cutoff_date": "2024-01-01", "mask": False, "role": "user", "system_prompt": "", "text": "ISSUE: bug"},
        {"cutoff_date": "2024-01-01", "mask": True, "role": "ai", "system_prompt": "",
         "text": "Let me look.\n```\nfind_file foo.py\n```"},
        {"cutoff_date": "2024-01-01", "mask": False, "role": "user", "system_prompt": "", "text": "Found 1 match"},
        {"cutoff_date": "2024-01-01", "mask": True, "role": "ai", "system_prompt": "",
         "text": "Done.\n```\nsubmit\n```"},
    ],
}


def _openhands_row(tid: str) -> dict:
    """nebius/SWE-rebench-openhands and nvidia/SWE-Zero: OpenAI messages, every key present (None when unused)."""
    def msg(role, content, tool_calls=None, tool_call_id=None, name=None):
        return {"role": role, "content": content, "tool_calls": tool_calls, "tool_call_id": tool_call_id, "name": name}

    call = {"id": "call_1", "type": "function",
            "function": {"name": "execute_bash", "arguments": "{\"command\": \"ls\"}"}}
    return {"trajectory_id": tid, "instance_id": "o__r-2", "repo": "o/r", "license": "MIT", "model_patch": "",
            "trajectory": [msg("system", "You are OpenHands."), msg("user", "fix it"),
                           msg("assistant", "Listing.", [call]),
                           msg("tool", "a.py", tool_call_id="call_1", name="execute_bash"),
                           msg("assistant", "All done.", [])]}


@pytest.fixture
def hf_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    return tmp_path


def _parquet(path, rows):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("writer", [_parquet, _jsonl])
def test_swe_agent_schema(hf_home, writer):
    path = writer(hf_home / f"swe.{'parquet' if writer is _parquet else 'jsonl'}", [SWE_AGENT_ROW, SWE_AGENT_ROW])
    result = hf.load(str(path), schema="swe-agent")
    assert [t.id for t in result.traces] == ["owner__repo-1#0", "owner__repo-1#1"] and result.skipped == 0
    trace = result.traces[0]
    assert [m.role for m in trace.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert trace.messages[0].text == SYSTEM and trace.agent == "swe-agent" and trace.model == "qwen-72b"
    use = trace.messages[2].tool_uses[0]
    assert (use.id, use.name, use.input) == ("call-1", "find_file", {"command": "find_file foo.py"})
    assert trace.messages[3].tool_results[0].content == "Found 1 match"
    assert trace.meta["target"] is True and "generated_patch" not in trace.meta
    assert hf.load(str(path)).traces[0].messages == trace.messages  # schema picked from the columns


@pytest.mark.parametrize("writer", [_parquet, _jsonl])
def test_openhands_schema_with_limit(hf_home, writer):
    rows = [_openhands_row(f"t{i}") for i in range(3)]
    path = writer(hf_home / f"oh.{'parquet' if writer is _parquet else 'jsonl'}", rows)
    result = hf.load(str(path), schema="openhands", limit=2)
    assert [t.id for t in result.traces] == ["t0", "t1"]
    trace = result.traces[0]
    assert [m.role for m in trace.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert (trace.n_calls, trace.n_tool_calls, trace.agent) == (2, 1, "openhands")
    assert trace.messages[2].tool_uses[0].input == {"command": "ls"}
    assert trace.messages[3].tool_results[0].tool_use_id == "call_1"


def test_hf_prefix_through_formats_load(hf_home):
    path = _jsonl(hf_home / "oh.jsonl", [_openhands_row("t0")])
    assert [t.id for t in load([f"hf:{path}"]).traces] == ["t0"]


def test_source_options_split_limit_schema(hf_home):
    from traces.formats.hf import DEFAULT_LIMIT, parse_source

    path = _jsonl(hf_home / "oh3.jsonl", [_openhands_row(f"t{i}") for i in range(3)])
    assert [t.id for t in load([f"hf:{path}@limit=2"]).traces] == ["t0", "t1"]
    assert len(load([f"hf:{path}"]).traces) == 3  # a local file: every row
    assert parse_source("hf:nebius/SWE-agent-trajectories") == ("nebius/SWE-agent-trajectories",
                                                                 {"limit": DEFAULT_LIMIT})
    assert parse_source("hf:org/set@split=test,limit=0,schema=chat") == (
        "org/set", {"split": "test", "limit": None, "schema": "chat"})
    with pytest.raises(TraceError, match="not one of split"):
        parse_source("hf:org/set@rows=5")
    with pytest.raises(TraceError, match="whole number"):
        parse_source("hf:org/set@limit=many")


def test_bad_rows_name_the_line_or_row(hf_home):
    path = hf_home / "bad.jsonl"
    path.write_text(json.dumps(_openhands_row("t0")) + "\n{\"trajectory\": 5}\n{oops\n")
    with pytest.raises(TraceError, match=r"bad\.jsonl:2: .*trajectory"):
        hf.load(str(path))
    result = hf.load(str(path), lenient=True)
    assert result.skipped == 2 and len(result.traces) == 1
    pq_path = _parquet(hf_home / "bad.parquet", [{"x": 1}])
    with pytest.raises(TraceError, match=r"bad\.parquet: row 0: row has neither"):
        hf.load(str(pq_path))
    with pytest.raises(TraceError, match="no such file"):
        hf.load(str(hf_home / "missing.parquet"))
    with pytest.raises(TraceError, match="unknown schema"):
        hf.load(str(path), schema="nope")


def test_offline_hub_gives_a_clear_error(hf_home):
    with pytest.raises(TraceError) as err:
        hf.load("nebius/SWE-agent-trajectories", limit=1)
    message = str(err.value)
    assert message.startswith("hf:nebius/SWE-agent-trajectories: the Hugging Face Hub is unreachable")
    assert "schema='swe-agent'" in message and ".parquet" in message


STEP = st.dictionaries(st.sampled_from(["role", "text", "content", "tool_calls", "tool_call_id", "system_prompt",
                                        "function", "name", "arguments"]),
                       st.one_of(st.none(), st.integers(), st.text(max_size=6), st.sampled_from(["ai", "user", "tool"]),
                                 st.lists(st.dictionaries(st.sampled_from(["id", "function", "name", "arguments"]),
                                                          st.one_of(st.text(max_size=4), st.none(), st.integers()),
                                                          max_size=3), max_size=2)), max_size=5)
ROW = st.dictionaries(st.sampled_from(["trajectory", "messages", "instance_id", "trajectory_id", "model_name"]),
                      st.one_of(st.lists(STEP, max_size=4), st.text(max_size=4), st.integers(), st.none()), max_size=4)


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(ROW, max_size=3), st.sampled_from([None, "swe-agent", "openhands", "chat"]), st.booleans())
def test_fuzz_only_trace_errors(tmp_path, rows, schema, lenient):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    try:
        hf.load(str(path), schema=schema, lenient=lenient)
    except TraceError:
        pass


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.sampled_from([SWE_AGENT_ROW, _openhands_row("t0")]), st.sampled_from(["jsonl", "parquet"]),
       st.integers(0, 10_000), st.binary(max_size=40), st.booleans())
def test_fuzz_truncated_files_and_random_bytes(hf_home, row, kind, cut, junk, use_junk):
    """A local dataset file cut short or replaced by random bytes: the loader's own error, naming the file."""
    path = hf_home / f"rows.{kind}"
    if kind == "jsonl":
        _jsonl(path, [row, row])
    else:
        _parquet(path, [row, row])
    whole = path.read_bytes()
    path.write_bytes(junk if use_junk else whole[: cut % max(len(whole), 1)])
    for lenient in (False, True):
        try:
            hf.load(str(path), lenient=lenient)
        except TraceError as e:
            assert path.name in str(e), str(e)
