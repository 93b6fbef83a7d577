"""Provider-attributed token counts: each message's size as the recorded provider counted it.

Our tokenizer (cl100k over what a transcript holds) is not what a real agent decided on: the
provider counts with its own tokenizer, adds per-message framing, and bills a fixed part that a
transcript never shows (system prompt, tool schemas). Where a trace records per-call usage, the
provider's count of every message can be read off the usage itself:

- The prompt of call k is ``overhead + Σ provider(m)`` over the messages the recorded agent held.
  Between two calls it grows by what was appended (the previous answer and the new step); that
  growth is split over the appended messages in proportion to our tokenizer's counts (largest
  remainder, so the parts sum exactly). Anchoring on ``overhead + Σ present`` rather than on the
  previous prompt keeps rounding from accumulating.
- The first call cannot tell the overhead from its own messages: those are counted at the
  session's ratio (provider growth over ours, on the clean steps of the session itself; the
  family's calibrated ratio for a session too short to measure it) and the
  rest of the first prompt is the overhead. It is sent with every replayed request as an explicit
  part (``bench.context.messages.Meter.overhead``, a stable first item for the cache ledger).
- A compaction inside the recording: the first call after it holds the overhead plus the
  messages since the compaction only, so those are attributed against ``prompt − overhead``; the
  messages that went into the compaction keep what they had. The overhead stays whole after a
  compaction, though the first call's includes first-turn content that is no system prompt:
  Claude Code prepends the CLAUDE.md user context to every request (query.ts ``prependUserContext``)
  and re-runs SessionStart hooks after compacting; only the first-turn skill listing is not re-sent
  (compact.ts keeps ``sentSkillNames``: "~4K tokens"; public copies of the 2026 source). Its size is
  not in the 2.0-2.1.42 transcripts; taking a constant 4K off after each compaction was tried
  (issue 24): the 2.1.37 and 2.1.1 second compactions land on their call, but the context after
  falls out of ±15% on 1.0.53, 2.1.1, 2.1.7 and 2.1.20 (20 of 23 within → 16; 17 with 2K), so it is
  not done.
  The post-compaction cache read (16.6K on 1284c080 against a 43.5K overhead) is the globally cached
  system prompt and tools only, no measure of what is re-sent: the user context's end was never a
  cache breakpoint.
- A model switch (another model's system prompt, maybe tokenizer): the appended messages are
  counted at the session ratio and the overhead is re-measured from that call on
  (``overheads`` is a schedule of (call, tokens)).
- Reasoning (thinking blocks): OpenAI reasoning models drop the reasoning items of earlier turns
  once a new user message arrives (Responses API; Codex rollouts show the prompt shrinking at
  human turns). An OpenAI answer comes back at its output size (reasoning included); when a
  later prompt is smaller than what is held plus the new step, the deficit is taken off the
  held answers with reasoning (at a human turn) or off the last step's inputs (something seen
  once: an image, an attachment), and recorded per message as a ``persistent`` count from that
  call on (``dropped_at``); what neither explains is taken off the newest messages held and
  counted in ``notes``. Claude keeps thinking blocks on the recorded sessions (no such drop in
  the Claude Code usage), so nothing is dropped there; Claude Code transcripts keep a streaming
  snapshot of ``output_tokens`` (1-8), so Claude answers are split in proportion instead.
- A Claude prompt below what was held (Claude Code only; Claude keeps its thinking, so no provider
  drop): the agent took tool outputs out itself (its microcompact, issue 24). The loss is taken
  off the outputs it clears, from that call on (``persistent``/``dropped_at``): those a
  ``microcompact_boundary`` names first, then the oldest Read/Bash/Grep/Glob/Web*/Edit/Write
  outputs (``_cleared_by_agent``); the new step gets its own size at the ratio. Before, the loss was
  charged to the messages that followed (counted as nothing until the prompt grew back), which a
  strategy that clears those outputs itself paid twice (the 2.1.17 session: 42.5K at call 29 with
  no record, 25K at calls 44 and 74). Resumed sessions (``/exit``, then ``--resume``) also send a
  few K less (2.1.1: 4K, 2.1.7: 13.6K, 2.1.37: 1.2K): taken off the oldest outputs the same way,
  which leaves every prompt before the first compaction where it was.
- A call without usage: its step is merged into the next call that has usage.
- Codex reports cached ⊂ input (OpenAI semantics); the importer converts to ``Usage`` (cached
  apart), so ``prompt_tokens`` is the whole prompt either way.

With these rules ``bench.replay.loop`` reproduces every recorded prompt before the first recorded
compaction (tests/bench/test_attribution.py). Dropped tokens are subtracted from the request the
provider sees (the overflow check, the bill, the cache ledger, ``session.last_usage``), not from
``Context.truth``, which strategies read: they see the held messages at full size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.tokens.prefix import first_difference
from traces.model import Message, Thinking, Trace

if TYPE_CHECKING:
    from bench.tokens.counter import TokenCounter

MIN_RATIO_STEPS = 3


@dataclass(frozen=True)
class Attribution:
    """Provider counts of one trace's messages, and the fixed part sent with every request."""

    counts: tuple[int, ...]
    """Provider tokens of each message (by index in ``Trace.messages``), as first sent."""
    overheads: tuple[tuple[int, int], ...]
    """(call index, tokens) from which the fixed overhead applies; the first entry is call 0."""
    persistent: tuple[int | None, ...] = ()
    """Per message: its count from ``dropped_at`` on (reasoning or a one-off part dropped); None: same."""
    ratio: float = 1.0
    """Provider tokens per tokenizer token on the session's clean steps."""
    notes: tuple[str, ...] = ()
    dropped_at: tuple[int | None, ...] = ()
    """Per message: the call from which its ``persistent`` count applies (its reasoning dropped)."""

    def overhead_at(self, call: int) -> int:
        value = self.overheads[0][1] if self.overheads else 0
        for start, tokens in self.overheads:
            if start <= call:
                value = tokens
        return value


