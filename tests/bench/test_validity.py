"""What the API would reject is found, incrementally, and the replay flags it instead of hiding it."""

from __future__ import annotations

import strategies
from bench.replay.loop import replay
from bench.replay.validity import RequestCheck, describe, problems
from bench.scoring.metrics import results_table
from bench.tokens.counter import TokenCounter
from tests.strategies.test_contract import CONFIG
from traces.model import Message, Text, ToolResult, ToolUse, Trace

SYS = Message.text_message("system", "sys")
ASK = Message.text_message("user", "look")


def call(*ids: str) -> Message:
    return Message("assistant", tuple(ToolUse(i, "bash", {"command": "ls"}) for i in ids))


def result(*ids: str) -> Message:
    return Message("user", tuple(ToolResult(i, "out") for i in ids))


def kinds(msgs) -> list[tuple[str, str]]:
    return [(p.kind, p.subject) for p in problems(msgs)]


def test_a_well_formed_request_has_no_problem():
    assert kinds((SYS, ASK, call("a", "b"), result("a", "b"))) == []


def test_each_thing_the_api_rejects_is_named_with_its_place():
    msgs = (SYS, result("x"), call("a"), result("a"), call("a"), result("a", "a"), Message("user", (Text(""),)),
            call("b"))
    assert kinds(msgs) == [("orphan_result", "x"), ("duplicate_id", "a"), ("answered_twice", "a"),
                           ("empty", "user"), ("unanswered_call", "b")]
    assert str(problems(msgs)[0]) == "messages[1]: tool result x has no call before it"
    assert describe(problems(msgs)).startswith("5 problems the API would reject: messages[1]")


def test_a_result_before_its_call_is_an_orphan_even_though_both_are_there():
    assert kinds((SYS, ASK, result("a"), call("a"))) == [("orphan_result", "a"), ("unanswered_call", "a")]


def test_the_check_reuses_the_previous_prefix_and_restarts_when_the_request_is_rewritten():
    check = RequestCheck()
    first = (SYS, ASK, call("a"))
    assert [p.kind for p in check.problems(first)] == ["unanswered_call"]
    assert check.problems((*first, result("a"))) == ()
    assert [p.kind for p in check.problems((SYS, result("a")))] == ["orphan_result"]  # not a prefix: from scratch
    assert check.problems((SYS, ASK)) == ()


def test_the_replay_flags_an_invalid_request_with_an_event_and_counts_it():
    # an empty assistant message between a call and its result: the request of call 1 leaves "a" unanswered
    trace = Trace("t", (SYS, ASK, call("a"), Message("assistant", ()), result("a"),
                        Message.text_message("assistant", "done")))
    r = replay(trace, strategies.build("none"), CONFIG, counter=TokenCounter())
    assert [c.invalid for c in r.calls] == [0, 1, 1]  # call 2 also carries the empty assistant message
    flagged = [e for e in r.events if e.kind == "invalid"]
    assert [e.call for e in flagged] == [1, 2]
    assert "tool call a has no result" in flagged[0].detail and "empty assistant message" in flagged[1].detail
    row = results_table([r]).iloc[0]
    assert row.invalid_requests == 2 and row.events == 0  # the flag is not a strategy action


def test_the_incremental_check_equals_checking_from_scratch_over_random_rewrites():
    import random

    rng = random.Random(11)
    pool = [ASK, Message("user", (Text(""),)), Message("assistant", ())]
    for trial in range(300):
        check = RequestCheck()
        request: list[Message] = [SYS]
        for _ in range(12):
            op = rng.random()
            ids = [rng.choice("abcdefgh") for _ in range(rng.randint(1, 3))]
            if op < 0.45:  # grow: a call, a result (maybe of an unknown or repeated id), a turn
                request.append(rng.choice([call(*ids), result(*ids), rng.choice(pool)]))
            elif op < 0.65 and len(request) > 2:  # a rewrite from some message on
                request[rng.randrange(1, len(request))] = rng.choice([call(*ids), result(*ids), ASK])
            elif op < 0.8 and len(request) > 3:  # a dropped range
                i = rng.randrange(1, len(request) - 1)
                del request[i:rng.randrange(i + 1, len(request))]
            elif len(request) > 2:  # a shorter request
                del request[rng.randrange(2, len(request)):]
            assert check.problems(request) == problems(request), (trial, request)


def test_the_incremental_check_finds_what_a_check_from_scratch_finds():
    # Random request streams: growth, outputs rewritten in place (same shape), a call dropped or a
    # message put back in the middle (a moving mask), cuts, empty messages, reused ids and orphan
    # results. The incremental check (previous state, or the state where an earlier request parted)
    # must give exactly the problems of a check from scratch, every time.
    import random

    rng = random.Random(4)
    resumed = 0
    for _ in range(150):
        check = RequestCheck()
        history: list[Message] = [Message.text_message("system", "s")]
        request = list(history)
        for step in range(40):
            uid = f"u{rng.randint(0, 3 * step + 3)}"  # sometimes an id used before
            roll = rng.random()
            if roll < 0.4:
                new = [call(uid), result(uid)] if rng.random() < 0.8 else [result(uid)]
                history += new
                request += new
            elif roll < 0.55 and len(request) > 2:  # rewrite in place: same blocks' ids
                i = rng.randrange(1, len(request))
                m = request[i]
                request[i] = Message(m.role, tuple(ToolResult(b.tool_use_id, "[masked]") if isinstance(b, ToolResult)
                                                   else b for b in m.blocks))
            elif roll < 0.7 and len(request) > 3:  # drop one message near the end (a moving window)
                del request[rng.randrange(max(1, len(request) - 8), len(request))]
            elif roll < 0.8 and history:  # put a recorded message back
                request.insert(rng.randrange(1, len(request) + 1), rng.choice(history))
            elif roll < 0.88:
                request = request[: rng.randint(1, len(request))]
            elif roll < 0.94:
                request.insert(rng.randrange(1, len(request) + 1), Message("user", rng.choice(((), (Text(""),)))))
            else:
                request = list(history)
            before = check._mark
            got = check.problems(tuple(request))
            resumed += before is not None and check._mark is before and check._prefix is not None
            assert got == problems(tuple(request)), (step, [str(p) for p in got])
    assert resumed > 100


def test_checks_share_shapes_and_a_message_rewritten_mid_run_is_checked_as_from_scratch():
    """Shapes are remembered per message object across every check in the process (each replay of a
    trace sends the same recorded messages): one check's memo must never answer for another object,
    even one built at the id of a message that died, and replaced contexts check as from scratch."""
    import gc

    first, second = RequestCheck(), RequestCheck()
    base = [SYS, ASK, call("a"), result("a")]
    assert first.problems(base) == second.problems(base) == ()
    for k in range(20):  # new objects, often at the ids of the ones just freed
        rewritten = [SYS, ASK, call(f"x{k}"), result(f"x{k}" if k % 2 else "a"), Message("assistant", ())]
        assert first.problems(rewritten) == problems(rewritten)
        assert second.problems([*base, *rewritten[2:]]) == problems([*base, *rewritten[2:]])
        del rewritten
        gc.collect()
