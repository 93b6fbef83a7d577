"""Probes derived from a real trace, so sessions without planted needles get a retention score.

Mapped onto Factory's probe classes (evaluation.md §A2) and scored mechanically:

- ``fact`` — key terms of the first request (recall of the session's intent), and *early facts
  the session relies on later* (``derived:early:``): a distinctive token (an identifier, a number, a
  path, a version) first stated by the user or a tool result in the first third of the session,
  mentioned in few messages, and used again by the agent (its text or a tool call's arguments)
  at least ``MIN_GAP_CALLS`` calls later. Nothing repeats it in between, so a strategy that drops
  the early message before the reuse loses it, which request terms (repeated all session long)
  rarely show;
- ``artifact`` — every file modified by an edit/write tool call (one needle per path; the set
  is scored with ``set_f1``, as §A2(a) asks);
- ``error`` — failing commands and their error line, with the command as the reference: the last
  one (``derived:error``) and up to ``MAX_ERRORS − 1`` earlier distinct ones (``derived:error:k``),
  since the early failures are the ones a compaction drops;
- ``constraint`` — the user's imperative sentences with don't / do not / always / never / must / only.

These are heuristics over text, not judgements: a derived "constraint" may be a plain statement
that happens to contain "must". Their ids start with ``derived:`` so a report can tell them apart.
They are derived once per trace (``bench.scoring.probes`` caches them by the trace's content) and scored
like planted needles at every compaction and at the end of the replay.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from strategies._files import file_path
from traces.model import Message, Needle, ToolUse, Trace

if TYPE_CHECKING:
    import pandas as pd

VERSION = 2
"""Bumped whenever the derived needles change (part of every task key: stored probes are never stale).
2: early facts relied on later, every failing command (not only the last), ``only`` constraints."""
MAX_TERMS = 5
MAX_CONSTRAINTS = 10
MAX_EARLY = 8
MAX_ERRORS = 5
EARLY_SHARE = 1 / 3
"""An early fact is stated in the first third of the session's messages."""
MIN_GAP_CALLS = 3
"""... and relied on at least this many agent calls later."""
MAX_MENTIONS = 4
"""... and is in at most this many messages: a token on every page is no fact the session could lose."""
EDIT_WORDS = ("edit", "write", "create", "replace", "patch", "insert", "multiedit", "str_replace")
"""A tool whose lower-cased name starts with (or, for ``str_replace``, contains) one of these modifies a file."""
SHELL_TOOLS = frozenset({"bash", "shell", "exec_command", "execute_command", "run_command", "run_terminal_cmd",
                         "terminal", "local_shell"})
ERROR_LINE = re.compile(r"(error|exception|traceback|failed|failure|fatal|not found|no such file|denied|panic)",
                        re.IGNORECASE)
