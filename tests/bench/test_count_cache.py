"""The count cache (bench/tokens/count_cache.py): a trace's message counts are kept in the user cache and
read back without tokenizing; another encoding, other counting code or a damaged file misses (counted
again, the same counts); ``off`` keeps nothing; a second run counts no trace message again. The counts of
texts strategies write are kept per trace and read back the same way; the most recently used versions stay."""

from __future__ import annotations

import os
import shutil
import sys

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
        assert folders == sorted([f"counts-{count_cache.code_version()}", f"counts-{old}"])  # both kept (LRU)
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
    """The run's planner (bench.run.runner.plan_jobs) reads the kept counts, its jobs the written texts'
    (bench.run.runner.run_job): with the tokenizer's batch count refused and the counter's ``count`` calls
    too, the same run gives the same results."""
    from bench.run.runner import RunConfig, run

    config = RunConfig(traces=("synthetic:short",), strategies=("none", "hybrid"), executor="local",
                       out=str(tmp_path / "out"), detail="summary", csv="no")
    first = run(config, progress=False).table
    assert list(root.glob("counts-*/*.counts"))
    assert list(root.glob("counts-*/*.texts"))  # the texts the strategies wrote, counted once
    _refuse(monkeypatch)
    real = Tokenizer.count

    def count(self, text):  # the summarizer's own line sizes may still be counted; the counter's none
        assert "bench/tokens/counter.py" not in sys._getframe(1).f_code.co_filename, "a written text again"
        return real(self, text)

    monkeypatch.setattr(Tokenizer, "count", count)
    second = run(RunConfig(**{**config.__dict__, "name": "again"}), progress=False).table
    cols = [c for c in first.columns if c not in ("key",)]
    assert first[cols].equals(second[cols])


TEXTS = ("a summary the strategy wrote", "[output cut: 1,234 lines]\n" * 3, "line of a log 42\n" * 400, "é ✓ 😀")
"""Written texts: short, repeated, long (counted by ``safe_split`` parts) and not ASCII."""


class _Counting(Tokenizer):
    """A subclass (counts like the plain one): the cache must not keep its counts."""

    def count(self, text):
        return super().count(text)


@pytest.fixture
def counted(monkeypatch):
    """The plain ``Tokenizer.count`` (the class stays the plain one, so its counts are kept), each call
    recorded in the returned list."""
    calls = []
    real = Tokenizer.count

    def count(self, text):
        calls.append(text)
        return real(self, text)

    monkeypatch.setattr(Tokenizer, "count", count)
    return calls


def _texts_counter(sha, tokenizer=None):
    counter = TokenCounter(tokenizer)
    count_cache.attach_texts(counter, sha)
    return counter


def test_a_written_texts_count_is_kept_and_reused_by_another_counter(root, counted):
    plain = [TokenCounter().text(t) for t in TEXTS]
    counted.clear()
    first = _texts_counter("t1")
    assert first.kept == {} and [first.text(t) for t in TEXTS] == plain
    assert len(counted) > len(TEXTS)  # the long one by parts
    assert count_cache.keep_texts(first) == len(TEXTS) and count_cache.keep_texts(first) == 0  # nothing new
    (path,) = root.glob("counts-*/*.texts")
    assert len(path.read_bytes()) == 4 + 24 * len(TEXTS) + 16
    counted.clear()
    second = _texts_counter("t1")
    assert [second.text(t) for t in TEXTS] == plain and counted == []  # not tokenized again
    assert second.tokenized == 0 and count_cache.keep_texts(second) == 0
    other = _texts_counter("t2")  # another trace's file: counted there
    assert other.text(TEXTS[0]) == plain[0] and counted == [TEXTS[0]]


def test_keys_are_stable_and_the_counts_exact(root):
    from bench.tokens.counter import text_key

    assert text_key("abc") == bytes.fromhex("cf4ab791c62b8d2b2109c90275287816")  # blake2b-128, any process
    assert text_key("\ud800") != text_key("")  # a lone surrogate is keyed, not refused
    first = _texts_counter("t1")
    long = "x = 1\n" * 5000
    assert first.text(long) == Tokenizer().count(long)
    count_cache.keep_texts(first)
    assert _texts_counter("t1").kept == {text_key(long): Tokenizer().count(long)}


