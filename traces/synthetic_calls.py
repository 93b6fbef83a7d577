"""One synthetic tool call at a time: its tool, arguments and an output of a calibrated size.

The output size is drawn from the category's log-normal fitted on real traces
(traces/calibration.py), scaled by the scenario, capped like agents cap long outputs, and the text
is cut to exactly that size, so the generated sizes follow the fit. File reads keep a per-path
size and content (an unchanged file read twice gives the same text: what Cline's duplicate-read
removal looks for); an edit bumps the file's version so a later read shows new content.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from itertools import chain
from random import Random

from traces import synthetic_text as tx
from traces.calibration import Calibration, LogNormal

TOOLS: dict[str, dict[str, str]] = {
    "read_file": {"path": "absolute path of the file", "offset": "first line (optional)",
                  "limit": "number of lines (optional)"},
    "edit_file": {"path": "absolute path", "old_text": "exact text to replace", "new_text": "replacement"},
    "write": {"path": "absolute path", "content": "the whole new file"},
    "bash": {"command": "the command line", "timeout": "seconds (optional)"},
    "grep": {"pattern": "regular expression", "path": "folder or file to search (optional)"},
    "glob": {"pattern": "glob such as src/**/*.py"},
    "web_fetch": {"url": "the page to fetch", "prompt": "what to extract"},
    "todo_write": {"todos": "the task list"},
}
"""Tool names and parameters (what the system prompt documents and the calls use)."""


@dataclass(frozen=True)
class Call:
    tool: str
    input: dict
    output: str
    is_error: bool = False
    category: str = "other"


@dataclass
class Outputs:
    """Draws calls for one session (mutable: it remembers the files the session has seen)."""

    rng: Random
    cal: Calibration
    project: str
    size_scale: dict[str, float] = field(default_factory=dict)
    max_chars: int = 120_000
    reread: float = 0.15
    failure_at_tail: bool = False
    files: dict[str, int] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)

    @property
    def root(self) -> str:
        return f"/home/dev/{self.project}"

    def size(self, category: str) -> int:
        drawn = self.cal.output_chars[category].sample(self.rng) * self.size_scale.get(category, 1.0)
        return max(1, min(self.max_chars, round(drawn)))

    def call(self, category: str) -> Call:
        size = self.size(category)
        return getattr(self, "_" + category)(size)

    def _new_path(self, folder: str = "") -> str:
        r = self.rng
        folder = folder or f"src/{self.project}/{r.choice(tx.NOUNS)}"
        path = f"{self.root}/{folder}/{tx.snake(r)}.py"
        while path in self.files:
            path = path[:-3] + f"_{len(self.files)}.py"
        return path

    def file_text(self, path: str, size: int, start: int = 1) -> str:
        """The numbered content of ``path`` at its current version (same path+version, same text)."""
        r = Random(f"{path}#{self.versions.get(path, 0)}#{start}")
        return tx.fill("", tx.numbered(tx.code_lines(r), start, "→"), size)

    def _read(self, size: int) -> Call:
        if self.files and self.rng.random() < self.reread:
            path = self.rng.choice(sorted(self.files))
            size = self.files[path]
        else:
            path = self._new_path()
            self.files[path] = size
        return Call("read_file", {"path": path}, self.file_text(path, size), category="read")

    def _edit(self, size: int) -> Call:
        r = self.rng
        path = r.choice(sorted(self.files)) if self.files else self._new_path()
        self.files.setdefault(path, size * 8)
        self.versions[path] = self.versions.get(path, 0) + 1
        code = tx.code_lines(r)
        old, new = next(code) or next(code), next(code) or next(code)
        line = r.randint(1, 400)
        head = (f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet of "
                "the edited file:")
        return Call("edit_file", {"path": path, "old_text": old, "new_text": new},
                    tx.fill(head, tx.numbered(tx.code_lines(r), line), size), category="edit")

    def _write(self, size: int) -> Call:
        r = self.rng
        path = self._new_path(r.choice(("tests", f"src/{self.project}")))
        body = tx.fill("", tx.code_lines(r), r.randint(300, 4000))
        self.files[path] = len(body) + 8 * body.count("\n")
        return Call("write", {"path": path, "content": body},
                    tx.fill(f"File created successfully at: {path}", tx.numbered(iter(body.split("\n"))), size)
                    if size <= len(body) else tx.fill(f"File created successfully at: {path}",
                                                      tx.numbered(tx.code_lines(r)), size), category="write")

    def _fitted(self, category: str) -> LogNormal:
        """The category's output-size fit with the scenario's size scale applied."""
        return self.cal.output_chars[category].scaled(self.size_scale.get(category, 1.0))

    def size_within(self, category: str, floor: float, ceiling: float = math.inf) -> int:
        """A size from the category's scaled fit conditioned on lying in [floor, ceiling], capped."""
        drawn = self._fitted(category).sample_within(self.rng, floor, ceiling)
        return max(1, min(self.max_chars, round(drawn)))

    def quantile(self, category: str, q: float) -> float:
        """The ``q`` quantile of the category's scaled output size (before the cap)."""
        return self._fitted(category).quantile(q)

    def test_run(self, size: int, tail: str | None = None) -> Call:
        """A pytest run; ``tail`` (from the ``E`` error line to the summary) ends the output when given.

        A failing run ends like pytest's: the ``FAILURES`` section (the test's source and the frames
        into the code under test), then ``tail``. Where ``size`` is too small to hold the section
        too, only ``tail`` is kept (the drawn size wins).
        """
        r = self.rng
        tests = [f"tests/test_{r.choice(tx.NOUNS)}.py" for _ in range(6)]
        failing = tail is not None or r.random() < 0.2
        if failing and tail is None and self.failure_at_tail:
            err = f"E   {tx.camel(r)}Error: {r.choice(tx.NOUNS)} {r.randint(0, 9999)} was not {r.choice(tx.VERBS)}d"
            tail = (f"{err}\n\n{tests[0]}:{r.randint(20, 300)}: {err[4:].split(':')[0]}\n"
                    f"{tx.rule('short test summary info')}\nFAILED {tests[0]}::test_{tx.snake(r)} - {err[4:]}\n"
                    f"1 failed, {r.randint(50, 900)} passed")
        if tail:
            failed = re.search(r"^FAILED (\S+)::(\w+)", tail, re.M)
            section = "\n".join(tx.pytest_failure(r, self.project, *failed.groups())) if failed else ""
            if section and len(section) + len(tail) + 2 <= size:
                tail = f"{section}\n{tail}"
        body = tx.fill(tx.pytest_head(self.project, r.randint(20, 2000)), tx.pytest_lines(r, self.project, tests),
                       max(size - len(tail) - 1, 0) if tail else size)
        cmd = f"python -m pytest {r.choice(tests)} -q" if r.random() < 0.6 else "python -m pytest -q -x"
        return Call("bash", {"command": cmd}, f"{body}\n{tail}" if tail else body, failing, "bash")

    def config_file(self, section: str, size: int) -> str:
        """A numbered TOML file of about ``size`` characters with ``section`` somewhere inside it, whole."""
        r = self.rng
        lines = tx.config_lines(r)
        before, depth = [f"# {self.project} settings"], size * r.uniform(0.1, 0.7)
        chars = len(before[0])
        while chars < depth:
            before.append(next(lines))
            chars += len(before[-1]) + 1
        head = [*before, "", *section.rstrip("\n").split("\n")]
        text = "\n".join(tx.numbered(iter(head), 1, "→"))
        if len(text) >= size:
            return text
        return tx.fill(text, tx.numbered(lines, len(head) + 1, "→"), size)

    def _bash(self, size: int) -> Call:
        r = self.rng
        # big outputs are test runs, app logs and builds; listings and git output stay small
        weights = (0.45, 0.2, 0.1, 0.08, 0.1, 0.07) if size <= 8_000 else (0.6, 0.3, 0.1, 0, 0, 0)
        if self.failure_at_tail:
            weights = (0.75, 0.2, 0.05, 0, 0, 0) if size > 8_000 else (0.5, 0.2, 0.05, 0.1, 0.1, 0.05)
        kind = r.choices(("test", "app", "build", "ls", "diff", "log"), weights)[0]
        if kind == "test":
            return self.test_run(size)
        if kind == "app":
            cmd = f"python -m {self.project}.cli {r.choice(tx.VERBS)} --{r.choice(tx.NOUNS)} {r.randint(1, 99)}"
            lines = tx.log_lines(r, self.project)
        elif kind == "build":
            cmd = r.choice(("pip install -e '.[dev]'", "make build", "cargo build --release"))
            lines = tx.build_lines(r, self.project)
        elif kind == "ls":
            cmd, lines = f"ls -la src/{self.project}/{r.choice(tx.NOUNS)}", tx.listing_lines(r)
        elif kind == "diff":
            path = r.choice(sorted(self.files)) if self.files else self._new_path()
            cmd, lines = "git diff", tx.diff_lines(r, path.removeprefix(self.root + "/"))
        else:
            cmd = "git log --oneline -n 50"
            lines = iter(lambda: f"{r.getrandbits(28):07x} {r.choice(tx.VERBS).capitalize()} {r.choice(tx.NOUNS)} "
                                 f"{r.choice(tx.NOUNS)} handling", None)
        error = kind in ("app", "build") and r.random() < 0.1
        return Call("bash", {"command": cmd}, tx.fill("", lines, size), error, "bash")

    def _search(self, size: int) -> Call:
        r = self.rng
        if r.random() < 0.6:
            pattern = tx.snake(r)
            hits = iter(lambda: f"src/{self.project}/{r.choice(tx.NOUNS)}/{tx.snake(r)}.py:{r.randint(1, 900)}:    "
                                f"{pattern}({r.choice(tx.NOUNS)}, {r.choice(tx.NOUNS)}_id={r.randint(0, 99)})", None)
            return Call("grep", {"pattern": pattern, "path": "src/"}, tx.fill("", hits, size), category="search")
        paths = iter(lambda: f"{self.root}/src/{self.project}/{r.choice(tx.NOUNS)}/{tx.snake(r)}.py", None)
        return Call("glob", {"pattern": f"src/**/*{r.choice(tx.NOUNS)}*.py"}, tx.fill("", paths, size),
                    category="search")

    def _web(self, size: int) -> Call:
        r = self.rng
        url = f"https://docs.{r.choice(tx.NOUNS)}lib.dev/{r.choice(tx.VERBS)}/{r.choice(tx.NOUNS)}"
        return Call("web_fetch", {"url": url, "prompt": "How is this configured?"},
                    tx.fill(f"# {r.choice(tx.NOUNS).capitalize()} guide", tx.prose_lines(r), size), category="web")

    def _other(self, size: int) -> Call:
        r = self.rng
        todos = [f"{tx.snake(r)} ({r.choice(('pending', 'in_progress', 'completed'))})" for _ in range(r.randint(2, 6))]
        return Call("todo_write", {"todos": "; ".join(todos)},
                    tx.fill("Todos have been modified successfully. Current list:",
                            chain(todos, tx.prose_lines(r)), size), category="other")
