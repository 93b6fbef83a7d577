"""Gemini CLI chat compression (``gemini-cli``, ``gemini-cli:2025``): past half the model's token limit, the
oldest ~70% becomes a state snapshot; and on every send, older bulky tool outputs are masked.

Before each request the CLI compares the previous response's prompt size with a fraction of the
model's token limit. Over it, old tool outputs beyond a 50K-token budget (newest first) are cut to
head + tail, the history is split at a user turn after the oldest 70% of its characters, that part
is summarized into an XML ``<state_snapshot>`` (then checked once more by a "did you omit anything"
call) and the new history is: the snapshot as a user turn, the model's "Got it" note, and the kept
30% verbatim. A compression that would not make the history smaller is refused, and from then on
only the tool-output truncation runs (until a compression succeeds).

Then, before every send (compressed or not), tool-output masking: past the newest 50K tokens of
tool output, older function responses are replaced by a short preview and the path of a file
holding them, once they total 30K tokens (toolOutputMaskingService.ts, since v0.29.0).

Modules: ``compression`` (the strategy, ``GeminiCli``, with its prompts and split point), ``truncation``
(the tool-output budget, truncateHistoryToBudget), ``outputs`` and ``cuts`` (an output cut to head and
tail, and counted by parts), ``masking`` (toolOutputMaskingService.ts); the CLI's token estimates and the
cited commit (``COMMIT``, google-gemini/gemini-cli@5411f113) are in ``_common``. The 2025 generation is
a preset of the same class (``gemini-cli:2025`` in the registry; ``GeminiCli``'s docstring dates each
default).
"""
