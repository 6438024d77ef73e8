"""The Split replacement-queue experiments (Varki, Hubbe & Merchant, "Improve prefetch performance by
splitting the cache replacement queue", §4, Figures 1-3).

Three workloads of 100 concurrent generators and 100,000 one-block requests (512-byte blocks, the
disk's sectors): 90 multiple-sequential + 10 random; 50 single-sequential + 50 random; 10 single + 40
multiple-sequential + 50 random. Prefetching is the paper's technique T2 (two blocks on a miss, two on a
hit of the stream's last cached block). Nothing is requested twice, so a hit block leaves the cache and
missed blocks are not cached (the paper's setting). Compared: LRU, StreamLRU and SplitLRU with Up:Down =
1:1 (the paper's figures) and 2:1 (§6). Metrics: the prefetch hit rate (hits / requests) and the
paper's mean response time, (1 - hit rate) x the disk's mean response time (Cheetah 9LP model, random
one-sector reads).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from typing import Any

from .. import _core
from .._argtypes import count
from .._atomic import write_csv
from .._sim import simulate_many
from ..optimal import share_of_gain
from .._trace import synthetic

WORKLOADS: dict[str, dict[str, Any]] = {
    "mix1": {"generator": "split-mix1", "title": "90 multiple-sequential + 10 random",
             "sizes": list(range(10, 201, 10)), "highlight": 110},
    "mix2": {"generator": "split-mix2", "title": "50 single-sequential + 50 random",
             "sizes": list(range(50, 651, 50)), "highlight": 400},
    "mix3": {"generator": "split-mix3", "title": "10 single + 40 multiple-sequential + 50 random",
             "sizes": list(range(10, 301, 10)), "highlight": 150},
}

POLICIES: dict[str, dict[str, Any]] = {
    "LRU": {"name": "lru"},
    "StreamLRU": {"name": "streamlru"},
    "Split 1:1": {"name": "splitlru", "up_ratio": 0.5},
    "Split 2:1": {"name": "splitlru", "up_ratio": "2/3"},
    # The bound: Belady's MIN with the same T2 prefetches (docs/optimal.md).
    "MIN (bound)": {"name": "opt"},
}
BOUND = "MIN (bound)"
# Fetch time of the single-disk model (request services), for the stall-time share (docs/optimal.md).
FETCH_TIME = 10

# The paper's setting: no block is requested twice (a hit block leaves; a missed block is not kept).
LEVEL_OPTIONS = {"consume_on_hit": True, "cache_demand_miss": False}
BLOCK_SIZE = 512


def run(
    seed: int = 1,
    requests: int = 100_000,
    workloads: Sequence[str] = tuple(WORKLOADS),
    disk: str = "cheetah9lp",
    out_dir: str | None = None,
    plot: bool = True,
    progress=None,
    fetch_time: int = FETCH_TIME,
):
    """Run the experiments; returns a pandas DataFrame with one row per (workload, size, policy). At each
    workload's highlighted size every scheme is also timed in the single-disk model (fetch time
    ``fetch_time``; ``single_disk_stall``) beside the better of Aggressive and Conservative
    (``bound_stall``); elsewhere those columns are empty."""
    import pandas as pd

    from ..optimal import integrated, single_disk

    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown:
        raise _core.ConfigError(f"reproduce split: unknown workload {unknown[0]!r}; choose from {', '.join(WORKLOADS)}")
    disk_ms = _core.device_random_read_ms(disk, 1)
    rows = []
    for w in workloads:
        spec = WORKLOADS[w]
        trace = synthetic(spec["generator"], block_size=BLOCK_SIZE, seed=seed, requests=requests)
        cfgs, labels = [], []
        for size in spec["sizes"]:
            for label, policy in POLICIES.items():
                cfgs.append({"level": [{"size": size, "policy": policy, "prefetcher": "split-t2",
                                        "options": LEVEL_OPTIONS}]})
                labels.append((size, label))
        for (size, label), cfg, r in zip(labels, cfgs, simulate_many(trace, cfgs, progress=progress), strict=True):
            lv = r.levels[0]
            hit = lv["prefetch_hit_ratio"]
            stall = bound = math.nan
            if size == spec["highlight"]:
                stall = single_disk(trace, cfg["level"][0], fetch_time)["schedule"]["stall"]
                b = integrated(trace, size, fetch_time)
                bound = min(b["aggressive"]["stall"], b["conservative"]["stall"])
            rows.append({
                "workload": w, "generator": spec["generator"], "cache_blocks": size, "policy": label,
                "prefetch_hit_rate": hit, "hit_ratio": lv["hit_ratio"], "rt_model_split_ms": (1 - hit) * disk_ms,
                "prefetch_issued": lv["prefetch_issued"], "unused_prefetch": lv["unused_prefetch"],
                "disk_mean_ms": disk_ms, "seed": seed, "requests": r.raw["requests"],
                "single_disk_stall": stall, "bound_stall": bound, "fetch_time": fetch_time,
            })
    df = pd.DataFrame(rows)
    if out_dir is not None:
        os.makedirs(out_dir, exist_ok=True)
        write_csv(df, os.path.join(out_dir, "split.csv"))
        if plot:
            _plots(df, out_dir)
    return df


def summary(df) -> list[dict[str, Any]]:
    """At each workload's highlighted size: every policy's hit rate and response time, and the change
    of each against LRU (the paper: +27% hit rate and -23% response time at 110 blocks on mix 1, +38% at
    150 blocks on mix 3, a maximum of 0.5 from about 400 blocks on mix 2)."""
    out = []
    for w, spec in WORKLOADS.items():
        sub = df[(df.workload == w) & (df.cache_blocks == spec["highlight"])]
        if sub.empty:
            continue
        base = sub[sub.policy == "LRU"].iloc[0]
        bound = sub[sub.policy == BOUND]
        for _, r in sub.iterrows():
            row = {
                "workload": w, "cache_blocks": spec["highlight"], "policy": r.policy,
                "prefetch_hit_rate": r.prefetch_hit_rate, "rt_model_split_ms": r.rt_model_split_ms,
                "hit_rate_vs_lru_pct": 100 * (r.prefetch_hit_rate / base.prefetch_hit_rate - 1),
                "rt_vs_lru_pct": 100 * (r.rt_model_split_ms / base.rt_model_split_ms - 1),
            }
            if not bound.empty:
                # Share of MIN's hit-rate gain over LRU (the response-time proxy is linear in the hit rate,
                # so its share is the same); share of the single-disk stall gain of the best proven schedule.
                row["share_of_min_gain"] = share_of_gain(r.prefetch_hit_rate, base.prefetch_hit_rate,
                                                         bound.prefetch_hit_rate.iloc[0])
            if "single_disk_stall" in sub and not math.isnan(r.single_disk_stall):
                row["single_disk_stall"] = r.single_disk_stall
                row["stall_share"] = share_of_gain(r.single_disk_stall, base.single_disk_stall, r.bound_stall)
            out.append(row)
    return out


def _plots(df, out_dir: str) -> list[str]:
    """One figure per workload, drawn with :mod:`prefetchsim.plot`: the prefetch hit rate and the
    paper's response-time proxy against the cache size, one line per policy."""
    from .. import plot
    from .._deps import MissingDependency

    written = []
    for w, spec in WORKLOADS.items():
        sub = df[df.workload == w]
        if sub.empty:
            continue
        try:
            fig, (a, b) = plot.new_figure(ncols=2, figsize=(11, 4.2))
        except MissingDependency as e:
            sys.stderr.write(f"prefetchsim: {e}; no plots\n")
            return written
        plot.mrc(sub, x="cache_blocks", y="prefetch_hit_rate", hue="policy", logx=False, ax=a,
                 title=f"{w}: {spec['title']}")
        plot.response_time(sub, x="cache_blocks", metric="rt_model_split_ms", hue="policy", kind="line", ax=b,
                           logx=False, title="(1 - hit rate) x Cheetah 9LP random-read mean")
        written.append(plot.savefig(fig, os.path.join(out_dir, f"split-{w}.png")))
    return written


