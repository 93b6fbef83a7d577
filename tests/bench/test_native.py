"""The compiled replay checks (bench/cli/native.py, bench/_native.py): used only when current, and the
same results as pure Python."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import _native

ROOT = Path(__file__).resolve().parents[2]
OUTPUTS = ("results.csv", "calls.csv", "probes.csv", "events.jsonl", "summaries.jsonl", "verdict.json")


def _fake_build(tmp_path: Path, monkeypatch) -> None:
    """A build of one module (an empty stand-in file) compiled from tmp_path/src.py as it is now."""
    (tmp_path / "src.py").write_text("x = 1\n")
    sources = {"src.py": _native.digest(tmp_path / "src.py")}
    build = tmp_path / "native"
    (build / "bench").mkdir(parents=True)
    (build / "bench" / "m.so").write_bytes(b"")
    (build / "manifest.json").write_text(json.dumps({
        "failed": "", "ext_suffix": _native.sysconfig.get_config_var("EXT_SUFFIX"), "sources": sources,
        "extensions": {"bench.m": "bench/m.so"}}))
    monkeypatch.setattr(_native, "ROOT", tmp_path)
    monkeypatch.setattr(_native, "BUILD", build)
    monkeypatch.setattr(_native, "MANIFEST", build / "manifest.json")
    monkeypatch.delenv(_native.ENV, raising=False)


def test_a_build_is_used_only_while_every_source_is_as_it_was_compiled(tmp_path, monkeypatch):
    _fake_build(tmp_path, monkeypatch)
    files, why = _native._usable()
    assert files == {"bench.m": tmp_path / "native" / "bench" / "m.so"} and why.startswith("compiled")
    (tmp_path / "src.py").write_text("x = 2\n")  # edited after the build: its compiled code is stale
    files, why = _native._usable()
    assert files is None and "older than src.py" in why


def test_the_switch_and_a_failed_build_give_pure_python(tmp_path, monkeypatch):
    _fake_build(tmp_path, monkeypatch)
    monkeypatch.setenv(_native.ENV, "1")
    assert _native._usable() == (None, f"{_native.ENV} is set")
    monkeypatch.setenv(_native.ENV, "0")  # 0 is off
    assert _native._usable()[0] is not None
    manifest = json.loads(_native.MANIFEST.read_text())
    _native.MANIFEST.write_text(json.dumps({**manifest, "failed": "exit 1"}))
    files, why = _native._usable()
    assert files is None and "failed: exit 1" in why


def _run(out: Path, pure: bool) -> str:
    env = {**os.environ, _native.ENV: "1" if pure else ""}
    cmd = [sys.executable, "-m", "bench", "run", "--name", "t", "--out", str(out), "--seeds", "1", "--no-report",
           "--workers", "1", "--quiet", "--strategies", "codex", "gemini-cli", "claude-code", "aider", "opencode:tail"]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    probe = "import bench._native as n, bench.replay.references as r; print(n.status, '|', r.__file__)"
    return subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True).stdout


@pytest.mark.slow
def test_the_compiled_build_replays_as_pure_python(tmp_path):
    """A small bench (5 strategies with summaries, forks, re-reads) both ways: byte-identical outputs."""
    if _native._usable()[0] is None:
        pytest.skip(f"no usable native build: {_native._usable()[1]}")
    native, pure = _run(tmp_path / "native", pure=False), _run(tmp_path / "pure", pure=True)
    assert native.startswith("compiled") and native.strip().endswith(_native.sysconfig.get_config_var("EXT_SUFFIX"))
    assert pure.startswith("pure Python") and pure.strip().endswith(".py")
    for name in OUTPUTS:
        a, b = tmp_path / "native" / "t" / name, tmp_path / "pure" / "t" / name
        assert a.read_bytes() == b.read_bytes(), name
