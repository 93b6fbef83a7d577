"""A real summarizer: the strategy's prompt and history sent to Claude through the official SDK.

Each response is stored on disk under the hash of the exact request body, so a rerun (or another
strategy asking the same thing) costs nothing and returns the same text and usage. The SDK is
imported on the first cache miss only: ``import anthropic`` takes ~2 s, and a fully cached rerun
never needs it. A missing key is reported at construction, before any replay starts (the SDK
itself would only fail on the first request, with a plain TypeError).

Default model ``claude-haiku-4-5``: the cheapest current Claude model ($1 / $5 per MTok, a third of
Sonnet), the same 200K window as the Sonnet profile (so any history that fitted the agent fits the
summarizer) and 64K output (above every strategy's summary budget); Sonnet 4.5 is deprecated and
the SDK warns on every call that names it. Real agents mostly summarize with the session's own
model: pass ``model=`` (e.g. the replay profile's id) for that. The id must be in the price table.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.summarizers import SummarizerError, Summary, SummaryRequest
from traces.model import Image, Message, Text, Thinking, ToolResult, ToolUse, orphans

DEFAULT_MODEL = "claude-haiku-4-5"
API_KEY_ENV = "ANTHROPIC_API_KEY"
_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
"""The API accepts tool ids and names of these characters only (other agents' ids may differ)."""


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "compaction-bench" / "anthropic"


def _safe(name: str) -> str:
    return _ID_CHARS.sub("_", name)[:64] or "_"


def _block(b: Any) -> dict[str, Any] | None:
    """One of our blocks as an API content block; thinking is dropped (see ``to_messages_api``)."""
    if isinstance(b, Text):
        return {"type": "text", "text": b.text} if b.text.strip() else None
    if isinstance(b, ToolUse):
        return {"type": "tool_use", "id": _safe(b.id), "name": _safe(b.name), "input": dict(b.input)}
    if isinstance(b, ToolResult):
        out: dict[str, Any] = {"type": "tool_result", "tool_use_id": _safe(b.tool_use_id), "content": b.content}
        return out | ({"is_error": True} if b.is_error else {})
    if isinstance(b, Image):
        return {"type": "text", "text": f"[image {b.media_type}, {b.size_bytes} bytes, not resent]"}
    return None


def to_messages_api(messages: tuple[Message, ...], prompt: str) -> dict[str, Any]:
    """``system``, ``messages`` (the prompt last) and ``tools`` for the Messages API.

    Thinking is dropped: the API strips earlier turns' thinking from the context anyway, and
    without its signature it cannot be resent as thinking. A tool call without its result (or
    the reverse) would be refused, so the call is dropped and the result kept as text. The API
    refuses tool blocks unless tools are declared, so each tool name seen gets a stub definition,
    and ``tool_choice: none`` keeps the summarizer from calling them.
    """
    unanswered, unasked = orphans(messages)
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    tools: dict[str, None] = {}
    for m in messages:
        if m.role == "system":
            system += [{"type": "text", "text": m.text}] if m.text.strip() else []
            continue
        blocks: list[dict[str, Any]] = []
        for b in m.blocks:
            if isinstance(b, Thinking) or (isinstance(b, ToolUse) and b.id in unanswered):
                continue
            if isinstance(b, ToolResult) and b.tool_use_id in unasked:
                b = Text(f"[tool result {b.tool_use_id}]\n{b.content}")
            if (converted := _block(b)) is not None:
                blocks.append(converted)
                if converted["type"] == "tool_use":
                    tools.setdefault(converted["name"], None)
        # The API wants a user message's tool results before anything else in it.
        blocks.sort(key=lambda c: c["type"] != "tool_result")
        if blocks:
            out.append({"role": m.role, "content": blocks})
    out.append({"role": "user", "content": [{"type": "text", "text": prompt}]})
    if out[0]["role"] != "user":
        out.insert(0, {"role": "user", "content": [{"type": "text", "text": "(conversation so far)"}]})
    body: dict[str, Any] = {"messages": out}
    if system:
        body["system"] = system
    if tools:
        body["tools"] = [{"name": n, "description": "A tool the agent used.", "input_schema": {"type": "object"}}
                         for n in tools]
        body["tool_choice"] = {"type": "none"}
    return body


class CachedMessages:
    """Claude's Messages API through the official SDK, each answer stored on disk under the hash
    of its request body: a rerun (or another strategy asking the same thing) costs nothing and
    gets the same answer. Shared by the summarizer and the LLM probe (bench/scoring/llm_probe.py)."""

    def __init__(self, *, api_key: str | None, cache_dir: Path, max_retries: int, http_client: Any,
                 who: str, instead: str) -> None:
        key = api_key or os.environ.get(API_KEY_ENV)
        if not key:  # the SDK itself would only fail on the first request, with a plain TypeError
            raise SummarizerError(f"{who} needs an API key: set {API_KEY_ENV} (or pass api_key=), or {instead}")
        self.cache_dir = cache_dir
        self.max_retries = max_retries
        self._api_key = key
        self._http_client = http_client
        self._client: Any = None

    def __getstate__(self) -> dict[str, Any]:
        # A client holds sockets; worker processes build their own on first use.
        return {**self.__dict__, "_client": None, "_http_client": None}

    def stored_path(self, body: dict[str, Any]) -> Path:
        """Where the answer to ``body`` is (or would be) kept on disk."""
        digest = hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
        return self.cache_dir / digest[:2] / f"{digest}.json"

    def answer(self, body: dict[str, Any], keep: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
        """What ``keep`` took from the response to ``body`` (from disk when it was asked before)."""
        path = self.stored_path(body)
        if path.exists():
            return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]
        if self._client is None:
            import anthropic

            self._client = anthropic.Anthropic(api_key=self._api_key, max_retries=self.max_retries,
                                               http_client=self._http_client)
        # Streamed: the SDK refuses a non-streaming request whose max_tokens could outlast ten
        # minutes (above ~21K tokens), and long idle connections get cut by proxies.
        with self._client.messages.stream(**body) as stream:
            stored = keep(stream.get_final_message())
        _write_atomic(path, json.dumps(stored, indent=1, ensure_ascii=False))
        return stored


def response_text(response: Any) -> str:
    return "".join(b.text for b in response.content if getattr(b, "type", "") == "text")


class AnthropicSummarizer:
    """Summaries from Claude via ``anthropic.Anthropic().messages.stream``, cached on disk.

    Prompt caching is on (top-level ``cache_control``): a strategy that summarizes the same
    prefix twice, or a summary call sharing the agent's prefix, reads it back at 0.1x.
    """

    name = "anthropic"

    def __init__(self, *, model: str = DEFAULT_MODEL, api_key: str | None = None,
                 cache_dir: str | Path | None = None, max_retries: int = 4,
                 http_client: Any = None) -> None:
        from bench.cost.pricing import UnknownModelError, profile

        self.api = CachedMessages(api_key=api_key, max_retries=max_retries, http_client=http_client,
                                  cache_dir=Path(cache_dir) if cache_dir is not None else default_cache_dir(),
                                  who="the anthropic summarizer", instead="use the offline 'extractive' summarizer")
        try:
            self.max_output = profile(model, strict=True).max_output  # the id goes to a paid API: no guess
        except UnknownModelError as e:
            raise SummarizerError(f"anthropic summarizer: {str(e).splitlines()[0]}") from None
        self.model = model

    def request_body(self, request: SummaryRequest) -> dict[str, Any]:
        """The exact ``messages.stream`` arguments; their hash is the disk-cache key."""
        return {"model": self.model, "max_tokens": min(request.max_tokens, self.max_output),
                **to_messages_api(request.messages, request.prompt),
                "cache_control": {"type": "ephemeral"}}

    def summarize(self, request: SummaryRequest) -> Summary:
        stored = self.api.answer(self.request_body(request), self._keep)
        u = stored["usage"]
        return Summary(text=stored["text"], input_tokens=u["input_tokens"], output_tokens=u["output_tokens"],
                       model=self.model, cache_read_tokens=u["cache_read_tokens"],
                       cache_write_tokens=u["cache_write_tokens"], billed=True)

    def _keep(self, response: Any) -> dict[str, Any]:
        text = response_text(response)
        if not text.strip():
            raise SummarizerError(f"{self.model} returned no summary text (stop_reason={response.stop_reason})")
        u = response.usage
        return {
            "text": text,
            "served_by": response.model,
            "stop_reason": response.stop_reason,
            "usage": {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                      "cache_read_tokens": u.cache_read_input_tokens or 0,
                      "cache_write_tokens": u.cache_creation_input_tokens or 0},
        }


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
