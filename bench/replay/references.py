"""A re-read proxy: what the recorded agent went on to use that a strategy had taken out of view.

A replay cannot show the extra work a live agent does after losing something (the replay
limitation), but it can count where that work would have been needed. At each call, every tool
call of the recorded answer names what it relied on: the file it reads or edits (a path input)
and, for an edit, the text it replaces (the edit must quote the file as it is). When such a
reference was in the session before the call, the real agent had seen it; when the context the
strategy sent no longer holds it, the agent would have had to look it up again (re-read the
file, re-run the search) before it could make that call. `none` sends everything, so it scores 0.

Exact substrings of the rendered messages, like needle retention: an upper bound on what the
agent could use, and a lower bound on the re-reads a live agent would need.

Linear in the session: where each reference occurs in the recorded history is searched once per
trace (``RecordedIndex``, shared by every strategy replayed over it) and only over the messages
added since the last search for it; what a strategy wrote itself and sends is indexed by word the
same way, so a check searches only the texts holding its reference's rarest word; the view is moved
in place by what changed since the last check.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Mapping, Sequence, Sized
from dataclasses import dataclass, field
from itertools import compress
from operator import is_not
from typing import ClassVar, TypeVar

from bench.tokens.counter import render
from bench.tokens.prefix import first_difference
from traces.model import Message, ToolUse, Trace

_P = TypeVar("_P", bound=Sized)

PATH_KEYS = ("file_path", "path", "filePath", "filename", "file", "target_file", "notebook_path")
EDIT_KEYS = ("old_string", "old_str", "old_text", "oldString")
"""Edit inputs that quote the text being replaced (Claude Code, OpenHands, ours, OpenCode)."""
MIN_QUOTE = 16
"""A quoted line shorter than this (a brace, `return x`) proves nothing about what was seen."""
_WORD = re.compile(r"[A-Za-z0-9_]{6,}")
"""Runs of word characters indexed per message: long enough to be selective, cheap to find."""
_RUN = re.compile(r"[A-Za-z0-9_]+")
INDEXED_MAX = 4_096
"""Texts a strategy wrote are indexed by word up to this many characters (placeholders, pointers,
summaries): a check then searches only those holding its reference's rarest word. A longer one is
searched whole at each check instead: a strategy that writes long texts anew at every call
(gemini-cli re-cuts every 40K-character output) spent 16 s on indexing them in a 3M replay."""


def references(use: ToolUse) -> tuple[str, ...]:
    """What a tool call relies on having seen: its path input and the longest line it quotes to edit."""
    refs = [v for k in PATH_KEYS if isinstance(v := use.input.get(k), str) and v.strip()][:1]
    for key in EDIT_KEYS:
        value = use.input.get(key)
        if isinstance(value, str):
            line = max((x.strip() for x in value.splitlines()), key=len, default="")
            if len(line) >= MIN_QUOTE:
                refs.append(line)
    return tuple(refs)


def _inner_words(ref: str) -> tuple[str, ...]:
    """The distinct runs of word characters inside ``ref`` long enough to be indexed, with a non-word
    character on each side (the runs at its ends may be part of longer ones in a text holding it)."""
    end = len(ref)
    return tuple(dict.fromkeys(m.group() for m in _RUN.finditer(ref)
                               if m.start() and m.end() != end and _WORD.fullmatch(m.group())))


def _rarest(words: Sequence[str], posts: Mapping[str, _P], empty: _P) -> _P | None:
    """The shortest posting of ``words`` (a reference's ``_inner_words``: every text containing the
    reference holds them as whole words); None when there are none. An empty posting ends the search:
    no text holds the reference."""
    best: _P | None = None
    for word in words:
        found = posts.get(word, empty)
        if best is None or len(found) < len(best):
            best = found
            if not found:
                break
    return best


class RecordedIndex:
    """Where each reference occurs in one recorded session: shared by every replay of the trace.

    The recorded history only grows and is the same for every strategy, so each reference's
    search resumes where it stopped (``_found``: messages searched so far, positions holding it)
    and each message is rendered once.
    """

    _SHARED: ClassVar[OrderedDict[int, tuple[Trace, RecordedIndex]]] = OrderedDict()
    _KEEP: ClassVar[int] = 4
    """Traces whose index is kept (a run replays all strategies of one trace before the next)."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.texts: list[str] = []
        self._words: dict[str, list[int]] = {}
        """Word → positions of the messages holding it as a whole word (an inverted index)."""
        self._found: dict[str, tuple[int, list[int]]] = {}
        self._refs: dict[int, tuple[Message, list[tuple[str, ...]]]] = {}
        self._inner: dict[str, tuple[str, ...]] = {}
        """Reference → its ``_inner_words``, found once per trace: a re-read checks a whole file's
        content at every call that edits it, in every strategy's replay, and finding its words again
        at each check was a sixth of a bench run's CPU. Held as long as the index (the trace's)."""

    def words(self, ref: str) -> tuple[str, ...]:
        """``_inner_words(ref)``, once per reference."""
        hit = self._inner.get(ref)
        if hit is None:
            hit = self._inner[ref] = _inner_words(ref)
        return hit

    @classmethod
    def of(cls, trace: Trace) -> RecordedIndex:
        """The index of ``trace``, shared with the other replays of the same trace object."""
        hit = cls._SHARED.get(id(trace))
        if hit is not None and hit[0] is trace:
            cls._SHARED.move_to_end(id(trace))
            return hit[1]
        index = cls()
        cls._SHARED[id(trace)] = (trace, index)
        while len(cls._SHARED) > cls._KEEP:
            cls._SHARED.popitem(last=False)
        return index

    def follows(self, history: Sequence[Message]) -> bool:
        """Is ``history`` a prefix of what this index holds, or an extension of it? (Add the rest.)"""
        n = min(len(history), len(self.messages))
        if n and history[n - 1] is not self.messages[n - 1]:
            return False
        words = self._words
        for m in history[len(self.messages):]:
            i = len(self.messages)
            text = render(m)
            self.messages.append(m)
            self.texts.append(text)
            for w in set(_WORD.findall(text)):
                hit = words.get(w)
                if hit is None:
                    words[w] = [i]
                else:
                    hit.append(i)
        return True

    def _candidates(self, ref: str, start: int, upto: int) -> Sequence[int]:
        """Positions in [start, upto) that may hold ``ref``: those holding its rarest whole word.

        A run of word characters of ``ref`` with a non-word character on each side inside
        ``ref`` is a whole run of any text that contains ``ref`` (the runs at its ends may be part
        of longer ones there), so the index finds every such text when the run is long enough to
        be indexed. Without such a run, every position is a candidate.
        """
        best = _rarest(self.words(ref), self._words, [])
        if best is None:
            return range(start, upto)
        return best[bisect_left(best, start):bisect_left(best, upto)]

    def carriers(self, ref: str, upto: int) -> tuple[list[int], int]:
        """The positions of the recorded messages that hold ``ref``, oldest first, and how many of
        them lie before ``upto`` (the list is shared: another replay may have searched further)."""
        searched, found = self._found.get(ref, (0, []))
        if searched < upto:
            texts = self.texts
            found.extend(i for i in self._candidates(ref, searched, upto) if ref in texts[i])
            self._found[ref] = (upto, found)
        return found, len(found) if not found or found[-1] < upto else bisect_left(found, upto)

    def references(self, answer: Message) -> list[tuple[str, ...]]:
        """The non-empty ``references`` of each tool call of ``answer``, computed once per message."""
        hit = self._refs.get(id(answer))
        if hit is None or hit[0] is not answer:
            hit = (answer, [refs for use in answer.tool_uses if (refs := references(use))])
            self._refs[id(answer)] = hit
        return hit[1]


