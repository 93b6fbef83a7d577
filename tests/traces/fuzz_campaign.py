"""`make fuzz`: mutated variants of a seed file per registered importer, each read and, when accepted,
written natively, replayed through `none` and run (``bench.run.runner.run``: `none` and the format's own
agent's strategy, into a temporary task store); any crash, hang, memory blow-up or unnamed error fails.

Why here (tests/, not bench/): the seeds are our test fixtures where no real file exists, and the
campaign drives import → native write → replay, which no library module may depend on.

Seeds: every file in ../shared/traces that a format claims (the Entire checkpoint layout
``<2hex>/<10hex>/<n>/full.jsonl`` of its §9 and §10 included, kept at its relative path; line files
cut to whole lines within SEED_BYTES, whole-JSON files shrunk to MAX_WHOLE_JSON by halving their
longest lists), and our own fixtures (``FIXTURES``) beside them; the files no format claims are
listed. A format without any seed is skipped, saying so. Formats are taken from
``traces.formats.READERS``, so a new importer is fuzzed as soon as it is registered and has a seed.

Mutation families: byte flips, truncation, deleted and duplicated lines, wrong JSON types, missing
keys, huge strings, deep nesting, invalid UTF-8, NUL bytes, lone-surrogate escapes, and (issue 23)
numbers at the 64-bit edges (2^53, 2^63, 2^64, 1e300, -1e30), negative numbers, numeric fields of
the wrong type, and huge ids (5M characters, or just past the 4,096 limit). Structural ones act on one
JSON unit (a JSONL line, the whole document, an SQLite row, one file of a tree).

Each variant runs in a worker process: the importer forced (strict, then --lenient), detection
(``load``), then for every trace accepted a native write and read back and a `none` replay, then
(``run_every``) a `run` of the file as a user would (strict, or --lenient when only that accepts
it; a task that fails with anything but an unknown model's price counts as a crash later). The
worst outcome counts: accepted / clear error (a TraceError naming a file of the variant) / unnamed
error / crash (any other exception while importing) / crash later (after an accepted import) / hang
(over ``--timeout`` s) / memory (MemoryError, or the worker dying under its address-space limit).
The string limit is lowered to ``--max-string`` in the workers so huge strings cross it cheaply.

    python -m tests.traces.fuzz_campaign [--variants 2000] [--seed 0] [--workers 2] [--formats ...] [--run-every 1]
"""

from __future__ import annotations

import argparse
import copy
import json
import multiprocessing as mp
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FAMILIES = ("byte-flip", "truncate", "delete-lines", "duplicate-lines", "wrong-type", "missing-key",
            "huge-string", "deep-nesting", "invalid-utf8", "nul", "surrogate", "int-edge", "negative",
            "number-type", "huge-id")
OUTCOMES = ("accepted", "clear error", "unnamed error", "crash", "crash later", "hang", "memory")
FAILING = frozenset({"unnamed error", "crash", "crash later", "hang", "memory"})
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
SEED_BYTES = 48_000
"""Line formats are cut to whole lines within this size: a variant costs milliseconds, not seconds."""
MAX_WHOLE_JSON = 120_000
"""A whole-JSON real file larger than this is shrunk (its longest lists halved) until it fits."""
AGENT_STRATEGY = {"claude-code": "claude-code", "codex": "codex", "gemini-cli": "gemini-cli",
                  "copilot-cli": "copilot-cli", "opencode": "opencode", "cline": "cline:sdk",
                  "openhands": "openhands", "swe-agent": "swe-agent", "mini-swe-agent": "swe-agent",
                  "aider": "aider"}
"""The strategy a variant's `run` uses beside `none`: its own agent's (else ``opencode``)."""


@dataclass(frozen=True)
class Seed:
    """One seed: its files (relative path → bytes) and the file the importer is pointed at."""

    fmt: str
    name: str
    files: dict[str, bytes]
    entry: str


@dataclass
class Tally:
    outcomes: Counter[str] = field(default_factory=Counter)
    families: Counter[tuple[str, str]] = field(default_factory=Counter)
    lenient_accepted: int = 0
    failures: list[str] = field(default_factory=list)
    seeds: int = 0


# --- Seeds ---------------------------------------------------------------------------------------


def _cut_lines(data: bytes, budget: int = SEED_BYTES) -> bytes:
    if len(data) <= budget:
        return data
    out, size = [], 0
    for line in data.split(b"\n"):
        if size + len(line) + 1 > budget and out:
            break
        out.append(line)
        size += len(line) + 1
    return b"\n".join(out) + b"\n"


