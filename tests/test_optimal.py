"""Offline bounds from Python (docs/optimal.md): `opt` through simulate, the integrated bounds, the
single-disk replay, the shares, and `prefetchsim reproduce optimal`."""

from __future__ import annotations

import math

import pytest

import prefetchsim as ps
from prefetchsim import optimal
from prefetchsim.cli import main
from conftest import shared_trace


def test_share_of_gain():
    assert optimal.share_of_gain(0.6, 0.5, 0.7) == pytest.approx(0.5)
    assert optimal.share_of_gain(50, 100, 0) == pytest.approx(0.5), "stall: lower is better, same formula"
    assert optimal.share_of_gain(0.4, 0.5, 0.7) < 0
    assert math.isnan(optimal.share_of_gain(0.5, 0.5, 0.5))


def test_opt_runs_at_any_level_and_only_in_the_instant_engine(lirs_trace):
    tr = ps.open_trace(lirs_trace, "lirs")
    opt = ps.simulate(tr, size=2, policy="opt").levels[0]
    lru = ps.simulate(tr, size=2, policy="lru").levels[0]
    # 1 2 3 1 4 5 1 2 with two blocks: MIN keeps 1 throughout (6 misses); LRU misses all but nothing (8).
    assert (opt["misses"], lru["misses"]) == (6, 8)
    two = ps.simulate(tr, levels=[ps.Level(1, "lru"), ps.Level(2, "opt")])
    assert two.levels[1]["misses"] <= ps.simulate(tr, levels=[ps.Level(1, "lru"), ps.Level(2, "arc")]).levels[1]["misses"]
    with pytest.raises(ps.ConfigError, match=r"level\[0\]\.policy.*instant engine only"):
        ps.simulate(tr, size=2, policy="opt", engine={"kind": "timed"})
    with pytest.raises(ps.ConfigError, match="one cache"):
        ps.simulate(tr, levels=[ps.Level(2, "opt", per_client=True)])


def test_integrated_bounds_agree_with_the_simulator(lirs_trace):
    tr = ps.open_trace(lirs_trace, "lirs")
    b = optimal.integrated(tr, 2, 3)
    misses = ps.simulate(tr, size=2, policy="opt").levels[0]["misses"]
    assert b["min_demand"] == {"requests": 8, "elapsed": 8 + 3 * misses, "stall": 3 * misses, "fetches": misses}
    assert b["conservative"]["fetches"] == misses
    low, high = optimal.optimum_range(b, 2, 3)
    assert 0 <= low <= high == min(b["aggressive"]["stall"], b["conservative"]["stall"])
    lru = optimal.single_disk(tr, ps.Level(2, "lru"), 3)
    assert lru["schedule"]["stall"] == 3 * lru["level"]["misses"] == 24
    with pytest.raises(ps.ConfigError, match="fetch time"):
        optimal.integrated(tr, 2, 0)


@pytest.mark.parametrize("fetch_time", [-1, 0, 2**32 + 1])
def test_a_fetch_time_out_of_range_states_the_range_taken(lirs_trace, fetch_time):
    # -1 said "out of range (0 to 4294967296)", though 0 is refused too.
    tr = ps.open_trace(lirs_trace, "lirs")
    for call in (lambda: optimal.integrated(tr, 2, fetch_time), lambda: optimal.single_disk(tr, ps.Level(2), fetch_time),
                 lambda: optimal.bounds_table(tr, 2, ["obl"], fetch_time)):
        with pytest.raises(ps.ConfigError, match=rf"^fetch_time: {fetch_time} is out of range \(1 to 4294967296\)"):
            call()
    assert optimal.integrated(tr, 2, 1)["min_demand"]["requests"] == 8


@pytest.mark.parametrize("cache_blocks", [-1, 0, 2**32 + 1])
def test_a_cache_out_of_range_states_the_range_taken(lirs_trace, cache_blocks):
    # -1 said "cache = -1 is out of range (0 to 4294967296)", naming no argument of integrated and a range
    # 0 is not in; optimum_range(.., 0, ..) was a ZeroDivisionError.
    tr = ps.open_trace(lirs_trace, "lirs")
    b = optimal.integrated(tr, 2, 3)
    for call in (lambda: optimal.integrated(tr, cache_blocks, 3), lambda: optimal.optimum_range(b, cache_blocks, 3),
                 lambda: optimal.bounds_table(tr, cache_blocks, ["obl"], 3)):
        with pytest.raises(ps.ConfigError, match=rf"^cache_blocks: {cache_blocks} is out of range \(1 to 4294967296\)"):
            call()


