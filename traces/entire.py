"""Agent sessions the Entire CLI keeps in git: ``--traces entire:PATH``, and its files in a folder import.

Teams using the Entire CLI (entireio/cli) have every agent session of their repository committed to an
orphan branch beside their code. What this module relies on, read in entireio/cli's source:

- The branch is ``entire/checkpoints/v1`` (``paths.MetadataBranchName``,
  cmd/entire/cli/paths/paths.go:37 @ f446dcfc09fda981a5c373a5f47c54363761fa6e). A fresh clone holds it
  as a remote-tracking ref, so ``refs/remotes/<remote>/entire/checkpoints/v1`` is read when the local
  branch is absent.
- Its tree is sharded by the 12-hex checkpoint id, ``<id[:2]>/<id[2:]>/`` (``CheckpointPath``, paths.go:44
  @ f446dcfc), with one numbered folder per session: ``<id[:2]>/<id[2:]>/<n>/`` (the tree drawn above
  ``CheckpointSummary``, cmd/entire/cli/checkpoint/checkpoint.go:438-449 @ f446dcfc).
- A session folder holds the agent's own session file, byte for byte, as ``full.jsonl``
  (``TranscriptFileName``, paths.go:28; ``full.log`` before it, ``TranscriptFileNameLegacy``, :29), and
  the session's ``metadata.json`` (``CommittedMetadata``, checkpoint.go:368-410 @ f446dcfc: ``cli_version``,
  ``checkpoint_id``, ``session_id``, ``agent`` such as "Claude Code" or "Codex", ``token_usage``).
  Later versions add the session's ``model`` (written even when empty; ``claude-opus-4-6[1m]`` for a
  session that ran with the 1M window) to the same struct, now
  ``Metadata`` in api/checkpoint/metadata.go @ 7949f0e17b9c36ef0128d38fdeee045b1e2836de. Beside them:
  prompt.txt, context.md, content_hash.txt and (later) the compact ``transcript.jsonl``, Entire's own
  condensed copy, which is not the agent's record and is not read.
- The checkpoint's ``metadata.json`` one level up (``CheckpointSummary``, checkpoint.go:452) lists the
  sessions and sums their token usage; it is read only for what a session's own file lacks.
- A transcript over 50 MB is split at line boundaries into ``full.jsonl``, ``full.jsonl.001``, ...
  (``MaxChunkSize``, ``ChunkSuffix``, agent/chunking.go:13,16; ``ChunkFileName``, :125) and joined
  again with newlines (``ReassembleJSONL``, :112 @ f446dcfc). An agent may chunk its own way
  (``TranscriptChunker``, :20-41); only the JSONL way is done here, so a chunked JSON session file
  (Gemini CLI, OpenCode export) would fail to read and say so.
- Each checkpoint stores the whole session file so far, so a session committed ten times is on the
  branch ten times, each copy a prefix of the next: only its largest copy is read (latest_only).
- The v2 layout (``V2FullCurrentRefName`` and ``V2MainRefName`` in paths.go, read through the search
  index) keeps the raw session files as ``raw_transcript`` (+ ``.001``, ...) on
  ``refs/entire/checkpoints/v2/full/current`` and the metadata on ``refs/entire/checkpoints/v2/main``.
  A session on both v1 and v2 is read once, from v1.

Each session file goes to the importer its content selects (traces.formats.detect), never by name:
Entire stores Claude Code, Codex, OpenCode and Gemini CLI sessions alike. Git blobs are read with
``git ls-tree`` and ``git cat-file --batch`` (no checkout, no network) and written to a temporary file
for the importer. Each trace gets ``meta["entire"]`` (checkpoint, session, the metadata's agent and
model) and, when that model ends in ``[1m]``, ``meta["window_hint"] = "1m"`` with the evidence: the
transcripts record the bare model id (``claude-opus-4-6``), which stays ``trace.model`` since it is
what the calls were billed as.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import IO, Any

from traces.model import Trace, TraceError

PREFIX = "entire:"
BRANCH = "entire/checkpoints/v1"
V2_FULL = "refs/entire/checkpoints/v2/full/current"
V2_MAIN = "refs/entire/checkpoints/v2/main"
TRANSCRIPTS = ("full.jsonl", "raw_transcript", "full.log")
"""Names of the agent's session file in a session folder, the preferred first (v1, v2, legacy)."""
METADATA = "metadata.json"
SIDECARS = frozenset({METADATA, "prompt.txt", "context.md", "summary.txt", "content_hash.txt",
                      "transcript.jsonl", "transcript_hash.txt", "raw_transcript_hash.txt", "checkpoint.json"})
