"""OpenCode's overflow check per generation: the usable window and the count compared with it.

Classic (compaction.ts fork snapshots), overflow (anomalyco/opencode session/overflow.ts @08f74b9b
L8-32) and tail (sst/opencode session/overflow.ts @31e22f65): see the ``OpenCode`` docstring.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.context import ModelProfile, Usage


class OpenCodeTrigger:
    """Mixed into ``OpenCode``; reads its ``generation``, ``auto``, ``output_token_max``,
    ``compaction_buffer`` and the tail sizes."""

    def max_output(self, model: ModelProfile) -> int:
        return min(model.max_output, self.output_token_max) or self.output_token_max

    def usable(self, model: ModelProfile) -> int:
        if self.generation == "classic":
            return model.max_input or model.context_window - self.max_output(model)
        reserved = min(self.compaction_buffer, self.max_output(model))
        if model.max_input:
            return max(0, model.max_input - reserved)
        if self.generation == "overflow":  # overflow.ts @08f74b9b usable(): no reserve in this branch
            return max(0, model.context_window - self.max_output(model))
        return max(0, model.context_window - self.max_output(model) - reserved)

    def overflowing(self, usage: Usage | None, model: ModelProfile) -> bool:
        if usage is None or not self.auto or model.context_window == 0:
            return False
        if self.generation == "classic":  # cache writes are not counted
            return usage.input_tokens + usage.cache_read_tokens + usage.output_tokens > self.usable(model)
        # overflow.ts tokenCount(): tokens.total, else input + output + cache read + cache write
        return usage.prompt_tokens + usage.output_tokens >= self.usable(model)

    def tail_budget(self, model: ModelProfile) -> int:
        return min(self.tail_max, max(self.tail_min, math.floor(self.usable(model) * self.tail_fraction)))
