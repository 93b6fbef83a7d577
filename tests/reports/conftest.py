"""Fixtures the chart tests share."""

from __future__ import annotations

import pytest
from matplotlib.figure import Figure


@pytest.fixture
def saved(monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    """Every figure a chart function saves, kept open for the test to inspect."""
    figures: list[Figure] = []
    real = Figure.savefig

    def spy(self: Figure, *args, **kwargs):
        out = real(self, *args, **kwargs)
        figures.append(self)
        return out

    monkeypatch.setattr(Figure, "savefig", spy)
    return figures
