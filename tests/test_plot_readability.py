"""`prefetchsim.plot` draws what can be read (issue 18, point 12): equal series are drawn once with every
name in the legend, numbers written as text are placed by value, categories are points rather than a
line, precision is undefined (no point) where nothing was prefetched, crowded bar labels turn upright,
and series that cannot appear on a log axis are named as not drawn rather than listed."""

from __future__ import annotations

import pandas as pd
import pytest
from prefetchsim import plot

pytest.importorskip("matplotlib", reason="the plot extra (prefetchsim[plot]) is not installed")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def _legend(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_series_with_equal_values_are_drawn_once_and_named_together():
    df = pd.DataFrame({"cache_blocks": [10, 20, 10, 20, 10, 20], "scheme": ["A", "A", "B", "B", "C", "C"],
                       "hit_ratio": [0.1, 0.2, 0.1, 0.2, 0.3, 0.4]})
    ax = plot.mrc(df, y="hit_ratio", hue="scheme", logx=False)
    assert len(ax.get_lines()) == 2
    assert _legend(ax) == ["A = B", "C"]


def test_numbers_written_as_text_are_placed_by_value():
    df = pd.DataFrame({"value": ["5", "10", "200"], "hit_ratio": [0.1, 0.2, 0.3]})
    ax = plot.line(df, "value", "hit_ratio", logx=False)
    xs = list(ax.get_lines()[0].get_xdata())
    assert xs == [5.0, 10.0, 200.0]


def test_categories_are_points_not_a_line():
    df = pd.DataFrame({"value": ["miss", "evict", "each_req"], "hit_ratio": [0.1, 0.2, 0.3]})
    ax = plot.line(df, "value", "hit_ratio", sort_x=False)
    assert ax.get_lines()[0].get_linestyle() == "None"


def test_precision_is_undefined_where_nothing_was_prefetched():
    df = pd.DataFrame({"cache_blocks": [10, 20, 40], "precision": [0.0, 0.5, 0.6], "prefetch_issued": [0, 8, 9]})
    ax = plot.line(df, "cache_blocks", "precision", logx=False)
    ys = list(ax.get_lines()[0].get_ydata())
    assert ys[0] != ys[0] and ys[1:] == [0.5, 0.6]


def test_many_bar_labels_stand_upright():
    df = pd.DataFrame({"case": [f"trace-{i} / 5% / 200%" for i in range(24)], "level": 0, "name": "client",
                       "hit_ratio": 0.5})
    df = pd.concat([df, df.assign(level=1, name="server", hit_ratio=0.2)])
    ax = plot.level_hit_ratios(df, x="case")
    assert {t.get_rotation() for t in ax.get_xticklabels()} == {90.0}


def test_a_series_without_positive_values_is_not_listed_on_a_log_axis():
    df = pd.DataFrame({"cache_blocks": [10, 20] * 2, "prefetcher": ["none"] * 2 + ["obl"] * 2,
                       "unused_prefetch": [0, 0, 5, 9]})
    ax = plot.unused_prefetch(df, hue="prefetcher")
    assert len(ax.get_lines()) == 1
    assert _legend(ax) == ["obl"]
    assert "not drawn (no value > 0): none" in ax.get_legend().get_title().get_text()


def test_a_legend_of_many_series_sits_beside_the_axes():
    df = pd.DataFrame({"cache_blocks": [10, 20] * 5, "policy": [p for p in "abcde" for _ in range(2)],
                       "miss_ratio": [0.9 - 0.1 * i - 0.01 * j for i in range(5) for j in range(2)]})
    ax = plot.mrc(df, hue="policy", logx=False)
    anchor = ax.get_legend().get_bbox_to_anchor().transformed(ax.transAxes.inverted())
    assert anchor.x0 > 1.0
