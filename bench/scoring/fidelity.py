"""Fidelity: does our re-implementation compact where and as much as the real agent did?

A real trace can hold the recorded agent's own compactions (``Trace.compactions``: Claude Code's
``compact_boundary`` with ``preTokens`` and the summary that followed). Replaying the matching
strategy family over it, *driven by the recorded usage* (the provider-reported prompt sizes the
real agent triggered on, not our tokenizer's), the k-th replayed summarize/handoff is set beside
the k-th recorded compaction: the call at which each fired, the size before, and the size of the
first request after (the recorded one = system prompt + summary + what the agent appended before
its next call, counted by our tokenizer; the provider's own figure is kept beside it).

The recorded agent's own compaction messages (its summary, OpenCode's request and continue note) are
left out of the replayed context (``bench.replay.recorded_compaction_messages``), so a replay's later
compactions are not drifted by a second summary; Claude Code's replays still append them
(``bench.replay.KEEPS_RECORDED_COMPACTIONS``), where only the first replayed compaction of each pair is
comparable without caveats.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from bench.context.messages import Context
from bench.context.strategy import Outcome, Strategy
from bench.replay.loop import COMPACTION_KINDS, Observer, ReplayConfig, replay
from bench.replay.records import TaskResult
from bench.summarizers import Summarizer
from bench.tokens.counter import TokenCounter
from traces.model import Trace, Usage, recorded_calls

MATCHING_STRATEGY = {
    "claude-code": "claude-code", "codex": "codex", "opencode": "opencode", "cline": "cline:sdk",
    "openhands": "openhands", "gemini-cli": "gemini-cli", "copilot-cli": "copilot-cli",
}
"""Recorded agent (``Trace.agent``) → the registry strategy that re-implements its compaction."""

COLUMNS = (
    "trace", "strategy", "compaction", "trigger", "recorded_call", "replayed_call", "call_delta",
    "recorded_pre_tokens", "recorded_pre_usage", "recorded_pre_truth", "replayed_pre_tokens", "replayed_pre_estimate",
    "recorded_post_tokens", "recorded_post_usage", "replayed_post_tokens", "post_ratio",
    "recorded_summary_tokens", "replayed_summary_tokens", "replayed_compactions",
)


_PAUSE, _COUNT = "_recorded_usage_paused_until", "_recorded_usage_compactions"


def matching_strategy(trace: Trace) -> str | None:
    """The registry strategy that re-implements the trace's agent at the version (for Codex, and
    the model provider) it recorded (``strategies.versions``); ``MATCHING_STRATEGY`` for agents
    that table does not know."""
    from strategies.versions import matching_strategy as by_version

    version = trace.meta.get("version") or trace.meta.get("cli_version")
    provider = trace.meta.get("model_provider")
    return (by_version(trace.agent, version if isinstance(version, str) else None,
                       provider if isinstance(provider, str) else None)
            or MATCHING_STRATEGY.get(trace.agent))


MIN_RATIO_STEPS = 10


def usage_ratio(trace: Trace, counter: TokenCounter) -> float | None:
    """Provider prompt tokens per truth token, measured on the recorded session itself.

    Between two consecutive calls with recorded usage, the provider's prompt grows by what was
    appended (the system prompt and tool definitions, which a trace does not carry, cancel out);
    the same messages counted by our tokenizer give the other side. Summed over every such step
    without a compaction in between, the ratio says how far our truth count runs below the
    provider's (its tokenizer, and per-message framing the transcript does not show). None with
    fewer than ``MIN_RATIO_STEPS`` steps.
    """
    compacted = {c.message_index for c in trace.compactions}
    points, size = [], 0
    for i, m in enumerate(trace.messages):
        if m.role == "assistant" and m.usage is not None and m.usage.prompt_tokens:
            points.append((i, m.usage.prompt_tokens, size))
        size += counter.truth(m)
    provider = ours = steps = 0
    for (i0, p0, t0), (i1, p1, t1) in itertools.pairwise(points):
        if p1 <= p0 or t1 <= t0 or any(i0 < k <= i1 for k in compacted):
            continue
        provider, ours, steps = provider + p1 - p0, ours + t1 - t0, steps + 1
    return provider / ours if steps >= MIN_RATIO_STEPS else None


def recorded_usages(trace: Trace) -> tuple[Usage | None, ...]:
    """The provider-reported usage of each call, by call index (None where the log has none)."""
    return tuple(m.usage for m in trace.messages if m.role == "assistant")


@dataclass(frozen=True, kw_only=True)
class RecordedUsage(Strategy):
    """Runs ``inner`` with ``session.last_usage`` set to the recorded usage of the previous call.

    Agents that trigger on the provider's reported usage (Claude Code, Codex, Cline, OpenCode)
    then fire on the numbers the real agent saw, which include its system prompt and tool
    definitions that a trace does not carry.
    """

    name = "recorded-usage"
    citation = "harness wrapper (fidelity checks)"

    inner: Strategy
    usages: tuple[Usage | None, ...] = field(default=())
    recorded_calls: tuple[int, ...] = ()
    """Calls at which the recorded agent compacted. After the k-th replayed compaction (at call r)
    the recorded usage describes a context we no longer hold until the recorded agent's own k-th
    compaction (at call c) has been reported, so driving resumes at max(r, c) + 1 (never, after
    a compaction the recorded agent did not make)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "estimator", self.inner.estimator)

    def _drive(self, session: Any) -> None:
        i = session.call_index - 1
        paused_until = session.state.get(_PAUSE, -1)
        if session.call_index >= paused_until and 0 <= i < len(self.usages) and self.usages[i] is not None:
            session.last_usage = self.usages[i]

    def _after(self, outcome: Outcome | None, session: Any) -> Outcome | None:
        if outcome is not None and any(e.kind in COMPACTION_KINDS for e in outcome.events):
            k = session.state.get(_COUNT, 0)
            session.state[_COUNT] = k + 1
            session.state[_PAUSE] = (max(session.call_index, self.recorded_calls[k]) + 1
                                     if k < len(self.recorded_calls) else float("inf"))
        return outcome

    def on_tool_result(self, ctx: Context, session: Any) -> Outcome | None:
        self._drive(session)
        return self._after(self.inner.on_tool_result(ctx, session), session)

    def before_call(self, ctx: Context, session: Any) -> Outcome | None:
        self._drive(session)
        return self._after(self.inner.before_call(ctx, session), session)

    def on_overflow(self, ctx: Context, session: Any) -> Outcome | None:
        self._drive(session)
        return self._after(self.inner.on_overflow(ctx, session), session)

    def project(self, ctx: Context, session: Any) -> Context:
        return self.inner.project(ctx, session)


