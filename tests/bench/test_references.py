"""The re-read proxy: recorded tool calls that relied on something the strategy had dropped."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pandas as pd

import strategies
from bench.context.strategy import Outcome, Strategy, event
from bench.cost.pricing import profile
from bench.replay import references as references_module
from bench.replay.loop import ReplayConfig, replay
from bench.replay.references import RecordedIndex, ReferenceCheck, references
from bench.scoring.metrics import results_table
from bench.tokens import prefix
from bench.tokens.counter import TokenCounter, render
from bench.tokens.prefix import derived
from strategies.opencode import PRUNED
from traces.model import Message, Text, ToolResult, ToolUse, Trace

SRC = "def parse_config(path, *, strict=True):\n    return load(path)\n"


def test_references_are_the_path_and_the_longest_quoted_line():
    edit = ToolUse("e", "Edit", {"file_path": "/r/app.py", "old_string": "x = 1\ndef parse_config(path):\n",
                                 "new_string": "..."})
    assert references(edit) == ("/r/app.py", "def parse_config(path):")
    assert references(ToolUse("b", "bash", {"command": "ls"})) == ()
    assert references(ToolUse("e", "edit", {"path": "a.py", "old_str": "}\n"})) == ("a.py",)  # too short to count


def trace() -> Trace:
    """Read app.py (its text appears in the output), work on, then edit it quoting that text."""
    msgs = [Message.text_message("system", "agent"), Message.text_message("user", "fix the config parser"),
            Message("assistant", (ToolUse("r1", "read_file", {"path": "/r/app.py"}),)),
            Message("user", (ToolResult("r1", SRC),)),
            Message("assistant", (ToolUse("b1", "bash", {"command": "pytest -q"}),)),
            Message("user", (ToolResult("b1", "1 failed"),)),
            Message("assistant", (Text("Fixing it."), ToolUse("e1", "edit_file", {
                "path": "/r/app.py", "old_text": "def parse_config(path, *, strict=True):", "new_text": "..."}))),
            Message("user", (ToolResult("e1", "ok"),)),
            Message("assistant", (ToolUse("w1", "write", {"path": "/r/new_module.py", "content": "x"}),)),
            Message("user", (ToolResult("w1", "created"),)),
            Message.text_message("assistant", "done")]
    return Trace("refs", tuple(msgs))


@dataclass(frozen=True, kw_only=True)
class ClearOutputs(Strategy):
    """Clears every tool output before each call (keeps the calls): the read of app.py is gone."""

    name = "clear-outputs"
    citation = "test"

    def before_call(self, ctx, session):
        new = ctx.replace(strategies.rewrite_results(m, lambda r: PRUNED if r.content != PRUNED else None)
                          for m in ctx.messages)
        return Outcome(new, (event("prune", ctx, new),)) if new.messages != ctx.messages else None


def unseen_by_call(strategy: Strategy) -> list[int]:
    # open loop: the proxy as it counts the recorded calls (a re-read, bench/replay/rereads.py, would add a row)
    result = replay(trace(), strategy, ReplayConfig(profile("claude-sonnet-4-5"), open_loop=True),
                    counter=TokenCounter())
    return [c.unseen_refs for c in result.calls]


def test_an_edit_quoting_text_the_strategy_cleared_counts_once():
    # call 3's answer edits app.py quoting its text: the path is still in the read call's input,
    # but the quoted line was only in the cleared output. The new file of call 4 was never seen
    # before, so it does not count; `none` keeps everything.
    assert unseen_by_call(ClearOutputs()) == [0, 0, 1, 0, 0]
    assert unseen_by_call(strategies.build("none")) == [0, 0, 0, 0, 0]


def test_a_strategy_written_message_that_quotes_it_keeps_it_in_view():
    check = ReferenceCheck()
    history = list(trace().messages[:6])
    answer = trace().messages[6]
    summary = Message.text_message("user", "Summary: /r/app.py starts with def parse_config(path, *, strict=True):")
    assert check.unseen(history, [history[0], history[1], summary], answer) == 0
    assert check.unseen(history, [history[0], history[1]], answer) == 1


def test_results_sum_it_per_task():
    result = replay(trace(), ClearOutputs(), ReplayConfig(profile("claude-sonnet-4-5")), counter=TokenCounter())
    table = results_table([result])
    assert table.unseen_references.tolist() == [1]
    assert isinstance(table, pd.DataFrame)


def naive_unseen(history, sent, answer) -> int:
    """The original quadratic definition: search the whole reversed history for every reference."""
    recorded = {id(m) for m in history}
    sent_ids = {id(m) for m in sent}

    def lost(ref: str) -> bool:
        carriers = [m for m in reversed(history) if ref in render(m)]
        if any(id(m) in sent_ids for m in carriers):
            return False
        return bool(carriers) and not any(ref in render(m) for m in sent if id(m) not in recorded)

    return sum(1 for use in answer.tool_uses if (refs := references(use)) and any(lost(r) for r in refs))


def test_the_incremental_search_counts_what_the_full_search_counts():
    # Random sessions over a small vocabulary (paths, quoted lines, words glued to them), random
    # sent subsets with strategy-written copies: every call agrees with the original definition,
    # with the recorded index shared by several replays (as the runner shares it per trace).
    rng = random.Random(7)
    paths = ["/r/app.py", "README.md", "src/parse_config.py", "a/b", "x_parse_config.pyc", "/r/app.pyx"]
    lines = ["def parse_config(path, *, strict=True):", "return parse_config_value(x) + 1",
             "raise KeyError(missing_key_name)"]
    for _ in range(20):
        history_all = [Message.text_message("system", "agent")]
        for i in range(40):
            glue = rng.choice(["", "pre", "_", "/"])
            text = " ".join(rng.choice([*paths, *lines, "noise", glue + rng.choice(paths)]) for _ in range(3))
            use = ToolUse(f"u{i}", "edit", {"path": rng.choice(paths), "old_str": rng.choice(lines)})
            history_all += [Message("assistant", (use,)), Message("user", (ToolResult(f"u{i}", text),))]
        shared = RecordedIndex()
        for _ in range(3):
            check = ReferenceCheck(shared)
            for n in range(3, len(history_all) - 1, 2):
                history, answer = history_all[:n], history_all[n]
                sent = [m for m in history if rng.random() < 0.6]
                sent += [Message.text_message("user", rng.choice([*paths, *lines, "none of it"]))
                         for _ in range(rng.randint(0, 2))]
                assert check.unseen(history, sent, answer) == naive_unseen(history, sent, answer)


def test_a_different_history_is_searched_on_its_own():
    shared = RecordedIndex()
    a, b = trace().messages, trace().messages  # equal text, different objects
    assert ReferenceCheck(shared).unseen(a[:6], a[:2], a[6]) == 1
    assert ReferenceCheck(shared).unseen(b[:6], [*b[:2], a[2], a[3]], b[6]) == 0  # a copy of what b read


def test_the_incremental_check_counts_what_a_from_scratch_check_counts(monkeypatch):
    # A reference is lost when the history so far holds it and no message sent does (by text: a
    # recorded message holds it exactly when its text does). Random sessions whose views keep a
    # head and a tail, drop and restore old messages, send rewritten copies and placeholders that
    # quote paths, and sometimes start over; the incremental check must agree at every call.
    rng = random.Random(9)
    paths = [f"/src/module_{i}.py" for i in range(12)]
    monkeypatch.setattr(prefix, "LINEAGE_MIN", 1)  # short views: every derivation declared is kept

    def from_scratch(history, sent, answer) -> int:
        texts = [render(m) for m in sent]
        def lost(ref):
            return any(ref in render(h) for h in history) and not any(ref in t for t in texts)
        return sum(1 for refs in (references(u) for u in answer.tool_uses) if refs and any(lost(r) for r in refs))

    checked = 0
    for session in range(40):
        check = ReferenceCheck()
        if session % 2:
            check.LOG_SLACK = -40  # the log of entries is cut often: checks start over from the view
        # written texts indexed by word, or (one session in three) all too long to index: searched whole
        monkeypatch.setattr(references_module, "INDEXED_MAX", 0 if session % 3 == 0 else 4_096)
        history: list[Message] = [Message.text_message("user", "start")]
        view: list[Message] = list(history)
        last: tuple[Message, ...] = ()
        for call in range(60):
            answer = Message("assistant", tuple(ToolUse(f"u{call}_{j}", "read_file", {"path": rng.choice(paths)})
                                                for j in range(rng.randint(0, 2))))
            roll = rng.random()
            if roll < 0.15 and len(view) > 4:  # drop a middle slice
                i = rng.randrange(1, len(view) - 2)
                del view[i:i + rng.randint(1, 3)]
            elif roll < 0.25 and len(view) > 2:  # a placeholder quoting some paths replaces a message
                i = rng.randrange(len(view))
                view[i] = Message.text_message("user", "earlier: " + " ".join(rng.sample(paths, 2)))
            elif roll < 0.3:  # start over from the history
                view = list(history)
            elif roll < 0.35 and history:  # restore a recorded message
                view.insert(rng.randrange(len(view) + 1), rng.choice(history))
            sent = tuple(view)
            if session % 4 >= 2:  # say how far it holds the last request's objects, as Context does
                pairs = enumerate(zip(last, sent, strict=False))
                same = next((i for i, (x, y) in pairs if x is not y), min(len(last), len(sent)))
                derived(sent, last, same)
            last = sent
            assert check.unseen(history, sent, answer) == from_scratch(history, sent, answer)
            checked += bool(answer.tool_uses)
            out = Message("user", tuple(ToolResult(u.id, f"contents of {u.input['path']}") for u in answer.tool_uses)
                          ) if answer.tool_uses else Message.text_message("user", "go on")
            history += [answer, out]
            view += [answer, out]
    assert checked > 1_000


def test_a_written_message_that_left_the_view_is_not_kept_alive():
    """The log of what entered the view holds ids, not messages: a strategy that writes new texts
    every call (gemini-cli re-cuts its outputs, each cut naming the call) held hundreds of dead
    40K-character cuts through it. Its count is the same (the randomized tests above)."""
    import gc
    import weakref

    t = trace()
    history = list(t.messages[:8])
    check = ReferenceCheck(RecordedIndex.of(t))
    answer = t.messages[8]
    written = Message("user", (ToolResult("r1", "a cut of the output " * 50),))
    gone = weakref.ref(written)
    check.unseen(history, (*history[:3], written, *history[4:]), answer)
    check.unseen(history, tuple(history), answer)  # the written message left the view
    del written
    gc.collect()
    assert gone() is None


def test_the_rarest_word_search_finds_the_shortest_posting_of_the_inner_words_and_stops_at_an_empty_one():
    """``_rarest`` reads the words inside a reference (a run of word characters with a non-word character on
    each side, long enough to be indexed) once per reference, and picks the shortest posting of them."""
    from bench.replay.references import _inner_words, _rarest

    ref = "alpha_one(beta_two, gamma_three) + delta_four"
    assert _inner_words(ref) == ("beta_two", "gamma_three")  # the runs at the ends may be longer in a text
    posts = {"beta_two": [1, 2, 3], "gamma_three": [4]}
    words = _inner_words(ref)
    assert _rarest(words, posts, []) == [4]
    assert _rarest(words, {"gamma_three": [4]}, []) == []  # beta_two held nowhere: no text holds ref
    assert _rarest(_inner_words("x = 1"), posts, []) is None  # nothing to index: every text is a candidate
    assert _inner_words("(repeated_word repeated_word)") == ("repeated_word",)
