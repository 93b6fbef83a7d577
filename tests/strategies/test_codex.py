"""Codex local compaction (spec/strategies.md §3): trigger, the 20K user-message walk, the retry
that drops the oldest item, the rebuilt history and tool-output truncation. Sizes are ASCII, so
bytes/4 is exact: "u" * 4n is n tokens."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

import strategies
from bench.context.messages import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.summarizers import Summary, SummaryRequest
from strategies.codex import SUMMARY_PREFIX, Codex, approx_tokens, middle_truncate
from traces.model import Message, Text, ToolResult, ToolUse, Trace, Usage, orphans

SONNET = profile("claude-sonnet-4-5")
TINY = replace(SONNET, id="tiny-16k", context_window=16_000, max_output=2_000)
SYSTEM = Message.text_message("system", "You are Codex.")


class Recorder:
    name = "recorder"

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> Summary:
        self.requests.append(request)
        return Summary("SUMMARY", 0, 0, self.name)


def session(counter, model=SONNET, summarizer=None) -> tuple[Session, Recorder]:
    recorder = summarizer or Recorder()
    return Session(model, Meter(counter, "bytes/4"), recorder), recorder


def user(text: str) -> Message:
    return Message.text_message("user", text)


def test_limits_90_percent_of_the_window_or_the_flat_256k_of_2025():
    assert Codex().limit(200_000) == 180_000
    assert strategies.build("codex:2025").limit(200_000) == 256_000  # never reached in a 200K window
    assert Codex(auto_compact_limit=150_000).limit(200_000) == 150_000  # min(configured, 90%)


def call(cid: str, cmd: str = "ls") -> Message:
    return Message("assistant", (ToolUse(cid, "shell", {"cmd": cmd}),))


def output(cid: str, text: str) -> Message:
    return Message("user", (ToolResult(cid, text),))


def test_trigger_is_last_total_plus_bytes4_of_what_came_since(counter):
    """Mid-turn: the tool outputs recorded after the last answer count at bytes/4 (history.rs
    items_after_last_model_generated_item); with no window recorded, 90% of the profile's window."""
    msgs = [SYSTEM, user("task"), call("c0"), output("c0", "u" * 4_000)]  # the output: 1,000 tokens
    ctx = Meter(counter, "bytes/4").context(msgs)
    assert ctx.est(msgs[-1]) == 1_000
    s, recorder = session(counter)
    s.last_usage = Usage(input_tokens=170_000, cache_read_tokens=8_000, output_tokens=999)  # +1,000 = 179,999
    assert Codex().before_call(ctx, s) is None
    s.last_usage = Usage(input_tokens=170_000, cache_read_tokens=8_000, output_tokens=1_000)  # 180,000
    out = Codex().before_call(ctx, s)
    assert out is not None and [e.kind for e in out.events] == ["summarize"]
    assert [(m.role, m.text) for m in out.context.messages] == [
        ("system", "You are Codex."), ("user", "task"), ("user", SUMMARY_PREFIX + "\nSUMMARY")]


def test_pre_turn_check_counts_nothing_of_the_new_turn_and_puts_it_after_the_new_history(counter):
    """run_turn runs run_pre_sampling_compact before the turn's context updates and user message are
    recorded: a new request after the last answer is not counted, not compacted, and follows the
    summary. The 2025 generation recorded it first and counted it."""
    msgs = [SYSTEM, user("task"), Message.text_message("assistant", "done"), user("u" * 4_000)]  # 1,000
    ctx = Meter(counter, "bytes/4").context(msgs)
    s, recorder = session(counter)
    s.last_usage = Usage(input_tokens=179_000, output_tokens=999)  # 179,999 + the new request's 1,000
    assert Codex().before_call(ctx, s) is None
    assert strategies.build("codex:2025").total(ctx, s) == 180_999
    s.last_usage = Usage(input_tokens=179_000, output_tokens=1_000)  # 180,000 without it
    out = Codex().before_call(ctx, s)
    assert [(m.role, m.text) for m in out.context.messages] == [
        ("system", "You are Codex."), ("user", "task"), ("user", SUMMARY_PREFIX + "\nSUMMARY"), ("user", "u" * 4_000)]
    assert recorder.requests[0].messages == tuple(msgs[:3])  # the new request was not summarized
    remote = strategies.build("codex:remote").before_call(ctx, s).context.messages
    assert [m.text for m in remote] == ["You are Codex.", "task", "done", "SUMMARY", "u" * 4_000]


