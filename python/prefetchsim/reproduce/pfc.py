"""The PFC experiments (Zhang, Lee, Ma, Zhou, "PFC: Transparent Optimization of Existing Prefetching
Strategies for Multi-level Storage Systems", ICDCS 2008, §4; `shared/docs/algorithms/pfc.md`).

The paper's grid of two-level timed simulations: traces x {RA(4), Linux (PFC paper mode), SARC, AMP}
(the same algorithm at L1 and L2) x L1 = 5% (H) or 1% (L) of the footprint x L2:L1 = 200%, 100%, 10%,
5% x {native, DU, PFC}; 3 traces x 4 x 2 x 4 = 96 cases. Network `alpha + beta * pages` with alpha =
6 ms, beta = 0.03 ms/page; the Cheetah 9LP disk under a Linux-like I/O scheduler.

Replay [paper §4.2]: the SPC traces (OLTP, WebSearch) carry timestamps and are replayed by them (open
loop); the Purdue Multi trace is replayed synchronously per process (closed loop, the next request of a
process when its last one completes). The built-in workloads follow that: `oltp-like` and `web-like`
open, `multi-like` closed per client (its three applications). A trace given as `PATH[:FORMAT]` is
replayed closed per client when it has several clients (process-level, like Multi), else open when its
records carry times, else closed (`replay=` overrides).

Outputs: one row per run (`pfc-runs.csv`); the Table 1 equivalent, the improvement of the mean read
response time over native per case (`pfc-table1.csv`); a summary per PFC version (cases improved, mean,
max, the share of cases where PFC beats DU, in how many cases PFC sped up or slowed down L2 prefetching);
the figures through :mod:`prefetchsim.plot`.

"Sped up / slowed down L2 prefetching" [ours; the paper does not define its count]: the blocks L2 reads
ahead of L1's requests — its native prefetches plus PFC's readmore blocks — with PFC, against native.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from .. import _core
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
# Built-in workloads: their replay [paper §4.2] and, in open loop, the factor on their arrival gaps. The
# generators' arrival rates are ours (8 ms and 3 ms mean gaps); replayed as they are, web-like keeps the
# Cheetah 9LP busy 100% of the time (mostly random reads of 8-16 KiB cost 7-9 ms each) and its queue grows
# without bound (mean response times of tens of seconds, whatever the prefetcher). The factors stretch the
# gaps to 12 ms so that the disk is busy well below saturation [ours].
TRACES: dict[str, tuple[str, float]] = {"oltp-like": ("open", 2.0), "web-like": ("open", 8.0),
                                        "multi-like": ("closed", 1.0)}
VERSIONS = ("A", "B")
# The paper's ablations (Fig. 7) run on the SPC traces.
ABLATIONS = ("bypass-only", "readmore-only")
LINK = {"alpha_ms": 6.0, "beta_ms_per_page": 0.03}
DEVICE = "cheetah9lp"
# Requests per built-in workload: near the paper's trace lengths (OLTP's first 10 GB is about 570,000
# requests, Web's about 330,000) and fast enough for the 96-case grid on 2 cores [ours].
DEFAULT_REQUESTS = 200_000


def _version(v: str) -> str:
    m = {"a": "A", "000": "A", "published": "A", "b": "B", "001": "B", "early": "B"}
    key = str(v).strip().lower()
    if key not in m:
        raise _core.ConfigError(f"reproduce pfc: version {v!r}: choose A (= 000) or B (= 001)")
    return m[key]


def _trace(spec: str | Trace, requests: int | None) -> tuple[Trace, str, float]:
    """A trace, its default replay and time scale."""
    if isinstance(spec, Trace):
        return spec, "open", 1.0
    if spec in TRACES:
        params = {"requests": requests} if requests else {}
        return (synthetic(spec, **params), *TRACES[spec])
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
    return tr, ("open" if timed else "closed"), 1.0


def _engine(replay: str, requests: int | None, real: bool, time_scale: float = 1.0) -> dict[str, Any]:
    e: dict[str, Any] = {"kind": "timed", "replay": replay}
    if replay == "open" and time_scale != 1.0:
        e["time_scale"] = time_scale
    if replay == "closed":
        # Each process replays synchronously [paper §4.2]: one loop per client, no think time.
        e.update({"per_stream": True, "stream_key": "client", "think": "none"})
    if real and requests:
        e["limit"] = requests
    return e


def _level(size: int, algo: str, scheme: str, version: str) -> dict[str, Any]:
    policy, pf = ALGORITHMS[algo]
    lv: dict[str, Any] = {"size": size, "policy": policy, "prefetcher": pf}
    if scheme == "DU":
        lv["options"] = {"exclusive": "du"}
    elif scheme == "PFC":
        lv["pfc"] = {"version": version}
    elif scheme in ABLATIONS:
        lv["pfc"] = {"version": version, "mode": scheme}
    return lv


def configs(fp: int, replay: str, requests: int | None, real: bool, algorithms: Sequence[str],
            versions: Sequence[str], ablations: bool, time_scale: float = 1.0):
    """(labels, configs) of one trace's runs."""
    labels, cfgs = [], []
    engine = _engine(replay, requests, real, time_scale)
    for algo in algorithms:
        for l1_name, share in L1_SHARES.items():
            l1 = max(1, int(share * fp))
            for ratio_name, ratio in RATIOS.items():
                l2 = max(1, int(ratio * l1))
                schemes: list[tuple[str, str]] = [("native", ""), ("DU", "")]
                schemes += [("PFC", v) for v in versions]
                if ablations:
                    schemes += [(a, versions[0]) for a in ABLATIONS]
                for scheme, v in schemes:
                    policy, pf = ALGORITHMS[algo]
                    cfgs.append({"level": [{"size": l1, "policy": policy, "prefetcher": pf},
                                           _level(l2, algo, scheme, v)],
                                 "engine": engine, "link": LINK, "device": DEVICE})
                    labels.append({"algorithm": algo, "l1": l1_name, "ratio": ratio_name,
                                   "size": f"{ratio_name}-{l1_name}", "l1_blocks": l1, "l2_blocks": l2,
                                   "scheme": scheme, "version": v})
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


