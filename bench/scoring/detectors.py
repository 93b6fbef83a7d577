"""Failure detectors: compaction failures users have filed, found in the rows a replay writes.

Each detector reads one task's call rows (bench/replay/records.CallRecord or CallRow: ``call``, ``kind``,
``prompt_tokens``, ``model``, ``window``) and event rows (EventRecord: ``call``, ``kind``,
``tokens_before``, ``tokens_after``) and returns its firings, one ``Finding`` per call it fires on.
The count of findings per detector is a results column (``DETECTORS``, listed in
bench/scoring/metrics.METRICS) and the report names the strategies it fired on. Nothing here
replays anything: the same rows give the same findings.

The detectors and the reports they come from (GitHub issue threads, read through the issues search):

* ``runaway_compactions``: anthropics/claude-code#24179, "Compaction death spiral - 211 compactions
  consuming all tokens with zero progress"; also anthropics/claude-code#22195 (re-compaction right after
  reading rules files).
* ``ineffective_compactions``: github/copilot-cli#3621, "Auto-compaction loops infinitely when
  instruction files are large": the instructions alone sit above the trigger, so every turn compacts.
* ``model_switch_compactions``: openai/codex#33833, "Automatic context compaction after model or
  reasoning changes at 10-24% usage" (a switch between two models of the same 258,400-token window
  compacted at 10.4%).
* ``late_trigger``: cline/cline#14329, "Auto-compact threshold scales with context window, so 1M-context
  models never compact in practice" (the trigger is 0.81 of the window: 162K on 200K, 810K on 1M).
* ``overhead_fills_window``: github/copilot-cli#3539, "System/Tools consume 73% of context window
  (146k/200k), triggering auto-compaction on first message".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bench.replay.records import CallRecord, CallRow, EventRecord

Call = CallRecord | CallRow
"""A call row as a record or as a ``CallColumns.rows`` tuple (task_row's): the same fields by name."""

COMPACTION_KINDS = ("summarize", "handoff")
TRIGGER_KINDS = (*COMPACTION_KINDS, "drop")
"""What ``late_trigger`` counts as the strategy's first compaction: a summary, a handoff, or whole messages
dropped. Cline's context manager (the VS Code extension, cline-half / cline-quarter) answers its trigger by
dropping half or three quarters of the history, not by summarizing; cline#14329 is that trigger (960K on a
1M window), so a drop at it is the same late trigger. The other detectors keep ``COMPACTION_KINDS``: a
sliding window drops on every call by design, which is neither runaway nor ineffective."""

RUNAWAY_WINDOW = 10
"""K: the span of agent calls the runaway detector looks back over.

A compaction that works brings the context down to its summary plus what the strategy keeps (in the
agents we replay: 10-50% of the window, strategies.md). Refilling half a window takes a coding
session many calls: the bench's synthetic sessions add 1-10K tokens a call, so even a 32K window
takes several calls to refill, and a 200K window dozens. Ten calls is long enough that a healthy
strategy compacts at most once or twice in it and short enough to catch a loop early."""

RUNAWAY_MAX = 3
"""N: more than this many compacting calls within ``RUNAWAY_WINDOW`` calls is runaway.

Three in ten already means the summary plus the kept tail refilled the window in about three calls;
four or more cannot be a strategy working as designed (claude-code#24179 counted 211 in one session).
Compactions on two consecutive agent calls fire on their own, whatever the count."""

LATE_TRIGGER_SHARE = 0.8
"""A first compaction above this share of the window is a trigger set as a share of the window."""

LATE_TRIGGER_MIN_WINDOW = 200_000
"""Only windows larger than this count for ``late_trigger``.

On a window of 200K or less, compacting at 80-95% of it is every agent's design (Claude Code, Codex,
OpenCode, Cline: strategies.md) and costs at most a 200K prompt. Above 200K the same share means
prompts of 200K+ tokens on every call before the first compaction: a price tier of its own at
Anthropic (input above 200K tokens billed at the long-context rate) and, on a 1M window, 800K tokens
a call (cline#14329). A trigger fixed in tokens (Claude Code's 150K, claude-code#34202) stays silent."""

OVERHEAD_SHARE = 0.5
"""The first request above this share of its window leaves too little for the session itself.

With the usual trigger at 80-95% of the window, a fixed part above half of it leaves the conversation
less than half the window (less than a third at copilot-cli#3539's 73%), and a compaction cannot free
any of it: the next call compacts again."""


@dataclass(frozen=True)
class Finding:
    """One firing of one detector on one agent call of one task."""

    trace: str
    strategy: str
    detector: str
    call: int
    detail: str


def _compacting_calls(events: Sequence[EventRecord]) -> list[int]:
    """The agent calls at which the strategy compacted (one per call, however many events)."""
    return sorted({e.call for e in events if e.kind in COMPACTION_KINDS})


def _agent(calls: Sequence[Call]) -> list[Call]:
    return [c for c in calls if c.kind == "agent"]


def runaway(calls: Sequence[Call], events: Sequence[EventRecord]) -> list[tuple[int, str]]:
    """Compacting calls that follow a compacting agent call directly, or that make more than
    ``RUNAWAY_MAX`` compacting calls within the last ``RUNAWAY_WINDOW`` agent calls."""
    order = {c.call: i for i, c in enumerate(_agent(calls))}  # position among agent calls (re-reads share an index)
    compacting = [c for c in _compacting_calls(events) if c in order]
    out = []
    for j, c in enumerate(compacting):
        pos = order[c]
        recent = [p for p in compacting[:j + 1] if pos - order[p] < RUNAWAY_WINDOW]
        if j and order[compacting[j - 1]] == pos - 1:
            out.append((c, f"compacted again on the next call after call {compacting[j - 1]}"))
        elif len(recent) > RUNAWAY_MAX:
            out.append((c, f"{len(recent)} compactions within {RUNAWAY_WINDOW} calls"))
    return out


def ineffective(calls: Sequence[Call], events: Sequence[EventRecord]) -> list[tuple[int, str]]:
    """Compacting calls whose compaction did not bring the context under what triggered it.

    The trigger itself is not in the rows; a compaction fired at ``tokens_before``, so the trigger was
    at most that. It failed if the context did not get smaller (``tokens_after >= tokens_before`` over
    the call's compaction events) or if the strategy compacted again at the next agent call (the context
    after it was still above the trigger once one more turn was added: copilot-cli#3621)."""
    agent = _agent(calls)
    following = {a.call: b.call for a, b in zip(agent, agent[1:], strict=False)}
    compacting = set(_compacting_calls(events))
    out = []
    for c in sorted(compacting):
        done = [e for e in events if e.call == c and e.kind in COMPACTION_KINDS]
        before, after = done[0].tokens_before, done[-1].tokens_after
        if before > 0 and after >= before:
            out.append((c, f"context {before:,} -> {after:,} tokens: not reduced"))
        elif following.get(c) in compacting:
            out.append((c, f"context {before:,} -> {after:,} tokens, compacted again at call {following[c]}"))
    return out


def model_switch(calls: Sequence[Call], events: Sequence[EventRecord]) -> list[tuple[int, str]]:
    """Compactions at the first agent call after the model (or its window) changed (codex#33833).

    Rows without a model (written before schema 8) never fire."""
    agent = _agent(calls)
    switched = {}
    for a, b in zip(agent, agent[1:], strict=False):
        if a.model and b.model and (a.model, a.window) != (b.model, b.window):
            switched[b.call] = f"{a.model} ({a.window:,}) -> {b.model} ({b.window:,})"
    return [(c, f"compacted on the model switch {switched[c]}") for c in _compacting_calls(events) if c in switched]


def late_trigger(calls: Sequence[Call], events: Sequence[EventRecord], window: int | None = None
                 ) -> list[tuple[int, str]]:
    """The strategy's first compaction (``TRIGGER_KINDS``: a drop counts), when it fired above
    ``LATE_TRIGGER_SHARE`` of a window larger than ``LATE_TRIGGER_MIN_WINDOW`` (the window of that call,
    else ``window``; cline#14329)."""
    compacting = sorted({e.call for e in events if e.kind in TRIGGER_KINDS})
    if not compacting:
        return []
    first = compacting[0]
    win = next((c.window for c in _agent(calls) if c.call == first and c.window), None) or window or 0
    at = next(e.tokens_before for e in events if e.call == first and e.kind in TRIGGER_KINDS)
    if win > LATE_TRIGGER_MIN_WINDOW and at > LATE_TRIGGER_SHARE * win:
        return [(first, f"first compaction at {at:,} tokens, {at / win:.0%} of a {win:,}-token window")]
    return []


def overhead_fills_window(calls: Sequence[Call], window: int | None = None) -> list[tuple[int, str]]:
    """The first agent request above ``OVERHEAD_SHARE`` of its window (copilot-cli#3539).

    The first request is the fixed part (system prompt, tool schemas, instruction files) plus the
    opening user message; nothing of the session's own work is in it yet."""
    agent = _agent(calls)
    if not agent:
        return []
    first = agent[0]
    win = first.window or window or 0
    if win and first.prompt_tokens > OVERHEAD_SHARE * win:
        return [(first.call, f"first request {first.prompt_tokens:,} tokens, "
                             f"{first.prompt_tokens / win:.0%} of a {win:,}-token window")]
    return []


DETECTORS = ("runaway_compactions", "ineffective_compactions", "model_switch_compactions", "late_trigger",
             "overhead_fills_window")
"""The results columns, in order (each the number of findings of its detector on the task)."""


def findings(trace: str, strategy: str, calls: Sequence[Call], events: Sequence[EventRecord],
             window: int | None = None) -> list[Finding]:
    """Every detector's findings on one task's rows (``window``: the run's window where a row has none)."""
    found = {
        "runaway_compactions": runaway(calls, events),
        "ineffective_compactions": ineffective(calls, events),
        "model_switch_compactions": model_switch(calls, events),
        "late_trigger": late_trigger(calls, events, window),
        "overhead_fills_window": overhead_fills_window(calls, window),
    }
    return [Finding(trace, strategy, name, call, detail) for name in DETECTORS for call, detail in found[name]]


def counts(found: Sequence[Finding]) -> dict[str, int]:
    """Findings per detector (every detector present, 0 where it stayed silent)."""
    out = dict.fromkeys(DETECTORS, 0)
    for f in found:
        out[f.detector] += 1
    return out
