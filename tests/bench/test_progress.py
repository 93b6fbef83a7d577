"""The progress bars: the replay bar's total is the run's task count from its first tick (it grew as
traces streamed in, so the bar ran backwards), and the report phase has a bar of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

import bench.run.runner
from bench.run.runner import RunConfig, run


class _Bars:
    """Every bar the code under test opens: its total when opened and at each update."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, module) -> None:
        self.opened: list[dict] = []
        from tqdm import tqdm as real

        bars = self

        class Recording(real):
            def __init__(self, *args, **kwargs) -> None:
                kwargs["disable"] = False
                kwargs["file"] = open("/dev/null", "w")  # noqa: SIM115 (closed with the bar's file at exit)
                super().__init__(*args, **kwargs)
                self.seen = {"desc": self.desc, "opened": self.total, "at_update": []}
                bars.opened.append(self.seen)

            def update(self, n=1):
                self.seen["at_update"].append((self.total, self.n + n))
                return super().update(n)

        monkeypatch.setattr(module, "tqdm", Recording)


def _config(tmp_path: Path, strategies: tuple[str, ...]) -> RunConfig:
    return RunConfig(traces=("synthetic:short",), seeds=4, strategies=strategies, workers=1, executor="local",
                     out=str(tmp_path), name="p", csv="no")


def test_the_replay_bar_knows_its_total_before_the_first_task(tmp_path: Path, monkeypatch) -> None:
    bars = _Bars(monkeypatch, bench.run.runner)
    out = run(_config(tmp_path, ("none", "codex", "opencode")), progress=True)
    (bar,) = [b for b in bars.opened if b["desc"] == "replaying"]
    assert out.tasks == 12
    assert bar["opened"] == 12
    assert bar["at_update"] and {total for total, _ in bar["at_update"]} == {12}
    assert bar["at_update"][-1][1] == 12
    done = [n for _, n in bar["at_update"]]
    assert done == sorted(done)  # never backwards


def test_a_resumed_run_counts_only_what_is_left(tmp_path: Path, monkeypatch) -> None:
    run(_config(tmp_path, ("none", "codex")), progress=False)
    bars = _Bars(monkeypatch, bench.run.runner)
    out = run(_config(tmp_path, ("none", "codex", "opencode")), progress=True)
    (bar,) = [b for b in bars.opened if b["desc"] == "replaying"]
    assert out.resumed == 8
    assert bar["opened"] == 4 and bar["at_update"][-1] == (4, 4)


def test_a_shard_counts_only_its_own_traces(tmp_path: Path, monkeypatch) -> None:
    bars = _Bars(monkeypatch, bench.run.runner)
    config = _config(tmp_path, ("none", "codex"))
    from dataclasses import replace

    out = run(replace(config, shard="0/2"), progress=True)
    (bar,) = [b for b in bars.opened if b["desc"] == "replaying"]
    assert bar["opened"] == out.tasks - out.resumed
