"""Gemini CLI chat compression: split point, tool-output budget, snapshot + ack + kept 30%, refusals."""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

import pytest

import strategies
from bench.context.messages import Meter
from bench.context.session import Session
from bench.cost.pricing import profile
from bench.summarizers import Summary, SummaryRequest
from bench.tokens.counter import TokenCounter, Tokenizer, render
from strategies._tools import last_assistant_index
from strategies.gemini_cli._common import estimate_tokens, part_quarters
from strategies.gemini_cli.compression import (
    ACK,
    COMPRESSION_PROMPT_2025,
    UPDATE_SNAPSHOT,
    VERIFY_PROMPT,
    GeminiCli,
    split_point,
)
from strategies.gemini_cli.outputs import cut_tokens, truncated_output, truncated_parts
from traces.model import Image, Message, Text, ToolResult, ToolUse, Usage, orphans

SONNET = profile("claude-sonnet-4-5")
SNAP = "<state_snapshot><overall_goal>fix it</overall_goal></state_snapshot>"


@dataclass
class Stub:
    text: str = SNAP
    name: str = "stub"
    requests: list[SummaryRequest] = field(default_factory=list)

    def summarize(self, request: SummaryRequest) -> Summary:
        self.requests.append(request)
        return Summary(self.text, 0, 0, "stub")


def user(text: str) -> Message:
    return Message("user", (Text(text),))


def tool_round(i: int, size: int) -> list[Message]:
    return [Message("assistant", (ToolUse(f"c{i}", "read_file", {"path": f"f{i}"}),)),
            Message("user", (ToolResult(f"c{i}", "y" * size),))]


def session(counter, prompt_tokens: int | None, summarizer: Stub | None = None, window: int = 100_000) -> Session:
    s = Session(replace(SONNET, context_window=window), Meter(counter, "truth"), summarizer or Stub())
    s.last_usage = Usage(prompt_tokens, 10) if prompt_tokens is not None else None
    return s


def test_split_point_is_the_first_user_turn_after_70_percent():
    a, b, c = user("a" * 1000), user("b" * 1000), user("c" * 100)
    msgs = (a, *tool_round(0, 1000), b, Message("assistant", (Text("z" * 1000),)), c,
            Message("assistant", (Text("ok"),)))
    assert split_point(msgs, 0.7) == 5  # "b" lies before 70% of the characters, "c" after
    assert split_point(msgs, 0.2) == 3  # the first user turn past 20%: "b"
    # a tool response is never a split point: one prompt, then a long tool loop still in flight
    loop = (user("task"), *tool_round(0, 5000), *tool_round(1, 5000))
    assert split_point(loop, 0.7) == 0
    # no user turn after the target but the history ends on a plain answer: everything goes
    done = (user("task"), *tool_round(0, 5000), Message("assistant", (Text("done"),)))
    assert split_point(done, 0.7) == len(done)


def test_a_call_then_an_empty_assistant_message_is_not_compressed_away_from_its_result(counter):
    # a log that holds one model output as two messages: the call, then an empty message; the
    # request's own result follows. The last model turn made a call: not "safe to compress everything".
    call = Message("assistant", (ToolUse("c9", "read_file", {"path": "f9"}),))
    empty = Message("assistant", ())
    history = (user("task " * 400), *tool_round(0, 3000), *tool_round(1, 3000), call, empty)
    assert split_point(history, 0.7) == 0  # only the first user turn is a split point
    assert split_point((*history[:-2], Message("assistant", (Text("done"),)), empty), 0.7) == len(history)
    msgs = (Message.text_message("system", "sys"), user("step one " * 300), *tool_round(0, 4000),
            user("step two " * 300), *tool_round(1, 4000), call, empty, Message("user", (ToolResult("c9", "z" * 50),)))
    s = session(counter, 60_000)
    out = GeminiCli().before_call(s.meter.context(msgs), s)
    assert out is not None  # it compresses, at "step two", keeping the call with its result
    new = out.context.messages
    assert orphans(new) == (set(), set())
    assert any(u.id == "c9" for m in new for u in m.tool_uses) and new[-1] is msgs[-1]
    assert new[3:] == msgs[4:]


