"""Memory per cached block of each policy, and the metadata of each prefetcher, measured as peak RSS of
fresh child processes (README "Memory").

A policy's cost per block is (peak RSS with C blocks - peak RSS with 1,000 blocks) / (C - 1,000), on a
scattered Zipf workload over 10^8 objects that fills the cache and its ghost lists with distinct blocks
(the worst case: every structure at its bound). A prefetcher's metadata is the peak RSS of LRU + that
prefetcher minus LRU alone at the same C on the same workload, given per cached block.

    python benches/memory.py                       # C = 2,000,000; 6,000,000 requests
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

POLICIES = ["lru", "fifo", "clock", "arc", "mq", "2q", "streamlru", "splitlru", "sarc"]
PREFETCHERS = ["obl", "ra", "pfc-ra", "split-t2", "linux", "sarc", "amp", "mithril", "pg", "mithril+obl"]


def peak_rss(python: str, policy: str, size: int, requests: int) -> int:
    """Peak RSS in bytes of one `prefetchsim sim` child."""
    argv = [python, "-m", "prefetchsim", "sim", "zipf", "synthetic", policy, str(size), "-t",
            f"requests={requests},objects=100000000,alpha=0.8", "-f", "csv", "--threads", "1"]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit(f"{' '.join(argv)} failed: {err}")
    return usage.ru_maxrss * 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=2_000_000)
    ap.add_argument("--requests", type=int, default=6_000_000)
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    small = 1000
    print(f"| policy | bytes per cached block (C = {a.blocks:,}) |\n|---|---|")
    lru_big = None
    for pol in POLICIES:
        big = peak_rss(a.python, pol, a.blocks, a.requests)
        base = peak_rss(a.python, pol, small, a.requests)
        lru_big = big if pol == "lru" else lru_big
        print(f"| `{pol}` | {(big - base) / (a.blocks - small):.0f} |", flush=True)
    print(f"\n| prefetcher (over LRU) | metadata, bytes per cached block (C = {a.blocks:,}) |\n|---|---|")
    for pf in PREFETCHERS:
        big = peak_rss(a.python, f"lru+{pf}", a.blocks, a.requests)
        print(f"| `{pf}` | {max(big - lru_big, 0) / a.blocks:.1f} |", flush=True)


if __name__ == "__main__":
    main()
