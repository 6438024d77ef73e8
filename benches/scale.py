"""Peak memory and wall time of long replays: memory must follow the cache and the decoding window, not the
trace length. Each run is `prefetchsim sim` in a fresh child process; its peak RSS comes from wait4().

    python benches/scale.py                      # 100M zipf requests, LRU at 10,000 blocks and at 1%
    python benches/scale.py --requests 1e7 --objects 1e8 --sizes 1%,350000
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=float, default=1e8)
    ap.add_argument("--objects", type=float, default=1e6, help="zipf objects (default 1,000,000)")
    ap.add_argument("--sizes", default="10000,1%", help="comma list of LRU sizes (blocks or footprint shares)")
    ap.add_argument("--policy", default="lru")
    ap.add_argument("--python", default=sys.executable, help="interpreter with prefetchsim installed")
    a = ap.parse_args()
    params = f"requests={int(a.requests)},objects={int(a.objects)}"
    print(f"zipf {params}; {a.policy}; one child process per size")
    print(f"{'size':>10} {'capacity':>10} {'wall s':>8} {'CPU s':>8} {'M req/s (CPU)':>14} {'peak RSS MiB':>13}")
    for size in a.sizes.split(","):
        argv = [a.python, "-m", "prefetchsim", "sim", "zipf", "synthetic", a.policy, size, "-t", params,
                "-f", "csv", "--threads", "1"]
        # Popen + wait4 on the child gives that child's own rusage (RUSAGE_CHILDREN would mix runs).
        t0 = time.monotonic()
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out = p.stdout.read()
        err = p.stderr.read()
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        if status != 0:
            sys.exit(f"{' '.join(argv)} failed: {err}")
        header, row = out.splitlines()[:2]
        rec = dict(zip(header.split(","), row.split(","), strict=True))
        cpu = usage.ru_utime + usage.ru_stime
        print(f"{size:>10} {rec['capacity_blocks']:>10} {wall:8.1f} {cpu:8.1f} {a.requests / cpu / 1e6:14.1f} "
              f"{usage.ru_maxrss / 1024:13.0f}", flush=True)


if __name__ == "__main__":
    main()
