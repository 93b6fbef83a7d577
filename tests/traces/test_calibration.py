"""The fitted distributions: the generator follows them, and re-fitting the real traces gives them back."""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from random import Random

import pytest

from traces.calibration import CATEGORIES, FITTED, LogNormal, category, fit, observations
from traces.synthetic import generate
from traces.synthetic_calls import Outputs


def test_lognormal_quantiles_and_fit_by_hand():
    d = LogNormal(100.0, 1.0)
    assert d.quantile(0.5) == pytest.approx(100.0)
    assert d.quantile(0.9) == pytest.approx(100 * math.exp(1.2815516), rel=1e-6)  # 360.2
    fitted = LogNormal.fit([1.0, math.e ** 2])  # logs 0 and 2: mean 1, population std 1
    assert fitted == LogNormal(2.7, 1.0)


def test_tools_fall_in_categories():
    assert [category(t) for t in ("Read", "exec_command", "apply_patch", "Glob", "WebFetch", "mcp__db__sql")] == [
        "read", "bash", "edit", "search", "web", "other"]
    assert sum(FITTED.tool_mix.values()) == pytest.approx(1.0, abs=0.005)


@pytest.mark.parametrize("cat", CATEGORIES)
def test_generated_output_sizes_follow_the_fit(cat):
    """Median and p90 of the generator's output sizes are within 10% of the fitted log-normal's.

    Every output is cut to exactly the size drawn for it (checked on 300 real calls), so the size
    distribution is the drawn one, sampled 20,000 times (building 20,000 outputs would take ~20 s).
    """
    out = Outputs(Random(11), FITTED, "demo", max_chars=10**7, reread=0.0)
    drawn: list[int] = []
    draw = out.size
    out.size = lambda c: drawn.append(draw(c)) or drawn[-1]  # type: ignore[method-assign]
    made = [len(out.call(cat).output) for _ in range(300)]
    assert made == drawn
    sizes = sorted(draw(cat) for _ in range(20_000))
    want = FITTED.output_chars[cat]
    assert statistics.median(sizes) == pytest.approx(want.quantile(0.5), rel=0.10)
    assert sizes[int(0.9 * len(sizes))] == pytest.approx(want.quantile(0.9), rel=0.10)


def test_a_calibrated_session_has_the_real_tool_mix():
    t = generate("long", 0)
    cats = Counter(category({"read_file": "Read", "edit_file": "Edit", "write": "Write", "bash": "Bash",
                             "grep": "Grep", "glob": "Glob", "web_fetch": "WebFetch"}.get(u.name, u.name))
                   for m in t.messages for u in m.tool_uses)
    total = sum(cats.values())
    assert cats["bash"] / total == pytest.approx(FITTED.tool_mix["bash"], abs=0.08)
    assert cats["edit"] / total == pytest.approx(FITTED.tool_mix["edit"], abs=0.06)


def test_pace_follows_the_fitted_step_gaps():
    t = generate("short", 0)
    gaps = [b.timestamp - a.timestamp for a, b in zip(t.messages, t.messages[1:], strict=False)
            if a.is_tool_result and b.role == "assistant"]
    assert FITTED.step_seconds.median * 0.6 < statistics.median(gaps) < FITTED.step_seconds.median * 1.6


def test_codex_redacted_lengths_are_read(tmp_path):
    """Codex rollouts keep the original length in the redaction marker; that is the size used."""
    folder = tmp_path / "codex__x"
    folder.mkdir()
    lines = [
        {"timestamp": "2026-02-23T11:40:42.096Z", "type": "response_item",
         "payload": {"type": "function_call", "name": "exec_command", "arguments": "[REDACTED_ARGUMENTS len=9 sha=1]",
                     "call_id": "c1"}},
        {"timestamp": "2026-02-23T11:40:42.316Z", "type": "response_item",
         "payload": {"type": "function_call_output", "call_id": "c1", "output": "[REDACTED_OUTPUT len=5030 sha=2]"}},
        {"timestamp": "2026-02-23T11:40:52.316Z", "type": "response_item",
         "payload": {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c2", "input": "x"}},
        {"timestamp": "2026-02-23T11:40:53.000Z", "type": "response_item",
         "payload": {"type": "custom_tool_call_output", "call_id": "c2", "output": "Done!"}},
    ]
    (folder / "rollout-1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    calls, timing = observations(tmp_path)
    assert [(c.source, c.category, c.chars) for c in calls] == [("codex", "bash", 5030), ("codex", "edit", 5)]
    assert timing.step_gaps == [pytest.approx(10.22, abs=1e-3)]  # 52.316 - 42.096


def test_refitting_the_real_traces_gives_the_stored_constants(shared_traces):
    assert fit(shared_traces) == FITTED


def test_conditioned_draws_stay_in_range_and_follow_the_conditioned_quantiles():
    """What the error and config needles are sized with: the fit conditioned on a size range."""
    bash, rng = FITTED.output_chars["bash"], Random(5)
    normal = statistics.NormalDist()
    lo, hi = 2_000.0, bash.quantile(0.97)
    sizes = sorted(bash.sample_within(rng, lo, hi) for _ in range(20_000))
    assert lo <= sizes[0] and sizes[-1] <= hi
    f_lo = normal.cdf(math.log(lo / bash.median) / bash.sigma)
    assert statistics.median(sizes) == pytest.approx(bash.quantile((f_lo + 0.97) / 2), rel=0.05)
    above = [bash.sample_within(rng, lo) for _ in range(2_000)]
    assert min(above) >= lo and max(above) > hi  # no ceiling: the tail stays
    assert bash.scaled(6.0).quantile(0.9) == pytest.approx(6.0 * bash.quantile(0.9))