STRONG_ERROR = re.compile(r"(error|exception|fatal|panic)", re.IGNORECASE)
NO_FAILURE = re.compile(r"\b0 (failures|failed|errors)\b|\bno (errors|failures)\b", re.IGNORECASE)
"""A tally line that reports success ("10 tests, 0 failures") is not an error line."""
"""Preferred over a bare "failed" tally line: the line that names what went wrong."""
CONSTRAINT = re.compile(r"\b(don'?t|do not|never|always|must|only)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[A-Za-z0-9_./\-]*[A-Za-z0-9_]")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)
_TAG = re.compile(r"<([a-z\-]+)>.*?</\1>", re.DOTALL)
_FACT_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:/\-]*[A-Za-z0-9_]")
_SHAPED = re.compile(r"\d|_|[a-z][A-Z]|[A-Za-z][./:\-][A-Za-z0-9]")
"""An identifier, number, path or version: a digit, an underscore, camelCase or an inner separator."""
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

    ``context_text`` must be normalized (``bench.scoring.probes.context_text``). Found paths are a subset
    of the expected ones, so precision is 1 and F1 = 2R/(1+R); a judge that lists files itself
    would plug its own ``found`` set into ``set_f1``.
    """
    from bench.scoring.matching import present

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


def _failures(messages: Sequence[Message]) -> list[tuple[int, str, str | None, str]]:
    """(message index, error line, command, output) of every failing shell command, in order."""
    uses = {u.id: u for m in messages for u in m.tool_uses}
    out = []
    for i, m in enumerate(messages):
        for r in m.tool_results:
            use = uses.get(r.tool_use_id)
            if use is None or use.name.lower() not in SHELL_TOOLS:
                continue
            lines = [ln.strip() for ln in r.content.splitlines() if ERROR_LINE.search(ln) and not NO_FAILURE.search(ln)]
            if not (r.is_error or lines):
                continue
            command = use.input.get("command") or use.input.get("cmd")
            command = " ".join(command) if isinstance(command, list) else command
            strong = [ln for ln in lines if STRONG_ERROR.search(ln)]
            tail = r.content.strip().splitlines()[-1:] if r.content.strip() else [""]
            line = (strong or lines or tail)[-1].strip()[:200]
            if line:
                out.append((i, line, command if isinstance(command, str) and command else None, r.content))
    return out


def _error_needle(messages: Sequence[Message]) -> list[Needle]:
    """The last failing command's error (``derived:error``) and up to MAX_ERRORS − 1 earlier, distinct ones,
    the earliest first (they are the ones a compaction drops)."""
    failures = _failures(messages)
    if not failures:
        return []
    i, line, command, output = failures[-1]
    out = [Needle("derived:error", "error", output, "What was the last error?", line, i, reference=command)]
    seen = {normalize_line(line)}
    for i, line, command, output in failures[:-1]:
        if len(out) >= MAX_ERRORS:
            break
        if normalize_line(line) in seen:
            continue
        seen.add(normalize_line(line))
        out.append(Needle(f"derived:error:{len(out)}", "error", output,
                          f"Which error did `{(command or 'a command')[:80]}` give?", line, i, reference=command))
    return out


def normalize_line(text: str) -> str:
    return " ".join(text.split()).casefold()


def _fact_tokens(text: str) -> set[str]:
    return {w for w in _FACT_TOKEN.findall(text) if len(w) >= 4 and _SHAPED.search(w)
            and (not w.isdigit() or len(w) >= 4) and w.lower() not in STOPWORDS}


def _early_fact_needles(messages: Sequence[Message]) -> list[Needle]:
    """Distinctive tokens stated early by the user or a tool, relied on by the agent much later (module doc)."""
    from bench.tokens.counter import render

    n = len(messages)
    if n < 4:
        return []
    answers = [i for i, m in enumerate(messages) if m.role == "assistant"]
    call_of = {i: k for k, i in enumerate(answers)}
    early_end = max(1, int(n * EARLY_SHARE))
    where: dict[str, list[int]] = {}
    system: set[str] = set()
    for i, m in enumerate(messages):
        text = render(m)
        tokens = _fact_tokens(_plain(text) if _human(m) else text)
        if m.role == "system":
            system |= tokens
            continue
        for w in tokens:
            where.setdefault(w, []).append(i)
    picked: list[tuple[int, int, str, int]] = []
    for w, idx in where.items():
        first = idx[0]
        m = messages[first]
        if first >= early_end or w in system or len(idx) > MAX_MENTIONS or m.role == "assistant":
            continue
        if m.meta.get("summary") or m.meta.get("injected") or m.meta.get("synthetic"):
            continue
        first_call = sum(1 for a in answers if a < first)  # the call whose prompt first carries it
        later = [j for j in idx[1:] if j in call_of and call_of[j] - first_call >= MIN_GAP_CALLS]
        if later:
            picked.append((-(later[0] - first), first, w, later[0]))
    picked.sort()
    out: list[Needle] = []
    used: set[int] = set()
    texts: list[str] | None = None
    for _, first, w, reused in picked:  # the longest gaps first, one fact per early message
        if first in used or any(w in o.answer or o.answer in w for o in out):
            continue
        if texts is None:  # scoring matches substrings: count the messages that hold it in any word
            from bench.scoring.matching import normalize

            texts = [normalize(render(m)) for m in messages]
        key = normalize(w)
        if sum(1 for t in texts if key in t) > MAX_MENTIONS:
            continue
        used.add(first)
        line = next((ln.strip() for ln in render(messages[first]).splitlines() if w in ln), w)[:300]
        out.append(Needle(f"derived:early:{len(out) + 1}", "fact", line,
                          f"What did the session establish early that it used again at call {call_of[reused]}?",
                          w, first))
        if len(out) >= MAX_EARLY:
            break
    return sorted(out, key=lambda nd: nd.message_index)


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
    return tuple([*_request_needles(msgs), *_early_fact_needles(msgs), *_artifact_needles(msgs),
                  *_error_needle(msgs), *_constraint_needles(msgs)])


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
