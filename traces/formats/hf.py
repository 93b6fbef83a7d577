"""Trajectory datasets in the Hugging Face format (MANIFEST "Hugging Face datasets"; spec/pricing.md §4).

``load("owner/name")`` streams rows from the Hub through ``datasets`` (imported lazily: it costs a
second or more); ``load("/path/file.parquet" or ".jsonl")`` reads a local copy in the same schema.
A row is one trajectory. Schemas: ``swe-agent`` (nebius/SWE-agent-trajectories: ``trajectory`` of
``{role, text, system_prompt, mask}`` with SWE-agent text actions, made tool calls as in
traces.formats.swe_agent), ``openhands`` (nebius/SWE-rebench-openhands-trajectories,
nvidia/SWE-Zero-openhands-trajectories: ``trajectory`` of OpenAI chat messages with tool calls),
and ``chat`` (a ``messages`` column). ``schema=None`` picks it per row from its columns.
Why local files too: the Hub is unreachable from many machines; the error says how to get around it.

Nothing loads a whole dataset (issue 13): ``stream`` yields one trace at a time and every row source
materialises at most ``CHUNK_ROWS`` rows at once: Arrow batches of a parquet file, of a folder of
parquet files (a downloaded Hub snapshot), of a ``Dataset.save_to_disk`` folder or of a Hub dataset
cached for offline use (memory-mapped, never read whole); JSONL line by line; the Hub itself through
``datasets`` streaming. ``load`` collects the stream for small sets and tools.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from traces.formats import ReadResult
from traces.formats._common import Skips, check_trace, jsonl_records
from traces.formats.chat import Ids, conversation, finish, openai_messages
from traces.formats.swe_agent import command_action, with_text_actions
from traces.model import Message, Trace, TraceError

SCHEMAS = ("swe-agent", "openhands", "chat")
KNOWN: dict[str, tuple[str, str | None]] = {
    "nebius/SWE-agent-trajectories": ("swe-agent", None),
    "nebius/SWE-rebench-openhands-trajectories": ("openhands", "Qwen/Qwen3-Coder-480B-A35B-Instruct"),
    "nvidia/SWE-Zero-openhands-trajectories": ("openhands", "Qwen/Qwen3-Coder-480B-A35B-Instruct"),
}
"""Dataset id → (schema, model that generated it when the rows do not say)."""
BULKY = ("trajectory", "messages", "tools", "generated_patch", "model_patch", "eval_logs", "patch")
LOCAL_SUFFIXES = (".parquet", ".jsonl", ".json")


def _rows_schema(row: dict[str, Any]) -> str:
    steps = row.get("trajectory")
    if isinstance(steps, list):
        first = next((s for s in steps if isinstance(s, dict)), {})
        return "swe-agent" if "text" in first and "content" not in first else "openhands"
    if isinstance(row.get("messages"), list):
        return "chat"
    raise TraceError("row has neither a \"trajectory\" nor a \"messages\" list")


def _swe_agent_messages(steps: Any) -> list[Message]:
    if not isinstance(steps, list):
        raise TraceError(f"\"trajectory\" should be a list, got {type(steps).__name__}")
    raw: list[Any] = []
    for s in steps:
        if not isinstance(s, dict) or not isinstance(s.get("role"), str):
            raise TraceError("a trajectory step is an object with a string \"role\"")
        text, prompt = s.get("text"), s.get("system_prompt")
        role = {"ai": "assistant"}.get(s["role"], s["role"])
        if not raw and role != "system" and isinstance(prompt, str) and prompt:
            raw.append({"role": "system", "content": prompt})
        if role == "system" and not text:
            text = prompt
        raw.append({"role": role, "content": text if isinstance(text, str) else ""})
    ids = Ids()
    return openai_messages(with_text_actions(raw, command_action, ids), ids=ids)


def row_trace(row: Any, schema: str | None, index: int, source: str, model: str | None) -> Trace:
    """One dataset row as a Trace; TraceErrors carry no location (the caller adds it)."""
    if not isinstance(row, dict):
        raise TraceError(f"a row is an object, got {type(row).__name__}")
    schema = schema or _rows_schema(row)
    unique = row.get("trajectory_id") or row.get("traj_id")
    trace_id = str(unique) if unique else f"{row.get('instance_id') or 'row'}#{index}"
    meta = {k: v for k, v in row.items() if k not in BULKY and (not isinstance(v, str) or len(v) <= 200)
            and isinstance(v, (str, int, float, bool, type(None)))}
    if schema == "swe-agent":
        messages, agent = _swe_agent_messages(row.get("trajectory")), "swe-agent"
        model = row.get("model_name") if isinstance(row.get("model_name"), str) else model
    elif schema == "openhands":
        messages, agent = openai_messages(row.get("trajectory")), "openhands"
    elif schema == "chat":
        t = conversation(row, Path(source), None, trace_id)
        messages, agent, model = list(t.messages), t.agent, t.model or model
    else:
        raise TraceError(f"unknown schema {schema!r} (known: {', '.join(SCHEMAS)})")
    notes: list[str] = []
    return Trace(id=trace_id, messages=finish(messages, f"{source} row {index}", notes), agent=agent, model=model,
                 source=source, meta={**meta, "dataset_schema": schema, **({"notes": notes} if notes else {})})


def unreachable(dataset_id: str, reason: str, schema: str | None) -> TraceError:
    hint = schema or KNOWN.get(dataset_id, ("openhands",))[0]
    return TraceError(
        f"the Hugging Face Hub is unreachable ({reason}), so dataset {dataset_id!r} cannot be streamed. "
        f"Download its parquet or JSONL files on a machine with network (e.g. `huggingface-cli download "
        f"{dataset_id} --repo-type dataset`), then load a local file: `hf:/path/to/train-00000.parquet`, or "
        f"traces.formats.hf.load('/path/to/file.parquet', schema={hint!r}).", path=f"hf:{dataset_id}")


def _offline() -> bool:
    return any(os.environ.get(k, "").lower() in ("1", "true", "yes", "on")
               for k in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def _reachable(timeout: float = 3.0) -> str | None:
    """None when the Hub's host accepts a connection; otherwise why not (skipped behind a proxy)."""
    if any(os.environ.get(k) for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or "huggingface.co"
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
    except OSError as e:
        return f"cannot connect to {host}: {e.strerror or e}"
    return None


def _hub_rows(dataset_id: str, split: str, schema: str | None) -> Iterator[Any]:
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", dataset_id):
        raise TraceError("not an existing local file nor a dataset id 'owner/name'", path=f"hf:{dataset_id}")
    offline = _offline()
    problem = "offline mode (HF_HUB_OFFLINE is set)" if offline else _reachable()
    if problem and not offline:
        raise unreachable(dataset_id, problem, schema)
    try:
        import datasets
        from huggingface_hub import constants
    except ImportError:
        raise TraceError("the 'datasets' package is needed to read from the Hub", path=f"hf:{dataset_id}") from None
    if offline and not constants.HF_HUB_OFFLINE:  # set after the first import: the hub would retry for ~20 s
        raise unreachable(dataset_id, problem or "offline", schema)
    try:
        if offline:  # the cached Arrow files, memory-mapped, read CHUNK_ROWS rows at a time
            yield from _arrow_rows(datasets.load_dataset(dataset_id, split=split), f"hf:{dataset_id}")
        else:  # streaming: rows arrive shard by shard, nothing downloaded whole
            yield from datasets.load_dataset(dataset_id, split=split, streaming=True)
    except TraceError:
        raise
    except ConnectionError as e:
        raise unreachable(dataset_id, problem or f"{type(e).__name__}: {e}", schema) from None
    except Exception as e:  # noqa: BLE001 - datasets raises many kinds; all mean "cannot load"
        raise TraceError(f"cannot load the dataset ({type(e).__name__}: {e})", path=f"hf:{dataset_id}") from None


CHUNK_ROWS = 64
"""Dataset rows turned into Python objects at once: what a reader holds of a dataset, whatever its size."""


def _materialise(batch: Any) -> list[dict[str, Any]]:
    """One Arrow batch (or table of at most CHUNK_ROWS rows) as row dicts: the only place rows become Python."""
    return batch.to_pylist()


def _batch_rows(batches: Iterable[Any], where: str, what: str = "parquet") -> Iterator[Any]:
    try:
        for batch in batches:
            yield from _materialise(batch)
    except (OSError, ValueError) as e:  # pyarrow.ArrowInvalid is a ValueError
        raise TraceError(f"cannot read {what} ({type(e).__name__}: {e})", path=where) from None


def _parquet_rows(path: Path) -> Iterator[Any]:
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(path)
    except (OSError, ValueError) as e:
        raise TraceError(f"cannot read parquet ({type(e).__name__}: {e})", path=str(path)) from None
    yield from _batch_rows(file.iter_batches(batch_size=CHUNK_ROWS), str(path))


def _arrow_rows(dataset: Any, where: str) -> Iterator[Any]:
    """A ``datasets.Dataset`` (memory-mapped Arrow) in chunks of CHUNK_ROWS rows."""
    yield from _batch_rows(dataset.with_format("arrow").iter(batch_size=CHUNK_ROWS), where, "the dataset")


def _jsonl_rows(path: Path, lenient: bool, skips: Skips) -> Iterator[tuple[int, Any]]:
    """(line, object) per non-blank line, read line by line (traces.formats._common.iter_jsonl's rules,
    without reading the whole file first)."""
    try:
        handle = path.open("rb")
    except OSError as e:
        raise TraceError(f"cannot read: {e.strerror}", path=str(path)) from None
    with handle:
        yield from jsonl_records(((n, raw.removesuffix(b"\n")) for n, raw in enumerate(handle, start=1)),
                                 path, lenient, skips)


def _folder_rows(path: Path, split: str) -> Iterator[Any]:
    """A ``Dataset.save_to_disk`` folder (a DatasetDict's: its ``split``), else the folder's parquet files
    in name order (a downloaded Hub snapshot; those named after ``split`` when some are)."""
    if (path / "dataset_info.json").is_file() or (path / "dataset_dict.json").is_file():
        try:
            import datasets

            saved = datasets.load_from_disk(str(path))
        except ImportError:
            raise TraceError("the 'datasets' package is needed to read a saved dataset", path=str(path)) from None
        except Exception as e:  # noqa: BLE001 - datasets raises many kinds; all mean "cannot load"
            raise TraceError(f"cannot load the saved dataset ({type(e).__name__}: {e})", path=str(path)) from None
        if isinstance(saved, datasets.DatasetDict):
            if split not in saved:
                raise TraceError(f"no split {split!r} (splits: {', '.join(saved)})", path=str(path))
            saved = saved[split]
        yield from _arrow_rows(saved, str(path))
        return
    files = sorted(p for p in path.rglob("*.parquet") if p.is_file())
    named = [p for p in files if split in p.relative_to(path).as_posix()]
    if not files:
        raise TraceError("a folder with neither a saved dataset (dataset_info.json) nor parquet files", path=str(path))
    for file in named or files:
        yield from _parquet_rows(file)


DEFAULT_LIMIT = 100
"""Rows read from a Hub dataset unless ``limit=`` says otherwise (the nebius set has 80K rows)."""


def parse_source(source: str) -> tuple[str, dict[str, Any]]:
    """``hf:owner/name[@split=test,limit=20,schema=openhands]`` → (dataset id or file, load options).

    A Hub dataset reads ``DEFAULT_LIMIT`` rows by default (``limit=0``: all); a local file, all.
    """
    dataset, _, rest = source.removeprefix("hf:").partition("@")
    options: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq or key not in ("split", "limit", "schema"):
            raise TraceError(f"{source}: option {item!r} is not one of split=…, limit=…, schema=…")
        if key == "limit":
            if not value.isdigit():
                raise TraceError(f"{source}: limit must be a whole number, not {value!r}")
            options["limit"] = int(value) or None
        else:
            options[key] = value
    local = Path(dataset).exists() or Path(dataset).suffix in LOCAL_SUFFIXES
    if not local:
        options.setdefault("limit", DEFAULT_LIMIT)
    return dataset, options


def stream(dataset_id: str, *, lenient: bool = False, split: str = "train", limit: int | None = None,
           schema: str | None = None, skips: Skips | None = None) -> Iterator[Trace]:
    """Traces from a Hub dataset id, or a local parquet/JSONL file or folder, one per row, up to ``limit``
    rows, read lazily (at most CHUNK_ROWS rows materialised at once); bad rows skipped with ``lenient`` are
    counted in ``skips``."""
    if schema is not None and schema not in SCHEMAS:
        raise TraceError(f"unknown schema {schema!r} (known: {', '.join(SCHEMAS)})", path=dataset_id)
    path = Path(dataset_id)
    local = path.exists() or path.suffix in LOCAL_SUFFIXES
    if local and not (path.is_file() or path.is_dir()):
        raise TraceError("no such file", path=dataset_id)
    skips = skips if skips is not None else Skips()
    rows: Iterator[tuple[int | None, Any]]
    if local and path.is_dir():
        rows = ((None, r) for r in _folder_rows(path, split))
        default_schema, model = schema, None
    elif local and path.suffix == ".parquet":
        rows = ((None, r) for r in _parquet_rows(path))
        default_schema, model = schema, None
    elif local:
        rows = _jsonl_rows(path, lenient, skips)
        default_schema, model = schema, None
    else:
        default_schema, model = schema or KNOWN.get(dataset_id, (None, None))[0], KNOWN.get(dataset_id, (None, None))[1]
        rows = ((None, r) for r in _hub_rows(dataset_id, split, schema))
    source = str(path) if local else f"hf:{dataset_id}"
    for index, (line, row) in enumerate(rows):
        if limit is not None and index >= limit:
            break
        try:
            trace = check_trace(row_trace(row, default_schema, index, source, model), path=None)  # issue 23
        except TraceError as e:
            if not lenient:
                where = {"path": source, "line": line} if line else {"path": source}
                raise TraceError(str(e) if line else f"row {index}: {e}", **where) from None
            skips.count += 1
            continue
        yield trace


def trace_notes(trace: Trace) -> list[str]:
    """What reading this row noticed, as ``id: note`` lines."""
    return [f"{trace.id}: {n}" for n in trace.meta.get("notes", ())]


def load(dataset_id: str, *, lenient: bool = False, split: str = "train", limit: int | None = None,
         schema: str | None = None) -> ReadResult:
    """Every trace of ``stream`` in a list, with the skipped count and notes (small sets and tools)."""
    skips = Skips()
    result = ReadResult(list(stream(dataset_id, lenient=lenient, split=split, limit=limit, schema=schema,
                                    skips=skips)))
    result.skipped = skips.count
    result.notes += [n for t in result.traces for n in trace_notes(t)]
    return result