def test_a_bool_cache_is_refused(lirs_trace):
    # integrated(tr, True, 4) ran with a 1-block cache.
    with pytest.raises(TypeError, match="cache_blocks must be an integer, not bool"):
        optimal.integrated(ps.open_trace(lirs_trace, "lirs"), True, 4)


def test_numpy_integers_are_taken_for_the_fetch_time_and_the_cache(lirs_trace):
    # A fetch time from a NumPy array (a notebook's np.arange of F) was refused as "not int64", while the
    # cache size beside it was taken.
    np = pytest.importorskip("numpy")
    tr = ps.open_trace(lirs_trace, "lirs")
    assert optimal.integrated(tr, np.int64(2), np.int64(3)) == optimal.integrated(tr, 2, 3)
    assert optimal.single_disk(tr, ps.Level(2, "lru"), np.int32(3)) == optimal.single_disk(tr, ps.Level(2, "lru"), 3)
    with pytest.raises(TypeError, match="fetch_time must be an integer, not bool"):
        optimal.integrated(tr, 2, True)


def test_bounds_and_shares_on_a_real_trace():
    tr = ps.open_trace(shared_trace("lirs/sprite.trace.gz"), "lirs")
    rows = {r["scheme"]: r for r in optimal.bounds_table(tr, 500, ["obl"], 10, limit=20_000)}
    assert rows["lru"]["hit_share"] == 0 and rows["opt"]["hit_share"] == 1 and rows["opt+obl"]["hit_share"] == 1
    assert rows["opt"]["hit_ratio"] > rows["lru"]["hit_ratio"]
    assert rows["opt"]["stall"] == rows["min_demand"]["stall"], "the replay of MIN is MIN's demand fetching"
    best = min(rows["aggressive"]["stall"], rows["conservative"]["stall"])
    assert rows["optimum, lowest possible"]["stall"] <= best < rows["opt"]["stall"] < rows["lru"]["stall"]
    assert 0 < rows["opt"]["stall_share"] < 1


def test_reproduce_optimal_prints_the_table(lirs_trace, capsys):
    assert main(["reproduce", "optimal", lirs_trace, "--format", "lirs", "--cache-shares", "0.4",
                 "--prefetchers", "obl"]) == 0
    out = capsys.readouterr().out
    for scheme in ("lru+obl", "opt+obl", "aggressive", "conservative", "optimum, lowest possible"):
        assert scheme in out
    # Fetch times are whole numbers: 2.7 was cut to 2, nan failed without naming the option.
    for opt, value in [("--fetch-times", "2.7"), ("--sensitivity", "nan"), ("--fetch-times", "-1"),
                       ("--fetch-times", "0")]:
        assert main(["reproduce", "optimal", lirs_trace, "--format", "lirs", opt, value]) == 2
        assert opt in capsys.readouterr().err, (opt, value)
    # --limit -1 said "give 0 or more", and 0 was then refused.
    for value in ("-1", "0"):
        with pytest.raises(SystemExit) as exited:
            main(["reproduce", "optimal", lirs_trace, "--format", "lirs", "--limit", value])
        assert exited.value.code == 2 and "give 1 or more" in capsys.readouterr().err, value


def test_reproduce_split_prints_the_bound_and_the_shares():
    from prefetchsim.reproduce import split

    df = split.run(seed=1, requests=20_000, workloads=["mix1"], plot=False)
    wide = df.pivot_table(index="cache_blocks", columns="policy", values="prefetch_hit_rate")
    others = [c for c in wide.columns if c != split.BOUND]
    assert (wide[split.BOUND] >= wide[others].max(axis=1)).all(), "MIN with T2 is above every scheme"
    rows = {r["policy"]: r for r in split.summary(df)}
    assert rows["LRU"]["share_of_min_gain"] == 0 and rows[split.BOUND]["share_of_min_gain"] == 1
    assert 0 < rows["Split 1:1"]["share_of_min_gain"] < 1
    # Every block is requested once: any schedule fetches each block, so the disk bounds the stall.
    assert rows[split.BOUND]["single_disk_stall"] < rows["LRU"]["single_disk_stall"]
    assert all("stall_share" in r for r in rows.values())