# --- `prefetchsim reproduce split` (the convention of `reproduce/__init__.py`) ---

SUMMARY = "Varki, Hubbe & Merchant: LRU vs StreamLRU vs SplitLRU (1:1, 2:1) on the three mixes"


def add_arguments(parser) -> None:
    parser.add_argument("--seed", type=count, metavar="N", default=1, help="workload seed (default 1)")
    parser.add_argument("--requests", type=count, default=None, metavar="N",
                        help="requests per workload (default 100,000, the paper's)")
    parser.add_argument("--fetch-time", type=count, default=FETCH_TIME, metavar="F",
                        help=f"fetch time of the single-disk model for the stall share, in request services "
                             f"(default {FETCH_TIME}; docs/optimal.md)")


def run_from_args(args, progress):
    return run(seed=args.seed, requests=100_000 if args.requests is None else args.requests, out_dir=args.out, plot=not args.no_plot,
               progress=progress, fetch_time=args.fetch_time)


# The figures the paper states in its text (§5; the figures themselves are not in the seed text):
# (workload, cache blocks, compared policy, metric, the paper's value, its words).
PAPER_FIGURES: list[tuple[str, int, str, str, float, str]] = [
    ("mix1", 110, "LRU", "hit_rate_vs_pct", 27.0, "hit rate of Split approximately 27% greater than LRU"),
    ("mix1", 110, "StreamLRU", "hit_rate_vs_pct", 27.0, "... and than StreamLRU"),
    ("mix1", 110, "LRU", "rt_vs_pct", -23.0, "resulting in a 23% decrease in response time"),
    ("mix2", 400, None, "hit_rate", 0.5, "the maximum hit rate, 0.5, achieved as the cache approaches 400 blocks"),
    ("mix3", 150, "LRU", "hit_rate_vs_pct", 38.0, "hit rate of Split 38% greater than that of LRU"),
]


