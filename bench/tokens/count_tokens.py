"""``--truth anthropic``: each message counted by Anthropic's count-tokens endpoint.

Through the official SDK (``client.messages.count_tokens``), one request per distinct message
text, cached on disk by a hash of (model, text), so a trace is paid for once. The endpoint
counts a whole request, so a message's count is the request holding only it minus the framing
of a one-token request (measured once per model). The fixed overhead a transcript lacks (system
prompt, tool schemas) is not countable without them: the family's calibrated overhead is used
(bench/tokens/calibration.py). A missing ``ANTHROPIC_API_KEY`` is refused before any request.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.tokens.counter import IMAGE_TOKENS, MESSAGE_OVERHEAD, _image_count, render
from traces.model import Message

API_KEY_ENV = "ANTHROPIC_API_KEY"
PROBE = "."
"""The one-token message whose request measures the per-request framing."""


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "compaction-bench" / "count-tokens"


class AnthropicTokenCounter:
    """Per-message Claude token counts from the count-tokens endpoint, cached on disk."""

    def __init__(self, *, model: str, cache_dir: str | Path | None = None, api_key: str | None = None,
                 http_client: Any = None, max_retries: int = 2) -> None:
        key = api_key or os.environ.get(API_KEY_ENV)
        if not key:
            raise ValueError(f"--truth anthropic needs an API key: set {API_KEY_ENV}, or use --truth provider "
                             "(recorded usage, else the calibrated token model: offline)")
        import anthropic

        self.model = model
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.client = anthropic.Anthropic(api_key=key, max_retries=max_retries, http_client=http_client)
        self.requests = 0
        self._framing: int | None = None

    def _path(self, text: str) -> Path:
        digest = hashlib.sha256(f"{self.model}\0{text}".encode()).hexdigest()
        return self.cache_dir / digest[:2] / f"{digest}.json"

    def request_tokens(self, text: str) -> int:
        """Input tokens of a request holding one user message with ``text`` (cached)."""
        path = self._path(text)
        if path.exists():
            return int(json.loads(path.read_text(encoding="utf-8"))["input_tokens"])
        self.requests += 1
        result = self.client.messages.count_tokens(model=self.model,
                                                   messages=[{"role": "user", "content": text or PROBE}])
        n = int(result.input_tokens)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"model": self.model, "input_tokens": n}), encoding="utf-8")
        tmp.replace(path)
        return n

    @property
    def framing(self) -> int:
        if self._framing is None:
            self._framing = max(self.request_tokens(PROBE) - 1, 0)
        return self._framing

    def counts(self, messages: Sequence[Message]) -> list[int]:
        """Each message's tokens as Claude counts its text, plus the per-message framing we add."""
        memo: dict[str, int] = {}
        out = []
        for m in messages:
            text = render(m)
            if text not in memo:
                memo[text] = max(self.request_tokens(text) - self.framing, 0) if text else 0
            out.append(memo[text] + MESSAGE_OVERHEAD + IMAGE_TOKENS * _image_count(m))
        return out


def anthropic_attribution(trace: Any, model: str, **kw: Any) -> Any:
    """An ``Attribution`` of endpoint counts plus the calibrated Anthropic overhead."""
    from bench.tokens.attribution import Attribution
    from bench.tokens.calibration import stored

    counter = AnthropicTokenCounter(model=model, **kw)
    counts = counter.counts(trace.messages)
    fitted = stored().get("anthropic")
    overhead = fitted.overhead if fitted is not None else 0
    return Attribution(tuple(counts), ((0, overhead),), (), 1.0,
                       (f"count-tokens endpoint ({model}); overhead {overhead} from the calibrated model",))
