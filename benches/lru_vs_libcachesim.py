#!/usr/bin/env python3
"""Speed benchmark: prefetchsim's LRU against libcachesim's LRU on the same requests, in the same run.

For each trace (default: ARC P6 and P12 from the shared traces, 4 KiB blocks) and each cache size
(1% and 10% of the footprint in blocks), it replays:
  - prefetchsim on the original compressed trace (decoding, block splitting and simulation timed);
  - prefetchsim on a per-block oracleGeneral file (the exact input libcachesim reads);
  - libcachesim 0.3.5 `LRU.process_trace` on that oracleGeneral file.
Each replay runs in a fresh process; the script prints block accesses per second (millions), wall
seconds of the replay and the peak resident memory of that process, and the throughput ratio
prefetchsim / libcachesim. Miss ratios are printed too: they must be equal.

Usage: python benches/lru_vs_libcachesim.py [TRACE ...] [--repeat N]
Needs: prefetchsim installed (pip install .), libcachesim==0.3.5 (pip install '.[test]').
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACES = Path(os.environ.get("PREFETCHSIM_TRACES", REPO.parent / "shared" / "traces"))

# Each child prints one JSON line: seconds of the replay, miss ratio, accesses.
PREFETCHSIM_CHILD = r"""
import json, sys, time
import prefetchsim as ps
path, fmt, cap = sys.argv[1], sys.argv[2], int(sys.argv[3])
tr = ps.open_trace(path, fmt, block_size=4096)
t, c = time.perf_counter(), time.process_time()
r = ps.simulate(tr, size=cap, policy="lru")
dt, dc = time.perf_counter() - t, time.process_time() - c
lv = r.levels[0]
print(json.dumps({"seconds": dt, "cpu": dc, "miss_ratio": lv["miss_ratio"], "accesses": lv["demand_accesses"]}))
"""

LIBCACHESIM_CHILD = r"""
import json, sys, time
import libcachesim as lcs
path, cap = sys.argv[1], int(sys.argv[2])
t, c = time.perf_counter(), time.process_time()
reader = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE, lcs.ReaderInitParam(ignore_obj_size=True))
mr = lcs.LRU(cache_size=cap).process_trace(reader)[0]
dt, dc = time.perf_counter() - t, time.process_time() - c
print(json.dumps({"seconds": dt, "cpu": dc, "miss_ratio": mr}))
"""


def measure(code: str, *args: str) -> dict:
    """Run a child under a tiny wrapper that reports its own peak RSS via getrusage(RUSAGE_SELF)."""
    wrapper = code + "\nimport resource\nprint(json.dumps({'peak_rss_kib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))\n"
    p = subprocess.run([sys.executable, "-c", wrapper, *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"child failed:\n{p.stderr}")
    lines = [json.loads(x) for x in p.stdout.strip().splitlines()[-2:]]
    res = lines[0]
    res["peak_rss_mib"] = lines[1]["peak_rss_kib"] / 1024
    return res


def best_of(n: int, code: str, *args: str) -> dict:
    """The fastest of `n` runs by wall time and by CPU time (each measured in its own process)."""
    runs = [measure(code, *args) for _ in range(n)]
    best = min(runs, key=lambda r: r["seconds"])
    best["cpu"] = min(r["cpu"] for r in runs)
    best["peak_rss_mib"] = max(r["peak_rss_mib"] for r in runs)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="*", help="ARC .lis traces (default: shared P6 and P12)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest is kept")
    ap.add_argument("--shares", default="0.01,0.1", help="cache sizes as shares of the footprint")
    args = ap.parse_args()
    import prefetchsim as ps

    traces = args.traces or [str(TRACES / "arc" / "P6.lis.zst"), str(TRACES / "arc" / "P12.lis.zst")]
    shares = [float(x) for x in args.shares.split(",")]
    print(f"{'trace':<12} {'size':>6} {'impl':<28} {'M acc/s':>8} {'seconds':>8} {'cpu s':>7} {'peak MiB':>9} {'miss ratio':>11}")
    with tempfile.TemporaryDirectory() as tmp:
        for path in traces:
            name = Path(path).name.split(".")[0]
            tr = ps.open_trace(path, "arc", block_size=4096)
            og = os.path.join(tmp, name + ".blk4k.oracleGeneral.bin")
            tr.convert(og, to="oracle_general", per_block=True)
            fp = tr.footprint()
            for share in shares:
                cap = max(1, int(share * fp))
                rows = [
                    ("prefetchsim (.lis.zst)", best_of(args.repeat, PREFETCHSIM_CHILD, path, "arc", str(cap))),
                    ("prefetchsim (oracleGeneral)", best_of(args.repeat, PREFETCHSIM_CHILD, og, "oracle_general", str(cap))),
                    ("libcachesim (oracleGeneral)", best_of(args.repeat, LIBCACHESIM_CHILD, og, str(cap))),
                ]
                acc = rows[0][1]["accesses"]
                for label, r in rows:
                    rate = acc / r["seconds"] / 1e6
                    print(f"{name:<12} {share:>6.0%} {label:<28} {rate:>8.2f} {r['seconds']:>8.3f} {r['cpu']:>7.3f} "
                          f"{r['peak_rss_mib']:>9.1f} {r['miss_ratio']:>11.6f}")
                lcs_r = rows[2][1]
                print(f"{'':<12} {'':>6} throughput vs libcachesim (wall / cpu): "
                      f"{lcs_r['seconds'] / rows[0][1]['seconds']:.2f}x / {lcs_r['cpu'] / rows[0][1]['cpu']:.2f}x (.lis.zst), "
                      f"{lcs_r['seconds'] / rows[1][1]['seconds']:.2f}x / {lcs_r['cpu'] / rows[1][1]['cpu']:.2f}x (oracleGeneral); "
                      f"peak memory {rows[0][1]['peak_rss_mib'] / lcs_r['peak_rss_mib']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
