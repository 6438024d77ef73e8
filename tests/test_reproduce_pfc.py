"""`prefetchsim reproduce pfc`: the PFC grid's shape, its derived tables, the load calibration, the
paper's figures beside ours, the sensitivity sweep and the CLI, on a few cases with short workloads (the
full 96-case grid is run by hand: docs/papers/pfc.md; `test_full_grid` is marked slow)."""

from __future__ import annotations

import os
import subprocess
import sys

import prefetchsim as ps
import pytest
from prefetchsim.reproduce import pfc

REQ = 4000


@pytest.fixture(scope="module")
def grid():
    return pfc.run(traces=["oltp-like", "multi-like"], requests=REQ, algorithms=["RA", "Linux"], versions=["A", "B"])


def test_grid_has_every_case_and_scheme(grid):
    runs, table1, summ = grid
    # 2 traces x 2 algorithms x 2 L1 sizes x 4 ratios, native + DU + PFC A + PFC B, and the two
    # ablations on the open-loop trace only.
    cases = 2 * 2 * 2 * 4
    assert len(runs) == cases * 4 + cases // 2 * 2
    assert set(runs[runs.trace == "multi-like"].replay) == {"closed"}
    assert set(runs[runs.trace == "oltp-like"].replay) == {"open"}
    assert set(runs[runs.trace == "multi-like"].scheme) == {"native", "DU", "PFC"}
    assert (runs.requests == REQ).all()
    assert (runs.rt_mean_ms > 0).all()
    assert list(summ.scheme) == ["PFC A", "PFC B"]
    assert (summ.cases == cases).all()


def test_only_pfc_runs_bypass_and_read_more(grid):
    runs, _, _ = grid
    plain = runs[runs.scheme.isin(["native", "DU"])]
    assert (plain.l2_bypass_reads + plain.l2_silent_hits + plain.l2_readmore_blocks == 0).all()
    full = runs[runs.scheme == "PFC"]
    assert (full.l2_bypass_reads + full.l2_silent_hits > 0).all()
    assert (full.l2_readmore_blocks > 0).any()
    assert (runs[runs.scheme == "bypass-only"].l2_readmore_blocks == 0).all()
    ro = runs[runs.scheme == "readmore-only"]
    assert (ro.l2_bypass_reads + ro.l2_silent_hits == 0).all()
    # DU changes what L2 keeps somewhere in the grid.
    nat = runs[runs.scheme == "native"].set_index(pfc.CASE)
    du = runs[runs.scheme == "DU"].set_index(pfc.CASE)
    assert (nat.l2_hit_ratio != du.l2_hit_ratio.reindex(nat.index)).any()


def test_table1_and_summary_follow_from_the_runs(grid):
    runs, table1, summ = grid
    key = dict(trace="oltp-like", algorithm="RA", size="200%-H")
    sel = lambda df: df[(df.trace == key["trace"]) & (df.algorithm == key["algorithm"]) & (df["size"] == key["size"])]  # noqa: E731
    r = sel(runs)
    base = r[r.scheme == "native"].rt_mean_ms.item()
    a = r[(r.scheme == "PFC") & (r.version == "A")].rt_mean_ms.item()
    row = sel(table1)
    assert row[row.scheme == "PFC A"].improvement_pct.item() == pytest.approx(100 * (base - a) / base)
    t = table1[table1.scheme == "PFC A"]
    s = summ[summ.scheme == "PFC A"].iloc[0]
    assert s.improved == (t.improvement_pct > 0).sum()
    assert s.mean_pct == pytest.approx(t.improvement_pct.mean())
    assert s.max_pct == pytest.approx(t.improvement_pct.max())
    assert s.l2_sped_up + s.l2_slowed_down <= s.cases
    wide = pfc.table1_wide(table1, "PFC B")
    assert list(wide.columns) == ["RA", "Linux"] and len(wide) == 16


def test_bad_arguments_are_errors():
    with pytest.raises(ps.ConfigError, match="version"):
        pfc.run(traces=["oltp-like"], requests=100, versions=["C"])
    with pytest.raises(ps.ConfigError, match="algorithm"):
        pfc.run(traces=["oltp-like"], requests=100, algorithms=["XYZ"])


def test_the_open_loop_load_is_calibrated_to_the_target_native_utilisation(grid):
    runs, _, _ = grid
    oltp = runs[runs.trace == "oltp-like"]
    assert oltp.time_scale.nunique() == 1 and oltp.time_scale.iloc[0] != 1.0
    # The probe (the first requests of every native case) lands within the tolerance of the target.
    assert abs(oltp.load_probe.iloc[0] - pfc.DEFAULT_LOAD) <= 0.03
    assert (oltp.load_target == pfc.DEFAULT_LOAD).all()
    # A higher target packs the arrivals closer: a smaller scale, a busier disk.
    tr = ps.synthetic("oltp-like", **pfc.workload_params("oltp-like", REQ))
    lo, u_lo = pfc.calibrate_load(tr, tr.footprint(), 0.3, ["RA"], prefix=REQ)
    hi, u_hi = pfc.calibrate_load(tr, tr.footprint(), 0.8, ["RA"], prefix=REQ)
    assert hi < lo and u_hi > u_lo
    with pytest.raises(ps.ConfigError, match="load"):
        pfc.calibrate_load(tr, tr.footprint(), 1.5, ["RA"])


