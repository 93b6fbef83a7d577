"""Aider's ChatSummary: earlier exchanges squeezed into a first-person summary under a small budget.

Aider only ever summarizes ``done_messages``; the current turn, the repo map, files and system
prompt are never touched. A turn's messages join ``done_messages`` only when it edited a file:
turns that edited nothing stay in ``cur_messages``, unsummarized, until an editing turn moves
them all. A single-prompt agent run therefore never compacts at all: its one turn grows until it
no longer fits, and Aider has no reactive path (it reports the overflow).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.context import MESSAGE_OVERHEAD, Context, Message, ModelProfile, Outcome, Strategy, event
from strategies._cuts import clean_cuts
from strategies._files import is_read_only
from strategies._tools import is_prompt, new_human_turn, safe_cut, text_assistant, text_user

if TYPE_CHECKING:
    from bench.context import Session

SUMMARY_PREFIX = "I spoke to you previously about a number of things.\n"
"""Aider's prefix of the summary message (aider/prompts.py summary_prefix), verbatim."""
# Aider's summarize prompt, paraphrased in our words (aider/prompts.py summarize).
SUMMARY_PROMPT = (
    "Briefly summarize this partial conversation about programming, with more detail on the most "
    "recent messages. Start a new paragraph when the topic changes. No concluding remarks. Name the "
    "functions, libraries, packages and files discussed. No fenced code blocks. Write as the user, "
    "in the first person, speaking to the assistant: start with \"I asked you...\"."
)


EDIT_NOTICE = "Applied edit to "
"""What ``Coder.apply_updates`` prints per edited file (base_coder.py:2334 @5dc9490b); the
transcript keeps it as aider output."""


def edited(m: Message) -> bool:
    """Evidence that the turn holding ``m`` edited a file: Aider's own "Applied edit to" notice, or
    (a tool-calling trace) a call that does more than look (``_files.is_read_only``)."""
    if m.role == "assistant":
        return any(not is_read_only(u) for u in m.tool_uses)
    return bool(m.meta.get("aider_output")) and EDIT_NOTICE in m.text


def done_end(messages: tuple[Message, ...], start: int, turn: int) -> int:
    """End of ``done_messages`` before the turn opening at ``turn``: the start of the typed turn
    after the latest editing one (``start`` when nothing was edited). Walks back over
    ``cur_messages`` only; the caller keeps call/result pairs whole (``safe_cut``)."""
    for i in range(turn - 1, start - 1, -1):
        if edited(messages[i]):
            return next((j for j in range(i + 1, turn) if is_prompt(messages[j])
                         and not messages[j].meta.get("aider_output")), turn)
    return start


def history_budget(model: ModelProfile) -> int:
    """``max_chat_history_tokens = min(max(max_input_tokens / 16, 1024), 8192)`` (aider/models.py)."""
    max_input = model.max_input or model.context_window
    return int(min(max(max_input / 16, 1024), 8192))


