"""Claude Code's generations (strategies/claude_code/): each rule on a hand-built session that
fails without it, and the recorded sessions as a check (not a fit)."""

from __future__ import annotations

import pytest

import strategies
from bench.context.messages import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from bench.summarizers.extractive import ExtractiveSummarizer
from strategies.claude_code import SKILL_TRUNCATED, ClaudeCode
from strategies.versions import matching_strategy
from traces.model import Message, ToolResult, ToolUse, Usage

SONNET = profile("claude-sonnet-4-5")  # 200K window, 64K max output


def session(counter, model=SONNET, **kw) -> Session:
    return Session(model, Meter(counter, "chars/4"), ExtractiveSummarizer(), **kw)


def step(i: int, name: str, output: str, **inp) -> list[Message]:
    return [Message("assistant", (ToolUse(f"t{i}", name, inp),)), Message("user", (ToolResult(f"t{i}", output),))]


def numbered(text: str, first: int = 1) -> str:
    return "\n".join(f"{n:6d}→{line}" for n, line in enumerate(text.split("\n"), first))


@pytest.mark.parametrize(("version", "variant"), [
    ("1.0.53", "claude-code:1.0"), ("1.1.0", "claude-code:2.0"), ("2.0.76", "claude-code:2.0"),
    ("2.1.16", "claude-code:2.0"), ("2.1.17", "claude-code:2.1.17"), ("2.1.20", "claude-code:2.1.17"),
    ("2.1.21", "claude-code:2.1.21"), ("2.1.42", "claude-code:2.1.21"),
    ("2.1.75", "claude-code:2.1.21"), ("2.1.76", "claude-code:2.1.76"), ("2.1.88", "claude-code:2.1.76"),
    ("2.1.89", "claude-code:2.1.89"), ("2.1.141", "claude-code:2.1.89"), ("2.1.142", "claude-code"),
    ("2.1.240", "claude-code"), (None, "claude-code"),
])
def test_each_version_runs_as_its_generation(version, variant):
    assert matching_strategy("claude-code", version) == variant


@pytest.mark.parametrize(("variant", "threshold"), [
    ("claude-code:1.0", 155_000), ("claude-code:2.0", 155_000), ("claude-code:2.1.17", 155_000),
    ("claude-code:2.1.21", 167_000),
    ("claude-code:2.1.76", 167_000), ("claude-code:2.1.89", 167_000), ("claude-code", 167_000),
])
def test_threshold_is_window_less_reserve_less_13k(counter, variant, threshold):
    """Reserve = 32K (Claude Code's max-output setting) until 2.1.20; min(max output, 20K) from
    2.1.21 (CHANGELOG L4238). 1.0.x: the recorded 1.0.53 session fits 155K, not 92% (184K)."""
    assert strategies.build(variant).autocompact_threshold(session(counter)) == threshold


OPUS_1M = profile("claude-opus-4-6[1m]")  # 1M window, 128K max output


@pytest.mark.parametrize(("variant", "model", "params", "threshold"), [
    # CLAUDE_CODE_AUTO_COMPACT_WINDOW lowers the window before the reserve is taken off (autoCompact.ts L33-47)
    ("claude-code", OPUS_1M, "", 967_000),
    ("claude-code", OPUS_1M, "@auto_compact_window=200000", 167_000),
    ("claude-code:2.0", OPUS_1M, "@auto_compact_window=200000", 155_000),
    ("claude-code", SONNET, "@auto_compact_window=400000", 167_000),  # never raises the model's window
    # CLAUDE_AUTOCOMPACT_PCT_OVERRIDE: min(floor(effective x pct / 100), effective - 13K) (L72-90)
    ("claude-code", SONNET, "@autocompact_pct_override=50", 90_000),
    ("claude-code", SONNET, "@autocompact_pct_override=95", 167_000),  # only ever earlier
    ("claude-code:2.0", SONNET, "@autocompact_pct_override=80", 134_400),
    ("claude-code", OPUS_1M, "@auto_compact_window=200000,autocompact_pct_override=60", 108_000),
])
def test_autocompact_window_and_percent_override(counter, variant, model, params, threshold):
    """The two user settings of the trigger, as autoCompact.ts computes them: the window cap applies
    before the reserve, the percent is of the effective window and can only lower the threshold."""
    strat = strategies.build(strategies.parse_spec(variant + params))
    assert strat.autocompact_threshold(session(counter, model=model)) == threshold


