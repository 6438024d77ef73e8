#!/usr/bin/env python3
"""The admission floor of each prefetcher's time against plain LRU (docs/prefetcher-speed.md).

Every block a prefetcher fetches enters the cache and later pushes another out, as a demand miss does.
Plain LRU at several cache sizes (1% to 60% of the footprint) gives its CPU time per replay as
`t = a + b * misses` (least squares; `a`: the per-request work, `b`: one admission, eviction and fetch).
A prefetcher that misses `m` times and issues `p` blocks does at least `a + b * (m + p)` of that work
before deciding anything, so `(a + b * (m + p)) / t_LRU` at 10% of the footprint is a floor of its ratio
in `benches/prefetcher_speed.py`, measured, not argued: the part no prefetcher code can remove without
fetching fewer blocks (which would change its results).

Usage: python benches/prefetcher_floor.py [TRACE:FORMAT ...] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from prefetcher_speed import CONFIGS, TRACES


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="*", help="TRACE:FORMAT pairs")
    ap.add_argument("--repeat", type=int, default=5, help="replays per point (the median counts)")
    args = ap.parse_args()
    import prefetchsim as ps

    traces = [t.rsplit(":", 1) for t in args.traces] or [
        [str(TRACES / "arc" / "P6.lis.zst"), "arc"],
        [str(TRACES / "arc" / "OLTP.lis.zst"), "arc"],
        [str(TRACES / "cloudphysics-w106" / "w106.trace.xz"), "u32le"],
    ]
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for path, fmt in traces:
        tr = ps.open_trace(path, fmt, block_size=4096)
        fp = tr.footprint()
        cap = max(1, int(0.1 * fp))

        def run(size: int, policy: str, pf) -> tuple[float, dict]:
            cfg = {"level": [{"size": size, "policy": policy, "prefetcher": pf}]}
            times, level = [], {}
            for _ in range(args.repeat):
                t = time.process_time()
                level = ps.simulate_many(tr, [cfg], threads=1)[0].levels[0]
                times.append(time.process_time() - t)
            return statistics.median(times), level

        points = [run(max(1, int(s * fp)), "lru", "none") for s in (0.01, 0.03, 0.1, 0.3, 0.6)]
        b, a = statistics.linear_regression([lv["misses"] for _, lv in points], [t for t, _ in points])
        t_lru, _ = run(cap, "lru", "none")
        print(f"{Path(path).name.split('.')[0]}: plain LRU t = {a:.4f} s + {b * 1e9:.1f} ns x misses; "
              f"at 10%: {t_lru:.4f} s")
        for policy, pf in CONFIGS[1:]:
            lv = ps.simulate(tr, {"level": [{"size": cap, "policy": policy, "prefetcher": pf}]}).levels[0]
            floor = (a + b * (lv["misses"] + lv["prefetch_issued"])) / t_lru
            print(f"  {json.dumps(pf):42} misses {lv['misses']:>8} issued {lv['prefetch_issued']:>8} "
                  f"floor {floor:.2f}x LRU")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
