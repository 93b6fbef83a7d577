"""What a folder import did not read, and the importers' notes: every file listed by its path relative to
the folder with the reason, all notes in the run's import_notes.txt, a few lines on the console."""

from __future__ import annotations

import json
from pathlib import Path

from bench.cli.main import main
from bench.run import sources
from traces import native
from traces.formats import READERS, load
from traces.model import Message, Trace


def _folder(root: Path) -> Path:
    """A trace, a README and a stray binary, the last two in subfolders."""
    msgs = (Message.text_message("user", "Please list the files."), Message.text_message("assistant", "a b c"))
    native.write_many([Trace("only", msgs, agent="test")], root / "sessions")
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "README.md").write_text("# what these sessions are\n")
    (root / "sessions" / "blob.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    return root


def test_a_folder_import_lists_every_skipped_file_by_relative_path_and_reason(tmp_path):
    folder = _folder(tmp_path / "in")
    result = load([str(folder)])
    assert [t.id for t in result.traces] == ["only"]
    assert result.details == [f"{folder}: docs/README.md: no known format (tried {len(READERS)} importers)",
                              f"{folder}: sessions/blob.bin: binary file: no known format (tried {len(READERS)} importers)"]
    assert result.notes == [f"{folder}: passed over 2 files in no known format: docs/README.md, sessions/blob.bin"]


def test_the_stream_lists_them_too(tmp_path):
    folder = _folder(tmp_path / "in")
    notes = sources.StreamNotes()
    assert [t.id for t in sources.stream([str(folder)], notes=notes)] == ["only"]
    assert [line.split(": ", 2)[1] for line in notes.details] == ["docs/README.md", "sessions/blob.bin"]


def test_a_run_writes_every_note_to_its_folder_and_prints_a_summary(tmp_path, capsys):
    folder = _folder(tmp_path / "in")
    args = ["run", "--traces", str(folder), "--strategies", "none", "--workers", "1", "--executor", "local",
            "--out", str(tmp_path / "out"), "--name", "r", "--quiet", "--no-report"]
    assert main(args) == 0
    err = capsys.readouterr().err
    written = tmp_path / "out" / "r" / sources.NOTES_FILE
    text = written.read_text()
    assert "docs/README.md: no known format" in text and "sessions/blob.bin: binary file" in text
    assert "passed over 2 files in no known format: docs/README.md, sessions/blob.bin" in err
    assert f"each file not read as a trace, and why: {written}" in err


def test_many_notes_print_as_a_few_lines_naming_the_file(tmp_path):
    notes = [f"/x/events-{i}.jsonl: passed over {i} hook.start event(s)" for i in range(32)]
    notes += ["/x: passed over 3 files in no known format: a, b, c",
              "filtered out 2 of 9 traces: 2 below --min-calls 5"]
    where = tmp_path / sources.NOTES_FILE
    lines = sources.console_notes(notes, where)
    assert len(lines) <= sources.CONSOLE_NOTES
    assert lines[:2] == notes[-2:]  # what concerns the whole run comes first, whole
    assert lines[-1] == f"31 more notes from the importers on 31 files (all in {where})"
    assert sources.console_notes(notes[:2], None) == notes[:2]  # a few notes print as they are


def test_notes_file_holds_all_and_a_run_with_nothing_to_say_leaves_none(tmp_path):
    path = sources.write_notes(tmp_path, ["n1", "n2"], ["src: a.md: why"])
    assert path is not None
    assert path.read_text().splitlines() == ["# what the importers noticed", "n1", "n2", "",
                                             "# files not read as traces (source: path relative to it: why)",
                                             "src: a.md: why"]
    assert sources.write_notes(tmp_path, [], []) is None and not path.exists()  # no stale file from a rerun


def test_import_keeps_its_notes_out_of_the_traces_it_writes(tmp_path, capsys):
    folder = _folder(tmp_path / "in")
    out = tmp_path / "native"
    assert main(["import", str(folder), "--out", str(out)]) == 0
    assert "docs/README.md" in (out / ".import_notes.txt").read_text()
    assert "passed over 2 files" in capsys.readouterr().err
    result = load([str(out)])  # the notes file is hidden: a folder import of the output passes nothing over
    assert [t.id for t in result.traces] == ["only"] and not result.notes
    assert json.loads((out / "only.cbt.jsonl").read_text().splitlines()[0])