def test_a_call_then_an_empty_user_and_an_empty_model_message_is_a_turn_that_made_a_call():
    # the failing example the slow contract suite found: the history (before this step's result)
    # ends with a call, an empty user message and an empty model message; the CLI has no Content for
    # the empty user message, so its last model turn holds the call and it may not compress it all
    call = Message("assistant", (ToolUse("c9", "read_file", {"path": "f9"}),))
    for empty in (Message("user", ()), Message("user", (Text(""),))):
        history = (user("task " * 400), *tool_round(0, 3000), call, empty, Message("assistant", ()))
        assert split_point(history, 0.7) == 0  # before: len(history), the call compressed away
        done = (user("task " * 400), *tool_round(0, 3000), Message("assistant", (Text("done"),)),
                empty, Message("assistant", ()))
        assert split_point(done, 0.7) == len(done)  # a turn that made no call: everything


def test_an_empty_user_message_between_a_call_and_its_results_is_no_split_point():
    # the failing example the slow contract suite found: an empty user message (no content, or one
    # empty text) after a call, its results next; split there, the results lose their call
    call = Message("assistant", (ToolUse("c9", "read_file", {"path": "f9"}),))
    result = Message("user", (ToolResult("c9", "z" * 50),))
    for empty in (Message("user", ()), Message("user", (Text(""),))):
        history = (user("task " * 400), *tool_round(0, 3000), *tool_round(1, 3000), call, empty, result)
        assert split_point(history, 0.7) == 0  # before: the empty message, index 6
        assert split_point((*history[:5], user("go on"), *history[5:]), 0.7) == 5  # a real turn still is


def test_the_budget_estimates_text_as_the_cited_commit_does():
    """estimateTextTokens @5411f113: 1/4 token per ASCII code unit, 1.5 per other UTF-16 code unit
    (a character beyond the BMP is two), the sum floored; over 100,000 code units, length / 4."""
    assert estimate_tokens("a" * 1_001) == 250  # 250.25
    assert estimate_tokens("é") == 1  # 1.5
    assert estimate_tokens("😀") == 3  # two code units
    assert estimate_tokens("ab😀") == 3  # 0.5 + 3.0
    assert estimate_tokens("😀" * 50_001) == 25_000  # 100,002 code units: length / 4
    assert estimate_tokens("é" * 100_000) == 150_000  # 100,000 code units: still the per-unit rule


def test_a_content_is_sized_as_estimateTokenCountSync_sizes_its_parts():
    """Four times the estimate, exact: text by code unit; a function response as the JSON of
    {output}; a function call as the JSON of the part; an image 3,000 tokens; floored once."""
    assert part_quarters(user("abc")) == 3 and part_quarters(user("é")) == 6
    assert part_quarters(Message("user", (ToolResult("c1", 'say "hi"\n'),))) == len('{"output":"say \\"hi\\"\\n"}')
    call = Message("assistant", (Text("ok"), ToolUse("c1", "read_file", {"path": "a.py"})))
    assert part_quarters(call) == 2 + len('{"functionCall":{"name":"read_file","args":{"path":"a.py"}}}')
    assert part_quarters(Message("user", (Image(),))) == 12_000


def test_a_compression_is_refused_by_the_clis_estimate_of_the_new_history_not_our_count(counter):
    """COMPRESSION_FAILED_INFLATED_TOKEN_COUNT compares calculateRequestTokenCount of the new history
    (a character estimate) with the last prompt's count (l.425-445 @5411f113). A summary of one-letter
    words costs about a token every two characters, and the estimate reads a quarter token a
    character: our count of the new history is well over the estimate, and only the estimate decides."""
    msgs = conversation()
    strategy = GeminiCli(verify=False)
    stub = Stub(text=" a" * 6_000)
    s = session(counter, 90_000, stub, window=100_000)
    done = strategy.before_call(s.meter.context(msgs), s)
    pending = len(msgs) - last_assistant_index(msgs) - 1  # this step's messages: sent after the history
    new = done.context.messages
    kept = new[1:len(new) - pending]  # the new history: snapshot, ack, the kept 30% (no system prompt)
    estimate = strategy.estimated(kept, s)
    ours = sum(done.context.tok(m) for m in kept)
    assert ours > estimate * 1.5
    for original, refused in ((estimate, False), (estimate - 1, True)):
        s = session(counter, original, Stub(text=" a" * 6_000), window=original)
        assert (strategy.before_call(s.meter.context(msgs), s) is None) is refused
        assert s.state["gemini_failed"] is refused


