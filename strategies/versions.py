"""Which registry variant re-implements a recorded session: its agent and the version it recorded.

Real sessions carry the agent's version on every record (Claude Code's ``version``, Codex's
``cli_version``, ...). Generations of one agent that decide differently are separate registry
variants; this table maps an (agent, version range[, provider]) to the variant, with the evidence
for it (Codex compacts on the server for OpenAI providers, locally for the others).
Adding an agent or a generation is one ``Generation`` line in ``GENERATIONS``.
"""

from __future__ import annotations

from dataclasses import dataclass

from traces.model import parse_version

Version = tuple[int, ...]


@dataclass(frozen=True)
class Generation:
    """Sessions of ``agent`` recorded with a version in [since, until) run as ``strategy``."""

    agent: str
    strategy: str
    since: Version | None = None
    """Inclusive lower bound; None = from the first version."""
    until: Version | None = None
    """Exclusive upper bound; None = up to today."""
    source: str = ""
    providers: tuple[str, ...] = ()
    """Only sessions recorded with one of these model providers (Codex's ``model_provider``);
    empty = any. A session that records no provider is taken to use the agent's default."""

    def covers(self, version: Version | None, provider: str | None = None) -> bool:
        if provider and self.providers and provider.lower() not in self.providers:
            return False
        if version is None:  # an unversioned session runs as the current generation
            return self.until is None
        return (self.since is None or version >= self.since) and (self.until is None or version < self.until)


