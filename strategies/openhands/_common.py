"""What the OpenHands condensers share: the cited sources, V0's conversation-memory ``render`` and the
helpers around it, and ``_ViewCondenser``, the base of the V0 condensers that rebuild a sent view
every step (``masking``, ``recent``). See the package docstring for the event mapping.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from bench.context import Context, Message, Outcome, Strategy, ToolResult, event
from strategies._tools import latest_human_index, waiting_from

if TYPE_CHECKING:
    from bench.context import Session

V0 = "OpenHands/OpenHands@d6fab190 openhands/memory/condenser/impl/*.py, openhands/memory/conversation_memory.py"
V1 = "OpenHands/software-agent-sdk@611629e6 openhands-sdk/openhands/sdk/context/condenser/llm_summarizing_condenser.py"


def render(messages: list[Message] | tuple[Message, ...], original: tuple[Message, ...]) -> tuple[Message, ...]:
    """V0 conversation memory: restore system + initial user message, drop unmatched tool calls."""
    msgs = list(messages)
    first_user = next((m for m in original if m.is_human_turn), None)
    if first_user is not None and not any(m is first_user for m in msgs):
        msgs.insert(1 if msgs and msgs[0].role == "system" else 0, first_user)
    if original and original[0].role == "system" and (not msgs or msgs[0] is not original[0]):
        msgs.insert(0, original[0])
    answered = {r.tool_use_id for m in msgs for r in m.tool_results}
    complete = [m for m in msgs if not m.tool_uses or all(u.id in answered for u in m.tool_uses)]
    calls = {u.id for m in complete for u in m.tool_uses}
    out = []
    for m in complete:
        if any(r.tool_use_id not in calls for r in m.tool_results):
            blocks = tuple(b for b in m.blocks if not (isinstance(b, ToolResult) and b.tool_use_id not in calls))
            if not blocks:
                continue
            m = replace(m, blocks=blocks)
        out.append(m)
    return tuple(out)


def keep_indices(ctx: Context, indices: set[int], human: int | None = None) -> tuple[Message, ...]:
    """The messages at ``indices`` (plus the latest human turn, see class docs; an empty user
    message is none), rendered. ``human`` is that turn's index when the caller already knows it."""
    human = latest_human_index(ctx.messages, skip_empty=True) if human is None else human
    if human >= 0:
        indices.add(human)
    return render([ctx.messages[i] for i in sorted(indices) if 0 <= i < len(ctx)], ctx.messages)


def waits(ctx: Context) -> bool:
    """Does a call in the view still wait for its result (a log with an assistant message between
    a call and its result)? V0's controller does not step the agent, so its condenser does not
    run, while an action is pending (OpenHands@d6fab190 openhands/controller/agent_controller.py
    ``_step``, L880-888): the rolling V0 condensers wait for the result, as ``render`` would drop
    the pending call from the stored view and the result would come back without it."""
    return waiting_from(ctx.messages) < len(ctx)


def around_waiting(ctx: Context, condense: Callable[[Context], Outcome | None]) -> Outcome | None:
    """``condense`` on what precedes the calls still waiting for their results, those put back
    after it as they are: a condensation request (an overflow) that comes while they wait."""
    w = waiting_from(ctx.messages)
    if w >= len(ctx):
        return condense(ctx)
    done = condense(ctx.replace(ctx.messages[:w])) if w > 1 else None
    if done is None:
        return None
    after = ctx.replace((*done.context.messages, *ctx.messages[w:]))
    return Outcome(after, tuple(replace(e, tokens_before=ctx.truth, tokens_after=after.truth,
                                        detail=f"{e.detail}; calls in flight kept") for e in done.events))


def _bump(counts: dict[str, int], key: str, by: int) -> bool:
    """Add ``by`` to ``counts[key]``; True when the count went from zero to positive or back."""
    was = counts.get(key, 0)
    now = counts[key] = was + by
    return (was > 0) != (now > 0)


@dataclass(frozen=True, kw_only=True)
class _ViewCondenser(Strategy):
    """A V0 condenser that rebuilds the view every step: sent only, the stored history is whole."""

    estimator: str = "truth"
    kind = "drop"

    def view(self, ctx: Context, session: Session) -> tuple[Message, ...] | None:
        raise NotImplementedError

    def _sent(self, ctx: Context, session: Session) -> Context:
        cached = session.state.get("projection")
        if cached is not None and cached[0] is ctx.messages:
            return cached[1]
        msgs = self.view(ctx, session)
        sent = ctx if msgs is None else ctx.replace(msgs)
        session.state["projection"] = (ctx.messages, sent)
        return sent

    def touched(self, ctx: Context, sent: Context, session: Session) -> int:
        """Stored messages the view does not send as they are."""
        stored = {id(m) for m in ctx.messages}  # identity, in one pass (not a scan per message)
        return len(ctx) - sum(1 for m in sent.messages if id(m) in stored)

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        sent = self._sent(ctx, session)
        if sent is ctx:
            return None
        touched = self.touched(ctx, sent, session)
        return Outcome(ctx, (event(self.kind, ctx, sent, touched=touched, detail="sent view, rebuilt every step"),))

    def project(self, ctx: Context, session: Session) -> Context:
        return self._sent(ctx, session)
