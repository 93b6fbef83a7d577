"""The default objective's rules term (``instructions>=0.9``): it binds where traces plant rules and lapses
where none do."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from bench.decide import verdict as bv

RULES_TRACE = "synthetic/instructions/seed0"


def _results(with_rules: bool, *, column: bool = True) -> pd.DataFrame:
    """Four traces, three strategies: ``cheap`` loses the instruction file, ``keeps`` keeps it, ``none``
    overflows. Only ``RULES_TRACE`` (when ``with_rules``) has an ``instructions`` value."""
    rows = []
    rng = np.random.default_rng(0)
    traces = [RULES_TRACE if with_rules else "synthetic/long/seed0", "t1", "t2", "t3"]
    for k, t in enumerate(traces):
        for s, cost, kept in (("none", 3.0, 1.0), ("keeps", 1.2, 1.0), ("cheap", 1.0, 0.2)):
            row = {"trace": t, "strategy": s, "cost": cost + k * 0.1, "retention": 0.8 + rng.normal(0, 0.005),
                   "overflows": 5 if s == "none" and k == 0 else 0, "compactions": 0 if s == "none" else 2,
                   "events": 0 if s == "none" else 2, "peak_context": 150_000, "error": "", "failed": ""}
            if column:
                row["instructions"] = kept if t == RULES_TRACE else math.nan
            rows.append(row)
    return pd.DataFrame(rows)


def test_the_default_objective_carries_the_rules_term() -> None:
    obj = bv.parse_objective(None)
    assert [c.text() for c in obj.constraints] == ["overflows=0", "instructions>=0.9", "retention>=best"]
    assert obj.goal_text == "min-cost"


def test_a_strategy_that_loses_the_rules_is_excluded_where_a_trace_plants_them() -> None:
    v = bv.decide(_results(with_rules=True))
    assert v.recommended == "keeps", v.sentence
    assert v.excluded["cheap"] == ("instructions 20.0%, not >= 90.0%",)
    assert "instruction rules kept at least 90.0%" in v.sentence
    assert v.binding[0] == "instruction rules kept at least 90.0%"  # cheap would be cheaper: the rules term binds


@pytest.mark.parametrize("column", [True, False])
def test_without_rules_the_term_lapses_and_excludes_nobody(column: bool) -> None:
    """A run with no rule-bearing trace (an all-empty column, or none at all) decides as before, with a note."""
    v = bv.decide(_results(with_rules=False, column=column))
    assert v.recommended == "cheap", v.sentence
    assert "cheap" not in v.excluded and "keeps" not in v.excluded
    assert any(n.startswith("instructions>=0.9 not applied: no trace of this run plants instruction rules")
               for n in v.notes), v.notes
    assert v.recommended == bv.decide(_results(with_rules=False, column=column),
                                      "overflows=0,retention>=best,min-cost").recommended


def test_an_explicit_objective_without_the_term_keeps_the_cheap_rule_loser() -> None:
    v = bv.decide(_results(with_rules=True), "overflows=0,retention>=best,min-cost")
    assert v.recommended == "cheap"
