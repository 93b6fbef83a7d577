"""Filler text for synthetic sessions: code, test logs, build logs, grep hits, prose, a system prompt.

Why not random words: compaction strategies estimate tokens from characters, and the gap between
chars/4 and a real tokenizer depends on the kind of text (pricing.md §2.4: code ~4 chars/token,
logs ~2.6). The generators below imitate the shapes agents really see (``cat -n`` numbered code,
pytest progress and tracebacks, timestamped app logs, ``path:line:`` hits) so both counts behave
like real data. Every generator is an endless line iterator drawn from a seeded ``Random``;
``fill`` cuts one to an exact size.

The word lists here never contain the needle vocabulary (traces/synthetic_needles.py), so a
planted answer cannot appear by chance; the generator still checks it.
"""

from __future__ import annotations

from collections.abc import Iterator
from random import Random

NOUNS = ("user", "account", "order", "invoice", "cache", "session", "token", "config", "parser",
         "router", "handler", "queue", "worker", "job", "event", "payload", "schema", "record",
         "batch", "client", "request", "response", "retry", "timeout", "buffer", "index", "shard",
         "node", "graph", "metric", "report", "ledger", "export", "stream", "chunk", "window",
         "limit", "policy", "rule", "filter", "mapper", "loader", "store", "registry", "plugin")
VERBS = ("load", "save", "parse", "build", "resolve", "validate", "render", "fetch", "update",
         "compute", "merge", "split", "flush", "apply", "collect", "encode", "decode", "sync")
TYPES = ("str", "int", "bool", "float", "dict[str, Any]", "list[str]", "Path", "bytes", "None")
LEVELS = ("DEBUG", "DEBUG", "INFO", "INFO", "INFO", "WARNING", "ERROR")
PROSE = ("the", "request", "handler", "returns", "a", "cached", "value", "when", "the", "key",
         "is", "present", "otherwise", "it", "falls", "back", "to", "the", "database", "and",
         "records", "a", "metric", "for", "each", "miss", "which", "lets", "operators", "see",
         "how", "often", "this", "happens", "in", "production", "under", "load", "with", "many",
         "concurrent", "clients", "so", "we", "keep", "timeouts", "short", "and", "retries", "bounded", "idempotent",
         "deserialization", "misconfigured", "reconnects", "backpressure", "e.g.", "i.e.", "(optional)",
         "it's", "don't", "re-run", "non-blocking", "upstream's", "v2", "UTF-8", "JSON", "[1]", "—")


def camel(rng: Random) -> str:
    return rng.choice(NOUNS).capitalize() + rng.choice(NOUNS).capitalize()


def snake(rng: Random) -> str:
    return f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}"


def fill(head: str, lines: Iterator[str], size: int) -> str:
    """``head`` then lines until ``size`` characters, cut to exactly ``size``."""
    parts, n = ([head] if head else []), len(head)
    while n < size:
        line = next(lines)
        n += len(line) + (1 if parts else 0)
        parts.append(line)
    return "\n".join(parts)[:size]


def code_lines(rng: Random) -> Iterator[str]:
    """Python-like source, one function or class at a time."""
    while True:
        noun, arg, var = rng.choice(NOUNS), rng.choice(NOUNS), rng.choice(NOUNS) + "s"
        kind = rng.random()
        if kind < 0.12:
            yield f"from {rng.choice(NOUNS)}.{rng.choice(NOUNS)} import {camel(rng)}, {snake(rng)}"
            continue
        if kind < 0.3:
            yield ""
            yield f"class {camel(rng)}({rng.choice(('Base', 'Protocol', 'Exception', 'object'))}):"
            yield f'    """{rng.choice(VERBS).capitalize()} {noun} records for the {arg} service."""'
            for _ in range(rng.randint(1, 4)):
                yield f"    {rng.choice(NOUNS)}_{rng.choice(NOUNS)}: {rng.choice(TYPES)} = {rng.randint(0, 512)}"
            continue
        yield ""
        yield (f"    def {snake(rng)}(self, {arg}: {rng.choice(TYPES)}, *, {noun}_id: int = {rng.randint(0, 99)})"
               f" -> {rng.choice(TYPES)}:")
        yield f'        """{rng.choice(VERBS).capitalize()} the {noun} for ``{arg}``; see {snake(rng)}."""'
        yield f"        if {arg} is None:"
        yield f'            raise ValueError(f"{noun} {{{noun}_id}} needs a {arg}")'
        yield f"        {var} = self._{noun}_{rng.choice(NOUNS)}.get({arg}, [])"
        for _ in range(rng.randint(0, 3)):
            yield f"        for item in {var}:"
            yield f"            item.{rng.choice(NOUNS)} = {snake(rng)}(item, limit={rng.randint(1, 4096)})"
        yield f"        return {rng.choice((var, 'None', f'len({var})', f'{camel(rng)}({var})'))}"


