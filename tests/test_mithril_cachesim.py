"""Differential test of Mithril, PG and OBL against libCacheSim's C `cachesim` (commit aa0fc40, built by
`shared/reference/libcachesim/build.sh`) on the CloudPhysics w106 week read little-endian (4 KiB blocks,
LRU), with the `libcachesim` presets.

`CACHESIM_W106` holds the miss ratios `cachesim` printed (`cachesim w106.oracleGeneral.bin oracleGeneral lru
BYTES -p Mithril|PG`, one 4096-byte object per id); they were measured once and are kept here so the test
runs without the GPL binary. With ``PREFETCHSIM_CACHESIM`` pointing at a `cachesim` binary the test measures
them again instead. Causes of the remaining differences are in `docs/papers/mithril.md` §2.
"""

from __future__ import annotations

import lzma
import os
import re
import struct
import subprocess
from pathlib import Path

import prefetchsim as ps
import pytest

from conftest import shared_trace

W106 = "cloudphysics-w106/w106.trace.xz"
FOOTPRINT = 275_171
# (prefetcher, % of the footprint, cache blocks, cachesim's miss ratio).
CACHESIM_W106 = [
    ("Mithril", 0.5, 1375, 0.1803), ("Mithril", 1, 2751, 0.1189), ("Mithril", 2, 5503, 0.0996),
    ("Mithril", 5, 13758, 0.0847), ("Mithril", 10, 27517, 0.0721), ("Mithril", 20, 55034, 0.0645),
    ("PG", 0.5, 1375, 0.2292), ("PG", 1, 2751, 0.1996), ("PG", 2, 5503, 0.1735),
    ("PG", 5, 13758, 0.1407), ("PG", 10, 27517, 0.0810), ("PG", 20, 55034, 0.0647),
    # OBL with `--prefetch-params block-size=4096`: OBL.c gives a prefetched object `block-size` bytes
    # (default 512), so the trace's block size must be passed for a like-for-like run.
    ("OBL", 1, 2751, 0.1821), ("OBL", 5, 13758, 0.1291), ("OBL", 10, 27517, 0.0740),
]
# The sizes CI runs: Mithril where its prefetch table wraps (0.5%, 1%) and where it does not (5%); PG at two.
CI_SIZES = {("Mithril", 1375), ("Mithril", 2751), ("Mithril", 13758), ("PG", 2751), ("PG", 13758), ("OBL", 13758)}
OURS = {"Mithril": {"name": "mithril", "preset": "libcachesim"}, "PG": {"name": "pg", "preset": "libcachesim"},
        "OBL": {"name": "obl", "variant": "libcachesim"}}
# The one known difference (docs/validation.md, "The cause, measured"): PG at 0.5%, ours 0.22929 against
# 0.2292. `cachesim`'s PG reads an uninitialized byte while its window fills and, as built, charges extra
# graph metadata, so its graph freezes earlier; the same source with the byte zeroed prints 0.2293.
# Everywhere else: equal to the printed digit.
TOLERANCE = {("PG", 1375): 0.0002}


def _cachesim_again(tmp_path: Path, trace: str, rows) -> dict[tuple[str, int], float]:
    """Measure the reference with the binary named by PREFETCHSIM_CACHESIM."""
    binary = os.environ["PREFETCHSIM_CACHESIM"]
    og = tmp_path / "w106le.oracleGeneral.bin"
    rec = struct.Struct("<IQIq")
    with lzma.open(trace) as f, open(og, "wb") as g:
        raw = f.read()
        g.write(b"".join(rec.pack(i // 1000, x, 4096, -1) for i, (x,) in enumerate(struct.iter_unpack("<I", raw))))
    out = {}
    for pf, _, blocks, _ in rows:
        extra = ["--prefetch-params", "block-size=4096"] if pf == "OBL" else []
        text = subprocess.run([binary, str(og), "oracleGeneral", "lru", str(blocks * 4096), "-p", pf, *extra],
                              capture_output=True, text=True, check=True).stdout
        out[(pf, blocks)] = float(re.search(r"miss ratio ([0-9.]+)", text).group(1))
    return out


def _check(tmp_path, rows) -> None:
    trace_path = shared_trace(W106)
    ref = {(pf, blocks): mr for pf, _, blocks, mr in rows}
    if os.environ.get("PREFETCHSIM_CACHESIM"):
        ref = _cachesim_again(tmp_path, trace_path, rows)
    trace = ps.open_trace(trace_path, "u32le")
    cfgs = [{"level": [{"size": blocks, "policy": "lru", "prefetcher": OURS[pf]}]} for pf, _, blocks, _ in rows]
    results = ps.simulate_many(trace, cfgs)
    got = {(pf, blocks): r.levels[0]["miss_ratio"] for (pf, _, blocks, _), r in zip(rows, results)}
    bad = []
    for key, want in ref.items():
        print(key, f"ours {got[key]:.4f} cachesim {want:.4f}")
        tol = TOLERANCE.get(key)
        ok = abs(got[key] - want) <= tol if tol is not None else f"{got[key]:.4f}" == f"{want:.4f}"
        if not ok:
            bad.append((key, round(got[key], 4), want))
    assert not bad, bad


def test_mithril_pg_and_obl_match_cachesim_on_w106(tmp_path):
    _check(tmp_path, [r for r in CACHESIM_W106 if (r[0], r[2]) in CI_SIZES])


@pytest.mark.slow
def test_mithril_pg_and_obl_match_cachesim_on_w106_at_every_size(tmp_path):
    _check(tmp_path, CACHESIM_W106)
