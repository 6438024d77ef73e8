"""Identical inputs give identical results: across runs, across the thread counts of ``simulate_many``, and
between the command line and the Python API, for several policies and prefetchers and a two-level
hierarchy."""

from __future__ import annotations

import json
import subprocess
import sys

import prefetchsim as ps
import pytest

# One config per family: list policies, ghost-list policies, stream-aware policies, sequential and history
# prefetchers, a stack, and two levels.
CONFIGS = [
    {"level": [{"size": 300, "policy": "lru", "prefetcher": "obl"}]},
    {"level": [{"size": 300, "policy": "arc", "prefetcher": {"name": "ra", "mode": "trigger", "p": 4}}]},
    {"level": [{"size": 300, "policy": "2q", "prefetcher": "linux"}]},
    {"level": [{"size": 300, "policy": "mq", "prefetcher": "amp"}]},
    {"level": [{"size": 300, "policy": "clock", "prefetcher": "pg"}]},
    {"level": [{"size": 300, "policy": "splitlru", "prefetcher": "split-t2"}]},
    {"level": [{"size": 300, "policy": "streamlru", "prefetcher": "split-t1"}]},
    {"level": [{"size": 300, "policy": "sarc", "prefetcher": "sarc"}]},
    {"level": [{"size": 300, "policy": "fifo", "prefetcher": {"name": "mithril", "preset": "libcachesim"}}]},
    {"level": [{"size": 300, "policy": "lru", "prefetcher": "mithril+obl"}]},
    {
        "level": [
            {"name": "client", "size": "5%", "policy": "lru", "prefetcher": {"name": "obl", "variant": "tagged"}},
            {"name": "server", "size": "2x", "policy": "arc", "prefetcher": "pfc-ra"},
        ],
        "engine": {"warmup_requests": 1000},
    },
]


@pytest.fixture(scope="module")
def trace() -> ps.Trace:
    return ps.synthetic("multi-like", requests=20_000, seed=5)


def levels_of(results) -> list[list[dict]]:
    return [r.levels for r in results]


def test_results_are_identical_across_runs_and_thread_counts(trace):
    base = levels_of(ps.simulate_many(trace, CONFIGS, threads=1))
    assert any(lv[0]["prefetch_issued"] > 0 for lv in base), "the prefetchers must have work to do"
    assert base == levels_of(ps.simulate_many(trace, CONFIGS, threads=1)), "a second run differs"
    for threads in (2, 4, 0):
        assert base == levels_of(ps.simulate_many(trace, CONFIGS, threads=threads)), f"threads={threads} differs"
    # Alone or among others, a config gives the same result.
    for cfg, want in zip(CONFIGS, base, strict=True):
        assert ps.simulate(trace, cfg).levels == want


def cli_json(*args: str) -> list[dict]:
    p = subprocess.run([sys.executable, "-m", "prefetchsim", *args, "-f", "json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return [json.loads(x) for x in p.stdout.splitlines()]


def test_cli_sim_and_python_agree_for_several_policies_and_prefetchers(spc_trace):
    algos = ["lru+obl", "arc+ra", "2q+linux", "splitlru+split-t2", "fifo+mithril", "clock+pg"]
    rows = cli_json("sim", spc_trace, "spc", ",".join(algos), "16,30%", "--threads", "2")
    assert len(rows) == 2 * len(algos)
    tr = ps.open_trace(spc_trace, "spc")
    docs = [{"level": [{"size": s, "policy": a.split("+")[0], "prefetcher": a.split("+")[1]}]}
            for a in algos for s in ("16", "30%")]
    py = ps.simulate_many(tr, docs, threads=1)
    for row, r in zip(rows, py, strict=True):
        for k, v in r.levels[0].items():
            assert row[k] == v, (row["policy"], row["prefetcher"], k)


def test_cli_run_and_python_agree_on_a_two_level_config(tmp_path):
    toml = tmp_path / "two.toml"
    toml.write_text(
        "[trace]\npath = 'oltp-like'\nformat = 'synthetic'\nparams = { requests = 30000, seed = 9 }\n\n"
        "[[level]]\nname = 'client'\nsize = '5%'\npolicy = 'lru'\nprefetcher = { name = 'obl', variant = 'tagged' }\n\n"
        "[[level]]\nname = 'server'\nsize = '2x'\npolicy = 'arc'\nprefetcher = 'pfc-ra'\n\n"
        "[engine]\nwarmup_requests = 500\n"
    )
    rows = cli_json("run", str(toml))
    py = ps.simulate(config=str(toml)).levels
    assert [r["name"] for r in rows] == ["client", "server"]
    for row, lv in zip(rows, py, strict=True):
        for k, v in lv.items():
            assert row[k] == v, (lv["name"], k)
    again = cli_json("run", str(toml))
    assert again == rows
