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
- ``constraint`` — the user's imperative sentences with don't / do not / always / never / must / only;
- ``instruction`` and ``skill`` — the rules of the instruction files and skills the session itself shows
  loaded (issue 27), so a real run's ``instructions`` / ``skills`` columns say which strategies keep
  the user's own rules: Claude Code's "Contents of <path>.md" blocks (the first user turn's reminder),
  Codex's "# AGENTS.md instructions for <dir>" message (and the legacy ``<user_instructions>``),
  OpenCode's "Instructions from: <path>" blocks (system prompt or a read output, where recorded);
  a skill body as Claude Code loads it ("Base directory for this skill: <dir>" user message), as
  Codex does (a ``<skill>`` user message) and as OpenCode's skill tool returns it
  (``<skill_content name=...>``). A rule is a line of that text with never / always / must / do not /
  don't / only / should / avoid / prefer; its answer is the line's most distinctive part (a quoted
  span, else an identifier, path or number, else the whole line, kept verbatim) and is used only if nothing but
  copies of the rule holds it, so a strategy cannot keep it by keeping some other message.
  Sessions of any other shape derive no rules (the columns stay empty).

These are heuristics over text, not judgements: a derived "constraint" may be a plain statement
that happens to contain "must". Their ids start with ``derived:`` so a report can tell them apart.
They are derived once per trace (``bench.scoring.probes`` caches them by the trace's content) and scored
like planted needles at every compaction and at the end of the replay.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from strategies._files import file_path
from traces.model import Message, Needle, ToolUse, Trace

if TYPE_CHECKING:
    import pandas as pd

VERSION = 3
"""Bumped whenever the derived needles change (part of every task key: stored probes are never stale).
2: early facts relied on later, every failing command (not only the last), ``only`` constraints.
3: instruction and skill rules; an instruction file or skill body the agent wrote into the user's
turn is no longer taken for the user's request or constraints."""
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
AGENT_WRITTEN = ("# agents.md instructions", "<environment_context>", "<user_instructions>", "<skill",
                 "<user_shell_command>", "<turn_aborted>", "<subagent_notification>", "<additional_context>",
                 "base directory for this skill:")
"""Starts of user-role messages an agent writes itself: Codex's contextual items (openai/codex @e06dd0e5
codex-rs/core/src/event_mapping.rs ``is_contextual_user_message_content``) and Claude Code's skill body."""
MAX_RULES = 8
"""Instruction rules per session (a long AGENTS.md has dozens of "must" lines: the first ones are kept)."""
MAX_SKILL_RULES = 3
"""Rules per skill body."""
MAX_SKILLS = 6
RULE_WORD = re.compile(r"\b(never|always|must|do not|don'?t|only|should|avoid|prefer)\b", re.IGNORECASE)
_CLAUDE_MD = re.compile(r"^Contents of (\S+\.md)\b[^\n]*:\n(.*?)(?=^Contents of \S+\.md\b|</system-reminder>|\Z)",
                        re.S | re.M)
_AGENTS_MD = re.compile(r"^\s*# AGENTS\.md instructions for ([^\n]+)\n+<INSTRUCTIONS>\n?(.*?)</INSTRUCTIONS>",
                        re.S)
_USER_INSTRUCTIONS = re.compile(r"^\s*<user_instructions>(.*?)</user_instructions>", re.S)
_OPENCODE = re.compile(r"^Instructions from: (\S+)\n(.*?)(?=^Instructions from: \S+$|\Z)", re.S | re.M)
_CLAUDE_SKILL = re.compile(r"^\s*Base directory for this skill: ([^\n]+)\n(.*)", re.S)
_CODEX_SKILL = re.compile(r"^\s*<skill>\s*(?:<name>([^<]*)</name>)?\s*(?:<path>([^<]*)</path>)?(.*?)</skill>",
                          re.S)
_OPENCODE_SKILL = re.compile(r"^\s*<skill_content name=\"([^\"]*)\">(.*?)</skill_content>", re.S)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_QUOTED = re.compile(r"`([^`\n]{3,80})`")
WRAPPER_LINES = ("IMPORTANT: this context may or may not be relevant",)
"""The agent's own wrapper text around an instruction file (Claude Code's reminder ends with it)."""
_STRONG = re.compile(r"[\d_/.]|[a-z][A-Z]")
"""A rule's token must be an identifier, path or number: a hyphenated word ("well-defined") is English."""
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
    """A message with the user's own words: not a summary, nothing an agent injected (flagged, or a
    Codex contextual item, or a skill body)."""
    return m.is_human_turn and not (m.meta.get("summary") or m.meta.get("injected") or m.meta.get("synthetic")
                                    or m.meta.get("role") == "developer" or _agent_written(m.text))


def _agent_written(text: str) -> bool:
    head = text.lstrip()[:40].lower()
    return head.startswith(AGENT_WRITTEN)


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


def _texts(m: Message) -> list[str]:
    """The texts a rule source can be in: a message's text blocks (system, user) and tool outputs."""
    from traces.model import Text, ToolResult

    out = [b.text for b in m.blocks if isinstance(b, Text) and b.text]
    out += [b.content for b in m.blocks if isinstance(b, ToolResult) and b.content]
    return out


def _all_sources(messages: Sequence[Message]) -> Iterator[tuple[str, str, str, int]]:
    """(kind, name, body, message index) of every copy of every rule source (module doc's shapes)."""
    for i, m in enumerate(messages):
        if m.role == "assistant" or m.meta.get("summary"):
            continue
        for text in _texts(m):
            if "Contents of " in text:
                for match in _CLAUDE_MD.finditer(text):
                    yield "instruction", match.group(1), match.group(2), i
            if (match := _AGENTS_MD.match(text)) is not None:
                yield "instruction", f"{match.group(1).strip()}/AGENTS.md", match.group(2), i
            elif (match := _USER_INSTRUCTIONS.match(text)) is not None:
                yield "instruction", "user_instructions", match.group(1), i
            if "Instructions from: " in text:
                for match in _OPENCODE.finditer(text):
                    yield "instruction", match.group(1), match.group(2), i
            if (match := _CLAUDE_SKILL.match(text)) is not None:
                yield "skill", match.group(1), match.group(2), i
            elif (match := _CODEX_SKILL.match(text)) is not None:
                yield "skill", match.group(1) or match.group(2) or f"skill@{i}", match.group(3), i
            elif (match := _OPENCODE_SKILL.match(text)) is not None:
                yield "skill", match.group(1), match.group(2), i


def rule_sources(messages: Sequence[Message]) -> list[tuple[str, str, str, int]]:
    """(kind, name, body, message index) of every instruction file and skill body the session shows
    loaded, the first copy of each (by kind and name); see the module doc for the shapes."""
    out: list[tuple[str, str, str, int]] = []
    seen: set[tuple[str, str]] = set()
    for kind, name, body, i in _all_sources(messages):
        if body.strip() and (kind, name.strip()) not in seen:
            seen.add((kind, name.strip()))
            out.append((kind, name.strip(), body, i))
    return out


def rule_lines(body: str) -> list[str]:
    """The lines of an instruction file or skill that state a rule (outside code blocks, not headings)."""
    out: list[str] = []
    fenced = False
    for raw in body.splitlines():
        if raw.lstrip().startswith("```"):
            fenced = not fenced
            continue
        line = _BULLET.sub("", raw).strip()
        if fenced or not line or line.startswith(("#", "<", "|")) or line.startswith(WRAPPER_LINES):
            continue
        if RULE_WORD.search(line) and 4 <= len(line.split()) <= 40:
            out.append(line[:300])
    return list(dict.fromkeys(out))


def _rule_answers(line: str) -> list[str]:
    """Candidate answers of a rule line, most distinctive first: quoted spans, shaped tokens, the line."""
    quoted = [q.strip() for q in _QUOTED.findall(line) if len(q.strip()) >= 3]
    shaped = sorted((w for w in _fact_tokens(line.replace("`", " ")) if _STRONG.search(w)), key=len, reverse=True)
    return list(dict.fromkeys([*quoted, *shaped, line]))


def _rule_needles(messages: Sequence[Message]) -> list[Needle]:
    """Instruction and skill rules (module doc), each answer held by nothing but copies of its rule."""
    from bench.scoring.matching import normalize
    from bench.tokens.counter import render

    sources = rule_sources(messages)
    if not sources:
        return []
    copies: dict[tuple[str, str], set[int]] = {}
    for kind, name, _, i in _all_sources(messages):
        copies.setdefault((kind, name.strip()), set()).add(i)
    texts = [normalize(render(m)) for m in messages]
    out: list[Needle] = []
    counts = {"instruction": 0, "skill": 0}
    skills = 0
    for kind, name, body, i in sources:
        if kind == "skill":
            if skills >= MAX_SKILLS:
                continue
            skills += 1
        taken = 0
        for line in rule_lines(body):
            if counts[kind] >= MAX_RULES if kind == "instruction" else taken >= MAX_SKILL_RULES:
                break
            own = copies[(kind, name)]  # the answer must be in these messages and in no other
            for answer in _rule_answers(line):
                key = normalize(answer)
                if len(key) < 3 or any(key in normalize(o.answer) or normalize(o.answer) in key
                                       for o in out if o.kind == kind):
                    continue
                holders = {j for j, t in enumerate(texts) if key in t}
                if i in holders and holders <= own:
                    counts[kind] += 1
                    taken += 1
                    label = name.rstrip("/").rsplit("/", 1)[-1]  # CLAUDE.md, AGENTS.md, the skill's folder
                    question = (f"Which rule does {label} set?" if kind == "instruction"
                                else f"Which rule does the {label} skill set?")
                    out.append(Needle(f"derived:{kind}:{counts[kind]}", kind, line, question, answer, i,
                                      reference=name))
                    break
    return out


def derive_needles(trace: Trace) -> tuple[Needle, ...]:
    """Needle-like probes derived from the trace itself (no planted facts needed)."""
    msgs = trace.messages
    return tuple([*_request_needles(msgs), *_early_fact_needles(msgs), *_artifact_needles(msgs),
                  *_error_needle(msgs), *_constraint_needles(msgs), *_rule_needles(msgs)])


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
