"""Compile the hot replay checks with mypyc into build/native (``make setup`` runs this; bench/_native.py
loads the result). Never fails: without mypy (the dev extra) or a C compiler, or on any compile error,
it says so in one line and the bench runs as pure Python, with the same results.

Why these modules: typed, Python-heavy parts of every replay (the checks, the prompt cache split,
the provider view, the loop itself, the needle observer) whose state the twin fork can still copy once
compiled (the cache and the view copy themselves; the loop forks into a bare instance). Compiled, a
bench run spends about a sixth less CPU than pure Python (0.83 in two side-by-side pairs; issue 28).
Not compiled, on purpose: the counter (a few dict look-ups per call, which CPython 3.11 runs as fast:
no gain measured, and its compiled ``truth_in`` closure could not be deep-copied, so gemini-cli's fork
fell back to a full twin replay), the context and meter (compiled, no gain), and the call columns (0.5%
of the time; a compiled frozen record cannot be rebuilt by unpickling). The build log is build/native.log.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from bench._native import BUILD, ENV, ROOT, digest

MODULES = ("bench/replay/references.py", "bench/replay/rereads.py", "bench/replay/validity.py",
           "bench/tokens/prefix.py", "bench/summarizers/extractive.py", "strategies/_cuts.py",
           "strategies/codex/running.py", "bench/cost/cache.py", "bench/replay/provider.py",
           "bench/replay/loop.py", "bench/scoring/observer.py")
TIMEOUT = 600


def _imported(module: str) -> set[str]:
    """The project's source files ``module`` imports directly (their types are compiled in: a change to
    one makes the build stale too)."""
    import ast

    found = set()
    for node in ast.walk(ast.parse((ROOT / module).read_text())):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
            [a.name for a in node.names] if isinstance(node, ast.Import) else []
        for name in names:
            base = ROOT / name.replace(".", "/")
            for file in (base.with_suffix(".py"), base / "__init__.py"):
                if name.split(".")[0] in ("bench", "strategies", "traces") and file.is_file():
                    found.add(str(file.relative_to(ROOT)))
    return found


LOG = BUILD.parent / "native.log"


def _compile(out: Path) -> None:
    """The build itself (run in a child process, its output to the log): mypyc, then the C compiler."""
    from mypyc.build import mypycify
    from setuptools import setup

    work = Path(tempfile.mkdtemp(prefix="native-"))
    os.chdir(work)  # setuptools reads the current directory's pyproject.toml: not the project's
    exts = mypycify([str(ROOT / m) for m in MODULES] + ["--ignore-missing-imports", "--follow-imports=silent"],
                    opt_level="3")
    setup(name="compaction-bench-native", ext_modules=exts,
          script_args=["build_ext", "--build-lib", str(out), "--build-temp", str(work / "tmp")])
    shutil.rmtree(work, ignore_errors=True)


def build() -> str:
    """Build into build/native (replaced whole); returns the one line that says what happened."""
    files = sorted(set(MODULES).union(*map(_imported, MODULES)))
    sources = {m: digest(ROOT / m) for m in files}  # as they are now: a later edit makes the build stale
    BUILD.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(BUILD, ignore_errors=True)
    new = BUILD.with_name("native.new")
    shutil.rmtree(new, ignore_errors=True)
    with LOG.open("w") as log:
        try:
            done = subprocess.run([sys.executable, "-m", "bench.cli.native", "--compile", str(new)], stdout=log,
                                  stderr=subprocess.STDOUT, timeout=TIMEOUT, env={**os.environ, ENV: "1"})
            failed = f"exit {done.returncode}, see {LOG.relative_to(ROOT)}" if done.returncode else ""
        except subprocess.TimeoutExpired:
            failed = f"over {TIMEOUT} s"
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    extensions = {}
    if not failed:
        for so in new.rglob(f"*{suffix}"):
            rel = so.relative_to(new)
            extensions[".".join(rel.parts)[:-len(suffix)]] = str(rel)
        wanted = {m[:-3].replace("/", ".") for m in MODULES}
        if not wanted <= set(extensions):
            failed = f"modules missing from the build: {sorted(wanted - set(extensions))}"
    if failed:
        shutil.rmtree(new, ignore_errors=True)
        new.mkdir()
    new.joinpath("manifest.json").write_text(json.dumps(
        {"failed": failed, "ext_suffix": suffix, "sources": sources, "extensions": extensions}, indent=1))
    new.rename(BUILD)
    if failed:
        return f"native build: pure Python ({failed})"
    return f"native build: {len(MODULES)} modules compiled with mypyc, in {BUILD.relative_to(ROOT)} ({ENV}=1: pure)"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--compile"]:
        _compile(Path(args[1]))
        return 0
    try:
        import mypyc  # noqa: F401
    except ImportError:
        print("native build: pure Python (mypy is not installed: pip install -e '.[dev]')")
        return 0
    try:
        print(build())
    except Exception as e:  # noqa: BLE001 - the setup never fails on the optional build
        print(f"native build: pure Python ({e.__class__.__name__}: {e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
