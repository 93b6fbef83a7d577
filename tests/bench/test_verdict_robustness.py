"""bench.run.robustness: does the verdict hold under price, weighting and scenario changes, and the
summarizer gap on a hand-built real trace with a recorded summary."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from bench.decide import verdict as bv
from bench.run import robustness as rb
from reports import decision

RATES = {"uncached": 3.0, "cache_read": 0.3, "cache_write": 3.75, "output_tokens": 15.0}
"""USD per million tokens (Sonnet-like)."""


def _calls(spec: dict[str, list[tuple[int, int, int, int]]], traces: list[str]) -> pd.DataFrame:
    """Calls of each strategy on each trace, (uncached, cache_read, cache_write, output) per call, priced at RATES."""
    rows = []
    for t in traces:
        for s, calls in spec.items():
            for i, (u, r, w, o) in enumerate(calls):
                cost = (u * RATES["uncached"] + r * RATES["cache_read"] + w * RATES["cache_write"]
                        + o * RATES["output_tokens"]) / 1e6
                rows.append({"trace": t, "strategy": s, "call": i, "kind": "agent", "uncached": u, "cache_read": r,
                             "cache_write": w, "output_tokens": o, "prompt_tokens": u + r + w, "cost": cost})
    return pd.DataFrame(rows)


def _results(calls: pd.DataFrame) -> pd.DataFrame:
    g = calls.groupby(["trace", "strategy"], sort=False)
    out = g.cost.sum().reset_index()
    return out.assign(retention=1.0, overflows=0, events=1, calls=g.size().to_numpy(), peak_context=1000, error="",
                      failed="")


# "prompt" spends on input, "talker" on output: at list prices the talker is cheaper by a little.
PROMPT = [(170_000, 0, 20_000, 1_000), (10_000, 50_000, 5_000, 2_000), (5_000, 80_000, 1_000, 1_500)]
TALKER = [(20_000, 0, 10_000, 14_000), (2_000, 20_000, 2_000, 12_000), (1_000, 30_000, 500, 12_500)]


def _cost(calls: list[tuple[int, int, int, int]], output_factor: float = 1.0) -> float:
    return sum(u * 3 + r * 0.3 + w * 3.75 + o * 15 * output_factor for u, r, w, o in calls) / 1e6


def test_the_constructed_strategies_are_what_the_test_says() -> None:
    assert _cost(TALKER) < _cost(PROMPT) < _cost(TALKER, 1.2)  # the talker wins at list price, not at output +20%


def test_the_winner_changes_under_output_plus_20_percent_and_is_said_so() -> None:
    traces = [f"t{i}" for i in range(4)]
    calls = _calls({"prompt": PROMPT, "talker": TALKER}, traces)
    results = _results(calls)
    v = bv.decide(results, "min-cost")
    assert v.recommended == "talker"
    r = rb.analyse(None, results, v, objective="min-cost", calls=calls, replay=False, resamples=200)
    by = {c.setting: c for c in r.changes if c.kind == "price"}
    assert by["output +20%"].winner == "prompt" and not by["output +20%"].same
    assert by["output −20%"].winner == "talker" and by["output −20%"].same
    assert by["input +20%"].same  # dearer input only widens the talker's lead
    assert not r.holds and "price output +20%" in r.to_dict()["flips"]
    line = next(x for x in r.lines() if x.strip().startswith("prices"))
    assert "output +20% → prompt" in line and "changes" in line
    assert r.headline() == "the choice changes under 3 of 10 changes"


def test_a_clear_winner_holds_under_every_price_change() -> None:
    cheap = [(u // 4, r // 4, w // 4, o // 4) for u, r, w, o in TALKER]
    calls = _calls({"prompt": PROMPT, "cheap": cheap}, [f"t{i}" for i in range(4)])
    results = _results(calls)
    v = bv.decide(results, "min-cost")
    r = rb.analyse(None, results, v, objective="min-cost", calls=calls, replay=False, resamples=200)
    prices = [c for c in r.changes if c.kind == "price"]
    assert len(prices) == 8 and all(c.same and c.winner == "cheap" for c in prices)
    assert r.holds


def test_price_components_reproduce_the_stored_dollars_and_name_a_trace_they_cannot() -> None:
    calls = _calls({"prompt": PROMPT, "talker": TALKER}, ["t0", "t1"])
    usd, bad = rb.price_components(calls)
    assert bad == []
    row = usd[(usd.trace == "t0") & (usd.strategy == "talker")].iloc[0]
    assert row.usd_output_tokens == pytest.approx(sum(c[3] for c in TALKER) * 15 / 1e6)
    assert row[[c for c in usd if c.startswith("usd_")]].sum() == pytest.approx(_cost(TALKER))
    # a session that switched model half-way: one set of rates cannot reproduce its dollars
    switched = calls.copy()
    switched.loc[(switched.trace == "t1") & (switched.call == 2), "cost"] *= 2
    usd, bad = rb.price_components(switched)
    assert bad == ["t1"] and set(usd.trace) == {"t0"}


def test_repricing_moves_only_the_scaled_component() -> None:
    calls = _calls({"prompt": PROMPT, "talker": TALKER}, ["t0"])
    results = _results(calls)
    usd, _ = rb.price_components(calls)
    out = rb.repriced(results, usd, {"output_tokens": 1.2})
    talker = out[out.strategy == "talker"].cost.iloc[0]
    assert talker == pytest.approx(_cost(TALKER, 1.2))


def test_per_scenario_breakdown_on_a_two_scenario_run() -> None:
    """Scenario a favours "x", scenario b favours "y"; pooled, x wins. The breakdown says so, with
    the choice − runner-up difference measured within each scenario's seeds."""
    rows = []
    for scenario, x_cost, y_cost in (("a", 1.0, 2.0), ("b", 1.5, 1.2)):
        for seed in range(3):
            t = f"synthetic/{scenario}/seed{seed}"
            for s, c in (("x", x_cost + seed * 0.01), ("y", y_cost + seed * 0.02)):
                rows.append({"trace": t, "strategy": s, "cost": c, "retention": 1.0, "overflows": 0, "events": 1,
                             "error": "", "failed": ""})
    results = pd.DataFrame(rows)
    v = bv.decide(results, "min-cost")
    assert (v.recommended, v.runner_up) == ("x", "y")
    r = rb.analyse(None, results, v, objective="min-cost", replay=False, resamples=200)
    assert r.group_by == "scenario"
    groups = {g["group"]: g for g in r.groups}
    assert groups["a"]["winner"] == "x" and groups["a"]["same"]
    assert groups["b"]["winner"] == "y" and not groups["b"]["same"]
    assert groups["a"]["n"] == groups["b"]["n"] == 3
    assert groups["a"]["mean_diff"] == pytest.approx(1.01, abs=1e-9)  # y − x within a
    assert groups["b"]["mean_diff"] < 0 and groups["b"]["significant"]
    assert r.to_dict()["group_flips"] == ["b"] and not r.to_dict()["holds"]
    assert "by scenario, decided alone: a (3) → x; b (3) → y" in "\n".join(r.lines())
    page = decision.robustness_html(rb.attach(v, r))
    assert "<th>scenario</th>" in page and "seeds" in page