def beside_paper(df, split: str = "Split 1:1") -> list[dict[str, Any]]:
    """Each figure the paper's text states, ours at the same point, and the distance (ours - paper).
    Split is the paper's 1:1 queue; a change is ours of Split against the compared policy, in percent."""
    rows = []
    for w, size, other, metric, paper, words in PAPER_FIGURES:
        sub = df[(df.workload == w) & (df.cache_blocks == size)]
        mine = sub[sub.policy == split]
        if mine.empty:
            continue
        r = mine.iloc[0]
        if metric == "hit_rate":
            ours = float(r.prefetch_hit_rate)
        else:
            base = sub[sub.policy == other]
            if base.empty:
                continue
            b = base.iloc[0]
            col = "prefetch_hit_rate" if metric == "hit_rate_vs_pct" else "rt_model_split_ms"
            ours = 100 * (float(r[col]) / float(b[col]) - 1)
        what = {"hit_rate_vs_pct": f"hit rate vs {other} (%)", "rt_vs_pct": f"response time vs {other} (%)",
                "hit_rate": "hit rate"}[metric]
        rows.append({"workload": w, "cache_blocks": size, "figure": f"{split} {what}", "ours": ours,
                     "paper": paper, "distance": ours - paper, "paper_says": words})
    return rows


def write_tables(df, out) -> None:
    from .._table import emit

    wide = df.pivot_table(index=["workload", "cache_blocks"], columns="policy", values="prefetch_hit_rate")
    wide = wide[[p for p in POLICIES if p in wide.columns]]
    out.write("prefetch hit rate (hits / requests), T2 prefetching:\n")
    out.write(wide.to_string(float_format=lambda x: f"{x:.4f}") + "\n\n")
    out.write("at the paper's highlighted sizes (change against LRU; share of the optimal gain: of MIN's hit-rate\n"
              f"gain with the same T2 prefetches, and of the stall gain of the best Cao et al. schedule in the\n"
              f"single-disk model, F = {int(df.fetch_time.iloc[0])} request services):\n")
    emit(summary(df), "table", out)
    paper = beside_paper(df)
    if paper:
        out.write("\nbeside the paper's stated figures (distance = ours - paper):\n")
        emit(paper, "table", out)


def records(df) -> list[dict[str, Any]]:
    """The rows for ``-f csv``/``json``: the stall columns off the highlighted sizes are None (CSV: empty,
    as in ``--out``'s split.csv; JSON: null), not NaN (CSV ``nan``, JSON ``NaN``, which is not JSON)."""
    return [{k: None if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()}
            for r in df.to_dict("records")]
