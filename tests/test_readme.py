"""The README stays true: its metric glossary and its example strategy are the real ones."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from bench.scoring.metrics import glossary
from tests.bench.test_replay import growing_trace
from tests.strategies.test_contract import CONFIG, check_strategy

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_glossary_matches_the_metric_specs():
    block = README.split("<!-- glossary")[1].split("<!-- /glossary -->")[0]
    assert glossary() in block


def test_the_example_strategy_runs_as_a_plugin(tmp_path, monkeypatch):
    code = re.search(r"## Add a strategy.*?```python\n(.*?)```", README, re.S).group(1)
    assert len(code.strip().splitlines()) <= 26
    (tmp_path / "readme_example.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import strategies
        from bench.replay.loop import replay
        from bench.tokens.counter import TokenCounter

        s = strategies.build("readme_example:ClearOldOutputs@keep=2")
        result = replay(growing_trace(14, 2500), s, CONFIG, counter=TokenCounter())
        prunes = [e for e in result.events if e.kind == "prune"]
        assert prunes and all(e.tokens_after < e.tokens_before for e in prunes)
        check_strategy("readme_example:ClearOldOutputs", growing_trace(14, 2500))
    finally:
        sys.modules.pop("readme_example", None)