def _is_whole_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def shrink_json(data: bytes, budget: int = MAX_WHOLE_JSON) -> bytes | None:
    """A whole-JSON document cut to ``budget`` bytes by halving its longest lists (messages, events),
    so that it stays valid and of its format; None when it cannot be (no list left to halve)."""
    doc = json.loads(data)
    for _ in range(80):
        text = json.dumps(doc, ensure_ascii=False).encode()
        if len(text) <= budget:
            return text
        lists = [c[k] for c, k in _nodes(doc, 50_000) if isinstance(c[k], list) and len(c[k]) > 1]
        if isinstance(doc, list) and len(doc) > 1:
            lists.append(doc)
        if not lists:
            return None
        longest = max(lists, key=lambda xs: len(json.dumps(xs, ensure_ascii=False)))
        del longest[max(1, len(longest) // 2):]
    return None


def real_seeds(root: Path = SHARED, per_format: int | None = None, seed_bytes: int = SEED_BYTES,
               unclaimed: list[str] | None = None) -> dict[str, list[Seed]]:
    """Every file each format claims in ../shared/traces (the smallest ``per_format`` when given), cut to
    SEED_BYTES when line-based and shrunk to MAX_WHOLE_JSON when whole JSON; the files no format
    claims are appended to ``unclaimed``."""
    from traces.formats import detect, expand
    from traces.model import TraceError

    found: dict[str, list[Path]] = {}
    for path in expand([str(root)]) if root.is_dir() else []:
        try:
            found.setdefault(detect(path), []).append(path)
        except TraceError:
            if unclaimed is not None:
                unclaimed.append(str(path.relative_to(root)))
            continue
    seeds: dict[str, list[Seed]] = {}
    for fmt, paths in found.items():
        for path in sorted(paths, key=lambda p: (p.stat().st_size, str(p))):
            data = path.read_bytes()
            if _is_whole_json(data):
                if len(data) > MAX_WHOLE_JSON:
                    shrunk = shrink_json(data)
                    if shrunk is None:
                        continue
                    data = shrunk
            else:
                data = _cut_lines(data, seed_bytes)
            rel = str(path.relative_to(root))
            seeds.setdefault(fmt, []).append(Seed(fmt, f"real:{rel}", {rel: data}, rel))
            if per_format is not None and len(seeds[fmt]) == per_format:
                break
    return seeds


def _native_seed() -> list[Seed]:
    from traces import native
    from traces.model import Image, Message, RecordedCompaction, Text, Thinking, ToolResult, ToolUse, Trace, Usage

    msgs = (Message.text_message("system", "You are a coding agent."),
            Message.text_message("user", "Fix the failing test in calc.py"),
            Message("assistant", (Thinking("look first"), Text("Reading."), ToolUse("t1", "read", {"path": "calc.py"})),
                    usage=Usage(1200, 40, 800, 100), timestamp=1.7e9, id="m1"),
            Message("user", (ToolResult("t1", "def add(a, b):\n    return a - b\n"), Image("image/png", 2048))),
            Message("assistant", (ToolUse("t2", "edit", {"path": "calc.py", "old": "a - b", "new": "a + b",
                                                          "opts": {"n": [1, 2, {"x": None}]}}),),
                    usage=Usage(300, 30, 2000, 0), timestamp=1.7e9 + 5),
            Message("user", (ToolResult("t2", "ok", False),)),
            Message.text_message("user", "summary: fixed add()", meta={"summary": True}),
            Message.text_message("assistant", "Done: add() now adds.", usage=Usage(100, 10, 2300, 0)))
    trace = Trace("fx-native", msgs, "claude-code", "claude-sonnet-4-5", "fixture",
                  compactions=(RecordedCompaction(6, "auto", 3500, "fixed add()"),), meta={"k": "v"})
    return [Seed("native", "fixture:native", {"t.cbt.jsonl": native.dumps(trace).encode()}, "t.cbt.jsonl")]


def _chat_seeds() -> list[Seed]:
    openai = [{"role": "system", "content": "You are helpful."},
              {"role": "user", "content": [{"type": "text", "text": "list files"},
                                           {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
              {"role": "assistant", "content": None, "tool_calls": [
                  {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{\"path\": \".\"}"}}],
               "usage": {"prompt_tokens": 120, "completion_tokens": 9,
                         "prompt_tokens_details": {"cached_tokens": 100}}},
              {"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"},
              {"role": "assistant", "content": "Two files."}]
    anthropic = {"messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"},
                                          {"type": "tool_use", "id": "u1", "name": "bash", "input": {"cmd": "ls"}}],
         "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 3}},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1", "content": [{"type": "text",
                                                                                              "text": "x"}]}]},
        {"role": "assistant", "content": "ok"}]}
    lines = b"".join(json.dumps({"messages": openai}).encode() + b"\n" for _ in range(2))
    return [Seed("chat", "fixture:openai.json", {"c.json": json.dumps(openai, indent=1).encode()}, "c.json"),
            Seed("chat", "fixture:anthropic.json", {"a.json": json.dumps(anthropic).encode()}, "a.json"),
            Seed("chat", "fixture:convs.jsonl", {"c.jsonl": lines}, "c.jsonl")]