def test_user_message_walk_stops_at_the_first_that_does_not_fit():
    old_small, big, newer, newest = "o" * 400, "b" * 60_000, "n" * 24_000, "w" * 16_000  # 100, 15K, 6K, 4K
    kept = Codex().recent_user_messages([old_small, big, newer, newest])
    # newest 4,000 + newer 6,000 leave 10,000: big is cut to 10,000 tokens and the walk stops there
    assert kept[1:] == [newer, newest] and len(kept) == 3
    # 40,000 bytes: the 27-byte marker leaves 19,986 + 19,987; 20,027 bytes removed = 5,007 tokens
    assert kept[0] == "b" * 19_986 + "…5007 tokens truncated…" + "b" * 19_987
    assert approx_tokens(kept[0]) == 10_000
    assert old_small not in kept  # smaller and older, but not taken


def test_previous_summaries_and_session_prefixes_are_not_kept_as_user_messages(counter):
    msgs = [SYSTEM, user("<environment_context>cwd=/x</environment_context>"), user("real request"),
            user(SUMMARY_PREFIX + "\nold summary"), user("follow-up")]
    s, _ = session(counter)
    out = Codex().on_overflow(Meter(counter, "bytes/4").context(msgs), s)
    # not kept as user messages; the environment context comes back as initial context (issue 27),
    # above the last real user message (mid-turn, compact.rs @e06dd0e5 BeforeLastUserMessage)
    assert [m.text for m in out.context.messages[1:-1]] == [
        "real request", "<environment_context>cwd=/x</environment_context>", "follow-up"]


def test_2025_generation_rebuilds_one_history_bridge_message(counter):
    msgs = [SYSTEM, user("first request"), Message.text_message("assistant", "working"), user("second request")]
    s, recorder = session(counter)
    out = strategies.build("codex:2025").on_overflow(Meter(counter, "bytes/4").context(msgs), s)
    assert [m.role for m in out.context.messages] == ["system", "user"]
    bridge = out.context.messages[1].text
    summary = out.events[0]
    assert bridge.startswith("You were originally given instructions from a user over one or more turns. "
                             "Here were the user messages:\n\nfirst request\n\nsecond request\n\n" + SUMMARY_PREFIX)
    assert summary.kind == "summarize"
    empty = [SYSTEM, Message.text_message("assistant", "no user yet")]
    none_kept = strategies.build("codex:2025").on_overflow(Meter(counter, "bytes/4").context(empty), s)
    assert "Here were the user messages:\n\n(none)\n\n" in none_kept.context.messages[1].text


def test_compaction_request_over_the_window_drops_the_oldest_item_and_retries(counter):
    big = " ".join(f"w{i}" for i in range(6_000))  # about 12K truth tokens
    msgs = [SYSTEM, call("c0", "cat big"), output("c0", big), user("now fix it " * 300), user("and test it"),
            call("c1", "pytest"), output("c1", "1 failed")]
    ctx = Meter(counter, "bytes/4").context(msgs)
    assert not TINY.fits(ctx.truth, 0)
    s, recorder = session(counter, model=TINY)
    out = Codex().on_overflow(ctx, s)
    sent = recorder.requests[0].messages
    # the oldest item is the call: its output goes with it, and then the request fits
    assert sent == (SYSTEM, *msgs[3:])
    assert out.events[0].detail == "trimmed 1 oldest item(s)"
    assert [m.text for m in out.context.messages[1:3]] == [msgs[3].text, "and test it"]


