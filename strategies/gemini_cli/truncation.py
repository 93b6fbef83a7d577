"""Gemini CLI's tool-output budget before a compression (truncateHistoryToBudget,
google-gemini/gemini-cli@5411f113 packages/core/src/context/chatCompressionService.ts l.137-237):
``HistoryTruncation.truncate`` is ``GeminiCli``'s, on its ``function_response_budget`` and
``truncate_chars`` fields.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from bench.context import MESSAGE_OVERHEAD, Block, Message, TokenCounter, ToolResult, starts_with
from strategies.gemini_cli._common import _with_blocks, _with_content, estimate_tokens
from strategies.gemini_cli.cuts import Cuts
from strategies.gemini_cli.outputs import joined_tokens

if TYPE_CHECKING:
    from bench.context import Session


class HistoryTruncation:
    """``GeminiCli``'s truncation of old tool outputs to the budget (``function_response_budget``)."""

    if TYPE_CHECKING:
        function_response_budget: int | None
        truncate_chars: int

    def truncate(self, history: tuple[Message, ...], call: int, session: Session | None = None
                 ) -> tuple[Message, ...]:
        """truncateHistoryToBudget: newest tool outputs first; once the budget is spent, older ones are cut.

        Same result as walking everything: SRC l.145-227 (once the counter is over the budget every
        older output takes the cut branch) and utils/fileUtils.ts l.704-709 @5411f113 (an output within
        maxChars comes back as it is). See ``truncated`` for how it is computed.
        """
        return self.truncated(history, call, session)[0]

    def truncated(self, history: tuple[Message, ...], call: int, session: Session | None = None,
                  tok: Callable[[Message], int] | None = None) -> tuple[tuple[Message, ...], int, int | None]:
        """``truncate``, how many messages it changed and, given ``tok``, the sum of ``tok`` over the result
        (None without ``tok`` or a budget: nothing is cut).

        With ``session`` the walk is by difference from the previous call's result (``gemini_view``):
        when ``history`` begins with it, only the newest messages are walked until the budget is spent,
        and of the older ones only those holding an output longer than ``truncate_chars`` (kept as a
        list of positions) are cut again; the others would come back as they are. The sum moves by
        the new messages and the changed ones. Outputs are cut by ``Cuts`` (by difference from their
        previous cut) and a cut message's count is handed to the counter so it is not tokenized whole.
        """
        budget, limit = self.function_response_budget, self.truncate_chars
        if budget is None:
            return history, 0, None
        if session is not None:
            estimates, longest, tails = session.state.setdefault("gemini_memo", ({}, {}, {}))
            counter: TokenCounter | None = session.meter.counter
            cuts = session.state.get("gemini_cuts")
            if cuts is None or cuts.max_chars != limit or cuts.counter is not counter:
                cuts = session.state["gemini_cuts"] = Cuts(counter, limit, tails)
            view = session.state.get("gemini_view")
        else:
            estimates, longest, tails, counter, view = {}, {}, {}, None, None
            cuts = Cuts(None, limit, tails)

        def estimate(text: str) -> int:
            hit = estimates.get(id(text))
            if hit is None or hit[0] is not text:
                hit = estimates[id(text)] = (text, estimate_tokens(text))
            return hit[1]

        def big(m: Message) -> bool:
            hit = longest.get(id(m))
            if hit is None or hit[0] is not m:
                hit = longest[id(m)] = (m, max(len(r.content) for r in m.tool_results))
            return hit[1] > limit

        def cut(m: Message, blocks: list[Block], closed: dict[int, tuple[int, str] | None]) -> Message:
            if not closed or blocks == list(m.blocks):
                return m
            new = _with_blocks(m, tuple(blocks))
            if counter is not None and None not in closed.values():
                counted = joined_tokens(counter.text, blocks, closed)  # type: ignore[arg-type]
                if counted is not None:
                    counter.adopt((new,), (counted + MESSAGE_OVERHEAD,))
            return new

        n = len(history)
        key = (budget, limit, tok)
        if view is not None and view[0] == key and starts_with(history, view[1]):
            n0, bigs, total, spent = len(view[1]), list(view[2]), view[3], view[4]
        else:
            n0, bigs, total, spent = 0, [], 0 if tok is not None else None, None
        if total is not None:
            total += sum(map(tok, history[n0:]))  # type: ignore[arg-type]
        bigs.extend(i for i in range(n0, n) if history[i].tool_results and big(history[i]))
        if spent is not None:  # every output fitted last time: do they all still fit?
            spent += sum(cuts.estimate(r.content, estimate) for m in history[n0:] for r in m.tool_results)
            if spent <= budget:  # every running sum is within the budget: nothing is cut
                if session is not None:
                    session.state["gemini_view"] = (key, history, bigs, total, spent)
                return history, 0, total
        out = list(history)
        used, i = 0, n
        while i and used <= budget:  # the newest outputs, until the budget is spent
            i -= 1
            m = history[i]
            if not m.tool_results:
                continue
            blocks = list(m.blocks)
            closed: dict[int, tuple[int, str] | None] = {}
            for j in range(len(blocks) - 1, -1, -1):
                b = blocks[j]
                if not isinstance(b, ToolResult):
                    continue
                tokens = cuts.estimate(b.content, estimate)
                if used + tokens > budget:
                    if len(b.content) <= limit:  # formatTruncatedToolOutput leaves it as it is
                        used += tokens
                        continue
                    text, closed[j] = cuts.cut(b.content, b.tool_use_id, call)
                    blocks[j] = _with_content(b, text)
                    used += cuts.estimate(text, estimate_tokens)
                else:
                    used += tokens
            out[i] = cut(m, blocks, closed)
        kept = [x for x in bigs if x < i]
        text_tokens = counter.text if counter is not None and cuts.counting else None
        for x in kept:  # over the budget: every output longer than the cut is cut again
            m = history[x]
            if len(m.blocks) == 1 and text_tokens is not None:  # its one output (the common case, shorter)
                b = m.blocks[0]
                text, (closed_tokens, end) = cuts.cut(b.content, b.tool_use_id, call)  # type: ignore[misc]
                if text != b.content:
                    new = out[x] = _with_blocks(m, (_with_content(b, text),))
                    counter.adopt((new,), (closed_tokens + text_tokens(end) + MESSAGE_OVERHEAD,))  # type: ignore[union-attr]
                continue
            blocks = list(m.blocks)
            closed = {}
            for j, b in enumerate(blocks):
                if isinstance(b, ToolResult) and len(b.content) > limit:
                    text, closed[j] = cuts.cut(b.content, b.tool_use_id, call)
                    blocks[j] = _with_content(b, text)
            out[x] = cut(m, blocks, closed)
        changed = [x for x in kept if out[x] is not history[x]]
        changed += [x for x in range(i, n) if out[x] is not history[x]]
        if total is not None:
            total += sum(tok(out[x]) - tok(history[x]) for x in changed)  # type: ignore[misc]
        result = tuple(out)
        if session is not None:
            # a cut message is longer than the cut: it stays in the list
            kept += [x for x in range(i, n)
                     if out[x] is not history[x] or (history[x].tool_results and big(history[x]))]
            spent = used if not i and used <= budget and not changed else None
            session.state["gemini_view"] = (key, result, kept, total, spent)
            cuts.keep([b.content for x in kept for b in out[x].blocks if isinstance(b, ToolResult)])
        return result, len(changed), total
