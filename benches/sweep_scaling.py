"""Sweep scaling: the same 16-run sweep on 1 and on 2 local worker processes (one Rust thread per task),
wall time of each and the speed-up. Not a test: run it by hand on an otherwise idle machine.

    python benches/sweep_scaling.py [--requests N] [--workers 1,2] [--repeat R]

Prints the load average before and after, since on a shared machine other work eats into the ratio, and
a reference measured in the same run: the same 16 configs through `simulate_many` in this process with
1 and 2 Rust threads (no processes, no database), so that the sweep's own cost and its scaling can be told
apart from the machine's. Target: >= 1.7x on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import time

import prefetchsim as ps


def spec(requests: int) -> dict:
    return {
        "trace": {"path": "oltp-like", "format": "synthetic", "params": {"requests": requests, "seed": 7}},
        "level": [{"size": "5%"}],
        "sweep": {"level[0].size": ["1%", "2%", "5%", "10%"], "level[0].policy": ["lru", "arc", "clock", "2q"]},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=1_500_000, help="requests per run (default 1.5M)")
    ap.add_argument("--workers", default="1,2", help="comma list of worker counts (default 1,2)")
    ap.add_argument("--repeat", type=int, default=2, help="best of R sweeps per worker count (default 2)")
    args = ap.parse_args()
    s = spec(args.requests)
    n = len(ps.sweep_plan(s))
    print(f"{n} runs of {args.requests:,} requests each (oltp-like, one level); "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    times: dict[int, float] = {}
    rows = None
    for w in (int(x) for x in args.workers.split(",")):
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            df = ps.sweep(s, db=None, workers=w, threads=1, batch_size=1, progress=False)
            best = min(best, time.perf_counter() - t0)
            got = df.drop(columns=["host", "pid", "task_wall_s", "finished_at"])
            assert rows is None or got.equals(rows), "results differ between worker counts"
            rows = got
        times[w] = best
        m_req = n * args.requests / best / 1e6
        print(f"  {w} worker(s): {best:6.2f} s  ({n / best:5.2f} runs/s, {m_req:5.1f} M requests/s)")
    base = times.get(1)
    for w, t in times.items():
        if base and w != 1:
            print(f"speed-up {w} workers / 1 worker: {base / t:.2f}x")
    # Reference: the core alone, the same configs in this process.
    plan = ps.sweep_plan(s)
    tr = next(iter(plan.traces.values())).open()
    configs = [r.config for r in plan.runs]
    ref: dict[int, float] = {}
    for t in sorted({1, *times}):
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            ps.simulate_many(tr, configs, threads=t)
            best = min(best, time.perf_counter() - t0)
        ref[t] = best
        print(f"  reference simulate_many, {t} thread(s): {best:6.2f} s")
        if t in times:
            print(f"    sweep / reference at {t}: {times[t] / best:.2f} (1.00 = no sweep overhead)")
    if 1 in ref:
        for t, v in ref.items():
            if t != 1:
                print(f"reference speed-up {t} threads / 1 thread: {ref[1] / v:.2f}x")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
