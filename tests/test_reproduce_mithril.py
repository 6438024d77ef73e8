"""`prefetchsim reproduce mithril`: the curves and parameter studies on the built-in workload (a smaller run
than the command's default, same shape), the paper's gains computed as the paper does, and the headline
table on a real trace (docs/papers/mithril.md)."""

from __future__ import annotations

import math
import os

import prefetchsim as ps
import pytest
from prefetchsim.reproduce import mithril

from conftest import shared_trace


@pytest.fixture(scope="module")
def results():
    tr = ps.synthetic("associations", requests=300_000, groups=4_000, **mithril.BUILTIN)
    return mithril.run(traces=[tr], shares=(0.01, 0.05, 0.2), setup="shipped")


def test_the_builtin_workload_separates_every_scheme(results):
    curves, _ = results
    for share, sub in curves.groupby("share"):
        hr = dict(zip(sub.scheme, sub.hit_ratio))
        print(share, {k: round(v, 4) for k, v in hr.items()})
        # Mithril gains over every base; by more than 5% until the cache holds most groups.
        gain = 1.05 if share <= 0.05 else 1.0
        assert hr["Mithril-LRU"] > hr["LRU"] * gain
        assert hr["Mithril-AMP"] > hr["AMP"] * gain
        assert hr["Mithril-FIFO"] > hr["FIFO"] * gain
        # Its sequential runs give AMP something to do: AMP and LRU do not coincide.
        assert hr["AMP"] > hr["LRU"] + 0.02


def test_precision_is_undefined_where_nothing_was_prefetched(results):
    curves, studies = results
    plain = curves[curves.scheme.isin(["LRU", "FIFO"])]
    assert (plain.prefetch_issued == 0).all() and plain.precision.isna().all()
    assert curves[curves.scheme == "Mithril-LRU"].precision.notna().all()
    assert studies.precision.isna().sum() == (studies.prefetch_issued == 0).sum()


def test_gains_compare_mithril_lru_with_amp_for_the_papers_36_percent(results):
    curves, _ = results
    for g in mithril.gains(curves):
        sub = curves[(curves.trace == g["trace"]) & (curves.share == g["share"])]
        hr = dict(zip(sub.scheme, sub.hit_ratio))
        assert g["Mithril-LRU vs AMP"] == pytest.approx(100 * (hr["Mithril-LRU"] / hr["AMP"] - 1))
        assert g["Mithril-AMP vs AMP"] == pytest.approx(100 * (hr["Mithril-AMP"] / hr["AMP"] - 1))
        assert g["Mithril-LRU vs LRU"] == pytest.approx(100 * (hr["Mithril-LRU"] / hr["LRU"] - 1))


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
    # A higher min support is more selective: fewer hits, and at 4 and above nothing recurs often enough
    # here to be mined (precision undefined). Unlike the paper's Figure 19, precision at 3 is not above
    # that at 2 on this workload; min support 1 (every missed block mined) is by far the least precise.
    assert minsup["2"] > minsup["3"] > minsup["4"]
    assert math.isnan(minsup_prec["4"]) and minsup_prec["1"] < 0.5 * minsup_prec["2"]
    meta, _ = hr("max_metadata")
    assert meta["0.01"] < meta["0.1"]
    # With changing associations, long prefetch lists keep stale entries: precision drops (§5.4).
    _, pf_prec = hr("pf_list_size")
    assert pf_prec["8"] < pf_prec["2"] < pf_prec["1"]


def test_figures_draw_curves_with_precision_and_studies_as_categories(results, tmp_path):
    pytest.importorskip("matplotlib", reason="plots need the plot extra")
    curves, studies = results
    written = mithril._plots(curves, studies, str(tmp_path))
    names = sorted(os.path.basename(w) for w in written)
    want = sorted(["mithril-associations.png"] + [f"mithril-associations-{p}.png" for p in mithril.STUDIES])
    assert names == want
    assert all(os.path.getsize(w) > 10_000 for w in written)
    # Without the studies, the curves alone.
    only = mithril._plots(curves, type(studies)(), str(tmp_path / "c"))
    assert [os.path.basename(w) for w in only] == ["mithril-associations.png"]


def test_authors_setup_differs_from_shipped_where_the_method_says():
    a, s = mithril.schemes("authors"), mithril.schemes("shipped")
    am, sm = a["Mithril-LRU"]["prefetcher"], s["Mithril-LRU"]["prefetcher"]
    assert (am["lookahead"], am["min_support"], am["max_support"], am["clock"]) == (20, 2, 8, "request")
    assert "lookahead" not in sm and "clock" not in sm
    assert a["PG"]["options"] == {"charge_metadata": True} and s["PG"]["options"] == {"charge_metadata": False}
    assert a["Mithril-AMP"]["options"] == {"first_hit": "stay_second"}
    assert a["Mithril-AMP"]["prefetcher"]["first"]["skip_sequential"] == 1
    assert a["Mithril-AMP"]["prefetcher"]["second"] == {"name": "amp", "first_hit_stay": False}
    assert s["Mithril-AMP"]["options"] == {} and s["Mithril-AMP"]["prefetcher"]["second"] == "amp"


