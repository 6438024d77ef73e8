"""The PFC experiments (Zhang, Lee, Ma, Zhou, "PFC: Transparent Optimization of Existing Prefetching
Strategies for Multi-level Storage Systems", ICDCS 2008, §4; `shared/docs/algorithms/pfc.md`; the method,
every unknown of the set-up and the criterion fixing it: `docs/papers/pfc.md`).

The paper's grid of two-level timed simulations: traces x {RA(4), Linux (PFC paper mode), SARC, AMP}
(the same algorithm at L1 and L2) x L1 = 5% (H) or 1% (L) of the footprint x L2:L1 = 200%, 100%, 10%,
5% x {native, DU, PFC}; 3 traces x 4 x 2 x 4 = 96 cases. Network `alpha + beta * pages` with alpha =
6 ms, beta = 0.03 ms/page; the Cheetah 9LP disk under a Linux-like I/O scheduler.

Replay [paper §4.2]: the SPC traces (OLTP, WebSearch) carry timestamps and are replayed by them (open
loop); the Purdue Multi trace is replayed synchronously per process (closed loop). The built-in workloads
follow that: `oltp-like` and `web-like` open, `multi-like` closed per client (its three applications).
The open-loop arrival rate is not the generators' own: one time scale per trace puts the mean native
disk utilisation over the trace's cases at `load` (default 0.6), found on a prefix before the grid runs
(docs/papers/pfc.md, "Load"). L2 reads its prefetch (native and PFC's readmore) apart from the demand read
(`engine.prefetch_io = "apart"`), and version A's large-request rule zeroes readmore for the request as
§3.2's prose says (`a_sticky_zero`); `prefetch_io="joined"` and `a_rule="literal"` give the other readings.

A trace given as `PATH[:FORMAT]` is replayed closed per client when it has several clients
(process-level, like Multi), else open when its records carry times, else closed (`replay=` overrides).

Outputs: one row per run (`pfc-runs.csv`); the Table 1 equivalent, the improvement of the mean read
response time over native per case (`pfc-table1.csv`); a summary per PFC version (cases improved, mean,
max, the share of cases where PFC beats DU, in how many cases PFC sped up or slowed down L2 prefetching,
L2 unused-prefetch share against native) beside the paper's figures (`pfc-paper.csv`); the figures
through :mod:`prefetchsim.plot`. :func:`sensitivity` sweeps the unknowns (`--sensitivity`).

"Sped up / slowed down L2 prefetching" [ours; the paper does not define its count]: the blocks L2 reads
ahead of L1's requests — its native prefetches plus PFC's readmore blocks — with PFC, against native.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from .. import _core
from .._argtypes import count
from .._atomic import write_csv
from .._sim import simulate_many
from .._trace import Trace, open_trace, synthetic

# Prefetching algorithms (policy, prefetcher), the same at both levels [paper §4.1].
ALGORITHMS: dict[str, tuple[str, Any]] = {
    "AMP": ("lru", "amp"),
    "SARC": ("sarc", "sarc"),
    "RA": ("lru", "pfc-ra"),
    "Linux": ("lru", {"name": "linux", "mode": "pfc-paper"}),
}
L1_SHARES: dict[str, float] = {"H": 0.05, "L": 0.01}
RATIOS: dict[str, float] = {"200%": 2.0, "100%": 1.0, "10%": 0.1, "5%": 0.05}
# Built-in workloads and their replay [paper §4.2].
TRACES: dict[str, str] = {"oltp-like": "open", "web-like": "open", "multi-like": "closed"}
# Generator parameters calibrated to the paper's workload properties at DEFAULT_REQUESTS (docs/papers/pfc.md,
# "Workloads"): reuse = bytes requested / bytes touched, 10 GB over 529 MB = 19.4 for OLTP and 10 GB over
# 8392 MB = 1.22 for Web [paper §4.2]; reads only (the paper's metric is the read path's; "Writes").
WORKLOADS: dict[str, dict[str, Any]] = {
    "oltp-like": {"footprint_bytes": 195 << 20, "read_share": 1.0},
    "web-like": {"alpha": 0.45},
    "multi-like": {},
}
# The reuse each calibration aims at (None: the paper gives none).
REUSE: dict[str, float | None] = {"oltp-like": 10e9 / 529e6, "web-like": 10e9 / 8392e6, "multi-like": None}
VERSIONS = ("A", "B")
# The paper's ablations (Fig. 7) run on the SPC traces.
ABLATIONS = ("bypass-only", "readmore-only")
LINK = {"alpha_ms": 6.0, "beta_ms_per_page": 0.03}
DEVICE = "cheetah9lp"
# Requests per built-in workload [ours; the paper replays the first 10 GB of each SPC trace].
DEFAULT_REQUESTS = 200_000
# Native disk utilisation the open-loop arrival rate is set to (docs/papers/pfc.md, "Load").
DEFAULT_LOAD = 0.6
# Requests of the prefix the load is calibrated on.
CALIBRATION_REQUESTS = 50_000
PREFETCH_IO = ("apart", "joined")
A_RULES = ("prose", "literal")

# Table 1 of both texts [paper A and B, Table 1]: (trace, size) -> {algorithm: improvement %}.
_PAPER_ROWS = ("200%-H", "200%-L", "5%-H", "5%-L")
_PAPER_A = {
    "OLTP": [(13.98, 8.49, 31.53, 5.23), (9.77, 10.88, 35.77, 9.50), (10.94, 6.74, 34.87, 5.26),
             (7.80, 11.41, 24.87, 15.10)],
    "Web": [(14.66, 0.70, 14.83, 18.23), (12.54, 26.43, 16.42, 29.28), (6.56, 19.21, 15.57, 27.20),
            (5.76, 20.59, 14.80, 27.12)],
    "Multi": [(5.65, 11.13, 24.85, 5.03), (5.43, 8.29, 25.22, 5.18), (5.98, 11.30, 25.61, 5.52),
              (5.86, 10.39, 25.39, 5.87)],
}
_PAPER_B = {
    "OLTP": [(3.55, 4.64, 19.23, 11.7), (0.23, 32.9, 18.49, 13.07), (0.78, 4.35, 22.54, 28.38),
             (1.51, 21.96, 18.17, 51.91)],
    "Web": [(3.03, 3.25, 11.77, 21.88), (-4.67, 15.74, 4.95, 39.39), (7.97, 18.96, 16.34, 39.46),
            (8.16, 19.47, 16.15, 37.00)],
    "Multi": [(5.34, 22.32, 23.89, 3.54), (5.48, 20.16, 24.74, 1.71), (5.85, 22.22, 25.23, 1.96),
              (5.74, 20.01, 24.95, 3.08)],
}
# The texts' headline figures over all 96 cases [paper A and B, §4.3 and abstract].
PAPER_SUMMARY = {
    "PFC A": {"improved": 96, "mean_pct": 14.6, "max_pct": 35.0, "beats_du_share": 0.77, "l2_sped_up": 9,
              "l2_slowed_down": 87},
    "PFC B": {"improved": 94, "mean_pct": 15.7, "max_pct": 52.0, "beats_du_share": 0.75, "l2_sped_up": 32,
              "l2_slowed_down": 64},
}
# Our workloads stand for the paper's traces.
PAPER_TRACE = {"oltp-like": "OLTP", "web-like": "Web", "multi-like": "Multi"}


def paper_table1():
    """Both texts' Table 1 as rows (version, trace, size, algorithm, paper_pct)."""
    import pandas as pd

    rows = []
    for version, t in (("PFC A", _PAPER_A), ("PFC B", _PAPER_B)):
        for trace, cells in t.items():
            for size, vals in zip(_PAPER_ROWS, cells, strict=True):
                for algo, v in zip(("AMP", "SARC", "RA", "Linux"), vals, strict=True):
                    rows.append({"scheme": version, "paper_trace": trace, "size": size, "algorithm": algo,
                                 "paper_pct": v})
    return pd.DataFrame(rows)


