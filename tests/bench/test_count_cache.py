"""The count cache (bench/tokens/count_cache.py): a trace's message counts are kept in the user cache and
read back without tokenizing; another encoding, other counting code or a damaged file misses (counted
again, the same counts); ``off`` keeps nothing; a second run counts no trace message again."""

from __future__ import annotations

import shutil

import pytest

from bench.run.sources import trace_hash
from bench.tokens import count_cache
from bench.tokens.counter import TokenCounter, Tokenizer
from traces.synthetic import generate

SCENARIO = "short@tokens=20000"


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPACTION_BENCH_CACHE", str(tmp_path / "c"))
    return tmp_path / "c"


@pytest.fixture
def trace():
    return generate(SCENARIO, seed=3)


def _refuse(monkeypatch):
    def refuse(self, texts):
        raise AssertionError("tokenized again")

    monkeypatch.setattr(Tokenizer, "count_many", refuse)


def test_kept_counts_are_read_back_without_tokenizing(root, trace, monkeypatch):
    fresh = TokenCounter().counts(trace.messages)
    sha = trace_hash(trace)
    assert count_cache.prime(TokenCounter(), sha, trace.messages) is False  # cold: counted, kept
    (kept,) = root.glob("counts-*/*.counts")
    assert kept.parent.name == f"counts-{count_cache.code_version()}"
    _refuse(monkeypatch)
    warm = TokenCounter()
    assert count_cache.prime(warm, sha, trace.messages) is True
    assert warm.counts(trace.messages) == fresh and warm.calls == 0
    with pytest.raises(AssertionError):  # another trace is another key
        count_cache.prime(TokenCounter(), sha[::-1], trace.messages)


def test_another_encoding_misses(root, trace, monkeypatch):
    sha = trace_hash(trace)
    count_cache.prime(TokenCounter(), sha, trace.messages)
    o200k = TokenCounter(Tokenizer("o200k_base"))
    assert count_cache.prime(o200k, sha, trace.messages) is False
    assert o200k.counts(trace.messages) == TokenCounter(Tokenizer("o200k_base")).counts(trace.messages)
    assert o200k.counts(trace.messages) != TokenCounter().counts(trace.messages)
    assert len(list(root.glob("counts-*/*.counts"))) == 2


def test_changed_counting_code_misses(root, trace, tmp_path, monkeypatch):
    sha = trace_hash(trace)
    count_cache.prime(TokenCounter(), sha, trace.messages)
    old = count_cache.code_version()
    edited = tmp_path / "src"
    real = count_cache._module_dir

    def moved(package):
        where = edited / package
        if not where.exists():
            shutil.copytree(real(package), where)
            if package == "bench.tokens":
                counter = where / "counter.py"
                counter.write_text(counter.read_text() + "\n# an edit\n")
        return where

    monkeypatch.setattr(count_cache, "_module_dir", moved)
    count_cache.code_version.cache_clear()
    try:
        assert count_cache.code_version() != old
        assert count_cache.prime(TokenCounter(), sha, trace.messages) is False
        folders = sorted(p.name for p in root.glob("counts-*"))
        assert folders == [f"counts-{count_cache.code_version()}"]  # the old version's folder is gone
    finally:
        count_cache.code_version.cache_clear()


def test_a_damaged_file_is_counted_again(root, trace):
    sha = trace_hash(trace)
    fresh = TokenCounter().counts(trace.messages)
    count_cache.prime(TokenCounter(), sha, trace.messages)
    (path,) = root.glob("counts-*/*.counts")
    path.write_bytes(path.read_bytes()[:-8])  # one count short
    again = TokenCounter()
    assert count_cache.prime(again, sha, trace.messages) is False
    assert again.counts(trace.messages) == fresh
    assert len(path.read_bytes()) == 4 + 8 * len(trace.messages)


def test_off_and_a_custom_tokenizer_keep_nothing(tmp_path, trace, monkeypatch):
    monkeypatch.setenv("COMPACTION_BENCH_CACHE", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert count_cache.prime(TokenCounter(), trace_hash(trace), trace.messages) is False
    monkeypatch.setenv("COMPACTION_BENCH_CACHE", str(tmp_path / "c"))

    class Halved(Tokenizer):
        def count_many(self, texts):
            return [n // 2 for n in super().count_many(texts)]

    assert count_cache.prime(TokenCounter(Halved()), trace_hash(trace), trace.messages) is False
    assert not list(tmp_path.rglob("*.counts"))


def test_a_second_run_counts_no_trace_message_again(root, tmp_path, monkeypatch):
    """The run's planner (bench.run.runner.plan_jobs) reads the kept counts: with the tokenizer's batch
    count refused, the same run gives the same results."""
    from bench.run.runner import RunConfig, run

    config = RunConfig(traces=("synthetic:short",), strategies=("none", "codex"), executor="local",
                       out=str(tmp_path / "out"), detail="summary", csv="no")
    first = run(config, progress=False).table
    assert list(root.glob("counts-*/*.counts"))
    _refuse(monkeypatch)
    second = run(RunConfig(**{**config.__dict__, "name": "again"}), progress=False).table
    cols = [c for c in first.columns if c not in ("key",)]
    assert first[cols].equals(second[cols])
