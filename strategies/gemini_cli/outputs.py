"""A tool output cut to head and tail with a pointer to the saved file (fileUtils.ts
formatTruncatedToolOutput @5411f113), and the count of a message holding cut outputs from counts of
its parts (``cut_tokens``), which ``cuts`` and ``truncation`` build on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bench.context import Block, Text, TokenCounter, ToolResult, safe_split


def truncated_output(content: str, where: str, max_chars: int) -> str:
    """fileUtils.ts formatTruncatedToolOutput: first 20% and last 80% of ``max_chars``, with a pointer
    to the saved file (unchanged when it already fits)."""
    return "".join(truncated_parts(content, where, max_chars))


def truncated_parts(content: str, where: str, max_chars: int) -> tuple[str, ...]:
    """``truncated_output`` as (pointer line, "\\n" + head + omission note, tail): it is the same text
    joined, and each part can be counted alone (``cut_tokens``)."""
    if len(content) <= max_chars:
        return (content,)
    head_n = max_chars // 5
    tail_n = max_chars - head_n
    return (pointer_lead(head_n, tail_n) + where, f"\n{content[:head_n]}{omission(len(content) - max_chars)}",
            content[-tail_n:])


def pointer_lead(head_n: int, tail_n: int) -> str:
    """The pointer line of a cut output up to the saved file's path."""
    return f"Output too large. Showing first {head_n:,} and last {tail_n:,} characters. For full output see: "


def omission(omitted: int) -> str:
    """What stands between a cut output's head and its tail."""
    return f"\n\n... [{omitted:,} characters omitted] ...\n\n"


def cut_tokens(counter: TokenCounter, blocks: list[Block], cuts: dict[int, tuple[str, ...]],
               tails: dict[str, tuple[str, int, str | None]]) -> int | None:
    """The token count of a message's rendered text (its blocks joined by newlines), whose blocks at
    ``cuts`` are cut outputs given as ``truncated_parts``, from counts of its lines; None when the
    counter's tokenizer is not one ``safe_split`` holds for or a block is not text or a tool result.
    ``tails``: tail text → (its first line, the count of the lines between, its last line), kept by
    the caller across calls.

    Why: in the failed state every call cuts every old output anew (its pointer names the call), and
    the texts differ only in that line and a few others; counted whole, each call re-tokenized them
    all (quadratic). Counted by parts, the lines already seen are dictionary hits (the same count).
    Cut at: the start of a pointer (after the joining newline), its end ("….txt" then a newline),
    the middle's and the tail's own safe places; the middle's closing newlines and the tail's first
    line stay one part, and so do a block's last line and the next block's start (the join).
    """
    if not splits(counter):
        return None
    text = counter.text
    closed: dict[int, tuple[int, str]] = {}
    for j, parts in cuts.items():
        if len(parts) != 3:
            continue
        pointer, middle, tail = parts
        first, inner, last = tail_lines(tail, tails, text)
        segments = safe_split(middle)
        segments[-1] += first  # the middle ends with newlines: no safe place before the tail's first one
        if last is None:
            closed[j] = text(pointer) + sum(map(text, segments[:-1])), segments[-1]
        else:
            closed[j] = text(pointer) + sum(map(text, segments)) + inner, last
    return joined_tokens(text, blocks, closed)


def splits(counter: TokenCounter | None) -> bool:
    """Whether ``safe_split`` holds for this counter's tokenizer (``TokenCounter.splits``)."""
    return counter is not None and counter.splits


def tail_lines(tail: str, tails: dict[str, tuple[str, int, str | None]], text: Callable[[str], int]
               ) -> tuple[str, int, str | None]:
    """A cut output's tail as (its first safe part, the count of the parts between, its last part or
    None when it has one part); a re-cut keeps the same tail, so it is split and counted once."""
    hit = tails.get(tail)
    if hit is None:
        first, *inner = safe_split(tail)
        last = inner.pop() if inner else None
        hit = tails[tail] = (first, sum(map(text, inner)), last)
    return hit


def joined_tokens(text: Callable[[str], int], blocks: Sequence[Block], closed: dict[int, tuple[int, str]]
                  ) -> int | None:
    """The count of ``blocks`` joined by newlines, the cut ones given by ``closed`` as (the count of
    their parts up to their last one, that last part): a cut output begins with its pointer, a safe
    place, and its last part runs on into the join and the next block. None for a block that is not
    text or a tool result."""
    total, open_ = 0, ""
    for j, b in enumerate(blocks):
        sep = "\n" if j else ""
        hit = closed.get(j)
        if hit is None:
            if isinstance(b, Text):
                open_ += sep + b.text
            elif isinstance(b, ToolResult):
                open_ += sep + b.content
            else:
                return None
            continue
        if open_ or sep:
            total += text(open_ + sep)
        total += hit[0]
        open_ = hit[1]
    return total + text(open_) if open_ else total