def test_weighting_changes_are_recomputed() -> None:
    """A long session favours y, many short ones favour x: equal weight picks x, weighting by calls picks y."""
    rows = []
    for i in range(5):
        rows += [{"trace": f"s{i}", "strategy": "x", "cost": 1.0, "calls": 2},
                 {"trace": f"s{i}", "strategy": "y", "cost": 1.2, "calls": 2}]
    rows += [{"trace": "long", "strategy": "x", "cost": 5.5, "calls": 200},
             {"trace": "long", "strategy": "y", "cost": 5.0, "calls": 200}]
    results = pd.DataFrame(rows).assign(retention=1.0, overflows=0, events=1, peak_context=1, error="", failed="")
    v = bv.decide(results, "min-cost")
    r = rb.analyse(None, results, v, objective="min-cost", replay=False, resamples=200)
    by = {c.setting: c for c in r.changes if c.kind == "weight"}
    assert v.recommended == "x" and by["calls"].winner == "y" and not by["calls"].same


def test_the_verdict_json_carries_the_robustness_object() -> None:
    calls = _calls({"prompt": PROMPT, "talker": TALKER}, ["t0", "t1", "t2"])
    results = _results(calls)
    v = bv.decide(results, "min-cost")
    data = json.loads(rb.attach(v, rb.analyse(None, results, v, objective="min-cost", calls=calls, replay=False,
                                             resamples=200)).to_json())
    assert data["robustness"]["choice"] == "talker"
    assert {c["kind"] for c in data["robustness"]["changes"]} == {"price", "weight"}
    assert data["robustness"]["flips"] == ["price input −20%", "price output +20%", "price input −20% & output +20%"]


def test_top_candidates_are_the_choice_the_next_that_qualify_the_reference_and_the_best_excluded() -> None:
    rows = []
    for t in range(4):
        for s, cost, retention, overflows in (("none", 5, 1.0, 3), ("a", 1, 0.9, 0), ("b", 2, 0.9, 0),
                                              ("c", 3, 0.95, 0), ("d", 4, 0.9, 0), ("e", 0.5, 0.2, 0)):
            if s == "c":  # the best retention on average, not significantly above a, b and d
                retention = (1.0, 0.8, 1.0, 0.9)[t]
            rows.append({"trace": f"t{t}", "strategy": s, "cost": cost + t * 0.01, "retention": retention,
                         "overflows": overflows, "events": 1, "error": "", "failed": ""})
    v = bv.decide(pd.DataFrame(rows))
    assert v.recommended == "a"
    # c is also the retention reference; e the cheapest excluded; none last (a larger window may admit it)
    assert rb.top_candidates(v) == ["a", "b", "c", "e", "none"]