@pytest.mark.parametrize("source", ["libcachesim_file", "our_writer"])
def test_opt_equals_libcachesim_belady(source, tmp_path):
    """Belady's MIN in libcachesim 0.3.5 (ranking by the file's next_access_vtime) and `opt` (ranking by our
    pre-pass or the same field) miss exactly as often: on libCacheSim's own oracleGeneral conversion of the
    CloudPhysics sample, and on ARC OLTP written as oracleGeneral by prefetchsim."""
    import gzip
    import shutil

    lcs = pytest.importorskip("libcachesim", reason="the test extra installs libcachesim==0.3.5")
    if source == "libcachesim_file":
        path = tmp_path / "cp.oracleGeneral.bin"
        with gzip.open(shared_trace("cloudphysics-vscsi/cloudPhysicsIO.oracleGeneral.bin.gz"), "rb") as f, \
                open(path, "wb") as g:
            shutil.copyfileobj(f, g)
        fractions = (0.001, 0.01, 0.1)
    else:
        path = tmp_path / "oltp.oracleGeneral.bin"
        ps.open_trace(shared_trace("arc/OLTP.lis.zst"), "arc", mode="objects").convert(path, to="oracle_general")
        fractions = (0.01,)
    tr = ps.open_trace(str(path), "oracle_general")
    fp = tr.footprint()
    for f in fractions:
        cap = max(1, int(f * fp))
        reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE,
                                 lcs.ReaderInitParam(ignore_obj_size=True))
        theirs = lcs.Belady(cache_size=cap).process_trace(reader)[0]
        lv = ps.simulate(tr, size=cap, policy="opt").levels[0]
        assert lv["misses"] == round(theirs * lv["demand_accesses"]), f"{source} at {cap} objects"


def test_reproduce_mithril_has_the_bound_and_mithrils_share():
    import pandas as pd

    from prefetchsim.reproduce import mithril

    for setup in mithril.SETUPS:
        s = mithril.schemes(setup)
        assert s["MIN-Mithril"] == {"policy": "opt", "prefetcher": s["Mithril-LRU"]["prefetcher"]}
    curves = pd.DataFrame([{"trace": "t", "share": 0.01, "scheme": k, "hit_ratio": v}
                           for k, v in {"LRU": 0.2, "Mithril-LRU": 0.3, "MIN-Mithril": 0.6, "AMP": 0.25}.items()])
    (row,) = mithril.gains(curves)
    assert row["Mithril-LRU share of MIN-Mithril gain"] == pytest.approx(0.25)


def test_a_cache_larger_than_the_trace_costs_the_trace_not_the_cache():
    # The tables were sized by cache_blocks: 2**32 blocks allocated 146 GB up front and aborted the
    # interpreter on a trace of a few thousand requests. Such a cache holds the whole trace: every
    # schedule misses only the first reference of each block.
    tr = ps.synthetic("oltp-like", requests=2000, seed=2)
    big = optimal.integrated(tr, 2**32, 2)
    whole = optimal.integrated(tr, tr.footprint(), 2)
    assert big == whole
    assert big["min_demand"]["fetches"] == tr.footprint()


