"""Every Claude Code session in ../shared/traces imports as recorded (issue 22): strict, no unknown format,
every record imported or counted, calls and compactions as MANIFEST.md §1, §9 and §10 give them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from traces.formats import detect, read_path
from traces.model import Usage, orphans


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("claude-code__*/**/*") if p.is_file()
                  and (p.suffix == ".jsonl" or p.name == "raw_transcript"))


def test_every_claude_code_file_imports_strictly(shared_traces):
    files = _files(shared_traces)
    assert len(files) >= 21, "claude-code__* folders hold 21 session files (MANIFEST.md §1, §9, §10)"
    for path in files:
        assert detect(path) == "claude-code", path  # never "unknown trace format"
        result = read_path(path)  # strict: a bad or unknown record would raise
        assert result.skipped == 0, path
        assert sum("passed over" in n for n in result.notes) <= 1, path  # one line per file
        if path.name.startswith("agent-acompact-"):
            assert result.traces == [] and "summarizer call" in result.notes[0], path
            continue
        assert result.traces, path
        for trace in result.traces:
            unanswered, orphan_results = orphans(trace.messages)
            assert orphan_results == set(), path
            assert unanswered <= {u.id for u in trace.messages[-1].tool_uses}, path
            assert all(m.meta.get("model") != "<synthetic>" for m in trace.messages if m.role == "assistant"), path


def _raw_calls(path: Path) -> tuple[int, int]:
    """(main-thread model calls, <synthetic> records) straight from the file: unique message ids."""
    calls, synthetic = set(), 0
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r.get("type") == "assistant" and not r.get("isSidechain"):
            if r["message"].get("model") == "<synthetic>":
                synthetic += 1
            else:
                calls.add(r["message"]["id"])
    return len(calls), synthetic


# MANIFEST.md §9 and §10: calls (main thread, <synthetic> apart), recorded compactions (trigger, preTokens)
SESSIONS = {
    "claude-code__entireio-cli/98/78b713483d/0/full.jsonl": ("2.0.76", 97, [("auto", 155_377)]),
    "claude-code__entireio-cli/b6/f735fbac66/0/full.jsonl": ("2.1.1", 219, [("auto", 155_301), ("auto", 155_539)]),
    "claude-code__entireio-cli/cd/95adddad32/0/full.jsonl": ("2.1.7", 225, [("auto", 156_699), ("auto", 155_241),
                                                                            ("auto", 155_413)]),
    "claude-code__entireio-cli/25/730c662552/0/full.jsonl": ("2.1.20", 169, [("auto", 176_700), ("auto", 157_925)]),
    "claude-code__entireio-cli/54/bb2ec87cc8/2/full.jsonl": ("2.1.22", 80, []),
    "claude-code__entireio-cli/43/2b48f6b6e6/0/full.jsonl": ("2.1.37", 258, [("auto", 167_471), ("auto", 167_448)]),
    "claude-code__entireio-cli/18/4069756ffc/0/full.jsonl": ("2.1.42", 165, [("auto", 167_045)]),
    "claude-code__entireio-cli/b0/dc55b3a1dc/1/full.jsonl": ("2.1.17", 131, [("auto", 157_692)]),
    "claude-code__entireio-skills/96/7701736668/0/full.jsonl": ("2.1.108", 389, []),
    "claude-code__entireio-skills/1f/64c84a8821/1/raw_transcript": ("2.1.144", 161, []),
    "claude-code__vsla/9034225e-c367-4ab6-b1eb-1f478a7ae27a.jsonl": ("1.0.53", 184, [("unrecorded", None)]),
}


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_new_sessions_as_the_manifest_lists_them(shared_traces, name):
    path = shared_traces / name
    if not path.exists():
        pytest.skip(f"{name} is absent from {shared_traces}")
    version, calls, compactions = SESSIONS[name]
    result = read_path(path)
    main = next(t for t in result.traces if not t.meta["sidechain"])
    assert main.meta["version"] == version
    assert main.n_calls == calls
    assert [(c.trigger, c.pre_tokens) for c in main.compactions] == compactions
    raw, synthetic = _raw_calls(path)
    assert main.n_calls + main.meta["skipped_calls"] == raw  # every call imported or counted
    assert main.meta.get("synthetic_messages", 0) == synthetic  # kept as text, never as calls
    one_m = "entireio-skills" in name  # the two sessions that show a 1M window (metadata: [1m])
    assert (main.meta.get("window_hint") == "1m") == one_m and bool(main.meta.get("window_evidence")) == one_m


def test_v1_task_runs_are_their_own_traces(shared_traces):
    """MANIFEST §10 calls the 16 calls beside the main thread "rewound branches": they are a second Task
    sub-agent run, written (as 1.0.x did) into the session file with no agentId."""
    path = shared_traces / "claude-code__vsla/9034225e-c367-4ab6-b1eb-1f478a7ae27a.jsonl"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    result = read_path(path)
    assert [(t.id.split("/")[-1], t.n_calls, t.meta["skipped_calls"]) for t in result.traces] == [
        ("9034225e-c367-4ab6-b1eb-1f478a7ae27a", 184, 0), ("sidechain-1", 16, 0), ("sidechain-2", 29, 0)]
    ids = {json.loads(line)["message"]["id"] for line in path.read_text().splitlines() if '"assistant"' in line
           and json.loads(line).get("type") == "assistant"}
    assert sum(t.n_calls for t in result.traces) == len(ids)  # every call imported


def test_a_version_change_mid_file_is_listed(shared_traces):
    path = shared_traces / "claude-code__entireio-cli/43/2b48f6b6e6/0/full.jsonl"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    (trace,) = read_path(path).traces
    assert trace.meta["version"] == "2.1.37" and trace.meta["versions"] == ["2.1.36", "2.1.37"]


def test_the_1m_evidence_says_where(shared_traces):
    skills = shared_traces / "claude-code__entireio-skills"
    if not skills.is_dir():
        pytest.skip(f"{skills} is absent")
    (a,) = read_path(skills / "96/7701736668/0/full.jsonl").traces
    assert "Co-Authored-By" not in a.meta["window_evidence"] and "(1M context)" in a.meta["window_evidence"]
    (b,) = read_path(skills / "1f/64c84a8821/1/raw_transcript").traces
    assert "claude-opus-4-7[1m]" in b.meta["window_evidence"]


def test_the_144_file_counts_every_metadata_type(shared_traces):
    path = shared_traces / "claude-code__entireio-skills/1f/64c84a8821/1/raw_transcript"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    result = read_path(path)
    (note,) = [n for n in result.notes if "passed over" in n]
    for kind in ("ai-title 44", "agent-name 44", "permission-mode 43", "last-prompt 42", "pr-link 21",
                 "attachment:hook_system_message 1", "system:turn_duration 16"):
        assert kind in note
    (trace,) = result.traces
    sent = {m.meta.get("attachment") for m in trace.messages} - {None}
    assert {"task_reminder", "diagnostics", "deferred_tools_delta", "agent_listing_delta"} <= sent


@pytest.mark.parametrize("session", ["258c7280-ae70-4798-800f-63464d01a85d", "4d5611e5-241a-462a-8d15-5122611a9569",
                                     "ae4a77f8-aedd-4bc1-888f-c94edc91af04"])
def test_the_compaction_call_usage_is_its_parents(shared_traces, session):
    folder = shared_traces / "claude-code__marot-spotter"
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent")
    (call_file,) = (folder / session / "subagents").glob("agent-acompact-*.jsonl")
    raw = [json.loads(line) for line in call_file.read_text().splitlines()][-1]["message"]["usage"]
    (trace,) = read_path(folder / f"{session}.jsonl").traces
    (c,) = trace.compactions
    assert c.call_usage == Usage(raw["input_tokens"], raw["output_tokens"], raw["cache_read_input_tokens"],
                                 raw["cache_creation_input_tokens"])