def numbered(lines: Iterator[str], start: int = 1, sep: str = "\t") -> Iterator[str]:
    """``cat -n`` style (Claude Code's Read uses an arrow as the separator: ``sep="→"``)."""
    for n, line in enumerate(lines, start=start):
        yield f"{n:>6}{sep}{line}"


def log_lines(rng: Random, project: str) -> Iterator[str]:
    """Timestamped application log lines (hex ids and numbers: ~2.6 chars per token)."""
    t = rng.randint(0, 80_000)
    while True:
        t += rng.randint(0, 3)
        ms = rng.randint(0, 999)
        yield (f"2026-01-{15 + t // 86_400:02d} {t // 3600 % 24:02d}:{t // 60 % 60:02d}:{t % 60:02d},{ms:03d} "
               f"{rng.choice(LEVELS):<7} [{project}.{rng.choice(NOUNS)}] {rng.choice(VERBS)} {rng.choice(NOUNS)} "
               f"id={rng.getrandbits(48):012x} took={rng.randint(1, 900)}ms n={rng.randint(0, 4000)}")


RULE = 80
"""pytest's section rules are 80 columns wide."""


def rule(title: str = "", char: str = "=") -> str:
    """A pytest section rule such as ``==== FAILURES ====``."""
    if not title:
        return char * RULE
    side = max(RULE - len(title) - 2, 2)
    return f"{char * (side // 2)} {title} {char * (side - side // 2)}"


def pytest_failure(rng: Random, project: str, test_file: str, test: str) -> list[str]:
    """The ``FAILURES`` section of one failing test, down to (not including) its ``E`` error line.

    pytest prints the test's source with ``>`` at the failing line, then one block per frame into
    the code under test; the caller appends the ``E   ...`` line, the location and the summary.
    """
    lines = [rule("FAILURES"), rule(test, "_"), "", f"    def {test}():",
             f"        {rng.choice(NOUNS)} = {camel(rng)}(limit={rng.randint(1, 64)})",
             f">       assert {snake(rng)}({rng.choice(NOUNS)}) == {rng.choice(NOUNS)}", "",
             f"{test_file}:{rng.randint(10, 400)}: "]
    frames = rng.randint(2, 5)
    for k in range(frames):
        noun = rng.choice(NOUNS)
        lines += ["_ " * 39 + "_", "", f"    def {snake(rng)}(self, {noun}, timeout={rng.randint(1, 60)}):",
                  f"        {noun}_id = self._{rng.choice(NOUNS)}_{rng.choice(NOUNS)}.get({noun})",
                  f">       return self.{snake(rng)}({noun}_id, retries={rng.randint(0, 5)})"]
        if k < frames - 1:
            lines += ["", f"src/{project}/{rng.choice(NOUNS)}.py:{rng.randint(10, 900)}: in {snake(rng)}"]
    return lines


def config_lines(rng: Random) -> Iterator[str]:
    """A TOML settings file, one section at a time (what an agent reads to find a setting)."""
    values = {
        "timeout": lambda: str(rng.randint(1, 300)), "limit": lambda: str(rng.randint(10, 9000)),
        "enabled": lambda: rng.choice(("true", "false")), "level": lambda: f'"{rng.choice(LEVELS).lower()}"',
        "path": lambda: f'"/var/lib/{rng.choice(NOUNS)}/{rng.choice(NOUNS)}"',
        "url": lambda: f'"https://{rng.choice(NOUNS)}.example.com/{rng.choice(VERBS)}"',
    }
    while True:
        yield ""
        yield f"[{rng.choice(NOUNS)}.{rng.choice(NOUNS)}]"
        for _ in range(rng.randint(2, 7)):
            suffix = rng.choice(tuple(values))
            yield f"{rng.choice(NOUNS)}_{suffix} = {values[suffix]()}"


def pytest_lines(rng: Random, project: str, tests: list[str]) -> Iterator[str]:
    """pytest -v progress with captured logs and the odd failure block in between."""
    done = 0
    while True:
        done += 1
        test = rng.choice(tests)
        outcome = rng.choices(("PASSED", "FAILED", "SKIPPED"), (0.9, 0.05, 0.05))[0]
        yield f"{test}::test_{snake(rng)}[{rng.choice(NOUNS)}-{rng.randint(0, 64)}] {outcome} [{done % 100:3d}%]"
        if outcome == "FAILED" or rng.random() < 0.04:
            yield "---------------------------- Captured log call -----------------------------"
            logs = log_lines(rng, project)
            yield from (next(logs) for _ in range(rng.randint(2, 12)))