def test_headline_on_a_real_trace_at_both_units():
    """The headline table's shape on the CloudPhysics sample (the real traces run by hand:
    `prefetchsim reproduce mithril --trace real`)."""
    path = shared_trace("cloudphysics-vscsi/cloudPhysicsIO.vscsi.gz")
    # The sample has requests of several 4 KiB blocks, over which the `opt` rows are no lower bound.
    with pytest.warns(ps.RunNote, match="`opt` served requests of several blocks"):
        df = mithril.headline(traces=[path + ":vscsi"], sensitivity=False)
    assert sorted(df.unit.unique()) == [4096, 65536]
    for unit, sub in df.groupby("unit"):
        fp = sub.footprint_blocks.iloc[0]
        assert (sub.cache_blocks == max(1, fp // 100)).all()
        assert set(sub.scheme) == set(mithril.schemes("authors"))
    # The 64 KiB footprint is the 4 KiB one grouped by 16 (each 64 KiB block holds 1 to 16 4 KiB blocks).
    fp4, fp64 = (df[df.unit == u].footprint_blocks.iloc[0] for u in (4096, 65536))
    assert fp4 / 16 <= fp64 < fp4
    summ = mithril.summary(df)
    row = next(r for r in summ if r["unit"] == "64 KiB" and r["comparison"] == "Mithril-LRU vs AMP")
    assert row["paper_mean_pct"] == 36.0
    # 113,872 requests: under the paper's 0.5 M bar, so only the all-traces mean is defined.
    assert math.isnan(row["mean_pct (>=0.5M req)"]) and not math.isnan(row["mean_pct (all)"])


def test_id_bytes_groups_ids_into_larger_blocks(lirs_trace):
    """4 KiB ids read with 64 KiB blocks: ids 1..5 fall in block 0 (ids 0..15)."""
    tr = ps.open_trace(lirs_trace, "lirs", block_size=65536, id_bytes=4096)
    assert tr.footprint() == 1
    assert ps.open_trace(lirs_trace, "lirs", block_size=65536).footprint() == 5
    with pytest.raises(ps.ConfigError, match="trace.id_bytes"):
        ps.open_trace(lirs_trace, "lirs", id_bytes=0)


def test_no_studies_writes_no_studies_csv(tmp_path):
    # --no-studies wrote mithril-studies.csv holding one newline (an empty frame has no header either).
    tr = ps.synthetic("associations", requests=5_000, groups=200, **mithril.BUILTIN)
    curves, studies = mithril.run(traces=[tr], shares=(0.05,), studies=False, out_dir=str(tmp_path), plot=False,
                                  setup="shipped")
    assert studies.empty and not curves.empty
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mithril-curves.csv"]


def test_no_studies_removes_an_earlier_runs_studies(tmp_path, capsys):
    # An earlier run's studies were left beside this run's curves, to be read as this run's.
    for name in ("mithril-studies.csv", "mithril-associations-lookahead.png", "mithril-other.png"):
        (tmp_path / name).write_text("old")
    tr = ps.synthetic("associations", requests=5_000, groups=200, **mithril.BUILTIN)
    mithril.run(traces=[tr], shares=(0.05,), studies=False, out_dir=str(tmp_path), plot=False, setup="shipped")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mithril-curves.csv", "mithril-other.png"]
    assert "mithril-studies.csv" in capsys.readouterr().err


def test_a_missing_precision_is_empty_in_csv_and_null_in_json():
    # The precision of a scheme that prefetched nothing is NaN; CSV printed "nan" and JSON a bare NaN,
    # which is not JSON.
    import csv
    import io
    import json

    from prefetchsim._table import emit

    rows = [{"scheme": "LRU", "precision": math.nan}, {"scheme": "AMP", "precision": 0.5}]
    out = io.StringIO()
    emit(rows, "json", out)
    assert [json.loads(line)["precision"] for line in out.getvalue().splitlines()] == [None, 0.5]
    out = io.StringIO()
    emit(rows, "csv", out)
    assert [r["precision"] for r in csv.DictReader(io.StringIO(out.getvalue()))] == ["", "0.5"]
    out = io.StringIO()
    emit(rows, "table", out)
    assert "nan" not in out.getvalue()
