"""A module imported on first use (issue 28: nothing paid before the first replay).

The statistics and the verdict use numpy and pandas in many functions, but only once the replays
are done; importing them with the command line's options (the parser reads the verdict's weights)
cost the main process a quarter of a second before any replay. ``lazy("pandas")`` stands in for the
module until an attribute is read, then the real module's attribute is returned (the real module
is imported once; ``import`` finds it in ``sys.modules`` after that).
"""

from __future__ import annotations

import importlib
from typing import Any


class _Lazy:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported on first use>"


def lazy(name: str) -> Any:
    """A stand-in for ``import name`` whose attributes import the module when first read."""
    return _Lazy(name)