GENERATIONS: tuple[Generation, ...] = (
    Generation("claude-code", "claude-code:1.0", None, (1, 1),
               "Claude Code 1.0.x: window - 32K - 13K = 155K as :2.0 (the recorded 1.0.53 session compacted "
               "between 152,519 and 154,669 + ~1.5K; medium confidence); no skills yet (2.0.20, CHANGELOG L4954)"),
    Generation("claude-code", "claude-code:2.0", (1, 1), (2, 1, 17),
               "window - 32K (Claude Code's max-output setting, uncapped) - 13K = 155K on 200K: every recorded "
               "2.0.76-2.1.20 auto compaction fired there; the cap came in 2.1.21 (CHANGELOG L4238)"),
    Generation("claude-code", "claude-code:2.1.17", (2, 1, 17), (2, 1, 21),
               "+ the legacy microcompact over the warning threshold (strategies/claude_code/microcompact.py): "
               "the 2.1.17-2.1.22 sessions record it, the 2.1.7 one would have run it at call 48 and shows no "
               "drop; no CHANGELOG entry either way"),
    Generation("claude-code", "claude-code:2.1.21", (2, 1, 21), (2, 1, 76),
               "window - min(max output, 20K) - 13K = 167K (CHANGELOG 2.1.21 L4238; the 2.1.22 session reached "
               "155,808 without compacting, the 2.1.36-2.1.42 ones compacted at 167K); no circuit breaker yet"),
    Generation("claude-code", "claude-code:2.1.76", (2, 1, 76), (2, 1, 89),
               "+ circuit breaker after 3 consecutive failed auto-compactions (CHANGELOG 2.1.76 L3485)"),
    Generation("claude-code", "claude-code:2.1.89", (2, 1, 89), (2, 1, 142),
               "+ thrash detection: back at the limit right after compacting 3 times in a row stops with an "
               "error (CHANGELOG 2.1.89 L3099)"),
    Generation("claude-code", "claude-code", (2, 1, 142), None,
               "+ reactive compaction cuts the first summarize request to fit from the reported overflow "
               "(CHANGELOG 2.1.142 L2024)"),
    Generation("codex", "codex:2025", None, (0, 50),
               "Sept-Oct 2025: flat 256,000 limit and the history-bridge message (codex-rs/core/src/compact.rs); "
               "before the encrypted-reasoning estimate (openai/codex PR #7113, 2025-11-21)"),
    Generation("codex", "codex:remote", (0, 63), (0, 125),
               "remote compaction for OpenAI providers (compact.rs@0100b103:35-40, on by default since PR "
               "#6866, Nov 2025; issue #7321 shows 0.63.0 running it); the server's history kept the final "
               "answers (the recorded 0.104 and 0.119 replacement_history); 90% of the raw window, counted "
               "with the old encrypted reasoning (history.rs get_total_token_usage)",
               providers=("openai",)),
    Generation("codex", "codex:0.125-remote", (0, 125), (0, 140),
               "remote compaction whose server history keeps no assistant message (the recorded 0.125 "
               "replacement_history: user messages, developer message, one compaction item); same trigger",
               providers=("openai",)),
    Generation("codex", "codex", (0, 50), (0, 140),
               "auto_compact_token_limit = 90% of the raw context_window (protocol/src/openai_models.rs; the "
               "rollout records raw x 95%); local compaction (non-OpenAI providers after 0.63)"),
    Generation("codex", "codex:0.140-remote", (0, 140), None,
               "90% of the raw window, remote compaction for OpenAI / Azure providers "
               "(supports_remote_compaction; issue #28592 shows 0.140.0 compacting remotely); the server "
               "history keeps no assistant message (the recorded 0.142 replacement_history)",
               providers=("openai", "azure")),
    Generation("codex", "codex:0.140", (0, 140), None,
               "90% of the raw window (the rollout's model_context_window is raw x "
               "effective_context_window_percent 95 / 100), local compaction for the other providers"),
    Generation("cline", "cline:sdk", None, None,
               "the 2026 SDK (sdk/packages/core/src/extensions/context); older sessions have no version"),
    Generation("opencode", "opencode:1.4", (1, 2), (1, 5),
               "session/overflow.ts @08f74b9b usable() / isOverflow(): tokens.total >= limit.input - "
               "min(20K, max output), else context - max output (a 1.2.12 session compacting at ~75% of "
               "200K, anomalyco/opencode#10123; the recorded 1.4.3 session compacts at 112,579 >= 108,000 "
               "and keeps nothing of the tail: its first call after is system + summary + continue). "
               "1.4.3 high, the rest of 1.2-1.4 medium; where the tail generation begins is not known"),
    Generation("opencode", "opencode", None, (1, 2), "sst/opencode session/compaction.ts"),
    Generation("opencode", "opencode", (1, 5), None,
               "sst/opencode session/compaction.ts (as before 1.2: which later version has the tail "
               "generation is not known from a recorded session)"),
    Generation("openhands", "openhands", (1,), None, "V1 SDK LLMSummarizingCondenser"),
    Generation("openhands", "openhands:v0", None, (1,), "V0 controller + LLMSummarizingCondenser"),
    Generation("goose", "goose", None, None, "block/goose context_mgmt/mod.rs"),
    Generation("amp", "amp", None, None,
               "closed source: threshold compaction (strategies/amp.py). A thread file records its client "
               "version (a build timestamp, traces/formats/amp.py); which build replaced compaction by "
               "Handoff is not known from a recorded thread, so every thread replays as compaction"),
    Generation("aider", "aider", None, None, "Aider-AI/aider history.py"),
    Generation("gemini-cli", "gemini-cli", None, None,
               "context/chatCompressionService.ts @5411f113 (session files record no CLI version; "
               "gemini-cli:2025 is the July-Oct 2025 generation, chosen by hand)"),
    Generation("copilot-cli", "copilot-cli", None, None,
               "closed source: copilot-sdk InfiniteSessionConfig defaults (0.80 / 0.95), one generation known"),
)
"""Ordered: the first generation that covers a version wins. Keep each agent's rows together."""


def matching_strategy(agent: str, version: str | None, provider: str | None = None) -> str | None:
    """The registry variant for a session of ``agent`` recorded at ``version`` with ``provider``;
    None when the agent has no strategy here. An unparseable or missing version means the current
    generation."""
    parsed = parse_version(version)
    rows = [g for g in GENERATIONS if g.agent == agent]
    for g in rows:
        if g.covers(parsed, provider):
            return g.strategy
    current = [g for g in rows if g.covers(None, provider)]
    return current[0].strategy if current else None