def test_a_1m_session_held_to_200k_compacts_where_the_plain_one_does_not(counter):
    """A 1M-window session (the recorded 2.1.108 one reaches 414K without compacting) compacts at
    167K once the window is capped at 200K, and not before."""
    for prompt, capped, plain in ((166_000, False, False), (168_000, True, False)):
        for params, expected in (("@auto_compact_window=200000", capped), ("", plain)):
            ctx, sess = trace_at(counter, prompt)
            sess = session(counter, model=OPUS_1M, last_usage=sess.last_usage)
            out = strategies.build(strategies.parse_spec("claude-code" + params)).before_call(ctx, sess)
            assert (out is not None and out.events[-1].kind == "summarize") is expected, (prompt, params)


def test_percent_override_out_of_range_is_refused():
    with pytest.raises(strategies.StrategyError, match="autocompact_pct_override"):
        strategies.build(strategies.parse_spec("claude-code@autocompact_pct_override=150"))
    with pytest.raises(strategies.StrategyError, match="auto_compact_window"):
        strategies.build(strategies.parse_spec("claude-code@auto_compact_window=0"))


def trace_at(counter, prompt: int, output: int = 500):
    msgs = [Message.text_message("system", "s"), Message.text_message("user", "go"), *step(1, "Bash", "x" * 400),
            Message.text_message("assistant", "next"), Message.text_message("user", "more")]
    return Meter(counter, "chars/4").context(msgs), session(counter, last_usage=Usage(prompt, output, 0, 0))


def test_a_2_1_22_session_at_155_8k_does_not_compact_but_a_2_1_20_one_does(counter):
    """The recorded 2.1.22 session sent 155,808 without compacting; 2.0.76-2.1.20 fired at 155K."""
    ctx, sess = trace_at(counter, 155_300)
    assert strategies.build("claude-code:2.1.21").before_call(ctx, sess) is None
    ctx, sess = trace_at(counter, 155_300)
    out = strategies.build("claude-code:2.0").before_call(ctx, sess)
    assert out is not None and out.events[0].kind == "summarize"


def test_the_output_part_of_the_count_is_at_least_the_last_answer(counter):
    """Claude Code transcripts keep a streaming snapshot of output_tokens (1-300); the agent counted
    the final one, which the answer's own size bounds from below."""
    answer = Message.text_message("assistant", "word " * 8_000)
    msgs = [Message.text_message("system", "s"), Message.text_message("user", "go"), answer]
    ctx = Meter(counter, "chars/4").context(msgs)
    sess = session(counter, last_usage=Usage(150_000, 1, 0, 0))
    assert ClaudeCode().count(ctx, sess, True) == 150_000 + ctx.tok(answer)


def failing(counter, calls: int, variant: str) -> list:
    """Auto-compaction that cannot run (one huge prompt, nothing before it to summarize), ``calls`` times."""
    msgs = [Message.text_message("system", "s"), Message.text_message("user", "x" * 4 * 200_000)]
    ctx = Meter(counter, "chars/4").context(msgs)
    strat, sess = strategies.build(variant), session(counter)
    tries = []
    for k in range(calls):
        sess.call_index = k
        strat.before_call(ctx, sess)
        tries.append(sess.state.get("autocompact_failures", 0))
    return tries


def test_circuit_breaker_only_from_2_1_76(counter):
    """2.1.76 (L3485): 3 consecutive failed auto-compactions stop the attempts; before, every turn retried."""
    assert failing(counter, 5, "claude-code:2.1.76") == [1, 2, 3, 3, 3]
    assert failing(counter, 5, "claude-code:2.1.21") == [1, 2, 3, 4, 5]


def thrash(counter, variant: str):
    """Every call arrives over the threshold again right after a compaction."""
    strat, sess = strategies.build(variant), session(counter)
    ctx = Meter(counter, "chars/4").context([Message.text_message("system", "s"), Message.text_message("user", "go")])
    outcomes = []
    for k in range(5):
        sess.call_index = k
        ctx = ctx.append(*step(k, "Bash", "y" * 4_000, command=f"c{k}"))
        sess.last_usage = Usage(190_000, 100, 0, 0)
        out = strat.before_call(ctx, sess)
        outcomes.append(None if out is None else (out.fail or out.events[0].kind))
        ctx = out.context if out is not None else ctx
        sess.state.pop("usage_stale", None)
    return outcomes