@dataclass(frozen=True, kw_only=True)
class Aider(Strategy):
    """Aider ``ChatSummary.summarize`` over done_messages at the start of each new turn.

    Source: Aider-AI/aider @ 5dc9490bb35f9729ef2c95d00a19ccd30c26339c, ``aider/history.py``,
    ``aider/prompts.py``, ``aider/models.py``, ``aider/coders/base_coder.py`` (spec §7); read line
    by line from the mirror for issue 10.
    When: ``send_message`` moves the turn into done_messages only ``if edited``
    (base_coder.py:1585-1594, ``move_back_cur_messages`` :1036-1046, which starts the background
    ``summarize_start`` :1002-1012 when ``too_big``); ``format_chat_chunks`` joins it and applies the
    result before the next prompt is built (``summarize_end`` :1024-1034, called at :1278).
    Sizes: ``too_big`` / ``tokenize`` (history.py:15-25) count each message dict with
    ``Model.token_count`` (models.py:650-670), i.e. the tokens of its ``json.dumps``: we add the
    JSON framing of an empty message to each message's count (7 tokens over a truth count, whose
    4-token message overhead it replaces; escapes not counted).
    Budget: max input / 16 clamped to [1024, 8192] unless ``max_chat_history_tokens`` is set.
    When done_messages exceed it: ≤ 4 messages or depth > 3 → summarize all; else a tail is
    collected from the end while it stays under budget // 2, the split moves earlier until the
    message before it is an assistant message (and, for tool calls, no call is split from its
    result), the oldest part of the head that fits max input − 512 is summarized (a prefix; the
    rest of an over-long head is dropped), and the result recurses unless summary + tail is under
    the budget. The summary
    is a user message "I spoke to you previously…" followed by an assistant "Ok." when the
    history would not end with an assistant message. Aider runs this in a background thread
    after a turn and applies it when the next prompt is built: here, at the first call of a turn.

    ``generation="2024"`` (``aider:2024``, the pre-April-2025 code): the head is walked reversed
    so its *newest* part that fits is kept, and the recursion test reads the tail size from a
    list already cut to the head, so the tail term is always 0 (only the summary decides).

    Deviations: the split also never separates a tool call from its result (Aider's history has
    no tool calls); an edit in a tool-calling trace is any call that is not read-only; not
    modelled: the "I committed the changes…" / "Ok." pair ``move_back_cur_messages`` appends
    after an edit (the transcript does not show it), a summary thread whose snapshot no longer
    equals done_messages being discarded (:1031), a summary applied at a reflection call inside a
    turn, the 4096 fallback when a model has no max_input_tokens, and Aider's uncapped summary
    length (we ask for at most the budget). Version 3: the cited commit's head prefix and full
    recursion test; the version-2 behaviour is the "2024" generation (history.py @7a56be17, its
    head loop before 188e9e11, 2025-04-10). Version 4: only turns that edited join done_messages
    (both generations: base_coder.py:1206-1213 @7a56be17 has the same rule), and message counts
    include their JSON framing. Version 5: an empty user message (no content, or one empty text)
    opens no turn: Aider sends none (the API refuses one), and a log can hold one between a call and
    its results, where version 4 summarized the call and its results came back without it (found
    by the slow contract suite, ``empty_messages``).
    """

    name = "aider"
    citation = "Aider-AI/aider@5dc9490b aider/history.py ChatSummary"
    version = 5
    summary_overhead = False
    """ChatSummary sends its own short system prompt and the history, no repo map or tools (strategies.md §7)."""
    summary_as_text = True
    """``summarize_all`` renders the user and assistant messages as ``# USER`` / ``# ASSISTANT`` text
    (strategies.md §7): the summary request holds no tool calls."""

    estimator: str = "truth"
    """Aider counts with the model's tokenizer (litellm)."""
    max_chat_history_tokens: int | None = None
    min_split: int = 4
    max_depth: int = 3
    head_reserve: int = 512
    generation: str = "2025"
    """"2025" (the cited commit) or "2024" (pre-April-2025: head suffix, tail term always 0)."""

    def __post_init__(self) -> None:
        if self.generation not in ("2025", "2024"):
            raise ValueError(f"generation must be '2025' or '2024', not {self.generation!r}")

    def budget(self, model: ModelProfile) -> int:
        return self.max_chat_history_tokens or history_budget(model)

    def framing(self, session: Session) -> int:
        """Tokens ``json.dumps`` adds around a message's content (role, keys, quotes), less the
        per-message overhead a truth count already holds; a cached loose string per counter."""
        dumped = session.meter.counter.text(json.dumps({"role": "assistant", "content": ""}))
        return max(0, dumped - MESSAGE_OVERHEAD) if self.estimator == "truth" else dumped

    def size(self, ctx: Context, m: Message, framing: int) -> int:
        return ctx.est(m) + framing

    def before_call(self, ctx: Context, session: Session) -> Outcome | None:
        msgs = ctx.messages
        turn = new_human_turn(msgs, skip_empty=True)  # O(step): -1 unless this call opens a new turn
        start = 1 if ctx.system else 0
        if turn <= start:
            return None  # no finished exchanges, or not the first call of this turn (an empty message opens none)
        end = done_end(msgs, start, turn)  # O(cur_messages)
        if end <= start:
            return None  # nothing edited yet: every exchange is still in cur_messages
        done = msgs[start:end]
        budget = self.budget(session.model)
        framing = self.framing(session)
        # the running total minus what is not done_messages: O(cur_messages), not a rescan
        if ctx.estimate - sum(ctx.est(m) for m in (*msgs[:start], *msgs[end:])) + framing * len(done) <= budget:
            return None
        end = safe_cut(msgs, end)  # a log's pair split around the boundary stays whole (O(history), once)
        done = msgs[start:end]
        spent: list[int] = []
        new_done = self._summarize(ctx, done, session, budget, 0, spent)
        if new_done and new_done[-1].role != "assistant":
            new_done = (*new_done, text_assistant("Ok.", synthetic=True))
        after = ctx.replace((*msgs[:start], *new_done, *msgs[end:]))
        return Outcome(after, (event("summarize", ctx, after, touched=len(done), summary_tokens=sum(spent),
                                     detail=f"done_messages over {budget} tokens: {len(spent)} summary call(s)"),))

    def _summarize_all(self, messages: tuple[Message, ...], session: Session, budget: int,
                       spent: list[int]) -> tuple[Message, ...]:
        talk = tuple(m for m in messages if m.role in ("user", "assistant"))
        summary = session.summarize(talk, prompt=SUMMARY_PROMPT, max_tokens=budget)
        spent.append(summary.output_tokens)
        return (text_user(SUMMARY_PREFIX + summary.text, summary=True),)

    def _summarize(self, ctx: Context, messages: tuple[Message, ...], session: Session, budget: int,
                   depth: int, spent: list[int]) -> tuple[Message, ...]:
        framing = self.framing(session)
        sizes = [self.size(ctx, m, framing) for m in messages]
        if sum(sizes) <= budget and depth == 0:
            return messages
        if len(messages) <= self.min_split or depth > self.max_depth:
            return self._summarize_all(messages, session, budget, spent)
        split, tail_tokens = len(messages), 0
        for i in range(len(messages) - 1, -1, -1):
            if tail_tokens + sizes[i] >= budget // 2:
                break
            tail_tokens += sizes[i]
            split = i
        clean = clean_cuts(messages) if split > 1 else []  # safe_cut(messages, i) == i, for every i at once
        while split > 1 and not (messages[split - 1].role == "assistant" and clean[split]):
            split -= 1
        if split <= self.min_split:
            return self._summarize_all(messages, session, budget, spent)
        limit = (session.model.max_input or session.model.context_window) - self.head_reserve
        old = self.generation == "2024"
        pairs = zip(messages[:split], sizes[:split], strict=True)
        if old:  # the 2024 code reverses the head and keeps its *newest* messages that fit
            pairs = zip(reversed(messages[:split]), reversed(sizes[:split]), strict=True)
        head, total = [], 0
        for m, size in pairs:
            total += size
            if total > limit:
                break
            head.append(m)
        if old:
            head.reverse()
        result = (*self._summarize_all(tuple(head), session, budget, spent), *messages[split:])
        # 2024: the tail size was read from a list already cut to the head (always 0)
        tail = 0 if old else sum(sizes[split:])
        if self.size(ctx, result[0], framing) + tail < budget:
            return result
        return self._summarize(ctx, result, session, budget, depth + 1, spent)
