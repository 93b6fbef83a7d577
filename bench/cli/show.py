"""``compaction-bench show RUN --trace T --strategy S --call N [--diff S2]``: the context sent at one call.

The run folder stores numbers per call, not the contexts themselves (they would be the size of the
traces times the strategies). So ``show`` replays the one (trace, strategy) again, from run.json's
exact configuration, and keeps the context sent at call N: a replay is deterministic, and one task
takes seconds. (Code edited since the run replays the edited code: the task key would differ too.)
"""

from __future__ import annotations

import copy
import difflib
import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from bench.context.messages import Context
from bench.replay.records import EventRecord
from traces.model import Message, Trace


class ShowError(ValueError):
    """A run folder, trace, strategy or call that cannot be shown; the message lists what exists."""


@dataclass(frozen=True)
class Shown:
    trace: Trace
    strategy: str
    call: int
    context: Context
    events: tuple[EventRecord, ...]
    """What the strategy did at this call."""


def _config(run_dir: Path) -> tuple[Any, dict[str, Any]]:
    from bench.run.runner import RunConfig

    try:
        info = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except OSError:
        raise ShowError(f"{run_dir}: not a run folder (no run.json)") from None
    allowed = {f.name for f in fields(RunConfig)}
    raw = {k: (tuple(v) if isinstance(v, list) else v) for k, v in info.get("config", {}).items() if k in allowed}
    return RunConfig(**raw), info


def _trace(config: Any, trace_id: str) -> Trace:
    from bench.run import sources
    from bench.run.runner import trace_sources

    ids = []
    for t in sources.stream(trace_sources(config), seed=config.seed, seeds=config.seeds, lenient=config.lenient):
        if t.id == trace_id:
            return t
        ids.append(t.id)
    hits = difflib.get_close_matches(trace_id, ids, n=3, cutoff=0.3)
    raise ShowError(f"no trace {trace_id!r} in this run" + (f"; did you mean {', '.join(hits)}?" if hits else "")
                    + f" ({len(ids)} traces: {', '.join(ids[:8])}{' …' if len(ids) > 8 else ''})")


def context_at(run_dir: Path | str, trace_id: str, strategy: str, call: int) -> Shown:
    """Replay one (trace, strategy) of a finished run and return the context sent at agent call ``call``."""
    import strategies as registry
    from bench.cost.pricing import RECORDED, profile, profile_for
    from bench.replay.loop import ReplayConfig, replay
    from bench.replay.provider import shipped_counts
    from bench.run.runner import shared_counter
    from bench.summarizers import PER_TRACE
    from bench.summarizers import build as build_summarizer
    from bench.tokens.counter import TokenCounter

    run_dir = Path(run_dir)
    config, info = _config(run_dir)
    labels = [str(s.get("label")) for s in info.get("strategies", [])]
    if strategy not in labels:
        raise ShowError(f"no strategy {strategy!r} in this run; it ran: {', '.join(labels)}")
    trace = _trace(config, trace_id)
    spec = registry.parse_spec(strategy)
    inner = registry.build(spec)
    seen: dict[int, Context] = {}

    class Recording(type(inner)):  # the same strategy, keeping what it projects at the wanted call
        def project(self, ctx: Context, session: Any) -> Context:
            sent = super().project(ctx, session)
            if session.call_index == call:
                seen[call] = sent
            return sent

    recording = copy.copy(inner)
    object.__setattr__(recording, "__class__", Recording)
    counter = shared_counter(trace, shipped_counts(trace, TokenCounter(), model=config.model, truth=config.truth))
    summarizer = build_summarizer(config.summarizer, **config.summarizer_options,
                                  **({"trace": trace} if config.summarizer in PER_TRACE else {}))
    replay_config = ReplayConfig(profile_for(config.model, trace.model),
                                 profile(config.summarizer_model) if config.summarizer_model else None,
                                 config.seconds_per_call, config.cache_ttl, recorded_models=config.model == RECORDED,
                                 open_loop=config.open_loop)  # the same re-reads as the run made
    result = replay(trace, recording, replay_config, counter=counter, summarizer=summarizer, label=strategy)
    agent_calls = [c.call for c in result.calls if c.kind == "agent"]
    if call not in seen or call not in agent_calls:
        span = f"{agent_calls[0]}–{agent_calls[-1]}" if agent_calls else "none"
        raise ShowError(f"{trace_id} × {strategy} has no agent call {call} (agent calls: {span})")
    return Shown(trace, strategy, call, seen[call], tuple(e for e in result.events if e.call == call))


def _line(m: Message, tokens: int, original: set[int]) -> str:
    text = " ".join(m.text.split()) if m.text else ""
    if not text and m.tool_results:
        text = " ".join(" ".join(r.content.split()) for r in m.tool_results)
    if not text and m.tool_uses:
        text = " ".join(f"{u.name}({u.input_json()[:60]})" for u in m.tool_uses)
    mark = " " if id(m) in original else "*"
    kind = "tool_result" if m.tool_results else "tool_use" if m.tool_uses else m.role
    return f"{mark} {kind:<11} {tokens:>7,}  {text[:110]}{'…' if len(text) > 110 else ''}"


def render(shown: Shown) -> list[str]:
    """One line per message sent: ``*`` marks a message the strategy wrote or rewrote (a marker, a
    summary, a cleared output), then its kind, its tokens and the start of its text."""
    original = {id(m) for m in shown.trace.messages}
    return [_line(m, shown.context.tok(m), original) for m in shown.context.messages]


def format_shown(shown: Shown, width_note: bool = True) -> str:
    ctx = shown.context
    rewritten = sum(1 for line in render(shown) if line.startswith("*"))
    head = [f"{shown.trace.id} × {shown.strategy}, agent call {shown.call}: {len(ctx)} messages, "
            f"{ctx.truth:,} tokens sent (the strategy's own estimate {ctx.estimate:,}); "
            f"{rewritten} written or rewritten by the strategy (marked *)"]
    head += [f"  event at this call: {e.kind} via {e.hook}, {e.tokens_before:,} → {e.tokens_after:,} tokens, "
             f"{e.messages_touched} messages touched" for e in shown.events]
    return "\n".join([*head, "", *(f"{i:>4} {line}" for i, line in enumerate(render(shown)))])


def format_diff(a: Shown, b: Shown) -> str:
    """A unified diff of the two contexts sent at the same call (``-`` only in a, ``+`` only in b)."""
    diff = difflib.unified_diff(render(a), render(b), fromfile=a.strategy, tofile=b.strategy, lineterm="", n=1)
    return "\n".join([f"{a.trace.id}, agent call {a.call}: {a.strategy} sends {len(a.context)} messages, "
                      f"{a.context.truth:,} tokens; {b.strategy} sends {len(b.context)}, {b.context.truth:,}", "",
                      *diff])