def _requests_csv(path, reqs) -> str:
    """A project CSV of (first block, length) reads."""
    lines = ["# prefetchsim trace: block_size=4096", "time_ns,op,first,len,stream,client"]
    lines += [f"{i},read,{first},{n},0,0" for i, (first, n) in enumerate(reqs)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_the_lower_end_of_the_optimum_is_computed_in_whole_numbers(tmp_path):
    # One request, k = 6, F = 4: A = C = 5, so the low end is max(ceil(5 / (1 + 4/6)), ceil(5 / 2), 1) - 1
    # = 2. In floating point 5 / (1 + 4/6) is 3.0000000000000004 and the range said (3, 4).
    tr = ps.open_trace(_requests_csv(tmp_path / "one.csv", [(1, 1)]))
    b = optimal.integrated(tr, 6, 4)
    assert (b["aggressive"]["elapsed"], b["conservative"]["elapsed"]) == (5, 5)
    assert optimal.optimum_range(b, 6, 4) == (2, 4)


@pytest.mark.parametrize("limit, error", [(-1, ps.ConfigError), (0, ps.ConfigError), (2.5, TypeError),
                                          (True, TypeError)])
def test_a_bad_limit_of_the_single_disk_model_names_it(lirs_trace, limit, error):
    # -1 was a plain ValueError, 2.5 a TypeError naming nothing, True ran one request.
    tr = ps.open_trace(lirs_trace, "lirs")
    for call in (lambda: optimal.integrated(tr, 2, 3, limit=limit), lambda: optimal.bounds_table(tr, 2, [], 3, limit)):
        with pytest.raises(error, match="limit"):
            call()
    assert optimal.integrated(tr, 2, 3, limit=3)["min_demand"]["requests"] == 3


def test_a_level_that_is_neither_a_level_nor_a_table_is_a_type_error(lirs_trace):
    with pytest.raises(ps.ConfigTypeError, match="level must be a Level or a mapping"):
        optimal.single_disk(ps.open_trace(lirs_trace, "lirs"), [ps.Level(2)], 3)


def test_the_single_disk_model_refuses_an_empty_trace_as_simulate_does(tmp_path):
    # integrated, single_disk and bounds_table returned zeros and a hit ratio of 0 for no access at all.
    tr = ps.open_trace(_requests_csv(tmp_path / "empty.csv", []))
    for call in (lambda: optimal.integrated(tr, 2, 3), lambda: optimal.single_disk(tr, ps.Level(2), 3),
                 lambda: optimal.bounds_table(tr, 2, ["obl"], 3), lambda: ps.simulate(tr, size=2, policy="opt")):
        with pytest.raises(ps.TraceError, match="no requests to simulate"):
            call()


def test_opt_runs_on_an_oracle_general_file_read_back_with_id_bytes(tmp_path):
    # A record of two blocks read back with id_bytes is two accesses: its file's next record is not its
    # blocks' next access, so the pre-pass computes them (the file's values were taken and the run refused).
    tr = ps.open_trace(_requests_csv(tmp_path / "two.csv", [(0, 2), (4, 1), (0, 2)]))
    with pytest.warns(UserWarning, match="cover more than one block"):
        tr.convert(str(tmp_path / "two.oracleGeneral.bin"))
    back = ps.open_trace(str(tmp_path / "two.oracleGeneral.bin"), format="oracle_general", id_bytes=4096)
    # A record of two blocks is a request of two blocks to `opt`, which is then no lower bound (a note).
    with pytest.warns(ps.RunNote, match="`opt` served requests of several blocks"):
        same = ps.simulate(tr, size=2, policy="opt").levels[0]
        again = ps.simulate(back, size=2, policy="opt").levels[0]
    assert (again["hits"], again["misses"]) == (same["hits"], same["misses"])


def test_opt_over_requests_of_several_blocks_says_it_is_no_lower_bound(tmp_path):
    # docs/optimal.md's example: requests of blocks 2-4, 1-3 and 1-2 with a cache of 2 blocks, where `opt`
    # misses 6 and LRU 5. The run's notes say so; one-block requests have no note.
    tr = ps.open_trace(_requests_csv(tmp_path / "m.csv", [(2, 3), (1, 3), (1, 2)]))
    with pytest.warns(ps.RunNote, match=r"level\[0\] \(L1\): `opt` served requests of several blocks") as w:
        opt = ps.simulate(tr, size=2, policy="opt")
    assert len(w) == 1 and opt.notes == [str(w[0].message)]
    assert (opt.levels[0]["misses"], ps.simulate(tr, size=2, policy="lru").levels[0]["misses"]) == (6, 5)
    one = ps.open_trace(_requests_csv(tmp_path / "one.csv", [(b, 1) for b in (2, 3, 4, 1, 2, 3, 1, 2)]))
    assert ps.simulate(one, size=2, policy="opt").notes == []
