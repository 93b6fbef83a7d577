"""Importers of real agents' session logs, chosen by content (never by file name).

Each importer is a module with ``NAME``, ``sniff_file(path, head) -> str | None`` (None when the
file is in its format, otherwise the reason it is not) and ``read_file(path, *, lenient) ->
ReadResult``. ``load`` takes files, folders, globs, ``hf:owner/name`` dataset ids and ``entire:PATH``
(sessions the Entire CLI keeps in git, traces.entire).

Adding a format: 1. write ``traces/formats/<agent>.py`` with the three names above; 2. add it to
``READERS`` (order matters: the first that claims a file reads it); 3. test it on a real file
from ../shared/traces (skipping with a reason when absent) and with a fuzz test of bad input.
"""

from __future__ import annotations

import glob
import importlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType

from traces.model import Trace, TraceError

__all__ = ["READERS", "Passed", "ReadResult", "UnknownFormatError", "detect", "load", "read_path",
           "read_source"]

READERS: dict[str, str] = {
    "native": "traces.native",
    "claude-code": "traces.formats.claude_code",
    "copilot-cli": "traces.formats.copilot_cli",
    "gemini-cli": "traces.formats.gemini_cli",
    "codex": "traces.formats.codex",
    "cline": "traces.formats.cline",
    "opencode": "traces.formats.opencode",
    "swe-agent": "traces.formats.swe_agent",
    "mini-swe-agent": "traces.formats.mini_swe_agent",
    "openhands": "traces.formats.openhands",
    "aider": "traces.formats.aider",
    "goose": "traces.formats.goose",
    "amp": "traces.formats.amp",
    "chat": "traces.formats.chat",
}
"""Format name → importer module, in sniffing order."""

HEAD_BYTES = 64 * 1024


@dataclass
class ReadResult:
    traces: list[Trace]
    skipped: int = 0
    """Bad records skipped in lenient mode."""
    notes: list[str] = field(default_factory=list)
    """What the importer noticed (orphan results flagged, redactions filled, ...)."""
    details: list[str] = field(default_factory=list)
    """Every file a folder import did not read as a trace, one line each with the reason (for the run's
    import_notes.txt, too many for a console)."""


class UnknownFormatError(TraceError):
    """No importer claimed the file; the message lists each format tried and why it declined."""


def _module(name: str) -> ModuleType:
    return importlib.import_module(READERS[name])


def detect(path: Path) -> str:
    """The name of the format of ``path``, or UnknownFormatError with every importer's reason."""
    try:
        head = path.read_bytes()[:HEAD_BYTES].decode("utf-8", errors="replace")
    except OSError as e:
        raise TraceError(f"cannot read: {e.strerror}", path=str(path)) from None
    if not head.strip():
        raise UnknownFormatError("empty file: no trace to read", path=str(path))
    reasons = []
    for name in READERS:
        reason = _module(name).sniff_file(path, head)
        if reason is None:
            return name
        reasons.append(f"  {name}: {reason}")
    raise UnknownFormatError("unknown trace format; tried:\n" + "\n".join(reasons), path=str(path))


def read_path(path: Path, *, lenient: bool = False, fmt: str | None = None) -> ReadResult:
    """Read one file with its importer; text, numbers and ids are validated on the way in
    (traces.formats._common: ``get_int`` per field, ``check_trace`` per trace built).

    With ``lenient``, bad text and out-of-range values are repaired and counted in the notes rather
    than refused. A strict error that --lenient would get past says so (the file is read again,
    leniently, only to know that).
    """
    name = fmt or detect(path)
    try:
        return _read_checked(path, name, lenient)
    except TraceError as e:
        if lenient or type(e) is not TraceError or "--lenient" in e.reason or not _lenient_reads(path, name):
            raise
        raise TraceError(e.reason + "; --lenient would skip or repair it and count it",
                         path=e.path, line=e.line, at=e.at) from None


def _read_checked(path: Path, name: str, lenient: bool) -> ReadResult:
    from traces.formats._common import check_trace, checking

    with checking(lenient) as check:
        result: ReadResult = _module(name).read_file(path, lenient=lenient)
        result.traces = [check_trace(trace, path=path) for trace in result.traces]
    note = check.note(path)
    if note:
        result.notes.append(note)
    return result


def _lenient_reads(path: Path, name: str) -> bool:
    """Whether the file reads with --lenient (for the hint on a strict error; any failure means no)."""
    try:
        _read_checked(path, name, True)
    except Exception:  # noqa: BLE001 - only a yes or no is wanted here
        return False
    return True