def test_tool_outputs_are_cut_at_record_time(counter):
    long = "".join(f"{i:07d}\n" for i in range(7_000))  # 56,000 bytes > 10,000 tokens x 1.2 = 48,000 bytes
    msgs = [SYSTEM, user("go"), Message("assistant", (ToolUse("c0", "shell", {}),)),
            Message("user", (ToolResult("c0", long),))]
    s, _ = session(counter, replace(SONNET, id="gpt-5.1-codex"))  # a *-codex family: Tokens(10_000)
    out = Codex().on_tool_result(Meter(counter, "bytes/4").context(msgs), s)
    cut = out.context.messages[-1].tool_results[0].content
    # the 27-byte marker leaves 47,973 bytes: 23,986 of head, 23,987 of tail; 8,027 bytes = 2,007 tokens
    assert cut == long[:23_986] + "…2007 tokens truncated…" + long[-23_987:]
    assert len(cut.encode()) == 48_000
    assert middle_truncate("a" * 50 + "b" * 50, 60, "bytes") == "a" * 18 + "…64 chars truncated…" + "b" * 18
    assert Codex().on_tool_result(Meter(counter, "bytes/4").context(msgs[:-1] + [user("x")]), s) is None


@pytest.mark.parametrize("model", ["gpt-5", "gpt-5.1", "claude-sonnet-4-5"])
def test_tool_outputs_of_base_and_unknown_models_are_cut_at_10k_bytes(counter, model):
    """models.json truncation_policy: Bytes(10_000) is the default; only *-codex has Tokens(10_000)."""
    long = "".join(f"{i:07d}\n" for i in range(2_000))  # 16,000 bytes: under 48,000 bytes, over 12,000
    msgs = [SYSTEM, user("go"), Message("assistant", (ToolUse("c0", "shell", {}),)),
            Message("user", (ToolResult("c0", long),))]
    s, _ = session(counter, replace(SONNET, id=model))
    cut = Codex().on_tool_result(Meter(counter, "bytes/4").context(msgs), s).context.messages[-1].tool_results[0]
    assert len(cut.content.encode()) == 12_000 and "chars truncated" in cut.content
    assert Codex().output_unit("gpt-5.2-codex-max") == "tokens" and Codex().output_unit(model) == "bytes"
    assert Codex(tool_output_unit="tokens").output_unit(model) == "tokens"


@pytest.mark.parametrize("name", ["codex", "codex:2025", "codex:remote", "codex:0.140-remote"])
def test_end_to_end_replay_has_no_orphans(counter, name):
    msgs = [SYSTEM, user("U0: fix the bug")]
    for k in range(12):
        output = "".join(f"line {i}: value {i * 7} in /src/f{k}.py\n" for i in range(180))
        msgs += [Message("assistant", (ToolUse(f"c{k}", "shell", {"cmd": str(k)}),)),
                 Message("user", (ToolResult(f"c{k}", output),))]
        if k % 4 == 3:
            msgs.append(user(f"U{k}: keep going"))
    msgs.append(Message.text_message("assistant", "finished"))
    sent: list = []

    class Spy:
        def __init__(self, inner) -> None:
            self.inner, self.name, self.estimator = inner, inner.name, inner.estimator

        def __getattr__(self, hook: str):
            return getattr(self.inner, hook)

        def project(self, ctx, session):
            sent.append(ctx)
            return ctx

    result = replay(Trace("synthetic", tuple(msgs)), Spy(strategies.build(name)), ReplayConfig(TINY), counter=counter)
    assert result.error is None and result.failed is None
    assert "summarize" in {e.kind for e in result.events}
    assert len(sent) >= 13 and all(orphans(ctx.messages) == (set(), set()) for ctx in sent)
    assert not any(c.overflow for c in result.calls)


def final(text: str) -> Message:
    return Message.text_message("assistant", text)


