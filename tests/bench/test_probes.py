"""Needle retention classes, ages and aggregates, on a hand-built trace with a known compaction."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd
import pytest

import strategies
from bench.context.strategy import Outcome, Strategy, event
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.scoring.probes import (
    ABSENT,
    FALSE_POSITIVE,
    MISSING,
    RECOVERABLE,
    STALE,
    VERBATIM,
    cliff_rounds,
    false_positive_rate,
    needle_observer,
    probe_frame,
    retention,
    with_age_buckets,
)
from bench.tokens.counter import TokenCounter
from traces.model import Message, Needle, ToolResult, ToolUse, Trace

M = Message.text_message
MESSAGES = (
    M("system", "You are a coding agent."),                                     # 0
    M("user", "The service port is 8080. Always use tabs."),                     # 1
    M("assistant", "Noted."),                                                    # 2  call 0
    M("user", "The secret codeword is PAPAYA-42."),                             # 3
    Message("assistant", (ToolUse("t1", "Read", {"file_path": "secrets/db.txt"}),)),  # 4  call 1
    Message("user", (ToolResult("t1", "password = hunter2"),)),                  # 5
    M("assistant", "Got it."),                                                   # 6  call 2
    M("user", "Change of plan: the service port is now 9090."),                  # 7
    M("assistant", "OK."),                                                       # 8  call 3
    M("user", "Where are we?"),                                                  # 9
    M("assistant", "Done. The build id is B-77."),                               # 10 call 4
)
NEEDLES = (
    Needle("codeword", "fact", "The secret codeword is PAPAYA-42.", "Codeword?", "PAPAYA-42", 3),
    Needle("port", "update", "port is now 9090", "Port?", "9090", 7, old_answer="8080"),
    Needle("password", "fact", "password = hunter2", "DB password?", "hunter2", 5, reference="secrets/db.txt"),
    Needle("zebra", "control", "", "Zebra code?", "ZEBRA-99", -1),
    Needle("tabs", "constraint", "Always use tabs.", "Indentation?", "always use tabs", 1),
    Needle("build", "fact", "The build id is B-77.", "Build id?", "B-77", 10),
)
TRACE = Trace("hand", MESSAGES, needles=NEEDLES)


@dataclass(frozen=True, kw_only=True)
class Forgetful(Strategy):
    """At call 4: drop the codeword and the port update, clear the tool output, add a summary."""

    name = "forgetful"

    def before_call(self, ctx, session):
        if session.call_index != 4:
            return None
        m = ctx.messages
        cleared = m[5].with_blocks((ToolResult("t1", "[cleared]"),))
        new = ctx.replace((m[0], m[1], m[2], m[4], cleared, m[6], M("user", "Summary: we talked about ports."), m[9]))
        return Outcome(new, (event("summarize", ctx, new, summary_tokens=8),))


def run(strat, trace=TRACE, **kw):
    counter = TokenCounter()
    result = replay(trace, strat, ReplayConfig(profile("claude-sonnet-4-5")), counter=counter,
                    observers=(needle_observer(trace, **kw),))
    return result, counter


def by_needle(result, moment):
    return {p["needle"]: p for p in result.probes if p["moment"] == moment}


def test_classes_after_a_compaction():
    result, counter = run(Forgetful())
    rows = by_needle(result, "compaction")
    assert rows["codeword"]["cls"] == MISSING            # pruned
    assert rows["port"]["cls"] == STALE                   # only the old 8080 is left
    assert rows["password"]["cls"] == RECOVERABLE         # the file path is still there, the value not
    assert rows["zebra"]["cls"] == ABSENT
    assert rows["tabs"]["cls"] == VERBATIM                # matched case- and whitespace-insensitively
    assert "build" not in rows                            # stated in call 4's answer: not yet said
    assert {p["round"] for p in result.probes if p["moment"] == "compaction"} == {1}
    end = by_needle(result, "end")
    assert end["build"]["cls"] == VERBATIM and end["codeword"]["cls"] == MISSING


def test_ages_in_calls_and_tokens():
    result, counter = run(Forgetful())
    row = by_needle(result, "compaction")["codeword"]
    # message 3 is first sent with call 1; probed at call 4, before its answer (message 10)
    assert row["planted"] == 3 and row["planted_call"] == 1 and row["age_calls"] == 3
    assert row["age_tokens"] == sum(counter.truth(m) for m in MESSAGES[4:10])
    assert by_needle(result, "compaction")["zebra"]["planted_call"] is None
    end = by_needle(result, "end")["build"]
    assert end["age_calls"] == 0 and end["age_tokens"] == 0
    # "tabs" sits in message 1; after it in the sent context come messages 2, 4, cleared 5, 6, summary, 9
    tabs = by_needle(result, "compaction")["tabs"]
    sent_after = [MESSAGES[2], MESSAGES[4], MESSAGES[5].with_blocks((ToolResult("t1", "[cleared]"),)), MESSAGES[6],
                  M("user", "Summary: we talked about ports."), MESSAGES[9]]
    assert tabs["tokens_after_match"] == sum(counter.truth(m) for m in sent_after)


def test_none_keeps_everything_and_an_update_with_both_values_is_retained():
    result, _ = run(strategies.build("none"))
    end = by_needle(result, "end")
    assert {n: r["cls"] for n, r in end.items()} == {
        "codeword": VERBATIM, "port": VERBATIM, "password": VERBATIM, "zebra": ABSENT, "tabs": VERBATIM,
        "build": VERBATIM}
    assert not [p for p in result.probes if p["moment"] == "compaction"]


def test_control_found_is_a_false_positive_and_an_asker_answers_beside_the_class():
    system = M("system", "You are a coding agent. ZEBRA-99 is a reserved word.")
    trace = replace(TRACE, messages=(system, *MESSAGES[1:]))
    asked: list[list[str]] = []

    def asker(messages, needles):
        asked.append([n.id for n in needles])
        return {n.id: (n.answer if n.id == "codeword" else "unknown") for n in needles}

    result, _ = run(Forgetful(), trace, asker=asker)
    rows = by_needle(result, "compaction")
    assert rows["zebra"]["cls"] == FALSE_POSITIVE and rows["port"]["cls"] == STALE
    assert rows["port"]["llm_recalled"] is None  # asked at the end of the trace only
    end = by_needle(result, "end")
    assert len(asked) == 1 and "zebra" not in asked[0]  # controls are never asked
    assert end["codeword"]["llm_recalled"] is True and end["port"]["llm_recalled"] is False
    assert end["zebra"]["llm_answer"] is None


def test_retention_aggregates_per_class_kind_and_age():
    forgetful, _ = run(Forgetful(), strategy="forgetful")
    none, _ = run(strategies.build("none"))
    probes = probe_frame([forgetful, none])
    table = retention(probes).set_index("strategy")
    # at the end: 5 scored needles (control excluded); verbatim = tabs, build
    assert table.loc["forgetful", "n"] == 5 and table.loc["forgetful", "retention"] == pytest.approx(2 / 5)
    assert table.loc["forgetful", [MISSING, STALE, RECOVERABLE]].tolist() == pytest.approx([0.2, 0.2, 0.2])
    assert table.loc["none", "retention"] == 1.0
    kinds = retention(probes, ["needle_kind"]).set_index(["strategy", "needle_kind"])
    assert kinds.loc[("forgetful", "fact"), "retention"] == pytest.approx(1 / 3)
    assert kinds.loc[("forgetful", "update"), STALE] == 1.0
    aged = with_age_buckets(probes)
    assert set(aged.age_tokens_bucket.dropna()) == {"< 2K"} and "< 5" in set(aged.age_calls_bucket.dropna())
    fp = false_positive_rate(probes).set_index("strategy")
    assert fp.loc["none", "n"] == 1 and fp.loc["none", "false_positive_rate"] == 0.0


def test_cliff_round_is_the_first_round_below_half():
    rows = []
    for strategy, rounds in {"a": {1: [1, 1, 1, 0], 2: [1, 0, 0, 0]}, "b": {1: [1, 1], 2: [1, 0]}}.items():
        for r, kept in rounds.items():
            rows += [{"strategy": strategy, "moment": "compaction", "round": r, "needle_kind": "fact",
                      "retained": bool(k)} for k in kept]
    cliffs = cliff_rounds(pd.DataFrame(rows)).set_index("strategy")
    assert cliffs.loc["a", "cliff_round"] == 2 and cliffs.loc["a", "retention_by_round"] == {1: 0.75, 2: 0.25}
    assert pd.isna(cliffs.loc["b", "cliff_round"])  # 0.5 is not below 0.5: no cliff


def test_a_trace_without_needles_is_probed_with_derived_ones():
    plain = Trace("plain", (M("system", "sys"), M("user", "Please refactor parser/lexer.py today."),
                            M("assistant", "ok")))
    result, _ = run(strategies.build("none"), plain)
    assert result.probes and {p["source"] for p in result.probes} == {"derived"}
    assert {p["needle"] for p in result.probes} >= {"derived:request:1"}
    assert all(isinstance(p["cls"], str) for p in result.probes)


# --- the per-message form sets (bench.scoring.observer._Found) against the joined context text ------------


def _reference_rows(needles, msgs, meter_tok):
    """What a probe point finds, from scratch: each needle classified against the joined, normalized
    context text (and without the re-read messages), its distance from the end found by ``rfind``."""
    import bisect

    from bench.replay.rereads import META
    from bench.scoring.matching import normalize, variants
    from bench.scoring.probes import REREAD, classify, context_text
    from bench.tokens.counter import render

    hay = context_text(msgs)
    kept = context_text([m for m in msgs if not m.meta.get(META)])
    texts = [normalize(render(m)) for m in msgs]
    starts, acc = [], 0
    for t in texts:
        starts.append(acc)
        acc += len(t) + 1
    out = {}
    for n in needles:
        cls = classify(n, hay)
        forms = variants(n.answer, n.kind == "artifact")
        if cls == VERBATIM and n.kind != "control" and not any(v in kept for v in forms):
            cls = REREAD
        last = max((hay.rfind(v) for v in variants(n.answer, n.kind == "artifact")), default=-1)
        after = None
        if cls in (VERBATIM, FALSE_POSITIVE) and last >= 0:
            j = bisect.bisect_right(starts, last) - 1
            after = sum(meter_tok(m) for m in msgs[j + 1:])
        out[n.id] = (cls, after)
    return out


def test_normalize_equals_the_regex_form_on_every_code_point():
    import sys

    from bench.scoring.matching import _SPACE, normalize

    every = "".join(map(chr, range(sys.maxunicode + 1)))
    for text in (every, every[::-1], "  a\u00a0\u2003b\x1c c\n\n", "", " ", "\u3000x\u3000"):
        assert normalize(text) == _SPACE.sub(" ", text).strip().casefold()


def test_a_context_replaced_between_probe_points_is_probed_as_from_scratch():
    """The form sets are held per message object: contexts that drop, rewrite, re-insert and replace
    messages (new objects at ids the old ones had, a re-read copy) must classify every needle and find
    its distance from the end exactly as a search of the joined text would."""
    import gc

    from bench.context.messages import Meter
    from bench.replay.rereads import META

    needles = (*NEEDLES, Needle("file", "artifact", "", "File?", "/repo/secrets/db.txt", 4),
               Needle("split", "fact", "", "Split?", "port is", 1))
    trace = Trace("hand-forms", MESSAGES, needles=needles)
    meter = Meter(TokenCounter())
    observe = needle_observer(trace)
    contexts = [
        MESSAGES,
        MESSAGES[:3] + MESSAGES[7:],
        (MESSAGES[0], M("user", "Summary: PAPAYA-42 and   the\nSERVICE  port is 8080."), *MESSAGES[8:]),
        (MESSAGES[0], Message("user", (ToolResult("r", "password = hunter2 in secrets/db.txt"),), meta={META: True}),
         *MESSAGES[9:]),
        (MESSAGES[0], MESSAGES[3], M("user", "zebra-99"), MESSAGES[10]),
    ]
    for k in range(3):  # new messages at ids that older ones (gone) may have had
        gc.collect()
        contexts.append((MESSAGES[0], M("user", f"round {k}: build id is b-77"), M("user", "port is now 9090" * k)))
    for msgs in contexts:
        ctx = meter.context(msgs)
        rows = {r["needle"]: (r["cls"], r["tokens_after_match"]) for r in observe("end", 4, ctx)}
        assert rows == _reference_rows(needles, msgs, meter.truth)
