"""``entire:PATH``: sessions the Entire CLI keeps in git, read from a real repository built here.

Each test builds a git repository in tmp_path whose ``entire/checkpoints/v1`` branch holds a tiny
Claude Code session and a tiny Codex rollout in Entire's layout (``<2hex>/<10hex>/<n>/full.jsonl`` with
``metadata.json`` beside it and the checkpoint's one level up; traces.entire cites entireio/cli for it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bench.cli.main import main
from traces import entire
from traces.formats import load
from traces.model import TraceError

CHECKPOINT = "abcdef012345"
BRANCH = "entire/checkpoints/v1"


def _claude(session: str = "claude-session-1", turns: int = 2) -> list[dict]:
    """A Claude Code session (the shape tests/traces/test_claude_code.py builds): a prompt, then ``turns``
    tool calls with their results, then an answer; the transcript records the bare model id."""
    def rec(kind: str, uid: str, parent: str | None, **kw) -> dict:
        return {"type": kind, "uuid": uid, "parentUuid": parent, "sessionId": session, "isSidechain": False,
                "timestamp": "2026-04-21T10:00:00Z", "version": "2.1.20", **kw}

    out = [rec("user", "u0", None, message={"role": "user", "content": "fix the failing test"})]
    parent = "u0"
    for i in range(turns):
        out.append(rec("assistant", f"a{i}", parent, message={
            "id": f"m{i}", "role": "assistant", "model": "claude-opus-4-6",
            "content": [{"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": f"pytest -k {i}"}}],
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 1000 + 100 * i, "output_tokens": 20}}))
        out.append(rec("user", f"r{i}", f"a{i}", message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"{i} passed"}]}))
        parent = f"r{i}"
    out.append(rec("assistant", "fin", parent, message={
        "id": "mfin", "role": "assistant", "model": "claude-opus-4-6",
        "content": [{"type": "text", "text": "Fixed."}], "usage": {"input_tokens": 5, "output_tokens": 3}}))
    return out


def _codex() -> list[dict]:
    """A Codex rollout (the shape tests/traces/test_codex.py builds): one call, its result, an answer."""
    def line(kind: str, payload: dict) -> dict:
        return {"timestamp": "2026-04-21T10:00:00Z", "type": kind, "payload": payload}

    def tokens(n: int) -> dict:
        usage = {"input_tokens": n, "cached_input_tokens": n // 2, "output_tokens": 10}
        return line("event_msg", {"type": "token_count",
                                  "info": {"total_token_usage": usage, "last_token_usage": usage}})

    return [
        line("session_meta", {"id": "codex-rollout-1", "cli_version": "0.125.0", "base_instructions": {"text": "x"}}),
        line("turn_context", {"model": "gpt-5.5"}),
        line("response_item", {"type": "message", "role": "user",
                               "content": [{"type": "input_text", "text": "list the files"}]}),
        line("response_item", {"type": "function_call", "name": "shell", "arguments": '{"command": ["ls"]}',
                               "call_id": "c1"}),
        tokens(1000),
        line("response_item", {"type": "function_call_output", "call_id": "c1", "output": "a b"}),
        line("response_item", {"type": "message", "role": "assistant",
                               "content": [{"type": "output_text", "text": "a and b"}]}),
        tokens(1100),
    ]


def _jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def _metadata(index: int, session_id: str, agent: str, model: str, **extra) -> str:
    return json.dumps({"cli_version": "0.5.5", "checkpoint_id": CHECKPOINT, "session_id": session_id,
                       "strategy": "manual-commit", "agent": agent, "model": model,
                       "token_usage": {"input_tokens": 15, "output_tokens": 43, "api_call_count": 3},
                       "created_at": f"2026-04-21T10:0{index}:00Z", **extra}, indent=2)


def checkpoint_files() -> dict[str, str]:
    """The tree of one checkpoint with two sessions, as the Entire CLI commits it."""
    cp = f"{CHECKPOINT[:2]}/{CHECKPOINT[2:]}"
    return {
        f"{cp}/metadata.json": json.dumps({"checkpoint_id": CHECKPOINT, "cli_version": "0.5.5", "sessions": [
            {"metadata": f"/{cp}/0/metadata.json", "transcript": f"/{cp}/0/full.jsonl"},
            {"metadata": f"/{cp}/1/metadata.json", "transcript": f"/{cp}/1/full.jsonl"}]}),
        f"{cp}/0/full.jsonl": _jsonl(_claude()),
        f"{cp}/0/metadata.json": _metadata(0, "claude-session-1", "Claude Code", "claude-opus-4-6[1m]"),
        f"{cp}/0/prompt.txt": "fix the failing test\n",
        f"{cp}/0/content_hash.txt": "sha256:0000\n",
        f"{cp}/1/full.jsonl": _jsonl(_codex()),
        f"{cp}/1/metadata.json": _metadata(1, "codex-rollout-1", "Codex", "gpt-5.5"),
    }


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout


def _commit_orphan(repo: Path, branch: str, files: dict[str, str | bytes]) -> None:
    """Commit ``files`` as the whole tree of a new orphan ``branch``, then go back to main (so the work
    tree never holds them: entire: must read git's objects, not a checkout)."""
    _git(repo, "checkout", "-q", "--orphan", branch)
    _git(repo, "rm", "-rq", "--cached", "--ignore-unmatch", ".")
    for child in repo.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    _write(repo, files)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", f"{branch}")
    _git(repo, "checkout", "-qf", "main")
    _git(repo, "clean", "-qfdx")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed: entire: reads repositories with it")
    root = tmp_path / "project"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("# a project whose agent sessions Entire records\n")
    _git(root, "add", "README.md")
    _git(root, "commit", "-qm", "code")
    _commit_orphan(root, BRANCH, checkpoint_files())
    return root


def _check_both(traces, source_part: str) -> None:
    by_agent = {t.agent: t for t in traces}
    assert sorted(by_agent) == ["claude-code", "codex"]
    claude, codex = by_agent["claude-code"], by_agent["codex"]
    assert claude.meta["entire"] == {**claude.meta["entire"], "checkpoint_id": CHECKPOINT, "session": "0",
                                     "session_id": "claude-session-1", "agent": "Claude Code",
                                     "model": "claude-opus-4-6[1m]", "cli_version": "0.5.5"}
    assert claude.meta["window_hint"] == "1m"
    assert claude.meta["window_evidence"] == "entire metadata.json model claude-opus-4-6[1m]"
    assert claude.model == "claude-opus-4-6"  # what the calls were billed as: the transcript's, not [1m]
    assert claude.n_calls == 3 and claude.id == "claude-session-1"
    assert codex.meta["entire"]["agent"] == "Codex" and codex.meta["entire"]["model"] == "gpt-5.5"
    assert "window_hint" not in codex.meta and codex.model == "gpt-5.5" and codex.id == "codex-rollout-1"
    assert source_part in claude.source


def test_a_repository_yields_every_session_with_its_agent_model_and_window(repo):
    assert not list(repo.glob("ab/*"))  # main is checked out: the sessions are only in git's objects
    result = load([f"entire:{repo}"])
    _check_both(result.traces, f"@{BRANCH}:ab/cdef012345/0/full.jsonl")
    assert not any("passed over" in n for n in result.notes)


def test_a_fresh_clone_reads_the_remote_tracking_branch(repo, tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True, capture_output=True)
    assert "entire/checkpoints/v1" not in _git(clone, "branch", "--list")  # only origin/entire/...
    _check_both(load([f"entire:{clone}"]).traces, "origin/entire/checkpoints/v1:ab/cdef012345/0/full.jsonl")


def test_a_checkout_of_the_branch_and_a_plain_folder_import_read_the_same(tmp_path):
    checkout = tmp_path / "checkout"
    _write(checkout, checkpoint_files())
    _check_both(load([f"entire:{checkout}"]).traces, str(checkout / "ab/cdef012345/0/full.jsonl"))
    result = load([str(checkout)])  # no entire: prefix: the metadata beside a transcript is read all the same
    _check_both(result.traces, str(checkout / "ab/cdef012345/0/full.jsonl"))
    assert not any("passed over" in n for n in result.notes)  # metadata.json, prompt.txt: read, not passed over
    listed = {line.split(": ")[1]: line.split(": ", 2)[2] for line in result.details}
    assert listed["ab/cdef012345/0/metadata.json"] == "Entire session metadata, read with 0/full.jsonl"
    assert listed["ab/cdef012345/metadata.json"].startswith("Entire checkpoint metadata")
    assert listed["ab/cdef012345/0/prompt.txt"] == "Entire's prompt.txt, not the agent's record"


def test_v2_raw_transcripts_are_read_with_their_metadata_once(repo):
    cp2 = "cd/0123456789"
    extra = _jsonl(_claude("claude-session-2", turns=1))
    # v2 full/current: raw transcripts only (one of them also on v1); v2 main: the metadata
    _commit_orphan(repo, "v2full", {f"{cp2}/0/raw_transcript": extra,
                                    "ab/cdef012345/0/raw_transcript": _jsonl(_claude())})
    _commit_orphan(repo, "v2main", {f"{cp2}/0/metadata.json": _metadata(0, "claude-session-2", "Claude Code",
                                                                         "claude-opus-4-7[1m]")})
    for branch, ref in (("v2full", entire.V2_FULL), ("v2main", entire.V2_MAIN)):
        _git(repo, "update-ref", ref, branch)
        _git(repo, "branch", "-qD", branch)
    traces = load([f"entire:{repo}"]).traces
    assert sorted(t.id for t in traces) == ["claude-session-1", "claude-session-2", "codex-rollout-1"]
    (v2,) = [t for t in traces if t.id == "claude-session-2"]
    assert v2.meta["entire"]["ref"] == entire.V2_FULL and v2.meta["window_hint"] == "1m"
    assert v2.meta["entire"]["model"] == "claude-opus-4-7[1m]" and v2.n_calls == 2


def test_a_transcript_split_in_chunks_is_read_whole(tmp_path):
    records = _claude(turns=4)
    lines = _jsonl(records).splitlines()
    files = checkpoint_files()
    del files["ab/cdef012345/1/full.jsonl"], files["ab/cdef012345/1/metadata.json"]
    # agent/chunking.go: chunks split at line boundaries, without the newline at each cut
    files["ab/cdef012345/0/full.jsonl"] = "\n".join(lines[:4])
    files["ab/cdef012345/0/full.jsonl.001"] = "\n".join(lines[4:]) + "\n"
    _write(tmp_path / "c", files)
    result = load([str(tmp_path / "c")])
    (trace,) = result.traces
    assert trace.n_calls == 5 and trace.meta["window_hint"] == "1m"
    assert any(line.endswith("full.jsonl.001: part of full.jsonl (Entire splits large transcripts), read with it")
               for line in result.details)


@pytest.mark.parametrize("kept_in", ["checkout", "git"])
def test_earlier_checkpoints_of_a_session_are_not_replayed_again(tmp_path, kept_in):
    """Entire stores the whole session so far at every checkpoint: the first is a prefix of the second."""
    files = checkpoint_files()
    files["01/23456789ab/0/full.jsonl"] = _jsonl(_claude(turns=1))  # the same session, one commit earlier
    files["01/23456789ab/0/metadata.json"] = _metadata(0, "claude-session-1", "Claude Code", "claude-opus-4-6[1m]")
    if kept_in == "git":
        if shutil.which("git") is None:
            pytest.skip("git is not installed")
        (tmp_path / "c").mkdir()
        _git(tmp_path / "c", "init", "-q", "-b", "main")
        _git(tmp_path / "c", "commit", "-q", "--allow-empty", "-m", "code")
        _commit_orphan(tmp_path / "c", BRANCH, files)
    else:
        _write(tmp_path / "c", files)
    result = load([f"entire:{tmp_path / 'c'}"])
    assert sorted(t.id for t in result.traces) == ["claude-session-1", "codex-rollout-1"]
    assert next(t for t in result.traces if t.agent == "claude-code").n_calls == 3  # the later, longer copy
    assert any("01/23456789ab/0/full.jsonl: an earlier checkpoint of session claude-session-1" in line
               and "ab/cdef012345/0/full.jsonl holds all of it" in line for line in result.details)
    assert any("left out 1 earlier checkpoints" in n for n in result.notes)


def test_metadata_naming_another_agent_is_noted_and_the_content_decides(tmp_path):
    files = checkpoint_files()
    files["ab/cdef012345/1/metadata.json"] = _metadata(1, "codex-rollout-1", "Gemini CLI", "gemini-3-pro")
    _write(tmp_path / "c", files)
    result = load([str(tmp_path / "c")])
    assert sorted(t.agent for t in result.traces) == ["claude-code", "codex"]
    assert any("Entire's metadata says 'Gemini CLI', the file reads as codex" in n for n in result.notes)


def test_bad_metadata_degrades_to_a_session_without_it(tmp_path):
    files = checkpoint_files()
    files["ab/cdef012345/0/metadata.json"] = "{not json"
    _write(tmp_path / "c", files)
    result = load([str(tmp_path / "c")])
    claude = next(t for t in result.traces if t.agent == "claude-code")
    assert claude.meta["entire"]["checkpoint_id"] == CHECKPOINT and "window_hint" not in claude.meta
    assert any(line.endswith("metadata.json: Entire session metadata that is not a JSON object: ignored")
               for line in result.details)


@pytest.mark.parametrize("make", ["folder", "repo", "missing", "file"])
def test_entire_on_something_else_is_a_short_error(tmp_path, make, capsys):
    target = tmp_path / "x"
    if make == "folder":
        _write(target, {"notes.md": "# nothing of Entire's here\n"})
    elif make == "repo":
        if shutil.which("git") is None:
            pytest.skip("git is not installed")
        target.mkdir()
        _git(target, "init", "-q", "-b", "main")
    elif make == "file":
        target.write_text("hello\n")
    with pytest.raises(TraceError) as err:
        load([f"entire:{target}"])
    message = str(err.value)
    assert len(message.splitlines()) <= 2 and f"entire:{target}" in message
    if make == "repo":
        assert "without branch entire/checkpoints/v1" in message
    assert main(["import", f"entire:{target}", "--out", str(tmp_path / "out")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) <= 2


def test_import_and_plan_accept_entire(repo, tmp_path, capsys):
    out = tmp_path / "native"
    assert main(["import", f"entire:{repo}", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.glob("*.cbt.jsonl")) == ["claude-session-1.cbt.jsonl",
                                                               "codex-rollout-1.cbt.jsonl"]
    from traces import native

    (claude,) = native.read_file(out / "claude-session-1.cbt.jsonl").traces
    assert claude.meta["window_hint"] == "1m"  # the hint survives the native format
    capsys.readouterr()
    assert main(["plan", "--traces", f"entire:{repo}", "--strategies", "none", "--sample", "1"]) == 0
    assert "2 traces" in capsys.readouterr().out


def test_the_shared_entire_sessions_carry_their_metadata(shared_traces):
    """§9 of ../shared/traces: a plain folder import reads each session's metadata.json beside it."""
    folders = sorted(p for p in shared_traces.iterdir() if p.is_dir() and any(p.glob("*/*/*/metadata.json")))
    if not folders:
        pytest.skip(f"no Entire checkpoint folders in {shared_traces} (MANIFEST.md §9)")
    result = load([str(f) for f in folders])
    assert not any("metadata.json" in n for n in result.notes if "passed over" in n)
    read = [t for t in result.traces if "entire" in t.meta]
    assert len(read) >= 10
    for t in read:
        beside = Path(t.source).parent / "metadata.json"
        if not beside.exists():  # a v2 raw_transcript copied without its metadata: the path still names it
            assert "session_id" not in t.meta["entire"] and t.meta["entire"]["checkpoint_id"] in t.source.replace(
                "/", "")
            continue
        meta = json.loads(beside.read_text())
        assert t.meta["entire"]["checkpoint_id"] == meta["checkpoint_id"]
        assert t.meta["entire"].get("session_id") == meta["session_id"]
        assert (t.meta.get("window_hint") == "1m") == str(meta.get("model", "")).endswith("[1m]")


def test_a_session_file_named_directly_reads_its_metadata_and_chunks(tmp_path):
    files = checkpoint_files()
    lines = _jsonl(_claude(turns=4)).splitlines()
    files["ab/cdef012345/0/full.jsonl"] = "\n".join(lines[:4])
    files["ab/cdef012345/0/full.jsonl.001"] = "\n".join(lines[4:]) + "\n"
    _write(tmp_path / "c", files)
    (trace,) = load([str(tmp_path / "c" / "ab/cdef012345/0/full.jsonl")]).traces
    assert trace.n_calls == 5 and trace.meta["window_hint"] == "1m"
    assert trace.meta["entire"]["checkpoint_id"] == CHECKPOINT
    (codex,) = load([str(tmp_path / "c" / "ab/*/1/full.jsonl")]).traces  # a glob, too
    assert codex.meta["entire"]["agent"] == "Codex"


def test_a_transcript_absent_from_a_partial_clone_is_listed_not_fatal(repo):
    oid = _git(repo, "rev-parse", f"{BRANCH}:ab/cdef012345/1/full.jsonl").strip()
    (repo / ".git" / "objects" / oid[:2] / oid[2:]).unlink()  # as a blobless clone lacks it
    result = load([f"entire:{repo}"])
    assert [t.agent for t in result.traces] == ["claude-code"]
    assert any("could not read 1 session files" in n and "ab/cdef012345/1/full.jsonl" in n for n in result.notes)
    assert any(line.endswith("ab/cdef012345/1/full.jsonl: Entire session of Codex: its blob is absent from this "
                             "clone (partial or shallow); git fetch it to read it") for line in result.details)