@pytest.mark.parametrize("damage", ["truncate", "flip", "magic", "empty"])
def test_a_damaged_texts_file_is_ignored_and_counted_again(root, counted, damage):
    plain = [TokenCounter().text(t) for t in TEXTS]
    first = _texts_counter("t1")
    [first.text(t) for t in TEXTS]
    count_cache.keep_texts(first)
    (path,) = root.glob("counts-*/*.texts")
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        data = data[:-1]
    elif damage == "flip":  # a count changed: the checksum refuses it
        data[4 + 16 * len(TEXTS)] ^= 1
    elif damage == "magic":
        data[:4] = b"cbt0"
    else:
        data = bytearray()
    path.write_bytes(bytes(data))
    counted.clear()
    again = _texts_counter("t1")
    assert again.kept == {}
    assert [again.text(t) for t in TEXTS] == plain and len(counted) > len(TEXTS)
    assert count_cache.keep_texts(again) == len(TEXTS)  # written whole again
    assert len(_texts_counter("t1").kept) == len(TEXTS)


def test_concurrent_writers_keep_both_writers_texts(root):
    one, two = _texts_counter("t1"), _texts_counter("t1")  # two workers of one trace, both loaded nothing
    one.text("only the first writer's")
    two.text("only the second writer's")
    count_cache.keep_texts(one)
    count_cache.keep_texts(two)  # last writer: merges the file as it is now with its own
    kept = _texts_counter("t1").kept
    assert len(kept) == 2 and sorted(kept.values()) == sorted([one.text("only the first writer's"),
                                                               two.text("only the second writer's")])
    assert not list(root.glob("counts-*/.*.tmp"))


def test_the_cap_keeps_what_the_counter_used(root, monkeypatch):
    monkeypatch.setattr(count_cache, "MAX_TEXTS", 3)
    first = _texts_counter("t1")
    for t in ("a", "b", "c"):
        first.text(t)
    count_cache.keep_texts(first)
    second = _texts_counter("t1")
    second.text("c")  # read from the file
    second.text("d")  # new: the file would hold 4
    count_cache.keep_texts(second)
    from bench.tokens.counter import text_key

    kept = _texts_counter("t1").kept
    assert len(kept) == 3 and text_key("c") in kept and text_key("d") in kept


def test_off_and_a_subclass_keep_no_texts(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPACTION_BENCH_CACHE", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    off = _texts_counter("t1")
    assert off.kept is None and off.text("x") == 1 and count_cache.keep_texts(off) == 0
    monkeypatch.setenv("COMPACTION_BENCH_CACHE", str(tmp_path / "c"))
    sub = _texts_counter("t1", _Counting())  # a subclass may count otherwise: not kept
    assert sub.kept is None and sub.text("x") == 1 and count_cache.keep_texts(sub) == 0
    assert not list(tmp_path.rglob("*.texts"))


def _use(monkeypatch, version, sha, trace):
    monkeypatch.setattr(count_cache, "code_version", lambda: version)
    return count_cache.prime(TokenCounter(), sha, trace.messages)


def test_two_versions_used_alternately_stay_warm_and_a_fourth_evicts_the_oldest(root, trace, monkeypatch):
    sha = trace_hash(trace)
    assert _use(monkeypatch, "v1", sha, trace) is False
    assert _use(monkeypatch, "v2", sha, trace) is False
    for _ in range(2):  # two checkouts used alternately: both warm every time
        assert _use(monkeypatch, "v1", sha, trace) is True
        assert _use(monkeypatch, "v2", sha, trace) is True
    assert _use(monkeypatch, "v3", sha, trace) is False
    assert _use(monkeypatch, "v1", sha, trace) is True  # v1 used last: v2 is now the least recent
    now = os.stat(root / "counts-v1").st_mtime
    for i, v in enumerate(("v2", "v3", "v1")):  # make the order plain whatever the clock's resolution
        os.utime(root / f"counts-{v}", (now + i, now + i))
    assert _use(monkeypatch, "v4", sha, trace) is False
    assert sorted(p.name for p in root.glob("counts-*")) == ["counts-v1", "counts-v3", "counts-v4"]
    assert _use(monkeypatch, "v2", sha, trace) is False  # evicted: counted again