def _version(v: str) -> str:
    m = {"a": "A", "000": "A", "published": "A", "b": "B", "001": "B", "early": "B"}
    key = str(v).strip().lower()
    if key not in m:
        raise _core.ConfigError(f"reproduce pfc: version {v!r}: choose A (= 000) or B (= 001)")
    return m[key]


def workload_params(name: str, requests: int, reuse: float = 1.0, write_share: float = 0.0) -> dict[str, Any]:
    """Generator parameters of built-in workload `name` for `requests` requests: the calibrated ones
    (:data:`WORKLOADS`), with the footprint scaled so that the reuse stays the calibrated one times `reuse`
    (the footprint follows the run length), and a share `write_share` of writes."""
    p = {"requests": requests, **WORKLOADS[name]}
    if name != "multi-like":
        base = p.get("footprint_bytes", {"oltp-like": 512 << 20, "web-like": 8 << 30}[name])
        fp = int(base * requests / DEFAULT_REQUESTS / reuse)
        # The Cheetah 9LP holds 9.1 GB; the generators cut the footprint in 1 MiB extents.
        p["footprint_bytes"] = max(1 << 20, min(fp, 8 << 30)) >> 20 << 20
    if write_share:
        p["read_share"] = 1.0 - write_share
    return p


def _trace(spec: str | Trace, requests: int | None, reuse: float = 1.0, write_share: float = 0.0) -> tuple[Trace, str]:
    """A trace and its default replay."""
    if isinstance(spec, Trace):
        return spec, "open"
    if spec in TRACES:
        return synthetic(spec, **workload_params(spec, requests or DEFAULT_REQUESTS, reuse, write_share)), TRACES[spec]
    path, _, fmt = spec.rpartition(":") if ":" in os.path.basename(spec) else (spec, "", "")
    if not path:
        path, fmt = spec, ""
    tr = open_trace(path, fmt or None)
    # Process-level traces (several clients, like Purdue's Multi) replay closed per client, as the paper
    # replays Multi; block-level traces with times (SPC-like) open at their times.
    info = tr.info()
    timed = info.get("duration_ns", 0) > 0
    if info.get("clients", 1) > 1:
        timed = False
    return tr, ("open" if timed else "closed")


def _engine(replay: str, limit: int | None, time_scale: float = 1.0, prefetch_io: str = "apart") -> dict[str, Any]:
    e: dict[str, Any] = {"kind": "timed", "replay": replay, "prefetch_io": prefetch_io}
    if replay == "open" and time_scale != 1.0:
        e["time_scale"] = time_scale
    if replay == "closed":
        # Each process replays synchronously [paper §4.2]: one loop per client, no think time.
        e.update({"per_stream": True, "stream_key": "client", "think": "none"})
    if limit:
        e["limit"] = limit
    return e