@pytest.mark.parametrize("mine", ["extractive", "recorded"])
def test_the_summarizer_gap_on_a_hand_built_real_trace_with_a_recorded_summary(tmp_path, mine) -> None:
    """A real (non-synthetic) trace whose agent recorded a compaction summary that drops the needle's
    answer, which the extractive stand-in keeps (it quotes the user's lines): retention 100% through
    the stand-in, 0% through the recorded summary. The run (with either summarizer) and the replay
    with the other feed the gap table, each named by its source."""
    from bench.cli import main
    from traces import native
    from traces.model import Message, Needle, RecordedCompaction, Trace

    filler = "lorem ipsum dolor sit amet " * 40
    msgs = [Message.text_message("system", "You are a coding agent.")]
    for i in range(24):
        if i % 2 == 0:
            text = (f"Step {i}. " + ("Remember: the deploy password is ZEBRA-7731. " if i == 2 else "") + filler)
            msgs.append(Message.text_message("user", text))
        else:
            msgs.append(Message.text_message("assistant", f"Done with step {i}. " + filler))
    needle = Needle("n1", "fact", "the deploy password is ZEBRA-7731", "What is the deploy password?", "ZEBRA-7731", 3)
    summary = "Summary of the work so far: steps 0-12 done; nothing else to remember."
    trace = Trace("hand/session-1", tuple(msgs), agent="claude-code", model="claude-sonnet-4-5",
                  needles=(needle,), compactions=(RecordedCompaction(14, summary=summary),))
    native.write(trace, tmp_path / "in" / "session-1.json")
    code = main(["run", "--traces", str(tmp_path / "in"), "--strategies", "none", "llm-summary@n=4,keep_last_m_turns=1",
                 "--summarizer", mine, "--executor", "local", "--workers", "1", "--name", "g", "--out",
                 str(tmp_path / "out"), "--quiet", "--no-report", "--objective", "min-cost"])
    assert code == 0
    v = json.loads((tmp_path / "out" / "g" / "verdict.json").read_text())
    gap = v["robustness"]["summarizer_gap"]
    assert [g["strategy"] for g in gap] == ["llm-summary@keep_last_m_turns=1,n=4"]
    g = gap[0]
    assert g["traces"] == 1 and g["retention_recorded"] == 0.0 and g["retention_extractive"] == 1.0
    assert g["gap"] == pytest.approx(-1.0)
    assert not any("not decomposed" in n for n in v["robustness"]["notes"])  # the summarizer's calls price alike
    assert g["source_recorded"] == bv.RETENTION_SOURCES["recorded"]
    page = decision.robustness_html(bv.Verdict(**{**{k: None for k in ("objective", "goal", "recommended",
                                                                         "runner_up", "sentence", "comparison")},
                                                  "binding": (), "candidates": (), "robustness": v["robustness"]}))
    assert "retention, recorded summaries" in page and "−100.0 pts" in page.replace("-", "−")


def test_real_sessions_group_by_their_agent_from_run_json() -> None:
    results = pd.DataFrame({"trace": ["a/1", "a/2", "b/1"], "strategy": "x"})
    info = {"traces": [{"id": "a/1", "agent": "codex"}, {"id": "a/2", "agent": "codex"},
                       {"id": "b/1", "agent": "claude-code"}]}
    kind, groups = rb.trace_groups(results, info)
    assert kind == "agent" and groups.to_dict() == {"a/1": "codex", "a/2": "codex", "b/1": "claude-code"}
    assert rb.trace_groups(results.assign(trace=["synthetic/long/seed0"] * 3), None)[0] == "scenario"


def test_a_tie_broken_by_name_is_not_a_change() -> None:
    """Under a 1M window on make bench the codex variants send the same requests and cost the same: the
    verdict then picks one by name, which must not read as "the winner changes"."""
    rows = [{"trace": f"t{t}", "strategy": s, "cost": 1.0 + t, "retention": 1.0, "overflows": 0, "events": 1,
             "error": "", "failed": ""} for t in range(3) for s in ("codex", "codex:remote")]
    w = bv.decide(pd.DataFrame(rows), "min-cost")
    assert w.recommended == "codex"
    assert rb._outcome(w, "codex:remote") == (True, "ties with codex")
    assert rb._outcome(w, "other") == (False, "")
