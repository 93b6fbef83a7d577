"""What the Gemini CLI modules share: the cited commit and source, the CLI's token estimates
(utils/tokenCalculation.ts @5411f113) and cheap copies of a result or message with new content.
"""

from __future__ import annotations

import json

from bench.context import Image, Message, ToolResult, ToolUse
from strategies._tools import with_blocks as _with_blocks  # noqa: F401  (the Gemini modules' names for them)
from strategies._tools import with_content as _with_content  # noqa: F401

COMMIT = "5411f113cafae26161b4969b0237b8e1e024e2c2"
SRC = f"google-gemini/gemini-cli@{COMMIT} packages/core/src/context/chatCompressionService.ts"


def text_quarters(text: str) -> int:
    """Four times utils/tokenCalculation.ts estimateTextTokens @5411f113 (l.38-55), exact in integers:
    an ASCII UTF-16 code unit is 1 / charsPerToken = 0.25 token (since 07792f98, 2026-05-12; 0.33 from
    2026-01-18, when the tool-output budget that reads it came with 08c32f72, to then: that build is
    not a variant here), any other code unit 1.5 (JavaScript's ``length`` and ``charCodeAt``: a
    character beyond the BMP is two); over 100,000 code units, length / 4."""
    if text.isascii():  # counted in C
        units = ascii_chars = len(text)
    else:
        units, ascii_chars = len(text.encode("utf-16-le")) // 2, len(text.encode("ascii", "ignore"))
    return units if units > 100_000 else ascii_chars + 6 * (units - ascii_chars)


def estimate_tokens(text: str) -> int:
    """tokenCalculation.ts estimateTokenCountSync of one text part (``text_quarters``, floored)."""
    return text_quarters(text) // 4


def part_quarters(m: Message) -> int:
    """Four times estimateTokenCountSync over the parts of one Content (l.120-150): text parts by
    ``text_quarters``; a function response as JSON.stringify({output}) / 4 (the tool's name, a few
    characters, is left out: our results do not carry it); a function call as JSON.stringify(part) / 4;
    an image 3,000 tokens. The CLI floors the sum over all parts once: sum these, then // 4."""
    n = 0
    for b in m.blocks:
        if isinstance(b, ToolResult):
            n += len(json.dumps({"output": b.content}, ensure_ascii=False, separators=(",", ":")))
        elif isinstance(b, ToolUse):
            n += len(json.dumps({"functionCall": {"name": b.name, "args": b.input}}, ensure_ascii=False,
                                separators=(",", ":"), default=str))
        elif isinstance(b, Image):
            n += 4 * 3_000
        else:
            n += text_quarters(getattr(b, "text", ""))
    return n
