"""Every clean cut point of a history at once: the indices ``safe_cut`` leaves where they are.

Split from ``_tools`` (its ``safe_cut`` is the definition): a search that asks ``safe_cut`` at each
index walks the history once per index; this answers all of them in one walk.
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.context import Message


def clean_cuts(messages: Sequence[Message]) -> list[bool]:
    """For each index 0 … len(messages): is ``safe_cut(messages, index) == index``? All at once.

    A cut is moved by ``safe_cut`` exactly when a message at or after it answers a call left open
    before it (the calls before minus the results before, in message order). Walking forward, only
    the ids a message names change either side, so the count of open calls answered later is kept
    by difference: O(blocks) for every index, where asking ``safe_cut`` at each is O(index) each (a
    walk back over a long tool chain, as Aider's split search does, was quadratic)."""
    later: dict[str, int] = {}  # results at or after the current index, by id
    for m in messages:
        for r in m.tool_results:
            later[r.tool_use_id] = later.get(r.tool_use_id, 0) + 1
    open_calls: set[str] = set()
    pending = 0  # open calls that a message at or after the index answers
    out = [True]
    for m in messages:
        uses, results = m.tool_uses, m.tool_results
        touched = {b.id for b in uses} | {r.tool_use_id for r in results}
        pending -= sum(1 for i in touched if i in open_calls and later.get(i, 0) > 0)
        for r in results:
            later[r.tool_use_id] -= 1
        open_calls.update(b.id for b in uses)
        open_calls.difference_update(r.tool_use_id for r in results)
        pending += sum(1 for i in touched if i in open_calls and later.get(i, 0) > 0)
        out.append(pending == 0)
    return out