def test_remote_compaction_keeps_every_user_message_and_final_answer_then_the_item(counter):
    """compact_remote.rs process_compacted_history + the recorded server answer: real user
    messages (no 20K cap) and final answers stay in order, the initial context goes above the last
    real user message, tool traffic / commentary / thinking / developer items go, the item is last."""
    from traces.model import Thinking

    huge = "h" * 120_000  # 30K tokens: over the local 20K walk, kept whole here
    dev = Message("user", (Text("<permissions>sandboxed</permissions>"),), meta={"role": "developer"})
    env = user("<environment_context>cwd=/x</environment_context>")
    msgs = [SYSTEM, dev, env, user("first request"),
            Message("assistant", (Thinking("hmm"), Text("looking"), ToolUse("c0", "shell", {"cmd": "ls"}))),
            Message("user", (ToolResult("c0", "a.py b.py"),)),
            Message("assistant", (Thinking("done"), Text("first answer"))),
            user(SUMMARY_PREFIX + "\nan older local summary"),
            Message("user", (Text("an older remote item"),), meta={"summary": True, "opaque": True}),
            user(huge), dev, env, user("third request"),
            Message("assistant", (ToolUse("c1", "shell", {"cmd": "pytest"}),)),
            Message("user", (ToolResult("c1", "1 failed"),))]
    s, recorder = session(counter)
    out = strategies.build("codex:remote").before_call(Meter(counter, "bytes/4").context(msgs), s) \
        or strategies.build("codex:remote").on_overflow(Meter(counter, "bytes/4").context(msgs), s)
    got = out.context.messages
    assert [(m.role, m.text) for m in got] == [
        ("system", "You are Codex."), ("user", "first request"), ("assistant", "first answer"),
        ("user", SUMMARY_PREFIX + "\nan older local summary"), ("user", huge),
        ("user", dev.text), ("user", env.text), ("user", "third request"), ("user", "SUMMARY")]
    assert got[5].meta.get("role") == "developer"
    assert got[-1].meta.get("summary") and not any(m.tool_uses or m.tool_results for m in got)
    assert not any(isinstance(b, Thinking) for m in got for b in m.blocks)
    assert recorder.requests[0].messages == tuple(msgs)  # the whole history went to the server
    assert "kept 4 user message(s), 1 final answer(s), 2 initial-context item(s)" in out.events[0].detail
    # the local engine on the same history: only the 20K walk of user messages, no answers
    local = Codex().on_overflow(Meter(counter, "bytes/4").context(msgs), session(counter)[0]).context.messages
    assert "first answer" not in [m.text for m in local] and approx_tokens(local[1].text) <= 20_000


def test_remote_compaction_fires_on_the_local_trigger(counter):
    """run_auto_compact only picks the task: the limit is the same auto_compact_token_limit."""
    msgs = [SYSTEM, user("task"), call("c0"), output("c0", "u" * 4_000)]
    ctx = Meter(counter, "bytes/4").context(msgs)
    s, _ = session(counter)
    for usage, fires in ((Usage(input_tokens=178_000, output_tokens=999), False),
                         (Usage(input_tokens=178_000, output_tokens=1_000), True)):
        s.last_usage = usage
        assert (Codex(engine="remote").before_call(ctx, s) is not None) is fires
        assert (Codex().before_call(ctx, s) is not None) is fires
    assert strategies.build("codex:0.140-remote").limit(272_000) == strategies.build("codex:0.140").limit(272_000)
    with pytest.raises(ValueError, match="engine"):
        Codex(engine="server")


def test_remote_request_over_the_window_drops_trailing_tool_outputs(counter):
    """trim_function_call_history_to_fit_context_window: newest Codex-generated items go first."""
    big = " ".join(f"w{i}" for i in range(6_000))  # about 12K truth tokens
    msgs = [SYSTEM, user("fix it"), Message("assistant", (ToolUse("c0", "shell", {"cmd": "cat"}),)),
            Message("user", (ToolResult("c0", big),))]
    ctx = Meter(counter, "bytes/4").context(msgs)
    assert not TINY.fits(ctx.truth, 0)
    s, recorder = session(counter, model=TINY)
    out = strategies.build("codex:remote").on_overflow(ctx, s)
    assert recorder.requests[0].messages == tuple(msgs[:2])  # the output's call went with it
    assert "trimmed 1 trailing output(s)" in out.events[0].detail
    assert [m.text for m in out.context.messages[1:]] == ["fix it", "SUMMARY"]