def test_old_tool_outputs_over_the_budget_are_cut_newest_kept():
    history = (user("task"), *tool_round(0, 120_000), *tool_round(1, 120_000), *tool_round(2, 120_000))
    assert estimate_tokens("y" * 120_000) == 30_000
    out = GeminiCli().truncate(history, 7)
    contents = [b.content for m in out for b in m.tool_results]
    assert contents[2] == "y" * 120_000  # newest: within the 50K budget
    for cut in contents[:2]:  # 30K + 30K > 50K: the older ones keep 8,000 + 32,000 characters
        assert cut.startswith("Output too large. Showing first 8,000 and last 32,000 characters.")
        assert "[80,000 characters omitted]" in cut and len(cut) < 40_300
    assert GeminiCli(function_response_budget=None).truncate(history, 7) == history


def conversation() -> tuple[Message, ...]:
    return (Message.text_message("system", "sys"), user("step one " * 200), *tool_round(0, 4000),
            user("step two " * 200), *tool_round(1, 4000), user("step three"), *tool_round(2, 400))


def test_compresses_to_snapshot_ack_and_the_kept_tail(counter):
    msgs = conversation()
    stub = Stub()
    s = session(counter, 60_000, stub)
    ctx = s.meter.context(msgs)
    assert GeminiCli().before_call(ctx, session(counter, 49_999)) is None  # under half of 100K
    out = GeminiCli().before_call(ctx, s)
    new = out.context.messages
    assert new[0] is msgs[0] and new[1].text == SNAP and new[1].meta["summary"]
    assert new[2].role == "assistant" and new[2].text == ACK
    split = split_point(msgs[1:-1], 0.7) + 1  # this request's own tool result is not in the history yet
    assert new[3:] == msgs[split:] and msgs[split].text == "step three"  # the newest 30%, verbatim
    assert orphans(new) == (set(), set())
    (e,) = out.events
    assert e.kind == "summarize" and e.tokens_after < e.tokens_before
    # two summarizer calls: the snapshot, then "did you omit anything" with the first answer appended
    first, check = stub.requests
    assert first.messages == msgs[1:split] and "<state_snapshot>" in first.prompt
    assert check.messages[-1].role == "assistant" and check.messages[-1].text == SNAP
    assert VERIFY_PROMPT in check.prompt


def test_2025_generation_threshold_prompt_and_single_call(counter):
    msgs = conversation()
    old = strategies.build("gemini-cli:2025")
    stub = Stub()
    assert old.before_call(session(counter, 1).meter.context(msgs), session(counter, 60_000, stub)) is None  # < 70%
    out = old.before_call(session(counter, 1).meter.context(msgs), session(counter, 70_000, stub))
    assert out is not None and len(stub.requests) == 1 and stub.requests[0].prompt.startswith(COMPRESSION_PROMPT_2025)
    # before e1d2653a the new history was sized as its JSON characters over 4 (client.ts @a3fe9279)
    from strategies.gemini_cli.compression import _chars
    assert old.estimated(msgs, session(counter, 1)) == sum(map(_chars, msgs)) // 4


def test_earlier_snapshot_is_carried_forward(counter):
    msgs = (Message.text_message("system", "sys"), user(SNAP), Message("assistant", (Text(ACK),)),
            *conversation()[1:])
    stub = Stub()
    s = session(counter, 60_000, stub)
    GeminiCli().before_call(s.meter.context(msgs), s)
    assert UPDATE_SNAPSHOT in stub.requests[0].prompt


def test_inflating_summary_is_refused_then_only_truncation_runs(counter):
    msgs = conversation()
    stub = Stub(text="long " * 20_000)
    s = session(counter, 3_000, stub, window=5_000)
    ctx = s.meter.context(msgs)
    assert GeminiCli().before_call(ctx, s) is None and s.state["gemini_failed"] is True
    calls = len(stub.requests)
    big = ctx.append(*tool_round(3, 400_000), Message("assistant", (Text("read it"),)), user("step four"))
    s.last_usage = Usage(big.truth, 10)  # the previous request held the big output
    out = GeminiCli().before_call(big, s)
    assert len(stub.requests) == calls  # no summarizer call after a failure
    (e,) = out.events
    assert e.kind == "truncate" and out.context.truth < big.truth
    assert out.context.messages[-1] is big.messages[-1]  # this request's message is sent as it is
    s.state["gemini_failed"] = False
    assert GeminiCli(verify=False).before_call(big, s).events[0].kind == "summarize"


