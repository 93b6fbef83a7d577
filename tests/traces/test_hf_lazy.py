"""``hf:`` sources are read lazily (issue 13): never more than hf.CHUNK_ROWS rows materialised at once,
whether the rows come from a parquet file, a folder of parquet files or a ``save_to_disk`` folder, and
the traces come out of bench.run.sources one by one, long and short interleaved for the planner."""

from __future__ import annotations

import json

import pytest

from bench.run import sources
from traces.formats import hf

ROWS = 50
CHUNK = 8


def _row(i: int) -> dict:
    """An openhands-schema row whose length varies with i (every third row is long)."""
    steps = [{"role": "system", "content": "You are OpenHands.", "tool_calls": None, "tool_call_id": None},
             {"role": "user", "content": f"fix bug {i}", "tool_calls": None, "tool_call_id": None}]
    for k in range(1 + 6 * (i % 3 == 0)):
        call = {"id": f"c{k}", "type": "function",
                "function": {"name": "execute_bash", "arguments": json.dumps({"command": f"ls {k}"})}}
        steps += [{"role": "assistant", "content": f"step {k}", "tool_calls": [call], "tool_call_id": None},
                  {"role": "tool", "content": f"out {k}", "tool_calls": None, "tool_call_id": f"c{k}"}]
    steps.append({"role": "assistant", "content": "done", "tool_calls": [], "tool_call_id": None})
    return {"trajectory_id": f"t{i:03d}", "instance_id": f"o__r-{i}", "trajectory": steps}


def _parquet_file(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "train-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist([_row(i) for i in range(ROWS)]), path)  # one row group of 50 rows
    return path


def _parquet_folder(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "snapshot" / "data"
    folder.mkdir(parents=True)
    half = ROWS // 2
    pq.write_table(pa.Table.from_pylist([_row(i) for i in range(half)]), folder / "train-00000-of-00002.parquet")
    pq.write_table(pa.Table.from_pylist([_row(i) for i in range(half, ROWS)]), folder / "train-00001-of-00002.parquet")
    pq.write_table(pa.Table.from_pylist([_row(900)]), folder / "test-00000-of-00001.parquet")  # another split
    return tmp_path / "snapshot"


def _saved_dataset(tmp_path):
    datasets = pytest.importorskip("datasets")
    path = tmp_path / "saved"
    datasets.Dataset.from_list([_row(i) for i in range(ROWS)]).save_to_disk(str(path))
    return path


@pytest.fixture
def materialised(monkeypatch, tmp_path):
    """Sizes of the row chunks turned into Python objects, in order."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setattr(hf, "CHUNK_ROWS", CHUNK)
    sizes: list[int] = []
    real = hf._materialise

    def spy(batch):
        rows = real(batch)
        sizes.append(len(rows))
        return rows

    monkeypatch.setattr(hf, "_materialise", spy)
    return sizes


@pytest.mark.parametrize("make", [_parquet_file, _parquet_folder, _saved_dataset])
def test_rows_are_read_in_chunks_and_only_as_needed(tmp_path, materialised, make):
    path = make(tmp_path)
    stream = sources.stream([f"hf:{path}"])
    first = next(stream)
    assert first.id == "t000"
    assert sum(materialised) <= CHUNK  # one trace out: one chunk read, not the dataset
    rest = list(stream)
    assert [t.id for t in [first, *rest]] == [f"t{i:03d}" for i in range(ROWS)]
    assert max(materialised) <= CHUNK and sum(materialised) == ROWS
    assert len(materialised) >= ROWS // CHUNK


def test_limit_stops_reading(tmp_path, materialised):
    path = _parquet_file(tmp_path)
    assert [t.id for t in sources.stream([f"hf:{path}@limit=3"])] == ["t000", "t001", "t002"]
    assert sum(materialised) <= CHUNK


def test_load_collects_the_same_traces_as_the_stream(tmp_path, materialised):
    path = _parquet_file(tmp_path)
    assert [t.messages for t in hf.load(str(path)).traces] == [t.messages for t in hf.stream(str(path))]


def test_a_folder_without_data_is_a_clear_error(tmp_path):
    from traces.model import TraceError

    (tmp_path / "empty").mkdir()
    with pytest.raises(TraceError, match="neither a saved dataset"):
        list(hf.stream(str(tmp_path / "empty")))


def test_hf_traces_reach_the_planner_long_and_short_interleaved(tmp_path, materialised):
    path = _parquet_file(tmp_path)
    window = list(sources.interleave(enumerate(sources.stream([f"hf:{path}"])), window=6))[:6]
    lengths = [len(t.messages) for _, t in window]
    assert lengths[0] == max(lengths) and lengths[1] == min(lengths)  # longest, shortest, ...
    assert sorted(p for p, _ in window) == list(range(6))  # each keeps its position in the stream
