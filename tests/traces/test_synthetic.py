"""The synthetic generator: deterministic, well formed, the sizes the scenarios promise, needles in place."""

from __future__ import annotations

import itertools
import math
import statistics
from functools import cache

import pytest

from bench.tokens.counter import render
from traces import native
from traces.calibration import FITTED
from traces.model import Needle, Trace, orphans
from traces.scenarios import DEFAULT_BENCH, SCENARIOS, resolve
from traces.synthetic import ARTIFACT_CHARS, CONFIG_CHARS, FAILING_RUN_MIN_CHARS, generate

# huge is opt-in and slow: its shape is checked at a reduced size
SMALL = {name: (name if SCENARIOS[name].tokens <= 500_000 else f"{name}@tokens=120000") for name in SCENARIOS}


@cache
def trace_of(scenario: str, seed: int = 0) -> Trace:
    return generate(scenario, seed)


def test_same_seed_same_trace_other_seed_other_trace():
    assert native.dumps(generate("short", 0)) == native.dumps(trace_of("short", 0))
    assert native.dumps(generate("short", 1)) != native.dumps(trace_of("short", 0))
    assert trace_of("short", 0).id == "synthetic/short/seed0"


def test_native_round_trip_keeps_needles():
    t = trace_of("short")
    back = native.loads(native.dumps(t))
    assert back.needles == t.needles and back.messages == t.messages


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_scenario_is_well_formed(name):
    t = trace_of(SMALL[name])
    ms = t.messages
    assert ms[0].role == "system" and all(m.role != "system" for m in ms[1:])
    assert len(ms[0].text) > 8_000  # a real-size system prompt (2-4K tokens)
    assert orphans(ms) == (set(), set())
    assert ms[1].is_human_turn and ms[-1].role == "assistant" and not ms[-1].tool_uses
    ids = [u.id for m in ms for u in m.tool_uses]
    assert len(ids) == len(set(ids))
    for prev, m in itertools.pairwise(ms[1:]):
        assert not (prev.role == m.role == "assistant")
        if prev.tool_uses:  # every call is answered by the very next message, in order
            assert m.is_tool_result and [r.tool_use_id for r in m.tool_results] == [u.id for u in prev.tool_uses]
        if m.is_tool_result:
            assert prev.role == "assistant" and prev.tool_uses
    stamps = [m.timestamp for m in ms]
    assert all(a <= b for a, b in itertools.pairwise(stamps))
    skill_tool = {"Skill", "skill"} if resolve(SMALL[name]).skills else set()  # traces/synthetic_rules.py
    assert {u.name for m in ms for u in m.tool_uses} <= {"read_file", "edit_file", "write", "bash", "grep",
                                                          "glob", "web_fetch", "todo_write", *skill_tool}


def test_long_crosses_a_200k_window_several_times_and_short_stays_small(counter):
    long, short = trace_of("long"), trace_of("short")
    cumulative = list(itertools.accumulate(counter.counts(long.messages)))
    crossings = sum(1 for k in (200_000, 400_000, 600_000) if cumulative[-1] >= k)
    assert crossings == 3 and cumulative[-1] < 1_100_000
    assert 200 <= long.n_tool_calls <= 800
    assert sum(counter.counts(short.messages)) < 50_000


def test_sizes_are_a_parameter_away(counter):
    t = generate("long@tokens=30000", seed=3)
    assert t.id == "synthetic/long@tokens=30000/seed3"
    assert 25_000 < sum(counter.counts(t.messages)) < 60_000
    with pytest.raises(ValueError, match="unknown scenario"):
        resolve("nope")
    with pytest.raises(ValueError, match="cannot be set"):
        resolve("long@needles=3")