def test_remote_trim_takes_each_trimmed_outputs_call_out_too(counter):
    """Codex's ``remove_last_item`` removes a trimmed output's call with it (remove_corresponding_for), so
    the compaction request never holds a call without its output: the assistant's text stays, the
    calls answered earlier stay, and every request is one the API accepts."""
    big = " ".join(f"w{i}" for i in range(6_000))
    early = [Message("assistant", (ToolUse("c0", "shell", {"cmd": "ls"}),)),
             Message("user", (ToolResult("c0", "a.py"),))]
    said = Message("assistant", (Text("Reading both."), ToolUse("c1", "shell", {"cmd": "cat a"}),
                                 ToolUse("c2", "shell", {"cmd": "cat b"})))
    msgs = [SYSTEM, user("fix it"), *early, said, Message("user", (ToolResult("c1", big), ToolResult("c2", big)))]
    ctx = Meter(counter, "bytes/4").context(msgs)
    s, recorder = session(counter, model=TINY)
    out = strategies.build("codex:remote").on_overflow(ctx, s)
    sent = recorder.requests[0].messages
    assert sent[:4] == (SYSTEM, msgs[1], *early)
    assert sent[4].text == "Reading both." and sent[4].tool_uses == ()
    assert len(sent) == 5 and orphans(sent) == (set(), set())
    assert "trimmed 1 trailing output(s)" in out.events[0].detail


# --- Codex 0.104-0.142: what the trigger counts and against what (issue 24) ---------------------

GPT54 = replace(profile("gpt-5.2"), id="gpt-5.4", max_input=258_400)
"""A call windowed as a 0.119 rollout recorded it: model_context_window 258,400 is the input limit."""


def answer(text: str, **meta) -> Message:
    return Message("assistant", (Text(text),), meta=meta)


def test_the_limit_is_90_percent_of_the_raw_window_behind_the_recorded_effective_one(counter):
    """The rollout records raw × 95% (258,400); Codex compacts at 90% of the raw 272,000 = 244,800,
    not at 90% of 258,400 = 232,560 (openai_models.rs auto_compact_token_limit; openai/codex#19319,
    #31860). A window the rollout did not record (a forced model) is taken as the raw one."""
    msgs = [SYSTEM, user("task"), answer("x", context_window=258_400, model="gpt-5.4"),
            user("go on"), call("c0"), output("c0", "ok")]
    ctx = Meter(counter, "bytes/4").context(msgs)
    s, _ = session(counter, model=GPT54)
    assert Codex().raw_window(ctx, s) == 272_000
    s.last_usage = Usage(input_tokens=240_000, output_tokens=4_000)  # + the output's 1 token = 244,001
    assert Codex().before_call(ctx, s) is None  # 90% of 258,400 would have fired
    s.last_usage = Usage(input_tokens=240_000, output_tokens=4_800)
    assert Codex().before_call(ctx, s) is not None
    spark = [SYSTEM, user("task"), answer("x", context_window=121_600)]
    s2, _ = session(counter, model=replace(GPT54, id="gpt-5.3-codex-spark", context_window=128_000,
                                           max_input=121_600))
    assert Codex().limit(Codex().raw_window(Meter(counter, "bytes/4").context(spark), s2)) == pytest.approx(115_200)
    forced, _ = session(counter, model=profile("gpt-5.2"))  # 272K max_input, not what the rollout recorded
    assert Codex().raw_window(ctx, forced) == 272_000


def test_encrypted_reasoning_before_the_last_user_turn_is_added_at_codex_estimate(counter):
    """history.rs get_non_last_reasoning_items_tokens: every reasoning item with encrypted content
    before the last user turn boundary, at (3/4 × len − 650) / 4 tokens; the current turn's is not
    (the server's usage has it); a developer or environment item is no boundary."""
    old = answer("a", reasoning_encrypted_lengths=[4_000, 800], reasoning_output_tokens=999)  # 588 + 0
    current = answer("b", reasoning_encrypted_lengths=[40_000])
    env = user("<environment_context>cwd=/x</environment_context>")
    msgs = [SYSTEM, user("task"), old, user("next"), env, current, call("c1"), output("c1", "")]
    ctx = Meter(counter, "bytes/4").context(msgs)
    s, _ = session(counter)
    s.last_usage = Usage(input_tokens=100_000, output_tokens=0)
    base = 100_000 + ctx.est(msgs[-1])
    assert Codex().total(ctx, s) == base + 588  # ceil((3000 - 650) / 4)
    assert Codex(count_old_reasoning=False).total(ctx, s) == base
    assert strategies.build("codex:2025").total(ctx, s) == base  # before openai/codex PR #7113


