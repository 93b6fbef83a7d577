"""The trace cache (traces/cache.py): a kept synthetic trace is the generated one, read back
without generating; a damaged file is regenerated; ``off`` keeps nothing; a new generator version
replaces the old folder."""

from __future__ import annotations

import pytest

import traces.synthetic
from traces import cache

SCENARIO = "short@tokens=20000"


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPACTION_BENCH_CACHE", str(tmp_path / "c"))
    return tmp_path / "c"


def test_kept_trace_is_the_generated_one_and_is_read_back_without_generating(root, monkeypatch):
    fresh = traces.synthetic.generate(SCENARIO, seed=1)
    assert cache.generated(SCENARIO, 1) == fresh
    kept = list(root.glob("synthetic-*/*.pickle"))
    assert len(kept) == 1 and kept[0].parent.name == f"synthetic-{cache.generator_version()}"

    def refuse(*a, **k):
        raise AssertionError("generated again")

    monkeypatch.setattr(traces.synthetic, "generate", refuse)
    assert cache.generated(SCENARIO, 1) == fresh
    with pytest.raises(AssertionError):  # another seed is another key
        cache.generated(SCENARIO, 2)


def test_a_damaged_file_is_regenerated(root):
    fresh = cache.generated(SCENARIO, 0)
    (path,) = root.glob("synthetic-*/*.pickle")
    path.write_bytes(b"not a pickle")
    assert cache.generated(SCENARIO, 0) == fresh
    assert path.read_bytes() != b"not a pickle"


def test_off_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPACTION_BENCH_CACHE", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_root() is None
    cache.generated(SCENARIO, 0)
    assert not list(tmp_path.rglob("*.pickle"))


def test_a_new_generator_version_replaces_the_old_folder(root):
    old = root / "synthetic-0000000000000000"
    old.mkdir(parents=True)
    (old / "x.pickle").write_bytes(b"")
    cache.generated(SCENARIO, 0)
    assert not old.exists() and list(root.glob(f"synthetic-{cache.generator_version()}/*.pickle"))
