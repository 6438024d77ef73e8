"""Record what prefetchsim does, so a restructuring can show that behaviour did not change.

Writes one text file per aspect into OUT (default: stdout summary only with --check):

- ``list.txt``: every ``prefetchsim list`` table;
- ``experiments.txt``: the canonical config and run id of every run of every ``experiments/*.toml``;
- ``runs.json``: the JSON results (summary, levels, instances, clients) of a fixed set of runs: instant
  two-level with PFC A and B, timed closed-loop with DEMOTE, ``mithril+amp``, per-client L1s over two
  servers (instant and timed), DU, STEP over a networked link;
- ``errors.txt``: the error texts of bad configs.

Usage (from the repository root, with the package installed)::

    python scripts/behaviour_snapshot.py OUT_DIR          # record
    diff -r BEFORE_DIR AFTER_DIR                          # compare two recordings

``tests/test_behaviour_snapshot.py`` records into a temporary directory and compares with the recording
committed in ``tests/data/behaviour`` (regenerate it with this script when a change of behaviour is meant).
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from typing import Any

import prefetchsim as ps

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Run-level fields that depend on the machine or the moment, not on the model.
VOLATILE = {"wall_s", "elapsed_s", "requests_per_s", "seconds", "wall_seconds", "cpu_s"}


def _strip(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _strip(x) for k, x in v.items() if k not in VOLATILE}
    if isinstance(v, list):
        return [_strip(x) for x in v]
    return v


def record_list() -> str:
    out = []
    for what in ["", "policies", "prefetchers", "formats", "generators", "devices"]:
        args = [sys.executable, "-m", "prefetchsim", "list"] + ([what] if what else [])
        p = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
        out.append(f"== prefetchsim list {what} (rc {p.returncode})\n{p.stdout}{p.stderr}")
    return "\n".join(out)


def record_experiments() -> str:
    out = []
    for spec in sorted(glob.glob(os.path.join(ROOT, "experiments", "*.toml"))):
        plan = ps.sweep_plan(spec)
        out.append(f"== {os.path.relpath(spec, ROOT)}: {len(plan)} runs")
        for run in plan.runs:
            out.append(f"{run.run_id} {json.dumps(run.canonical, sort_keys=True)}")
    return "\n".join(out) + "\n"


def _oltp(requests: int = 20000, seed: int = 3) -> ps.Trace:
    return ps.synthetic("oltp-like", requests=requests, seed=seed)


RUNS: dict[str, dict[str, Any]] = {
    "instant-pfc-a": {
        "trace": ("oltp-like", 20000, 3),
        "config": {"level": [
            {"size": "5%", "prefetcher": "pfc-ra", "name": "client"},
            {"size": "2x", "prefetcher": "pfc-ra", "name": "server", "pfc": {"version": "A"}},
        ]},
    },
    "instant-pfc-b-sarc": {
        "trace": ("oltp-like", 20000, 4),
        "config": {"level": [
            {"size": "5%", "prefetcher": "linux", "name": "client"},
            {"size": "2x", "policy": "sarc", "prefetcher": "sarc", "name": "server", "pfc": {"version": "B"}},
        ]},
    },
    "timed-closed-demote": {
        "trace": ("oltp-like", 8000, 5),
        "config": {
            "level": [
                {"size": "5%", "prefetcher": "obl", "name": "client"},
                {"size": "2x", "policy": "lru", "prefetcher": "amp", "options": {"exclusive": "demote"}, "name": "server"},
            ],
            "engine": {"kind": "timed", "replay": "closed"},
            "device": "cheetah9lp",
        },
    },
    "mithril-amp": {
        "trace": ("web-like", 30000, 6),
        "config": {"level": [{"size": "5%", "policy": "lru", "prefetcher": "mithril+amp"}]},
    },
    "instant-du-arc": {
        "trace": ("oltp-like", 20000, 7),
        "config": {"level": [
            {"size": "5%", "prefetcher": "ra", "name": "client"},
            {"size": "2x", "policy": "arc", "prefetcher": "obl", "options": {"exclusive": "du"}, "name": "server"},
        ]},
    },
    "per-client-two-servers": {
        "trace": ("multi-like", 20000, 8),
        "config": {"level": [
            {"size": "1%", "prefetcher": "pfc-ra", "per_client": True},
            {"size": "2x", "instances": 2, "route": "client", "policy": "mq", "prefetcher": "linux"},
        ]},
    },
    "timed-open-per-client-pfc": {
        "trace": ("multi-like", 6000, 9),
        "config": {
            "level": [
                {"size": "1%", "prefetcher": "pfc-ra", "per_client": True},
                {"size": "2x", "prefetcher": "pfc-ra", "pfc": {"version": "A", "per_client": True}},
            ],
            "engine": {"kind": "timed", "replay": "open"},
            "device": "hdd7200",
            "link": {"alpha_ms": 0.2, "beta_ms_per_page": 0.01},
        },
    },
    "timed-step-networked": {
        "trace": ("oltp-like", 6000, 10),
        "config": {
            "level": [
                {"size": "5%", "prefetcher": "linux", "name": "client"},
                {"size": "2x", "prefetcher": "step", "name": "server"},
            ],
            "engine": {"kind": "timed"},
            "device": "ata40",
        },
    },
    "split-stream-lru": {
        "trace": ("web-like", 20000, 11),
        "config": {"level": [{"size": 300, "policy": "splitlru", "prefetcher": "split-t2"},
                             {"size": "2x", "policy": "2q", "prefetcher": "pg"}]},
    },
}

BAD: dict[str, dict[str, Any]] = {
    "unknown-policy": {"level": [{"size": 100, "policy": "lruu"}]},
    "unknown-prefetcher": {"level": [{"size": 100, "prefetcher": "oble"}]},
    "unknown-level-key": {"level": [{"size": 100, "polcy": "lru"}]},
    "zero-size": {"level": [{"size": 0}]},
    "bad-size-text": {"level": [{"size": "5 percent"}]},
    "sarc-prefetcher-over-lru": {"level": [{"size": 100, "policy": "lru", "prefetcher": "sarc"}]},
    "sarc-policy-with-obl": {"level": [{"size": 100, "policy": "sarc", "prefetcher": "obl"}]},
    "bad-prefetcher-param": {"level": [{"size": 100, "prefetcher": {"name": "ra", "blocks": -1}}]},
    "unknown-prefetcher-param": {"level": [{"size": 100, "prefetcher": {"name": "obl", "variantt": "x"}}]},
    "pfc-on-top-level": {"level": [{"size": 100, "pfc": {"version": "A"}}]},
    "pfc-bad-version": {"level": [{"size": 100}, {"size": "2x", "pfc": {"version": "C"}}]},
    "per-client-and-instances": {"level": [{"size": 100, "per_client": True, "instances": 2}]},
    "bad-exclusive": {"level": [{"size": 100}, {"size": "2x", "options": {"exclusive": "sometimes"}}]},
    "unknown-option": {"level": [{"size": 100, "options": {"pf_insrt": "mru"}}]},
    "bad-engine-kind": {"level": [{"size": 100}], "engine": {"kind": "quantum"}},
    "bad-device": {"level": [{"size": 100}], "engine": {"kind": "timed"}, "device": "floppy"},
    "bad-replay": {"level": [{"size": 100}], "engine": {"kind": "timed", "replay": "half-open"}},
    "unknown-top-key": {"level": [{"size": 100}], "levle": []},
}


def record_runs() -> str:
    out: dict[str, Any] = {}
    for name, spec in RUNS.items():
        gen, n, seed = spec["trace"]
        tr = ps.synthetic(gen, requests=n, seed=seed)
        r = ps.simulate(tr, spec["config"])
        from prefetchsim import _core

        canonical = json.loads(_core.canonical_config(json.dumps(spec["config"])))
        out[name] = {"canonical": canonical, "result": _strip(dict(r.raw))}
    return json.dumps(out, indent=1, sort_keys=True) + "\n"


def _outcome(fn: Any, *args: Any) -> str:
    try:
        fn(*args)
        return "NO ERROR"
    except Exception as e:  # the text and the class are what we record
        return f"{type(e).__name__}: {e}"


def record_errors() -> str:
    """Each bad config as `simulate` and as `check_config` (which must not run anything) see it."""
    from prefetchsim import _core

    tr = ps.synthetic("oltp-like", requests=500, seed=1)
    out = []
    for name, cfg in BAD.items():
        out.append(f"== {name}\nsimulate: {_outcome(ps.simulate, tr, cfg)}\n"
                   f"check_config: {_outcome(_core.check_config, json.dumps(cfg))}")
    return "\n".join(out) + "\n"


ASPECTS = {
    "list.txt": record_list,
    "experiments.txt": record_experiments,
    "runs.json": record_runs,
    "errors.txt": record_errors,
}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = argv[0]
    os.makedirs(out_dir, exist_ok=True)
    for fname, fn in ASPECTS.items():
        text = fn()
        tmp = os.path.join(out_dir, fname + ".tmp")
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, os.path.join(out_dir, fname))
        print(f"{fname}: {len(text)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
