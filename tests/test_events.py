"""The per-block event log (docs/events.md): recounting every level's counters from the log with the
independent code of ``event_recount`` gives exactly the counters the run reports, in both engines, for
PFC (versions A and B, and with ``cache_bypassed``), DU, DEMOTE, per-client and K-server levels and a
stack of two prefetchers; and the log's file handling (``events=``, ``--events``, Parquet, no
half-written file)."""

from __future__ import annotations

import collections
import csv
import os
import subprocess
import sys

import prefetchsim as ps
import pytest

from conftest import shared_trace
from event_recount import COUNTERS, LogError, level_totals, recount

REQUESTS = 3000
TIMED = {"kind": "timed", "replay": "closed"}
DEVICE = {"name": "fixed", "read_latency_ms": 2.0}
LINK = {"alpha_ms": 0.1, "beta_ms_per_page": 0.01}


def _levels(l2: dict, l1: dict | None = None) -> list[dict]:
    return [l1 or {"size": 48, "policy": "lru", "prefetcher": "pfc-ra"}, {"size": 192, "policy": "lru", **l2}]


#: name -> (levels, trace); every case runs in both engines.
CASES = {
    "plain": (_levels({"prefetcher": "pfc-ra"}), "oltp"),
    "pfc-A": (_levels({"prefetcher": "pfc-ra", "pfc": {"version": "A"}}), "oltp"),
    "pfc-B": (_levels({"prefetcher": "pfc-ra", "pfc": {"version": "B"}}), "oltp"),
    "pfc-A-cache-bypassed": (_levels({"prefetcher": "pfc-ra", "pfc": {"version": "A", "cache_bypassed": True}}),
                             "oltp"),
    "pfc-readmore-only-amp": (_levels({"prefetcher": "amp",
                                       "pfc": {"version": "A", "mode": "readmore-only"}}), "oltp"),
    "du": (_levels({"prefetcher": "pfc-ra", "options": {"exclusive": "du"}}), "oltp"),
    "demote": (_levels({"prefetcher": "pfc-ra", "options": {"exclusive": "demote"}}), "oltp"),
    "du-evict-now-on-prefetch": (_levels({"prefetcher": "pfc-ra", "options": {
        "exclusive": "du", "du_position": "evict_now", "du_on_prefetch": True}}), "oltp"),
    "demote-none-insert-lru-end": (_levels({"prefetcher": "pfc-ra", "options": {
        "exclusive": "demote", "demote_read_pos": "none", "demote_insert_pos": "lru_end"}}), "oltp"),
    "per-client-l1": (_levels({"prefetcher": "pfc-ra", "pfc": {"version": "A"}},
                              {"size": 24, "policy": "lru", "prefetcher": "pfc-ra", "per_client": True}), "multi"),
    "k-servers-pfc": (_levels({"prefetcher": "pfc-ra", "instances": 3, "route": "stripe", "stripe_blocks": 64,
                               "pfc": {"version": "B"}}), "multi"),
    "k-servers-demote": (_levels({"prefetcher": "pfc-ra", "instances": 2, "route": "client",
                                  "options": {"exclusive": "demote"}}), "multi"),
    "stack": (_levels({"prefetcher": "pfc-ra"},
                      {"size": 64, "policy": "lru", "prefetcher": {"name": "stack", "first": "mithril",
                                                                   "second": "obl"}}), "oltp"),
}


def _trace(kind: str) -> ps.Trace:
    if kind == "multi":
        return ps.synthetic("multi-like", requests=REQUESTS, seed=2)
    return ps.synthetic("oltp-like", requests=REQUESTS, seed=1, client_from="stream")


def _config(levels: list[dict], engine: str) -> dict:
    if engine == "timed":
        return {"level": levels, "engine": {**TIMED, "warmup_requests": 500}, "device": DEVICE, "link": LINK}
    return {"level": levels, "engine": {"warmup_requests": 500}}


def check_recount(result: ps.Result, path: str, timed: bool) -> dict[int, dict[str, int]]:
    """Recount ``path`` and compare with ``result``: every counter of every level and instance."""
    per_cache = recount(path, timed=timed)
    totals = level_totals(per_cache)
    for i, level in enumerate(result.levels):
        got = totals.get(i, dict.fromkeys(COUNTERS, 0))
        diff = {k: (level[k], got[k]) for k in COUNTERS if level[k] != got[k]}
        assert not diff, f"level {i}: (reported, recounted) {diff}"
    for inst in result.instances:
        got = per_cache.get((inst["level"], inst["instance"]), dict.fromkeys(COUNTERS, 0))
        diff = {k: (inst[k], got[k]) for k in COUNTERS if inst[k] != got[k]}
        assert not diff, f"level {inst['level']} instance {inst['instance']}: (reported, recounted) {diff}"
    return totals