def pytest_head(project: str, n_tests: int) -> str:
    return ("============================= test session starts ==============================\n"
            "platform linux -- Python 3.11.7, pytest-8.2.0, pluggy-1.5.0 -- /usr/bin/python3\n"
            f"rootdir: /home/dev/{project}\nconfigfile: pyproject.toml\nplugins: xdist-3.5.0, cov-5.0.0\n"
            f"collected {n_tests} items\n")


def build_lines(rng: Random, project: str) -> Iterator[str]:
    while True:
        a, b, v = rng.choice(NOUNS), rng.choice(NOUNS), f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
        yield rng.choice((
            f"  Compiling {project}-{a} v{v}",
            f"[{rng.randint(1, 400)}/{rng.randint(400, 900)}] Building CXX object src/{a}/{snake(rng)}.cc.o",
            f"warning: unused variable `{a}_{b}` --> src/{b}.rs:{rng.randint(1, 600)}:{rng.randint(1, 80)}",
            f"Collecting {a}-{b}>={v}",
            f"  Downloading {a}_{b}-{v}-py3-none-any.whl ({rng.randint(10, 900)} kB)",
        ))


def listing_lines(rng: Random) -> Iterator[str]:
    while True:
        kind = rng.random() < 0.2
        suffix = "" if kind else rng.choice((".py", ".toml", ".md", ".json"))
        yield (f"{'d' if kind else '-'}rw-r--r--  1 dev dev {rng.randint(96, 90_000):>6} Jan {rng.randint(1, 28):2d} "
               f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} {snake(rng)}{suffix}")


def diff_lines(rng: Random, path: str) -> Iterator[str]:
    yield f"diff --git a/{path} b/{path}"
    yield f"index {rng.getrandbits(28):07x}..{rng.getrandbits(28):07x} 100644"
    yield f"--- a/{path}\n+++ b/{path}"
    code = code_lines(rng)
    while True:
        yield f"@@ -{rng.randint(1, 400)},{rng.randint(3, 12)} +{rng.randint(1, 400)},{rng.randint(3, 12)} @@"
        for _ in range(rng.randint(3, 10)):
            yield rng.choice(("+", "-", " ", " ")) + next(code)


def prose_lines(rng: Random) -> Iterator[str]:
    """Markdown-ish prose (web pages, subagent reports)."""
    while True:
        if rng.random() < 0.15:
            yield f"## {rng.choice(VERBS).capitalize()} the {rng.choice(NOUNS)} {rng.choice(NOUNS)}"
        words = [rng.choice(PROSE) if rng.random() < 0.8 else _code_word(rng) for _ in range(rng.randint(12, 40))]
        yield (" ".join(words).capitalize() + rng.choice((".", ".", ":", ";", " (see above).")))


def _code_word(rng: Random) -> str:
    """Identifiers, paths and numbers that real prose about code is sprinkled with."""
    a, b = rng.choice(NOUNS), rng.choice(NOUNS)
    return rng.choice((f"`{snake(rng)}()`", f"`{a}.{b}`", str(rng.randint(2, 500)), f"{a}/{snake(rng)}.py", f"{a},",
                       f"{a}-{b}"))