ODD = ["word", "Line", "  indented", "\n", "\n\n", "\t", "/", "!", "...", "'s", "é", "日本", "\r\n", "_", " \n",
       "\u00a0", "\u2028", "12345", "x/y", "→"]


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_a_cut_output_counted_by_parts_has_the_count_of_its_whole_text(encoding):
    # the places cut_tokens splits at must be places the tokenizer's own pre-tokenizer splits at
    whole = Tokenizer(encoding)
    rng = random.Random(7)
    checked = 0
    for i in range(1000):
        blocks, cuts = [], {}
        for j in range(rng.choice([1, 1, 2, 3])):
            content = "".join(rng.choice(ODD) for _ in range(rng.randint(0, 300)))
            if rng.random() < 0.2:
                blocks.append(Text(content))
                continue
            parts = truncated_parts(content, f"tool-outputs/compression_{i}_c{j}.txt", rng.choice([40, 100, 200]))
            if len(parts) == 3:
                cuts[j] = parts
            blocks.append(ToolResult(f"c{j}", "".join(parts)))
        if cuts:
            got = cut_tokens(TokenCounter(Tokenizer(encoding)), blocks, cuts, {})
            assert got == whole.count(render(Message("user", tuple(blocks))))
            checked += 1
    assert checked > 600


def old_truncate(s: GeminiCli, history: tuple[Message, ...], call: int) -> tuple[Message, ...]:
    """The original truncateHistoryToBudget walk: every message, every output, on every call."""
    used, out = 0, []
    for m in reversed(history):
        if not m.tool_results:
            out.append(m)
            continue
        blocks = list(m.blocks)
        for j in range(len(blocks) - 1, -1, -1):
            b = blocks[j]
            if not isinstance(b, ToolResult):
                continue
            tokens = estimate_tokens(b.content)
            if used + tokens > s.function_response_budget:
                cut = truncated_output(b.content, f"tool-outputs/compression_{call}_{b.tool_use_id}.txt",
                                       s.truncate_chars)
                blocks[j] = replace(b, content=cut)
                used += estimate_tokens(cut)
            else:
                used += tokens
        out.append(m.with_blocks(tuple(blocks)) if blocks != list(m.blocks) else m)
    return tuple(reversed(out))


def big_outputs_trace(seed: int) -> list[Message]:
    rng = random.Random(seed)
    msgs = [Message.text_message("system", "agent"), user("task")]
    for i in range(60):
        ids = [f"c{i}", f"c{i}b"] if rng.random() < 0.15 else [f"c{i}"]
        msgs.append(Message("assistant", tuple(ToolUse(x, "read", {"path": f"f{i}"}) for x in ids)))
        size = rng.choice([50, 400, 3_000, 9_000])
        msgs.append(Message("user", tuple(ToolResult(x, "".join(rng.choice(ODD) for _ in range(size)))
                                          for x in ids)))
    msgs.append(Message.text_message("assistant", "done"))
    return msgs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_truncation_only_state_matches_the_original_walk_and_counts(seed):
    # after a refused compression every call cuts every old output anew: the remembered walk and the
    # counts by parts must give the original messages and the totals a whole-text count gives
    s = GeminiCli(threshold=0.01, function_response_budget=4_000, truncate_chars=2_000)
    counter, fresh = TokenCounter(), TokenCounter()
    meter = Meter(counter, s.estimator)
    session = Session(SONNET, meter, Stub())
    session.state["gemini_failed"] = True
    ctx = meter.context(())
    fired = 0
    for m in big_outputs_trace(seed):
        if m.role == "assistant" and len(ctx) > 2:
            session.call_index += 1
            step = last_assistant_index(ctx.messages) + 1
            head, history, pending = ctx.messages[:1], ctx.messages[1:step], ctx.messages[step:]
            expected = old_truncate(s, history, session.call_index)
            original = ctx.truth
            outcome = s.before_call(ctx, session)
            if expected == history or sum(fresh.truth(x) for x in expected) >= original:
                assert outcome is None
            else:
                fired += 1
                assert outcome.context.messages == (*head, *expected, *pending)
                again = Meter(fresh, s.estimator).context(outcome.context.messages)
                assert (outcome.context.truth, outcome.context.estimate) == (again.truth, again.estimate)
                ctx = outcome.context
        ctx = ctx.append(m)
    assert fired > 20


