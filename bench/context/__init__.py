"""The strategy API: everything a strategy sees and returns, in the one module strategies import.

A strategy reads a ``Context`` (the messages it manages, with running token totals) and a
``Session`` (the model profile, the last call's usage, the summarizer, the clock), and returns an
``Outcome`` (the new context and the ``Event`` records of what it did). The message types, the
model profile, the token helpers and the prefix tests an agent's rule needs are re-exported here
so that no strategy reaches into the harness's run machinery; nothing here imports a later stage
(replay, scoring, run).
"""

from bench.context.messages import Context, Meter
from bench.context.session import Session
from bench.context.strategy import (
    COUNT,
    CUT_LATEST_HUMAN,
    FRACTION,
    HOOKS,
    MAX_PARAM,
    POSITIVE,
    SHARE,
    Event,
    Outcome,
    Range,
    Strategy,
    StrategySpec,
    event,
)
from bench.cost.pricing import ModelProfile
from bench.summarizers.extractive import PATH_KEYS
from bench.tokens.counter import MESSAGE_OVERHEAD, TokenCounter, remember, render, safe_split
from bench.tokens.prefix import derived, starts_with
from traces.model import Block, Image, Message, Text, Thinking, ToolResult, ToolUse, Usage, orphans

__all__ = [
    "COUNT", "CUT_LATEST_HUMAN", "FRACTION", "HOOKS", "MAX_PARAM", "MESSAGE_OVERHEAD", "PATH_KEYS", "POSITIVE",
    "SHARE", "Block", "Context", "Event", "Image", "Message", "Meter", "ModelProfile", "Outcome", "Range",
    "Session", "Strategy", "StrategySpec", "Text", "Thinking", "TokenCounter", "ToolResult", "ToolUse", "Usage",
    "derived", "event", "orphans", "remember", "render", "safe_split", "starts_with",
]
