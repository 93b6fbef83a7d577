"""``Cuts``: the Gemini CLI's cut of a tool output (``outputs.truncated_output``), made and counted by
difference from the previous cut of the same output, as every call of the failed state cuts anew.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from bench.context import TokenCounter, safe_split
from strategies.gemini_cli._common import estimate_tokens
from strategies.gemini_cli.outputs import omission, pointer_lead, splits, tail_lines, truncated_output


class _Cut:
    """A tool output as this strategy cut it, with what cutting it again needs (``Cuts.cut``)."""

    __slots__ = ("text", "pointer", "pointer_tokens", "mark", "start", "start_count", "places", "tail", "first",
                 "inner", "last", "omitted", "note_tokens", "estimate", "owner", "name_tokens", "omission", "end")

    def __init__(self, text: str, pointer: str, pointer_tokens: int, mark: tuple[str, str] | None, start: int,
                 start_count: int, places: deque[tuple[int, int, tuple[str, str] | None]], tail: str,
                 lines: tuple[str, int, str | None], omitted: int, note_tokens: int, owner: str, name_tokens: int,
                 omission: str, end: str) -> None:
        self.text, self.pointer, self.pointer_tokens, self.mark = text, pointer, pointer_tokens, mark
        self.start, self.start_count, self.places = start, start_count, places
        self.tail, (self.first, self.inner, self.last) = tail, lines
        self.omitted, self.note_tokens = omitted, note_tokens
        self.owner, self.name_tokens = owner, name_tokens
        """The tool call id the pointer names, and the count of its part of the pointer ("_{id}.txt")."""
        self.omission, self.end = omission, end
        """``omission(omitted)``, and the last part ``cut`` returned: the same objects again when the
        next cut omits as many characters (not formatted, joined nor hashed anew)."""
        self.estimate: int | None = None


class Cuts:
    """Cuts tool outputs (``truncated_output``) and counts each cut by parts, by difference from the
    previous cut of the same output.

    Why: in the failed state every call cuts every old output anew, and what it cuts is the cut of
    the call before: the new head is the old pointer line, a newline and the old head less its last
    characters; the tail and the note stay. So the head's safe places (``safe_split``) are kept as
    a deque of (position, count of the head up to there, the pointer that starts there) in
    coordinates that do not move when a pointer is put in front: two places are pushed on the left
    (the old pointer's start and end), those past the new head's end are popped on the right, and
    the count is the pointer's, the head's up to its last safe place, the few characters after it,
    the note's and the tail's (split once).

    A pointer ``…/compression_{call}_{id}.txt`` is counted as three texts: up to "compression",
    "_{call}" and "_{id}.txt", so the call's number is tokenized once per call, not once per output.
    No cl100k / o200k pre-token spans either place (letters never take the "_" after them, digits
    neither; a piece that begins at "_" depends only on what follows it); tests/strategies/
    test_gemini_cli_recut.py checks it for every length of every start of a pointer.

    What stays between two cuts of an output is taken from its record: the id's part of the pointer
    and its count, and, when as many characters are omitted, the note and the last part (for a tail
    of one part, the note and the whole tail: joined and hashed anew at every call, that was 32K
    characters a cut). The call's part is made and counted once per call.
    """

    def __init__(self, counter: TokenCounter | None, max_chars: int,
                 tails: dict[str, tuple[str, int, str | None]]) -> None:
        self.counter, self.max_chars = counter, max_chars
        self.head_n = max_chars // 5
        self.tail_n = max_chars - self.head_n
        self.lead = pointer_lead(self.head_n, self.tail_n)
        self.counting = splits(counter) and self.tail_n > 0
        self.text: Callable[[str], int] = counter.text if self.counting else len  # type: ignore[union-attr]
        self.tails = tails
        self.by_id: dict[int, _Cut] = {}
        self.prefix = self.lead + "tool-outputs/compression"
        self.prefix_tokens = self.text(self.prefix) if self.counting else 0
        self.newline = self.text("\n") if self.counting else 0
        self.number: tuple[int, str, int] = (-1, "", 0)
        """This call's part of a pointer: (call, "_{call}", its count), made once per call."""

    def record(self, content: str) -> _Cut | None:
        """The record of ``content`` if this is a cut we made (and still hold)."""
        rec = self.by_id.get(id(content))
        return rec if rec is not None and rec.text is content else None

    def estimate(self, content: str, estimates: Callable[[str], int]) -> int:
        """``estimate_tokens`` of an output: a cut of ours keeps it in its record, others in ``estimates``
        (a remembered cut would hold every call's 40K characters)."""
        rec = self.record(content)
        if rec is None:
            return estimates(content)
        if rec.estimate is None:
            rec.estimate = estimate_tokens(content)
        return rec.estimate

    def cut(self, content: str, tool_use_id: str, call: int) -> tuple[str, tuple[int, str] | None]:
        """``truncated_output`` of an output longer than ``max_chars`` for this call, and the count of
        its parts as ``joined_tokens`` takes it (None when not counting)."""
        if not self.counting:
            return truncated_output(content, f"tool-outputs/compression_{call}_{tool_use_id}.txt", self.max_chars), None
        text, head_n = self.text, self.head_n
        rec = self.by_id.pop(id(content), None)
        if rec is not None and rec.text is not content:
            rec = None
        if type(call) is int and call >= 0:
            number = self.number
            if number[0] != call:
                part = f"_{call}"
                number = self.number = (call, part, text(part))
            if rec is not None and rec.mark is not None and rec.owner == tool_use_id:
                name, name_tokens = rec.mark[1], rec.name_tokens
            else:
                name = f"_{tool_use_id}.txt"
                name_tokens = text(name)
            mark: tuple[str, str] | None = (number[1], name)
            pointer = self.prefix + number[1] + name
            pointer_tokens = self.prefix_tokens + number[2] + name_tokens
        else:
            mark, name_tokens = None, 0
            pointer = f"{self.lead}tool-outputs/compression_{call}_{tool_use_id}.txt"
            pointer_tokens = text(pointer)
        omitted = len(content) - self.max_chars
        if rec is not None and len(rec.pointer) + 1 < head_n:
            # the new head: this output's old pointer, a newline, the old head less as many characters
            start = rec.start - 1 - len(rec.pointer)
            start_count = rec.start_count - self.newline - rec.pointer_tokens
            places = rec.places
            places.appendleft((rec.start, rec.start_count, None))  # the old pointer's end ("….txt", newline)
            places.appendleft((start + 1, start_count + self.newline, rec.mark))  # its start (newline, "O")
            while places[-1][0] - start > head_n:  # a place must have its both neighbours in the head
                places.pop()
            tail, lines = rec.tail, (rec.first, rec.inner, rec.last)
            if rec.omitted != omitted:
                rec = None  # the note, and what follows it, are made anew
        else:
            start = start_count = 0
            places = deque()
            pos = count = 0
            for part in safe_split("\n" + content[:head_n])[:-1]:
                pos += len(part)
                count += text(part)
                places.append((pos, count, None))
            tail = content[-self.tail_n:]
            lines = tail_lines(tail, self.tails, text)
            rec = None
        head = content[:head_n]
        note = rec.omission if rec is not None else omission(omitted)
        cut = "".join((pointer, "\n", head, note, tail))
        if places:
            pos, count, at = places[-1]
            s, closed = pos - start, count - start_count
        else:
            s, closed, at = 0, 0, None
        rest = head_n + 1 - s  # the head's characters after its last safe place (a newline in front)
        closed += pointer_tokens + (self.pointer_start(at, rest) if at is not None else
                                    text((head[s - 1:] if s else "\n" + head) + "\n\n"))
        first, inner, last = lines
        if rec is not None:  # as many characters omitted as last time: the same note and end
            note_tokens, end = rec.note_tokens, rec.end
        elif last is None:
            note_tokens, end = 0, note[2:] + tail
        else:
            note_tokens, end = text(note[2:] + first), last
        if last is not None:
            closed += note_tokens + inner
        self.by_id[id(cut)] = _Cut(cut, pointer, pointer_tokens, mark, start, start_count, places, tail, lines,
                                   omitted, note_tokens, tool_use_id, name_tokens, note, end)
        return cut, (closed, end)

    def pointer_start(self, mark: tuple[str, str], n: int) -> int:
        """The count of a pointer's first ``n`` characters then the note's "\\n\\n" (a head that ends
        inside an old pointer line), by the pointer's three parts."""
        prefix = self.prefix
        if n <= len(prefix):
            return self.text(prefix[:n] + "\n\n")
        number, name = mark
        n -= len(prefix)
        if n <= len(number):
            return self.prefix_tokens + self.text(number[:n] + "\n\n")
        return self.prefix_tokens + self.text(number) + self.text(name[:n - len(number)] + "\n\n")

    def keep(self, texts: Sequence[str]) -> None:
        """Forget every record but those of ``texts`` (the cut outputs the history now holds)."""
        by_id = self.by_id
        self.by_id = {id(t): by_id[id(t)] for t in texts if id(t) in by_id and by_id[id(t)].text is t}
