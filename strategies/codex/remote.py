"""Codex's remote compaction: the server (``/responses/compact``) returns the new history.

openai/codex @683f0a68 codex-rs/core/src/compact_remote.rs; routing @0100b103 compact.rs:35-40.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from bench.context import Message, Outcome, ToolUse, event
from strategies._tools import text_user
from strategies.codex.common import (
    COMPACT_PROMPT,
    initial_context_item,
    latest_initial_context,
    new_turn_input,
    remote_kept,
)

if TYPE_CHECKING:
    from bench.context import Context, Session


class RemoteCompaction:
    """``remote_compact``; mixed into ``Codex`` (reads ``remote_item_tokens``, ``remote_keeps_answers``)."""

    def remote_compact(self, ctx: Context, session: Session, *, pre_turn: bool = False) -> Outcome | None:
        """Server-side compaction (``/responses/compact``) as Codex applies its answer.

        Routing: openai/codex@0100b103 codex-rs/core/src/compact.rs:35-40
        (``should_use_remote_compact_task``: an OpenAI provider with the RemoteCompaction feature,
        on by default since PR #6866, Nov 2025; later also Azure). The trigger is the local one
        (``run_auto_compact`` only dispatches). The request, then the answer:
        openai/codex@683f0a68 codex-rs/core/src/compact_remote.rs:67-166
        (``run_remote_compact_task_inner_impl``): while the request is over the window, trailing
        Codex-generated items are removed (``trim_function_call_history_to_fit_context_window``,
        end of the file; here: trailing tool outputs); the server's answer goes through
        ``process_compacted_history`` (:168-188) and ``should_keep_compacted_history_item``
        (:205-227): developer messages and contextual user messages (AGENTS.md, environment
        context, a loaded skill's ``<skill>`` body: ``common.contextual``) are dropped, real user
        messages, assistant messages and the compaction item kept, and the session's initial
        context is inserted above the last real user message.

        What the server answers is not public; the recorded rollout in ../shared/traces
        (codex__madshn-localpush, 0.104.0-alpha.1, the ``compacted`` record) shows it: every real
        user message (19 of 19; no size cap seen) and every final answer (15 of 15, assistant
        messages without tool calls) in order, then one opaque ``compaction`` item; reasoning,
        commentary, tool calls and outputs are gone. That is what is rebuilt here, the summary
        standing in for the encrypted item (our prompt; the server's is not public), asked for at
        most ``remote_item_tokens``. The later rollouts' ``replacement_history`` (0.119: answers
        kept; 0.125, 0.142: none, ``remote_keeps_answers``) also hold the whole initial context
        again (developer instructions, AGENTS.md, environment context: ``latest_initial_context``).
        Pre-turn (``InitialContextInjection::DoNotInject``): the history is compacted without the new
        turn's input, which follows the item with the initial context the next turn injects.
        """
        system, held = ctx.messages[0], ctx.messages[1:]
        cut = new_turn_input(held) if pre_turn else len(held)
        history, pending = held[:cut], held[cut:]  # a pre-turn compaction: the new input comes after
        if not history:
            return None
        request, trimmed = history, 0
        size = ctx.tok(system) + sum(ctx.tok(m) for m in request)
        while len(request) > 1 and request[-1].is_tool_result and not session.model.fits(size, 0):
            removed = request[-1]
            request, freed = without_calls(request[:-1], removed, ctx.tok)
            size -= ctx.tok(removed) + freed
            trimmed += 1
        summary = session.summarize((system, *request), prompt=COMPACT_PROMPT,
                                    max_tokens=self.remote_item_tokens or session.model.max_output)
        kept = [k for m in history if (k := remote_kept(m, answers=self.remote_keeps_answers)) is not None]
        item = text_user(summary.text or "(no summary available)", summary=True, opaque=True)
        if pending:  # pre-turn (InitialContextInjection::DoNotInject): the next turn re-injects it
            context = () if any(initial_context_item(m) for m in pending) else latest_initial_context(history)
            after = ctx.replace((system, *kept, item, *context, *pending))
        else:  # mid-turn (BeforeLastUserMessage): above the last real user message
            context = latest_initial_context(history)
            last_user = max((i for i, m in enumerate(kept) if m.role == "user"), default=len(kept))
            after = ctx.replace((system, *kept[:last_user], *context, *kept[last_user:], item))
        users = sum(1 for m in kept if m.role == "user")
        detail = (f"remote{' pre-turn' if pending else ''}: kept {users} user message(s), "
                  f"{len(kept) - users} final answer(s), {len(context)} initial-context item(s)"
                  + (f"; trimmed {trimmed} trailing output(s)" if trimmed else ""))
        return Outcome(after, (event("summarize", ctx, after, touched=len(history),
                                     summary_tokens=summary.output_tokens, detail=detail),))


def without_calls(request: tuple[Message, ...], removed: Message, tok: Callable[[Message], int]
                  ) -> tuple[tuple[Message, ...], int]:
    """``request`` without the calls whose outputs ``removed`` held, and the tokens that frees (by ``tok``):
    Codex's ``remove_last_item`` takes a trimmed output's call out with it (``normalize::remove_corresponding_for``,
    openai/codex @a20bf059 codex-rs/core/src/context_manager/history.rs, ``remove_last_item``), so the
    compaction request never carries a call without its output. A message left with no block goes too (each
    Codex call is an item of its own; our assistant message only groups them). Only the messages holding
    such a call are counted again."""
    gone = {r.tool_use_id for r in removed.tool_results}
    if not gone:
        return request, 0
    out, freed = [], 0
    for m in request:
        if any(u.id in gone for u in m.tool_uses):
            blocks = tuple(b for b in m.blocks if not (isinstance(b, ToolUse) and b.id in gone))
            freed += tok(m)
            if not blocks:
                continue
            m = replace(m, blocks=blocks)
            freed -= tok(m)
        out.append(m)
    return tuple(out), freed
