"""The extractive summarizer: each strategy's template, its agent's summary size, the user's own requests."""

from __future__ import annotations

import statistics

import pytest

from bench.summarizers import SummaryRequest
from bench.summarizers.extractive import ExtractiveSummarizer, user_requests
from bench.summarizers.sizes import fit, size_fit, stored
from bench.summarizers.template import DEFAULT, sections
from bench.tokens import Tokenizer
from strategies import amp
from strategies.cline import sdk as cline_sdk
from strategies.layered import _common as layered
from strategies.openhands import summarizing
from traces.model import Message, Text, ToolResult, ToolUse
from traces.synthetic import generate

CL100K = Tokenizer("cl100k_base")


def test_the_sections_are_read_from_each_strategy_prompt_in_its_style():
    cc = sections(layered.SUMMARY_PROMPT)
    assert [s.title for s in cc][:2] == ["Primary Request and Intent", "Key Technical Concepts"]
    assert len(cc) == 9 and cc[0].heading(1) == "1. Primary Request and Intent:"
    oh = sections(summarizing.SUMMARY_PROMPT)
    assert [s.title for s in oh][:3] == ["USER_CONTEXT", "TASK_TRACKING", "COMPLETED"]
    assert oh[0].heading(1) == "USER_CONTEXT:"
    sdk = sections(cline_sdk.SDK_PROMPT)
    assert [s.title for s in sdk][0] == "Goal" and sdk[0].heading(1) == "## Goal"
    assert sections(amp.COMPACT_PROMPT) == DEFAULT  # plain prose names no sections


def _history() -> tuple[Message, ...]:
    use = ToolUse("t1", "Edit", {"file_path": "src/app.py", "new_string": "def handler(): return 42"})
    return (
        Message.text_message("user", "Fix the failing handler in src/app.py; never touch the migrations."),
        Message("assistant", (Text("I will edit the handler."), use)),
        Message("user", (ToolResult("t1", "AssertionError: expected 41 got 42"),)),
        Message.text_message("user", "What did we do so far?", meta={"compaction": True}),
        Message.text_message("user", "[Re-read after compaction: src/app.py]\nold text", meta={"synthetic": True}),
        Message.text_message("user", "Now also add a test for the handler."),
        Message.text_message("assistant", "Adding the test next."),
    )


def test_a_summary_follows_the_strategy_template_and_holds_what_the_history_shows():
    text = ExtractiveSummarizer().summarize(SummaryRequest(_history(), layered.SUMMARY_PROMPT, 20_000,
                                                           "claude-code")).text
    headings = [line for line in text.splitlines() if line[:2].rstrip(".").isdigit()]
    assert headings[0] == "1. Primary Request and Intent:" and headings[-1] == "9. Optional Next Step:"
    assert "User: Fix the failing handler" in text and "User: Now also add a test" in text
    assert "src/app.py (last written: def handler(): return 42)" in text
    assert "AssertionError: expected 41 got 42" in text


def test_what_a_strategy_injected_is_not_taken_for_the_users_request():
    requests = user_requests(_history())
    assert requests == ["Fix the failing handler in src/app.py; never touch the migrations.",
                        "Now also add a test for the handler."]
    text = ExtractiveSummarizer().summarize(SummaryRequest(_history(), amp.COMPACT_PROMPT, 20_000, "amp")).text
    assert "What did we do so far" not in text and "Re-read after compaction" not in text


def test_what_the_agent_wrote_into_the_users_turn_is_not_the_users_request():
    """A loaded skill's body (Claude Code's isMeta message, Codex's ``<skill>`` item), Codex's AGENTS.md
    and environment messages and Claude Code's reminders are the agent's: the summary's "latest
    request" is the user's last own words, not the skill body loaded after it."""
    msgs = (Message.text_message("system", "You are an agent."),
            Message.text_message("user", "# AGENTS.md instructions for /r\n\n<INSTRUCTIONS>\nNEVER x\n</INSTRUCTIONS>"),
            Message.text_message("user", "<environment_context>\n<cwd>/r</cwd>\n</environment_context>"),
            Message("user", (Text("<system-reminder>\nContents of /r/CLAUDE.md:\nALWAYS y\n</system-reminder>"),
                             Text("Write the schema migration."))),
            Message.text_message("assistant", "Loading the skill."),
            Message.text_message("user", "Base directory for this skill: /h/db\n\n# Db\n- ALWAYS run qq-77",
                                 meta={"injected": True}),
            Message.text_message("user", "<skill>\n<name>db</name>\n<path>p</path>\nALWAYS zz-88\n</skill>"),
            Message.text_message("assistant", "Skill loaded."))
    assert user_requests(msgs) == ["Write the schema migration."]
    text = ExtractiveSummarizer().summarize(SummaryRequest(msgs, amp.COMPACT_PROMPT, 20_000, "amp")).text
    assert "Write the schema migration." in text
    assert not any(rule in text for rule in ("qq-77", "zz-88", "NEVER x", "ALWAYS y"))


def test_requests_an_earlier_summary_quoted_are_carried_forward_in_order():
    first = ExtractiveSummarizer().summarize(SummaryRequest(_history(), amp.COMPACT_PROMPT, 20_000, "amp")).text
    later = (Message.text_message("user", first, meta={"summary": True}),
             Message.text_message("assistant", "Done with the test."))
    requests = user_requests(later)
    assert requests[0].startswith("Fix the failing handler") and requests[-1].startswith("Now also add a test")


