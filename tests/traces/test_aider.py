"""Aider chat-history importer: the real 4 MB transcript, a hand-built one, fuzzed input."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.cost.pricing import profile
from bench.replay.loop import ReplayConfig, replay
from strategies import build
from tests.traces._fuzz import only_trace_errors
from traces.formats import aider, detect, read_path
from traces.model import TraceError, Usage

SAMPLE = """\
# aider chat started at 2024-08-05 19:33:32

> /usr/bin/aider foo.py¶
> Aider v0.47.2-dev¶
> Models: claude-3-5-sonnet-20240620 with diff edit format, weak model claude-3-haiku-20240307¶
> Added foo.py to the chat.¶

#### add a docstring¶
#### to foo¶

Here is the change:

foo.py
```python
<<<<<<< SEARCH
def foo():
=======
def foo():
    \"\"\"Do foo.\"\"\"
>>>>>>> REPLACE
```

> Tokens: 3,120 sent, 1,000 cache write, 2,000 cache hit, 85 received. Cost: $0.01 message, $0.01 session.¶
> Applied edit to foo.py¶
> Commit 1234abc feat: docstring¶

#### /drop foo.py¶

> Removed foo.py from the chat¶

# aider chat started at 2024-08-06 10:00:00

> Aider v0.48.0¶
> Model: gpt-4o-mini with whole edit format¶

# aider chat started at 2024-08-06 11:00:00

> Model: gpt-4o with diff edit format¶

#### hi¶

Hello!

> Tokens: 1.2k sent, 12 received.¶
""".replace("¶", "  ")  # aider ends input and output lines with two spaces


def _write(text: str | bytes) -> Path:
    f = tempfile.NamedTemporaryFile("wb", suffix=".md", delete=False)
    f.write(text.encode("utf-8") if isinstance(text, str) else text)
    f.close()
    return Path(f.name)


def test_hand_built_transcript():
    path = _write(SAMPLE)
    assert detect(path) == "aider"
    result = aider.read_file(path)
    first, second = result.traces
    assert [(m.role, m.meta.get("aider_output", False)) for m in first.messages] == [
        ("user", False), ("assistant", False), ("user", True), ("user", False), ("user", True)]
    assert first.messages[0].text == "add a docstring\nto foo"
    assert first.messages[1].text.startswith("Here is the change:") and ">>>>>>> REPLACE" in first.messages[1].text
    assert first.messages[1].usage == Usage(input_tokens=120, output_tokens=85, cache_read_tokens=2000,
                                            cache_write_tokens=1000)
    assert first.messages[1].meta == {"cost": 0.01}
    assert first.messages[2].text == "Applied edit to foo.py\nCommit 1234abc feat: docstring"
    assert first.model == "claude-3-5-sonnet-20240620" and first.meta["started_at"] == "2024-08-05 19:33:32"
    assert "Aider v0.47.2-dev" in first.meta["banner"]
    assert second.model == "gpt-4o" and second.messages[1].usage == Usage(1200, 12)
    assert [t.id for t in result.traces] == [f"{path.stem}#1", f"{path.stem}#3"]
    assert result.notes == [f"{path}: 1 session(s) without both user input and a reply skipped"]


@pytest.mark.parametrize("line, usage", [
    ("Tokens: 5,244 sent, 604 received. Cost: $0.02 request, $0.02 session.", Usage(5244, 604)),
    ("Tokens: 12k sent, 3.5k cache hit, 1.1k received.", Usage(8500, 1100, 3500)),
    ("Tokens: 9,000 sent, 4,000 cached, 1,002 received. Cost: $0.01 message, $0.02 session.", Usage(5000, 1002, 4000)),
    ("Tokens: 529 sent, 90 received, cache costs not included. Cost: $0.00024 message.", Usage(529, 90)),
])
def test_token_lines(line, usage):
    assert aider.parse_tokens(line)[0] == usage


def test_real_chat_history(shared_traces, counter):
    path = shared_traces / "aider__aider-ai" / "chat-history.md"
    assert detect(path) == "aider"
    result = read_path(path)
    text = path.read_text()
    headers = len(re.findall(r"^# aider chat started at ", text, re.M))
    token_lines = len(re.findall(r"^> Tokens: ", text, re.M))
    assert (headers, token_lines) == (1133, 839)
    traces = result.traces
    # sessions with typed input and a reply; the other 648 (banner only, /commands only, or a
    # --verbose dump / commit message printed without any input) are skipped and noted
    assert len(traces) == 485 and result.notes[0].endswith("648 session(s) without both user input and a reply skipped")
    assert sum(t.n_calls for t in traces) == 1187 and sum(len(t.messages) for t in traces) == 3965
    typed = sum(1 for t in traces for m in t.messages if m.role == "user" and not m.meta.get("aider_output"))
    assert typed == 1512
    unattached = sum(t.meta.get("unattached_usage_lines", 0) for t in traces)
    assert sum(1 for t in traces for m in t.messages if m.usage) == 823 and unattached == 5
    assert sum(t.n_tool_calls for t in traces) == 0 and all(t.agent == "aider" for t in traces)
    first = next(t for t in traces if t.meta["started_at"] == "2024-08-05 19:33:32")
    assert first.messages[0].text == "Use the Spinner instead of the inlined custom spinner"
    biggest = max(traces, key=lambda t: len(t.messages))
    for trace in (first, biggest):
        result = replay(trace, build("none"), ReplayConfig(profile("claude-sonnet-4-5")), counter=counter)
        assert len(result.calls) == trace.n_calls and result.failed is None and result.error is None


def test_not_utf8_names_the_line():
    path = _write(b"# aider chat started at 2024-01-01 00:00:00\n\n#### hi\n\nok \xff\n")
    with pytest.raises(TraceError, match=r":5: not UTF-8"):
        aider.read_file(path)
    result = read_path(path, lenient=True)  # repaired (U+FFFD) and counted, not dropped
    assert len(result.traces) == 1 and result.traces[0].messages[1].text == "ok \ufffd"
    assert any("repaired 1 invalid UTF-8" in n for n in result.notes)


def test_no_session_is_an_error():
    with pytest.raises(TraceError, match="no aider session"):
        aider.read_file(_write("just some text\n"))


LINES = st.lists(st.one_of(st.sampled_from(["# aider chat started at 2024-01-01 00:00:00", "#### hi", "####", ">",
                                             "> Tokens: 1 sent, 2 received.", "> Tokens: 1k sent, x received.",
                                             "> Tokens: , received.", "> Model: m", "", "reply", ">>>>>>> REPLACE"]),
                           st.text(max_size=8)), max_size=12).map("\n".join)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(LINES, st.integers(0, len(SAMPLE)).map(lambda n: SAMPLE[:n]), st.binary(max_size=40)),
       st.booleans())
def test_fuzz_only_trace_errors(text, lenient):
    path = _write(text)
    try:
        only_trace_errors(aider.read_file, path, (lenient,))
    finally:
        path.unlink()