"""Entire's own files in a session folder (paths.go's file names): read or listed, never imported."""
ONE_M = "[1m]"

_CHUNK = re.compile(r"^(full\.jsonl|raw_transcript|full\.log)(?:\.(\d{3}))?$")
_SESSION = re.compile(r"^[0-9a-f]{2}/[0-9a-f]{10}/\d+$")
_CHECKPOINT = re.compile(r"^[0-9a-f]{2}/[0-9a-f]{10}$")


@dataclass(frozen=True)
class Session:
    """One session folder: its transcript chunks (first one first) and its metadata, if any."""

    folder: str
    """``ab/cdef012345/0`` (posix, relative to the tree or folder read)."""
    chunks: tuple[str, ...]
    metadata: dict[str, Any] | None
    checkpoint: dict[str, Any] | None
    ref: str | None = None

    @property
    def checkpoint_id(self) -> str | None:
        parts = PurePosixPath(self.folder).parts
        if len(parts) >= 3 and _SESSION.match("/".join(parts[-3:])):
            return parts[-3] + parts[-2]
        md = self.metadata or {}
        return md.get("checkpoint_id") if isinstance(md.get("checkpoint_id"), str) else None

    @property
    def index(self) -> str:
        return PurePosixPath(self.folder).name


def parse_source(source: str) -> Path:
    """``entire:PATH`` → PATH (must exist)."""
    raw = source.removeprefix(PREFIX)
    if not raw:
        raise TraceError("entire: needs a path: entire:PATH (a git repository, or a checkout of "
                         f"its {BRANCH} branch)", path=source)
    path = Path(raw).expanduser()
    if not path.exists():
        raise TraceError("no such repository or folder", path=source)
    return path


# --- metadata ------------------------------------------------------------------------------------------

def parse_metadata(data: bytes) -> dict[str, Any] | None:
    """A metadata.json's object, or None when it is not JSON or not an object (it degrades, never fails)."""
    try:
        obj = json.loads(data.decode("utf-8", errors="replace"))
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def is_session_metadata(md: dict[str, Any] | None) -> bool:
    """Entire's session metadata.json (``CommittedMetadata``), not some other tool's."""
    return bool(md) and "checkpoint_id" in md and ("session_id" in md or "agent" in md)


def annotate(trace: Trace, session: Session, *, source: str | None = None) -> Trace:
    """``trace`` with ``meta["entire"]``, the ``[1m]`` window hint, and a name when the importer could
    only name it after the file (``full``)."""
    md = session.metadata or {}
    summary = session.checkpoint or {}

    def pick(key: str) -> Any:
        value = md.get(key)
        return value if value not in (None, "") else summary.get(key)

    info = {"checkpoint_id": session.checkpoint_id, "session": session.index,
            "session_id": md.get("session_id"), "agent": md.get("agent"), "model": md.get("model"),
            "cli_version": pick("cli_version"), "transcript": session.chunks[0]}
    if session.ref:
        info["ref"] = session.ref
    meta = dict(trace.meta)
    meta["entire"] = {k: v for k, v in info.items() if v not in (None, "")}
    model = md.get("model")
    if isinstance(model, str) and model.lower().endswith(ONE_M):
        meta["window_hint"] = "1m"
        meta["window_evidence"] = f"entire metadata.json model {model}"
    trace_id = trace.id
    if trace_id in {n.split(".")[0] for n in TRANSCRIPTS} | set(TRANSCRIPTS):
        sid = md.get("session_id")
        trace_id = sid if isinstance(sid, str) and sid else f"{session.checkpoint_id}/{session.index}"
    return replace(trace, id=trace_id, meta=meta, source=source or trace.source)


def agent_note(trace: Trace, session: Session, where: str) -> str | None:
    """A note when Entire's metadata names another agent than the importer that read the file."""
    agent = (session.metadata or {}).get("agent")
    if not isinstance(agent, str) or agent in ("", "Agent"):  # "Agent": AgentTypeUnknown, agent/registry.go:89
        return None

    def squash(s: str) -> str:
        return re.sub(r"[^a-z0-9]", "", s.lower())

    if squash(agent) in squash(trace.agent) or squash(trace.agent) in squash(agent):
        return None
    return f"{where}: Entire's metadata says {agent!r}, the file reads as {trace.agent}; kept {trace.agent}"


# --- grouping files into sessions ----------------------------------------------------------------------