def test_a_reasoning_blob_whose_size_was_redacted_counts_its_reported_reasoning_tokens(counter):
    """The Entire CLI's copies write "REDACTED" for every blob: the call's reasoning_output_tokens
    stand in (× unsized_reasoning_factor: 1.18 by default, measured where a rollout keeps both)."""
    old = answer("a", reasoning_encrypted_unsized=2, reasoning_output_tokens=1_234)
    msgs = [SYSTEM, user("task"), old, user("next"), call("c1"), output("c1", "")]
    ctx = Meter(counter, "bytes/4").context(msgs)
    s, _ = session(counter)
    s.last_usage = Usage(input_tokens=1_000, output_tokens=0)
    base = 1_000 + ctx.est(msgs[-1])
    assert Codex().total(ctx, s) == base + round(1.18 * 1_234)
    assert Codex(unsized_reasoning_factor=1.0).total(ctx, s) == base + 1_234
    assert Codex(unsized_reasoning_factor=1.5).total(ctx, s) == base + 1_851


def test_server_history_keeps_final_answers_until_0_125_and_strips_their_reasoning(counter):
    """The recorded replacement_history holds assistant messages in 0.104 and 0.119, none in 0.125
    and 0.142 (the client keeps what the server returns: should_keep_compacted_history_item)."""
    msgs = [SYSTEM, user("task"), answer("first answer", reasoning_encrypted_lengths=[9_000]),
            user("more"), call("c0"), output("c0", "x")]
    ctx = Meter(counter, "bytes/4").context(msgs)
    s, _ = session(counter)
    kept = strategies.build("codex:remote").on_overflow(ctx, s).context.messages
    assert [m.text for m in kept] == ["You are Codex.", "task", "first answer", "more", "SUMMARY"]
    assert "reasoning_encrypted_lengths" not in kept[2].meta  # its reasoning went with the compaction
    for name in ("codex:0.125-remote", "codex:0.140-remote"):
        later = strategies.build(name).on_overflow(ctx, s).context.messages
        assert [m.text for m in later] == ["You are Codex.", "task", "more", "SUMMARY"], name


def test_remote_compaction_reinjects_the_whole_initial_context(counter):
    """build_initial_context is the full set (developer instructions, AGENTS.md, environment
    context), as the recorded 0.104/0.119 replacement_history shows; a later run that only updated
    the environment context supplies its newest copy, not the whole set."""
    dev = Message("user", (Text("<permissions instructions>sandboxed</permissions instructions>"),),
                  meta={"role": "developer"})
    agents = user("# AGENTS.md instructions for /x\n\nbe terse")
    env1 = user("<environment_context>cwd=/a</environment_context>")
    env2 = user("<environment_context>cwd=/b</environment_context>")
    msgs = [SYSTEM, dev, agents, env1, user("task"), answer("ok"), env2, user("next"), call("c0"), output("c0", "x")]
    s, _ = session(counter)
    got = strategies.build("codex:remote").on_overflow(Meter(counter, "bytes/4").context(msgs), s).context.messages
    assert [m.text for m in got] == ["You are Codex.", "task", "ok", dev.text, agents.text, env2.text, "next",
                                     "SUMMARY"]


