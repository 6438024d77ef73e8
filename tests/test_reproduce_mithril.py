"""`prefetchsim reproduce mithril`: Mithril's hit-ratio curves and parameter studies on its target
workload (a smaller run than the command's default, same shape)."""

from __future__ import annotations

import os

import prefetchsim as ps
import pytest
from prefetchsim.reproduce import mithril


@pytest.fixture(scope="module")
def results():
    tr = ps.synthetic("associations", requests=200_000, groups=4_000)
    return mithril.run(traces=[tr], shares=(0.01, 0.05, 0.2))


def test_mithril_raises_the_hit_ratio_over_every_base_at_every_size(results):
    curves, _ = results
    for share, sub in curves.groupby("share"):
        hr = dict(zip(sub.scheme, sub.hit_ratio))
        print(share, {k: round(v, 4) for k, v in hr.items()})
        assert hr["Mithril-LRU"] > hr["LRU"] * 1.05
        assert hr["Mithril-AMP"] > hr["AMP"] * 1.05
        assert hr["Mithril-FIFO"] > hr["LRU"]
        # Sequential prefetching finds nothing in scattered associations.
        assert abs(hr["AMP"] - hr["LRU"]) < 0.01


def test_parameter_studies_show_the_papers_trends(results):
    _, studies = results
    def hr(param):
        sub = studies[studies.parameter == param]
        return dict(zip(sub.value, sub.hit_ratio)), dict(zip(sub.value, sub.precision))
    look, look_prec = hr("lookahead")
    # Hit ratio rises with the lookahead range, then levels off; precision falls slightly.
    assert look["5"] < look["20"] <= look["50"] * 1.01
    assert look_prec["200"] <= look_prec["5"]
    minsup, minsup_prec = hr("min_support")
    # A higher min support is more selective: more precise, fewer hits.
    assert minsup["2"] > minsup["3"] and minsup_prec["3"] >= minsup_prec["2"]
    meta, _ = hr("max_metadata")
    assert meta["0.01"] < meta["0.1"]
    rec, _ = hr("record")
    assert rec["each_req"] >= rec["miss"] * 0.95


def test_figures_are_drawn_without_the_parameter_studies(results, tmp_path):
    # `reproduce mithril --no-studies --out DIR` draws the curves alone.
    pytest.importorskip("matplotlib", reason="plots need the plot extra")
    curves, studies = results
    written = mithril._plots(curves, type(studies)(), str(tmp_path))  # what run(studies=False) returns
    assert [os.path.basename(w) for w in written] == [f"mithril-{t}.png" for t in sorted(curves.trace.unique())]
    assert all(os.path.getsize(w) > 10_000 for w in written)