def _pfc(version: str, a_rule: str, mode: str | None = None) -> dict[str, Any]:
    p: dict[str, Any] = {"version": version}
    if version == "A" and a_rule == "prose":
        p["a_sticky_zero"] = True
    if mode:
        p["mode"] = mode
    return p


def _level(size: int, algo: str, scheme: str, version: str, a_rule: str) -> dict[str, Any]:
    policy, pf = ALGORITHMS[algo]
    lv: dict[str, Any] = {"size": size, "policy": policy, "prefetcher": pf}
    if scheme == "DU":
        lv["options"] = {"exclusive": "du"}
    elif scheme == "PFC":
        lv["pfc"] = _pfc(version, a_rule)
    elif scheme in ABLATIONS:
        lv["pfc"] = _pfc(version, a_rule, scheme)
    return lv


def configs(fp: int, replay: str, limit: int | None, algorithms: Sequence[str], versions: Sequence[str],
            ablations: bool, time_scale: float = 1.0, *, sizes: Sequence[str] | None = None,
            schemes: Sequence[str] | None = None, prefetch_io: str = "apart", a_rule: str = "prose"):
    """(labels, configs) of one trace's runs. `sizes` picks cases by name ("200%-H", ...); `schemes`
    restricts the schemes ("native", "DU", "PFC" and the ablations)."""
    labels, cfgs = [], []
    engine = _engine(replay, limit, time_scale, prefetch_io)
    for algo in algorithms:
        for l1_name, share in L1_SHARES.items():
            l1 = max(1, int(share * fp))
            for ratio_name, ratio in RATIOS.items():
                size = f"{ratio_name}-{l1_name}"
                if sizes is not None and size not in sizes:
                    continue
                l2 = max(1, int(ratio * l1))
                todo: list[tuple[str, str]] = [("native", ""), ("DU", "")]
                todo += [("PFC", v) for v in versions]
                if ablations:
                    todo += [(a, versions[0]) for a in ABLATIONS]
                for scheme, v in todo:
                    if schemes is not None and scheme not in schemes:
                        continue
                    policy, pf = ALGORITHMS[algo]
                    cfgs.append({"level": [{"size": l1, "policy": policy, "prefetcher": pf},
                                           _level(l2, algo, scheme, v, a_rule)],
                                 "engine": engine, "link": LINK, "device": DEVICE})
                    labels.append({"algorithm": algo, "l1": l1_name, "ratio": ratio_name, "size": size,
                                   "l1_blocks": l1, "l2_blocks": l2, "scheme": scheme, "version": v})
    return labels, cfgs


def _row(label: dict[str, Any], r) -> dict[str, Any]:
    t = r.timing or {}
    l1, l2 = r.levels[0], r.levels[1]
    # L2 references: what the native path saw, plus the bypassed blocks (silent hits and bypass reads).
    l2_refs = l2["demand_accesses"] + l2["upper_prefetch_accesses"] + l2["silent_hits"] + l2["bypass_reads"]
    l2_hits = l2["hits"] + l2["upper_prefetch_hits"]
    native_refs = l2["demand_accesses"] + l2["upper_prefetch_accesses"]
    return {
        **label,
        "rt_mean_ms": t["rt_mean_ms"],
        "rt_p95_ms": t["rt_p95_ms"],
        "requests": r.raw["requests"],
        "l1_hit_ratio": l1["hit_ratio"],
        # "L2 hit ratio (all)" with PFC's silent hits (metrics.md's headline), and the native path's alone.
        "l2_hit_ratio": (l2_hits + l2["silent_hits"]) / l2_refs if l2_refs else 0.0,
        "l2_hit_ratio_native": l2_hits / native_refs if native_refs else 0.0,
        "l2_silent_hits": l2["silent_hits"],
        "l2_bypass_reads": l2["bypass_reads"],
        "l2_readmore_blocks": l2["readmore_blocks"],
        "l2_prefetch_issued": l2["prefetch_issued"],
        # prefetch_issued counts the readmore blocks L2 cached (readmore_issued) among the prefetched.
        "l2_readahead": l2["prefetch_issued"] - l2["readmore_issued"] + l2["readmore_blocks"],
        "unused_prefetch": l1["unused_prefetch"] + l2["unused_prefetch"],
        "l2_unused_prefetch": l2["unused_prefetch"],
        "disk_requests": t["device_requests"],
        "disk_sectors": t["device_sectors"],
        "disk_utilization": t["device_utilization"],
        "makespan_ms": t["makespan_ms"],
    }


def calibrate_load(tr: Trace, fp: int, target: float, algorithms: Sequence[str], *, sizes: Sequence[str] | None = None,
                   prefix: int = CALIBRATION_REQUESTS, prefetch_io: str = "apart", threads: int = 0,
                   tolerance: float = 0.03, rounds: int = 5, start: float = 16.0) -> tuple[float, float]:
    """The open-loop time scale at which the mean native disk utilisation over the cases (`algorithms` x
    `sizes`) on the first `prefix` requests is `target`; returns (scale, utilisation measured there).

    Utilisation is busy time over span, so below saturation it is nearly inverse to the scale: each round
    moves the scale by the ratio measured / target. The first probe is at a light load (`start` times the
    trace's gaps), since a saturated probe's queue grows without bound and costs minutes; a saturated
    probe (>= 0.97) stretches the scale 4x."""
    if not 0.0 < target < 1.0:
        raise _core.ConfigError(f"reproduce pfc: load {target!r}: a native disk utilisation between 0 and 1")
    scale, util = start, 0.0
    for _ in range(rounds):
        _, cfgs = configs(fp, "open", prefix, algorithms, ["A"], False, scale, sizes=sizes, schemes=["native"],
                          prefetch_io=prefetch_io)
        util = sum(r.timing["device_utilization"] for r in simulate_many(tr, cfgs, threads=threads)) / len(cfgs)
        if abs(util - target) <= tolerance:
            break
        scale *= 4.0 if util >= 0.97 else max(util / target, 0.05)
    return scale, util


