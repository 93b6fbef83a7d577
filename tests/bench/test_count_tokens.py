"""--truth anthropic: the count-tokens endpoint through the SDK, over a mocked HTTP transport."""

from __future__ import annotations

import json

import httpx2
import pytest

from bench.tokens.count_tokens import AnthropicTokenCounter, anthropic_attribution
from traces.model import Message, Trace


class Endpoint:
    """Counts a request as 3 framing tokens plus one per word; keeps what it was asked."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/messages/count_tokens"
        body = json.loads(request.content)
        self.bodies.append(body)
        words = sum(len(m["content"].split()) for m in body["messages"])
        return httpx2.Response(200, json={"input_tokens": 3 + words})


def _counter(endpoint: Endpoint, tmp_path) -> AnthropicTokenCounter:
    client = httpx2.Client(transport=httpx2.MockTransport(endpoint))
    return AnthropicTokenCounter(model="claude-opus-4-6", cache_dir=tmp_path, api_key="sk-test", http_client=client,
                                 max_retries=0)


def test_each_distinct_text_is_asked_once_and_cached_on_disk(tmp_path) -> None:
    endpoint = Endpoint()
    msgs = [Message.text_message("user", "one two three"), Message.text_message("assistant", "four five"),
            Message.text_message("user", "one two three")]
    counts = _counter(endpoint, tmp_path).counts(msgs)
    assert counts == [3 + 4, 2 + 4, 3 + 4]  # words, framing off, our per-message framing on
    assert len(endpoint.bodies) == 3  # the framing probe and two distinct texts
    assert endpoint.bodies[1]["model"] == "claude-opus-4-6"
    again = Endpoint()
    assert _counter(again, tmp_path).counts(msgs) == counts
    assert again.bodies == []  # all from the disk cache


def test_the_attribution_carries_the_calibrated_overhead(tmp_path) -> None:
    endpoint = Endpoint()
    client = httpx2.Client(transport=httpx2.MockTransport(endpoint))
    trace = Trace("t", (Message.text_message("user", "a b c"),), model="claude-opus-4-6")
    att = anthropic_attribution(trace, "claude-opus-4-6", cache_dir=tmp_path, api_key="sk-test", http_client=client)
    assert att.counts == (3 + 4,) and att.overheads[0][1] > 10_000


def test_a_missing_key_is_refused_before_any_request(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    endpoint = Endpoint()
    client = httpx2.Client(transport=httpx2.MockTransport(endpoint))
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        AnthropicTokenCounter(model="claude-opus-4-6", cache_dir=tmp_path, http_client=client)
    assert endpoint.bodies == []


def test_a_run_with_truth_anthropic_and_no_key_exits_2(tmp_path, monkeypatch, capsys) -> None:
    from bench.cli.main import main

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code = main(["run", "--traces", "synthetic:short", "--strategies", "none", "--truth", "anthropic",
                 "--workers", "1", "--out", str(tmp_path), "--quiet", "--no-report"])
    assert code == 2 and "ANTHROPIC_API_KEY" in capsys.readouterr().err
