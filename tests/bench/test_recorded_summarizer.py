"""The `recorded` summarizer: a real trace's own compaction summaries stand in for a generated one."""

from __future__ import annotations

import pandas as pd

from bench.cli.main import main
from bench.summarizers import SummaryRequest, build
from bench.tokens.counter import TokenCounter
from traces.formats import read_path
from traces.model import Message, RecordedCompaction, Trace


def _trace(compactions: tuple[RecordedCompaction, ...]) -> Trace:
    msgs = tuple(Message.text_message("user" if i % 2 == 0 else "assistant", f"message {i}") for i in range(10))
    return Trace("t", msgs, agent="claude-code", compactions=compactions)


def test_each_request_gets_the_first_summary_written_after_its_newest_message():
    trace = _trace((RecordedCompaction(4, summary="first summary"), RecordedCompaction(8, summary="second summary")))
    s = build("recorded", trace=trace)

    def ask(upto: int) -> str:
        return s.summarize(SummaryRequest(trace.messages[:upto], "summarize", 1000)).text

    assert ask(3) == "first summary"  # newest message 2: the compaction at 4 came next
    assert ask(5) == "second summary"  # newest message 4 is the first compaction's point: the next one
    assert ask(10) == "second summary"  # past the last recorded compaction: the last one
    rewritten = SummaryRequest((Message.text_message("user", "a copy the strategy made"),), "summarize", 1000)
    assert s.summarize(rewritten).text == "first summary"  # nothing recognisable: the first
    assert s.summarize(rewritten).model == "recorded:claude-code"


def test_a_trace_without_recorded_summaries_falls_back_to_extractive_and_says_so():
    trace = _trace(())
    summary = build("recorded", trace=trace).summarize(SummaryRequest(trace.messages, "summarize", 1000))
    assert summary.model == "extractive (no recorded summary)"
    assert "## Task" in summary.text and "message 0" in summary.text


def test_claude_code_fidelity_replay_uses_the_real_summary(shared_traces, tmp_path):
    """Driven by the recorded usage, claude-code compacts where the real agent did; with `recorded`
    its summary is the real one, so the sizes after compaction differ only by what it kept."""
    path = shared_traces / "claude-code__marot-spotter" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    trace = read_path(path).traces[0]
    recorded = trace.compactions[0].summary
    from bench.scoring.fidelity import matching_strategy

    code = main(["run", "--traces", str(path), "--strategies", matching_strategy(trace), "--summarizer", "recorded",
                 "--workers", "1", "--name", "r", "--out", str(tmp_path), "--quiet", "--no-report"])
    assert code == 0
    fidelity = pd.read_csv(tmp_path / "r" / "fidelity.csv").iloc[0]
    assert fidelity.replayed_summary_tokens == fidelity.recorded_summary_tokens == TokenCounter().text(recorded)
