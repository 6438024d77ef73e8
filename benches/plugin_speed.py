#!/usr/bin/env python3
"""Cost of Python plugins: requests per second of a replay with a Python prefetcher or policy against
the built-in equivalent, on a synthetic and a real trace.

Configurations (one level, LRU unless said, size 2% of the footprint):
  - none            built-in, no prefetching (the floor: decoding and the cache alone)
  - py-nothing      a Python prefetcher whose on_access returns None (the cost of one call per request)
  - ra-pa           built-in read-ahead, mode pa, p = 4
  - py-next4        a Python prefetcher returning range(end, end + 4) (the same counters as ra-pa)
  - py-next4-list   the same answering a list of 4 ints
  - lru+obl         built-in LRU with OBL
  - py-lru+obl      a Python LRU (OrderedDict) with OBL: 3-4 Python calls per missing block
Each configuration is replayed `--repeat` times in this process (one run at a time, one thread); the
best wall time counts (least disturbed by the other processes on the machine). Requests/s counts the
whole replay, decoding included, as a user sees it; "us/req over none" is the extra time per request
against the `none` run of the same trace.

Usage: python benches/plugin_speed.py [--requests N] [--repeat K]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import prefetchsim as ps

REPO = Path(__file__).resolve().parents[1]
TRACES = Path(os.environ.get("PREFETCHSIM_TRACES", REPO.parent / "shared" / "traces"))


# The plugins measured are the ones the tests check against the built-ins (same counters).
sys.path.insert(0, str(REPO / "tests"))

CONFIGS = {
    "none": {"policy": "lru", "prefetcher": "none"},
    "py-nothing": {"policy": "lru", "prefetcher": "plugin_examples:Nothing"},
    "ra-pa": {"policy": "lru", "prefetcher": {"name": "ra", "mode": "pa", "p": 4}},
    "py-next4": {"policy": "lru", "prefetcher": {"name": "plugin_examples:NextN", "n": 4}},
    "py-next4-list": {"policy": "lru", "prefetcher": "plugin_examples:NextNList"},
    "lru+obl": {"policy": "lru", "prefetcher": "obl"},
    "py-lru+obl": {"policy": "plugin_examples:Lru", "prefetcher": "obl"},
}
SAME = [("ra-pa", "py-next4"), ("ra-pa", "py-next4-list"), ("lru+obl", "py-lru+obl")]


def bench(name: str, trace: ps.Trace, limit: int | None, repeat: int) -> None:
    print(f"\n{name}")
    print(f"{'config':<15} {'requests':>9} {'best s':>8} {'M req/s':>8} {'us/req over none':>17}")
    engine = {"limit": limit} if limit else None
    counters = {}
    floor = None
    for label, level in CONFIGS.items():
        best = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            r = ps.simulate(trace, levels=[{"size": "2%", **level}], engine=engine)
            best = min(best, time.perf_counter() - t)
        n = r.summary["requests"]
        lv = r.levels[0]
        counters[label] = (lv["hits"], lv["misses"], lv["prefetch_issued"], lv["evictions"], lv["fetches"])
        floor = best if label == "none" else floor
        extra = f"{(best - floor) / n * 1e6:17.2f}" if label != "none" else f"{'':>17}"
        print(f"{label:<15} {n:>9} {best:8.3f} {n / best / 1e6:8.3f} {extra}")
    for a, b in SAME:
        print(f"  counters {a} == {b}: {counters[a] == counters[b]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=1_000_000, help="requests per trace (default 1,000,000)")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    bench(f"synthetic oltp-like, {a.requests} requests",
          ps.synthetic("oltp-like", requests=a.requests, seed=1), None, a.repeat)
    real = TRACES / "arc" / "OLTP.lis.zst"
    if real.is_file():
        bench(f"ARC OLTP (first {a.requests} requests)", ps.open_trace(str(real), "arc"), a.requests, a.repeat)
    else:
        print(f"\n{real} not found (set PREFETCHSIM_TRACES): real trace skipped")


if __name__ == "__main__":
    main()