def replay_recorded(
    trace: Trace, strategy: Strategy, config: ReplayConfig, *, counter: TokenCounter,
    summarizer: Summarizer | None = None, label: str | None = None, observers: tuple[Observer, ...] = (),
) -> TaskResult:
    """``bench.replay.loop.replay`` with ``strategy`` driven by the trace's recorded usage."""
    driven = RecordedUsage(inner=strategy, usages=recorded_usages(trace), recorded_calls=recorded_calls(trace))
    return replay(trace, driven, config, counter=counter, summarizer=summarizer,
                  label=label or strategy.name, observers=observers)


MANUAL = "manual"
"""The trigger of a compaction the user typed (RecordedCompaction.trigger)."""


def first_automatic(rows: list[dict]) -> dict:
    """The row the results table reports: the first recorded compaction the agent triggered itself
    (the first row when every one was manual; {} when there is none). One before the file's first call
    (a file that begins with a compaction) was not triggered by anything the replay holds."""
    return next((r for r in rows if r.get("trigger") != MANUAL and r.get("recorded_call", 1) != 0),
                rows[0] if rows else {})


def pair_compactions(trace: Trace, replayed: list[Any]) -> list[tuple[int, Any]]:
    """Each recorded compaction's call, with the replayed compaction set beside it (None when none is):
    the k-th automatic recorded one with the replay's k-th. One the user typed (``trigger ==
    "manual"``) or one before the file's first call (a file that begins with a compaction) is paired
    with nothing and takes none of the replay's: no strategy models either."""
    out, paired = [], 0
    for rc, call in zip(trace.compactions, recorded_calls(trace), strict=True):
        e = None
        if rc.trigger != MANUAL and call > 0 and paired < len(replayed):
            e, paired = replayed[paired], paired + 1
        out.append((call, e))
    return out