def run(traces: Sequence[str | Trace] = tuple(TRACES), requests: int | None = DEFAULT_REQUESTS,
        versions: Sequence[str] = VERSIONS, algorithms: Sequence[str] = tuple(ALGORITHMS), ablations: bool = True,
        replay: str | None = None, out_dir: str | None = None, plot: bool = True, threads: int = 0, progress=None, *,
        load: float | None = DEFAULT_LOAD, time_scale: float | None = None, prefetch_io: str = "apart",
        a_rule: str = "prose", sizes: Sequence[str] | None = None, reuse: float = 1.0, write_share: float = 0.0,
        calibration_requests: int = CALIBRATION_REQUESTS):
    """Run the grid; returns (runs, table1, summary) as pandas DataFrames.

    ``requests`` is the length of the built-in workloads (and a limit on real traces; None = whole trace).
    ``versions``: PFC's Algorithm 2 texts to run (A = 000, B = 001); native and DU are shared.
    ``ablations``: also run bypass-only and readmore-only (first version) on the open-loop (SPC-like) traces.
    ``load``: the mean native disk utilisation the open-loop arrival rate is calibrated to (None: the
    trace's own times, or ``time_scale``). ``prefetch_io``: how L2 reads its prefetch and PFC's readmore
    ("apart" or "joined"). ``a_rule``: version A's large-request rule, "prose" (readmore zeroed for the
    request) or "literal" (the loop may set it again). ``sizes``: cases by name (default all eight).
    ``reuse``, ``write_share``: factors of the sensitivity study on the built-in workloads.
    """
    import pandas as pd

    versions = [_version(v) for v in versions] or ["A"]
    bad = [a for a in algorithms if a not in ALGORITHMS]
    if bad:
        raise _core.ConfigError(f"reproduce pfc: unknown algorithm {bad[0]!r}; choose from {', '.join(ALGORITHMS)}")
    if replay not in (None, "open", "closed"):
        raise _core.ConfigError(f"reproduce pfc: replay {replay!r}: 'open' or 'closed'")
    if prefetch_io not in PREFETCH_IO:
        raise _core.ConfigError(f"reproduce pfc: prefetch_io {prefetch_io!r}: one of {', '.join(PREFETCH_IO)}")
    if a_rule not in A_RULES:
        raise _core.ConfigError(f"reproduce pfc: a_rule {a_rule!r}: one of {', '.join(A_RULES)}")
    all_sizes = [f"{r}-{h}" for h in L1_SHARES for r in RATIOS]
    if sizes is not None and (badsz := [s for s in sizes if s not in all_sizes]):
        raise _core.ConfigError(f"reproduce pfc: unknown size {badsz[0]!r}; choose from {', '.join(all_sizes)}")
    rows = []
    for spec in traces:
        tr, rp = _trace(spec, requests, reuse, write_share)
        rp = replay or rp
        builtin = isinstance(spec, str) and spec in TRACES
        limit = None if builtin else requests
        fp = tr.footprint()
        name = spec if builtin else os.path.basename(tr.path)
        scale, probe_util = 1.0, float("nan")
        if rp == "open":
            if time_scale is not None:
                scale = time_scale
            elif load is not None:
                prefix = min(calibration_requests, requests or calibration_requests)
                scale, probe_util = calibrate_load(tr, fp, load, algorithms, sizes=sizes, prefix=prefix,
                                                   prefetch_io=prefetch_io, threads=threads)
        labels, cfgs = configs(fp, rp, limit, algorithms, versions, ablations and rp == "open", scale, sizes=sizes,
                               prefetch_io=prefetch_io, a_rule=a_rule)
        for label, r in zip(labels, simulate_many(tr, cfgs, progress=progress, threads=threads), strict=True):
            rows.append({"trace": name, "replay": rp, "time_scale": scale if rp == "open" else 1.0,
                         "load_target": load if rp == "open" and time_scale is None else float("nan"),
                         "load_probe": probe_util, "footprint_blocks": fp, **_row(label, r)})
    runs = pd.DataFrame(rows)
    table1 = table(runs)
    summ = summary(runs)
    if out_dir is not None:
        os.makedirs(out_dir, exist_ok=True)
        write_csv(runs, os.path.join(out_dir, "pfc-runs.csv"))
        write_csv(table1, os.path.join(out_dir, "pfc-table1.csv"))
        write_csv(summ, os.path.join(out_dir, "pfc-summary.csv"))
        write_csv(paper_distance(table1), os.path.join(out_dir, "pfc-paper.csv"))
        if plot:
            _plots(runs, table1, out_dir)
    return runs, table1, summ


CASE = ["trace", "algorithm", "size"]