def test_workloads_are_calibrated_to_the_papers_reuse_and_random_share():
    for name, reuse, random in (("oltp-like", 19.4, 0.11), ("web-like", 1.22, 0.74)):
        info = ps.synthetic(name, **pfc.workload_params(name, pfc.DEFAULT_REQUESTS)).info()
        assert info["bytes_accessed"] / info["footprint_bytes"] == pytest.approx(reuse, rel=0.03), name
        assert info["random_share"] == pytest.approx(random, abs=0.02), name
        assert info["read_share"] == 1.0
    # A shorter run keeps the reuse (the footprint shrinks with it); the reuse factor moves it.
    info = ps.synthetic("oltp-like", **pfc.workload_params("oltp-like", 50_000, reuse=2.0)).info()
    assert info["bytes_accessed"] / info["footprint_bytes"] == pytest.approx(2 * 19.4, rel=0.1)


def test_prefetch_io_and_a_rule_reach_the_configs():
    _, cfgs = pfc.configs(1000, "open", None, ["RA"], ["A"], False, sizes=["5%-L"])
    assert {c["engine"]["prefetch_io"] for c in cfgs} == {"apart"}
    pf = [c["level"][1]["pfc"] for c in cfgs if "pfc" in c["level"][1]]
    assert pf == [{"version": "A", "a_sticky_zero": True}]
    _, cfgs = pfc.configs(1000, "open", None, ["RA"], ["A", "B"], False, sizes=["5%-L"], prefetch_io="joined",
                          a_rule="literal")
    assert {c["engine"]["prefetch_io"] for c in cfgs} == {"joined"}
    assert [c["level"][1]["pfc"] for c in cfgs if "pfc" in c["level"][1]] == [{"version": "A"}, {"version": "B"}]
    with pytest.raises(ps.ConfigError, match="prefetch_io"):
        pfc.run(traces=["oltp-like"], requests=100, prefetch_io="sideways")
    with pytest.raises(ps.ConfigError, match="size"):
        pfc.run(traces=["oltp-like"], requests=100, sizes=["7%-H"])


def test_the_papers_table_is_printed_beside_ours(grid):
    _, table1, _ = grid
    d = pfc.paper_distance(table1)
    # oltp-like and multi-like stand for OLTP and Multi: RA and Linux at the four printed sizes, both versions.
    assert len(d) == 2 * 2 * 2 * 4
    row = d[(d.scheme == "PFC A") & (d.algorithm == "RA") & (d["size"] == "200%-H")].iloc[0]
    assert row.paper_pct == 31.53
    assert row.diff_pct == pytest.approx(row.ours_pct - 31.53)
    text = pfc._paper_beside(table1, "PFC A")
    assert "31.53)" in text and "mean |ours - paper|" in text


def test_sensitivity_sweeps_one_axis_around_the_base(tmp_path):
    df = pfc.sensitivity(axes=["model"], traces=["oltp-like"], algorithms=["RA"], sizes=["200%-H", "5%-L"],
                         base={"requests": 3000}, out_dir=str(tmp_path))
    assert list(df.value.unique()) == ["base", "A literal", "joined I/O"]
    assert set(df.scheme) == {"PFC A", "PFC B"} and (df.cases == 2).all()
    assert ((df.improved >= 0) & (df.improved <= 2)).all()
    assert (df.native_disk_utilization > 0).all()
    assert os.path.getsize(tmp_path / "pfc-sensitivity.csv") > 0
    assert os.path.getsize(tmp_path / "pfc-sensitivity-model.png") > 0
    with pytest.raises(ps.ConfigError, match="axis"):
        pfc.sensitivity(axes=["colour"])


def test_cli_writes_the_tables_and_plots(tmp_path):
    out = tmp_path / "pfc"
    p = subprocess.run([sys.executable, "-m", "prefetchsim", "reproduce", "pfc", "--traces", "multi-like",
                        "--requests", "1500", "--version", "000", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "Table 1" in p.stdout and "PFC A" in p.stdout
    assert "PFC A (paper)" in p.stdout and "mean |ours - paper|" in p.stdout
    assert "s wall" in p.stderr and "s CPU" in p.stderr
    for f in ("pfc-runs.csv", "pfc-table1.csv", "pfc-summary.csv", "pfc-paper.csv"):
        assert os.path.getsize(out / f) > 0
    pngs = [f for f in os.listdir(out) if f.endswith(".png")]
    assert any(f.startswith("pfc-rt-") for f in pngs) and any(f.startswith("pfc-table1-") for f in pngs), pngs


@pytest.mark.slow
def test_full_grid(tmp_path):
    """The paper's 96 cases at 200,000 requests, both versions and the ablations (minutes on 2 cores)."""
    runs, table1, summ = pfc.run(out_dir=str(tmp_path), plot=False)
    assert (summ.cases == 96).all()
    assert len(table1[table1.scheme == "DU"]) == 96