def group(paths: list[str], read_json: Any) -> tuple[list[Session], dict[str, str]]:
    """Session folders among ``paths`` (posix, relative), and the Entire files that are not transcripts,
    each with why it is not read as one. ``read_json(path)`` gives a metadata.json's object or None."""
    memo: dict[str, dict[str, Any] | None] = {}

    def load(path: str) -> dict[str, Any] | None:
        if path not in memo:
            memo[path] = read_json(path)
        return memo[path]

    by_dir: dict[str, dict[str, str]] = {}
    for p in paths:
        pp = PurePosixPath(p)
        by_dir.setdefault(str(pp.parent), {})[pp.name] = p
    sessions: list[Session] = []
    sidecars: dict[str, str] = {}
    session_dirs: set[str] = set()
    for folder, names in by_dir.items():
        layout = _SESSION.match("/".join(PurePosixPath(folder).parts[-3:])) is not None
        md = load(names[METADATA]) if METADATA in names else None
        chunks: dict[str, list[tuple[int, str]]] = {}
        for name, p in names.items():
            m = _CHUNK.match(name)
            if m:
                chunks.setdefault(m.group(1), []).append((int(m.group(2) or 0), p))
        if not (layout and (chunks or METADATA in names)) and not (chunks and is_session_metadata(md)) \
                and not (layout and is_session_metadata(md)):
            continue
        session_dirs.add(folder)
        base = next((b for b in TRANSCRIPTS if b in chunks), None)
        checkpoint_dir = str(PurePosixPath(folder).parent)
        summary_path = by_dir.get(checkpoint_dir, {}).get(METADATA)
        if base is not None:
            ordered = tuple(p for _, p in sorted(chunks[base]))
            sessions.append(Session(folder, ordered, md if isinstance(md, dict) else None,
                                    load(summary_path) if summary_path else None))
            first = ordered[0]
            for p in ordered[1:]:
                sidecars[p] = f"part of {PurePosixPath(first).name} (Entire splits large transcripts), read with it"
            for other, parts in chunks.items():
                if other != base:
                    for _, p in parts:
                        sidecars[p] = f"another copy of the session in {PurePosixPath(first).name}, read from that"
        for name, p in names.items():
            if name in SIDECARS:
                sidecars[p] = ("Entire session metadata that is not a JSON object: ignored"
                               if name == METADATA and md is None else
                               f"Entire session metadata, read with {PurePosixPath(folder).name}/{base}"
                               if name == METADATA and base else
                               "Entire session metadata with no transcript beside it" if name == METADATA else
                               f"Entire's {name}, not the agent's record")
    for folder in session_dirs:  # the checkpoint's summary one level up
        summary_path = by_dir.get(str(PurePosixPath(folder).parent), {}).get(METADATA)
        if summary_path and summary_path not in sidecars:
            sidecars[summary_path] = "Entire checkpoint metadata (the sessions' summary), read with them"
    sessions.sort(key=lambda s: s.chunks[0])
    return sessions, sidecars


def latest_only(sessions: list[Session], size: Any) -> tuple[list[Session], dict[str, str]]:
    """One session per ``session_id``: its largest transcript. Entire commits the whole session file so
    far at each checkpoint (``checkpoint_transcript_start`` marks where that checkpoint's own part
    begins, checkpoint.go:392 @ f446dcfc), so a session of ten commits is stored ten times, each a
    prefix of the next; replaying every copy would count one session ten times. The earlier copies are
    listed, with the one kept. ``size(path)`` gives a chunk's size in bytes."""
    best: dict[str, tuple[int, str, Session]] = {}
    for s in sessions:
        sid = (s.metadata or {}).get("session_id")
        if not isinstance(sid, str) or not sid:
            continue
        key = (sum(size(p) for p in s.chunks), str((s.metadata or {}).get("created_at") or ""), s)
        if sid not in best or key[:2] > best[sid][:2]:
            best[sid] = key
    kept, dropped = [], {}
    for s in sessions:
        sid = (s.metadata or {}).get("session_id")
        top = best.get(sid) if isinstance(sid, str) else None
        if top is None or top[2] is s:
            kept.append(s)
        else:
            for p in s.chunks:
                dropped[p] = (f"an earlier checkpoint of session {sid}: Entire stores the whole session at each "
                              f"checkpoint, and {top[2].chunks[0]} holds all of it")
    return kept, dropped


# --- git -----------------------------------------------------------------------------------------------

