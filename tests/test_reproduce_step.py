"""`prefetchsim reproduce step`: the STEP comparisons at a tiny scale (a few thousand requests): every
scheme runs on every case, the rows carry the metrics the table needs, the plots and the CSV are
written, the CLI prints the table, and a scheme's settings reach the server (a prefetcher that does not
prefetch has nothing unused, Linux's window grows with RA#)."""

from __future__ import annotations

import os

import pytest
from prefetchsim import _core
from prefetchsim.cli import main
from prefetchsim.reproduce import step

REQUESTS = 3000


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("step")
    df = step.run(requests=REQUESTS, out_dir=str(out))
    return df, out


def test_every_scheme_runs_on_every_case(results):
    df, _ = results
    assert len(df) == len(step.WORKLOADS) * len(step.SETUPS) * len(step.SCHEMES)
    for (w, setup), sub in df.groupby(["workload", "setup"]):
        assert list(sub.scheme) == list(step.SCHEMES), (w, setup)
        assert (sub.requests == REQUESTS).all()
        assert (sub.rt_mean_ms > 0).all() and (sub.makespan_ms > 0).all()
        assert ((sub.prefetch_hit_ratio >= 0) & (sub.prefetch_hit_ratio <= 1)).all()
        assert (sub.unused_prefetch <= sub.prefetch_issued).all()
        # The slowdown is measured against PM-TA of the same case.
        assert sub.loc[sub.scheme == "PM-TA", "slowdown_vs_pmta_pct"].iloc[0] == 0
        ra = sub.set_index("scheme").makespan_ms
        assert sub.set_index("scheme").slowdown_vs_pmta_pct["RA256"] == pytest.approx(
            100 * (ra["RA256"] / ra["PM-TA"] - 1))


def test_the_schemes_reach_the_server(results):
    df, _ = results
    local = df_case(df, "oltp-spread", "local")
    # Long interleaved sequential streams: a larger Linux window prefetches more of them; STEP's schemes
    # find the streams and prefetch most of what is read.
    assert local.prefetch_hit_ratio["RA2048"] > local.prefetch_hit_ratio["RA64"]
    for s in ("PM-SA", "PM-TA", "PM-BB"):
        assert local.prefetch_hit_ratio[s] > 0.8, s
    net = df[df.setup == "network"]
    assert (net.server_blocks > 0).all()


def test_diff_and_tar_read_source_trees_file_by_file():
    # diff alternates whole files of two trees (stream 0), tar reads a third (stream 1) (§6.3.2).
    tr = step._trace("diff+tar", 400, 1)
    head = tr.head(400)
    assert set(head.stream) == {0, 1}
    diff = head[head.stream == 0]
    spacing = (8 << 30) // step.BLOCK_SIZE
    trees = (diff["first"] // spacing).tolist()
    assert set(trees) == {0, 1}
    assert set(head[head.stream == 1]["first"] // spacing) == {2}
    # Both trees are read in the same order: the k-th file of the copy sits where the original's does.
    starts = {t: sorted(diff[diff["first"] // spacing == t]["first"] % spacing) for t in (0, 1)}
    n = min(len(starts[0]), len(starts[1]))
    assert n > 50 and starts[0][: n - 10] == starts[1][: n - 10]


def test_step_leads_on_concurrent_diff_and_tar(results):
    # The paper's concurrent diff + tar (§6.3.2, Fig. 14: networked, against Linux's default read-ahead and
    # PM-SA) and the same locally, where every RA# falls far behind. At this size (seed 1) STEP is +5.6%
    # over RA256 and +5.1% over PM-SA networked (seeds 1-5: -0.9% to +4.5% over the best RA#, +0.7% to +8.1%
    # over PM-SA), +215% over every RA# and +32% over PM-SA locally. Modelled as two endless scans, diff+tar
    # had RA1024 27% ahead of STEP.
    df, _ = results
    local = df_case(df, "diff+tar", "local").makespan_ms
    for other in ("RA64", "RA256", "RA1024", "RA2048", "PM-SA"):
        assert local["PM-TA"] < local[other], other
    net = df_case(df, "diff+tar", "network").makespan_ms
    for other in ("RA256", "PM-SA"):
        assert net["PM-TA"] < net[other], other


def test_step_leads_on_the_paper_like_interleaved_workload(results):
    # Long sequential streams spread over the disk, interleaved (the paper's OLTP traces, §3, Fig. 3) on
    # the default 7200 rpm disk: Linux's single read-ahead state keeps restarting, PM-SA prefetches only
    # for high-confidence streams; STEP also prefetches for the thrashing ones. At this size the margins
    # are +196% to +245% over every RA# and +7.2% to +11.9% over PM-SA (seeds 1-5).
    assert step.DISK == "hdd7200"
    t = df_case(results[0], "oltp-spread", "local").makespan_ms
    for other in ("RA64", "RA256", "RA1024", "RA2048", "PM-SA"):
        assert t["PM-TA"] < t[other], other


def df_case(df, workload, setup):
    return df[(df.workload == workload) & (df.setup == setup)].set_index("scheme")


def test_csv_and_plots_are_written(results):
    df, out = results
    assert os.path.getsize(out / "step.csv") > 0
    for setup in step.SETUPS:
        assert os.path.getsize(out / f"step-{setup}.png") > 0


def test_verdict_compares_step_with_linux_and_pm_sa(results):
    df, _ = results
    rows = step.verdict(df)
    assert {(r["workload"], r["setup"]) for r in rows} == {(w, s) for w in step.WORKLOADS for s in step.SETUPS}
    for r in rows:
        sub = df[(df.workload == r["workload"]) & (df.setup == r["setup"])].set_index("scheme")
        assert r["vs_pmsa_pct"] == pytest.approx(100 * (sub.makespan_ms["PM-SA"] / sub.makespan_ms["PM-TA"] - 1))
        assert r["best_linux"] in [s for s in step.SCHEMES if s.startswith("RA")]


def test_cli_prints_the_table_for_a_given_trace(tmp_path, capsys):
    # An SPC trace (ASU, LBA in sectors, bytes, op, seconds): two interleaved 32 KiB sequential scans.
    trace = tmp_path / "t.spc"
    trace.write_text("".join(f"{i % 2},{(i % 2) * 800000 + i // 2 * 64},32768,r,{i * 0.001:.3f}\n"
                             for i in range(400)))
    rc = main(["reproduce", "step", "--workload", "none", "--trace", f"{trace}:spc", "--no-plot"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "mean response time (ms)" in text and "PM-TA" in text and "RA256" in text and "t.spc" in text


def test_unknown_names_are_errors():
    with pytest.raises(_core.ConfigError, match="unknown workload 'oltp'"):
        step.run(workloads=["oltp"], requests=10)
    with pytest.raises(_core.ConfigError, match="unknown scheme"):
        step.run(schemes=["PM-XX"], requests=10)
