"""A strategy that raises is reported as failed, never ranked first with $0.00 in the printed table."""

from __future__ import annotations

import textwrap
from pathlib import Path

from bench.run.runner import RunConfig, format_means, format_summary, run


def test_a_raising_strategy_is_listed_last_as_failed(tmp_path: Path) -> None:
    mod = tmp_path / "boom.py"
    mod.write_text(textwrap.dedent("""\
        from dataclasses import dataclass
        from strategies import Strategy


        @dataclass(frozen=True)
        class Boom(Strategy):
            name = "boom"

            def before_call(self, ctx, session):
                raise RuntimeError("kaboom")
    """))
    out = run(RunConfig(traces=("synthetic:short",), strategies=("none", f"{mod}:Boom"), workers=1,
                        executor="local", out=str(tmp_path), name="r"), progress=False)
    summary = out.summary
    assert summary.strategy.tolist()[-1].endswith(":Boom")
    assert summary.strategy.iloc[0] == "none"
    boom = summary.iloc[-1]
    assert boom.errors == 1
    printed = format_summary(summary).splitlines()
    assert "failed" in printed[-1] and "$0.00" not in printed[-1]
    assert out.errors and "kaboom" in out.errors[0][2] and "boom.py:10" in out.errors[0][2]
    means = format_means(out.table).splitlines()
    assert "failed" in means[-1] and means[-1].split()[0].endswith("Boom")
    assert max(map(len, means)) <= 120


def test_the_console_table_is_per_trace_means_within_120_columns(tmp_path: Path) -> None:
    """The verdict quotes "$X per trace"; the printed table says the same number, not a total."""
    import pandas as pd

    rows = [{"trace": f"t{i}", "strategy": s, "calls": 10, "input_tokens": 1e6 * (i + 1), "saving_vs_none": 0.1,
             "peak_context": 50_000, "compactions": 1, "overflows": 0, "cost": c * (i + 1), "retention": 0.9,
             "error": ""} for i in range(4) for s, c in (("none", 2.0), ("a-strategy@with_a_very_long=1,label=2", 1.0))]
    text = format_means(pd.DataFrame(rows))
    lines = text.splitlines()
    assert max(map(len, lines)) <= 120
    assert lines[1].split()[0].startswith("a-strategy@") and "$2.50" in lines[1]  # mean of 1, 2, 3, 4
    assert "$5.00" in lines[2] and "4" in lines[1].split()  # compactions summed over the 4 traces