def run(traces: Sequence[str | Trace] = tuple(TRACES), requests: int | None = DEFAULT_REQUESTS,
        versions: Sequence[str] = VERSIONS, algorithms: Sequence[str] = tuple(ALGORITHMS), ablations: bool = True,
        replay: str | None = None, out_dir: str | None = None, plot: bool = True, threads: int = 0, progress=None):
    """Run the grid; returns (runs, table1, summary) as pandas DataFrames.

    ``requests`` is the length of the built-in workloads (and a limit on real traces; None = whole trace).
    ``versions``: PFC's Algorithm 2 texts to run (A = 000, B = 001); native and DU are shared.
    ``ablations``: also run bypass-only and readmore-only (first version) on the open-loop (SPC-like) traces.
    """
    import pandas as pd

    versions = [_version(v) for v in versions] or ["A"]
    bad = [a for a in algorithms if a not in ALGORITHMS]
    if bad:
        raise _core.ConfigError(f"reproduce pfc: unknown algorithm {bad[0]!r}; choose from {', '.join(ALGORITHMS)}")
    if replay not in (None, "open", "closed"):
        raise _core.ConfigError(f"reproduce pfc: replay {replay!r}: 'open' or 'closed'")
    rows = []
    for spec in traces:
        tr, rp, scale = _trace(spec, requests)
        rp = replay or rp
        real = not (isinstance(spec, str) and spec in TRACES)
        fp = tr.footprint()
        name = spec if isinstance(spec, str) and spec in TRACES else os.path.basename(tr.path)
        labels, cfgs = configs(fp, rp, requests, real, algorithms, versions, ablations and rp == "open", scale)
        for label, r in zip(labels, simulate_many(tr, cfgs, progress=progress, threads=threads), strict=True):
            rows.append({"trace": name, "replay": rp, "time_scale": scale if rp == "open" else 1.0,
                         "footprint_blocks": fp, **_row(label, r)})
    runs = pd.DataFrame(rows)
    table1 = table(runs)
    summ = summary(runs)
    if out_dir is not None:
        os.makedirs(out_dir, exist_ok=True)
        runs.to_csv(os.path.join(out_dir, "pfc-runs.csv"), index=False)
        table1.to_csv(os.path.join(out_dir, "pfc-table1.csv"), index=False)
        summ.to_csv(os.path.join(out_dir, "pfc-summary.csv"), index=False)
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
        })
    return pd.DataFrame(out)


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


def add_arguments(parser) -> None:
    parser.add_argument("--requests", type=int, default=None, metavar="N",
                        help=f"requests per built-in workload, and a limit on real traces (default "
                             f"{DEFAULT_REQUESTS:,})")
    parser.add_argument("--trace", "--traces", dest="traces", action="append", metavar="PATH[:FORMAT]",
                        help=f"a trace to use instead of the built-in workloads, or a built-in name "
                             f"({', '.join(TRACES)}) (repeatable)")
    parser.add_argument("--version", dest="pfc_version", default="both", choices=["A", "B", "000", "001", "both"],
                        help="the printed Algorithm 2 to run, A (= 000, published) or B (= 001), or both (default)")
    parser.add_argument("--no-ablations", action="store_true", help="skip the bypass-only / readmore-only runs")


def run_from_args(args, progress):
    versions = ["A", "B"] if args.pfc_version == "both" else [args.pfc_version]
    return run(traces=args.traces or tuple(TRACES), requests=args.requests or DEFAULT_REQUESTS, versions=versions,
               ablations=not args.no_ablations, out_dir=args.out, plot=not args.no_plot, progress=progress)


def write_tables(result, out) -> None:
    from .._table import emit

    _, table1, summ = result
    for scheme in sorted(s for s in table1.scheme.unique() if s.startswith("PFC") or s == "DU"):
        wide = table1_wide(table1, scheme)
        out.write(f"Table 1: improvement (%) of the mean response time over native, {scheme}:\n")
        out.write(wide.to_string(float_format=lambda x: f"{x:.2f}") + "\n\n")
    out.write("summary:\n")
    emit(summ.to_dict("records"), "table", out)


def records(result) -> list[dict[str, Any]]:
    return result[0].to_dict("records")
