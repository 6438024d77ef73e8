"""`prefetchsim reproduce pfc`: the PFC grid's shape, its derived tables and the CLI, on a few cases with
short workloads (the full 96-case grid is run by hand: README "PFC")."""

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


def test_cli_writes_the_tables_and_plots(tmp_path):
    out = tmp_path / "pfc"
    p = subprocess.run([sys.executable, "-m", "prefetchsim", "reproduce", "pfc", "--traces", "multi-like",
                        "--requests", "1500", "--version", "000", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "Table 1" in p.stdout and "PFC A" in p.stdout
    for f in ("pfc-runs.csv", "pfc-table1.csv", "pfc-summary.csv"):
        assert os.path.getsize(out / f) > 0
    pngs = [f for f in os.listdir(out) if f.endswith(".png")]
    assert any(f.startswith("pfc-rt-") for f in pngs) and any(f.startswith("pfc-table1-") for f in pngs), pngs