def _opencode_seeds() -> list[Seed]:
    from tests.traces.test_opencode import _db, _session, _storage

    session = _session()
    export = {"info": {"id": "ses_1", "title": "t"}, "messages": [{"info": i, "parts": p} for i, p in session]}
    seeds = [Seed("opencode", "fixture:export.json", {"e.json": json.dumps(export).encode()}, "e.json")]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        db = _db(root / "opencode.db")
        seeds.append(Seed("opencode", "fixture:opencode.db", {"opencode.db": db.read_bytes()}, "opencode.db"))
        entry = _storage(root / "tree")
        files = {str(f.relative_to(root / "tree")): f.read_bytes() for f in (root / "tree").rglob("*.json")}
        seeds.append(Seed("opencode", "fixture:storage/", files, str(entry.relative_to(root / "tree"))))
    return seeds


def _agent_session_seeds(fmt: str) -> Callable[[], list[Seed]]:
    def build() -> list[Seed]:
        from tests.traces import agent_sessions as s

        records = s.gemini_session()[0] if fmt == "gemini-cli" else s.copilot_session()[0]
        name = "session-2026-05-01T10-00-gem1.jsonl" if fmt == "gemini-cli" else "cop-1/events.jsonl"
        return [Seed(fmt, f"fixture:{name}", {name: _cut_lines("".join(json.dumps(r) + "\n" for r in records)
                                                               .encode())}, name)]
    return build


def _goose_seeds() -> list[Seed]:
    from tests.traces.test_goose import METADATA, session_messages, write_db

    lines = "".join(json.dumps(r) + "\n" for r in [METADATA, *session_messages()]).encode()
    seeds = [Seed("goose", "fixture:goose.jsonl", {"20251127_101500.jsonl": lines}, "20251127_101500.jsonl")]
    with tempfile.TemporaryDirectory() as tmp:
        db = write_db(Path(tmp) / "sessions.db")
        seeds.append(Seed("goose", "fixture:sessions.db", {"sessions.db": db.read_bytes()}, "sessions.db"))
    return seeds


def _amp_seeds() -> list[Seed]:
    from tests.traces.test_amp import TID, thread

    return [Seed("amp", "fixture:amp-thread.json", {f"{TID}.json": json.dumps(thread(), indent=2).encode()},
                 f"{TID}.json")]


FIXTURES: dict[str, Callable[[], list[Seed]]] = {
    "native": _native_seed,
    "chat": _chat_seeds,
    "opencode": _opencode_seeds,
    "gemini-cli": _agent_session_seeds("gemini-cli"),
    "copilot-cli": _agent_session_seeds("copilot-cli"),
    "goose": _goose_seeds,
    "amp": _amp_seeds,
}
"""Our own seeds, for the formats ../shared/traces has no file of."""


def seeds(root: Path = SHARED, per_format: int | None = None, seed_bytes: int = SEED_BYTES,
          unclaimed: list[str] | None = None) -> tuple[dict[str, list[Seed]], list[str]]:
    """Seeds per registered format (its real files, then its fixtures), and a line for each format
    skipped (and why). With ``per_format`` only that many real files each (the test suite's sample:
    its fixtures still join them, as a real file cut to a few KB may hold no model call at all, as
    Copilot CLI's, whose system message alone is 20 KB)."""
    from traces.formats import READERS

    real = real_seeds(root, per_format, seed_bytes, unclaimed)
    out, skipped = {}, []
    for fmt in READERS:
        found = list(real.get(fmt, []))
        if fmt in FIXTURES:
            found += FIXTURES[fmt]()
        if found:
            out[fmt] = found
        else:
            why = f"no file of it in {root}" if root.is_dir() else f"{root} is absent"
            skipped.append(f"{fmt}: skipped, {why} and no fixture seed (tests/traces/fuzz_campaign.py FIXTURES)")
    return out, skipped


# --- Mutations -----------------------------------------------------------------------------------

