"""The STEP comparisons (Liang, Jiang & Zhang, "STEP: Sequentiality and Thrashing Detection Based
Prefetching to Improve Performance of Networked Storage Servers", ICDCS 2007 / OSU-CISRC-3/07-TR23, §6).

Server-side schemes, all in timed runs over a disk model (`hdd7200` by default, the preset closest to the
paper's 7.2K rpm ATA disk, §6.2; `disk` chooses another): Linux 2.6.16 read-ahead on the raw
device (one read-ahead state for the whole device, the paper's `RA#`, `#` = maximum window in 512-byte
sectors), the paper's heuristics PM-CON, PM-BB and PM-SA, and STEP itself (PM-TA). Cases:

- workloads: `oltp-spread`, the paper's SPC OLTP traces as its §3 and Fig. 3 describe them (long
  sequential streams spread over the disk, served concurrently; see WORKLOADS), the built-in
  `oltp-like` (mostly sequential runs, ~11% random, 512 MiB) and `web-like` (~74% random) generators
  standing in for the paper's SPC OLTP and WebSearch traces, given real traces
  (`path[:format]`), and `diff+tar`, the paper's concurrent-applications case (§6.3.2, Fig. 14): diff
  alternating the files of two Linux-like source trees and tar reading a third, in two closed loops
  whose requests interleave at the server (the `source-trees` generator);
- set-ups: `local` (the server's cache directly over the disk, §6.3.1) and `network` (a client cache
  with Linux's default read-ahead per stream, a network link, then the server, §6.3.2).

Replay is closed-loop with no think time, one loop per stream (the paper studies a busy server;
`shared/docs/algorithms/step.md`, ambiguity 5). Metrics per run: the mean response time, the makespan
(the paper's execution time of the replay), the server's prefetch hit ratio and its unused prefetched
blocks. The paper's slowdown of a scheme is `T_scheme / T_PM-TA - 1` on the execution time.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from .. import _core
from .._sim import device_capacity_sectors, simulate_many
from .._trace import Trace, open_trace, synthetic

BLOCK_SIZE = 4096
# RA#: Linux's maximum read-ahead window in 512-byte sectors (the kernel default 256 = 128 KiB). The
# values the paper tested are only in its missing figures; step.md advises a sweep of 64 ... 2048.
RA_SECTORS = (64, 256, 1024, 2048)
LINUX_DEFAULT = "RA256"
# The disk under the server: the paper's local runs use "one of the ATA disk[s]", "40GB 7.2K RPM, ATA/100"
# (§6.2, Fig. 7(a) "IDE disk"). Of our presets `hdd7200` (7200 rpm, 1 TB, SATA) is the one of that class;
# `cheetah9lp` is a 10k rpm SCSI disk of 1999 with a slow bus (closer to the paper's SCSI RAID members).
DISK = "hdd7200"


def _linux(sectors: int, key: str = "device") -> dict[str, Any]:
    return {"name": "linux", "mode": "2.6.16", "key": key, "ra_pages": max(1, sectors * 512 // BLOCK_SIZE)}


SCHEMES: dict[str, Any] = {
    **{f"RA{n}": _linux(n) for n in RA_SECTORS},
    "PM-CON": {"name": "step", "preset": "pm-con"},
    "PM-BB": {"name": "step", "preset": "pm-bb"},
    "PM-SA": {"name": "step", "preset": "pm-sa"},
    # STEP with its delayed prefetch queue (§4.4) on the timed engine's clock; the heuristics share STEP's
    # contexts but not its scheduling (§6.1).
    "PM-TA": {"name": "step", "preset": "pm-ta", "delayed": True, "clock": "engine"},
}

WORKLOADS: dict[str, dict[str, Any]] = {
    # The paper's SPC OLTP traces as it describes them: "disk head can travel long distances constantly to
    # serve sequential streams concurrently" (§3, Fig. 3, OLTP "mostly sequential" §6.1), the file system
    # placing "different semantic groups ... far away from each other" (§3), read requests only ("We filter
    # the traces to get read requests", §6.1). So: the `oltp-like` model (its random share, request sizes
    # and hot extents) with its extents scattered over the whole disk under the server (`disk_share` of
    # the capacity, set per `--disk`) instead of 512 MiB, reads only, and runs long enough to outlast
    # several prefetches of STEP's upper bound (mean 256 requests of 2-8 blocks, about 5 MiB, against
    # `UB` = 1 MiB) [ours: the paper gives no run lengths], 8 concurrent runs interleaved request by
    # request (replayed in 8 closed loops, one per volume). No think time (§4.2.1, the replay below).
    "oltp-spread": {"generator": "oltp-like", "disk_share": 1.0,
                    "params": {"read_share": 1.0, "mean_run": 256.0, "streams": 8}},
    "oltp-like": {"generator": "oltp-like", "params": {}},
    "web-like": {"generator": "web-like", "params": {}},
    # The paper's concurrent diff and tar (§6.3.2, Fig. 12 and 14): diff reads each file of the original
    # Linux source tree and then the same file of the modified tree ("disk head has to move back and
    # forth"), tar reads the files of a built tree; two processes, two closed loops. The generator's
    # defaults [ours, the paper gives no sizes]: trees of 19,000 files of lognormal sizes (mean 12 KiB,
    # sigma 1.3), directories of 16 files on average laid out contiguously with a mean 1 MiB gap between
    # directories, trees 8 GiB apart, 32 KiB reads. The trace ends when both programs are done (about
    # 65,000 requests) or at `requests`. On a disk under 24 GiB (the Cheetah 9LP) the trees are a third of
    # the disk apart.
    "diff+tar": {"generator": "source-trees", "params": {}, "trees_within_disk": True},
}

SETUPS: dict[str, str] = {
    "local": "server cache over the disk",
    "network": "client + link + server over the disk",
}

# Cache sizes, as shares of each trace's footprint [ours]: the server holds a tenth of what the trace
# touches; the networked client half of that, the server then twice the client (PFC's L2 = 2 x L1).
LOCAL_SERVER = "10%"
CLIENT = "5%"
NETWORK_SERVER = "2x"
# A 1.3 Gb/s IPoIB-like link [ours from the paper's platform, §6.2]: 4 KiB pages at 0.025 ms each, plus
# 0.05 ms per message.
LINK = {"alpha_ms": 0.05, "beta_ms_per_page": 0.025}
ENGINE = {"kind": "timed", "replay": "closed", "per_stream": True, "stream_key": "stream", "think": "none",
          "iodepth": 1}


def _trace(label: str, requests: int, seed: int, disk: str = DISK) -> Trace:
    if label in WORKLOADS:
        spec = WORKLOADS[label]
        params = dict(spec["params"])
        if spec.get("trees_within_disk"):
            third = device_capacity_sectors(disk) * 512 // 3 >> 20 << 20
            params.setdefault("tree_spacing_bytes", min(8 << 30, third))
        if "disk_share" in spec:
            # Whole 1 MiB extents (the generator's unit of popularity) within the disk's capacity.
            extent = 1 << 20
            params["footprint_bytes"] = int(spec["disk_share"] * device_capacity_sectors(disk) * 512) // extent * extent
        return synthetic(spec["generator"], block_size=BLOCK_SIZE, seed=seed, requests=requests, **params)
    path, _, fmt = label.partition(":") if ":" in os.path.basename(label) else (label, "", "")
    return open_trace(path, fmt or None, block_size=BLOCK_SIZE)


def _config(setup: str, scheme: Any, disk: str) -> dict[str, Any]:
    if scheme.get("name") == "step":
        scheme = {**scheme, "device": disk}  # STEP's seek curve and bandwidth are the simulated disk's
    server = {"name": "server", "policy": "lru", "prefetcher": scheme}
    if setup == "local":
        levels = [{**server, "size": LOCAL_SERVER}]
        cfg: dict[str, Any] = {"level": levels}
    else:
        client = {"name": "client", "size": CLIENT, "policy": "lru", "prefetcher": _linux(256, key="detect")}
        cfg = {"level": [client, {**server, "size": NETWORK_SERVER}], "link": LINK}
    cfg["engine"] = dict(ENGINE)
    cfg["device"] = disk
    return cfg


def run(
    workloads: Sequence[str] = tuple(WORKLOADS),
    traces: Sequence[str] = (),
    setups: Sequence[str] = tuple(SETUPS),
    schemes: Sequence[str] = tuple(SCHEMES),
    requests: int = 100_000,
    seed: int = 1,
    disk: str = DISK,
    out_dir: str | None = None,
    plot: bool = True,
    progress=None,
):
    """Run every (workload or trace, set-up, scheme); returns a pandas DataFrame, one row per run."""
    import pandas as pd

    for what, given, known in (("workload", workloads, WORKLOADS), ("setup", setups, SETUPS),
                               ("scheme", schemes, SCHEMES)):
        bad = [g for g in given if g not in known]
        if bad:
            raise _core.ConfigError(f"reproduce step: unknown {what} {bad[0]!r}; choose from {', '.join(known)}")
    rows = []
    for label in [*workloads, *traces]:
        tr = _trace(label, requests, seed, disk)
        cases = [(setup, name) for setup in setups for name in schemes]
        cfgs = [_config(setup, SCHEMES[name], disk) for setup, name in cases]
        for (setup, name), r in zip(cases, simulate_many(tr, cfgs, progress=progress), strict=True):
            srv = r.levels[-1]
            s = r.summary
            rows.append({
                "workload": label if label in WORKLOADS else os.path.basename(label), "setup": setup,
                "scheme": name, "rt_mean_ms": s["rt_mean_ms"], "rt_p95_ms": s["rt_p95_ms"],
                "makespan_ms": s["makespan_ms"],
                # The server cannot tell a client's read-ahead from its demand reads (both are requests):
                # the share of all blocks asked of it that it had prefetched (late ones included).
                "prefetch_hit_ratio": srv["prefetch_used"]
                / max(1, srv["demand_accesses"] + srv["upper_prefetch_accesses"]),
                "hit_ratio": srv["hit_ratio"], "prefetch_issued": srv["prefetch_issued"],
                "unused_prefetch": srv["unused_prefetch"], "server_blocks": srv["capacity_blocks"],
                "requests": r.raw["requests"], "seed": seed,
            })
    df = pd.DataFrame(rows)
    if not df.empty:
        base = df.loc[df.scheme == "PM-TA", ["workload", "setup", "makespan_ms"]].rename(
            columns={"makespan_ms": "pmta_ms"})
        if not base.empty:
            df = df.merge(base, on=["workload", "setup"], how="left")
            df["slowdown_vs_pmta_pct"] = 100 * (df.makespan_ms / df.pmta_ms - 1)
            df = df.drop(columns="pmta_ms")
    if out_dir is not None:
        os.makedirs(out_dir, exist_ok=True)
        df.to_csv(os.path.join(out_dir, "step.csv"), index=False)
        if plot:
            _plots(df, out_dir)
    return df


def verdict(df) -> list[dict[str, Any]]:
    """Per case: STEP's (PM-TA's) gain in execution time over default Linux (RA256), the best Linux RA#
    and PM-SA, as the paper reports them (`T_scheme / T_PM-TA - 1`, %; positive = STEP ahead)."""
    out = []
    for (w, setup), sub in df.groupby(["workload", "setup"], sort=False):
        t = dict(zip(sub.scheme, sub.makespan_ms, strict=True))
        if "PM-TA" not in t:
            continue
        ta = t["PM-TA"]
        linux = {k: v for k, v in t.items() if k.startswith("RA")}
        row: dict[str, Any] = {"workload": w, "setup": setup, "pmta_rt_mean_ms": float(
            sub.loc[sub.scheme == "PM-TA", "rt_mean_ms"].iloc[0])}
        if LINUX_DEFAULT in t:
            row["vs_linux_default_pct"] = 100 * (t[LINUX_DEFAULT] / ta - 1)
        if linux:
            best = min(linux, key=linux.get)
            row["best_linux"] = best
            row["vs_best_linux_pct"] = 100 * (linux[best] / ta - 1)
        if "PM-SA" in t:
            row["vs_pmsa_pct"] = 100 * (t["PM-SA"] / ta - 1)
        out.append(row)
    return out


def _plots(df, out_dir: str) -> list[str]:
    """One figure per set-up, drawn with :mod:`prefetchsim.plot`: mean response time, prefetch hit ratio
    and unused prefetched blocks (log scale) per workload and scheme."""
    from .. import plot
    from .._deps import MissingDependency

    written = []
    for setup, sub in df.groupby("setup", sort=False):
        try:
            fig, (a, b, c) = plot.new_figure(ncols=3, figsize=(17, 4.6))
        except MissingDependency as e:
            sys.stderr.write(f"prefetchsim: {e}; no plots\n")
            return written
        plot.response_time(sub, x="workload", metric="rt_mean_ms", hue="scheme", ax=a, level=None,
                           title=f"{setup}: {SETUPS.get(setup, setup)}")
        # response_time draws any per-case metric as grouped bars.
        plot.response_time(sub, x="workload", metric="prefetch_hit_ratio", hue="scheme", ax=b, level=None,
                           title="server prefetch hit ratio")
        plot.unused_prefetch(sub, x="workload", hue="scheme", ax=c, level=None, kind="bar",
                             title="server prefetched blocks never used")
        written.append(plot.savefig(fig, os.path.join(out_dir, f"step-{setup}.png")))
    return written


# --- `prefetchsim reproduce step` (the convention of `reproduce/__init__.py`) ---

SUMMARY = "Liang, Jiang & Zhang: STEP (PM-TA) against Linux read-ahead and PM-CON/BB/SA, timed, on a disk"


def add_arguments(parser) -> None:
    parser.add_argument("--seed", type=int, metavar="N", default=1, help="workload seed (default 1)")
    parser.add_argument("--requests", type=int, default=None, metavar="N", help="requests per workload (default 100,000)")
    parser.add_argument("--trace", "--traces", dest="traces", action="append", metavar="PATH[:FORMAT]",
                        help="a trace to add to the built-in workloads (repeatable)")
    parser.add_argument("--workload", dest="workloads", action="append", metavar="NAME",
                        help=f"a built-in workload to run ({', '.join(WORKLOADS)}; repeatable; default all; "
                             "'none' for the given traces only)")
    parser.add_argument("--disk", default=DISK, metavar="MODEL",
                        help=f"the disk model under the server (a device preset; default {DISK}, the 7200 rpm "
                             "disk closest to the paper's 7.2K rpm ATA disk)")


def run_from_args(args, progress):
    workloads = tuple(WORKLOADS) if args.workloads is None else tuple(w for w in args.workloads if w != "none")
    return run(workloads=workloads, traces=args.traces or (), requests=args.requests or 100_000, seed=args.seed,
               disk=args.disk, out_dir=args.out, plot=not args.no_plot, progress=progress)


def write_tables(df, out) -> None:
    from .._table import emit

    for metric, what, fmt in (("rt_mean_ms", "mean response time (ms)", "{:.3f}"),
                              ("prefetch_hit_ratio", "server prefetch hit ratio", "{:.4f}"),
                              ("unused_prefetch", "server prefetched blocks never used", "{:.0f}")):
        wide = df.pivot_table(index=["workload", "setup"], columns="scheme", values=metric, sort=False)
        wide = wide[[s for s in SCHEMES if s in wide.columns]]
        out.write(f"{what}:\n{wide.to_string(float_format=fmt.format)}\n\n")
    out.write("STEP (PM-TA) against Linux and PM-SA, execution time (T_scheme / T_PM-TA - 1, %; "
              "positive = STEP ahead):\n")
    emit(verdict(df), "table", out)


def records(df) -> list[dict[str, Any]]:
    return df.to_dict("records")