def table(runs):
    """Per case and scheme (DU, each PFC version, ablations): the improvement (%) of the mean response time
    over native, ``100 (native - x) / native``, with the L2 read-ahead change against native."""
    import pandas as pd

    base = runs[runs.scheme == "native"].set_index(CASE)
    out = []
    for _, r in runs[runs.scheme != "native"].iterrows():
        b = base.loc[tuple(r[c] for c in CASE)]
        out.append({**{c: r[c] for c in CASE}, "scheme": r.scheme if r.scheme == "DU" else f"{r.scheme} {r.version}",
                    "rt_native_ms": b.rt_mean_ms, "rt_ms": r.rt_mean_ms,
                    "improvement_pct": 100 * (b.rt_mean_ms - r.rt_mean_ms) / b.rt_mean_ms if b.rt_mean_ms else 0.0,
                    "l2_readahead_native": b.l2_readahead, "l2_readahead": r.l2_readahead})
    return pd.DataFrame(out)


def summary(runs):
    """One row per PFC version: cases, cases improved, mean / max / min improvement, share of cases PFC
    beats DU, cases PFC sped up / slowed down L2 prefetching (see the module doc)."""
    import pandas as pd

    t = table(runs)
    out = []
    du = t[t.scheme == "DU"].set_index(CASE)
    for scheme in sorted(s for s in t.scheme.unique() if s.startswith("PFC")):
        p = t[t.scheme == scheme].set_index(CASE)
        d = du.reindex(p.index)
        out.append({
            "scheme": scheme,
            "cases": len(p),
            "improved": int((p.improvement_pct > 0).sum()),
            "mean_pct": p.improvement_pct.mean(),
            "max_pct": p.improvement_pct.max(),
            "min_pct": p.improvement_pct.min(),
            "beats_du_share": float((p.rt_ms < d.rt_ms).mean()),
            "du_improved": int((d.improvement_pct > 0).sum()),
            "du_mean_pct": d.improvement_pct.mean(),
            "l2_sped_up": int((p.l2_readahead > p.l2_readahead_native).sum()),
            "l2_slowed_down": int((p.l2_readahead < p.l2_readahead_native).sum()),
            **_unused_share(runs, scheme),
        })
    return pd.DataFrame(out)


def _unused_share(runs, scheme: str) -> dict[str, float]:
    """Over the cases of `scheme`: L2's prefetched blocks (native prefetch and readmore) never used, as a
    share of those it prefetched, with PFC and with native on the same cases."""
    kind, _, version = scheme.partition(" ")
    sel = runs[(runs.scheme == kind) & (runs.version == version)]
    nat = runs[runs.scheme == "native"].set_index(CASE).reindex(sel.set_index(CASE).index)

    def share(df) -> float:
        issued = df.l2_prefetch_issued.sum()
        return float(df.l2_unused_prefetch.sum() / issued) if issued else float("nan")

    return {"l2_unused_share": share(sel), "l2_unused_share_native": share(nat)}


def paper_distance(t):
    """Per PFC version, our Table 1 against the text's: the 48 cells both have (the paper prints the
    200% and 5% ratios; our workloads stand for its traces) side by side, and a summary of the distance
    (mean absolute difference per cell, difference of the means over those cells)."""
    import pandas as pd

    paper = paper_table1()
    ours = t[t.scheme.str.startswith("PFC")].assign(paper_trace=lambda d: d.trace.map(PAPER_TRACE))
    m = ours.merge(paper, on=["scheme", "paper_trace", "size", "algorithm"], how="inner")
    if m.empty:
        return pd.DataFrame(columns=["scheme", "trace", "size", "algorithm", "ours_pct", "paper_pct", "diff_pct"])
    m = m.rename(columns={"improvement_pct": "ours_pct"})
    m["diff_pct"] = m.ours_pct - m.paper_pct
    return m[["scheme", "trace", "size", "algorithm", "ours_pct", "paper_pct", "diff_pct"]]


def table1_wide(t, scheme: str):
    """The paper's layout: rows trace / size, columns the algorithms, cells the improvement (%)."""
    sub = t[t.scheme == scheme]
    wide = sub.pivot_table(index=["trace", "size"], columns="algorithm", values="improvement_pct", sort=False)
    return wide[[a for a in ALGORITHMS if a in wide.columns]]