def drops_reasoning(trace: Trace) -> bool:
    """OpenAI reasoning models drop earlier turns' reasoning items (Codex's Responses API)."""
    model = (trace.model or "").lower()
    return trace.agent == "codex" or model.startswith(("gpt-5", "o1", "o3", "o4"))


MICROCOMPACTED = frozenset({"read", "bash", "grep", "glob", "websearch", "webfetch", "edit", "write"})
"""The tools whose outputs Claude Code's microcompact clears (strategies/claude_code/microcompact.py)."""


def _cleared_by_agent(msgs: tuple[Message, ...], held: list[int], pending: list[int], counts: list[int | None],
                      persistent: list[int | None], dropped_at: list[int | None], deficit: int) -> dict[int, int]:
    """What a Claude prompt lost below what was held (Claude keeps its thinking, so the agent removed it):
    tokens to take off each held message, from this call on, up to ``deficit``.

    Claude Code's microcompact clears old tool outputs. The outputs the transcript names
    (``meta["microcompact"]`` on the messages since the last call: a ``microcompact_boundary``) go
    first; what is left is taken off the oldest outputs of the tools it clears, whole, oldest first
    (its order; 2.1.17 cleared outputs without a record: strategies/claude_code/microcompact.py).
    A replayed strategy that clears the same outputs rewrites them, so nothing is taken twice;
    before, the loss was charged to the messages that came next (counted as nothing until the
    prompt grew back), which a strategy that clears them itself paid twice."""
    named = {i for j in pending for i in msgs[j].meta.get("microcompact", ())}
    tools = {u.id: u.name.lower() for j in held if msgs[j].role == "assistant" for u in msgs[j].tool_uses}
    first, rest = [], []
    for j in held:
        m = msgs[j]
        if m.role != "user" or dropped_at[j] is not None or not m.tool_results or not counts[j]:
            continue
        ids = {r.tool_use_id for r in m.tool_results}
        if ids & named:
            first.append(j)
        elif all(tools.get(i) in MICROCOMPACTED for i in ids):
            rest.append(j)
    out: dict[int, int] = {}
    for j in (*first, *rest):
        if deficit <= 0:
            break
        take = min(counts[j] or 0, deficit)
        out[j], deficit = take, deficit - take
    return out


