"""Decode once: `simulate_many` of 16 cache sizes over one real trace against one run (issue 16: goal at most
3x). Not a test: run it by hand on an otherwise idle machine.

    python benches/decode_once.py [--traces p6,w106] [--engine instant] [--repeat 3] [--threads 0]

For each trace it prints the wall time (best of R) of: one run (LRU at 10% of the footprint, one
`simulate` call: one pass that decodes and counts the footprint, then the replay); `simulate_many` of 16
sizes (0.625% to 10%, LRU) on `--threads` threads (0 = every core) and on one thread; and, for reference,
16 separate `simulate` calls (each decoding the trace itself). The ratio is `simulate_many` over one
run. The load average is printed before and after, since other work on a shared machine eats into it.
Traces come from $PREFETCHSIM_TRACES (default ../shared/traces).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import prefetchsim as ps

TRACES = {
    "p6": ("arc/P6.lis.zst", None),
    "w106": ("cloudphysics-w106/w106.trace.xz", "u32le"),
    "oltp": ("arc/OLTP.lis.zst", None),
}
SIZES = [f"{10 * (i + 1) / 16:g}%" for i in range(16)]


def best(f, repeat: int) -> float:
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        t = min(t, time.perf_counter() - t0)
    return t


def config(size: str, engine: str) -> dict:
    return {"level": [{"size": size, "policy": "lru"}], "engine": {"kind": engine}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default="p6,w106", help=f"comma list of {', '.join(TRACES)} (default p6,w106)")
    ap.add_argument("--engine", default="instant", choices=["instant", "timed"])
    ap.add_argument("--repeat", type=int, default=3, help="best of R (default 3)")
    ap.add_argument("--threads", type=int, default=0, help="threads of simulate_many (default 0: every core)")
    ap.add_argument("--no-separate", action="store_true", help="skip the 16 separate simulate calls")
    args = ap.parse_args()
    root = Path(os.environ.get("PREFETCHSIM_TRACES", Path(__file__).resolve().parent.parent.parent / "shared" / "traces"))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; engine {args.engine}; "
          f"best of {args.repeat}; sizes {SIZES[0]}..{SIZES[-1]}")
    for name in args.traces.split(","):
        rel, fmt = TRACES[name]
        tr = ps.open_trace(str(root / rel), fmt) if fmt else ps.open_trace(str(root / rel))
        configs = [config(s, args.engine) for s in SIZES]
        one = best(lambda: ps.simulate(tr, config("10%", args.engine)), args.repeat)
        many = best(lambda: ps.simulate_many(tr, configs, threads=args.threads), args.repeat)
        many1 = best(lambda: ps.simulate_many(tr, configs, threads=1), args.repeat)
        line = (f"{name}: one run {one:.3f} s; simulate_many x16 {many:.3f} s ({many / one:.2f}x one run), "
                f"on 1 thread {many1:.3f} s ({many1 / one:.2f}x)")
        if not args.no_separate:
            sep = best(lambda: [ps.simulate(tr, c) for c in configs], 1)
            line += f"; 16 separate calls {sep:.3f} s ({sep / one:.2f}x)"
        print(line, flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
