"""The Python API: open_trace, simulate (dict / TOML / keywords), results as dict and DataFrame."""

from __future__ import annotations

import subprocess
import sys
import warnings

import prefetchsim as ps
import pytest


def test_simulate_single_level_lru_counts_hits_and_misses(lirs_trace):
    r = ps.simulate(ps.open_trace(lirs_trace, "lirs"), size=3, policy="lru")
    lv = r.levels[0]
    # MRU first: 1 [1], 2 [2 1], 3 [3 2 1], 1 hit [1 3 2], 4 evicts 2 [4 1 3], 5 evicts 3 [5 4 1],
    # 1 hit [1 5 4], 2 misses: 2 hits, 6 misses.
    assert (lv["demand_accesses"], lv["hits"], lv["misses"]) == (8, 2, 6)
    assert lv["hit_ratio"] == pytest.approx(2 / 8)
    assert r.summary["requests"] == 8


def test_results_are_a_dict_and_one_dataframe_row_per_level(spc_trace):
    tr = ps.open_trace(spc_trace)
    r = ps.simulate(tr, levels=[ps.Level(16, "lru", "obl"), ps.Level("2x", "fifo")])
    df = r.to_pandas()
    assert list(df["name"]) == ["L1", "L2"]
    assert list(df["capacity_blocks"]) == [16, 32]
    assert {"hit_ratio", "miss_ratio", "precision", "coverage", "unused_prefetch", "prefetch_issued"} <= set(df)
    # L2 sees exactly L1's fetches.
    l1, l2 = r.levels
    assert l1["fetched_blocks"] == l2["demand_accesses"] + l2["upper_prefetch_accesses"]
    assert isinstance(r.summary, dict) and r.summary["name"] == "L1"


def test_config_as_dict_or_toml_file_gives_the_same_result(spc_trace, tmp_path):
    cfg = {"level": [{"size": 8, "policy": "lru", "prefetcher": {"name": "obl", "variant": "always"}}]}
    a = ps.simulate(spc_trace, cfg)
    toml = tmp_path / "run.toml"
    toml.write_text(
        f"[trace]\npath = {spc_trace!r}\n\n[[level]]\nsize = 8\npolicy = 'lru'\n"
        "prefetcher = { name = 'obl', variant = 'always' }\n"
    )
    b = ps.simulate(config=str(toml))
    assert a.levels == b.levels
    assert a.levels[0]["prefetch_hits"] > 0


def test_footprint_shares_resolve_against_the_trace(spc_trace):
    tr = ps.open_trace(spc_trace)
    # 40 requests x 8 KiB = 80 distinct 4 KiB blocks.
    assert tr.footprint() == 80
    r = ps.simulate(tr, size="10%")
    assert r.levels[0]["capacity_blocks"] == 8
    r = ps.simulate(tr, size=0.5)
    assert r.levels[0]["capacity_blocks"] == 40


def test_objects_mode_makes_each_request_one_object(spc_trace):
    blocks = ps.simulate(ps.open_trace(spc_trace), size=1000).levels[0]
    objects = ps.simulate(ps.open_trace(spc_trace, mode="objects"), size=1000).levels[0]
    assert blocks["demand_accesses"] == 100
    assert objects["demand_accesses"] == 50
    assert objects["hits"] == 10


def test_reads_filter_drops_writes(tmp_path):
    p = tmp_path / "rw.spc"
    p.write_text("0,0,4096,r,0.0\n0,8,4096,w,0.1\n0,16,4096,R,0.2\n")
    r = ps.simulate(ps.open_trace(str(p), ops="reads"), size=4)
    assert r.summary["requests"] == 2


def test_head_returns_the_first_requests(spc_trace):
    df = ps.open_trace(spc_trace).head(3)
    assert list(df["first"]) == [0, 2, 4]
    assert list(df["len"]) == [2, 2, 2]
    assert list(df["op"]) == ["R", "R", "R"]


def test_progress_callback_and_registries(spc_trace):
    seen = []
    r = ps.simulate(spc_trace, size=4, progress=seen.append)
    assert all(isinstance(n, int) for n in seen)
    # However short the run, the last call gives the total (a run under 0.1 s gave no call at all).
    assert seen and seen[-1] == r.summary["requests"] > 0
    assert "lru" in ps.policies() and "obl" in ps.prefetchers()
    assert "spc" in ps.formats() and "oltp-like" in ps.generators()


def test_simulate_many_returns_results_in_config_order(spc_trace):
    cfgs = [{"level": [{"size": s}]} for s in (2, 64, 8)]
    rs = ps.simulate_many(spc_trace, cfgs, threads=2)
    assert [r.levels[0]["capacity_blocks"] for r in rs] == [2, 64, 8]
    assert rs[1].levels[0]["hits"] >= rs[2].levels[0]["hits"] >= rs[0].levels[0]["hits"]


def test_synthetic_workloads_are_deterministic():
    a = ps.simulate(ps.synthetic("zipf", requests=20_000, seed=3), size=500)
    b = ps.simulate(ps.synthetic("zipf", requests=20_000, seed=3), size=500)
    c = ps.simulate(ps.synthetic("zipf", requests=20_000, seed=4), size=500)
    assert a.levels == b.levels
    assert a.levels != c.levels