def _split(total: int, weights: list[int]) -> list[int]:
    """``total`` split in proportion to ``weights``, in integers that sum to it exactly."""
    if not weights:
        return []
    w = sum(weights)
    if w <= 0:
        base = [total // len(weights)] * len(weights)
        base[-1] += total - sum(base)
        return base
    raw = [total * x / w for x in weights]
    out = [int(x) for x in raw]
    rest = total - sum(out)
    for i in sorted(range(len(raw)), key=lambda i: raw[i] - out[i], reverse=True)[:rest]:
        out[i] += 1
    return out


def _thinking_share(m: Message, ours: int, counter: TokenCounter) -> float:
    thinking = [b.text for b in m.blocks if isinstance(b, Thinking)]
    if not thinking or ours <= 0:
        return 0.0
    return min(1.0, counter.text("\n".join(thinking)) / ours)


def session_ratio(trace: Trace, counter: TokenCounter) -> float | None:
    """Provider growth over ours on the steps without a compaction, a human turn or a switch."""
    provider, ours, steps = clean_growth(trace, counter)
    return provider / ours if steps >= MIN_RATIO_STEPS and ours else None


def clean_growth(trace: Trace, counter: TokenCounter) -> tuple[int, int, int]:
    """(provider growth, our count of what was appended, steps) summed over the clean steps."""
    msgs = trace.messages
    compacted = {c.message_index for c in trace.compactions}
    provider = ours = steps = 0
    prev: tuple[int, int, str | None] | None = None
    appended = 0
    human = False
    for i, m in enumerate(msgs):
        if i in compacted:
            prev = None
        if m.role == "assistant" and m.usage is not None and m.usage.prompt_tokens:
            p, model = m.usage.prompt_tokens, m.meta.get("model")
            if prev is not None and not human and model == prev[2] and p > prev[0] and appended > 0:
                provider, ours, steps = provider + p - prev[0], ours + appended, steps + 1
            prev, appended, human = (p, i, model), 0, False
        elif m.is_human_turn:
            human = True
        appended += counter.truth(m)
    return provider, ours, steps


def _family_ratio(trace: Trace) -> float | None:
    """The calibrated ratio of the trace's model family, for sessions too short to measure their own."""
    from bench.tokens.calibration import calibrated

    fitted = calibrated(trace.model)
    return fitted.ratio if fitted is not None else None


def attribute(trace: Trace, counter: TokenCounter, *, fallback_ratio: float = 1.0) -> Attribution | None:
    """Provider counts of ``trace``'s messages from its recorded usage; None without usable usage."""
    msgs = trace.messages
    if not any(m.role == "assistant" and m.usage is not None and m.usage.prompt_tokens for m in msgs):
        return None
    ours = [counter.truth(m) for m in msgs]
    ratio = session_ratio(trace, counter) or _family_ratio(trace) or fallback_ratio
    drop = drops_reasoning(trace)
    counts: list[int | None] = [None] * len(msgs)
    persistent: list[int | None] = [None] * len(msgs)
    dropped_at: list[int | None] = [None] * len(msgs)
    compacted = {c.message_index for c in trace.compactions}
    notes: list[str] = []
    overheads: list[tuple[int, int]] = []
    overhead: int | None = None
    present = 0  # provider tokens of the messages the recorded agent holds (without the overhead)
    pool: list[int] = []  # held answers whose reasoning is still in the prompt (oldest first)
    last_inputs: list[int] = []  # the messages attributed at the previous call
    held: list[int] = []  # every message attributed since the last recorded compaction
    pending: list[int] = []  # messages appended since the last call with usage
    last_model: str | None = None
    call = -1

    def reasoning(j: int) -> int:
        return (counts[j] or 0) - (persistent[j] or 0)

    for i, m in enumerate(msgs):
        if i in compacted:
            for j in pending:  # went into the compaction, never sent after it
                counts[j] = round(ours[j] * ratio)
            pending, present, pool, last_inputs, held = [], 0, [], [], []
        if m.role != "assistant":
            pending.append(i)
            continue
        call += 1
        usage = m.usage
        if usage is None or not usage.prompt_tokens:
            pending.append(i)
            continue
        prompt, model = usage.prompt_tokens, m.meta.get("model", trace.model)
        last_human = max((j for j in pending if msgs[j].is_human_turn), default=-1)
        # An answer comes back at its output size (OpenAI reasoning included); Claude Code's
        # transcripts keep a streaming snapshot of output_tokens, so Claude answers are split.
        fixed = {j: msgs[j].usage.output_tokens for j in pending
                 if drop and msgs[j].role == "assistant" and msgs[j].usage and msgs[j].usage.output_tokens}
        for j in fixed:
            thinking = _thinking_share(msgs[j], ours[j], counter)
            if thinking:
                persistent[j] = min(round(ours[j] * (1 - thinking) * ratio), fixed[j])
                if j < last_human:  # already behind a new human turn: sent without its reasoning
                    counts[j], fixed[j], dropped_at[j] = fixed[j], persistent[j], call
        loose = [j for j in pending if j not in fixed]
        guess = sum(fixed.values()) + round(sum(ours[j] for j in loose) * ratio)
        switch = last_model is not None and model != last_model
        if overhead is None or switch:
            overhead = max(prompt - present - guess, 0)
            overheads.append((call, overhead))
        deficit = present + guess - (prompt - overhead)
        if drop and deficit > 0:
            # Reasoning leaves the prompt at a human turn; what else goes missing was seen once (an
            # image, an attachment): the last step's inputs shrink toward their size at the ratio.
            spare = {j: counts[j] or 0 for j in pool}  # a reasoning item's real size is not in the log
            spare_inputs = {j: counts[j] or 0 for j in last_inputs if dropped_at[j] is None}
            order = [spare, spare_inputs] if last_human >= 0 else [spare_inputs, spare]
            # then anything still held, newest first: the log does not say what left (counted in notes)
            order.append({j: counts[j] or 0 for j in reversed(held) if dropped_at[j] is None
                          and j not in spare and j not in spare_inputs})
            for n, capacity in enumerate(order):
                capacity = {j: c for j, c in capacity.items() if c > 0}
                total = sum(capacity.values())
                if deficit <= 0 or not total:
                    continue
                if n == 2:
                    notes.append(f"call {call}: {min(deficit, total)} tokens left the prompt unexplained; "
                                 "taken off the newest messages held")
                taken = _split(min(deficit, total), list(capacity.values()))
                for j, take in zip(capacity, taken, strict=True):
                    persistent[j], dropped_at[j] = (counts[j] or 0) - take, call
                    if j in pool:
                        pool.remove(j)
                deficit -= sum(taken)
                present -= sum(taken)
        if not drop and trace.agent == "claude-code" and held and prompt - overhead < present:
            taken = _cleared_by_agent(msgs, held, pending, counts, persistent, dropped_at, deficit)
            for j, take in taken.items():
                persistent[j], dropped_at[j] = (counts[j] or 0) - take, call
            present -= sum(taken.values())
            notes.append(f"call {call}: prompt {prompt} is {present + sum(taken.values()) + overhead - prompt} "
                         f"tokens below the messages already held: {sum(taken.values())} taken off "
                         f"{len(taken)} tool outputs the agent cleared (Claude Code's microcompact)")
        target = prompt - overhead - present
        rest = target - sum(fixed.values())
        if rest < 0:
            notes.append(f"call {call}: prompt {prompt} is {-rest} tokens below the messages already held")
            rest = 0
        for j, part in zip(loose, _split(rest, [ours[j] for j in loose]), strict=True):
            counts[j] = part
        for j, n in fixed.items():
            if counts[j] is None:
                counts[j] = n
            if persistent[j] is not None and dropped_at[j] is None:
                pool.append(j)
        present += sum(fixed.values()) + rest
        last_inputs = loose
        held += pending
        pending = [i]
        last_model = model
    for j in pending:
        counts[j] = round(ours[j] * ratio)
    persist = tuple(p if d is not None else None for p, d in zip(persistent, dropped_at, strict=True))
    return Attribution(tuple(int(c or 0) for c in counts), tuple(overheads), persist, ratio, tuple(notes),
                       tuple(dropped_at))


class ReasoningDrop:
    """Tokens of a request the provider no longer counts: reasoning dropped from ``dropped_at`` on.

    Kept as a running total over the messages a request shares with the previous one, plus what
    falls due at this call: a growing conversation costs each call its new part; a rewritten
    history is recounted once.
    """

    def __init__(self, trace: Trace, attribution: Attribution, counter: TokenCounter) -> None:
        self._amount: dict[int, int] = {}
        self._when: dict[int, int] = {}
        self._due: dict[int, list[Message]] = {}
        for m, p, at in zip(trace.messages, attribution.persistent, attribution.dropped_at, strict=False):
            if p is not None and at is not None:
                self._amount[id(m)] = max(counter.truth(m) - p, 0)
                self._when[id(m)] = at
                self._due.setdefault(at, []).append(m)
        self._keep = trace.messages  # the ids above stay valid while the trace lives
        self._messages: tuple[Message, ...] = ()
        self._ids: set[int] = set()
        self._call = -1
        self._total = 0

    def __bool__(self) -> bool:
        return bool(self._amount)

    def __call__(self, messages: tuple[Message, ...], call: int) -> int:
        n = first_difference(self._messages, messages)
        if n < len(self._messages) or call < self._call:  # rewritten: recount from scratch
            self._ids, self._total, new = set(), 0, messages
        else:
            new = messages[n:]
            for c in range(self._call + 1, call + 1):
                self._total += sum(self._amount[id(m)] for m in self._due.get(c, ()) if id(m) in self._ids)
        for m in new:
            self._ids.add(id(m))
            if self._when.get(id(m), call + 1) <= call:
                self._total += self._amount[id(m)]
        self._messages, self._call = messages, call
        return self._total


