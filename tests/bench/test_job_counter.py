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


def test_a_job_carrying_its_traces_hash_is_not_hashed_again(monkeypatch):
    """The planner hashes each trace once and the job carries the hash: a worker used to hash the trace
    again for every job, only to find the counts kept for it (14 ms a trace of the seeds-1 bench)."""
    import bench.run.runner as runner
    from bench.run.executors import LocalExecutor
    from bench.run.sources import trace_hash

    a = generate("short", 2)
    counts = shipped_counts(a, TokenCounter(), model="claude-sonnet-4-5", truth="cl100k")
    sha = trace_hash(a)
    attached = []
    monkeypatch.setattr(runner, "trace_hash", lambda t: (_ for _ in ()).throw(AssertionError("hashed again")))
    monkeypatch.setattr(runner.count_cache, "attach_texts", lambda counter, key: attached.append(key))
    runner._LAST_COUNTER.clear()
    _job_counter(Job(a, counts, (), sha))
    assert attached == [sha]
    # the local executor splits a job per task and keeps the hash on each part
    seen = list(LocalExecutor(lambda job: [job.sha], ()).results([Job(a, counts, (("k1", None), ("k2", None)), sha)]))
    assert seen == [[sha], [sha]]
    runner._LAST_COUNTER.clear()


def test_a_traces_own_messages_are_held_not_weakly():
    """A worker's counter holds the trace's messages as ``prime`` does (they live as long as the trace): a weak
    entry per message and memo made the counter ~10x slower to build and every look-up call two weak references.
    The counts are the same either way; a copy made afterwards (messages_only) keeps the strong entries."""
    import weakref

    a = generate("short", 3)
    counts = shipped_counts(a, TokenCounter(), model="claude-sonnet-4-5", truth="cl100k")
    counter = _job_counter(Job(a, counts, ()))
    for memo in (counter._truth, counter._given):
        held = [memo[id(m)][0] for m in a.messages]
        assert all(h is m for h, m in zip(held, a.messages, strict=True)), "held weakly"
    assert all(counter.truth(m) == n for m, n in zip(a.messages, getattr(counts, "counts", counts), strict=True))
    copy = counter.messages_only()
    assert not any(isinstance(copy._truth[id(m)][0], weakref.ref) for m in a.messages)
    cut = a.messages[0].__class__(a.messages[0].role, a.messages[0].blocks)
    counter.adopt([cut], [7])  # a strategy's own cut stays weak: it must not outlive its replay
    assert isinstance(counter._truth[id(cut)][0], weakref.ref)