def test_chars_over_4_undercounts_like_real_sessions(counter):
    """Real Claude Code tool output: chars/4 is 0.79-1.07 of cl100k by category (calibration docstring)."""
    t = trace_of("long")
    ratio = sum(len(render(m)) for m in t.messages) / 4 / sum(counter.counts(t.messages))
    assert 0.7 < ratio < 0.95


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_needles_are_where_they_were_planted_and_nowhere_earlier(name):
    t = trace_of(SMALL[name])
    texts = [render(m) for m in t.messages]
    spec = resolve(SMALL[name])
    assert [n.kind for n in t.needles] == [p.kind for p in spec.needles] + ["instruction"] * spec.instructions + [
        "skill"] * (spec.rules_per_skill * len(spec.skills))  # rules last (tests/bench/test_instructions.py)
    for n in t.needles:
        if n.kind == "control":
            assert n.message_index == -1 and not any(n.answer in x for x in texts)
            continue
        assert n.answer in texts[n.message_index], n
        assert not any(n.answer in x for x in texts[:n.message_index]), n
        if n.old_answer is not None:
            assert any(n.old_answer in x for x in texts[:n.message_index])
            assert not any(n.old_answer in x for x in texts[n.message_index:])
        if n.reference is not None:  # a path or command that would recover it is in the call
            assert n.reference in texts[n.message_index] or n.reference in texts[n.message_index - 1]


def test_long_has_every_needle_kind_at_its_planned_depth(counter):
    t = trace_of("long")
    assert {n.kind for n in t.needles} == {"fact", "error", "artifact", "constraint", "decision", "update", "control"}
    cumulative = list(itertools.accumulate(counter.counts(t.messages)))
    for plan, n in zip(SCENARIOS["long"].needles, t.needles, strict=True):
        if n.kind != "control":
            depth = cumulative[n.message_index - 1] / cumulative[-1]
            assert abs(depth - plan.at) < 0.08, (n.kind, plan.at, depth)


def _needle_outputs(t: Trace, kind: str) -> list[tuple[Needle, str]]:
    return [(n, t.messages[n.message_index].tool_results[0].content) for n in t.needles
            if n.kind == kind and n.message_index >= 0 and t.messages[n.message_index].tool_results]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_error_needle_ends_a_whole_failing_test_run(name):
    """Header, progress, the FAILURES section with its traceback, the E line, the summary: never a bare tail."""
    t = trace_of(SMALL[name])
    runs = _needle_outputs(t, "error")
    assert len(runs) == sum(p.kind == "error" for p in resolve(SMALL[name]).needles)
    for n, out in runs:
        assert t.messages[n.message_index].tool_results[0].is_error  # the needle's call is the step's first
        assert len(out) >= FAILING_RUN_MIN_CHARS, (name, len(out))
        assert out.startswith("=" * 29 + " test session starts")
        failures, answer, summary = out.index(" FAILURES "), out.index(n.answer), out.index("short test summary info")
        assert failures < out.index(">       ") < answer < summary and len(out) - answer < 600
        assert out.rstrip().endswith("s") and "1 failed" in out[summary:]


def test_error_needle_sizes_follow_the_conditioned_bash_fit():
    """Across seeds the error runs of a calibrated-scale scenario look like the real failing runs (2.8K-10K)."""
    sizes = sorted(len(out) for seed in range(12) for _, out in _needle_outputs(trace_of("multitask", seed), "error"))
    assert sizes[0] >= FAILING_RUN_MIN_CHARS and sizes[-1] <= FITTED.output_chars["bash"].quantile(0.97) + 1
    assert 3_000 < statistics.median(sizes) < 7_000


def test_logs_error_needle_is_the_tail_of_one_of_the_largest_outputs():
    spec = SCENARIOS["logs"]
    t = trace_of("logs")
    bash = sorted(len(r.content) for m, nxt in itertools.pairwise(t.messages)
                  for u, r in zip(m.tool_uses, nxt.tool_results, strict=False) if u.name == "bash")
    floor = FITTED.output_chars["bash"].scaled(spec.size_scale["bash"]).quantile(0.9)
    runs = _needle_outputs(t, "error")
    assert len(runs) == 2
    for n, out in runs:
        assert len(out) >= floor > 30_000
        assert sum(size > len(out) for size in bash) <= 0.1 * len(bash)  # in the session's top 10%
        assert out.index(n.answer) > 0.99 * len(out)  # the failure is at the tail of the huge output


