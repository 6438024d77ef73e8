"""Decode once: `simulate_many` of 16 cache sizes over one real trace against one run (issue 16: goal at most
3x). Not a test: run it by hand, preferably on an otherwise idle machine.

    python benches/decode_once.py [--traces p6,w106,oltp] [--repeat 3] [--families lru,fifo,arc,clock,lru+linux]
                                 [--blocks]

For each trace and family it prints the CPU seconds (`time.process_time`, every thread of the process;
medians of R alternating runs) of: one run (the family's config at 10% of the footprint, one `simulate`
call: one pass that decodes and counts the footprint, then the replay) and `simulate_many` of 16 sizes
(0.625% to 10%) on one thread, and their ratio; `simulate_many` on every core is given for information
(its CPU counts both threads), with wall times. Plain LRU sizes are computed from one stack pass
(docs/mrc.md, method 9), plain FIFO and CLOCK sizes from one pass of rings sharing each block's entry
(docs/decode-once.md); the other families (and `clock-engine`, the
same CLOCK with its parameter written out) run one simulation per size. The load average is printed
before and after. Traces come from $PREFETCHSIM_TRACES (default ../shared/traces).

With `--blocks` every size, the single run's included, is given in blocks (the same shares of the
footprint, rounded down): one run then pays no footprint pass, and a batch that is one size family
streams the trace through the family's pass (docs/decode-once.md, "Sizes in blocks").
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import prefetchsim as ps

TRACES = {
    "p6": ("arc/P6.lis.zst", None),
    "w106": ("cloudphysics-w106/w106.trace.xz", "u32le"),
    "oltp": ("arc/OLTP.lis.zst", None),
}
FAMILIES = {
    "lru": {"policy": "lru"},
    "fifo": {"policy": "fifo"},
    "arc": {"policy": "arc"},
    "clock": {"policy": "clock"},
    # The same CLOCK with its default parameter written out: the size families leave configs with
    # parameters to the engine, so this is one simulation per size (what CLOCK cost before its pass).
    "clock-engine": {"policy": {"name": "clock", "bits": 1}},
    "lru+linux": {"policy": "lru", "prefetcher": "linux"},
}
SIZES = [f"{10 * (i + 1) / 16:g}%" for i in range(16)]


def config(size: str | int, family: str) -> dict:
    return {"level": [{"size": size, **FAMILIES[family]}]}


def cpu_and_wall(f) -> tuple[float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    f()
    return time.process_time() - c0, time.perf_counter() - w0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default="p6,w106,oltp", help=f"comma list of {', '.join(TRACES)}")
    ap.add_argument("--families", default="lru", help=f"comma list of {', '.join(FAMILIES)} (default lru)")
    ap.add_argument("--repeat", type=int, default=3, help="medians of R alternating runs (default 3)")
    ap.add_argument("--blocks", action="store_true", help="sizes in blocks instead of shares of the footprint")
    args = ap.parse_args()
    root = Path(os.environ.get("PREFETCHSIM_TRACES", Path(__file__).resolve().parent.parent.parent / "shared" / "traces"))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; CPU seconds, medians of "
          f"{args.repeat} alternating runs; sizes {SIZES[0]}..{SIZES[-1]}{' of the footprint, in blocks' if args.blocks else ''}")
    for name in args.traces.split(","):
        rel, fmt = TRACES[name]
        tr = ps.open_trace(str(root / rel), fmt) if fmt else ps.open_trace(str(root / rel))
        sizes: list[str | int] = list(SIZES)
        if args.blocks:
            footprint = tr.footprint()
            sizes = [max(1, int(footprint * float(s.rstrip("%")) / 100)) for s in SIZES]
        for fam in args.families.split(","):
            configs = [config(s, fam) for s in sizes]
            runs: dict[str, list[tuple[float, float]]] = {"one": [], "many1": [], "many": []}
            for _ in range(args.repeat):
                runs["one"].append(cpu_and_wall(lambda: ps.simulate(tr, config(sizes[-1], fam))))
                runs["many1"].append(cpu_and_wall(lambda: ps.simulate_many(tr, configs, threads=1)))
                runs["many"].append(cpu_and_wall(lambda: ps.simulate_many(tr, configs, threads=0)))
            med = {k: (statistics.median(c for c, _ in v), statistics.median(w for _, w in v)) for k, v in runs.items()}
            (one, one_w), (m1, m1_w), (m, m_w) = med["one"], med["many1"], med["many"]
            print(f"{name} {fam}: one run {one:.3f} s CPU ({one_w:.3f} s wall); simulate_many x16 on 1 thread "
                  f"{m1:.3f} s CPU = {m1 / one:.2f}x one run ({m1_w:.3f} s wall); on every core {m:.3f} s CPU "
                  f"({m_w:.3f} s wall)", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