def test_summaries_reach_the_size_their_agent_writes_and_never_pass_the_budget():
    trace = generate("long", seed=1)
    summarizer = ExtractiveSummarizer()
    for strategy, prompt in (("claude-code", layered.SUMMARY_PROMPT), ("cline:sdk", cline_sdk.SDK_PROMPT)):
        sizes = []
        for end in range(200, len(trace.messages), 20):
            text = summarizer.summarize(SummaryRequest(trace.messages[:end], prompt, 20_000, strategy)).text
            sizes.append(CL100K.count(text))
        agent, fitted = size_fit(strategy)
        assert agent == strategy.split(":")[0]
        assert abs(statistics.median(sizes) / fitted.median_tokens - 1) < 0.15, (strategy, sizes)
    small = summarizer.summarize(SummaryRequest(trace.messages[:400], layered.SUMMARY_PROMPT, 500, "claude-code"))
    assert CL100K.count(small.text) <= 500
    again = summarizer.summarize(SummaryRequest(trace.messages[:400], layered.SUMMARY_PROMPT, 500, "claude-code"))
    assert again.text == small.text  # deterministic


def test_a_strategy_of_no_known_agent_uses_the_pooled_fit():
    assert size_fit("tiered-placeholders")[0] == "pooled"
    assert size_fit("five-layer")[0] == "claude-code"
    assert size_fit("codex@limit_fraction=0.5")[0] == "codex"


def test_the_stored_size_fit_is_what_the_recorded_sessions_give(shared_traces):
    from traces.formats import load

    fits = fit(load([str(shared_traces)], lenient=True).traces)
    assert fits == stored()
    assert pytest.approx(stored()["claude-code"].median_tokens, rel=0.3) == 3_500


def test_the_report_sets_each_strategys_summary_sizes_beside_its_agents_recorded_ones():
    import pandas as pd

    from bench.scoring.stats import summary_sizes
    from reports.sections import summary_sizes_html

    rows = pd.DataFrame({"strategy": ["claude-code", "claude-code", "tiered-placeholders"],
                         "tokens": [3000, 4000, 900], "max_tokens": [20_000, 20_000, 4_000],
                         "text": ["word " * 3000, "word " * 4000, "word " * 900]})
    sizes = summary_sizes(rows).set_index("strategy")
    assert sizes.loc["claude-code", "recorded_agent"] == "claude-code"
    assert sizes.loc["claude-code", "recorded_p50_cl100k"] == stored()["claude-code"].median_tokens
    assert sizes.loc["claude-code", "p50_cl100k"] == CL100K.count("word " * 3500) or 3400 < sizes.loc[
        "claude-code", "p50_cl100k"] < 3600
    assert sizes.loc["tiered-placeholders", "recorded_agent"] == "pooled"
    page = summary_sizes_html(sizes.reset_index(), ["claude-code", "tiered-placeholders"], 20_000)
    assert "recorded p50 (cl100k)" in page and "pooled" in page


def test_what_each_message_yields_is_remembered_per_object_with_the_same_pools():
    from dataclasses import replace

    from bench.summarizers import extractive

    msgs = generate("short", 0).messages
    extractive._PER_MESSAGE.clear()
    first = extractive._pools(msgs, 600)
    assert len(extractive._PER_MESSAGE) == len(msgs)  # once per message
    again = extractive._pools(msgs, 600)
    assert len(extractive._PER_MESSAGE) == len(msgs)  # served from the memo
    copies = tuple(replace(m) for m in msgs)
    fresh = extractive._pools(copies, 600)  # other objects: read anew
    assert len(extractive._PER_MESSAGE) == 2 * len(msgs)
    del copies, fresh
    assert len(extractive._PER_MESSAGE) == len(msgs)  # gone with their messages
    fresh = extractive._pools(tuple(replace(m) for m in msgs), 600)
    assert first == again == fresh and first["actions"] and first["statements"]
    # a rewritten output is another object: its own error lines, not its predecessor's
    i = next(i for i, m in enumerate(msgs) if m.tool_results)
    rewritten = msgs[i].with_blocks((ToolResult(msgs[i].tool_results[0].tool_use_id, "FATAL: disk full"),))
    pools = extractive._pools((*msgs[:i], rewritten, *msgs[i + 1:]), 600)
    assert "FATAL: disk full" in [x.text for x in pools["errors"]]
    assert "FATAL: disk full" not in [x.text for x in first["errors"]]


def test_error_lines_found_by_keyword_positions_are_the_lines_a_line_by_line_search_finds():
    # ASCII texts take the keyword-position path, the others the regex per line; both must give
    # what the line-by-line regex gives, on every line terminator str.splitlines knows
    import random

    from bench.summarizers import extractive

    def line_by_line(text: str) -> tuple[str, ...]:
        return tuple(line.strip()[:200] for line in text.splitlines() if extractive.ERROR_LINE.search(line))

    rng = random.Random(5)
    pieces = ["error", "Error", "ERROR", "Traceback", "assert", "ok", " ", "\n", "\r\n", "\r", "\x0b", "\x0c",
              "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u2028", "ſ", "\u212a", "İ", "faILED", "fatal", "x" * 120,
              "\t", "err", "or", "exceptionerror", "tra", "ceback"]
    found = ascii_found = 0
    for _ in range(5_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 60)))
        if rng.random() < 0.6:
            text = text.encode("ascii", "ignore").decode()
        got = extractive._errors_in.__wrapped__(text)
        assert got == line_by_line(text), repr(text)
        found += bool(got)
        ascii_found += bool(got) and text.isascii()
    assert found > 1_000 and ascii_found > 500