def _plots(runs, t, out_dir: str) -> list[str]:
    """Response time, unused prefetch (log scale), L2 hit ratio per case and scheme; the improvement
    heatmaps (Table 1); the bypass-only / readmore-only ablation."""
    from .. import plot
    from .._deps import MissingDependency

    written: list[str] = []
    try:
        plot.new_figure()
    except MissingDependency as e:
        sys.stderr.write(f"prefetchsim: {e}; no plots\n")
        return written
    d = runs.copy()
    d["scheme"] = d.apply(lambda r: r.scheme if r.scheme in ("native", "DU") else f"{r.scheme} {r.version}", axis=1)
    main = d[~d.scheme.str.startswith(ABLATIONS)]
    for trace, sub in main.groupby("trace"):
        sub = sub.assign(case=sub.algorithm + " " + sub["size"])[["case", "scheme", "rt_mean_ms", "unused_prefetch",
                                                                   "l2_hit_ratio"]]
        for metric, fn, stem in (("rt_mean_ms", plot.response_time, "rt"),
                                 ("unused_prefetch", plot.unused_prefetch, "unused"),
                                 ("l2_hit_ratio", plot.response_time, "l2hit")):
            fig, ax = plot.new_figure(figsize=(12, 4.2))
            if fn is plot.unused_prefetch:
                fn(sub, x="case", y=metric, hue="scheme", kind="bar", ax=ax, level=None, title=f"PFC: {trace}")
            else:
                fn(sub, x="case", metric=metric, hue="scheme", ax=ax, level=None, title=f"PFC: {trace}")
            ax.tick_params(axis="x", labelrotation=90)
            written.append(plot.savefig(fig, os.path.join(out_dir, f"pfc-{stem}-{trace}.png")))
    for scheme in sorted(s for s in t.scheme.unique() if s.startswith("PFC")):
        sub = t[t.scheme.isin([scheme, "DU"])].assign(case=lambda x: x.trace + " " + x["size"])
        rows = runs[runs.scheme == "native"].assign(case=lambda x: x.trace + " " + x["size"], scheme="native")
        both = [rows[["case", "algorithm", "scheme", "rt_mean_ms"]]]
        for s in ("DU", scheme):
            part = sub[sub.scheme == s][["case", "algorithm", "rt_ms"]].rename(columns={"rt_ms": "rt_mean_ms"})
            both.append(part.assign(scheme=s))
        import pandas as pd

        long = pd.concat(both)
        rows = long[["case", "algorithm"]].drop_duplicates().shape[0]
        fig, ax = plot.new_figure(figsize=(8, max(6.0, 0.24 * rows + 1.5)))
        plot.improvement(long, "rt_mean_ms", baseline="native", case=["case", "algorithm"], level=None, ax=ax,
                         annotate=True, title=f"Table 1: {scheme} and DU against native")
        written.append(plot.savefig(fig, os.path.join(out_dir, f"pfc-table1-{scheme.replace(' ', '')}.png")))
    abl = t[t.scheme.str.startswith(ABLATIONS) | t.scheme.str.startswith("PFC")]
    if abl.scheme.str.startswith(ABLATIONS).any():
        first = sorted(s for s in abl.scheme.unique() if s.startswith("PFC"))[0]
        keep = abl[abl.scheme.isin([first, *[s for s in abl.scheme.unique() if s.startswith(ABLATIONS)]])]
        keep = keep[keep.trace.isin(keep[keep.scheme.str.startswith(ABLATIONS)].trace.unique())]
        keep = keep.assign(case=keep.trace + " " + keep.algorithm + " " + keep["size"])
        fig, ax = plot.new_figure(figsize=(12, 4.2))
        plot.response_time(keep[["case", "scheme", "improvement_pct"]], x="case", metric="improvement_pct",
                           hue="scheme", ax=ax, level=None, title="PFC ablation: improvement over native (%)")
        ax.tick_params(axis="x", labelrotation=90)
        written.append(plot.savefig(fig, os.path.join(out_dir, "pfc-ablation.png")))
    return written


# --- `prefetchsim reproduce pfc` (the convention of `reproduce/__init__.py`) ---

SUMMARY = "Zhang et al.: PFC and DU against native on two-level timed hierarchies (the paper's 96 cases)"

# Sensitivity axes: name -> (values, run() keyword); the base point is each axis's value in BASE.
SENSITIVITY_AXES: dict[str, tuple[tuple[Any, ...], str]] = {
    "load": ((0.3, 0.45, 0.6, 0.75, 0.9), "load"),
    "reuse": ((0.5, 1.0, 2.0, 4.0), "reuse"),
    "requests": ((15_000, 30_000, 60_000), "requests"),
    "write_share": ((0.0, 0.2, 0.5), "write_share"),
    "model": (("base", "A literal", "joined I/O"), "model"),
}
SENSITIVITY_BASE: dict[str, Any] = {"load": DEFAULT_LOAD, "reuse": 1.0, "requests": 30_000, "write_share": 0.0,
                                    "model": "base"}
SENSITIVITY_SIZES = ("200%-H", "200%-L", "5%-H", "5%-L")
SENSITIVITY_TRACES = ("oltp-like", "web-like")


