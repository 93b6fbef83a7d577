"""Oddly shaped sessions as hypothesis strategies: the hostile inputs of issue 11.

Real logs start mid-session, lose lines, fan out 25 parallel calls, carry one tool output bigger
than the whole window, or hold an empty assistant message between a call and its result. Each
entry of ``SHAPES`` draws a small random session and bends it into one such shape; the contract
suite replays every registered strategy over every shape (tests/strategies/test_contract.py).

Some shapes are invalid on purpose (a result before its call, a tool id used twice, an empty
message): the API would reject them as recorded, so a strategy may pass them on, but must not add
problems of its own, and the replay must flag what it sends (bench/replay/validity.py).
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import strategies as st

from traces.model import Image, Message, Text, ToolResult, ToolUse, Trace

SYSTEM = "You are a coding agent. " * 20
TASK = "Task: fix the failing test in app.py, ref T-1"
TOOLS = ("read_file", "bash", "edit_file", "grep")
WORDS = ("alpha", "beta", "gamma", "delta", "error:", "def", "return", "42", "/src/app.py", "ok")
EMOJI = ("🙂", "👩‍💻", "🇫🇷", "e\u0301", "\u202eRTL\u202c", "𝔘𝔫𝔦", "🧪🧪🧪", "中文", "\u200b", "🏳️‍🌈")
HUGE_WORDS = 26_000
"""Words in an enormous message: about 35K tokens, over twice the 16K test window."""


def huge_text(label: str) -> str:
    words = [WORDS[(i * 7) % len(WORDS)] for i in range(HUGE_WORDS)]
    return f"[{label}] " + " ".join(words)


def words(n: int, salt: int) -> str:
    """``n`` words of tool output (drawn as two integers: drawing each word makes big sessions slow)."""
    return " ".join(WORDS[(i * 7 + salt * (i // 50)) % len(WORDS)] for i in range(n)) + f" #{salt}"


def _human(step: int) -> Message:
    return Message.text_message("user", f"Human turn {step}: now also check module m{step} (ref T-{step})")


@st.composite
def sessions(draw: st.DrawFn, *, system: bool = True, human: bool = True, min_tools: int = 0,
             max_steps: int = 12) -> list[Message]:
    """A small well-formed session (calls always answered) to bend into a shape."""
    msgs: list[Message] = []
    if system:
        msgs.append(Message.text_message("system", SYSTEM))
    if human:
        msgs.append(Message.text_message("user", TASK))
    for step in range(draw(st.integers(min(3, max_steps), max_steps))):
        uses = tuple(ToolUse(f"s{step}t{k}", draw(st.sampled_from(TOOLS)), {"path": f"/src/f{k}.py"})
                     for k in range(draw(st.integers(min_tools, 3))))
        if not uses and not human:
            uses = (ToolUse(f"s{step}t0", "bash", {"command": f"run {step}"}),)
        text = (Text(f"step {step} thinking"),) if draw(st.booleans()) or not uses else ()
        msgs.append(Message("assistant", text + uses))
        if uses:
            msgs.append(Message("user", tuple(
                ToolResult(u.id, words(draw(st.integers(200, 1500)), draw(st.integers(0, 99))),
                           is_error=draw(st.booleans()))
                for u in uses)))
        if human and (not uses or draw(st.integers(0, 4)) == 0):
            msgs.append(_human(step))
    msgs.append(Message.text_message("assistant", "All done."))
    return msgs


def _pairs(msgs: list[Message]) -> list[int]:
    """Indices of assistant messages whose calls are answered by the next message."""
    return [i for i, m in enumerate(msgs[:-1]) if m.tool_uses and msgs[i + 1].tool_results]


def _with_pair(**kw: object) -> st.SearchStrategy[list[Message]]:
    return sessions(min_tools=1, **kw)


@st.composite
def no_system(draw: st.DrawFn) -> list[Message]:
    return draw(sessions(system=False))


@st.composite
def no_human(draw: st.DrawFn) -> list[Message]:
    return draw(sessions(human=False))


@st.composite
def only_tool_results(draw: st.DrawFn) -> list[Message]:
    """Results whose calls are not in the log (a session picked up mid-way), and the answers."""
    msgs: list[Message] = []
    for step in range(draw(st.integers(1, 6))):
        n = draw(st.integers(1, 4))
        msgs.append(Message("user", tuple(ToolResult(f"gone{step}_{k}", " ".join(WORDS) * draw(st.integers(1, 80)))
                                          for k in range(n))))
        msgs.append(Message.text_message("assistant", f"noted {step}"))
    return msgs


@st.composite
def parallel_calls(draw: st.DrawFn) -> list[Message]:
    """One to three assistant messages each fanning out 5-25 calls at once."""
    msgs = [Message.text_message("system", SYSTEM), Message.text_message("user", TASK)]
    for step in range(draw(st.integers(1, 3))):
        n = draw(st.integers(5, 25))
        uses = tuple(ToolUse(f"p{step}_{k}", "read_file", {"path": f"/src/p{k}.py"}) for k in range(n))
        msgs.append(Message("assistant", (Text(f"reading {n} files"), *uses)))
        size = draw(st.integers(10, 400))
        msgs.append(Message("user", tuple(ToolResult(u.id, f"{u.id}: " + " ".join(WORDS) * size) for u in uses)))
        if draw(st.booleans()):
            msgs.append(_human(step))
    msgs.append(Message.text_message("assistant", "All done."))
    return msgs


@st.composite
def result_before_call(draw: st.DrawFn) -> list[Message]:
    """A tool result that reaches the log before the assistant message that made the call."""
    msgs = draw(_with_pair())
    i = draw(st.sampled_from(_pairs(msgs)))
    msgs[i], msgs[i + 1] = msgs[i + 1], msgs[i]
    return msgs


def _huge_at(where: str) -> Callable[[], st.SearchStrategy[list[Message]]]:
    @st.composite
    def shape(draw: st.DrawFn) -> list[Message]:
        msgs = draw(_with_pair())
        big = huge_text(where)
        if where == "system":
            msgs[0] = Message.text_message("system", big)
        elif where == "first_human":
            msgs[1] = Message.text_message("user", big)
        elif where == "latest_human":
            msgs.insert(len(msgs) - 1, Message.text_message("user", big))
        elif where in ("tool_result", "last_tool_result"):
            pairs = _pairs(msgs)
            i = (pairs[-1] if where == "last_tool_result" else draw(st.sampled_from(pairs))) + 1
            first = msgs[i].tool_results[0]
            msgs[i] = msgs[i].with_blocks((ToolResult(first.tool_use_id, big), *msgs[i].blocks[1:]))
        elif where == "tool_input":
            i = draw(st.sampled_from(_pairs(msgs)))
            use = msgs[i].tool_uses[0]
            blocks = tuple(ToolUse(b.id, b.name, {"content": big}) if b is use else b for b in msgs[i].blocks)
            msgs[i] = msgs[i].with_blocks(blocks)
        elif where == "assistant":
            i = draw(st.sampled_from([i for i, m in enumerate(msgs[:-1]) if m.role == "assistant"]))
            msgs[i] = msgs[i].with_blocks((Text(big), *msgs[i].blocks))
        return msgs

    shape.__name__ = f"huge_{where}"
    return shape


@st.composite
def empty_messages(draw: st.DrawFn) -> list[Message]:
    """Messages with no content or only an empty text block, anywhere after the system prompt."""
    msgs = draw(sessions())
    for _ in range(draw(st.integers(1, 3))):
        role = draw(st.sampled_from(("user", "assistant")))
        blocks = draw(st.sampled_from(((), (Text(""),))))
        msgs.insert(draw(st.integers(1, len(msgs) - 1)), Message(role, blocks))
    return msgs


@st.composite
def emoji(draw: st.DrawFn) -> list[Message]:
    """Human turns and tool outputs full of emoji, flags, ZWJ sequences, combining and bidi marks."""
    def mess(text: str) -> str:
        return text + " " + " ".join(draw(st.lists(st.sampled_from(EMOJI), min_size=1, max_size=400)))

    out = []
    for m in draw(sessions()):
        if m.is_human_turn:
            m = Message.text_message("user", mess(m.text))
        elif m.tool_results:
            m = m.with_blocks(tuple(ToolResult(r.tool_use_id, mess(r.content), r.is_error) for r in m.tool_results))
        out.append(m)
    return out


@st.composite
def single_message(draw: st.DrawFn) -> list[Message]:
    return [draw(st.sampled_from((Message.text_message("system", SYSTEM), Message.text_message("user", TASK),
                                  Message.text_message("assistant", "Hello."))))]


@st.composite
def consecutive_assistant(draw: st.DrawFn) -> list[Message]:
    """Two or three assistant messages in a row (a log that splits one answer, or a retry)."""
    msgs = draw(sessions())
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.sampled_from([i for i, m in enumerate(msgs) if m.role == "assistant"]))
        msgs.insert(i + 1, Message.text_message("assistant", f"and another thought {i}"))
    return msgs


@st.composite
def duplicate_tool_ids(draw: st.DrawFn) -> list[Message]:
    """A later call re-uses an earlier call's id (a log that numbers ids per turn)."""
    msgs = draw(sessions(min_tools=1, max_steps=8))
    pairs = _pairs(msgs)
    if len(pairs) < 2:
        msgs.insert(len(msgs) - 1, msgs[pairs[0]])
        msgs.insert(len(msgs) - 1, msgs[pairs[0] + 1])
        return msgs
    a, b = sorted(draw(st.lists(st.sampled_from(pairs), min_size=2, max_size=2, unique=True)))
    old = msgs[a].tool_uses[0].id
    new = msgs[b].tool_uses[0].id
    msgs[b] = msgs[b].with_blocks(tuple(ToolUse(old, u.name, u.input) if isinstance(u, ToolUse) and u.id == new
                                        else u for u in msgs[b].blocks))
    msgs[b + 1] = msgs[b + 1].with_blocks(tuple(ToolResult(old, r.content, r.is_error)
                                                if isinstance(r, ToolResult) and r.tool_use_id == new
                                                else r for r in msgs[b + 1].blocks))
    return msgs