# -- tool-output masking (toolOutputMaskingService.ts @5411f113) -------------------------------------
MASK_OUT = 48_000
"""A read_file output of this many characters: (9 + 48,013) // 4 = 12,005 of the CLI's tokens."""


def masking_history(n: int, names: dict[int, str] | None = None, contents: dict[int, str] | None = None):
    """system, a prompt, ``n`` finished tool rounds, then a call whose result is the new request."""
    names, contents = names or {}, contents or {}
    msgs = [Message.text_message("system", "You are Gemini CLI."), user("read everything")]
    for i in range(n):
        msgs += [Message("assistant", (ToolUse(f"c{i}", names.get(i, "read_file"), {"path": f"f{i}"}),)),
                 Message("user", (ToolResult(f"c{i}", contents.get(i, "y" * MASK_OUT)),))]
    msgs += [Message("assistant", (ToolUse("last", "read_file", {"path": "g"}),)),
             Message("user", (ToolResult("last", "z" * 400_000),))]  # the request: not history yet
    return msgs


def masked_ids(ctx) -> set[str]:
    return {r.tool_use_id for m in ctx.messages for r in m.tool_results if r.content.startswith("<tool_output_masked>")}


def test_older_tool_outputs_are_masked_past_the_newest_50k_once_they_total_30k(counter):
    from strategies.gemini_cli.masking import response_tokens

    assert response_tokens("read_file", "y" * MASK_OUT) == 12_005
    ctx = Meter(counter, "truth").context(masking_history(10))
    out = GeminiCli().before_call(ctx, session(counter, 1_000, window=1_048_576))
    # newest first: c9..c6 = 48,020 protected; c5 crosses 50,000 and is prunable with all older ones
    assert [e.kind for e in out.events] == ["mask"] and out.events[0].messages_touched == 6
    assert masked_ids(out.context) == {f"c{i}" for i in range(6)}
    assert out.context.messages[-1] is ctx.messages[-1]  # the request itself is never scanned
    snippet = next(r.content for m in out.context.messages for r in m.tool_results if r.tool_use_id == "c0")
    assert snippet.startswith('<tool_output_masked>\n{\n  "output": "yyy') and "\n... [TRUNCATED] ...\n" in snippet
    assert snippet.endswith("_c0_" + snippet.split("_c0_")[1]) and snippet.endswith(".txt\n</tool_output_masked>")
    assert "Output too large. Full output available at: " in snippet
    assert out.context.truth < ctx.truth and orphans(out.context.messages) == (set(), set())
    # the CLI keeps the masked history: next call nothing more is prunable
    s = session(counter, 1_000, window=1_048_576)
    assert GeminiCli().before_call(out.context, s) is None


def test_nothing_is_masked_under_30k_of_prunable_output_nor_in_the_2025_generation(counter):
    six = Meter(counter, "truth").context(masking_history(6))  # c1 + c0 = 24,010 prunable: under 30,000
    assert GeminiCli().before_call(six, session(counter, 1_000, window=1_048_576)) is None
    ten = Meter(counter, "truth").context(masking_history(10))
    assert strategies.build("gemini-cli:2025").before_call(ten, session(counter, 1_000, window=1_048_576)) is None


def test_exempt_tools_are_never_masked_and_shell_output_keeps_its_sections(counter):
    shell = ("Command: make test\nDirectory: (root)\nOutput: " + "\n".join(f"test {k} ok" * 300 for k in range(40))
             + "\nError: (none)\nExit Code: 2")
    msgs = masking_history(10, names={0: "activate_skill", 1: "run_shell_command"}, contents={1: shell})
    out = GeminiCli().before_call(Meter(counter, "truth").context(msgs), session(counter, 1_000, window=1_048_576))
    assert "c0" not in masked_ids(out.context) and "c1" in masked_ids(out.context)
    masked = next(r.content for m in out.context.messages for r in m.tool_results if r.tool_use_id == "c1")
    assert "Command: make test" in masked and "Exit Code: 2" in masked and "... [20 lines omitted] ..." in masked
    assert "test 0 ok" in masked and "test 39 ok" in masked and "test 20 ok" not in masked