def test_fact_and_artifact_needles_sit_in_files_of_real_sizes():
    for name in ("long", "reads", "multitask"):
        t = trace_of(name)
        for n, out in _needle_outputs(t, "fact"):  # the fact read from a config file
            assert CONFIG_CHARS[0] <= len(out) and "[release]" in out and f'codename = "{n.answer}"' in out
            assert out.index(n.answer) > 40 and out.startswith("     1→# ")
        writes = [u for n in t.needles if n.kind == "artifact" for u in t.messages[n.message_index].tool_uses
                  if u.input.get("path") == n.answer]
        assert len(writes) == 1 and ARTIFACT_CHARS[0] <= len(writes[0].input["content"]) <= ARTIFACT_CHARS[1]


def test_needle_ages_span_the_report_buckets(counter):
    """Retention by age needs needles of every age: at the end of the default bench, tokens since each was stated."""
    edges = (0, 2_000, 8_000, 32_000, 128_000, math.inf)  # bench.scoring.probes.AGE_TOKEN_EDGES
    buckets = set()
    for name in DEFAULT_BENCH:
        t = trace_of(name)
        counts = counter.counts(t.messages)
        for n in t.needles:
            if n.message_index >= 0:
                age = sum(counts[n.message_index + 1:])
                buckets.add(next(k for k in range(5) if edges[k] <= age < edges[k + 1]))
    assert buckets >= {1, 2, 3, 4}, buckets


def test_reads_scenario_reads_the_same_files_again():
    t = trace_of("reads")
    reads = [(u.input["path"], r.content) for m, nxt in itertools.pairwise(t.messages)
             for u, r in zip(m.tool_uses, nxt.tool_results, strict=False) if u.name == "read_file"]
    paths = [p for p, _ in reads]
    assert len(paths) - len(set(paths)) >= 20
    first = {}
    for p, content in reads:  # an unchanged file reads the same; most re-reads are unchanged
        first.setdefault(p, content)
    assert sum(first[p] == c for p, c in reads) > len(set(paths))


def test_multitask_changes_direction():
    t = trace_of("multitask")
    humans = [m.text for m in t.messages if m.is_human_turn]
    assert sum("New priority" in h for h in humans) >= 2
    assert sum(n.kind == "update" for n in t.needles) == 2


def test_an_update_read_from_a_file_leaves_output_clearing_strategies_stale():
    """The second update's old value is the user's; the new one is in a config file the agent
    reads later. SWE-agent keeps every human message but masks old observations: stale."""
    import strategies
    from bench.cost.pricing import profile
    from bench.replay.loop import ReplayConfig, replay
    from bench.scoring.probes import needle_observer
    from bench.tokens.counter import TokenCounter

    t = trace_of("multitask")
    told, read = [n for n in t.needles if n.kind == "update"]
    assert t.messages[told.message_index].is_human_turn
    carrier = t.messages[read.message_index]
    assert carrier.tool_results and read.answer in carrier.tool_results[0].content
    assert any(read.old_answer in m.text for m in t.messages if m.is_human_turn)

    def end_class(name: str) -> str:
        result = replay(t, strategies.build(name), ReplayConfig(profile("claude-sonnet-4-5")), counter=TokenCounter(),
                        observers=(needle_observer(t),))
        return next(p["cls"] for p in result.probes if p["moment"] == "end" and p["needle"] == read.id)

    assert end_class("none") == "retained-verbatim"
    assert end_class("swe-agent") == "stale"


def test_default_bench_is_moderate():
    assert set(DEFAULT_BENCH) <= set(SCENARIOS) and "huge" not in DEFAULT_BENCH
    rule_free = [s for s in DEFAULT_BENCH if not SCENARIOS[s].instructions and not SCENARIOS[s].skills]
    assert sum(SCENARIOS[s].tokens for s in rule_free) < 2_200_000
    # the rule-bearing sessions added to `make bench` cost at most ~25% more tokens (and wall time) than the rest
    assert sum(SCENARIOS[s].tokens for s in DEFAULT_BENCH) <= 1.25 * sum(SCENARIOS[s].tokens for s in rule_free)
    assert 1_800_000 <= SCENARIOS["huge"].tokens <= 2_200_000 and SCENARIOS["tiny"].tokens == 10_000