def test_the_server_item_is_asked_at_codex_estimate_of_the_recorded_one(counter):
    """The stand-in for the encrypted compaction item is asked for at most 2,353 tokens: Codex's
    estimate (3/4 × 13,412 − 650) / 4 of the one item whose length a rollout records."""
    assert Codex().remote_item_tokens == math.ceil((13_412 * 3 // 4 - 650) / 4)
    msgs = [SYSTEM, user("task"), call("c0"), output("c0", "x")]
    s, recorder = session(counter)
    strategies.build("codex:remote").on_overflow(Meter(counter, "bytes/4").context(msgs), s)
    assert recorder.requests[-1].max_tokens == 2_353
    Codex().on_overflow(Meter(counter, "bytes/4").context(msgs), s)  # a local summary: the model's own length
    assert recorder.requests[-1].max_tokens == SONNET.max_output


@pytest.mark.parametrize(("model", "unit"), [("gpt-5.4", "tokens"), ("gpt-5.5", "tokens"),
                                             ("gpt-5.3-codex-spark", "tokens"), ("gpt-5.2", "bytes"),
                                             ("gpt-5.1", "bytes"), ("claude-sonnet-4-5", "bytes")])
def test_truncation_unit_follows_the_catalog_generation(model, unit):
    assert Codex().output_unit(model) == unit


@pytest.mark.parametrize(("version", "name"), [("0.104.0-alpha.1", "codex:remote"),
                                               ("0.119.0-alpha.28", "codex:remote"),
                                               ("0.125.0", "codex:0.125-remote"), ("0.142.2", "codex:0.140-remote")])
def test_recorded_versions_route_to_the_generation_that_keeps_what_they_kept(version, name):
    from strategies.versions import matching_strategy

    assert matching_strategy("codex", version, "openai") == name


def test_the_0_104_rollout_compacts_at_the_recorded_call_on_its_own_count(shared_traces, counter):
    """The 0.104 rollout keeps every blob's length: driven by the recorded usage, Codex's count
    (total_tokens + outputs + old reasoning: 245,5xx) crosses 244,800 exactly where it compacted,
    and the check before it (243,2xx) does not."""
    from bench.cli.fidelity import session as fidelity_session
    from traces.formats import read_path

    path = (shared_traces / "codex__madshn-localpush"
            / "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl")
    if not path.exists():
        pytest.skip(f"{path} not in ../shared/traces")
    (trace,) = read_path(path).traces
    name, rows, _ = fidelity_session(trace, driven=True)
    assert name == "codex:remote" and [(r["recorded_call"], r["replayed_call"]) for r in rows] == [(184, 184)]


@pytest.mark.parametrize("name", ["codex", "codex:remote", "codex:0.140-remote"])  # 2025: flat 256K, no fire
def test_an_output_whose_call_a_compaction_took_is_not_sent(counter, name):
    """Found by the slow contract suite (``consecutive_assistant`` shape): a second assistant
    message stands between a call and its output, the compaction before it takes the call with the
    history, and the output recorded after must not be sent alone; Codex's ``for_prompt`` drops it
    (normalize.rs ``remove_orphan_outputs``)."""
    big = "".join(f"line {i}: value {i * 7} in /src/f.py\n" for i in range(300))
    msgs = [SYSTEM, user("U0: fix the bug")]
    for k in range(3):
        msgs += [call(f"c{k}", str(k)), output(f"c{k}", big)]
    msgs += [Message("assistant", (ToolUse("open", "shell", {"cmd": "x" * 20_000}),)),
             final("a second answer before the output"), output("open", "the late output"),
             user("U1: and now?"), final("done")]
    result = replay(Trace("synthetic", tuple(msgs)), strategies.build(name), ReplayConfig(TINY), counter=counter)
    assert result.error is None and result.failed is None
    assert [e.call for e in result.events if e.kind == "summarize"] == [4]  # while "open" waits
    assert [c.invalid for c in result.calls] == [0] * len(result.calls)
    assert not any(e.kind == "invalid" for e in result.events)


def test_the_prompt_drops_only_outputs_whose_call_is_nowhere_in_the_history(counter):
    """remove_orphan_outputs keeps an output whose call is anywhere in the items (a log's result
    before its call stays, and stays flagged); the history held is not changed, only what is sent."""
    s, _ = session(counter)
    mixed = Message("user", (ToolResult("gone", "lost"), Text("U1: next")))
    msgs = (SYSTEM, user("U0"), output("early", "first"), call("early"), output("gone", "alone"), mixed)
    ctx, codex = s.meter.context(msgs), Codex()
    sent = codex.project(ctx, s)
    assert [m.blocks for m in sent.messages] == [SYSTEM.blocks, msgs[1].blocks, msgs[2].blocks, msgs[3].blocks,
                                                  (Text("U1: next"),)]
    assert ctx.messages == msgs
    assert codex.project(sent, s) is sent  # nothing left to drop: the same context
