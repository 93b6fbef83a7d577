"""A strategy that raises is reported as failed, never ranked first with $0.00 in the printed table."""

from __future__ import annotations

import textwrap
from pathlib import Path

from bench.runner import RunConfig, format_summary, run


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