JUNK: tuple[Any, ...] = (None, 0, -1, 1.5, 10**30, "", "12", "x", True, [], [1, "a"], {}, {"a": 1})
EDGES: tuple[Any, ...] = (2**53, 2**63, 2**63 - 1, 2**64, 1e300, -1e30, -(2**63), 1e16 + 0.0)
"""Numbers at the 64-bit edges (and past 2^53, where a float stops holding every integer)."""
NOT_NUMBERS: tuple[Any, ...] = ("12", "200000", "1e3", "", True, False, None, [], [3], {}, {"n": 3})
HUGE_IDS = (5_000_000, 4097, 50_000)
"""Lengths of a huge id: issue 23's 5M characters, just past the limit (traces.model.MAX_ID), between."""
_ID_KEY = ("id", "Id", "ID", "name", "callID", "call_id", "tool_use_id", "toolCallId", "sessionId", "uuid")
DEEP_TOKEN = "__fuzz_deep__"


def _nodes(value: Any, limit: int = 4000) -> list[tuple[Any, Any]]:
    """(container, key) of every value in a parsed document (iteratively, at most ``limit``)."""
    out: list[tuple[Any, Any]] = []
    stack = [value]
    while stack and len(out) < limit:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in items:
            out.append((node, k))
            if isinstance(v, (dict, list)):
                stack.append(v)
    return out