def test_thrash_detection_only_from_2_1_89(counter):
    """2.1.89 (L3099): back at the threshold right after compacting, three times in a row → an error."""
    got = thrash(counter, "claude-code:2.1.89")
    assert got[:3] == ["summarize"] * 3 and got[3].startswith("autocompact thrash")
    assert thrash(counter, "claude-code:2.1.76") == ["summarize"] * 5


@pytest.mark.parametrize(("variant", "says"), [("claude-code", "cut by the reported overflow"),
                                               ("claude-code:2.1.89", "first request overflowed")])
def test_reactive_summarize_request_is_cut_to_fit(counter, variant, says):
    """L4 on a 413: the summarize request drops whole oldest rounds until it fits the window less the
    summary's output (2.1.142, L2024: cut at once from the overflow; before: after a failed try)."""
    msgs = [Message.text_message("user", "start")]
    for k in range(10):
        msgs += step(k, "Bash", "z" * 4 * 25_000, command=f"c{k}")
    strat, sess = strategies.build(variant), session(counter)
    sent, note = strat._summary_input(msgs, sess, "L4 reactive compact")
    size = sum(sess.meter.truth(m) for m in sent)
    assert size <= SONNET.context_window - strat.summary_max_tokens and says in note
    assert sent[0].role == "assistant" and len(sent) % 2 == 0  # whole rounds: no result without its call
    assert strat._summary_input(msgs, sess, "L3 auto-compact") == (msgs, "")


@pytest.mark.parametrize("variant", ["claude-code", "claude-code:2.1.89"])
def test_reactive_cut_keeps_the_last_round_whole(counter, variant):
    """Over the window even without all its older rounds, the request keeps the last round whole (an
    answer and its results: ``truncateHeadForPTLRetry`` keeps at least one group); cutting into it
    sent the results without their calls."""
    msgs = [Message.text_message("user", "start"), *step(0, "Bash", "z" * 4 * 1_000, command="c0"),
            *step(1, "Bash", "z" * 4 * 250_000, command="c1")]
    strat, sess = strategies.build(variant), session(counter)
    sent, _ = strat._summary_input(msgs, sess, "L4 reactive compact")
    assert list(sent) == msgs[-2:] and sent[0].role == "assistant" and sent[1].is_tool_result


def compacted(counter, msgs: list[Message], variant: str = "claude-code"):
    ctx = Meter(counter, "chars/4").context([Message.text_message("system", "s"), *msgs,
                                              Message.text_message("user", "go on")])
    new, events = strategies.build(variant)._compact(ctx, session(counter), "L3 auto-compact")
    return [m.text for m in new.messages if m.meta.get("synthetic")]


def test_an_edited_file_comes_back_with_its_current_content(counter):
    """Claude Code re-reads each file from disk: a file edited after its read comes back edited."""
    text = "\n".join(f"line {k}" for k in range(40))
    msgs = [*step(1, "Read", numbered(text), file_path="/a.py"),
            *step(2, "Edit", "The file /a.py has been updated.", file_path="/a.py", old_string="line 7",
                  new_string="line seven")]
    (restored,) = compacted(counter, msgs)
    assert "line seven" in restored and "line 7\n" not in restored and "/a.py" in restored


def test_a_big_file_seen_in_part_comes_back_as_a_reference(counter):
    """A part (lines 1,900-1,999 of a long file) stands for the whole file, over 5K tokens: path only."""
    part = "\n".join("x = compute(alpha, beta, gamma)  # a line of code" for _ in range(100))
    msgs = step(1, "Read", numbered(part, 1_900), file_path="/big.py", offset=1_900, limit=100)
    (restored,) = compacted(counter, msgs)
    assert restored.startswith("Note: /big.py was read before this summary") and len(restored) < 300


def restored_after(counter, text: str, ratio: float = 1.0) -> str:
    msgs = [Message.text_message("system", "s"), *step(1, "Read", numbered(text), file_path="/f.txt"),
            Message.text_message("user", "go on")]
    sess = Session(SONNET, Meter(counter, "chars/4", ratio=ratio), ExtractiveSummarizer())
    new, _ = ClaudeCode()._compact(Meter(counter, "chars/4").context(msgs), sess, "L3 auto-compact")
    (restored,) = [m.text for m in new.messages if m.meta.get("synthetic")]
    return restored


