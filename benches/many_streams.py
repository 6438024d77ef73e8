"""The timed engine with thousands of sequential streams whose read-ahead keeps most of the cache in flight:
the victim search must not walk the in-flight blocks at every eviction (docs/speed.md, "Many clients").

    python benches/many_streams.py                        # 2,000 streams, 200,000 reads, LRU FIFO ARC MQ 2Q SplitLRU CLOCK
    python benches/many_streams.py --streams 500 --sizes 8000,80000 --policies lru

Each stream reads its own region one 4 KiB block at a time; a request goes to a random stream (seed 1).
Linux read-ahead over a `fixed` 5 ms device, closed loop. Prints CPU seconds per run and the hits and
evictions, so that two builds can be compared for speed and for identical results.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import prefetchsim as ps


def write_trace(path: Path, streams: int, requests: int) -> None:
    """One read of the next block of a random stream per line (the project CSV, one stream id each)."""
    rng = random.Random(1)
    pos = [s * 100_000 for s in range(streams)]
    with path.open("w") as f:
        f.write("# prefetchsim trace: block_size=4096\n# prefetchsim stream_ids=true\n")
        f.write("time_ns,op,first,len,stream,client\n")
        for _ in range(requests):
            s = rng.randrange(streams)
            f.write(f"0,read,{pos[s]},1,{s + 1},0\n")
            pos[s] += 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", type=int, default=2000)
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--sizes", default="32000,320000", help="comma list of cache sizes in blocks")
    ap.add_argument("--policies", default="lru,fifo,arc,mq,2q,split_lru,clock")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "streams.csv"
        write_trace(path, a.streams, a.requests)
        trace = ps.open_trace(path, format="prefetchsim_csv")
        print(f"{a.streams} streams, {a.requests} one-block reads; linux read-ahead, fixed 5 ms, closed loop")
        print(f"{'policy':>10} {'blocks':>8} {'CPU s':>7} {'hits':>8} {'evictions':>10}")
        for size in (int(s) for s in a.sizes.split(",")):
            for policy in a.policies.split(","):
                t = time.process_time()
                r = ps.simulate(trace, size=size, policy=policy, prefetcher="linux",
                                engine={"kind": "timed", "replay": "closed"},
                                device={"name": "fixed", "read_latency_ms": 5})
                cpu = time.process_time() - t
                level = r.levels[0]
                print(f"{policy:>10} {size:>8} {cpu:>7.2f} {level['hits']:>8} {level['evictions']:>10}")


if __name__ == "__main__":
    main()
