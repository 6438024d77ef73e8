"""Every prefetcher and policy of the core's one registry list reaches the Python registry, `prefetchsim
list` and sweeps with no other edit: these tests read the names from the core and name none of them."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import prefetchsim as ps
from prefetchsim import _core

ZIPF = {"path": "zipf", "format": "synthetic", "params": {"requests": 3000, "seed": 1}}


def core_names(kind: str) -> list[str]:
    return [name for name, _ in json.loads(_core.registry())[kind]]


def runnable(name: str) -> str:
    """`stack` has no default parts: its shorthand names two."""
    return "amp+obl" if name == "stack" else name


def test_the_python_registry_is_the_core_list_in_order():
    assert list(ps.prefetchers()) == core_names("prefetchers")
    assert list(ps.policies()) == core_names("policies")
    assert all(ps.prefetchers().values()) and all(ps.policies().values()), "every entry has a summary"


def test_prefetchsim_list_shows_every_registered_component():
    out = subprocess.run([sys.executable, "-m", "prefetchsim", "list"], capture_output=True, text=True, check=True)
    listed = {line.split()[0] for line in out.stdout.splitlines() if line.startswith("  ")}
    missing = (set(core_names("prefetchers")) | set(core_names("policies"))) - listed
    assert not missing, f"not in `prefetchsim list`: {sorted(missing)}"


def test_a_sweep_runs_every_registered_prefetcher():
    names = core_names("prefetchers")
    spec = {"trace": dict(ZIPF), "level": [{"size": "5%"}],
            "sweep": {"level[0].prefetcher": [runnable(n) for n in names]}}
    df = ps.sweep(spec, ThreadPoolExecutor(2), db=None)
    assert len(df) == len(names)
    assert sorted(df.level0_prefetcher) == sorted(runnable(n) for n in names)
    assert (df.requests == 3000).all()