def test_the_per_file_limit_is_judged_on_the_provider_count_of_the_raw_content(counter):
    """Read's check (FileReadTool.ts validateContentTokens): chars/4 of the raw content up to a quarter
    of the limit passes, above that the API's count decides. A file of short tokens under 5K by chars/4
    of its numbered lines but over 5K by count comes back as a reference; one of long words, as large
    by chars/4, comes back whole; a small file comes back whole whatever the session's ratio."""
    short = "\n".join("a b c d e f g h i j" for _ in range(700))  # ~7K tokens, 4.7K by numbered chars/4
    assert len(numbered(short)) / 4 < 5_000 < counter.text(short)
    assert restored_after(counter, short).startswith("Note: /f.txt was read before this summary")
    dense = "\n".join("abcdefghijklmnopqrs" for _ in range(700))
    assert counter.text(dense) < 5_000
    assert restored_after(counter, dense).startswith("Re-read after compaction")
    small = "\n".join("a b c d e f g h i j" for _ in range(200))  # 1.0K by chars/4: no API count
    assert restored_after(counter, small, ratio=10.0).startswith("Re-read after compaction")
    assert restored_after(counter, small * 2, ratio=10.0).startswith("Note:")  # 2.0K: counted, 10x over


def test_invoked_skills_are_reinjected_within_their_limits_from_2_1_21(counter):
    body = "Base directory for this skill: /h/.claude/skills/review\n\n# Review\n" + "rule. " * 8_000
    msgs = [*step(1, "Skill", "Launching skill: review", skill="review"),
            Message.text_message("user", body, meta={"injected": True})]
    (skills,) = compacted(counter, msgs)
    assert "### Skill: /h/.claude/skills/review" in skills and skills.endswith(SKILL_TRUNCATED)
    assert len(skills) < 4 * 5_000 + 400  # cut to 5K tokens
    assert compacted(counter, msgs, "claude-code:2.0") == []


def test_todo_list_and_plan_file_are_reinjected(counter):
    todos = [{"content": "write the parser", "status": "in_progress", "activeForm": "Writing the parser"}]
    msgs = [*step(1, "TodoWrite", "Todos have been modified successfully.", todos=todos),
            *step(2, "Write", "File created successfully.", file_path="/h/.claude/plans/p.md",
                  content="# Plan\n1. parse")]
    restored = compacted(counter, msgs)
    assert any("write the parser" in t for t in restored)
    assert any(t.startswith("The plan-mode plan file /h/.claude/plans/p.md") and "1. parse" in t for t in restored)
    assert not any(t.startswith("Re-read after compaction") for t in restored)  # the plan is no restored file


def test_a_summary_in_the_step_is_summarized_not_kept(counter):
    """A compact summary (the recorded one, when the replay compacts where the agent did) is no
    human prompt that opens the step: it goes into the new summary instead of being kept beside it."""
    old = Message.text_message("user", "This session is being continued ... " * 200, meta={"summary": True})
    msgs = [Message.text_message("system", "s"), Message.text_message("user", "go"),
            *step(1, "Bash", "q" * 4_000, command="ls"), old]
    ctx = Meter(counter, "chars/4").context(msgs)
    new, _ = ClaudeCode()._compact(ctx, session(counter), "L3 auto-compact")
    assert old not in new.messages and sum(1 for m in new.messages if m.meta.get("summary")) == 1