def expand(sources: Iterable[str]) -> list[Path]:
    """Files from paths, folders (recursively, skipping hidden files) and globs, in sorted order."""
    out: list[Path] = []
    for source in sources:
        p = Path(source)
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith(".")))
        elif p.exists():
            out.append(p)
        else:
            matches = sorted(Path(m) for m in glob.glob(source, recursive=True))
            if not matches:
                raise TraceError("no such file, folder or glob match", path=source)
            out.extend(m for m in matches if m.is_file())
    return out


@dataclass(frozen=True)
class Passed:
    """A file of a folder (or ``entire:``) source not read as a trace, and why."""

    path: str
    """Relative to the source folder (posix), or the blob's path on the branch."""
    reason: str
    kind: str = "unknown"
    """``unknown`` (no importer claims it), ``unreadable`` (a session file that cannot be read at all),
    ``sidecar`` (one of the Entire CLI's own files, read with its transcript: expected, not passed over)
    or ``copy`` (an earlier checkpoint of a session whose latest one holds all of it, traces.entire)."""


def skip_reason(path: Path) -> str:
    """Why no importer claims ``path``, in a few words (detect's full list is one line per importer)."""
    try:
        head = path.read_bytes()[:HEAD_BYTES]
    except OSError as e:
        return f"cannot read: {e.strerror}"
    if not head.strip():
        return "empty file"
    if b"\0" in head:
        return f"binary file: no known format (tried {len(READERS)} importers)"
    return f"no known format (tried {len(READERS)} importers)"


def read_source(source: str, *, lenient: bool = False) -> Iterator[tuple[str, ReadResult] | Passed]:
    """Every trace file of one source (a file, folder, glob or ``entire:PATH``) read by its importer, one
    file at a time: ``(format, result)`` per file, ``Passed`` per file not read as a trace.

    A file named directly (or by a glob) must be a trace; inside a folder, a file no importer claims (a
    README, a manifest) is passed over. Files the Entire CLI writes beside a session file
    (traces.entire) are read with it: its metadata gives the agent, the model and the window.
    """
    from traces import entire

    if source.startswith(entire.PREFIX):
        root, through_git = entire.sources_of(source)
        if through_git:
            for found in entire.git_sessions(root, source):
                yield Passed(*found, kind="copy") if isinstance(found, tuple) else _read_entire(found, lenient=lenient)
            return
        files = expand([str(root)])
        plan, sidecars = entire.folder_sessions(root, files)
        if not any(found is not None for _, found in plan) and not sidecars:
            kind = "a git repository without branch" if entire.repo_root(root) else "not a checkout of"
            raise TraceError(f"{kind} {entire.BRANCH}: no <2hex>/<10hex>/<n>/full.jsonl in it", path=source)
        yield from _read_folder(root, plan, sidecars, lenient=lenient, only_entire=True)
        return
    if not Path(source).is_dir():
        for path in expand([source]):
            found = entire.session_of(path)
            if found is not None:  # a session file with Entire's metadata (or chunks) beside it
                item = _read_entire(found, lenient=lenient)
                if isinstance(item, Passed):  # named directly: it must be a trace
                    detect(path)
                yield item
                continue
            fmt = detect(path)
            yield fmt, read_path(path, lenient=lenient, fmt=fmt)
        return
    root = Path(source)
    plan, sidecars = entire.folder_sessions(root, expand([source]))
    yield from _read_folder(root, plan, sidecars, lenient=lenient, only_entire=False)


def _read_folder(root: Path, plan: list, sidecars: dict[Path, str], *, lenient: bool,
                 only_entire: bool) -> Iterator[tuple[str, ReadResult] | Passed]:
    for path, reason in sorted(sidecars.items()):
        yield Passed(path.relative_to(root).as_posix(), reason,
                     kind="copy" if reason.startswith("an earlier checkpoint") else "sidecar")
    for path, found in plan:
        rel = path.relative_to(root).as_posix()
        if found is None:
            if only_entire:
                yield Passed(rel, "outside the Entire session folders (<2hex>/<10hex>/<n>/)")
                continue
            try:
                fmt = detect(path)
            except UnknownFormatError:
                yield Passed(rel, skip_reason(path))
                continue
            yield fmt, read_path(path, lenient=lenient, fmt=fmt)
            continue
        yield _read_entire(found, lenient=lenient, rel=rel)