@pytest.mark.parametrize("engine", ["instant", "timed"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_log_recounts_to_the_reported_counters(case, engine, tmp_path):
    levels, kind = CASES[case]
    path = str(tmp_path / "events.csv")
    r = ps.simulate(_trace(kind), _config(levels, engine), events=path)
    totals = check_recount(r, path, timed=engine == "timed")
    # The case exercises what it is named for.
    l2 = totals[1]
    assert l2["prefetch_issued"] > 0 and l2["evictions"] > 0, l2
    if case.startswith("pfc-"):
        assert l2["readmore_issued"] > 0, l2
        if "readmore-only" not in case:
            assert l2["silent_hits"] + l2["bypass_reads"] > 0, l2
    if "demote" in case:
        assert l2["demoted_in"] > 0, l2
    if case == "stack":
        assert totals[0]["second_issued"] > 0, totals[0]
    if case == "per-client-l1":
        assert len([i for i in r.instances if i["level"] == 0]) == 3
    if engine == "timed" and case in ("plain", "pfc-A"):
        assert totals[0]["late_prefetch"] > 0, totals[0]


@pytest.mark.parametrize("case", ["plain", "pfc-A", "pfc-B", "k-servers-pfc"])
def test_the_log_recounts_with_prefetch_io_apart(case, tmp_path):
    """The timed engine's ``prefetch_io = "apart"`` (prefetches and readmore read as I/Os of their own)."""
    levels, kind = CASES[case]
    cfg = _config(levels, "timed")
    cfg["engine"]["prefetch_io"] = "apart"
    path = str(tmp_path / "events.csv")
    r = ps.simulate(_trace(kind), cfg, events=path)
    totals = check_recount(r, path, timed=True)
    assert totals[1]["prefetch_issued"] > 0 and totals[0]["late_prefetch"] > 0, totals


def test_a_real_trace_prefix_recounts(tmp_path):
    trace = ps.open_trace(shared_trace("arc/OLTP.lis.zst"), "arc")
    for levels in ([{"size": 256, "policy": "lru", "prefetcher": "amp"}],
                   [{"size": 256, "policy": "lru", "prefetcher": "mithril"},
                    {"size": 1024, "policy": "lru", "prefetcher": "pfc-ra", "pfc": {"version": "A"}}]):
        path = str(tmp_path / "real.csv")
        r = ps.simulate(trace, {"level": levels, "engine": {"limit": 20_000}}, events=path)
        check_recount(r, path, timed=False)


def test_the_recount_catches_a_wrong_log(tmp_path):
    path = str(tmp_path / "events.csv")
    ps.simulate(_trace("oltp"), _config(CASES["pfc-A"][0], "instant"), events=path)
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    # Drop a silent hit (one that used no prefetch): the recount's silent hits no longer agree.
    warm = max(i for i, row in enumerate(rows) if row[3] == "counters_reset")
    i = next(i for i, row in enumerate(rows)
             if i > warm and row[3] == "silent_hit" and rows[i + 1][3] != "prefetch_used")
    bad = str(tmp_path / "bad.csv")
    with open(bad, "w", newline="") as f:
        csv.writer(f).writerows(rows[:i] + rows[i + 1:])
    r = ps.simulate(_trace("oltp"), _config(CASES["pfc-A"][0], "instant"))
    with pytest.raises(AssertionError, match="silent_hits"):
        check_recount(r, bad, timed=False)
    # A hit on a block that was never cached is impossible.
    j = next(i for i, row in enumerate(rows) if row[3] == "hit")
    rows[j][4] = str(10**12)
    with open(bad, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    with pytest.raises(LogError, match="not resident"):
        recount(bad, timed=False)


def test_joins_of_blocks_a_small_server_evicted_while_reading_them_recount(tmp_path):
    # A 2-block MQ server under PFC evicts readmore and prefetched blocks while reading them; PFC's bypass
    # of such a block (`bypass_join`) and the client's prefetch of it (`upper_pending` once cached again,
    # `upper_join_uncached` when there is no room) wait for that read. Before, both read it again.
    levels = [{"size": 34, "policy": "lru", "prefetcher": {"name": "sarc", "degree": 8, "seq_threshold": 1}},
              {"size": 2, "policy": "mq", "prefetcher": "pfc-ra", "pfc": {"version": "A"}}]
    path = str(tmp_path / "events.csv")
    r = ps.simulate(_trace("oltp"), _config(levels, "timed"), events=path)
    check_recount(r, path, timed=True)
    with open(path, newline="") as f:
        kinds = collections.Counter(row["kind"] for row in csv.DictReader(f))
    assert kinds["bypass_join"] > 0 and kinds["upper_join_uncached"] > 0 and kinds["upper_pending"] > 0, kinds


def test_events_off_changes_no_result_and_the_log_holds_every_kind(tmp_path):
    levels = CASES["pfc-A"][0]
    cfg = _config(levels, "timed")
    path = str(tmp_path / "e.csv")
    with_log = ps.simulate(_trace("oltp"), cfg, events=path)
    without = ps.simulate(_trace("oltp"), cfg)
    assert with_log.raw == without.raw
    with open(path, newline="") as f:
        kinds = {row["kind"] for row in csv.DictReader(f)}
    assert {"request", "hit", "miss", "late", "prefetch_issued", "prefetch_used", "arrived", "evict",
            "evict_unused", "silent_hit", "bypass_read", "readmore", "fetch_sent", "fetch_done",
            "counters_reset"} <= kinds


def test_parquet_and_compressed_logs_read_back(tmp_path):
    pytest.importorskip("pyarrow")
    levels = CASES["pfc-B"][0]
    # .zst: written, but read_events needed a package the install did not bring (zstandard).
    names = ("e.csv", "e.parquet", "e.csv.gz", "e.csv.zst")
    paths = [str(tmp_path / n) for n in names]
    for p in paths:
        ps.simulate(_trace("oltp"), _config(levels, "instant"), events=p)
    a, *others = (ps.read_events(p) for p in paths)
    assert list(a.columns) == ["time", "level", "instance", "kind", "block", "len", "origin"]
    assert all(a.equals(o) for o in others)
    assert sorted(os.listdir(tmp_path)) == sorted(names), "no temporary file left"


def test_a_failed_run_leaves_no_log(tmp_path):
    path = tmp_path / "e.csv"
    bad = tmp_path / "bad.lirs.trace"
    bad.write_text("1\n2\nnot-a-number\n")
    with pytest.raises(ps.TraceError):
        ps.simulate(ps.open_trace(str(bad), "lirs"), size=4, events=str(path))
    assert os.listdir(tmp_path) == ["bad.lirs.trace"], "neither the log nor its temporary file"
    with pytest.raises(ps.PrefetchsimError, match="no/such/dir"):
        ps.simulate(_trace("oltp"), size=4, events=str(tmp_path / "no/such/dir/e.csv"))
    with pytest.raises(ps.ConfigError, match="one run"):
        ps.simulate_many(_trace("oltp"), [{"level": [{"size": 4}]}] * 2, events=str(path))


def test_cli_events(tmp_path):
    path = tmp_path / "cli.csv"
    run = subprocess.run([sys.executable, "-m", "prefetchsim", "sim", "oltp-like", "synthetic", "lru+obl", "64",
                          "-t", "requests=500", "--events", str(path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and sum(r["kind"] == "request" for r in rows) == 500
    two = subprocess.run([sys.executable, "-m", "prefetchsim", "sim", "oltp-like", "synthetic", "lru", "64,128",
                          "-t", "requests=500", "--events", str(tmp_path / "x.csv")], capture_output=True, text=True)
    assert two.returncode != 0 and "one run" in two.stderr
    cfg = tmp_path / "run.toml"
    cfg.write_text("[trace]\npath = 'oltp-like'\nformat = 'synthetic'\nparams = { requests = 400 }\n"
                   "[[level]]\nsize = 32\nprefetcher = 'obl'\n[[level]]\nsize = 128\npfc = { version = 'A' }\n")
    out = tmp_path / "run.csv"
    run = subprocess.run([sys.executable, "-m", "prefetchsim", "run", str(cfg), "--events", str(out),
                          "-f", "json"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    with open(out, newline="") as f:
        assert {r["level"] for r in csv.DictReader(f)} == {"0", "1"}


@pytest.mark.parametrize("rows, first_evicted", [
    # Stream 2's read-ahead of 4-7 names block 7 of stream 1's group (6-10 read ahead by stream 1, 9 and
    # 10 evicted since): it moved 7 behind 8, so 7 went before 8.
    ([(5, 2, 1), (1, 3, 2), (22, 2, 3)], [10, 9, 8, 7]),
    # The same stream's read-ahead of 5-8 names 6-8 while 9 is cached: they moved behind 9, so 8 went
    # before 9 (8, 7, 6).
    ([(4, 2, 0), (4, 1, 0), (16, 1, 1)], [9, 8, 7]),
])
def test_streamlru_evicts_a_groups_farthest_block_first_after_a_run_names_cached_blocks(tmp_path, rows, first_evicted):
    # replacement.md §5: inside a group the nearer block is nearer MRU, and the LRU group's
    # farthest-ahead block goes first. A cached block a prefetch run named went to its group's far end
    # (an outside model of the policy found both cases). Records (first, len, stream); RA pm/pa, P = 4.
    path = tmp_path / "t.csv"
    path.write_text("# prefetchsim trace: block_size=4096\n# prefetchsim stream_ids=true\n"
                    "time_ns,op,first,len,stream,client\n"
                    + "".join(f"{i},read,{b},{n},{s},0\n" for i, (b, n, s) in enumerate(rows)))
    mode = "pm" if rows[0][2] else "pa"
    ev = tmp_path / "ev.csv"
    ps.simulate(ps.open_trace(path, cache=False), levels=[ps.Level(8, policy="streamlru", prefetcher="ra",
                prefetcher_params={"p": 4, "mode": mode})], events=str(ev))
    evicted = [int(e.block) for e in ps.read_events(str(ev)).itertuples() if e.kind in ("evict", "evict_unused")]
    assert evicted[:len(first_evicted)] == first_evicted
