"""Trace filters (--min-calls, --min-tokens, --format): dropped before any task is planned, counted
per filter in the notes and run.json, never a silent drop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli.main import main
from bench.run import sources
from bench.run.runner import RunConfig, run
from bench.tokens.counter import TokenCounter
from traces import native
from traces.model import Message, Trace

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa ".split()


def _turns(calls: int, words: int) -> list[tuple[str, str]]:
    text = " ".join(WORDS[i % len(WORDS)] for i in range(words))
    out = [("user", f"Please help. {text}")]
    for k in range(calls):
        out.append(("assistant", f"Step {k}: {text}"))
        if k < calls - 1:
            out.append(("user", f"Go on {k}."))
    return out


def _chat(path: Path, calls: int, words: int) -> None:
    path.write_text(json.dumps({"messages": [{"role": r, "content": t} for r, t in _turns(calls, words)]}),
                    encoding="utf-8")


def _native(folder: Path, name: str, calls: int, words: int) -> None:
    msgs = tuple(Message.text_message(r, t) for r, t in _turns(calls, words))  # type: ignore[arg-type]
    native.write_many([Trace(name, msgs, agent="test")], folder)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Two formats (chat, native), each with a short (2 calls, small) and a long (8 calls, large) trace."""
    d = tmp_path / "traces"
    d.mkdir()
    _chat(d / "chat-short.json", 2, 5)
    _chat(d / "chat-long.json", 8, 400)
    _native(d, "native-short", 2, 5)
    _native(d, "native-long", 8, 400)
    return d


def _kept(folder: Path, f: sources.TraceFilter) -> tuple[list[Trace], sources.StreamNotes]:
    notes = sources.StreamNotes()
    return list(sources.stream([str(folder)], notes=notes, filters=f)), notes


def _tokens(trace: Trace) -> int:
    return sum(TokenCounter().counts(trace.messages))


def test_no_filter_keeps_everything_and_adds_no_note(folder: Path) -> None:
    kept, notes = _kept(folder, sources.TraceFilter())
    assert len(kept) == 4
    assert notes.filtered == {} and not any("filtered" in n for n in notes.notes)


def test_min_calls_alone(folder: Path) -> None:
    kept, notes = _kept(folder, sources.TraceFilter(min_calls=5))
    assert sorted(t.n_calls for t in kept) == [8, 8]
    assert notes.filtered == {"min_calls": 2}
    assert "filtered out 2 of 4 traces: 2 below --min-calls 5" in notes.notes


def test_min_tokens_alone_counts_the_whole_session(folder: Path) -> None:
    every, _ = _kept(folder, sources.TraceFilter())
    sizes = sorted(_tokens(t) for t in every)
    threshold = sizes[1] + 1  # between the two short ones and the two long ones
    assert threshold <= sizes[2]
    kept, notes = _kept(folder, sources.TraceFilter(min_tokens=threshold))
    assert len(kept) == 2 and all(_tokens(t) >= threshold for t in kept)
    assert notes.filtered == {"min_tokens": 2}


def test_format_alone(folder: Path) -> None:
    kept, notes = _kept(folder, sources.TraceFilter.parse(formats=["chat"]))
    assert len(kept) == 2 and all("chat-" in (t.source or "") for t in kept)
    assert notes.filtered == {"format": 2}
    kept, notes = _kept(folder, sources.TraceFilter.parse(formats="chat,native"))
    assert len(kept) == 4 and notes.filtered == {}


def test_filters_combined_count_each_trace_under_its_first_failing_filter(folder: Path) -> None:
    kept, notes = _kept(folder, sources.TraceFilter(min_calls=5, min_tokens=10, formats=("native",)))
    assert [t.id for t in kept] == ["native-long"]
    # the two chat traces fail --format first; of the native ones, the short fails --min-calls
    assert notes.filtered == {"format": 2, "min_calls": 1}
    assert notes.kept == 1


def test_bad_filter_values_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="--format nope: unknown format; known: native"):
        sources.TraceFilter.parse(formats="nope")
    with pytest.raises(ValueError, match="--min-calls"):
        sources.TraceFilter(min_calls=-1)


def test_min_tokens_counts_are_reused_by_the_planner(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A trace --min-tokens counted is not tokenized again: the planner takes the filter's counter."""
    monkeypatch.setenv("COMPACTION_BENCH_CACHE", "off")  # counted here, not read from the count cache
    kept, _ = _kept(folder, sources.TraceFilter(min_tokens=1))
    counter = sources.counter_for(kept[-1])
    before = counter.calls
    counter.counts(kept[-1].messages)
    assert before == len(kept[-1].messages) and counter.calls == before


def test_run_writes_the_filtered_counts_to_run_json(folder: Path, tmp_path: Path) -> None:
    config = RunConfig(traces=(str(folder),), strategies=("none",), out=str(tmp_path / "out"), name="f",
                       executor="local", workers=1, model="claude-sonnet-4-5", min_calls=5, formats=("chat",))
    output = run(config, progress=False)
    assert len(output.table) == 1 and int(output.table.calls.iloc[0]) == 8  # the long chat trace only
    info = json.loads((output.run_dir / "run.json").read_text(encoding="utf-8"))
    assert info["filtered"]["format"] == 2 and info["filtered"]["min_calls"] == 1 and info["filtered"]["kept"] == 1
    assert any(n.startswith("filtered out 3 of 4 traces") for n in output.notes)


def test_cli_prints_the_filtered_counts_and_refuses_when_nothing_is_left(folder: Path, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture) -> None:
    code = main(["run", "--traces", str(folder), "--strategies", "none", "--out", str(tmp_path / "o"),
                 "--name", "x", "--executor", "local", "--no-report", "--quiet", "--min-calls", "100"])
    err = capsys.readouterr().err
    assert code == 2
    assert "no traces to replay" in err and "filtered out 4 of 4 traces: 4 below --min-calls 100" in err


def test_plan_counts_only_the_traces_that_pass_and_says_what_it_dropped(folder: Path, tmp_path: Path) -> None:
    from bench.cli.plan import estimate, format_estimate

    config = RunConfig(traces=(str(folder),), strategies=("none",), out=str(tmp_path / "out"), executor="local",
                       workers=1, formats=("native",))
    e = estimate(config, sample=1)
    assert e.traces == 2 and e.filtered == "filtered out 2 of 4 traces: 2 not --format native"
    assert e.filtered in format_estimate(e)