def _read_entire(found, *, lenient: bool, rel: str | None = None) -> tuple[str, ReadResult] | Passed:
    """One Entire session file by the importer its content selects, with the session's metadata."""
    from traces import entire

    session = found.session
    name = rel or session.chunks[0]
    agent = (session.metadata or {}).get("agent")
    if found.problem:
        return Passed(name, f"Entire session of {agent or 'an unknown agent'}: {found.problem}", "unreadable")
    if found.data is None:
        path = found.path
        try:
            fmt = detect(path)
        except UnknownFormatError:
            return Passed(name, f"Entire session of {agent or 'an unknown agent'}: {skip_reason(path)}")
        result = read_path(path, lenient=lenient, fmt=fmt)
        source = None
    else:
        if not found.data.strip():
            return Passed(name, f"Entire session of {agent or 'an unknown agent'}: empty transcript")
        tmp = entire.with_bytes(found.data, Path(session.chunks[0]).name)
        path = Path(tmp.name) / Path(session.chunks[0]).name
        try:
            try:
                fmt = detect(path)
            except UnknownFormatError:
                return Passed(name, f"Entire session of {agent or 'an unknown agent'}: "
                                    f"{skip_reason(path)}")
            result = read_path(path, lenient=lenient, fmt=fmt)
        except TraceError as e:
            raise type(e)(str(e).replace(str(path), found.where)) from None
        finally:
            tmp.cleanup()
        result.notes = [n.replace(str(path), found.where) for n in result.notes]
        source = found.where
    result.traces = [entire.annotate(t, session, source=source) for t in result.traces]
    for t in result.traces:
        note = entire.agent_note(t, session, found.where)
        if note:
            result.notes.append(note)
    return fmt, result


def passed_notes(source: str, passed: list[Passed]) -> list[str]:
    """``SOURCE: passed over 2 files in no known format: README.md, x.bin``, and a line each for session
    files that could not be read and for earlier checkpoints left out; Entire's own files are read, not
    passed over, and are only listed in ``details``."""
    def some(paths: list[str]) -> str:
        return ", ".join(paths[:10]) + (" …" if len(paths) > 10 else "")

    notes = []
    unknown = [p.path for p in passed if p.kind == "unknown"]
    if unknown:
        notes.append(f"{source}: passed over {len(unknown)} files in no known format: {some(unknown)}")
    unreadable = [p for p in passed if p.kind == "unreadable"]
    if unreadable:
        notes.append(f"{source}: could not read {len(unreadable)} session files ({unreadable[0].reason}): "
                     + some([p.path for p in unreadable]))
    copies = [p for p in passed if p.kind == "copy"]
    if copies:
        notes.append(f"{source}: left out {len(copies)} earlier checkpoints of sessions, each a prefix of the "
                     "session's latest checkpoint (Entire stores the whole session at each one)")
    return notes


def detail_lines(source: str, passed: list[Passed]) -> list[str]:
    """One line per file not read as a trace: ``SOURCE: relative/path: reason``."""
    return [f"{source}: {p.path}: {p.reason}" for p in passed]


def load(sources: Iterable[str], *, lenient: bool = False) -> ReadResult:
    """Every trace in the sources; ``hf:owner/name`` goes to the datasets loader.

    A file named directly (or by a glob) must be a trace; inside a folder, files no importer
    claims (a README, a manifest) are passed over, counted in the notes and listed in ``details``.
    """
    result = ReadResult([])
    for source in sources:
        if source.startswith("hf:"):
            from traces.formats import hf

            dataset, options = hf.parse_source(source)
            _merge(result, hf.load(dataset, lenient=lenient, **options))
            continue
        passed: list[Passed] = []
        for item in read_source(source, lenient=lenient):
            if isinstance(item, Passed):
                passed.append(item)
            else:
                _merge(result, item[1])
        result.notes += passed_notes(source, passed)
        result.details += detail_lines(source, passed)
    result.traces, renamed = unique_ids(result.traces)
    result.notes += renamed
    return result


def free_id(trace_id: str, taken: set[str]) -> str:
    """``id#2``, ``id#3``, …: the first renaming of a repeated trace id that no trace has taken."""
    n = 2
    while f"{trace_id}#{n}" in taken:
        n += 1
    return f"{trace_id}#{n}"


def unique_ids(traces: list[Trace]) -> tuple[list[Trace], list[str]]:
    """Traces whose ids are unique in a run: a repeated id gets ``#2``, ``#3``… (first kept as is).

    Results, resumed tasks and imported files are keyed by id, so two sessions sharing one (Cline
    SDK fixtures copied from one session, the same file listed twice) must not be merged.
    """
    taken = {t.id for t in traces}  # a new name must not be an id some trace already has
    kept: set[str] = set()
    out, notes = [], []
    for t in traces:
        if t.id in kept:
            new_id = free_id(t.id, taken)
            taken.add(new_id)
            notes.append(f"trace id {t.id!r} occurs again in {t.source or 'another source'}: renamed {new_id!r}")
            t = replace(t, id=new_id)
        kept.add(t.id)
        out.append(t)
    return out, notes


def _merge(into: ReadResult, part: ReadResult) -> None:
    into.traces += part.traces
    into.skipped += part.skipped
    into.notes += part.notes
    into.details += part.details