def fidelity_rows(trace: Trace, result: TaskResult, *, counter: TokenCounter | None = None) -> list[dict]:
    """One row per recorded compaction, paired in order with the replay's compactions.

    Replayed columns are None when the replay compacted fewer times than the recorded agent. A
    compaction the user asked for (``trigger == "manual"``, Claude Code's /compact) is listed but
    paired with nothing: no strategy models a typed command, and pairing it with the replay's first
    automatic compaction would report a trigger error that is not one. Nor is a compaction before
    the first call (a file that begins with one: the agent compacted a part the file does not hold),
    which no replay can reproduce and which is no miss.
    ``post_ratio`` = replayed_post_tokens / recorded_post_tokens.

    Sizes come in two units. ``recorded_pre_tokens`` (compact_boundary's preTokens) and the
    ``*_usage`` columns are the provider's counts: they include the system prompt and tool
    definitions a trace does not carry, in the provider's tokenizer. ``recorded_pre_truth``,
    ``recorded_post_tokens`` and the ``replayed_*`` sizes are our tokenizer over trace messages,
    so compare replayed_pre_tokens with recorded_pre_truth: the messages the recorded agent held
    when it compacted (since its previous compaction, plus the system message). The replayed
    size also holds the inputs of the step the compaction fired in, which the recorded agent
    appended only after compacting.
    """
    counter = counter or TokenCounter()
    msgs = trace.messages
    answers = [i for i, m in enumerate(msgs) if m.role == "assistant"]
    replayed = [e for e in result.events if e.kind in COMPACTION_KINDS]
    sent = {c.call: c.prompt_tokens for c in result.calls if c.kind == "agent"}
    system = counter.truth(msgs[0]) if msgs and msgs[0].role == "system" else 0
    attribution = counter.attribution(trace.id)  # provider units: the recorded sides get the overhead too
    rows = []
    pairs = pair_compactions(trace, replayed)
    for k, rc in enumerate(trace.compactions):
        start = rc.message_index
        since = trace.compactions[k - 1].message_index if k else 0
        held = msgs[since:start]
        recorded_call, e = pairs[k]
        overhead = attribution.overhead_at(recorded_call) if attribution is not None else 0
        pre_truth = sum(counter.truth(m) for m in held) + (system if since > 0 else 0) + overhead
        before = [msgs[i] for i in answers if i < start and msgs[i].usage is not None]
        after = next((i for i in answers if i >= start), len(msgs))
        next_usage = msgs[after].usage if after < len(msgs) else None
        post = system + sum(counter.truth(m) for m in msgs[start:after]) + overhead
        row: dict[str, Any] = {
            "trace": trace.id, "strategy": result.strategy, "compaction": k, "trigger": rc.trigger,
            "recorded_call": recorded_call, "recorded_pre_tokens": rc.pre_tokens,
            "recorded_pre_usage": before[-1].usage.prompt_tokens + before[-1].usage.output_tokens if before else None,
            "recorded_pre_truth": pre_truth,
            "recorded_post_tokens": post,
            "recorded_post_usage": next_usage.prompt_tokens if next_usage is not None else None,
            "recorded_summary_tokens": counter.text(rc.summary) if rc.summary else None,
            "replayed_compactions": len(replayed),
        }
        replayed_post = None if e is None else sent.get(e.call, e.tokens_after)
        row.update({
            "replayed_call": None if e is None else e.call,
            "call_delta": None if e is None else e.call - recorded_call,
            "replayed_pre_tokens": None if e is None else e.tokens_before,
            "replayed_pre_estimate": None if e is None else e.estimate_before,
            "replayed_post_tokens": replayed_post,
            "post_ratio": None if replayed_post is None or not post else replayed_post / post,
            "replayed_summary_tokens": None if e is None else e.summary_tokens,
        })
        rows.append({c: row[c] for c in COLUMNS})
    return rows


def check_trace(trace: Trace, config: ReplayConfig, *, counter: TokenCounter | None = None,
                summarizer: Summarizer | None = None) -> list[dict]:
    """Fidelity rows for a trace against its agent's matching strategy ([] when there is none)."""
    import strategies

    name = matching_strategy(trace)
    if not trace.compactions or name is None or name not in strategies.names():
        return []
    counter = counter or TokenCounter()
    result = replay_recorded(trace, strategies.build(name), config, counter=counter, summarizer=summarizer)
    return fidelity_rows(trace, result, counter=counter)
