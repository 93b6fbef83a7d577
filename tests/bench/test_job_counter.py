"""A worker reuses one trace's counter across that trace's jobs (the local executor makes a job per task)."""

from __future__ import annotations

from bench.replay.provider import shipped_counts
from bench.run.executors import Job
from bench.run.runner import _job_counter
from bench.tokens.counter import TokenCounter
from traces.synthetic import generate


def test_jobs_of_one_trace_share_a_counter_and_another_trace_gets_its_own():
    a, b = generate("short", 0), generate("short", 1)
    counts_a = shipped_counts(a, TokenCounter(), model="claude-sonnet-4-5", truth="cl100k")
    counts_b = shipped_counts(b, TokenCounter(), model="claude-sonnet-4-5", truth="cl100k")
    first = _job_counter(Job(a, counts_a, ()))
    first.text("a placeholder every variant writes")
    again = _job_counter(Job(a, counts_a, ()))
    assert again is first and again.tokenized == 1  # the text is not tokenized a second time
    other = _job_counter(Job(b, counts_b, ()))
    assert other is not first and other.truth(b.messages[0]) == counts_b[0]
    assert _job_counter(Job(a, counts_a, ())) is not first  # one slot: the earlier trace's counter is gone
