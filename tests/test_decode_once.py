"""`simulate_many` decodes the trace once and replays it to every config (issue 16, "decode once"): its
results must equal separate `simulate` calls, each of which streams the trace itself."""

from __future__ import annotations

import lzma
from pathlib import Path

import prefetchsim as ps
from conftest import shared_trace

# Sizes as shares of the footprint (the footprint is counted in the decoding pass) and in blocks, plain
# policies and prefetchers, so that every kind of config reads the replayed requests.
CONFIGS = [
    {"level": [{"size": "1%", "policy": "lru"}]},
    {"level": [{"size": "10%", "policy": "fifo"}]},
    {"level": [{"size": 500, "policy": "arc"}]},
    {"level": [{"size": "5%", "policy": "lru", "prefetcher": {"name": "mithril"}}]},
    {"level": [{"size": 2000, "policy": "lru", "prefetcher": {"name": "obl"}}]},
]


def _same_as_separate_runs(trace: ps.Trace) -> None:
    many = ps.simulate_many(trace, CONFIGS, threads=2)
    assert len(many) == len(CONFIGS)
    for cfg, r in zip(CONFIGS, many, strict=True):
        alone = ps.simulate(trace, cfg)
        assert r.raw == alone.raw, cfg
        assert r.levels[0]["demand_accesses"] > 0


def test_simulate_many_equals_separate_runs_on_a_synthetic_trace():
    _same_as_separate_runs(ps.synthetic("oltp-like", requests=30_000, seed=3))


def test_simulate_many_equals_separate_runs_on_a_real_prefix(tmp_path: Path):
    src = shared_trace("cloudphysics-w106/w106.trace.xz")
    prefix = tmp_path / "w106-prefix.u32"
    with lzma.open(src) as f:
        prefix.write_bytes(f.read(4 * 100_000))
    _same_as_separate_runs(ps.open_trace(str(prefix), "u32le"))
