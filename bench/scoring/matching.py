"""How a needle's text is found in a context: casefolded, whitespace collapsed, paths by their tail.

Apart from the probes themselves so that the probes derived from a trace (bench.scoring.derived_probes)
match text the same way without importing the probe machinery that calls them.
"""

from __future__ import annotations

import re
from collections.abc import Container
from functools import lru_cache

_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Casefold and collapse whitespace: a summary that re-flows a line still holds the fact.

    ``str.split()`` splits on exactly the characters ``\\s`` matches in a str pattern (both
    ``str.isspace``) and drops the ends, so this equals ``_SPACE.sub(" ", text).strip()`` (tests/bench/
    test_probes.py checks it on every code point), at about twice the speed: every message a probe
    point holds is normalized once per trace."""
    return " ".join(text.split()).casefold()


def path_variants(path: str) -> tuple[str, ...]:
    """The path as written and its last two components (a summary often drops the checkout root)."""
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    tail = "/".join(parts[-2:]) if len(parts) >= 2 else ""
    return tuple(normalize(v) for v in (path, tail) if v)


@lru_cache(maxsize=1 << 14)
def variants(needle_text: str, is_path: bool) -> tuple[str, ...]:
    """The normalized forms ``present`` looks for, once per needle text: a replay asks about the same
    few needles at every compaction, and at the end."""
    if not needle_text.strip():
        return ()
    return tuple(v for v in (path_variants(needle_text) if is_path else (normalize(needle_text),)) if v)


def present(needle_text: str, haystack: Container[str], *, is_path: bool = False) -> bool:
    """Is ``needle_text`` in the (normalized) haystack? Paths also match by their last two parts."""
    return any(v in haystack for v in variants(needle_text, is_path))
