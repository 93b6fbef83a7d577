"""Importers of real agents' session logs, chosen by content (never by file name).

Each importer is a module with ``NAME``, ``sniff_file(path, head) -> str | None`` (None when the
file is in its format, otherwise the reason it is not) and ``read_file(path, *, lenient) ->
ReadResult``. ``load`` takes files, folders, globs and ``hf:owner/name`` dataset ids.

Adding a format: 1. write ``traces/formats/<agent>.py`` with the three names above; 2. add it to
``READERS`` (order matters: the first that claims a file reads it); 3. test it on a real file
from ../shared/traces (skipping with a reason when absent) and with a fuzz test of bad input.
"""

from __future__ import annotations

import glob
import importlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType

from traces.model import Trace, TraceError

__all__ = ["READERS", "ReadResult", "UnknownFormatError", "detect", "load", "read_path"]

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


def load(sources: Iterable[str], *, lenient: bool = False) -> ReadResult:
    """Every trace in the sources; ``hf:owner/name`` goes to the datasets loader.

    A file named directly (or by a glob) must be a trace; inside a folder, files no importer
    claims (a README, a manifest) are passed over and listed in the notes.
    """
    result = ReadResult([])
    for source in sources:
        if source.startswith("hf:"):
            from traces.formats import hf

            dataset, options = hf.parse_source(source)
            _merge(result, hf.load(dataset, lenient=lenient, **options))
            continue
        in_folder = Path(source).is_dir()
        passed_over = []
        for path in expand([source]):
            try:
                _merge(result, read_path(path, lenient=lenient))
            except UnknownFormatError:
                if not in_folder:
                    raise
                passed_over.append(path.name)
        if passed_over:
            result.notes.append(f"{source}: passed over {len(passed_over)} files in no known format: "
                                + ", ".join(passed_over[:10]) + (" …" if len(passed_over) > 10 else ""))
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
