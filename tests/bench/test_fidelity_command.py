"""Undriven fidelity: replayed on provider-attributed counts, the re-implementations compact where
the real agents did (compaction-bench fidelity)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bench.cli.fidelity import recorded_profile, rows
from bench.cli.main import main
from traces.model import Trace


def _load(path):
    from traces.formats import load

    return load([str(path)]).traces


@pytest.mark.slow
def test_claude_code_fires_at_every_recorded_automatic_compaction(shared_traces):
    checked = 0
    for trace in _load(shared_traces / "claude-code__marot-spotter"):
        for row in rows(trace):
            if row["trigger"] != "auto":
                continue  # a manual /compact is the user's decision, not a trigger to reproduce
            assert row["replayed_call"] is not None, trace.id
            assert abs(row["call_delta"]) <= 1, row
            # provider units on both sides: the size the agent compacted at, within 10%
            assert abs(row["replayed_pre"] - row["recorded_pre"]) <= 0.1 * row["recorded_pre"], row
            checked += 1
    assert checked == 2


CONTEXTUAL = ("# AGENTS.md instructions", "<environment_context>", "<user_instructions>", "[REDACTED_TEXT len=3021 ",
              "[REDACTED_TEXT len=112 ", "[REDACTED_TEXT len=5302 ")
"""Codex's session-prefixed user items; the fixture redacts text, so its three contextual items
(AGENTS.md 3,021 / 5,302 chars, environment context 112) are known by length and position."""


@pytest.mark.slow
def test_the_codex_compaction_was_remote_and_fired_below_any_sourced_trigger(shared_traces):
    """The one recorded Codex compaction (0.104.0-alpha.1, provider openai) is a remote one and
    runs as ``codex:remote``. Its replacement history has the shape ``codex:remote`` rebuilds:
    every real user message and every final answer in order, the initial context above the last
    user message, one opaque compaction item. Its trigger is not derivable from the source: the
    recording brackets the limit between two consecutive checks at 209,879 and 212,134 tokens
    (+ the small patch output after it), under 90% of both the window Codex reported (258,400)
    and the model's (272,000), so the replay must not fire before it. (It fires one call later
    only because the imported trace goes on with the recorded post-compaction items.)"""
    folder = shared_traces / "codex__madshn-localpush"
    path = next(folder.glob("rollout-2026-02-23T12-54-34-*.jsonl"))
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    at = next(i for i, r in enumerate(records) if r["type"] == "compacted")
    replacement = records[at]["payload"]["replacement_history"]
    before = [r["payload"] for r in records[:at] if r["type"] == "response_item" and r["payload"]["type"] == "message"]

    def key(item):
        return item["role"], tuple(c.get("text", c["type"]) for c in item["content"])

    def real_user(item):
        return item["role"] == "user" and not item["content"][0].get("text", "").startswith(CONTEXTUAL)

    kept = [key(m) for m in replacement if m["type"] == "message" and (real_user(m) or m["role"] == "assistant")]
    assert kept == [key(m) for m in before if real_user(m) or m.get("phase") == "final_answer"]
    assert len(kept) == 19 + 15
    assert not any(m.get("phase") == "commentary" for m in replacement)
    assert [m["type"] for m in replacement][-1] == "compaction"
    last_user = max(i for i, m in enumerate(replacement) if m["type"] == "message" and real_user(m))
    assert {m["role"] for m in replacement[last_user - 5:last_user]} == {"developer", "user"}  # initial context

    usages = [r["payload"]["info"]["last_token_usage"] for r in records[:at]
              if r["type"] == "event_msg" and r["payload"].get("type") == "token_count" and r["payload"].get("info")]
    totals = [u["total_tokens"] for u in usages if u["input_tokens"]]  # not the post-compaction recount
    distinct = [t for k, t in enumerate(totals) if not k or t != totals[k - 1]]
    did_not_fire, fired = distinct[-2:]
    assert (did_not_fire, fired) == (209_879, 212_134)
    (trace,) = _load(path)
    window = trace.messages[-1].meta["context_window"]
    assert window == 258_400
    import strategies
    from bench.scoring.fidelity import matching_strategy
    assert matching_strategy(trace) == "codex:remote"
    model_window = recorded_profile(trace).max_input
    assert model_window * 95 // 100 == window  # Codex reports the effective window (95%)
    for name in ("codex:remote", "codex:0.140-remote"):
        assert strategies.build(name).limit(model_window) > fired + 10_000, name
    (row,) = rows(trace)
    assert row["strategy"] == "codex:remote"
    assert row["replayed_call"] is None or row["replayed_call"] >= row["recorded_call"]


@pytest.mark.slow
def test_driven_keeps_the_old_diagnostic(shared_traces):
    trace = next(t for t in _load(shared_traces / "claude-code__marot-spotter") if t.compactions
                 and t.compactions[0].trigger == "auto")
    (row,) = rows(trace, driven=True)
    assert row["call_delta"] == 0


def test_the_command_prints_a_row_per_recorded_compaction(shared_traces, capsys):
    path = shared_traces / "claude-code__marot-spotter" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    assert main(["fidelity", str(path)]) == 0
    out = capsys.readouterr().out
    assert "recorded_call" in out and "claude-code" in out and "61" in out


def test_an_unknown_recorded_model_gets_the_stated_fallback():
    trace = Trace("x", (), agent="claude-code", model="claude-future-9")
    unknown = recorded_profile(trace)
    assert unknown.is_fallback and "Anthropic default" in unknown.price_source and unknown.context_window == 200_000
    assert recorded_profile(replace(trace, model="claude-opus-4-6")).context_window == 200_000


# -- --strategy: your own strategy against your agent's logged compactions ----------------------------

MINE = '''from dataclasses import dataclass

from bench.context.strategy import Outcome, Strategy, event


@dataclass(frozen=True, kw_only=True)
class Mine(Strategy):
    """Compacts to the first and last message at call ``at_call``."""

    name = "mine"
    at_call: int = 3

    def before_call(self, ctx, session):
        if session.call_index != self.at_call:
            return None
        new = ctx.replace((ctx.messages[0], ctx.messages[-1]))
        return Outcome(new, (event("summarize", ctx, new, summary_tokens=1),))
'''


def _my_agent_trace():
    from traces.model import Message, RecordedCompaction

    msgs = [Message.text_message("system", "You are my agent.")]
    for k in range(6):
        msgs += [Message.text_message("user", f"step {k}: " + "word " * 50),
                 Message.text_message("assistant", f"done {k}")]
    # the agent compacted before its 4th answer (call 3): the first message after it is index 7
    return Trace("mine-1", tuple(msgs), agent="my-agent", model="claude-sonnet-4-5",
                 compactions=(RecordedCompaction(7, "auto", 900, "summary"),))


def test_strategy_from_a_file_is_replayed_against_the_logged_compactions(tmp_path):
    (tmp_path / "mine.py").write_text(MINE, encoding="utf-8")
    trace = _my_agent_trace()
    assert rows(trace) == []  # no built-in strategy re-implements "my-agent"
    spec = f"{tmp_path / 'mine.py'}:Mine"
    (row,) = rows(trace, strategy=spec)
    assert row["strategy"] == spec and row["recorded_call"] == 3
    assert row["replayed_call"] == 3 and row["call_delta"] == 0
    (late,) = rows(trace, strategy=spec + "@at_call=5")
    assert late["replayed_call"] == 5 and late["call_delta"] == 2 and late["strategy"].endswith("@at_call=5")


def test_the_command_takes_a_module_in_the_current_directory(tmp_path, monkeypatch, capsys):
    from traces import native

    (tmp_path / "mymod_fidelity.py").write_text(MINE, encoding="utf-8")
    (path,) = native.write_many([_my_agent_trace()], tmp_path / "traces")
    monkeypatch.chdir(tmp_path)
    assert main(["fidelity", str(path), "--strategy", "mymod_fidelity:Mine@at_call=4"]) == 0
    out = capsys.readouterr().out
    header, line = out.splitlines()[:2]
    assert "call_delta" in header and "mymod_fidelity:Mine" in line
    assert line.split()[3:6] == ["3", "4", "1"]  # recorded call 3, replayed 4, delta +1


@pytest.mark.parametrize(("source", "expected"), [
    (MINE.replace("def before_call(self, ctx, session):", "def before_call(self, ctx):"),
     "must take (self, ctx, session), it takes 2 arguments"),
    (MINE.replace("@dataclass(frozen=True, kw_only=True)", "@dataclass(kw_only=True)"),
     "bad_mine.py:6: TypeError: cannot inherit non-frozen dataclass"),
    ("import json\n\nraise RuntimeError('broken on purpose')\n", "bad_mine.py:3: RuntimeError: broken on purpose"),
])
def test_load_problems_are_one_clear_line_before_any_session_is_read(tmp_path, capsys, source, expected):
    (tmp_path / "bad_mine.py").write_text(source, encoding="utf-8")
    missing = tmp_path / "no-such-session.jsonl"  # never read: the strategy fails first
    assert main(["fidelity", str(missing), "--strategy", f"{tmp_path / 'bad_mine.py'}:Mine"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("compaction-bench: error: ") and expected in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
