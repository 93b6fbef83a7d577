"""Probes derived from a real trace, so sessions without planted needles get a retention score.

Mapped onto Factory's probe classes (evaluation.md §A2) and scored mechanically:

- ``fact`` — key terms of the first request (recall of the session's intent);
- ``artifact`` — every file modified by an edit/write tool call (one needle per path; the set
  is scored with ``set_f1``, as §A2(a) asks);
- ``error`` — the last failing command's error line, with the command as its reference;
- ``constraint`` — the user's imperative sentences with don't / do not / always / never / must.

These are heuristics over text, not judgements: a derived "constraint" may be a plain statement
that happens to contain "must". Their ids start with ``derived:`` so a report can tell them apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from strategies._tools import file_path
from traces.model import Message, Needle, ToolUse, Trace

if TYPE_CHECKING:
    import pandas as pd

MAX_TERMS = 5
MAX_CONSTRAINTS = 10
EDIT_WORDS = ("edit", "write", "create", "replace", "patch", "insert", "multiedit", "str_replace")
"""A tool whose lower-cased name starts with (or, for ``str_replace``, contains) one of these modifies a file."""
SHELL_TOOLS = frozenset({"bash", "shell", "exec_command", "execute_command", "run_command", "run_terminal_cmd",
                         "terminal", "local_shell"})
ERROR_LINE = re.compile(r"(error|exception|traceback|failed|failure|fatal|not found|no such file|denied|panic)",
                        re.IGNORECASE)
STRONG_ERROR = re.compile(r"(error|exception|fatal|panic)", re.IGNORECASE)
"""Preferred over a bare "failed" tally line: the line that names what went wrong."""
CONSTRAINT = re.compile(r"\b(don'?t|do not|never|always|must)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[A-Za-z0-9_./\-]*[A-Za-z0-9_]")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)
_TAG = re.compile(r"<([a-z\-]+)>.*?</\1>", re.DOTALL)
STOPWORDS = frozenset("""about above after again against because before being below between could doing during
each further having other should their there these those through under until where which while would please
could there thing things something really just make sure want need like using update change fix the and for
with that this from have will your what when then them into also only some more most very been were""".split())


def is_edit(use: ToolUse) -> bool:
    name = use.name.lower()
    return name.startswith(EDIT_WORDS) or "str_replace" in name or use.input.get("command") in (
        "create", "str_replace", "insert", "write")


def modified_paths(use: ToolUse) -> list[str]:
    """Paths an edit/write call modifies (``apply_patch`` bodies name theirs in headers)."""
    patch = use.input.get("input") or use.input.get("patch")
    if use.name.lower() == "apply_patch" and isinstance(patch, str):
        return [p.strip() for p in _PATCH_FILE.findall(patch)]
    if not is_edit(use):
        return []
    path = file_path(use)
    return [path] if path else []


def set_f1(expected: Iterable[str], found: Iterable[str]) -> float:
    """Set F1 of ``found`` against ``expected``; 1.0 when both are empty."""
    e, f = set(expected), set(found)
    if not e and not f:
        return 1.0
    hits = len(e & f)
    if not hits:
        return 0.0
    precision, recall = hits / len(f), hits / len(e)
    return 2 * precision * recall / (precision + recall)


def files_modified_f1(paths: Iterable[str], context_text: str) -> float:
    """Set F1 of the modified files against those still named in the context.

    ``context_text`` must be normalized (``bench.probes.context_text``). Found paths are a subset
    of the expected ones, so precision is 1 and F1 = 2R/(1+R); a judge that lists files itself
    would plug its own ``found`` set into ``set_f1``.
    """
    from bench.probes import present

    expected = set(paths)
    return set_f1(expected, {p for p in expected if present(p, context_text, is_path=True)})


def _human(m: Message) -> bool:
    return m.is_human_turn and not (m.meta.get("summary") or m.meta.get("injected") or m.meta.get("synthetic"))


def _plain(text: str) -> str:
    """User text without tagged blocks (system reminders, command wrappers) an agent injects."""
    return _TAG.sub(" ", text)


def key_terms(text: str, limit: int = MAX_TERMS) -> list[str]:
    """Distinctive words of a request: identifiers and paths first, then the longest words."""
    words = list(dict.fromkeys(w.strip(".-/") for w in _WORD.findall(text)))
    words = [w for w in words if len(w) >= 4 and w.lower() not in STOPWORDS]
    marked = [w for w in words if re.search(r"[./_\d]|[a-z][A-Z]", w)]
    rest = sorted((w for w in words if w not in marked), key=len, reverse=True)
    return (marked + rest)[:limit]


def _request_needles(messages: Sequence[Message]) -> list[Needle]:
    first = next((i for i, m in enumerate(messages) if _human(m) and _plain(m.text).strip()), None)
    if first is None:
        return []
    text = _plain(messages[first].text)
    return [Needle(f"derived:request:{k}", "fact", text, "What did the user first ask for?", term, first)
            for k, term in enumerate(key_terms(text), 1)]


def _artifact_needles(messages: Sequence[Message]) -> list[Needle]:
    first_edit: dict[str, int] = {}
    for i, m in enumerate(messages):
        for use in m.tool_uses:
            for path in modified_paths(use):
                first_edit.setdefault(path, i)
    return [Needle(f"derived:file:{p}", "artifact", f"modified {p}", "Which files were modified?", p, i)
            for p, i in first_edit.items()]


def _error_needle(messages: Sequence[Message]) -> list[Needle]:
    uses = {u.id: u for m in messages for u in m.tool_uses}
    for i in range(len(messages) - 1, -1, -1):
        for r in reversed(messages[i].tool_results):
            use = uses.get(r.tool_use_id)
            if use is None or use.name.lower() not in SHELL_TOOLS:
                continue
            lines = [ln.strip() for ln in r.content.splitlines() if ERROR_LINE.search(ln)]
            if not (r.is_error or lines):
                continue
            command = use.input.get("command") or use.input.get("cmd")
            command = " ".join(command) if isinstance(command, list) else command
            strong = [ln for ln in lines if STRONG_ERROR.search(ln)]
            tail = r.content.strip().splitlines()[-1:] if r.content.strip() else [""]
            line = (strong or lines or tail)[-1].strip()[:200]
            if not line:
                continue
            return [Needle("derived:error", "error", r.content, "What was the last error?", line, i,
                           reference=command if isinstance(command, str) and command else None)]
    return []


def _constraint_needles(messages: Sequence[Message]) -> list[Needle]:
    out: list[Needle] = []
    seen: set[str] = set()
    for i, m in enumerate(messages):
        if not _human(m):
            continue
        for sentence in _SENTENCE.split(_plain(m.text)):
            s = sentence.strip()
            if CONSTRAINT.search(s) and 3 <= len(s.split()) <= 40 and s.lower() not in seen:
                seen.add(s.lower())
                out.append(Needle(f"derived:constraint:{len(out) + 1}", "constraint", s,
                                  "Which rules did the user set?", s, i))
    return out[:MAX_CONSTRAINTS]


def derive_needles(trace: Trace) -> tuple[Needle, ...]:
    """Needle-like probes derived from the trace itself (no planted facts needed)."""
    msgs = trace.messages
    return tuple([*_request_needles(msgs), *_artifact_needles(msgs), *_error_needle(msgs),
                  *_constraint_needles(msgs)])


def artifact_f1(probes: pd.DataFrame, *, moment: str | None = "end") -> pd.DataFrame:
    """Files-modified set F1 per (strategy, trace, probe point) from artifact probe rows.

    Each artifact row is one modified file found or not, so recall is the share found and, with
    precision 1 by construction, F1 = 2R/(1+R) (the same number ``files_modified_f1`` gives).
    """
    import pandas as pd

    p = probes[probes.needle_kind == "artifact"]
    if moment is not None:
        p = p[p.moment == moment]
    keys = ["strategy", "trace", "moment", "call"]
    if p.empty:
        return pd.DataFrame(columns=[*keys, "files", "recall", "f1"])
    g = p.groupby(keys).retained
    out = pd.DataFrame({"files": g.size(), "recall": g.mean()})
    out["f1"] = 2 * out.recall / (1 + out.recall)
    return out.reset_index()
