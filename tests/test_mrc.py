"""Miss-ratio curves (ps.mrc, prefetchsim mrc): the one-pass exact curve equals the engine's LRU at every
size, SHARDS at rate 1 equals it, sampled runs at rate 1 equal full runs, bad parameters name the field."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import prefetchsim as ps
from prefetchsim.cli import main

from conftest import shared_trace


def _lirs(tmp_path, blocks, name="t.lirs"):
    p = tmp_path / name
    p.write_text("".join(f"{b}\n" for b in blocks))
    return ps.open_trace(str(p), "lirs")


def _assert_exact_equals_engine(tr, limit=None):
    ex = ps.mrc(tr, [1], method="exact", limit=limit)
    fp = int(ex.attrs["footprint"])
    sizes = list(range(1, fp + 2))
    ex = ps.mrc(tr, sizes, method="exact", limit=limit)
    full = ps.mrc(tr, sizes, method="full", limit=limit, threads=0)
    assert list(ex["capacity_blocks"]) == sizes
    # The same counts give the same float: exact equality, size by size.
    for s, a, b in zip(sizes, ex["miss_ratio"], full["miss_ratio"]):
        assert a == pytest.approx(b, abs=1e-12), f"size {s}: curve {a}, engine {b}"


def test_exact_curve_equals_engine_lru_at_every_size_on_a_real_trace_prefix():
    # w106 has one block per request, where the engine is exactly Mattson's LRU (docs/mrc.md).
    tr = ps.open_trace(shared_trace("cloudphysics-w106/w106.trace.xz"), "u32le")
    _assert_exact_equals_engine(tr, limit=1500)


def test_exact_curve_equals_engine_lru_at_every_size_on_a_synthetic_trace(tmp_path):
    blocks = [(i * 7) % 97 if i % 3 else (i * 13) % 41 for i in range(1500)]
    _assert_exact_equals_engine(_lirs(tmp_path, blocks))


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=40), min_size=1, max_size=150))
def test_exact_curve_equals_engine_lru_on_random_traces(tmp_path_factory, blocks):
    _assert_exact_equals_engine(_lirs(tmp_path_factory.mktemp("r"), blocks))


def test_shards_at_rate_one_equals_the_exact_curve():
    tr = ps.synthetic("oltp-like", requests=3000, seed=3)
    ex = ps.mrc(tr, points=40)
    sizes = [int(s) for s in ex["capacity_blocks"]]
    ex = ps.mrc(tr, sizes)
    # Fixed-size with room for every block: rate 1, through the hashing and sampling path.
    sh = ps.mrc(tr, sizes, method="shards", rate=1.0, max_samples=10**9, seed=5)
    assert sh.attrs["rate"] == 1.0
    assert list(sh["miss_ratio"]) == list(ex["miss_ratio"])
    assert list(sh["request_miss_ratio"]) == list(ex["request_miss_ratio"])


def test_fixed_size_shards_lowers_the_rate_and_estimates_the_curve():
    tr = ps.synthetic("oltp-like", requests=20_000, seed=1)
    ex = ps.mrc(tr, ["10%", "50%"])
    sh = ps.mrc(tr, [int(s) for s in ex["capacity_blocks"]], method="shards", max_samples=500)
    assert sh.attrs["rate"] < 1.0
    assert (sh["miss_ratio"] - ex["miss_ratio"]).abs().max() < 0.1


@pytest.mark.parametrize("limit", [30_000, 100_000])
def test_shards_reports_the_requests_read_and_its_estimates_under_their_own_names(limit):
    # attrs["requests"] was the sampled requests weighed 1/R: P6 at 1% "had" 1,628,100 requests for 519,711
    # (the study's whole trace; slices keep the test short).
    tr = ps.open_trace(shared_trace("arc/P6.lis.zst"), "arc")
    ex = ps.mrc(tr, [1000], limit=limit)
    assert ex.attrs["requests"] == limit and isinstance(ex.attrs["requests"], int)
    assert "estimated_requests" not in ex.attrs
    for kw in ({"rate": 0.01}, {"rate": 0.1}, {"rate": 0.1, "adjust": False}, {"max_samples": 500}):
        sh = ps.mrc(tr, [1000], method="shards", limit=limit, **kw)
        assert sh.attrs["requests"] == ex.attrs["requests"], kw
        assert sh.attrs["references"] == ex.attrs["references"], kw
        assert sh.attrs["estimated_requests"] != sh.attrs["requests"], kw  # the estimate, kept and named
        assert 0 < sh.attrs["sampled_references"] < sh.attrs["references"], kw


@pytest.mark.parametrize("prefetcher", ["obl", "linux", "mithril"])
def test_sampled_simulation_at_rate_one_equals_full_simulation(prefetcher):
    tr = ps.synthetic("oltp-like", requests=5000, seed=2)
    full = ps.mrc(tr, [50, 400], method="full", prefetcher=prefetcher)
    for unit in ("extent", "block"):
        mini = ps.mrc(tr, [50, 400], method="mini", prefetcher=prefetcher, rate=1.0, unit=unit)
        assert list(mini["sample_blocks"]) == [50, 400]
        if unit == "extent":  # whole requests survive: the same run
            assert list(mini["hit_ratio"]) == list(full["hit_ratio"])
            assert list(mini["prefetch_issued"]) == list(full["prefetch_issued"])
        assert list(mini["demand_accesses"]) == list(full["demand_accesses"])


def test_extent_sampling_keeps_about_rate_of_the_references():
    tr = ps.synthetic("oltp-like", requests=20_000, seed=4)
    full = ps.mrc(tr, [1000], method="full")
    mini = ps.mrc(tr, [1000], method="mini", rate=0.25, unit="extent", extent_bytes=64 << 10)
    share = mini["demand_accesses"][0] / full["demand_accesses"][0]
    assert 0.1 < share < 0.45, share
    assert mini["sample_blocks"][0] == 250


@pytest.mark.parametrize("kwargs, field", [
    ({"method": "shards", "rate": 0.0}, "sampling.rate"),
    ({"method": "shards", "rate": 1.5}, "sampling.rate"),
    ({"method": "shards", "max_samples": 0}, "sampling.max_samples"),
    ({"method": "mini", "rate": 2.0}, "sample.rate"),
    ({"method": "mini", "extent_bytes": 1000}, "sample.extent_bytes"),
    ({"method": "mini", "unit": "page"}, "sample.unit"),
    ({"method": "bogus"}, "method"),
    ({"method": "exact", "prefetcher": "obl"}, "method"),
    ({"sizes": [0]}, "sizes"),
    ({"sizes": ["x%"]}, "sizes"),
    ({"method": "mini", "prefetcher": "nope"}, "level[0].prefetcher"),
    ({"sizes": None, "points": 0}, "points"),
    ({"sizes": None, "points": 0, "method": "mini"}, "points"),
    ({"sizes": [2**64]}, "sizes"),
    ({"sizes": [2**64], "method": "shards"}, "sizes"),
    ({"sizes": None, "points": 2**64}, "points"),
    # An option the method does not use is an error naming it and the methods it applies to.
    ({"method": "shards", "unit": "extent"}, "unit: applies to method mini only, not 'shards'"),
    ({"method": "exact", "rate": 0.5}, "rate: applies to method shards or mini only, not 'exact'"),
    ({"method": "exact", "max_samples": 5}, "max_samples: applies to method shards only"),
    ({"method": "mini", "adjust": False}, "adjust: applies to method shards only"),
    ({"method": "full", "seed": 3}, "seed: applies to method shards or mini only"),
    ({"method": "full", "extent_bytes": 4096}, "extent_bytes: applies to method mini only"),
    ({"method": "mini", "threads": 2}, "threads: applies to method full only"),
    ({"method": "shards", "policy": "arc"}, "policy: applies to method mini or full only"),
    ({"points": 5}, "points: applies only when no sizes are given"),
    # A negative limit was a plain ValueError; 0 samples said "0 or more".
    ({"limit": -1}, "limit: -1 is negative; give 1 or more"),
    ({"method": "shards", "max_samples": 0}, "sampling.max_samples: 0; give a whole number of blocks, 1 or more"),
    # Each changed nothing and was taken silently.
    ({"method": "shards", "max_samples": 100, "adjust": False}, "adjust: SHARDS_adj applies to fixed-rate"),
    ({"method": "mini", "unit": "block", "extent_bytes": 65536}, "extent_bytes: applies to unit='extent' only"),
])
def test_bad_parameters_name_the_field(kwargs, field):
    tr = ps.synthetic("oltp-like", requests=100, seed=1)
    kwargs = dict(kwargs)
    sizes = kwargs.pop("sizes", [10])
    with pytest.raises(ps.ConfigError, match=field.replace("[", r"\[").replace("]", r"\]")):
        ps.mrc(tr, sizes, **kwargs)


def test_an_option_saying_what_the_method_computes_anyway_is_accepted():
    # Scripts written before options were checked pass policy="lru" to exact; that is what it computes.
    tr = ps.synthetic("oltp-like", requests=2000, seed=1)
    plain = ps.mrc(tr, [10, 40])
    for method, kw in [("exact", {"policy": "lru", "prefetcher": "none", "rate": 1}),
                       ("shards", {"policy": "lru", "prefetcher": "none", "rate": 1.0}),
                       # Spelled as the core reads names (these were refused).
                       ("exact", {"policy": "LRU", "prefetcher": {"name": "none"}}),
                       # Aliases as the core folds them ("off" is none's; the Python copy of the folding
                       # knew case only).
                       ("shards", {"policy": {"name": "LRU"}, "prefetcher": "off", "rate": 1.0})]:
        assert list(ps.mrc(tr, [10, 40], method=method, **kw)["miss_ratio"]) == list(plain["miss_ratio"])
    with pytest.raises(ps.ConfigError, match="policy: applies to method mini or full only"):
        ps.mrc(tr, [10], policy="arc")


def test_cli_mrc_refuses_options_of_other_methods_and_reads_components_as_sim_does(tmp_path, capsys):
    p = tmp_path / "t.lirs"
    p.write_text("".join(f"{(i * 7) % 50}\n" for i in range(500)))
    for args, needle in [(["--method", "shards", "--unit", "extent"], "--unit: applies to method mini only"),
                         (["--method", "exact", "--rate", "0.5"], "--rate: applies to method shards or mini"),
                         (["--method", "full", "--no-adjust"], "--adjust/--no-adjust: applies to method shards"),
                         (["--method", "exact", "--prefetcher", "obl"], "--prefetcher: applies to method mini or full"),
                         (["--sizes", "5", "--points", "3"], "--points: applies only when no --sizes")]:
        assert main(["mrc", str(p), "--format", "lirs", *args]) == 2, args
        assert needle in capsys.readouterr().err, args
    tr = ps.open_trace(str(p), "lirs")
    for spelled, table in [("mithril(preset=libcachesim)", {"name": "mithril", "preset": "libcachesim"}),
                           ("obl+mithril(lookahead=4)", {"name": "stack", "first": "obl",
                                                          "second": {"name": "mithril", "lookahead": 4}})]:
        assert main(["mrc", str(p), "--format", "lirs", "--method", "full", "--sizes", "5,20",
                     "--policy", "splitlru(up_ratio=0.5)", "--prefetcher", spelled, "-f", "json"]) == 0, spelled
        rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        api = ps.mrc(tr, [5, 20], method="full", policy={"name": "splitlru", "up_ratio": 0.5}, prefetcher=table)
        assert [r["hit_ratio"] for r in rows] == list(api["hit_ratio"]), spelled
        assert [r["prefetch_issued"] for r in rows] == list(api["prefetch_issued"]), spelled


@pytest.mark.parametrize("method", ["exact", "mini", "full"])
def test_a_share_is_the_blocks_sim_gives_it_and_has_sims_bounds(method):
    # ARC OLTP: 1% of a 23,361-block footprint is 233 blocks, truncated as libCacheSim does (mrc said 234).
    tr = ps.open_trace(shared_trace("arc/OLTP.lis.zst"))
    sim = ps.simulate(tr, size="1%").levels[0]["capacity_blocks"]
    assert sim == 233
    kw = {"rate": 1.0} if method == "mini" else {}
    assert list(ps.mrc(tr, ["1%", 0.01], method=method, limit=1000, **kw)["capacity_blocks"]) == [sim, sim]
    # A share above 100% is sim's error (mrc ran 200% as 46,722 blocks).
    for size in ("200%", 2.0, "0%"):
        with pytest.raises(ps.ConfigError, match=r"sizes: .*a share of the footprint must be in \(0, 1\]"):
            ps.mrc(tr, [size], method=method)
    # SHARDS takes shares of the footprint it measures: at rate 1 that is the trace's, truncated the same.
    if method == "exact":
        assert list(ps.mrc(tr, ["1%"], method="shards", rate=1.0)["capacity_blocks"]) == [sim]
        # With a limit it sees the slice only, and took its shares of the slice's footprint; every method
        # means the same blocks by a share now.
        cut = ps.mrc(tr, ["1%"], method="shards", rate=1.0, limit=1000)
        assert list(cut["capacity_blocks"]) == [sim] and cut.attrs["footprint"] == 23_361
        assert cut.attrs["footprint_read"] < 23_361
        exact = ps.mrc(tr, ["1%"], limit=1000)
        assert exact.attrs["footprint"] == 23_361 and exact.attrs["footprint_read"] == cut.attrs["footprint_read"]


def test_more_points_than_blocks_give_each_size_once():
    # 2^63 points panicked with "capacity overflow" while the sizes were laid out.
    tr = ps.synthetic("oltp-like", requests=300, seed=1)
    many = ps.mrc(tr, points=2**63)
    assert list(many["capacity_blocks"]) == list(range(1, len(many) + 1))
    assert len(many) == round(many.attrs["footprint"])


def test_cli_mrc_writes_the_curve_and_a_plot(tmp_path, capsys):
    p = tmp_path / "t.lirs"
    p.write_text("".join(f"{(i * 7) % 50}\n" for i in range(500)))
    png = tmp_path / "c.png"
    assert main(["mrc", str(p), "--format", "lirs", "--points", "5", "-f", "json", "--plot", str(png)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["capacity_blocks"] for r in rows] == [10, 20, 30, 40, 50]
    assert rows[-1]["miss_ratio"] == pytest.approx(50 / 500)
    assert png.stat().st_size > 0
    assert main(["mrc", str(p), "--format", "lirs", "--method", "shards", "--rate", "0"]) == 2
    assert "sampling.rate" in capsys.readouterr().err
    # A simulated curve over sizes in blocks measures no footprint: the summary line says nothing of it
    # (it printed "footprint nan blocks").
    assert main(["mrc", str(p), "--format", "lirs", "--method", "full", "--sizes", "5,10"]) == 0
    err = capsys.readouterr().err
    assert "full: rate 1," in err and "nan" not in err and "footprint" not in err


def test_cli_mrc_checks_the_plot_file_before_computing_the_curve(tmp_path, capsys):
    # Both failed after the curve was computed and printed (exit 2 after the table), and the format's
    # message did not name --plot.
    p = tmp_path / "t.lirs"
    p.write_text("".join(f"{(i * 7) % 50}\n" for i in range(500)))
    for plot, needle in [(tmp_path / "c.txt", "format 'txt' is not supported"),
                         (tmp_path / "no" / "dir" / "c.png", "no folder")]:
        assert main(["mrc", str(p), "--format", "lirs", "--points", "5", "--plot", str(plot)]) == 2, plot
        out, err = capsys.readouterr()
        assert out == "" and "prefetchsim: exact:" not in err, plot  # nothing computed
        assert f"--plot {plot}: " in err and needle in err, err


# --- One pass for the plain LRU (stack distances), FIFO (insertion counts) or CLOCK (rings sharing each
# block's entry) configs of a batch (mrc::family): the records equal separate runs.

_LRU_SIZES = [1, 2, 3, 8, 17, 64, 200, "1%", "5%", "10%", "50%"]


def _lru_family_equals_separate_runs(tr, sizes=_LRU_SIZES, warmup=0, policy="lru"):
    configs = [{"level": [{"size": s, "policy": policy}], "engine": {"warmup_requests": warmup}} for s in sizes]
    # Another config in the batch is run by the engine as before.
    configs.append({"level": [{"size": 4, "policy": "arc"}]})
    many = ps.simulate_many(tr, configs, threads=2)
    for cfg, r in zip(configs, many, strict=True):
        assert r.raw == ps.simulate(tr, cfg).raw, cfg


@pytest.mark.parametrize("policy", ["lru", "fifo", "clock"])
def test_lru_sizes_of_simulate_many_equal_separate_runs_on_a_real_multi_block_trace(policy):
    # MSR Cambridge: multi-block requests and writes (where the engine's order is not Mattson's).
    tr = ps.open_trace(shared_trace("msr-sample/msr-cambridge1-sample.csv"), "msr")
    _lru_family_equals_separate_runs(tr, policy=policy)
    _lru_family_equals_separate_runs(tr, warmup=100, policy=policy)


@pytest.mark.parametrize("policy", ["fifo", "clock"])
def test_fifo_and_clock_sizes_of_simulate_many_equal_separate_runs_on_a_long_real_trace(policy):
    # ARC OLTP (914 K requests of several blocks): FIFO and CLOCK at eight shares of its footprint.
    tr = ps.open_trace(shared_trace("arc/OLTP.lis.zst"))
    _lru_family_equals_separate_runs(tr, ["0.5%", "1%", "2%", "5%", "10%", "20%", "40%", "80%"], policy=policy)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(1, 6)), min_size=1, max_size=200),
       st.lists(st.integers(1, 80), min_size=2, max_size=6), st.sampled_from(["lru", "fifo", "clock"]))
def test_lru_sizes_of_simulate_many_equal_separate_runs_on_random_traces(tmp_path_factory, reqs, sizes, policy):
    p = tmp_path_factory.mktemp("f") / "t.csv"
    # SPC format: ASU, LBA (512-B sectors), size in bytes, op, time; 4 KiB blocks = 8 sectors.
    p.write_text("".join(f"0,{b * 8},{n * 4096},r,{i}\n" for i, (b, n) in enumerate(reqs)))
    _lru_family_equals_separate_runs(ps.open_trace(str(p), "spc"), sizes, policy=policy)


def test_lru_sizes_of_a_sweep_equal_separate_runs(tmp_path):
    path = shared_trace("msr-sample/msr-cambridge1-sample.csv")
    spec = {"trace": {"path": path, "format": "msr"}, "level": [{"size": "1%", "policy": "lru"}],
            "sweep": {"level[0].size": ["1%", "2%", "5%", "10%", "30%"]}}
    df = ps.sweep(spec, db=None, workers=1)
    tr = ps.open_trace(path, "msr")
    for share in ["1%", "2%", "5%", "10%", "30%"]:
        alone = ps.simulate(tr, {"level": [{"size": share, "policy": "lru"}]}).levels[0]
        row = df[df["level0_size"] == share].iloc[0]
        # Every field of the level record the store keeps (counters and derived ratios).
        fields = [k for k in alone if k in df.columns]
        assert {"hits", "misses", "evictions", "fetches", "fetched_blocks", "hit_ratio"} <= set(fields)
        for k in fields:
            assert row[k] == alone[k], (share, k)


@pytest.mark.parametrize("method", ["exact", "shards", "mini", "full"])
def test_an_empty_trace_has_no_curve_and_says_so(tmp_path, method):
    empty = tmp_path / "empty.lis"
    empty.write_text("")
    with pytest.raises(ps.TraceError, match="empty.lis: no (block references|requests to simulate)"):
        ps.mrc(ps.open_trace(empty, "arc"), method=method)


def test_an_empty_shards_sample_is_an_error_not_a_curve_of_hits(tmp_path):
    # Ten blocks read once (miss ratio 1) with nothing in the 1% sample gave miss ratio 0, exit 0.
    tr = _lirs(tmp_path, range(10))
    with pytest.raises(ps.TraceError, match=r"t.lirs: no block references in the 0.01 SHARDS sample \(of 10;"):
        ps.mrc(tr, [5], method="shards")
    assert ps.mrc(tr, [5], method="shards", rate=1.0)["miss_ratio"].tolist() == [1.0]


def test_sampled_simulation_runs_belady_min_on_its_sample(tmp_path):
    # `mini` with opt failed with the core's "call optimal::prepare first"; at rate 1 it is `full`.
    tr = _lirs(tmp_path, [i % 37 for i in range(400)])
    mini = ps.mrc(tr, [5, 20], method="mini", policy="opt", rate=1.0)
    full = ps.mrc(tr, [5, 20], method="full", policy="opt")
    assert mini["misses"].tolist() == full["misses"].tolist()
    assert full["misses"].tolist() == [ps.simulate(tr, size=s, policy="opt").levels[0]["misses"] for s in (5, 20)]


@pytest.mark.parametrize("method", ["exact", "shards", "full"])
def test_mrc_skip_bad_warns_on_stderr_as_sim_does(tmp_path, capsys, method):
    # The help says skipped records are reported on stderr; mrc kept the count in df.attrs only.
    t = tmp_path / "t.lis"
    t.write_text("1 2 0 1\n5 x 0 2\n9 3 0 3\n1 2 0 4\n")
    kw = ["--rate", "1"] if method == "shards" else []
    assert main(["mrc", str(t), "--format", "arc", "--method", method, "--sizes", "4", "--skip-bad", "1", *kw]) == 0
    err = capsys.readouterr().err
    assert "warning: skipped 1 bad record(s)" in err, err

