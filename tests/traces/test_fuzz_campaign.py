"""The fuzz campaign's sample in the test suite (`make fuzz` runs the full one): ≥ 200 mutated variants
per registered format, every one read, written natively and replayed; no crash, hang or unnamed error."""

from __future__ import annotations

import random

import pytest

import traces.formats._common as common
from tests.traces import fuzz_campaign as fc
from traces.formats import READERS

SAMPLE = 200
RUN_EVERY = 50
"""The sample `run`s 4 of its variants per format (when accepted; about a second in all); `make fuzz` every one."""


def test_every_registered_format_has_a_seed(shared_traces):
    found, skipped = fc.seeds()
    assert skipped == [] and set(found) == set(READERS)


def test_mutations_change_the_seed_and_every_family_is_used():
    (seed,) = fc.FIXTURES["native"]()
    data = seed.files[seed.entry]
    used = set()
    for _, _, family, rng in fc.variants([seed], 4 * len(fc.FAMILIES), random.Random(0)):
        used.add(family)
        assert fc._mutate_bytes(data, family, rng, 1000) != data or family in ("delete-lines", "missing-key")
    assert used == set(fc.FAMILIES)


def test_the_campaign_catches_a_crash(monkeypatch, tmp_path):
    """The harness itself: an importer that raises a bare KeyError is counted as a crash, not hidden."""
    from traces import native

    def broken(path, *, lenient=False):
        raise KeyError("role")

    monkeypatch.setattr(native, "read_file", broken)
    tallies, _ = fc.campaign(3, workers=0, formats=["native"], root=tmp_path, out=lambda s: None)
    assert tallies["native"].outcomes["crash"] == 3 and "KeyError" in tallies["native"].failures[0]


@pytest.mark.parametrize("fmt", list(READERS))
def test_sample_has_no_crash_hang_or_unnamed_error(monkeypatch, fmt):
    monkeypatch.setattr(common, "MAX_STRING", 64 * 1024)  # the huge-string family crosses it cheaply
    tallies, skipped = fc.campaign(SAMPLE, workers=0, formats=[fmt], max_string=64 * 1024, per_format=1,
                                   seed_bytes=6_000, run_every=RUN_EVERY, out=lambda s: None)
    if fmt not in tallies:
        pytest.skip("; ".join(skipped))
    t = tallies[fmt]
    assert sum(t.outcomes.values()) == SAMPLE
    assert not t.failures, "\n".join(t.failures[:10])
    assert t.outcomes["accepted"] > 0 and t.outcomes["clear error"] > 0  # the mutations both pass and bite
