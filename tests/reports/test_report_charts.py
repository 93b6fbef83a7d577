"""Charts read at a glance (issue 12, "The page itself"): a distinct style per series, stable across
charts; a legend that names every series inside the picture; point labels that never overlap.

Each chart is captured when it is saved (``Figure.savefig`` wrapped) and measured with its own
canvas renderer, as drawn.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text

from reports import charts, score_charts

FAMILIES = ("aider", "amp", "baseagent", "claude-code", "cline", "codex", "copilot-cli", "gemini-cli", "goose",
            "opencode", "openhands", "swe-agent", "five-layer")
NAMES = ["none", *(f"{FAMILIES[i % len(FAMILIES)]}:v{i}" for i in range(38)), "solo:only"]


def _series(fig: Figure) -> dict[str, tuple[str, str, str]]:
    """label → (colour, marker, line style) of every labelled line of the figure (small multiples
    label a line by its variant under its family's panel title: the full name is put back)."""
    from matplotlib.colors import to_hex

    out = {}
    for ax in fig.axes:
        family = ax.get_title(loc="left") if len(fig.axes) > 1 else ""
        for ln in ax.get_lines():
            label = ln.get_label()
            if not isinstance(ln, Line2D) or label.startswith("_"):
                continue
            name = label if not family or label in (family, ax.get_title(loc="left")) else f"{family}:{label}"
            out[name] = (to_hex(ln.get_color()), str(ln.get_marker()), str(ln.get_linestyle()))
    return out


def test_forty_strategies_get_forty_distinct_styles_whatever_the_order() -> None:
    styles = charts.styles(NAMES)
    assert len(styles) == 40
    assert len({(s.color, s.marker, s.linestyle) for s in styles.values()}) == 40
    assert len({s.color for s in styles.values()}) == 40  # here colours alone already differ
    shuffled = NAMES[:]
    random.Random(1).shuffle(shuffled)
    assert charts.styles(shuffled) == styles
    assert styles["none"] == charts.Style(charts.BASELINE_COLOR, "D", "--")
    # a family shares one hue: its variants are shades of it, told apart by line style
    cc = [s for s in NAMES if s.startswith("claude-code")]
    assert len(cc) == 3
    assert len({styles[s].linestyle for s in cc}) == len(cc)


def test_more_families_than_hues_still_give_unique_triples() -> None:
    names = [f"agent{i}:{v}" for i in range(30) for v in ("a", "b", "c")]
    styles = charts.styles(names)
    assert len({(s.color, s.marker, s.linestyle) for s in styles.values()}) == len(names)


def test_styles_are_the_same_in_every_chart_and_every_legend_names_all(tmp_path: Path, saved: list[Figure]) -> None:
    colors = charts.palette(NAMES)
    calls = pd.DataFrame([{"trace": "t", "strategy": s, "call": c, "kind": "agent", "prompt_tokens": 1000 * (c + i),
                           "overflow": False} for i, s in enumerate(NAMES) for c in range(30)])
    charts.context_over_calls(calls, "t", NAMES, colors, tmp_path / "a.png", window=200_000)
    cliffs = pd.DataFrame([{"strategy": s, "rounds": 3, "retention_by_round": {1: 0.9, 2: 0.6 - i / 100, 3: 0.4},
                            "cliff_round": 3} for i, s in enumerate(NAMES)])
    score_charts.retention_by_round(cliffs, colors, tmp_path / "b.png")
    first, second = (_series(f) for f in saved)
    assert set(first) == set(second) == set(NAMES)
    assert first == second
    assert len(set(first.values())) == 40
    assert len(saved[1].axes) > 1  # 40 lines on one plot are a tangle: small multiples, one per family
    for fig in saved:
        renderer = fig.canvas.get_renderer()
        named: set[str] = set()
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is None:  # a panel of one strategy: its title names it
                named |= {ax.get_title(loc="left")} if len(ax.get_lines()) else set()
                continue
            family = ax.get_title(loc="left") if len(fig.axes) > 1 else ""
            named |= {t.get_text() if not family or t.get_text() == family else f"{family}:{t.get_text()}"
                      for t in legend.get_texts()}
            box, page = legend.get_window_extent(renderer), fig.bbox
            assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1, \
                "legend cut off"
        assert named == set(NAMES)


def _crowded(n: int = 40, seed: int = 0) -> pd.DataFrame:
    """``none`` far off and every other strategy within a few percent of the others: the corner cluster."""
    rng = np.random.default_rng(seed)
    names = ["none", *(f"{FAMILIES[i % len(FAMILIES)]}:variant{i}" for i in range(n - 1))]
    return pd.DataFrame({"strategy": names, "cost": np.r_[10.0, rng.uniform(1, 1.3, n - 1)],
                         "retention": np.r_[1.0, rng.uniform(0.9, 1.0, n - 1)],
                         "saving_vs_none": np.r_[0.0, rng.uniform(0.55, 0.62, n - 1)],
                         "cost_vs_none": np.r_[0.0, rng.uniform(-0.45, -0.40, n - 1)],
                         "overflows": np.r_[5, np.zeros(n - 1)]})


def _overlaps(fig: Figure) -> list[tuple[str, str]]:
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    boxes = [(t.get_text(), Text.get_window_extent(t, renderer)) for t in ax.texts]  # the text, not its leader
    return [(a, b) for (a, ba), (b, bb) in itertools.combinations(boxes, 2) if ba.overlaps(bb)]


@pytest.mark.parametrize("n", [6, 12, 40])
@pytest.mark.parametrize("chart", ["cost_vs_saving", "cost_vs_retention"])
def test_point_labels_never_overlap_and_every_strategy_is_named(tmp_path: Path, saved: list[Figure],
                                                                chart: str, n: int) -> None:
    totals = _crowded(n)
    colors = charts.palette(totals.strategy.tolist())
    if chart == "cost_vs_saving":
        charts.cost_vs_saving(totals, colors, tmp_path / "c.png")
    else:
        score_charts.cost_vs_retention(totals, [], colors, tmp_path / "c.png")
    (fig,) = saved
    assert _overlaps(fig) == []
    shown = "\n".join(t.get_text() for t in fig.axes[0].texts)
    assert all(s in shown for s in totals.strategy), "a strategy is neither labelled nor in the key"
    renderer = fig.canvas.get_renderer()
    for t in fig.axes[0].texts:  # labels on the plot, a key beside it: all inside the picture
        box = Text.get_window_extent(t, renderer)
        assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and fig.bbox.y0 <= box.y0 and box.y1 <= fig.bbox.y1, \
            t.get_text()
