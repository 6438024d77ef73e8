"""The timed engine from Python: engine config and errors, run-level timing fields (present for timed
runs, absent for time-free ones), TOML and CLI runs, and `prefetchsim device bench`."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import prefetchsim as ps
import pytest

from conftest import shared_trace

TIMED_FIELDS = {
    "engine", "replay", "rt_requests", "rt_mean_ms", "rt_p50_ms", "rt_p95_ms", "rt_p99_ms", "rt_max_ms",
    "makespan_ms", "device", "device_requests", "device_requests_demand", "device_requests_prefetch",
    "device_requests_mixed", "device_sectors", "device_blocks_read", "device_service_mean_ms",
    "device_utilization", "sched_queue_mean", "sched_queue_max", "net_messages",
}

FIXED_5MS = {"name": "fixed", "read_latency_ms": 5.0}
# The header of a project CSV trace of 4 KiB blocks whose stream field carries ids.
CSV_HEAD = "# prefetchsim trace: block_size=4096\n# prefetchsim stream_ids=true\ntime_ns,op,first,len,stream,client\n"
ZERO = {"name": "fixed", "read_latency_ms": 0.0, "write_latency_ms": 0.0}


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "prefetchsim", *args], capture_output=True, text=True)


@pytest.fixture
def distinct_trace(tmp_path):
    """Twenty one-block reads of distinct, non-adjacent blocks."""
    p = tmp_path / "distinct.lirs.trace"
    p.write_text("\n".join(str(10 * i) for i in range(20)) + "\n")
    return str(p)


def test_a_timed_run_reports_response_times_and_a_time_free_run_does_not(spc_trace):
    tr = ps.open_trace(spc_trace)
    levels = [ps.Level(16, "lru", "obl"), ps.Level("2x", "lru")]
    timed = ps.simulate(tr, levels=levels, engine={"kind": "timed"}, device="cheetah9lp")
    assert TIMED_FIELDS <= set(timed.summary)
    assert timed.summary["engine"] == "timed" and timed.summary["replay"] == "closed"
    assert timed.summary["rt_requests"] == 50 and timed.summary["rt_mean_ms"] > 0
    assert timed.summary["rt_p50_ms"] <= timed.summary["rt_p99_ms"] <= timed.summary["rt_max_ms"]
    assert sum(n for _, _, n in timed.rt_histogram) == 50
    assert [c["client"] for c in timed.clients] == [0]
    # One row per level, the run's timing repeated on each (plots.md: response_time takes to_pandas()).
    df = timed.to_pandas()
    assert list(df["name"]) == ["L1", "L2"] and list(df["rt_mean_ms"]) == [timed.summary["rt_mean_ms"]] * 2
    assert "rt_mean_ms" not in ps.simulate(tr, levels=levels).to_pandas().columns
    instant = ps.simulate(tr, levels=levels)
    assert instant.timing is None and instant.clients == [] and instant.rt_histogram == []
    assert not (TIMED_FIELDS - {"device"}) & set(instant.summary)
    assert "rt" in repr(timed) and "rt" not in repr(instant)


def test_zero_latencies_give_the_instant_engine_counts():
    tr = ps.synthetic("oltp-like", requests=20000, seed=5)
    levels = [ps.Level("5%", "lru", "obl"), ps.Level("2x", "arc", "obl")]
    instant = ps.simulate(tr, levels=levels)
    timed = ps.simulate(
        tr, levels=levels, engine={"kind": "timed", "replay": "open"}, link={"alpha_ms": 0, "beta_ms_per_page": 0},
        device=ZERO,
    )
    assert timed.levels == instant.levels
    assert timed.summary["rt_max_ms"] == 0.0


def test_closed_loop_response_time_is_exactly_the_path_latency(distinct_trace):
    tr = ps.open_trace(distinct_trace, "lirs")
    one = ps.simulate(tr, size=4, engine={"kind": "timed"}, device=FIXED_5MS)
    assert (one.summary["rt_mean_ms"], one.summary["rt_max_ms"], one.summary["makespan_ms"]) == (5.0, 5.0, 100.0)
    # Two levels, PFC's link given as (alpha, beta) in seconds: 6 + 5 + 6.03 ms.
    two = ps.simulate(tr, levels=[ps.Level(4), ps.Level(8)], engine={"kind": "timed"}, device=FIXED_5MS,
                      link=(6e-3, 3e-5))
    assert two.summary["rt_mean_ms"] == pytest.approx(17.03, abs=1e-9)
    assert two.summary["net_messages"] == 40


def test_open_loop_with_an_admission_limit_reports_the_wait(distinct_trace):
    tr = ps.open_trace(distinct_trace, "lirs")  # no timestamps: every request arrives at 0
    r = ps.simulate(tr, size=4, engine={"kind": "timed", "replay": "open", "max_outstanding": 1}, device=FIXED_5MS)
    s = r.summary
    assert (s["admission_wait_max_ms"], s["rt_max_ms"], s["requests_incomplete"]) == (95.0, 100.0, 0)


def test_engine_keys_and_timing_tables_are_checked_naming_the_key(lirs_trace):
    tr = ps.open_trace(lirs_trace, "lirs")
    bad = [
        ({"engine": {"replay": "open"}}, "engine.replay"),
        ({"engine": {"kind": "timed", "replay": "ajar"}}, "engine.replay"),
        ({"engine": {"kind": "timed", "iodepth": 0}}, "engine.iodepth"),
        ({"engine": {"kind": "timed", "replay": "open", "think_ms": 1}}, "engine.think_ms"),
        ({"engine": {"kind": "timed", "thinkk": 1}}, "thinkk"),
        ({"engine": {"kind": "timed"}, "link": {"alpha_ms": -1}}, "link.alpha_ms"),
        ({"engine": {"kind": "timed"}, "device": {"name": "cheetah9lp", "rpm": 0}}, "device.rpm"),
        # Times beyond 1,000 s a step were cut to the clock's cap and reported as measured (4.6e12 ms).
        ({"engine": {"kind": "timed"}, "device": {"name": "cheetah9lp", "rpm": 1e-9}}, "device.rpm"),
        ({"engine": {"kind": "timed"}, "device": {"name": "nvme", "read_latency_ms": 1e300}}, "device.read_latency_ms"),
        ({"engine": {"kind": "timed"}, "device": {"name": "nvme", "bandwidth_mb_s": 1e-300}}, "device.bandwidth_mb_s"),
        ({"engine": {"kind": "timed"}, "device": {"name": "cheetah9lp", "bus_ms_per_sector": 1e7}},
         "device.bus_ms_per_sector"),
        ({"engine": {"kind": "timed"}, "device": {"name": "ata40", "overheads": {"read_miss_after_read": 1e7}}},
         "device.overheads.read_miss_after_read"),
        ({"engine": {"kind": "timed"}, "device": {"name": "cheetah9lp", "seek": {"points": [[1, 1e7]]}}},
         "device.seek.points[0]"),
        ({"engine": {"kind": "timed"}, "device": "floppy"}, "cheetah9lp"),
        ({"engine": {"kind": "timed"}, "scheduler": {"fifo_batch": 0}}, "scheduler.fifo_batch"),
        ({"device": "cheetah9lp"}, "engine.kind = 'timed'"),
    ]
    for extra, needle in bad:
        cfg = {"level": [{"size": 4}], **extra}
        with pytest.raises(ps.ConfigError, match=None) as e:
            ps.simulate(tr, cfg)
        assert needle in str(e.value), (extra, str(e.value))


def test_a_trace_past_the_end_of_the_device_is_a_config_error(tmp_path):
    p = tmp_path / "far.lirs.trace"
    p.write_text("1\n99999999999\n")
    with pytest.raises(ps.ConfigError, match="past the end of device"):
        ps.simulate(ps.open_trace(str(p), "lirs"), size=4, engine={"kind": "timed"})


def test_a_timed_toml_config_runs_from_python_and_the_command_line(tmp_path, spc_trace):
    toml = tmp_path / "timed.toml"
    toml.write_text(
        f"[trace]\npath = {spc_trace!r}\n\n"
        "[[level]]\nname = 'client'\nsize = 16\nprefetcher = { name = 'obl', variant = 'always' }\n\n"
        "[[level]]\nname = 'server'\nsize = '2x'\n\n"
        "[engine]\nkind = 'timed'\nreplay = 'open'\ntime_scale = 0.5\n\n"
        "[link]\nalpha_ms = 1.0\nbeta_ms_per_page = 0.01\n\n"
        "[device]\nname = 'cheetah9lp'\n\n[scheduler]\npolicy = 'clook'\n"
    )
    r = ps.simulate(config=str(toml))
    assert r.summary["replay"] == "open" and r.summary["device"] == "cheetah9lp"
    p = cli("run", str(toml), "-f", "json")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    assert [x["name"] for x in rows] == ["client", "server"]
    assert rows[0]["rt_mean_ms"] == pytest.approx(r.summary["rt_mean_ms"])
    p = cli("run", str(toml))
    assert p.returncode == 0 and "response time (open loop, 50 reads)" in p.stdout and "device cheetah9lp" in p.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text(toml.read_text().replace("replay = 'open'", "replay = 'open'\niodepth = 2"))
    p = cli("run", str(bad))
    assert p.returncode == 2 and "engine.iodepth" in p.stderr


def test_device_bench_prints_service_times_of_the_standard_patterns():
    p = cli("device", "bench", "cheetah9lp", "-f", "json")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    by = {r["pattern"]: r for r in rows}
    # DiskSim 4.0's Cheetah 9LP: 8.82 ms for isolated random one-sector reads.
    assert by["random_isolated sectors=1 align=1 gap=100ms"]["mean_service_ms"] == pytest.approx(8.82, rel=0.03)
    assert any(k.startswith("seek_distance") for k in by) and any(k.startswith("sequential") for k in by)
    p = cli("device", "bench", "fixed", "-p", "read_latency_ms=2")
    assert p.returncode == 0 and "mean_service_ms" in p.stdout.splitlines()[0]
    assert {r["mean_service_ms"] for r in ps.device_bench({"name": "fixed", "read_latency_ms": 2.0})} == {2.0}
    p = cli("device", "bench", "floppy")
    assert p.returncode == 2 and "unknown device 'floppy'" in p.stderr
    # A negative seed was an OverflowError traceback.
    p = cli("device", "bench", "fixed", "--seed", "-1")
    assert p.returncode == 2 and "--seed: -1 is negative" in p.stderr and "Traceback" not in p.stderr
    with pytest.raises(ps.ConfigError, match="seed: -1"):
        ps.device_bench("fixed", seed=-1)
    p = cli("list", "devices")
    assert p.returncode == 0 and "cheetah9lp" in p.stdout


def test_device_bench_takes_dotted_keys_for_a_tables_key():
    # `-p cache.enabled=false` was refused: "unknown field 'cache.enabled'"; the drive cache could not be
    # switched off from the command line.
    p = cli("device", "bench", "cheetah9lp", "-p", "cache.enabled=false", "-f", "json")
    assert p.returncode == 0, p.stderr
    rows = {r["pattern"]: r for r in map(json.loads, p.stdout.splitlines())}
    want = {r["pattern"]: r for r in ps.device_bench({"name": "cheetah9lp", "cache": {"enabled": False}})}
    assert rows == want
    p = cli("device", "bench", "cheetah9lp", "-p", "cache=1,cache.enabled=false")
    assert p.returncode == 2 and "set both as a value and as a table" in p.stderr
    assert "nvme" in ps.devices()


def test_device_capacity_is_the_presets_sector_count():
    from prefetchsim._sim import device_capacity_sectors

    # DiskSim 4.0's Cheetah 9LP: 17,783,240 sectors (9.1 GB); the 1 TB disk: 1,953,525,168.
    assert device_capacity_sectors("cheetah9lp") == 17_783_240
    assert device_capacity_sectors("hdd7200") == 1_953_525_168
    with pytest.raises(ps.ConfigError, match="floppy"):
        device_capacity_sectors("floppy")


def test_a_real_trace_runs_timed_with_the_instant_engine_counts_at_zero_latency():
    path = shared_trace("arc/OLTP.lis.zst")
    tr = ps.open_trace(path)
    cfg = {"level": [{"size": "5%", "prefetcher": {"name": "obl", "variant": "always"}}, {"size": "2x"}],
           "engine": {"limit": 100000}}
    instant = ps.simulate(tr, cfg)
    zero = ps.simulate(tr, cfg, engine={"kind": "timed", "replay": "open"}, link=(0, 0), device=ZERO)
    assert zero.levels == instant.levels
    timed = ps.simulate(tr, cfg, engine={"kind": "timed", "per_stream": False, "think": "none"})
    assert timed.summary["rt_requests"] == 100000 and timed.summary["device_requests"] > 0


@pytest.mark.parametrize("alpha_ms", [1e15, 1e300])
def test_a_clock_past_73_years_is_an_error_not_wrapped_response_times(alpha_ms):
    # Both gave a mean response time of 7.68e9 ms: the 64-bit clock wrapped (and 1e300 ms saturated).
    tr = ps.synthetic("oltp-like", requests=3000, seed=1)
    with pytest.raises(ps.ConfigError, match=r"^engine: simulated time reached .* past the 2\^61 ns"):
        ps.simulate(tr, levels=[ps.Level(50), ps.Level(100)], engine={"kind": "timed"},
                    link={"alpha_ms": alpha_ms, "beta_ms_per_page": 0.03})


@pytest.mark.parametrize("link", [{"t_l2_cpu_ms": 1e13}, {"alpha_ms": 0, "beta_ms_per_page": 1e13},
                                  {"t_l1_hit_ms": 1e13}, {"link": "fifo", "gap_ms": 1e300}])
def test_a_duration_cut_to_146_years_is_an_error_not_a_measured_response_time(tmp_path, link):
    # A single step longer than 2^62 ns was cut to it and reported as measured: with t_l2_cpu_ms = 1e13
    # the requests below gave a largest response time of 4.6e12 ms, not 1e13. (A miss, a hit on the
    # client, then a miss that waits for the link's gap.)
    path = tmp_path / "three.lis"
    path.write_text("0 1 0 0\n0 1 0 0\n100000 1 0 0\n")
    tr = ps.open_trace(path, format="arc")
    with pytest.raises(ps.ConfigError, match=r"^engine: simulated time reached .* past the 2\^61 ns"):
        ps.simulate(tr, levels=[ps.Level(50), ps.Level(100)], engine={"kind": "timed"}, link=link)


def test_long_but_representable_times_are_still_measured(tmp_path):
    # The limit must not refuse what it can represent: one request over a link of 10^9 ms per page.
    path = tmp_path / "one.lis"
    path.write_text("0 1 0 0\n")
    r = ps.simulate(ps.open_trace(path, format="arc"), levels=[ps.Level(50), ps.Level(100)],
                    engine={"kind": "timed"}, link={"alpha_ms": 0, "beta_ms_per_page": 1e9})
    assert 1e9 <= r.summary["rt_max_ms"] < 1.1e9


@pytest.mark.parametrize("warm", [0, 500, 501, 502])
def test_after_a_warm_up_the_makespan_holds_only_measured_requests(warm):
    # counters.md §3: closed loop, one loop, no think time, synchronous writes, so the makespan is the sum
    # of the measured response times. It started at the last warm-up request's issue, so it held that
    # request's response time too (5.106 ms at warm-up 501, 4.266 ms at 502), and warm-up 500 and 501
    # gave the same makespan.
    tr = ps.synthetic("oltp-like", requests=2_000, seed=1)
    engine = {"kind": "timed", "replay": "closed", "per_stream": False, "think": "none", "sync_writes": True,
              "warmup_requests": warm}
    s = ps.simulate(tr, size=128, prefetcher="ra", engine=engine, device="cheetah9lp").summary
    measured = s["stall_ms"] + s["write_rt_mean_ms"] * s["write_requests"]
    assert s["rt_requests"] + s["write_requests"] == 2_000 - warm
    assert s["makespan_ms"] == pytest.approx(measured, abs=1e-6)
    assert s["sim_time_ms"] >= s["makespan_ms"] and 0 < s["device_utilization"] <= 1


@pytest.mark.parametrize("loops", [{"per_stream": False, "iodepth": 2}, {"per_stream": True, "iodepth": 1}])
def test_the_first_measured_request_issued_with_the_last_warm_up_request_is_counted_at_the_levels(tmp_path, loops):
    # Loops started together issue the warm-up's last request and the first measured one at the same
    # instant. The levels' counters were zeroed after the measured request's access: rt_requests 2, level
    # requests and misses 1 (an outside model of the engine found it; one loop of iodepth 1 counted 2).
    p = tmp_path / "t.csv"
    rows = [(0, 5, 0), (1, 10, 1), (2, 20, 0)]  # (time, block, stream)
    p.write_text(CSV_HEAD + "".join(f"{t},read,{b},1,{s},0\n" for t, b, s in rows))
    engine = {"kind": "timed", "replay": "closed", "think": "none", "warmup_requests": 1, **loops}
    r = ps.simulate(ps.open_trace(p, cache=False), levels=[ps.Level(6)], engine=engine,
                    device={"name": "fixed", "read_latency_ms": 2.0}, scheduler={"policy": "noop"})
    assert r.summary["rt_requests"] == 2
    assert (r.levels[0]["requests"], r.levels[0]["misses"]) == (2, 2)


def test_every_stream_of_a_closed_loop_starts_at_time_zero(tmp_path):
    # One loop per stream runs the streams concurrently from time 0 (event-engine.md §4, §8). A stream
    # started only when the trace reader first met its records: a trace whose streams come one after the
    # other ran them one after the other (issue times 0, 2, 4, 6, 6, 10 ms; makespan 12).
    p = tmp_path / "t.csv"
    recs = [(1, 0), (4, 0), (7, 0), (2, 1), (5, 1), (3, 2)]  # (block, stream), streams in blocks
    p.write_text(CSV_HEAD + "".join(f"0,read,{b},1,{s},0\n" for b, s in recs))
    ev = tmp_path / "ev.csv"
    r = ps.simulate(ps.open_trace(str(p), cache=False), levels=[ps.Level(6)],
                    device={"name": "fixed", "read_latency_ms": 2.0}, scheduler={"policy": "noop"},
                    engine={"kind": "timed", "replay": "closed", "per_stream": True, "iodepth": 1, "think": "none"},
                    events=str(ev))
    req = ps.read_events(str(ev)).query("kind == 'request'")
    # At 0 the three streams issue 1, 2, 3; the fixed device reads one request at a time (2 ms): 1, then
    # 2-3 merged in the queue, then 4 and 5 (issued at 2 and 4), then 7.
    assert [(t / 1e6, b) for t, b in zip(req.time, req.block)] == [(0, 1), (0, 2), (0, 3), (2, 4), (4, 5), (6, 7)]
    assert r.summary["makespan_ms"] == 10.0 and r.summary["rt_mean_ms"] == pytest.approx(22 / 6)


def _reads(tmp_path, recs):
    # (time_ns, first block), one-block reads of 4 KiB blocks, one stream.
    p = tmp_path / "t.csv"
    p.write_text(CSV_HEAD + "".join(f"{t},read,{f},1,0,0\n" for t, f in recs))
    return ps.open_trace(str(p), cache=False)


@pytest.mark.parametrize("recs, engine, prefetcher, want", [
    # A read dispatched at the window's first nanosecond (closed loop, warm-up 2): window [2, 6] ms busy
    # throughout; before, busy 2.0, one request, utilisation 0.5.
    ([(0, 1), (0, 5), (0, 9)],
     {"replay": "closed", "per_stream": False, "iodepth": 2, "think": "none", "warmup_requests": 2}, None,
     {"sim_time_ms": 4.0, "device_requests": 2, "device_busy_ms": 4.0}),
    # A read straddling the window's start (open loop, warm-up 1): [0, 2] counts 1 ms of the window [1, 4].
    ([(0, 1), (1_000_000, 5)], {"replay": "open", "warmup_requests": 1}, None,
     {"sim_time_ms": 3.0, "device_requests": 1, "device_busy_ms": 3.0}),
    # Admission: the window opens at the first measured arrival (0.6 ms), not at the last warm-up
    # request's admission (2 ms).
    ([(0, 1), (500_000, 5), (600_000, 9)], {"replay": "open", "max_outstanding": 1, "warmup_requests": 2}, None,
     {"rt_max_ms": 5.4, "makespan_ms": 5.4, "sim_time_ms": 5.4, "device_requests": 2, "device_busy_ms": 5.4}),
    # drain = false: the prefetch read running past the stop counts none of its time (before: 2.0).
    ([(0, 1), (0, 2)], {"replay": "open", "drain": False},
     ps.Level(6, prefetcher="obl", prefetcher_params={"variant": "on_miss"}),
     {"sim_time_ms": 2.0, "device_requests": 2, "device_busy_ms": 2.0}),
])
def test_device_time_counts_inside_the_measured_window(tmp_path, recs, engine, prefetcher, want):
    # The guide's engines page, "What timed runs measure".
    r = ps.simulate(_reads(tmp_path, recs), levels=[prefetcher or ps.Level(6)],
                    device={"name": "fixed", "read_latency_ms": 2.0}, scheduler={"policy": "noop"},
                    engine={"kind": "timed", **engine})
    s = r.summary
    assert {k: s[k] for k in want} == pytest.approx(want, abs=1e-9)
    assert s["device_utilization"] == pytest.approx(1.0, abs=1e-12)


def test_a_held_prefetch_waits_for_another_caches_read_of_its_block(tmp_path):
    # prefetch_io = "apart" with one cache per client over one device: client 0's prefetch of block 8 found
    # client 2's read of it in flight and was marked done at once, so block 8 arrived at client 0 at 2 ms,
    # before the device had read it (2-4 ms), and the request for it at 3 ms was a hit of 0 ms.
    p = tmp_path / "t.csv"
    p.write_text(CSV_HEAD + "0,read,7,1,0,2\n0,read,7,1,0,0\n3000000,read,8,1,0,0\n")
    ev = tmp_path / "ev.csv"
    r = ps.simulate(ps.open_trace(str(p), cache=False),
                    levels=[ps.Level(4, per_client=True, prefetcher="obl", prefetcher_params={"variant": "on_miss"})],
                    device={"name": "fixed", "read_latency_ms": 2.0}, scheduler={"policy": "noop"},
                    engine={"kind": "timed", "replay": "open", "prefetch_io": "apart"}, events=str(ev))
    e = ps.read_events(str(ev))
    done8 = e.query("kind == 'fetch_done' and block == 8")
    assert sorted(zip(done8.instance, done8.time)) == [(0, 4_000_000), (2, 4_000_000)]
    assert list(e.query("time == 3000000 and block == 8 and instance == 0").kind[:2]) == ["request", "late"]
    assert {c["client"]: c["rt_mean_ms"] for c in r.clients} == {0: 1.5, 2: 2.0}


def test_one_level_has_no_link_only_the_lookup_cost_acts():
    # docs/guide/engines.md: a one-level hierarchy has no link below it (the device is attached directly), so
    # [link] keys do nothing there except t_l1_hit_ms, the first level's lookup cost. Kept accepted so that a
    # sweep over the number of levels can share one [link]; this test pins the documented behaviour.
    tr = ps.synthetic("zipf", requests=2000, seed=3)
    cfg = {"level": [{"size": 100, "policy": "lru"}], "engine": {"kind": "timed"}}
    base = ps.simulate(tr, cfg).summary
    for link in ({"alpha_ms": 50.0}, {"beta_ms_per_page": 2.0}, {"t_l2_cpu_ms": 3.0}, {"link": "fifo", "gap_ms": 5.0},
                 {"charge_mode": "per_exchange"}):
        assert ps.simulate(tr, {**cfg, "link": link}).summary == base, link
    slower = ps.simulate(tr, {**cfg, "link": {"t_l1_hit_ms": 1.0}}).summary
    assert slower["rt_mean_ms"] > base["rt_mean_ms"]


def test_a_ready_block_evicted_and_read_again_by_one_access_goes_down_at_once(tmp_path):
    # L1 (2 blocks, OBL on_miss) over a DEMOTE level: the access for 12 evicts the ready 13 and 14, and its
    # OBL run reads 13 again. engines.md: ready blocks go down at once, so one Demote message [13, 14]
    # (13 is dropped on landing: L1 holds it again). 13 was held until its new read arrived: a second
    # message, 6 messages and 15.75 ms (an outside model's case, 2026-12-07).
    p = tmp_path / "t.csv"
    p.write_text(CSV_HEAD + "0,read,13,1,0,0\n10000000,read,12,1,0,0\n")
    r = ps.simulate(ps.open_trace(str(p), cache=False),
                    levels=[ps.Level(2, prefetcher="obl", prefetcher_params={"variant": "on_miss"}),
                            {"size": 8, "options": {"exclusive": "demote"}}],
                    device={"name": "fixed", "read_latency_ms": 2.0}, scheduler={"policy": "noop"},
                    link={"alpha_ms": 1.0, "beta_ms_per_page": 0.25}, engine={"kind": "timed", "replay": "open"})
    assert (r.summary["net_messages"], r.summary["sim_time_ms"], r.levels[1]["demoted_in"]) == (5, 14.5, 1)


def _ondemand(tmp_path, recs, ra_pages, size=4, engine=None, options=None, **linux):
    # (time_ns, first, len, stream) reads through `size` blocks of LRU with `ondemand` read-ahead over a
    # fixed 3 ms device, open loop: the result and its events.
    p = tmp_path / "t.csv"
    p.write_text(CSV_HEAD + "".join(f"{t},read,{f},{n},{s},0\n" for t, f, n, s in recs))
    ev = tmp_path / "ev.csv"
    params = {"mode": "ondemand", "ra_pages": ra_pages, **linux}
    r = ps.simulate(ps.open_trace(str(p), cache=False),
                    levels=[ps.Level(size, prefetcher="linux", prefetcher_params=params, options=options or {})],
                    device={"name": "fixed", "read_latency_ms": 3.0}, scheduler={"policy": "noop"},
                    engine={"kind": "timed", "replay": "open", **(engine or {})}, events=str(ev))
    return r, ps.read_events(str(ev))


def test_a_read_ahead_mark_on_a_page_the_level_had_no_room_for_is_not_kept(tmp_path):
    # linux-readahead.md: the marker is set "only if this read allocated that page". Cache of 4, every
    # block in flight from 0.2 ms: the window [25, 32] asked at 0.3 ms (marker on 25) is dropped whole, so
    # 25 has no marker when the sequential miss on 24 at 0.4 ms reads [24, 31] and passes 25. Before, the
    # marker survived the drop and fired at 25 a second window, [32, 51], also dropped (48 blocks dropped
    # in all instead of 14). (Outside audit study-linuxtimed, D1.)
    recs = [(0, 0, 1, 0), (100_000, 20, 1, 0), (200_000, 21, 2, 0), (300_000, 23, 1, 0), (400_000, 24, 4, 0)]
    r, e = _ondemand(tmp_path, recs, ra_pages=32)
    at_last = e.query("time == 400000 and kind == 'prefetch_dropped'")
    assert list(at_last.block) == [28, 29, 30, 31]
    assert r.levels[0]["prefetch_dropped"] == 14


@pytest.mark.parametrize("prefetcher, params", [
    ("linux", {"mode": "ondemand", "ra_pages": 8}), ("linux", {}), ("obl", {"variant": "always"}),
])
def test_read_ahead_stops_at_the_end_of_the_device(tmp_path, prefetcher, params):
    # A device of 96 sectors holds blocks 0-11; every block of the trace fits. A window reaching past
    # block 11 is clipped there (linux-readahead.md: clipped at the end of the file or device); before,
    # the run stopped with a ConfigError blaming the trace. (Outside audit study-linuxtimed, round 2, R4.)
    p = tmp_path / "t.csv"
    p.write_text(CSV_HEAD + "".join(f"{i * 1_000_000},read,{i},1,0,0\n" for i in range(12)))
    ev = tmp_path / "ev.csv"
    r = ps.simulate(ps.open_trace(str(p), cache=False),
                    levels=[ps.Level(32, prefetcher=prefetcher, prefetcher_params=params)],
                    device={"name": "fixed", "read_latency_ms": 3.0, "lbns": 96}, scheduler={"policy": "noop"},
                    engine={"kind": "timed", "replay": "open"}, events=str(ev))
    e = ps.read_events(str(ev))
    issued = e.query("kind == 'prefetch_issued'")
    assert len(issued) > 0 and issued.block.max() == 11
    assert r.summary["device_blocks_read"] == 12
    # A demand block past the end is still the trace's error.
    q = tmp_path / "past.csv"
    q.write_text(p.read_text() + "13000000,read,12,1,0,0\n")
    with pytest.raises(ps.ConfigError, match="past the end of device"):
        ps.simulate(ps.open_trace(str(q), cache=False), levels=[ps.Level(32)],
                    device={"name": "fixed", "read_latency_ms": 3.0, "lbns": 96}, scheduler={"policy": "noop"},
                    engine={"kind": "timed", "replay": "open"})


def test_pfc_readmore_stops_at_the_end_of_the_device(tmp_path):
    # Two-block reads of blocks 0-23: on a 64-block device PFC's readmore reads blocks 24 and 25; on a
    # 24-block device it stops at block 23 (before, the run stopped with the device's ConfigError at 25).
    p = tmp_path / "t.csv"
    p.write_text(CSV_HEAD + "".join(f"{i * 1_000_000},read,{i},2,0,0\n" for i in range(0, 24, 2)))

    def run(blocks):
        r = ps.simulate(ps.open_trace(str(p), cache=False),
                        levels=[ps.Level(8, prefetcher="pfc-ra").to_config(),
                                {"size": 16, "prefetcher": "pfc-ra", "pfc": {"version": "A"}}],
                        device={"name": "fixed", "read_latency_ms": 3.0, "lbns": blocks * 8},
                        engine={"kind": "timed", "replay": "closed"})
        return r.summary["device_blocks_read"], r.levels[1]["readmore_blocks"]

    assert run(64) == (30, 2)
    assert run(24) == (24, 0)


def test_a_page_being_read_but_no_longer_cached_counts_as_cached_for_read_ahead(tmp_path):
    # linux-readahead.md: "cached" is resident or already being read; a page under I/O cannot be evicted
    # in Linux. Cache of 4: at 0.05 ms stream 0's access evicts its own blocks 2-5 before their read
    # arrives; at 0.1 ms stream 1's initial window [0, 7] passes over block 4, being read, so it marks
    # nothing there (the read did not allocate it); at 0.2 ms the access to 4 joins that read and reads
    # nothing ahead. Before, the window marked 4 and the join fired a second window, [8, 15], whose
    # blocks 10-15 were dropped. (Outside audit study-linuxtimed, round 2, R1.)
    recs = [(0, 1, 1, 0), (50_000, 2, 4, 0), (100_000, 0, 4, 1), (200_000, 4, 1, 1)]
    r, e = _ondemand(tmp_path, recs, ra_pages=8)
    assert list(e.query("time == 200000").kind) == ["request", "join_uncached"]
    assert r.levels[0]["prefetch_dropped"] == 0


def test_step_takes_the_timed_runs_disk_unless_its_own_device_is_given(tmp_path):
    # STEP's seek costs and bandwidth are "the disk's parameters" (§4.1.2): without its own `device`, STEP
    # takes the engine's device when that is a disk, and keeps the Cheetah 9LP otherwise (a fixed-latency
    # device has no seek curve). Before, it took the Cheetah on an ata40 engine too, silently. Two
    # interleaved streams 50,000 blocks apart, four-block reads, UB lifted so the sizes show.
    p = tmp_path / "t.csv"
    pos = [0, 50_000]
    rows = []
    for i in range(60):
        rows.append(f"{i * 1_000_000},read,{pos[i % 2]},4,{i % 2},0\n")
        pos[i % 2] += 4
    p.write_text(CSV_HEAD + "".join(rows))
    tr = ps.open_trace(str(p), cache=False)

    def counts(engine_device, step_device=None):
        params = {"upper_bound": 100_000, "upper_bound_share": 1.0}
        if step_device:
            params["device"] = step_device
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = ps.simulate(tr, levels=[ps.Level(20_000, prefetcher="step", prefetcher_params=params)],
                            device=engine_device, engine={"kind": "timed", "replay": "closed"})
        assert [str(w.message) for w in caught] == r.notes
        return r.levels[0], r.summary["makespan_ms"], r.notes

    ata40 = counts("ata40")
    assert ata40 == counts("ata40", "ata40") and ata40[2] == []
    assert ata40[:2] != counts("ata40", "cheetah9lp")[:2]
    fixed = {"name": "fixed", "read_latency_ms": 3.0}
    # Over a device without a seek curve the run says which disk STEP used instead.
    assert counts(fixed)[2] == ["level[0] (L1): the timed run's device 'fixed' has no seek curve: STEP took its "
                                "seek costs and bandwidth from 'cheetah9lp' (give STEP a `device` to choose another "
                                "disk model)"]
    assert counts(fixed)[:2] == counts(fixed, "cheetah9lp")[:2] and counts(fixed, "cheetah9lp")[2] == []
    assert counts(fixed)[:2] != counts(fixed, "ata40")[:2]


@pytest.mark.parametrize("exclusive", ["demote", "du"])
def test_hand_downs_and_lower_prefetch_stay_on_the_device(tmp_path, exclusive):
    # Two passes over blocks 0-11 of a 12-block device; L1 reads ahead 8 pages, L2 prefetches too and
    # takes L1's evictions (DEMOTE) or its demand reads (DU). No level reads or is handed a block past 11.
    p = tmp_path / "t.csv"
    p.write_text(CSV_HEAD + "".join(f"{i * 1_000_000},read,{i % 12},1,0,0\n" for i in range(24)))
    ev = tmp_path / "ev.csv"
    r = ps.simulate(ps.open_trace(str(p), cache=False),
                    levels=[ps.Level(4, prefetcher="linux", prefetcher_params={"mode": "ondemand", "ra_pages": 8}).to_config(),
                            {"size": 8, "prefetcher": {"name": "obl", "variant": "always"}, "options": {"exclusive": exclusive}}],
                    device={"name": "fixed", "read_latency_ms": 3.0, "lbns": 96},
                    engine={"kind": "timed", "replay": "open"}, events=str(ev))
    e = ps.read_events(str(ev))
    assert len(e.query("kind == 'prefetch_issued'")) > 0 and e.block.max() <= 11
    assert r.summary["device_blocks_read"] >= 12


@pytest.mark.parametrize("engine", [{"kind": "instant"}, {"kind": "timed", "replay": "closed", "per_stream": False}])
def test_step_lays_a_multi_volume_trace_as_the_timed_engine_does(tmp_path, engine):
    # Two streams in two SPC ASUs (volumes), 50,000 blocks apart inside their volumes, against the same
    # two streams in one volume: the timed engine lays volumes over one LBA range, and STEP's seek costs
    # now place them there too. Before, STEP took a volume-1 block's number with its volume bits and
    # folded it onto the disk somewhere else (35,112 blocks prefetched instead of 40,184 here).
    spc, csv, pos = [], [], [0, 50_000]
    for i in range(60):
        s = i % 2
        spc.append(f"{s},{pos[s] * 8},16384,r,{i * 0.001:.3f}\n")
        csv.append(f"{i * 1_000_000},read,{pos[s]},4,{s},0\n")
        pos[s] += 4
    (tmp_path / "v.spc").write_text("".join(spc))
    (tmp_path / "v.csv").write_text(CSV_HEAD + "".join(csv))
    timed = {"device": "ata40"} if engine["kind"] == "timed" else {}
    step = {"upper_bound": 100_000, "upper_bound_share": 1.0, "device": "ata40"}
    volumes, one = (ps.simulate(ps.open_trace(str(tmp_path / name), fmt, cache=False),
                                levels=[ps.Level(20_000, prefetcher="step", prefetcher_params=step)],
                                engine=engine, **timed).levels[0]
                    for name, fmt in (("v.spc", "spc"), ("v.csv", None)))
    keys = ("prefetch_issued", "hits", "misses", "prefetch_used")
    assert {k: volumes[k] for k in keys} == {k: one[k] for k in keys}


def test_a_read_set_page_the_level_had_no_room_for_keeps_no_amp_metadata(tmp_path):
    # AMP keeps its metadata (p, g, trigger) in the page's cache entry: a page its set named but the level
    # had no room for (every cached block in flight) is never read and has none. Cache of 3: at 18.1 ms the
    # miss on 402 forms the set [402, 404], whose pages 403 and 404 are dropped; at 20.0 ms 404 is read as
    # a non-sequential miss (403 is not cached); at 20.6 ms the miss on 405 is sequential and takes `q` from
    # 404's metadata, now none (n = 1: the set [405, 406]). Before, 404 kept the dropped set's p = 2 and the
    # miss named 406 and 407. (Outside audit study-amptimed: with this rule its model agrees on 988 of its
    # 1,000 random runs, 933 before.)
    recs = [(300_000, 75, 1, 1), (600_000, 336, 1, 0), (1_300_000, 337, 2, 0), (15_300_000, 113, 1, 1),
            (17_400_000, 398, 2, 0), (17_500_000, 400, 1, 0), (18_400_000, 401, 1, 0), (18_400_000, 402, 1, 0),
            (20_300_000, 404, 1, 0), (20_900_000, 405, 1, 0)]
    p = tmp_path / "t.csv"
    p.write_text(CSV_HEAD + "".join(f"{t},read,{b},{n},{s},0\n" for t, b, n, s in recs))
    ev = tmp_path / "ev.csv"
    r = ps.simulate(ps.open_trace(str(p), cache=False),
                    levels=[ps.Level(3, prefetcher="amp", prefetcher_params={"p_max": 16})],
                    engine={"kind": "timed", "replay": "open"}, device={"name": "fixed", "read_latency_ms": 4.0},
                    scheduler={"policy": "noop"}, events=str(ev))
    e = ps.read_events(str(ev))
    assert list(e.query("time == 18100000 and kind == 'prefetch_dropped'").block) == [403, 404]
    assert list(e.query("time == 20600000 and kind == 'prefetch_dropped'").block) == [406]
    assert r.levels[0]["prefetch_dropped"] == 3


# Three rules of Linux read-ahead's "cached" and stream detection under time that the documents did not
# state (algorithms.md, "Linux read-ahead under time" and the `key` table; outside audit, round 3).


def test_with_cache_demand_miss_off_a_demand_block_being_read_is_not_cached_for_read_ahead(tmp_path):
    # Blocks 10-13 are being read for stream 0 at 0.1 ms, when stream 1 misses 14. Cached (the default),
    # they make context read-ahead count 4 pages before 14 and read 15-18 ahead; never cached
    # (`cache_demand_miss = false`, the level reads them again), they count for nothing: a random read.
    recs = [(0, 10, 4, 0), (100_000, 14, 1, 1)]
    cached, _ = _ondemand(tmp_path, recs, 32, size=64)
    uncached, _ = _ondemand(tmp_path, recs, 32, size=64, options={"cache_demand_miss": False})
    assert (cached.levels[0]["prefetch_issued"], uncached.levels[0]["prefetch_issued"]) == (4, 0)


def test_under_apart_a_requested_page_being_read_again_is_a_miss_for_read_ahead(tmp_path):
    # At 0 the access to 0-3 evicts its own blocks for its window's 4-7 (cache of 4); at 0.1 ms stream 1
    # reads 3, still being read but no longer resident, which under `apart` it reads again: a miss, so
    # read-ahead runs from it, and context read-ahead counts 0-2 (being read, outside the request) as
    # cached: the window [3, 10), whose 8 and 9 find no room.
    r, e = _ondemand(tmp_path, [(0, 0, 4, 0), (100_000, 3, 1, 1)], 8, engine={"prefetch_io": "apart"})
    assert list(e.query("time == 100000 and kind == 'prefetch_dropped'").block) == [8, 9]
    assert r.levels[0]["prefetch_dropped"] == 2


def test_a_detected_stream_continues_past_a_window_page_that_was_dropped(tmp_path):
    # At 0.05 ms the read of 0-3 plans the window [0, 8), whose 4-7 find no room (dropped). At 0.1 ms the
    # read of 8 continues that stream all the same (its window named 7): the next window, [8, 16), 9-15
    # dropped; a new stream would have been a random read.
    r, e = _ondemand(tmp_path, [(0, 100, 4, 0), (50_000, 0, 4, 0), (100_000, 8, 1, 0)], 8, key="detect")
    assert list(e.query("time == 100000 and kind == 'prefetch_dropped'").block) == list(range(9, 16))