@st.composite
def images(draw: st.DrawFn) -> list[Message]:
    """Screenshots in human turns, some turns nothing but an image."""
    out = []
    for m in draw(sessions()):
        if m.is_human_turn and draw(st.booleans()):
            image = Image("image/png", draw(st.integers(1, 3_000_000)))
            m = m.with_blocks((image,) if draw(st.booleans()) else (*m.blocks, image))
        out.append(m)
    return out


@st.composite
def empty_assistant_between(draw: st.DrawFn) -> list[Message]:
    """``{"role": "assistant", "content": []}`` between a call and its result (seen in real logs)."""
    msgs = draw(_with_pair())
    for i in sorted(draw(st.lists(st.sampled_from(_pairs(msgs)), min_size=1, max_size=2, unique=True)), reverse=True):
        msgs.insert(i + 1, Message("assistant", ()))
    return msgs


SHAPES: dict[str, Callable[[], st.SearchStrategy[list[Message]]]] = {
    "no_system": no_system,
    "no_human": no_human,
    "only_tool_results": only_tool_results,
    "parallel_calls": parallel_calls,
    "result_before_call": result_before_call,
    **{f"huge_{w}": _huge_at(w) for w in ("system", "first_human", "tool_result", "tool_input", "assistant",
                                          "latest_human", "last_tool_result")},
    "empty_messages": empty_messages,
    "emoji": emoji,
    "single_message": single_message,
    "consecutive_assistant": consecutive_assistant,
    "duplicate_tool_ids": duplicate_tool_ids,
    "images": images,
    "empty_assistant_between": empty_assistant_between,
}


def shaped(name: str) -> st.SearchStrategy[Trace]:
    """Traces of one shape."""
    return SHAPES[name]().map(lambda msgs: Trace(f"shape-{name}", tuple(msgs)))
