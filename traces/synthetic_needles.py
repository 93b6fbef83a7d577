"""Typed needles for synthetic sessions: what is planted, where, and the question that probes it.

Each kind says where a real session would carry such a fact (evaluation.md §"Retention", item 6):
a *fact* told by the user or found in a config file the agent read, an *error* line at the tail of a
test run, an *artifact* (a file the agent created, visible in the tool call's arguments), a user
*constraint*, a *decision* the agent announced, an *update* that supersedes an earlier value (told
by the user again, or found in a file the agent reads later: a strategy that clears tool outputs
but keeps the user's messages is then left with the stale value), and a *control* that is never
stated (false positives). Answers are built from a vocabulary the filler
text never uses, and the generator re-draws any answer that still occurs elsewhere in the trace, so
exact-match retention measures the planted copy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from random import Random

from traces import synthetic_text as tx

WORDS = ("osprey", "kestrel", "heron", "quartz", "basalt", "lupine", "marble", "cinder", "juniper",
         "falcon", "garnet", "obsidian", "plover", "tamarack", "wren", "zircon", "saffron", "puffin",
         "lynx", "tundra", "cobalt", "magpie", "sorrel", "vireo")
"""Needle-only words: none of them occurs in traces/synthetic_text.py's word lists."""


@dataclass(frozen=True)
class NeedlePlan:
    """Plant a needle of ``kind`` when the session is ``at`` (0..1) of the way through its tokens.

    For an ``update``, ``old_at`` is where the value it supersedes is stated (earlier).
    """

    kind: str
    at: float
    old_at: float | None = None


@dataclass(frozen=True)
class Planted:
    """A drawn needle before it is placed: the texts and calls that carry it."""

    kind: str
    question: str
    answer: str
    human: str | None = None
    """Text of a human message carrying it (fact by the user, constraint, update)."""
    assistant: str | None = None
    """Text of an assistant message carrying it (decision)."""
    call: tuple[str, dict, str] | None = None
    """(tool, input, tail of output) for a tool call carrying it (fact in a file, error, artifact)."""
    old_answer: str | None = None
    old_human: str | None = None
    reference: str | None = None


def _word(rng: Random) -> str:
    return rng.choice(WORDS)


def _codename(rng: Random) -> str:
    return f"{_word(rng).upper()}-{_word(rng).upper()}-{rng.randint(100, 999)}"


def _host(rng: Random) -> str:
    return f"{_word(rng)}-{rng.randint(10, 99)}.{_word(rng)}.internal"


def draw(kind: str, rng: Random, project: str, variant: int) -> Planted:
    """A needle of ``kind``; ``variant`` picks among templates so a scenario's needles differ."""
    if kind == "fact" and variant % 2 == 0:
        port = str(rng.randint(41_000, 59_999))
        return Planted(kind, "Which port does the staging database listen on?", port,
                       human=f"FYI, in case you need it later: the staging database listens on port {port}.")
    if kind == "fact":
        path = f"/home/dev/{project}/config/{_word(rng)}_{_word(rng)}.toml"
        code = _codename(rng)
        body = f'[release]\nchannel = "beta"\ncodename = "{code}"\nowners = ["platform"]\n'
        return Planted(kind, f"What release codename is set in {path}?", code,
                       call=("read_file", {"path": path}, body), reference=path)
    if kind == "error":
        test = f"tests/test_{_word(rng)}_sync.py"
        line = (f"E   ChecksumError: shard {_word(rng).upper()}-{rng.randint(1000, 9999)} digest mismatch "
                f"(expected {rng.getrandbits(32):08x}, got {rng.getrandbits(32):08x})")
        cmd = f"python -m pytest {test} -x -q"
        tail = (f"{line}\n\n{test}:{rng.randint(20, 300)}: ChecksumError\n{tx.rule('short test summary info')}\n"
                f"FAILED {test}::test_roundtrip - ChecksumError\n"
                f"1 failed, {rng.randint(20, 400)} passed in {rng.uniform(2, 90):.2f}s")
        return Planted(kind, f"What exact error line did `{cmd}` fail with?", line,
                       call=("bash", {"command": cmd}, tail), reference=cmd)
    if kind == "artifact":
        path = f"/home/dev/{project}/src/{project}/{_word(rng)}_{_word(rng)}_adapter.py"
        content = f'"""Adapter for the upstream API."""\n\nclass Adapter:\n    retries = {rng.randint(2, 9)}\n'
        return Planted(kind, "Which new file did the agent create for the upstream adapter?", path,
                       call=("write", {"path": path, "content": content}, f"File created successfully at: {path}"),
                       reference=path)
    if kind == "constraint" and variant % 2 == 0:
        folder = f"vendor/{_word(rng)}_{_word(rng)}_sdk"
        return Planted(kind, "Which directory must never be modified?", folder,
                       human=f"One rule for the whole session: never modify anything under {folder}/, it is "
                             "generated and gets overwritten.")
    if kind == "constraint":
        target = f"make check-{_word(rng)}-{rng.randint(10, 99)}"
        return Planted(kind, "Which command must always be run before finishing?", target,
                       human=f"Also, always run `{target}` before you tell me something is done.")
    if kind == "decision":
        size = str(rng.randint(1_100, 9_900))
        pin = f"{_word(rng)}-client=={rng.randint(2, 9)}.{rng.randint(10, 40)}.{rng.randint(0, 9)}"
        answer = pin if variant % 2 else f"{size} rows"
        text = (f"Decision: we pin {pin} to avoid the breaking change in the next release." if variant % 2
                else f"Decision: the backfill will commit in batches of {size} rows per transaction.")
        question = ("Which client version did we decide to pin?" if variant % 2
                    else "What batch size did we decide on for the backfill?")
        return Planted(kind, question, answer, assistant=text)
    if kind == "update" and variant % 2 == 0:
        old, new = _host(rng), _host(rng)
        return Planted(kind, "Which host is the deploy target?", new, old_answer=old,
                       old_human=f"When we get to deployment, the deploy target is {old}.",
                       human=f"Change of plan for deployment: the deploy target is now {new}.")
    if kind == "update":  # the user's value is superseded by what the agent later reads in a file
        old, new = _host(rng), _host(rng)
        path = f"/home/dev/{project}/deploy/{_word(rng)}.toml"
        body = f'[database]\nprimary = "{new}"\npool_size = {rng.randint(5, 40)}\n'
        return Planted(kind, f"Which host is the primary database (as {path} now says)?", new, old_answer=old,
                       old_human=f"For the migration, the primary database host is {old}.",
                       call=("read_file", {"path": path}, body), reference=path)
    if kind == "control":
        return Planted(kind, "What is the on-call pager PIN?", f"PIN-{rng.randint(100_000, 999_999)}")
    raise ValueError(f"unknown needle kind {kind!r}")