def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "GIT_NO_LAZY_FETCH": "1"}
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, env=env, check=False)
    except FileNotFoundError:
        raise TraceError("git is not installed: entire: reads a repository with it", path=str(repo)) from None


def repo_root(path: Path) -> bool:
    """Whether ``path`` is itself a git repository (its work tree's top, a .git folder or a bare repo),
    not merely a folder inside one."""
    if not path.is_dir():
        return False
    out = _git(path, "rev-parse", "--absolute-git-dir")
    if out.returncode != 0:
        return False
    here = path.resolve()
    if Path(out.stdout.decode().strip()).resolve() == here:
        return True
    top = _git(path, "rev-parse", "--show-toplevel")
    return top.returncode == 0 and Path(top.stdout.decode().strip()).resolve() == here


def refs(repo: Path) -> tuple[str | None, str | None, str | None]:
    """(the v1 branch's ref, the v2 full/current ref, the v2 main ref) present in ``repo``."""
    out = _git(repo, "for-each-ref", "--format=%(refname)", f"refs/heads/{BRANCH}", "refs/remotes/",
               "refs/entire/checkpoints/v2/")
    names = out.stdout.decode(errors="replace").split() if out.returncode == 0 else []
    v1 = f"refs/heads/{BRANCH}" if f"refs/heads/{BRANCH}" in names else next(
        (n for n in names if n.startswith("refs/remotes/") and n.endswith("/" + BRANCH)), None)
    return v1, (V2_FULL if V2_FULL in names else None), (V2_MAIN if V2_MAIN in names else None)


def ls_tree(repo: Path, ref: str) -> dict[str, tuple[str, int]]:
    """Every blob of ``ref``'s tree: posix path → (object id, size)."""
    out = _git(repo, "ls-tree", "-r", "-l", "-z", "--full-tree", ref)
    if out.returncode != 0:
        raise TraceError(f"git ls-tree {ref} failed: {out.stderr.decode(errors='replace').strip()[:200]}",
                         path=str(repo))
    blobs = {}
    for entry in out.stdout.split(b"\0"):
        if not entry:
            continue
        head, _, name = entry.partition(b"\t")
        fields = head.split()
        if len(fields) == 4 and fields[1] == b"blob":
            size = int(fields[3]) if fields[3].isdigit() else 0
            blobs[name.decode("utf-8", errors="replace")] = (fields[2].decode(), size)
    return blobs


class Blobs:
    """One ``git cat-file --batch`` process: blobs read one at a time, never a whole branch at once."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.proc = subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_NO_LAZY_FETCH": "1"})

    def read(self, oid: str) -> bytes | None:
        """The blob's bytes; None when the repository lacks it (a partial or shallow clone)."""
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None
        stdin.write(oid.encode() + b"\n")
        stdin.flush()
        header = stdout.readline().split()
        if len(header) == 2 and header[1] == b"missing":
            return None
        if len(header) != 3:
            raise TraceError(f"git cat-file cannot read object {oid}", path=str(self.repo))
        data = _read_exactly(stdout, int(header[2]))
        stdout.read(1)  # the newline after the object
        return data

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()


def _read_exactly(stream: IO[bytes], n: int) -> bytes:
    parts, left = [], n
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise TraceError("git cat-file ended early")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


@dataclass(frozen=True)
class Found:
    """A transcript to import: its bytes (chunks joined) and where it was found, for messages."""

    session: Session
    data: bytes | None
    """The transcript's bytes, or None to read ``path`` directly (a folder's single-chunk file)."""
    path: Path | None
    where: str
    problem: str | None = None
    """Why the transcript cannot be read at all (its blob is absent from a partial clone)."""


