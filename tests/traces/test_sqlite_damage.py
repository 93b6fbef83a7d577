"""A damaged SQLite session store is a clear error naming the file, never a traceback.

sqlite3 decodes some names of a database's schema itself, whatever the connection's ``text_factory``: a
byte flipped there (found by `make fuzz`, opencode #1470 at seed 0: a byte-flipped opencode.db) raised a
UnicodeDecodeError out of the importer, which the command line shows as a crash."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import traces.formats.goose as goose
import traces.formats.opencode as opencode
from traces.formats import read_path
from traces.model import TraceError


class Damaged:
    """A connection whose every statement fails as sqlite3 does on a schema name that is not UTF-8."""

    text_factory: object = None

    def execute(self, *args: object) -> object:
        raise UnicodeDecodeError("utf-8", b"\xc6", 0, 1, "invalid continuation byte")

    def close(self) -> None:
        pass

    def __enter__(self) -> Damaged:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def _db(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.execute("create table t (x)")
    db.commit()
    db.close()
    return path


@pytest.mark.parametrize(("module", "fmt", "what"), [(opencode, "opencode", "OpenCode"), (goose, "goose", "goose")])
def test_a_schema_sqlite3_cannot_decode_is_a_clear_error(monkeypatch, tmp_path, module, fmt, what):
    path = _db(tmp_path / "store.db")
    monkeypatch.setattr(module, "sqlite_read_only", lambda p: Damaged())
    with pytest.raises(TraceError) as e:
        read_path(path, fmt=fmt)
    message = str(e.value)
    assert str(path) in message and f"cannot read {what} database" in message and len(message.splitlines()) <= 2
    head = path.read_bytes()[:100].decode("utf-8", errors="replace")
    assert module.sniff_file(path, head) is not None  # detection declines it with a reason, no traceback
