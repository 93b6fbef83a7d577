"""LLM probes through the real SDK over an httpx2 mock transport (no fake classes, no network)."""

from __future__ import annotations

import json
from dataclasses import replace

import httpx2
import pandas as pd
import pytest

import strategies
from bench.cli.main import main
from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from bench.scoring.llm_probe import AnthropicProbe, parse_answers, questions_prompt
from bench.scoring.probes import needle_observer
from bench.summarizers import SummarizerError
from bench.tokens.counter import TokenCounter
from tests.bench.test_anthropic_summarizer import Recorder, reply
from traces import native
from traces.model import Message, Needle, ToolResult, ToolUse, Trace

MESSAGES = (
    Message.text_message("system", "You are a coding agent."),
    Message.text_message("user", "Fix the importer. The staging database listens on port 51234."),
    Message("assistant", (ToolUse("c1", "write", {"path": "/src/app/adapter.py", "content": "x = 1"}),)),
    Message("user", (ToolResult("c1", "File created successfully at: /src/app/adapter.py"),)),
    Message.text_message("assistant", "Done."),
)
NEEDLES = (
    Needle("port", "fact", "port 51234", "Which port does the staging database listen on?", "51234", 1),
    Needle("file", "artifact", "write /src/app/adapter.py", "Which file was created?", "/src/app/adapter.py", 2),
    Needle("host", "fact", "", "Which host is the deploy target?", "osprey-12.wren.internal", 1),
    Needle("pin", "control", "", "What is the pager PIN?", "PIN-123456", -1),
)
TRACE = Trace("probe", MESSAGES, needles=NEEDLES)


def probe(handler, tmp_path, **kw) -> AnthropicProbe:
    client = httpx2.Client(transport=httpx2.MockTransport(handler))
    return AnthropicProbe(api_key="sk-test", cache_dir=tmp_path / "cache", http_client=client, **kw)


def test_answers_are_parsed_by_number_and_a_skipped_number_is_empty():
    text = "1. 51234\n**2.** app/adapter.py\nI am not sure about the rest."
    assert parse_answers(text, NEEDLES[:3]) == {"port": "51234", "file": "app/adapter.py", "host": ""}
    assert questions_prompt(NEEDLES[:2]).endswith(
        "\n\n1. Which port does the staging database listen on?\n2. Which file was created?")


def test_end_probe_asks_every_stated_needle_once_and_grades_the_answers(tmp_path):
    rec = Recorder(reply("1. The port is 51234.\n2. adapter.py in app: app/adapter.py\n3. unknown"))
    asker = probe(rec, tmp_path)
    result = replay(TRACE, strategies.build("none"), ReplayConfig(profile("claude-sonnet-4-5")),
                    counter=TokenCounter(), observers=(needle_observer(TRACE, asker=asker),))
    body = rec.bodies[0]
    assert body["model"] == "claude-haiku-4-5" and body["max_tokens"] == 256 + 3 * 80
    assert body["system"] == [{"type": "text", "text": "You are a coding agent."}]
    asked = body["messages"][-1]["content"][0]["text"]
    assert "1. Which port" in asked and "3. Which host" in asked and "PIN" not in asked  # controls are not asked
    rows = {p["needle"]: p for p in result.probes}
    assert rows["port"]["llm_recalled"] is True and rows["port"]["llm_answer"] == "The port is 51234."
    assert rows["file"]["llm_recalled"] is True  # a path matches by its last two parts
    assert rows["host"]["llm_recalled"] is False and rows["host"]["cls"] == "missing"
    assert rows["pin"]["llm_answer"] is None


def test_answers_are_cached_on_disk_and_a_rerun_sends_nothing(tmp_path):
    rec = Recorder(reply("1. 51234"))
    first = probe(rec, tmp_path)(MESSAGES, NEEDLES[:1])
    again = probe(Recorder(), tmp_path)(MESSAGES, NEEDLES[:1])  # no response queued: a request would fail
    assert first == again == {"port": "51234"} and len(rec.bodies) == 1


def test_a_context_over_the_probe_window_is_not_asked(tmp_path):
    small = replace(profile("claude-haiku-4-5"), id="small-probe", context_window=2_050)
    asker = probe(Recorder(), tmp_path)
    asker.window = small.context_window
    assert asker(MESSAGES, NEEDLES[:2]) == {"port": None, "file": None}


def test_missing_key_is_a_clear_error_before_any_replay(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(SummarizerError, match="ANTHROPIC_API_KEY"):
        AnthropicProbe()
    path = native.write(TRACE, tmp_path / "t.cbt.jsonl")
    code = main(["run", "--traces", str(path), "--strategies", "none", "--probe", "anthropic",
                 "--out", str(tmp_path / "out"), "--quiet"])
    assert code == 2 and "ANTHROPIC_API_KEY" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_llm_recall_reaches_the_results(tmp_path, monkeypatch):
    """The run's results carry llm_recall next to retention (answers served from the disk cache)."""
    from bench.run import runner

    cache = tmp_path / "cache"
    seed = probe(Recorder(reply("1. 51234\n2. unknown\n3. unknown")), tmp_path)
    sent = replay(TRACE, strategies.build("none"), ReplayConfig(profile("claude-sonnet-4-5")), counter=TokenCounter(),
                  observers=(needle_observer(TRACE, asker=seed),))
    assert sent.probes
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setattr("bench.scoring.llm_probe.default_cache_dir", lambda: cache / "anthropic")
    monkeypatch.setattr(runner, "_asker", lambda config, counter=None: AnthropicProbe(cache_dir=cache, counter=counter))
    path = native.write(TRACE, tmp_path / "t.cbt.jsonl")
    code = main(["run", "--traces", str(path), "--strategies", "none", "--probe", "anthropic", "--workers", "1",
                 "--name", "p", "--out", str(tmp_path / "out"), "--quiet", "--no-report"])
    assert code == 0
    results = pd.read_csv(tmp_path / "out" / "p" / "results.csv")
    assert results.llm_recall.iloc[0] == pytest.approx(1 / 3) and results.retention.iloc[0] == pytest.approx(2 / 3)
    assert json.loads((tmp_path / "out" / "p" / "run.json").read_text())["config"]["probe"] == "anthropic"