def git_sessions(repo: Path, source: str) -> Iterator[Found | tuple[str, str]]:
    """Every session of the repository's Entire refs, read blob by blob (v1 first, then what v2 adds);
    ``(path, reason)`` for each earlier copy of a session (latest_only)."""
    v1, v2_full, v2_main = refs(repo)
    if not v1 and not v2_full:
        raise TraceError(f"no branch {BRANCH} (nor {V2_FULL}) in this repository; fetch it first: "
                         f"git fetch origin {BRANCH}:{BRANCH}", path=source)
    blobs = Blobs(repo)
    try:
        def metadata(tree: dict[str, tuple[str, int]], path: str) -> dict[str, Any] | None:
            data = blobs.read(tree[path][0]) if path in tree else None
            return parse_metadata(data) if data is not None else None

        def reader(tree: dict[str, tuple[str, int]]) -> Any:
            return lambda p: metadata(tree, p)

        main_tree = ls_tree(repo, v2_main) if v2_main else {}
        v1_tree: dict[str, tuple[str, int]] = {}
        found: list[tuple[Session, dict[str, tuple[str, int]]]] = []
        seen: set[str] = set()
        for ref in (v1, v2_full):
            if ref is None:
                continue
            tree = ls_tree(repo, ref)
            if ref == v1:
                v1_tree = tree
            sessions, _ = group(sorted(tree), reader(tree))
            for s in sessions:
                if s.folder in seen:  # on v1 and v2 alike: read once, from v1
                    continue
                seen.add(s.folder)
                for other in (main_tree, v1_tree):  # v2 full/current holds transcripts only
                    md_path = f"{s.folder}/{METADATA}"
                    if s.metadata is None and md_path in other:
                        s = replace(s, metadata=metadata(other, md_path))
                    cp_path = f"{PurePosixPath(s.folder).parent}/{METADATA}"
                    if s.checkpoint is None and cp_path in other:
                        s = replace(s, checkpoint=metadata(other, cp_path))
                found.append((replace(s, ref=ref), tree))
        trees = {s.chunks[0]: tree for s, tree in found}
        sizes = {p: tree[p][1] for s, tree in found for p in s.chunks}
        kept, dropped = latest_only([s for s, _ in found], sizes.__getitem__)
        yield from dropped.items()
        for s in kept:
            tree = trees[s.chunks[0]]
            ref = s.ref or ""
            where = f"{source}@{ref.removeprefix('refs/heads/')}:{s.chunks[0]}"
            parts = [blobs.read(tree[p][0]) for p in s.chunks]
            if any(part is None for part in parts):
                yield Found(s, None, None, where, "its blob is absent from this clone (partial or shallow); "
                                                  "git fetch it to read it")
                continue
            yield Found(s, b"\n".join(p for p in parts if p is not None), None, where)
    finally:
        blobs.close()


def folder_sessions(root: Path, files: list[Path]) -> tuple[list[tuple[Path, Found | None]], dict[Path, str]]:
    """The files of a folder import in order, each either an Entire transcript (with its session) or an
    ordinary file (None); and Entire's other files, each with why it is not imported."""
    rel = {f.relative_to(root).as_posix(): f for f in files}
    sessions, sidecars = group(sorted(rel), lambda p: parse_metadata(_read(rel[p])))
    sessions, dropped = latest_only(sessions, lambda p: rel[p].stat().st_size)
    sidecars.update(dropped)
    by_first = {s.chunks[0]: s for s in sessions}
    out: list[tuple[Path, Found | None]] = []
    for name, f in rel.items():
        if name in sidecars:
            continue
        s = by_first.get(name)
        if s is None:
            out.append((f, None))
        elif len(s.chunks) == 1:
            out.append((f, Found(s, None, f, str(f))))
        else:
            out.append((f, Found(s, b"\n".join(_read(rel[p]) for p in s.chunks), f, str(f))))
    return out, {rel[p]: reason for p, reason in sidecars.items()}


def session_of(path: Path) -> Found | None:
    """The Entire session a file named directly (or by a glob) is the transcript of, read with its
    metadata.json beside it; None for any other file."""
    if not _CHUNK.match(path.name) and not (path.parent / METADATA).is_file():
        return None
    base = path.parents[3] if len(path.parents) > 3 else path.parent
    files = [f for f in path.parent.iterdir() if f.is_file()]
    summary = path.parent.parent / METADATA
    files += [summary] if summary.is_file() else []
    plan, _ = folder_sessions(base, files)
    return next((found for f, found in plan if f == path and found is not None), None)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise TraceError(f"cannot read: {e.strerror}", path=str(path)) from None


def sources_of(source: str) -> tuple[Path, bool]:
    """``entire:PATH`` → (PATH, whether it is read through git)."""
    path = parse_source(source)
    if repo_root(path):
        v1, v2_full, _ = refs(path)
        if v1 or v2_full:
            return path, True
    if not path.is_dir():
        raise TraceError(f"not a git repository with branch {BRANCH}, nor a checkout of it", path=source)
    return path, False


def with_bytes(data: bytes, name: str) -> tempfile.TemporaryDirectory[str]:
    """A temporary folder holding ``data`` as ``name`` (the importers read paths); the caller removes it."""
    tmp = tempfile.TemporaryDirectory(prefix="compaction-bench-entire-")
    (Path(tmp.name) / name).write_bytes(data)
    return tmp