def system_prompt(rng: Random, project: str, tools: dict[str, dict[str, str]]) -> str:
    """An agent system prompt of ~2-4K tokens: identity, rules, tool schemas, environment."""
    rules = [
        "Be concise: answer in a few lines unless the user asks for detail.",
        "Read a file before you edit it, and keep edits minimal and focused on the task.",
        "Never invent file paths or APIs; search the repository first.",
        "Run the relevant tests after every change and report failures verbatim.",
        "Do not commit, push or tag unless the user explicitly asks.",
        "Prefer editing existing files to creating new ones; never create documentation unprompted.",
        "When a command fails, read the error before retrying; do not loop on the same command.",
        "Keep secrets out of logs, commits and messages; never print environment variables.",
        "Use the project's formatter and linter settings; do not reformat unrelated code.",
        "Explain non-obvious changes in one sentence each when you finish.",
        "If the request is ambiguous, ask one short question instead of guessing.",
        "Use absolute paths in tool calls; the working directory may change between commands.",
        "Batch independent read-only tool calls in one message to save round trips.",
        "Follow existing naming, typing and error-handling conventions of the surrounding code.",
    ]
    rng.shuffle(rules)
    parts = [
        f"You are a coding agent working in the {project} repository on behalf of a developer. "
        "You can read and edit files, run shell commands and search the code. Work step by step, "
        "verify what you change, and stop when the task is done.",
        "# Rules", *(f"- {r}" for r in rules),
        "# Tools", "Call tools with JSON arguments matching these schemas exactly.",
    ]
    for name, params in tools.items():
        props = ", ".join(f'"{k}": {{"type": "string", "description": "{v}"}}' for k, v in params.items())
        parts.append(f"## {name}\n{_TOOL_DOCS.get(name, '')}\n"
                     f'{{"type": "object", "properties": {{{props}}}, "required": {list(params)[:1]}}}')
    parts += ["# Workflow", *(f"{i}. {step}" for i, step in enumerate(_WORKFLOW, 1)),
              "# Git", *(f"- {g}" for g in _GIT), "# Output format", *(f"- {o}" for o in _OUTPUT)]
    parts += ["# Environment", f"Working directory: /home/dev/{project}", "Platform: linux (x86_64)",
              "Shell: bash 5.2", "Python: 3.11.7", "Is a git repository: yes", "Current branch: main",
              "# Project layout", *(f"- src/{project}/{rng.choice(NOUNS)}/ holds the {rng.choice(NOUNS)} "
                                     f"{rng.choice(NOUNS)} code" for _ in range(12)),
              "# Repository files (partial)", *sorted({f"src/{project}/{rng.choice(NOUNS)}/{snake(rng)}.py"
                                                       for _ in range(45)}),
              "# git status at session start", "Recent commits:",
              *(f"{rng.getrandbits(28):07x} {rng.choice(VERBS).capitalize()} {rng.choice(NOUNS)} {rng.choice(NOUNS)} "
                f"handling (#{rng.randint(100, 999)})" for _ in range(8)),
              "Status:", *(f" M src/{project}/{rng.choice(NOUNS)}/{snake(rng)}.py" for _ in range(4))]
    return "\n".join(parts)


_WORKFLOW = (
    "Restate the task to yourself and list the files you expect to touch.",
    "Search before reading: use grep and glob to find definitions and call sites.",
    "Read the relevant files completely before changing them; note the conventions you see.",
    "Plan the change in small steps and track them with todo_write when there are more than two.",
    "Make one focused edit at a time and re-read the edited region if the tool output is unclear.",
    "Run the narrowest test that covers the change first, then the wider suite.",
    "If a test fails, read the whole failure, form a hypothesis, and check it before editing again.",
    "When everything passes, summarise what changed, what you verified and what is left open.",
)
_GIT = (
    "Inspect `git status` and `git diff` before you describe your changes.",
    "Never rewrite published history: no force pushes, no rebases of shared branches.",
    "Commit messages: a short imperative subject line, a blank line, then the why.",
    "Do not add generated files, caches or local configuration to commits.",
    "Leave the working tree as you found it apart from the requested change.",
    "Branch names use the pattern <type>/<short-description>, e.g. fix/session-timeout.",
)
_OUTPUT = (
    "Use GitHub-flavoured Markdown; wrap file paths, commands and identifiers in backticks.",
    "Refer to code as path:line so the user can jump to it.",
    "Do not paste whole files back to the user; quote only the lines that matter.",
    "Report command failures with the exact error line, not a paraphrase.",
    "No emojis, no filler sentences, no apologies.",
    "End with the next step you recommend when the task is not finished.",
)


_TOOL_DOCS = {
    "read_file": "Read a text file and return it with line numbers (cat -n format). Reads up to 2000 lines "
                 "from the start unless offset and limit are given. Lines longer than 2000 characters are cut. "
                 "Prefer reading a whole file once over many small reads; re-reading an unchanged file wastes context.",
    "edit_file": "Replace an exact string in a file. old_text must match the file byte for byte, including "
                 "indentation, and must be unique unless replace_all is set. Read the file first. Returns a "
                 "snippet of the edited region with line numbers so you can check the result.",
    "write": "Create a file or overwrite it completely. Use only for new files or full rewrites; for small "
             "changes use edit_file. Parent folders are created as needed.",
    "bash": "Run a shell command in a persistent bash session and return stdout and stderr (cut to the last "
            "30000 characters). Use for tests, builds, git and package managers. Quote paths with spaces. "
            "Commands time out after 120 seconds unless a timeout is given; long jobs can run in the background.",
    "grep": "Search file contents with a regular expression (ripgrep syntax). Returns path:line:text hits, "
            "limited to 250 lines; narrow the pattern or path if the output is cut.",
    "glob": "List files matching a glob pattern such as src/**/*.py, sorted by modification time.",
    "web_fetch": "Fetch a URL and return its content converted to Markdown. Only for documentation pages.",
    "todo_write": "Record the task list: items with a status (pending, in_progress, completed). Keep one in progress.",
}