@pytest.mark.slow
def test_recorded_sessions_compact_where_the_agent_did(shared_traces):
    """Check, not fit: the automatic recorded compactions within ±1 call (±2 after an earlier one), the
    first call after within ±15% but for one, and none in the 2.1.22
    session that reached 155,808. fdd24234 (2.1.17) is in since its prompt's drop at call 29 (42K, no
    record) is the legacy microcompact (microcompact.legacy_microcompact) and is taken off the
    outputs it cleared (attribution ``_cleared_by_agent``); before, the replay fired 70 calls early."""
    from bench.cli.fidelity import recorded_profile, rows
    from bench.replay.loop import COMPACTION_KINDS, ReplayConfig, replay
    from bench.replay.provider import adopt_shipped, shipped_counts
    from bench.tokens.counter import TokenCounter
    from traces.formats import load

    paths = [str(shared_traces / "claude-code__entireio-cli"), str(shared_traces / "claude-code__marot-spotter")]
    traces = [t for t in load(paths).traces if not t.meta.get("sidechain")]
    table = [r for t in traces for r in rows(t)]
    auto = [r for r in table if r["trigger"] == "auto"]
    # the first of each session within ±1 call; a later one follows our own earlier compaction, whose
    # context (summary and re-attachments counted in provider units) runs 1-7% over the recorded one at
    # about 1K tokens a call, so it may land up to 4 calls early (2.1.37's second: -4, 2.1.1's: -2)
    first = [r for r in auto if r is next(x for x in auto if x["trace"] == r["trace"])]
    assert len(auto) >= 13 and all(abs(r["call_delta"]) <= 1 for r in first), auto
    assert all(abs(r["call_delta"]) <= 4 for r in auto), auto
    # outside ±15%: e8811ad6 (2.1.42, 0.82: the hooks and re-announcements after compact are not modelled)
    # and 1284c080's second (1.15, fired 4 calls early, so it summarized more)
    within = [r for r in auto if abs(r["replayed_post"] / r["recorded_post"] - 1) <= 0.15]
    assert len(within) >= len(auto) - 2, auto
    quiet = next(t for t in traces if t.meta.get("version") == "2.1.22")

    def fired(variant: str) -> int:
        counter = TokenCounter()
        adopt_shipped(counter, quiet, shipped_counts(quiet, TokenCounter()))
        config = ReplayConfig(recorded_profile(quiet), recorded_models=True)
        result = replay(quiet, strategies.build(variant), config, counter=counter)
        return sum(1 for e in result.events if e.kind in COMPACTION_KINDS)

    assert fired("claude-code:2.1.21") == 0
    # the 155K rule would have compacted it, had the recorded microcompacts not cleared old outputs first
    assert fired("claude-code:2.0@honour_microcompact=False") > 0


@pytest.mark.parametrize("variant", ["claude-code:2.0", "claude-code:2.1.21", "claude-code"])
def test_a_recorded_microcompact_clears_exactly_the_recorded_outputs_before_the_next_call(counter, variant):
    """Claude Code 2.1.17-2.1.22 cleared old outputs without a summary (``microcompact_boundary``
    with ``compactedToolIds``; strategies/claude_code/microcompact.py): the replay clears those
    ids, and only those, before the next call, and the context after is smaller by them. Without
    the record (``honour_microcompact=False``) nothing is cleared."""
    old, kept = step(1, "Read", "a" * 40_000, file_path="/a"), step(2, "Read", "b" * 40_000, file_path="/b")
    last = Message("user", (ToolResult("t2", "b" * 40_000),), meta={"microcompact": ("t1",)})
    msgs = [Message.text_message("system", "s"), Message.text_message("user", "go"), *old, kept[0], last]
    ctx = Meter(counter, "chars/4").context(msgs)
    out = strategies.build(variant).before_call(ctx, session(counter, last_usage=Usage(30_000, 10, 0, 0)))
    assert out is not None and [e.kind for e in out.events] == ["prune"]
    results = {r.tool_use_id: r.content for m in out.context.messages for r in m.tool_results}
    assert results == {"t1": "[Old tool result content cleared]", "t2": "b" * 40_000}
    assert out.context.truth < ctx.truth - 4_000  # t1 (~5K tokens) is gone
    off = strategies.build(f"{variant}@honour_microcompact=False")
    assert off.before_call(ctx, session(counter, last_usage=Usage(30_000, 10, 0, 0))) is None


def test_a_recorded_microcompact_does_not_lower_the_count_autocompact_checks_with(counter):
    """Claude Code's autocompact check after a microcompact still counts from the last usage (the
    2.1.20 session cleared ~38K and compacted at that same check, preTokens 176,700): a count over
    the threshold compacts although the outputs were just cleared."""
    msgs = [Message.text_message("system", "s"), Message.text_message("user", "go"),
            *step(1, "Read", "a" * 40_000, file_path="/a"), Message.text_message("assistant", "ok"),
            Message("user", (ToolResult("t9", "y"),), meta={"microcompact": ("t1",)})]
    ctx = Meter(counter, "chars/4").context(msgs)
    out = strategies.build("claude-code:2.0").before_call(ctx, session(counter, last_usage=Usage(156_000, 10, 0, 0)))
    assert out is not None and [e.kind for e in out.events][:2] == ["prune", "summarize"]