def sensitivity(axes: Sequence[str] = tuple(SENSITIVITY_AXES), traces: Sequence[str] = SENSITIVITY_TRACES,
                algorithms: Sequence[str] = tuple(ALGORITHMS), sizes: Sequence[str] = SENSITIVITY_SIZES,
                versions: Sequence[str] = VERSIONS, base: dict[str, Any] | None = None, out_dir: str | None = None,
                plot: bool = True, threads: int = 0, progress=None):
    """Sweep each unknown of the set-up alone around the base point (docs/papers/pfc.md, "Sensitivity"):
    one grid (`traces` x `algorithms` x `sizes`, native, DU and each version) per value. Returns one row
    per (axis, value, scheme): cases, improved, mean improvement, the native disk utilisation reached and
    the workloads' measured reuse. `base` overrides :data:`SENSITIVITY_BASE`."""
    import pandas as pd

    b = {**SENSITIVITY_BASE, **(base or {})}
    bad = [a for a in axes if a not in SENSITIVITY_AXES]
    if bad:
        raise _core.ConfigError(f"reproduce pfc: sensitivity axis {bad[0]!r}; choose from {', '.join(SENSITIVITY_AXES)}")
    out = []
    for axis in axes:
        for value in SENSITIVITY_AXES[axis][0]:
            point = {**b, axis: value}
            model = point["model"]
            kw = {"load": point["load"], "reuse": point["reuse"], "write_share": point["write_share"],
                  "prefetch_io": "joined" if model == "joined I/O" else "apart",
                  "a_rule": "literal" if model == "A literal" else "prose"}
            runs, _, summ = run(traces=traces, requests=int(point["requests"]), versions=versions,
                                algorithms=algorithms, ablations=False, sizes=sizes, threads=threads, plot=False,
                                progress=progress, calibration_requests=min(15_000, int(point["requests"])), **kw)
            nat = runs[runs.scheme == "native"]
            util = float(nat[nat.replay == "open"].disk_utilization.mean())
            reuse = {}
            for tname in traces:
                info = synthetic(tname, **workload_params(tname, int(point["requests"]), point["reuse"],
                                                          point["write_share"])).info()
                reuse[f"reuse_{tname}"] = info["bytes_accessed"] / info["footprint_bytes"]
            for _, r in summ.iterrows():
                out.append({"axis": axis, "value": value, "scheme": r.scheme, "cases": int(r.cases),
                            "improved": int(r.improved), "mean_pct": float(r.mean_pct),
                            "du_improved": int(r.du_improved), "du_mean_pct": float(r.du_mean_pct),
                            "native_disk_utilization": util, **reuse})
    df = pd.DataFrame(out)
    if out_dir is not None:
        os.makedirs(out_dir, exist_ok=True)
        write_csv(df, os.path.join(out_dir, "pfc-sensitivity.csv"))
        if plot:
            _sensitivity_plots(df, out_dir)
    return df


def _sensitivity_plots(df, out_dir: str) -> list[str]:
    """Per axis: cases improved (share) and mean improvement against the axis value, one line per PFC
    version and DU."""
    from .. import plot
    from .._deps import MissingDependency

    try:
        plot.new_figure()
    except MissingDependency as e:
        sys.stderr.write(f"prefetchsim: {e}; no plots\n")
        return []
    written = []
    for axis, sub in df.groupby("axis", sort=False):
        fig, axes = plot.new_figure(ncols=2, figsize=(10, 3.6))
        xs = list(dict.fromkeys(sub.value))
        pos = {v: i for i, v in enumerate(xs)}
        lines = [(s, sub[sub.scheme == s], "improved", "mean_pct") for s in sorted(sub.scheme.unique())]
        lines.append(("DU", sub[sub.scheme == sorted(sub.scheme.unique())[0]], "du_improved", "du_mean_pct"))
        for label, d, imp, mean in lines:
            x = [pos[v] for v in d.value]
            axes[0].plot(x, 100 * d[imp] / d.cases, marker="o", label=label)
            axes[1].plot(x, d[mean], marker="o", label=label)
        for ax, ylab in ((axes[0], "cases improved (%)"), (axes[1], "mean improvement (%)")):
            ax.set_xticks(range(len(xs)), [str(v) for v in xs])
            ax.set_xlabel(axis)
            ax.set_ylabel(ylab)
            ax.axhline(0, color="grey", lw=0.5)
            ax.legend(fontsize=8)
        axes[0].axhline(100, color="grey", lw=0.5, ls=":")
        # The texts' figures over their 96 cases, for scale (our sweep covers 32 of its cases).
        for i, (scheme, p) in enumerate(sorted(PAPER_SUMMARY.items())):
            color = f"C{i}"
            axes[0].axhline(100 * p["improved"] / 96, color=color, lw=0.8, ls="--")
            axes[1].axhline(p["mean_pct"], color=color, lw=0.8, ls="--")
        axes[1].text(0.01, 0.99, "dashed: the texts' 96-case figures", transform=axes[1].transAxes, fontsize=7,
                     va="top")
        fig.suptitle(f"PFC sensitivity: {axis} (others at the base point)")
        written.append(plot.savefig(fig, os.path.join(out_dir, f"pfc-sensitivity-{axis}.png")))
    return written


def add_arguments(parser) -> None:
    parser.add_argument("--requests", type=count, default=None, metavar="N",
                        help=f"requests per built-in workload, and a limit on real traces (default "
                             f"{DEFAULT_REQUESTS:,}; --sensitivity: {SENSITIVITY_BASE['requests']:,})")
    parser.add_argument("--trace", "--traces", dest="traces", action="append", metavar="PATH[:FORMAT]",
                        help=f"a trace to use instead of the built-in workloads, or a built-in name "
                             f"({', '.join(TRACES)}) (repeatable)")
    parser.add_argument("--version", dest="pfc_version", default="both", choices=["A", "B", "000", "001", "both"],
                        help="the printed Algorithm 2 to run, A (= 000, published) or B (= 001), or both (default)")
    parser.add_argument("--no-ablations", action="store_true", help="skip the bypass-only / readmore-only runs")
    parser.add_argument("--load", type=float, default=DEFAULT_LOAD, metavar="U",
                        help=f"native disk utilisation the open-loop arrival rate is calibrated to (default "
                             f"{DEFAULT_LOAD}; docs/papers/pfc.md)")
    parser.add_argument("--time-scale", type=float, default=None, metavar="X",
                        help="a fixed factor on the open-loop arrival gaps instead of --load")
    parser.add_argument("--prefetch-io", choices=PREFETCH_IO, default="apart",
                        help="how L2 reads its prefetch and PFC's readmore: apart from the demand read (default) "
                             "or joined to it")
    parser.add_argument("--a-rule", choices=A_RULES, default="prose",
                        help="version A's large-request rule: readmore zeroed for the request as §3.2's prose "
                             "says (default) or the literal pseudocode, whose loop may set it again")
    parser.add_argument("--sensitivity", action="store_true",
                        help="sweep the set-up's unknowns (load, reuse, run length, write share, model) around the "
                             "base point instead of running the grid; writes pfc-sensitivity.csv and figures")
    parser.add_argument("--axis", dest="axes", action="append", choices=list(SENSITIVITY_AXES),
                        help="--sensitivity: an axis to sweep (repeatable; default all)")