def test_masking_runs_after_a_compression_in_the_same_call(counter):
    """client.ts l.689-699: tryCompressChat, then tryMaskToolOutputs on the history it left."""
    msgs = [Message.text_message("system", "s"), user("first task"), *tool_round(0, 100), user("second task")]
    for i in range(1, 11):
        msgs += tool_round(i, MASK_OUT)
    msgs += [Message("assistant", (ToolUse("last", "read_file", {"path": "g"}),)),
             Message("user", (ToolResult("last", "ok"),))]
    s = session(counter, 600_000, window=1_048_576)
    out = GeminiCli(function_response_budget=None, verify=False).before_call(Meter(counter, "truth").context(msgs), s)
    assert [e.kind for e in out.events] == ["summarize", "mask"]


@pytest.mark.parametrize("name", ["gemini-cli", "gemini-cli:2025"])
def test_a_long_tool_chain_recompresses_the_snapshot_on_every_call_as_the_cli_does(counter, name):
    """A true property of the CLI, not of this replay (issue 27; google-gemini/gemini-cli#16213, open,
    "compress every turn but fails to reduce context size"; PR #23946, open, not in 5411f113).

    After a compression the history is snapshot, "Got it", the kept 30% starting at a user prompt.
    While the agent works through a long chain of tool calls there is no newer prompt, and a function
    response is no split point (findCompressSplitPoint l.60-100 @5411f113): once the chain since that
    prompt alone is over the threshold, the only split left is that prompt, so each call re-summarizes
    the snapshot and its "Got it". The new history is not larger than the last prompt's count (that
    count also holds the system prompt and the tools), so it is COMPRESSED, never
    COMPRESSION_FAILED_INFLATED_TOKEN_COUNT (l.462-481): hasFailedCompressionAttempt stays false
    (client.ts l.1217-1238) and nothing stops the next call from doing it again."""
    strategy = strategies.build(name)
    stub = Stub()
    msgs = (Message.text_message("system", "sys"), user(SNAP), Message("assistant", (Text(ACK),)),
            user("step two: run every test module"), *[m for i in range(40) for m in tool_round(i, 4_000)])
    s = session(counter, None, stub)
    ctx = s.meter.context(msgs)
    sizes = []
    for call in range(3):
        s.last_usage = Usage(75_000, 10)  # the previous request: over the threshold (0.5, 0.7 in 2025)
        assert strategy.estimated(ctx.messages[1:], s) < 50_000  # no output masked, none cut: only the loop
        out = strategy.before_call(ctx, s)
        (e,) = [e for e in out.events if e.kind == "summarize"]
        assert e.messages_touched == 2 and s.state["gemini_failed"] is False  # snapshot + ack only
        new = out.context.messages
        assert new[1].text == SNAP and new[3:] == ctx.messages[3:]  # everything else as it was
        sizes.append((e.tokens_before, e.tokens_after))
        ctx = out.context.append(*tool_round(100 + call, 200))
    assert all(after >= before - 50 for before, after in sizes)  # the context does not shrink
    assert all(UPDATE_SNAPSHOT in r.prompt for r in stub.requests[::1 if name.endswith("2025") else 2])


def test_the_compression_request_is_billed_without_the_agents_prefix():
    """The CLI asks with the compression prompt as the system instruction and no tools
    (chatCompressionService.ts l.361-407, baseLlmClient.ts l.256-351 @5411f113): a summarizer call
    costs the compressed history, not the agent's ~25K of system prompt and tool schemas as well."""
    from bench.replay.loop import ReplayConfig, replay
    from bench.replay.provider import ProviderView, shipped_counts
    from bench.run.runner import shared_counter
    from traces.synthetic import generate

    trace = generate("short", seed=0)
    counter = shared_counter(trace, shipped_counts(trace, TokenCounter(), model="claude-sonnet-4-5",
                                                   truth="provider"))
    overhead = ProviderView(trace, counter).overhead_at(0)
    for name in ("gemini-cli@threshold=0.1", "gemini-cli:2025@threshold=0.1"):
        result = replay(trace, strategies.build(name), ReplayConfig(SONNET), counter=counter)
        calls = [c for c in result.calls if c.kind == "summarizer"]
        assert overhead > 10_000 and calls
        assert all(c.prompt_tokens < overhead for c in calls)  # a history of a few thousand tokens