def outputs(n: int, chars: int, name: str = "Read") -> list[Message]:
    return [m for i in range(n) for m in step(i, name, f"{i:03d}" + "x" * (chars - 3), file_path=f"/f{i}")]


def legacy(counter, msgs: list[Message], prompt: int, variant: str = "claude-code:2.1.17"):
    ctx = Meter(counter, "chars/4").context([Message.text_message("system", "s"), *msgs,
                                             Message.text_message("user", "go on")])
    return ctx, strategies.build(variant).before_call(ctx, session(counter, last_usage=Usage(prompt, 10, 0, 0)))


def test_the_legacy_microcompact_keeps_the_newest_40k_and_clears_what_is_older(counter):
    """2.1.17-2.1.22 (microcompact.legacy_microcompact): over the warning threshold (155K - 20K), every
    compactable output older than the newest 40K tokens (chars/4) is cleared when that saves 20K;
    Task outputs are never cleared. Twelve 4K outputs: the newest ten (40K) stay, two are older (8K,
    too little); sixteen: six older (24K) are cleared."""
    _, out = legacy(counter, outputs(12, 16_000), 140_000)
    assert out is None
    ctx, out = legacy(counter, outputs(16, 16_000), 140_000)
    assert out is not None and [e.kind for e in out.events] == ["prune"]
    cleared = [r.tool_use_id for m in out.context.messages for r in m.tool_results
               if r.content == "[Old tool result content cleared]"]
    assert cleared == [f"t{i}" for i in range(6)]
    # under the warning threshold, in the 2.1.21 generation, or a Task output: nothing
    assert legacy(counter, outputs(16, 16_000), 125_000)[1] is None  # + the newest output, ~5K: < 135K
    assert legacy(counter, outputs(16, 16_000), 140_000, "claude-code:2.1.21")[1] is None
    assert legacy(counter, outputs(16, 16_000, "Task"), 140_000)[1] is None


def test_the_legacy_microcompact_leaves_the_autocompact_count_alone(counter):
    """Cleared or not, the autocompact check counts from the last usage (the 2.1.20 session cleared
    29 outputs and compacted at the same check): a count over 155K summarizes after the clearing."""
    _, out = legacy(counter, outputs(16, 16_000), 156_000)
    assert out is not None and [e.kind for e in out.events][:2] == ["prune", "summarize"]


def test_an_unrecorded_drop_in_a_claude_prompt_is_taken_off_the_oldest_cleared_outputs(counter):
    """Claude keeps its thinking, so a prompt below what was held is the agent's doing (its microcompact,
    recorded or not, bench/tokens/attribution.py ``_cleared_by_agent``): the loss is taken off the
    outputs it clears (the named ones first, then the oldest Read/Bash/... ones), not charged to the
    messages that follow (which were counted as nothing until the prompt grew back)."""
    from bench.tokens.attribution import attribute

    msgs = [Message.text_message("user", "start")]
    prompt = 20_000
    for i in range(8):
        prompt += 2_000
        msgs += [Message("assistant", (ToolUse(f"t{i}", "Task" if i == 0 else "Read", {"file_path": f"/f{i}"}),),
                         usage=Usage(prompt, 5, 0, 0)),
                 Message("user", (ToolResult(f"t{i}", f"{i}" + "y" * 7_000),))]
    msgs += [Message.text_message("assistant", "done", usage=Usage(prompt + 2_000, 5, 0, 0)),
             Message.text_message("user", "next"),
             Message.text_message("assistant", "ok", usage=Usage(prompt + 2_000 - 5_000, 5, 0, 0)),
             Message.text_message("user", "more"),
             Message.text_message("assistant", "fine", usage=Usage(prompt + 2_000 - 4_990, 5, 0, 0))]
    from traces.model import Trace
    a = attribute(Trace("t", tuple(msgs), agent="claude-code", model="claude-opus-4-5"), counter)
    dropped = [i for i, at in enumerate(a.dropped_at) if at is not None]
    # the Task output (message 2) is never cleared; the oldest Read outputs (~2K each) carry the loss
    assert dropped == [4, 6, 8], a.notes
    assert sum(a.counts[i] - a.persistent[i] for i in dropped) >= 4_990
    assert a.counts[-2] > 0  # "more", after the drop, has its own size