def run_from_args(args, progress):
    versions = ["A", "B"] if args.pfc_version == "both" else [args.pfc_version]
    t0, c0 = time.perf_counter(), time.process_time()
    if args.sensitivity:
        base = {"requests": args.requests} if args.requests is not None else {}
        df = sensitivity(axes=args.axes or tuple(SENSITIVITY_AXES), traces=args.traces or SENSITIVITY_TRACES,
                         versions=versions, base=base, out_dir=args.out, plot=not args.no_plot, progress=progress)
        result: Any = ("sensitivity", df)
    else:
        result = run(traces=args.traces or tuple(TRACES), requests=DEFAULT_REQUESTS if args.requests is None else args.requests,
                     versions=versions, ablations=not args.no_ablations, out_dir=args.out, plot=not args.no_plot,
                     progress=progress, load=args.load, time_scale=args.time_scale, prefetch_io=args.prefetch_io,
                     a_rule=args.a_rule)
    # Wall and CPU time of the command (CPU: this process, the simulation threads included).
    sys.stderr.write(f"reproduce pfc: {time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU\n")
    return result


def _paper_beside(t, scheme: str) -> str:
    """Table 1 in the paper's layout, each cell "ours (paper)", and the distance."""
    d = paper_distance(t)
    d = d[d.scheme == scheme]
    wide = table1_wide(t, scheme)
    cells = {(r.trace, r.size, r.algorithm): r.paper_pct for r in d.itertuples()}
    lines = []
    for (trace, size), row in wide.iterrows():
        parts = []
        for algo in wide.columns:
            p = cells.get((trace, size, algo))
            parts.append(f"{row[algo]:7.2f}" + (f" ({p:6.2f})" if p is not None else " " * 9))
        lines.append(f"{trace:>12} {size:>7}  " + "  ".join(parts))
    head = f"{'':>12} {'':>7}  " + "  ".join(f"{a:>16}" for a in wide.columns)
    out = [f"Table 1, {scheme}: improvement (%) of the mean response time over native, ours (paper):", head, *lines]
    if not d.empty:
        out.append(f"distance over the {len(d)} cells the paper prints: mean |ours - paper| = "
                   f"{d.diff_pct.abs().mean():.2f} points; mean ours {d.ours_pct.mean():.2f}% vs paper "
                   f"{d.paper_pct.mean():.2f}%")
    return "\n".join(out) + "\n"


def write_tables(result, out) -> None:
    from .._table import emit

    if isinstance(result, tuple) and result and isinstance(result[0], str):
        out.write("PFC sensitivity (each axis alone around the base point; cases improved and mean improvement per "
                  "version, DU beside):\n")
        emit(result[1].to_dict("records"), "table", out,
             columns=["axis", "value", "scheme", "cases", "improved", "mean_pct", "du_improved", "du_mean_pct",
                      "native_disk_utilization"])
        out.write("the texts, over their 96 cases: " + "; ".join(
            f"{k} improves {v['improved']} of 96, mean {v['mean_pct']}%" for k, v in sorted(PAPER_SUMMARY.items()))
            + "\n")
        return
    runs, table1, summ = result
    for scheme in sorted(s for s in table1.scheme.unique() if s.startswith("PFC")):
        out.write(_paper_beside(table1, scheme) + "\n")
    for scheme in sorted(s for s in table1.scheme.unique() if s == "DU" or s.startswith(ABLATIONS)):
        out.write(f"{scheme}: improvement (%) over native:\n")
        out.write(table1_wide(table1, scheme).to_string(float_format=lambda x: f"{x:.2f}") + "\n\n")
    nat = runs[runs.scheme == "native"].groupby("trace").agg(time_scale=("time_scale", "first"),
                                                              native_disk_utilization=("disk_utilization", "mean"))
    out.write("load (open loop: time scale calibrated to the target; closed loop: as it comes):\n")
    out.write(nat.to_string(float_format=lambda x: f"{x:.3f}") + "\n\n")
    out.write("summary, ours then the paper's:\n")
    rows = summ.to_dict("records")
    for r in list(rows):
        p = PAPER_SUMMARY.get(r["scheme"])
        if p:
            rows.append({"scheme": f"{r['scheme']} (paper)", "cases": 96, **p})
    emit(rows, "table", out, columns=["scheme", "cases", "improved", "mean_pct", "max_pct", "min_pct",
                                      "beats_du_share", "l2_sped_up", "l2_slowed_down", "l2_unused_share",
                                      "l2_unused_share_native"])


def records(result) -> list[dict[str, Any]]:
    if isinstance(result, tuple) and result and isinstance(result[0], str):
        return result[1].to_dict("records")
    return result[0].to_dict("records")