@dataclass
class _Carriers:
    """What one reference's last check found: the messages known to hold it, and one in view."""

    objs: list[Message] = field(default_factory=list)
    """Recorded carriers (``found`` order) and the strategy's own messages found to hold it."""
    ids: dict[int, Message] = field(default_factory=dict)
    """``objs`` by id."""
    n_found: int = 0
    witness: Message | None = None
    """A carrier that was in view at the last check (None: none was)."""
    entered: int = 0
    """How much of ``ReferenceCheck._entered`` the last check had seen, in ``epoch``."""
    written: int = 0
    """How much of ``ReferenceCheck._entered_written`` the last check had seen, in ``epoch``."""
    epoch: int = -1


class ReferenceCheck:
    """Counts, per call, the recorded tool calls that relied on something seen but no longer sent.

    One per replay. Most of what a strategy sends is the recorded messages themselves (the same
    objects), so a reference counts as in view when one of the recorded messages holding it was
    sent, checked by identity. Only the messages a strategy wrote itself (summaries, placeholders,
    rewritten outputs) are searched as text, and only those in view when the reference is checked.

    Incremental: the view moves by what changed between calls, and each reference remembers a
    carrier it saw in view (still there: nothing to look at) or that none was (then only new
    carriers and the messages that entered the view since can change that); every written message
    in view at a check has been searched for it, once. All its carriers are looked through only
    when its witness left the view.
    """

    LOG_SLACK = 256
    """The log of what entered the view is cut past twice the view and this much."""

    def __init__(self, index: RecordedIndex | None = None) -> None:
        self._index = index or RecordedIndex()
        self._recorded: set[int] = set()
        self._seen = 0
        self._written: dict[int, tuple[Message, str]] = {}
        """id → a message the strategy wrote that is in the view (held) and its text."""
        self._by_text: dict[str, dict[int, Message]] = {}
        """The same messages by text: a placeholder repeated across the view is searched once."""
        self._view: list[Message] = []
        """What was sent at the last check (value-equal to it, these objects held), moved in place."""
        self._sent: tuple[Message, ...] = ()
        """The last request itself: the next one is compared with it, from where they are known to part."""
        self._in_view: dict[int, int] = {}
        """id → how many times ``_view`` holds that object: updated by the difference, not rebuilt."""
        self._entered: list[int] = []
        """The ids of the messages that came into the view, in order, since ``_epoch`` began: ids, not
        the messages, so a message that left the view is not kept alive by the log (a strategy that
        re-cuts its outputs every call, gemini-cli, had hundreds of dead 40K-character cuts held). A
        later message that takes a logged id is only looked at again: a check verifies what it finds
        against what is in view now."""
        self._entered_written: list[int] = []
        """Those of them the strategy wrote: the only ones a check searches as text."""
        self._epoch = 0
        self._carriers: dict[str, _Carriers] = {}
        self._text_words: dict[str, set[str]] = {}
        """Word → the texts of ``_by_text`` holding it as a whole word: a check searches only the
        written texts that hold the rarest word of its reference, and the long ones."""
        self._long_texts: set[str] = set()
        """The texts of ``_by_text`` over ``INDEXED_MAX`` characters, not indexed: searched whole."""

    def _update_view(self, sent: tuple[Message, ...]) -> list[Message]:
        """Move ``_view`` to ``sent`` by what changed since the last check; returns what came in."""
        view, counts = self._view, self._in_view
        # ``_view`` is value-equal to the last request (``_sent``), so where the two requests part is
        # where the view and this one do: known from the requests' derivation at once
        k = first_difference(self._sent, sent)
        both = min(len(view), len(sent))
        # past k only the positions holding another object move (a view that rewrites a few old
        # positions, or re-cuts them, leaves the rest where it was): found at C speed
        moved = list(compress(range(k, both), map(is_not, view[k:both], sent[k:both])))
        for m in (*(view[p] for p in moved), *view[both:]):
            n = counts[id(m)] - 1
            if n:
                counts[id(m)] = n
            else:
                del counts[id(m)]
                gone = self._written.pop(id(m), None)  # searched only while in view: not kept once gone
                if gone is not None:
                    group = self._by_text[gone[1]]
                    del group[id(m)]
                    if not group:
                        self._drop_text(gone[1])
        came = [*(sent[p] for p in moved), *sent[both:]]
        for m in came:
            counts[id(m)] = counts.get(id(m), 0) + 1
        # moved in place: before k the view keeps its own objects (value-equal to sent's)
        for p in moved:
            view[p] = sent[p]
        view[both:] = sent[both:]
        self._sent = sent
        if len(self._entered) + len(came) > 2 * len(sent) + self.LOG_SLACK:  # bounded: older checks look again
            self._entered, self._entered_written, self._epoch = [], [], self._epoch + 1
        self._entered.extend(map(id, came))
        return came

    def _hold_text(self, text: str) -> dict[int, Message]:
        """A new text in ``_by_text`` (its group, empty), indexed by word unless it is long."""
        group = self._by_text[text] = {}
        if len(text) > INDEXED_MAX:
            self._long_texts.add(text)
        else:
            for w in set(_WORD.findall(text)):
                self._text_words.setdefault(w, set()).add(text)
        return group

    def _drop_text(self, text: str) -> None:
        """``_hold_text`` undone: the last message with this text left the view."""
        del self._by_text[text]
        if len(text) > INDEXED_MAX:
            self._long_texts.discard(text)
            return
        for w in set(_WORD.findall(text)):
            texts = self._text_words[w]
            texts.discard(text)
            if not texts:
                del self._text_words[w]

    def _lost(self, ref: str, history: Sequence[Message], upto: int) -> bool:
        """Did ``history[:upto]`` hold ``ref`` while no message of the view holds it?"""
        found, n = self._index.carriers(ref, upto)
        if not n:
            return False
        st = self._carriers.get(ref)
        if st is None:
            st = self._carriers[ref] = _Carriers()
        in_view, written = self._in_view, self._written
        new = [history[i] for i in found[st.n_found:n]]
        st.n_found = n
        full = st.epoch != self._epoch  # first check, or the log of what entered was cut
        texts = _rarest(self._index.words(ref), self._text_words, ())
        if full or texts is not None:  # every written message held is in view (each leaves
            ids, by_text = st.ids, self._by_text  # ``_written`` with the view): those holding ref
            for text in (by_text if texts is None else (*texts, *self._long_texts)):
                if ref in text:
                    new += [m for i, m in by_text[text].items() if i not in ids]
        else:  # written, came into view since the last check, not yet searched
            for i in self._entered_written[st.written:]:
                hit = written.get(i)
                if hit is not None and i in in_view and i not in st.ids and ref in hit[1]:
                    new.append(hit[0])
        st.objs += new
        st.ids.update((id(m), m) for m in new)
        if st.witness is not None and id(st.witness) in in_view:
            pass
        elif st.witness is not None or full:  # look through them all, newest first
            st.witness = next((m for m in reversed(st.objs) if id(m) in in_view), None)
        elif len(self._entered) - st.entered < len(st.objs):  # none was: only a new carrier, or one
            ids = st.ids                                        # that came into the view since, can be
            st.witness = next((m for m in new if id(m) in in_view), None) or next(
                (ids[i] for i in self._entered[st.entered:] if i in ids and i in in_view), None)
        else:  # fewer carriers than messages came in since: look through the carriers instead
            st.witness = next((m for m in reversed(st.objs) if id(m) in in_view), None)
        st.entered, st.written, st.epoch = len(self._entered), len(self._entered_written), self._epoch
        return st.witness is None

    def _follow(self, history: Sequence[Message]) -> None:
        """Index what ``history`` (the recorded session so far, append-only) added since the last check."""
        if not self._index.follows(history):
            self._index = RecordedIndex()  # not the shared trace's history: search privately
            self._index.follows(history)
        self._recorded.update(map(id, history[self._seen:]))
        self._seen = len(history)

    def _look(self, sent: Sequence[Message]) -> None:
        """Move the view to ``sent``; what the strategy wrote that came into it is held as text."""
        recorded, written = self._recorded, self._written
        for m in self._update_view(tuple(sent)):
            if id(m) not in recorded and id(m) not in written:
                text = render(m)
                written[id(m)] = (m, text)
                group = self._by_text.get(text)
                if group is None:
                    group = self._hold_text(text)
                group[id(m)] = m
                self._entered_written.append(id(m))

    def unseen(self, history: Sequence[Message], sent: Sequence[Message], answer: Message) -> int:
        """Tool calls of ``answer`` with a reference that ``history`` (the recorded session so far,
        append-only) holds and ``sent`` (the context as sent) does not."""
        self._follow(history)
        uses = self._index.references(answer)
        if not uses:
            return 0
        self._look(sent)
        upto = len(history)
        return sum(1 for refs in uses if any(self._lost(ref, history, upto) for ref in refs))

    def holds(self, text: str, history: Sequence[Message], sent: Sequence[Message],
              carriers: Sequence[Message] = ()) -> bool:
        """Does ``sent`` still hold ``text``, which ``history`` showed? At once when one of ``carriers``
        (messages known to hold it) is sent; else as ``unseen`` looks: a recorded message holding it
        sent, or a message the strategy wrote (or a re-read inserted) holding it as text
        (bench/replay/rereads.py)."""
        self._follow(history)
        self._look(sent)
        in_view = self._in_view
        if any(id(m) in in_view for m in carriers):
            return True
        return not self._lost(text, history, len(history))