@pytest.mark.parametrize("engine", [{}, {"kind": "timed"}])
def test_after_a_warm_up_the_prefetch_counters_still_add_up(engine):
    # They counted the warm-up's prefetched blocks in used and unused but not in issued: on w106 with
    # lru+ra(p=32) and a warm-up of 199,900 requests, 148 issued against 21,098 unused.
    tr = ps.synthetic("oltp-like", requests=6000, seed=3)
    r = ps.simulate(tr, levels=[ps.Level("5%", prefetcher="ra"), ps.Level("10%", prefetcher="ra")],
                    engine={"warmup_requests": 5000, **engine})
    for lv in r.levels:
        assert lv["prefetch_issued"] > 0
        assert lv["prefetch_issued"] == (lv["prefetch_used"] + lv["unused_prefetch"] + lv["prefetch_inflight_end"]
                                         + lv["prefetch_invalidated"]), lv


def test_the_summary_names_the_whole_trace_totals_apart_from_the_first_levels_counts():
    # counters.md §4: with a warm-up, summary["requests"] was L1's post-warm-up count (2300) beside a
    # whole-trace summary["blocks"] (14486), so blocks / requests was no mean request size, and the
    # run's own request count (3000) was nowhere in the summary.
    tr = ps.synthetic("oltp-like", requests=3_000, seed=1)
    r = ps.simulate(tr, size=128, engine={"warmup_requests": 700})
    s, l1 = r.summary, r.levels[0]
    assert (s["trace_requests"], s["trace_blocks"], s["warmup_requests"]) == (3_000, r.raw["blocks"], 700)
    assert (s["requests"], s["demand_accesses"]) == (l1["requests"], l1["demand_accesses"]) and s["requests"] == 2_300
    assert "blocks" not in s
    # Every scalar run total of the core's schema is there, under its flat name, as in the DataFrame.
    names = {f["name"] for f in ps.result_schema()["run"] if f["kind"] != "textlist"}
    flat = {{"requests": "trace_requests", "blocks": "trace_blocks"}.get(n, n) for n in names}
    assert flat <= set(s)
    row = r.to_pandas().iloc[0]
    assert {k: row[k] for k in flat} == {k: s[k] for k in flat} and row["requests"] == 2_300
    assert "blocks" not in r.to_pandas()


def test_a_negative_head_is_a_config_error_naming_n(spc_trace):
    # It was a plain ValueError naming the core's range (0 to 2^64 - 1).
    with pytest.raises(ps.ConfigError, match="n: -1 is negative"):
        ps.open_trace(spc_trace).head(-1)


def test_synthetic_takes_ops_and_mode_as_the_command_line_does():
    # `--ops` and `--mode` worked on generators at the command line; ps.synthetic refused them as unknown
    # generator parameters.
    every = ps.synthetic("oltp-like", requests=1000, seed=1)
    reads = ps.synthetic("oltp-like", requests=1000, seed=1, ops="reads")
    assert reads.info()["requests"] == int((every.head(1000)["op"] == "R").sum()) < 1000
    objects = ps.synthetic("oltp-like", requests=1000, seed=1, mode="objects")
    assert objects.info()["requests"] == 1000
    with pytest.raises(ps.ConfigError, match="trace.ops"):
        ps.synthetic("oltp-like", ops="nope").info()


def test_a_trace_past_steps_disk_model_is_said_not_passed_silently(tmp_path):
    # STEP's seek costs come from its disk model; a block past the model's end was folded onto it without
    # a word. Now the run's notes say so, `simulate` warns at the caller's line and the command line
    # prints it; a disk large enough has no note.
    p = tmp_path / "t.lirs.trace"
    p.write_text("0\n4\n8\n3000000\n3000001\n")
    tr = ps.open_trace(str(p))
    with pytest.warns(ps.RunNote, match=r"level\[0\] \(L1\): STEP's disk model 'cheetah9lp' holds 2222905 blocks") as w:
        r = ps.simulate(tr, levels=[ps.Level(64, prefetcher="step")])
    assert w[0].filename == __file__
    assert len(r.notes) == 1 and "reached block 3000001" in r.notes[0]
    assert r.raw["notes"] == r.notes and "notes" not in r.summary
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        big = ps.simulate(tr, levels=[ps.Level(64, prefetcher="step", prefetcher_params={"device": "hdd7200"})])
        assert big.notes == []
        # A stack's part says its notes too; one note per distinct text across simulate_many's runs.
        p.write_text("0\n4\n8\n")
        assert ps.simulate(ps.open_trace(str(p)), levels=[ps.Level(64, prefetcher="step")]).notes == []
    p.write_text("0\n4\n8\n3000000\n3000001\n")
    with pytest.warns(ps.RunNote) as w:
        many = ps.simulate_many(ps.open_trace(str(p)), [{"level": [{"size": s, "prefetcher": "obl+step"}]} for s in (32, 64)])
    assert [len(m.notes) for m in many] == [1, 1] and len(w) == 1
    cli = subprocess.run([sys.executable, "-m", "prefetchsim", "sim", str(p), "auto", "lru+step", "64"],
                         capture_output=True, text=True)
    assert cli.returncode == 0 and "prefetchsim: warning: level[0] (L1): STEP's disk model" in cli.stderr