def _mutate_json(doc: Any, family: str, rng: random.Random, huge: int) -> str | None:
    """The document mutated structurally, serialised; None when it has nothing to mutate."""
    nodes = _nodes(doc)
    if family == "missing-key":
        nodes = [(c, k) for c, k in nodes if isinstance(c, dict)]
    elif family in ("huge-string", "surrogate", "nul"):
        nodes = [(c, k) for c, k in nodes if isinstance(c[k], str)] or nodes
    elif family in ("int-edge", "negative", "number-type"):
        nodes = [(c, k) for c, k in nodes if isinstance(c[k], int | float) and not isinstance(c[k], bool)] or nodes
    elif family == "huge-id":
        nodes = [(c, k) for c, k in nodes if isinstance(c, dict) and isinstance(c[k], str)
                 and str(k).endswith(_ID_KEY)] or [(c, k) for c, k in nodes if isinstance(c[k], str)] or nodes
    if not nodes:
        return None
    container, key = rng.choice(nodes)
    old = container[key]
    if family == "wrong-type":
        container[key] = rng.choice([j for j in JUNK if type(j) is not type(old)])
    elif family == "int-edge":
        container[key] = rng.choice(EDGES)
    elif family == "negative":
        magnitude = abs(old) if isinstance(old, int | float) and not isinstance(old, bool) and old else 1
        container[key] = -rng.choice((magnitude, 1, 5_000_000, magnitude * 1000))
    elif family == "number-type":
        container[key] = rng.choice(NOT_NUMBERS)
    elif family == "huge-id":
        n = rng.choice(HUGE_IDS)
        base = old if isinstance(old, str) and old else "id"
        container[key] = (base * (n // len(base) + 1))[:n]
    elif family == "missing-key":
        del container[key]
    elif family == "huge-string":
        container[key] = (old if isinstance(old, str) else "") + "x" * rng.choice((huge // 2, huge + 1, 4 * huge))
    elif family == "deep-nesting":
        container[key] = DEEP_TOKEN
    elif family == "surrogate":
        container[key] = f"{old}{chr(rng.choice((0xD83D, 0xDC00, 0xDFFF)))}" if isinstance(old, str) else "\ud800"
    elif family == "nul":
        container[key] = f"{old}\x00" if isinstance(old, str) else "\x00"
    text = json.dumps(doc)  # ensure_ascii: a surrogate becomes the escape \ud83d, as a hostile file holds it
    if family == "deep-nesting":
        depth = rng.choice((150, 600, 1200, 5000))
        opener = rng.choice(('{"a":', "["))
        closer = "}" if opener == '{"a":' else "]"
        text = text.replace(json.dumps(DEEP_TOKEN), opener * depth + "1" + closer * depth, 1)
    return text


def _mutate_text(data: bytes, family: str, rng: random.Random, huge: int) -> bytes:
    """Byte- and line-level mutations (and the text stand-ins of the structural ones for non-JSON)."""
    lines = data.split(b"\n")
    n = max(len(data), 1)
    if family == "byte-flip":
        buf = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            if buf:
                i = rng.randrange(len(buf))
                buf[i] ^= rng.randint(1, 255)
        return bytes(buf)
    if family == "truncate":
        return data[: rng.randrange(n)]
    if family == "delete-lines":
        for _ in range(rng.randint(1, 3)):
            if len(lines) > 1:
                del lines[rng.randrange(len(lines))]
        return b"\n".join(lines)
    if family == "duplicate-lines":
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(lines))
            lines.insert(rng.randrange(len(lines) + 1), lines[i])
        return b"\n".join(lines)
    insert = {"invalid-utf8": rng.choice((b"\xff", b"\xfe\xff", b"\xc3", b"\xed\xa0\x80", b"\xe2\x82")),
              "nul": b"\x00", "surrogate": b"\\ud83d", "huge-string": b"x" * rng.choice((huge // 2, 4 * huge)),
              "deep-nesting": b"[" * 3000, "wrong-type": rng.choice((b"1.2.3k", b"-5", b"null", b"\"12\"")),
              "int-edge": rng.choice((b"18446744073709551616", b"9223372036854775808", b"1e300")),
              "negative": rng.choice((b"-", b"-1", b"-1e30")), "number-type": rng.choice((b"\"", b"true")),
              "huge-id": b"i" * rng.choice(HUGE_IDS), "missing-key": b""}[family]
    i = rng.randrange(n)
    if family == "missing-key":
        return data[:i] + data[i + rng.randint(1, 40):]
    return data[:i] + insert + data[i:]


STRUCTURAL = ("wrong-type", "missing-key", "huge-string", "deep-nesting", "surrogate", "nul", "int-edge", "negative",
              "number-type", "huge-id")


def _mutate_bytes(data: bytes, family: str, rng: random.Random, huge: int) -> bytes:
    """One file's bytes mutated: structural families act on a JSON unit (the document or one line)."""
    if family in STRUCTURAL and not (family == "nul" and rng.random() < 0.5):
        try:
            doc = json.loads(data)
            text = _mutate_json(doc, family, rng, huge)
            if text is not None:
                return text.encode()
        except ValueError:
            lines = data.split(b"\n")
            units = [i for i, line in enumerate(lines) if line.strip()[:1] in (b"{", b"[")]
            if units:
                i = rng.choice(units)
                try:
                    text = _mutate_json(json.loads(lines[i]), family, rng, huge)
                except ValueError:
                    text = None
                if text is not None:
                    lines[i] = text.encode()
                    return b"\n".join(lines)
    return _mutate_text(data, family, rng, huge)


def _mutate_db(path: Path, family: str, rng: random.Random, huge: int) -> None:
    """An SQLite seed: byte families corrupt the file, the others one message or part row's JSON (OpenCode's
    ``message`` / ``part`` ``data``; goose's ``messages`` ``content_json`` or ``metadata_json``)."""
    if family in ("byte-flip", "truncate"):
        path.write_bytes(_mutate_text(path.read_bytes(), family, rng, huge))
        return
    with sqlite3.connect(path) as db:
        tables = {r[0] for r in db.execute("select name from sqlite_master where type='table'")}
        if "messages" in tables:  # goose
            table, column = "messages", rng.choice(("content_json", "content_json", "metadata_json"))
        else:
            table, column = rng.choice(("message", "part")), "data"
        rows = db.execute(f"select id, {column} from {table}").fetchall()  # noqa: S608 (our own table names)
        if not rows:
            return
        rid, data = rng.choice(rows)
        if family in ("delete-lines", "duplicate-lines"):
            if family == "delete-lines":
                db.execute(f"delete from {table} where id = ?", (rid,))  # noqa: S608
            else:
                new_id: Any = rng.choice((8, 300)) * 1000 if table == "messages" else "x" * rng.choice((8, 300))
                db.execute(f"update {table} set id = ? where id = ?", (new_id, rid))  # noqa: S608
            return
        new = _mutate_bytes(data.encode() if isinstance(data, str) else data, family, rng, huge)
        try:
            value: Any = new.decode("utf-8")
        except UnicodeDecodeError:
            value = new
        db.execute(f"update {table} set {column} = ? where id = ?", (value, rid))  # noqa: S608


def write_variant(seed: Seed, family: str, rng: random.Random, folder: Path, huge: int) -> tuple[Path, list[Path]]:
    """The seed's files under ``folder``, one of them mutated; returns (entry, every file)."""
    paths = []
    for rel, data in seed.files.items():
        p = folder / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        paths.append(p)
    target = rng.choice(paths)
    if target.suffix == ".db":
        _mutate_db(target, family, rng, huge)
    else:
        target.write_bytes(_mutate_bytes(target.read_bytes(), family, rng, huge))
    return folder / seed.entry, paths


# --- Running one variant (in a worker process) ---------------------------------------------------


def _named(message: str, files: list[Path]) -> bool:
    return any(str(f) in message for f in files)


_SHARED: dict[str, Any] = {}


def check_variant(fmt: str, entry: Path, files: list[Path], do_run: bool = False) -> tuple[str, bool, str]:
    """(outcome, accepted with --lenient, detail) of one variant, from import through a `none` replay
    and, with ``do_run``, a `run` of the file (``run_check``)."""
    import strategies
    from bench.cost.pricing import profile
    from bench.replay.loop import ReplayConfig, replay
    from bench.tokens.counter import TokenCounter
    from traces import native
    from traces.formats import load, read_path
    from traces.model import TraceError

    def attempt(read: Callable[[], Any]) -> tuple[str, Any, str]:
        try:
            return "accepted", read(), ""
        except TraceError as e:
            return ("clear error" if _named(str(e), files) else "unnamed error"), None, str(e)[:300]
        except MemoryError:
            return "memory", None, "MemoryError"
        except Exception as e:  # noqa: BLE001 - the point: anything else is a crash, reported
            return "crash", None, _where(e)

    runs = [attempt(lambda: read_path(entry, fmt=fmt)), attempt(lambda: read_path(entry, lenient=True, fmt=fmt)),
            attempt(lambda: load([str(entry)]))]
    worst = next((r for r in runs if r[0] in FAILING), None)
    if worst is not None:
        return worst[0], runs[1][0] == "accepted", worst[2]
    if not _SHARED:  # once per worker: building a strategy validates its source; counts are cached by text
        _SHARED.update(config=ReplayConfig(profile("claude-sonnet-4-5")), none=strategies.build("none"),
                       counter=TokenCounter())
    done: list[Any] = []
    for _, result, _ in runs:
        for trace in (result.traces if result is not None else [])[:3]:
            if any(trace == t for t in done):  # strict, lenient and detected reads often agree
                continue
            done.append(trace)
            try:
                back = native.loads(native.dumps(trace).encode("utf-8").decode("utf-8"), path=str(entry))
                assert back.messages == trace.messages, "native round trip changed the messages"
                out = replay(trace, copy.deepcopy(_SHARED["none"]), _SHARED["config"], counter=_SHARED["counter"])
                if out.error is not None:
                    raise RuntimeError(f"replay error: {out.error}")
            except MemoryError:
                return "memory", True, "MemoryError after import"
            except Exception as e:  # noqa: BLE001
                return "crash later", runs[1][0] == "accepted", _where(e)
    if do_run and (runs[0][0] == "accepted" or runs[1][0] == "accepted"):
        try:
            run_check(fmt, entry, files, lenient=runs[0][0] != "accepted")
        except MemoryError:
            return "memory", True, "MemoryError in run"
        except Exception as e:  # noqa: BLE001
            return "crash later", runs[1][0] == "accepted", "run: " + _where(e)
    return runs[0][0], runs[1][0] == "accepted", runs[0][2]


def run_check(fmt: str, entry: Path, files: list[Path], *, lenient: bool) -> None:
    """`run` the variant as a user would: `none` and its agent's strategy, into a temporary task store.

    Raises when the run raises (but a TraceError naming a file of the variant: the run detects the
    format, which a mutation may have hidden, and that error is the CLI's clear exit 2), when a task
    failed (a bad value must be refused on import, not fail every task later) or when a dollar figure
    is negative (issue 23). A run under
    the recorded model whose tasks fail only for a model without a price (by design: that error asks
    for --prices) is run again as claude-sonnet-4-5, so the replay is still exercised.
    """
    from bench.run.runner import RunConfig, run
    from traces.model import TraceError

    for model in ("recorded", "claude-sonnet-4-5"):
        with tempfile.TemporaryDirectory(prefix="cb-fuzz-run-") as tmp:
            config = RunConfig(traces=(str(entry),), strategies=("none", AGENT_STRATEGY.get(fmt, "opencode")),
                               model=model, workers=1, executor="local", out=tmp, name="r", csv="no",
                               lenient=lenient)
            try:
                out = run(config, progress=False)
            except TraceError as e:
                if _named(str(e), files):
                    return
                raise
            except ValueError as e:
                if str(e).startswith("no traces to replay"):  # a companion file: claimed, holds no trace
                    return
                raise
            money = [c for c in ("cost", "cost_no_cache") if c in out.table]
            negative = [f"{c} {v}" for c in money for v in out.table[c].dropna() if v < 0]
            if negative:
                raise RuntimeError(f"negative dollars: {negative[0]}")
            errors = [f"{t} × {s}: {err}" for t, s, err in out.errors]
            priced = [e for e in errors if "UnknownModelError" not in e.split(": ")[1]]
            if priced:
                raise RuntimeError(f"task failed: {priced[0][:300]}")
            if not errors:
                return


def _where(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    last = tb[-1] if tb else None
    at = f" at {Path(last.filename).name}:{last.lineno}" if last else ""
    return f"{type(e).__name__}: {str(e)[:200]}{at}"


def _worker(conn: Any, max_string: int, memory_bytes: int) -> None:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    except (ImportError, ValueError, OSError):
        pass
    sys.setrecursionlimit(1000)
    import traces.formats._common as common

    common.MAX_STRING = max_string
    while True:
        job = conn.recv()
        if job is None:
            return
        fmt, entry, files, do_run = job
        conn.send(check_variant(fmt, Path(entry), [Path(f) for f in files], do_run))


class Worker:
    """One worker process; killed and replaced when a variant hangs or kills it."""

    def __init__(self, max_string: int, memory_bytes: int) -> None:
        self.args = (max_string, memory_bytes)
        self._start()

    def _start(self) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, *self.args), daemon=True)
        self.proc.start()

    def run(self, job: tuple[str, str, list[str], bool], timeout: float) -> tuple[str, bool, str]:
        self.conn.send(job)
        if self.conn.poll(timeout):
            try:
                return self.conn.recv()  # type: ignore[no-any-return]
            except EOFError:
                pass
        else:
            self.proc.kill()
            self.proc.join()
            self._start()
            return "hang", False, f"no answer in {timeout:.0f} s"
        code = self.proc.exitcode
        self.proc.join()
        self._start()
        return "memory", False, f"worker died (exit {code}) under its {self.args[1] >> 20} MiB limit"

    def close(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()


# --- The campaign --------------------------------------------------------------------------------


def variants(seed_list: list[Seed], n: int, rng: random.Random) -> Iterator[tuple[int, Seed, str, random.Random]]:
    """``n`` (index, seed, family, rng) jobs: families in turn, and seeds in turn with an offset that
    moves by one every round of families, so that every seed meets every family."""
    for i in range(n):
        family = FAMILIES[i % len(FAMILIES)]
        seed = seed_list[(i + i // len(FAMILIES)) % len(seed_list)]
        yield i, seed, family, random.Random(rng.getrandbits(64))


class InProcess:
    """``workers=0``: variants run in this process (the test suite's sample: no hang or memory guard)."""

    def run(self, job: tuple[str, str, list[str], bool], timeout: float) -> tuple[str, bool, str]:
        fmt, entry, files, do_run = job
        return check_variant(fmt, Path(entry), [Path(f) for f in files], do_run)

    def close(self) -> None:
        pass


def campaign(n: int = 2000, *, seed: int = 0, workers: int = 1, formats: list[str] | None = None,
             timeout: float = 60.0, max_string: int = 256 * 1024, memory_mb: int = 3072, root: Path = SHARED,
             per_format: int | None = None, seed_bytes: int = SEED_BYTES, keep: Path | None = None,
             run_every: int = 1, out: Callable[[str], None] = print) -> tuple[dict[str, Tally], list[str]]:
    """Run ``n`` variants per format; returns the tallies and the skipped formats' lines (and a line
    listing the files of ``root`` no format claims).

    Every ``run_every``-th variant (0: none) is also `run` when accepted (``run_check``): the test
    suite's sample runs a few, ``make fuzz`` every one.

    Failing variants are copied under ``keep`` (``<format>-<index>/``) when it is given.

    With ``workers=0`` the caller lowers ``MAX_STRING`` to ``max_string`` itself (the workers do).
    """
    from concurrent.futures import ThreadPoolExecutor

    unclaimed: list[str] = []
    all_seeds, skipped = seeds(root, per_format, seed_bytes, unclaimed)
    chosen = {f: s for f, s in all_seeds.items() if formats is None or f in formats}
    tallies = {f: Tally(seeds=len(s)) for f, s in chosen.items()}
    if unclaimed:
        skipped.append(f"{len(unclaimed)} files of {root} no format claims, not seeds: "
                       + ", ".join(sorted(unclaimed)[:6]) + (" …" if len(unclaimed) > 6 else ""))
    pool: list[Any] = [Worker(max_string, memory_mb << 20) for _ in range(workers)] or [InProcess()]
    free = list(pool)
    lock = threading.Lock()
    tmp = Path(tempfile.mkdtemp(prefix="cb-fuzz-"))
    try:
        jobs = [(fmt, *v) for fmt, s in chosen.items()
                for v in variants(s, n, random.Random(f"{seed}:{fmt}"))]

        def one(job: tuple[str, int, Seed, str, random.Random]) -> None:
            fmt, i, sd, family, rng = job
            folder = tmp / f"{fmt}-{i}"
            entry, files = write_variant(sd, family, rng, folder, max_string)
            worker = free.pop()
            try:
                do_run = bool(run_every) and i % run_every == 0
                outcome, lenient_ok, detail = worker.run((fmt, str(entry), [str(f) for f in files], do_run), timeout)
            finally:
                free.append(worker)
            with lock:
                t = tallies[fmt]
                t.outcomes[outcome] += 1
                t.families[(family, outcome)] += 1
                t.lenient_accepted += lenient_ok
                if outcome in FAILING:
                    t.failures.append(f"{fmt} #{i} {family} on {sd.name}: {outcome}: {detail}")
                    if keep is not None:
                        shutil.copytree(folder, keep / f"{fmt}-{i}", dirs_exist_ok=True)
            shutil.rmtree(folder, ignore_errors=True)

        start = time.monotonic()
        with ThreadPoolExecutor(len(pool)) as ex:
            list(ex.map(one, jobs))
        out(f"{len(jobs)} variants in {time.monotonic() - start:.0f} s")
    finally:
        for w in pool:
            w.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return tallies, skipped


def table(tallies: dict[str, Tally], seeds_used: dict[str, list[Seed]] | None = None) -> str:
    """Outcomes per format, as a markdown table."""
    head = ["format", "seeds", "variants", *OUTCOMES, "accepted --lenient"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for fmt, t in tallies.items():
        total = sum(t.outcomes.values())
        rows.append("| " + " | ".join([fmt, f"{t.seeds:,}", f"{total:,}", *(f"{t.outcomes[o]:,}" for o in OUTCOMES),
                                       f"{t.lenient_accepted:,}"]) + " |")
    total = Counter[str]()
    for t in tallies.values():
        total.update(t.outcomes)
    rows.append("| " + " | ".join(["**all**", f"{sum(t.seeds for t in tallies.values()):,}", f"{sum(total.values()):,}",
                                   *(f"{total[o]:,}" for o in OUTCOMES),
                                   f"{sum(t.lenient_accepted for t in tallies.values()):,}"]) + " |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.traces.fuzz_campaign", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variants", type=int, default=2000, help="variants per format")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=max(1, min(2, (os.cpu_count() or 1))))
    p.add_argument("--formats", nargs="*", default=None)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds before a variant counts as a hang")
    p.add_argument("--max-string", type=int, default=256 * 1024, help="the string limit in the workers")
    p.add_argument("--memory-mb", type=int, default=3072, help="address-space limit of a worker")
    p.add_argument("--traces", type=Path, default=SHARED, help="real sessions to seed from")
    p.add_argument("--run-every", type=int, default=1, help="`run` every n-th accepted variant (0: never)")
    args = p.parse_args(argv)
    import traces.formats._common as common

    print(f"fuzzing {args.variants} variants per format, seed {args.seed}, {args.workers} worker(s); limits: "
          f"depth {getattr(common, 'MAX_DEPTH', '?')}, strings {args.max_string:,} characters (lowered from the "
          f"default {getattr(common, 'MAX_STRING', 0):,} for speed); seeds from {args.traces}; `run` on every "
          f"{args.run_every or 'no'} accepted variant(s)")
    if not args.traces.is_dir():
        print(f"note: {args.traces} is absent: formats seeded only by real files are skipped")
    keep = Path(tempfile.gettempdir()) / f"cb-fuzz-failures-{args.seed}"
    tallies, skipped = campaign(args.variants, seed=args.seed, workers=args.workers, formats=args.formats,
                                timeout=args.timeout, max_string=args.max_string, memory_mb=args.memory_mb,
                                root=args.traces, keep=keep, run_every=args.run_every)
    for line in skipped:
        print(f"note: {line}")
    print(f"random seed {args.seed}")
    print(table(tallies))
    failures = [f for t in tallies.values() for f in t.failures]
    for f in failures[:50]:
        print(f"FAIL {f}", file=sys.stderr)
    if failures:
        print(f"{len(failures)} failing variants (copies under {keep}/)", file=sys.stderr)
        return 1
    print("no crash, hang, memory blow-up or unnamed error")
    return 0


if __name__ == "__main__":
    sys.exit(main())
