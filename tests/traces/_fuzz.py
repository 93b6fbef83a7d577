"""What every importer's fuzz test asserts: a bad file fails with the importer's own error, naming the file.

The campaign over every registered format (`make fuzz`, tests/traces/fuzz_campaign.py) checks the same
thing at scale, and also that what is accepted can be written natively and replayed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from traces.model import TraceError


def only_trace_errors(read: Callable[..., object], path: Path, lenient: Iterable[bool] = (False, True),
                      names: str | None = None) -> None:
    """Read ``path`` (strictly, then leniently): any failure must be a TraceError that names the file.

    ``names`` replaces the file name where the broken file may be another one the reader opens
    (OpenCode's storage tree: the message or part file at fault).

    A bare KeyError, TypeError, ValueError... escapes and fails the test, which is the point.
    """
    for mode in lenient:
        try:
            read(path, lenient=mode)
        except TraceError as e:
            assert (names or path.name) in str(e), f"error does not name {names or path.name}: {e}"
