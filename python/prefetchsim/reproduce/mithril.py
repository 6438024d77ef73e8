"""The Mithril experiments (Yang et al., "Mithril: Mining Sporadic Associations for Cache Prefetching",
SoCC 2017, §5), in time-free runs (request-count clock; prefetches land at once). The method, every unknown
and the criterion that fixes it are in ``docs/papers/mithril.md``.

Two set-ups (``SETUPS``):

- ``authors``: the evaluation as the paper and the authors' harness ran it (64 KiB blocks, a cache of 1% of
  the unique blocks, one reference number per request, lookahead 20, min/max support 2/8 with the harness's
  sweep, metadata of Mithril and PG charged, Mithril-AMP without recording sequential accesses and with
  AMP's replacement rule on AMP's pages only).
- ``shipped``: the earlier behaviour (4 KiB blocks, per-block clock, the ``paper`` preset's lookahead 50,
  PG uncharged, AMP's rule on every prefetched block), kept selectable.

Entry points: :func:`run` (hit-ratio and precision curves over cache sizes, and the paper's parameter
studies; the built-in workload by default) and :func:`headline` (the paper's Table 1 comparison on real
traces, both block units, with the sensitivity runs), :func:`summary` (its means beside the paper's numbers).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from typing import Any

from .. import _core
from .._atomic import write_csv
from .._sim import simulate_many
from .._trace import Trace, open_trace, synthetic
from ..optimal import share_of_gain

SHARES = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
SETUPS = ("authors", "shipped")

# The paper's Table 1 and §5.2 (gains in % of the base's hit ratio, mean over traces / max).
PAPER = {
    "Mithril-LRU vs LRU": (54.3, 740.0),
    "Mithril-LRU vs AMP": (36.0, None),
    "AMP vs LRU": (12.2, 139.0),
    "PG vs LRU": (4.1, 156.0),
    "Mithril-AMP vs AMP": (None, None),
    "Mithril-FIFO vs FIFO": (None, None),
}
# (gain label, scheme, base) as the paper computes them: the +36% is Mithril-LRU against AMP (Figure 4 left).
GAINS = (
    ("Mithril-LRU vs LRU", "Mithril-LRU", "LRU"),
    ("Mithril-LRU vs AMP", "Mithril-LRU", "AMP"),
    ("AMP vs LRU", "AMP", "LRU"),
    ("PG vs LRU", "PG", "LRU"),
    ("Mithril-AMP vs AMP", "Mithril-AMP", "AMP"),
    ("Mithril-FIFO vs FIFO", "Mithril-FIFO", "FIFO"),
)
# The paper's inclusion bar (§5: traces under half a million requests omitted).
MIN_REQUESTS = 500_000
# The authors' harness sweep of (min_support, max_support) (get_HR_PE, May 2017).
SUPPORT_SWEEP = ((1, 4), (2, 8), (3, 12), (4, 16), (5, 20), (6, 20), (7, 20), (8, 20))
# The real traces of at least 100,000 block requests in shared/traces: (name, path, format, open options).
REAL_TRACES = (
    ("w106", "cloudphysics-w106/w106.trace.xz", "u32le", {"id_bytes": 4096}),
    ("OLTP", "arc/OLTP.lis.zst", "arc", {}),
    ("P2", "arc/P2.lis.zst", "arc", {}),
    ("P12", "arc/P12.lis.zst", "arc", {}),
    ("P6", "arc/P6.lis.zst", "arc", {}),
    ("P3", "arc/P3.lis.zst", "arc", {}),
    ("sprite", "lirs/sprite.trace.gz", "lirs", {"id_bytes": 4096}),
    ("vscsi", "cloudphysics-vscsi/cloudPhysicsIO.vscsi.gz", "vscsi", {}),
)
UNITS = (65536, 4096)

# The built-in workload: Mithril's sporadic associations with sequential runs (so AMP differs from LRU)
# and groups redrawn every 250,000 requests (so stale associations cost long prefetch lists precision).
BUILTIN = {"seq_share": 0.25, "epoch_requests": 250_000}

# The paper's parameter studies (§5.4), each around the set-up's value. All categorical on the plots.
STUDIES: dict[str, list[Any]] = {
    "lookahead": [5, 10, 20, 50, 100, 200],
    "min_support": [1, 2, 3, 4, 6],
    "max_support": [4, 8, 16, 32],
    "pf_list_size": [1, 2, 4, 8],
    "max_metadata": [0.01, 0.02, 0.05, 0.1, 0.2],
    "record": ["miss", "evict", "miss_evict", "each_req"],
}


def mithril_params(setup: str, **over: Any) -> dict[str, Any]:
    """Mithril's prefetcher config in `setup` (overrides applied)."""
    if setup == "authors":
        p = {"name": "mithril", "preset": "paper", "lookahead": 20, "min_support": 2, "max_support": 8,
             "clock": "request"}
    elif setup == "shipped":
        p = {"name": "mithril", "preset": "paper"}
    else:
        raise _core.ConfigError(f"reproduce mithril: setup {setup!r} is not one of {', '.join(SETUPS)}")
    p.update(over)
    return p


def schemes(setup: str, *, mithril: dict[str, Any] | None = None, pg_charged: bool | None = None,
            amp_rule_on_all: bool | None = None, skip_sequential: int | None = None) -> dict[str, dict[str, Any]]:
    """Scheme name -> level config (without size) in `setup`; the keyword arguments override the set-up's
    choice (the sensitivity runs)."""
    authors = setup == "authors"
    m = mithril or mithril_params(setup)
    charged = authors if pg_charged is None else pg_charged
    rule_all = (not authors) if amp_rule_on_all is None else amp_rule_on_all
    skip = (1 if authors else 0) if skip_sequential is None else skip_sequential
    # The shipped set-up keeps the earlier insertion order (most likely first).
    pg = {"name": "pg", "compat_heap": False} if authors else {"name": "pg", "compat_heap": False,
                                                                "most_likely_last": False}
    m_amp = {"name": "stack", "first": {**m, "skip_sequential": skip} if skip else m,
             "second": "amp" if rule_all else {"name": "amp", "first_hit_stay": False}}
    return {
        "LRU": {"policy": "lru", "prefetcher": "none"},
        "FIFO": {"policy": "fifo", "prefetcher": "none"},
        "AMP": {"policy": "lru", "prefetcher": "amp"},
        # PG's plain rule (every successor above the threshold): libCacheSim's heap defects are not the
        # paper's method (method page); strict test and limits as in the harness.
        "PG": {"policy": "lru", "prefetcher": pg, "options": {"charge_metadata": charged}},
        "Mithril-LRU": {"policy": "lru", "prefetcher": m},
        "Mithril-FIFO": {"policy": "fifo", "prefetcher": m},
        "Mithril-AMP": {"policy": "lru", "prefetcher": m_amp,
                        "options": {} if rule_all else {"first_hit": "stay_second"}},
        # The bound (docs/optimal.md): Belady's MIN replacing, on Mithril's prefetches.
        "MIN-Mithril": {"policy": "opt", "prefetcher": m},
    }


def _level(cfg: dict[str, Any], size: int) -> dict[str, Any]:
    return {"level": [{"size": size, **cfg}]}


def _row(r) -> dict[str, Any]:
    """Hit ratio and precision of a result's level (precision undefined when nothing was prefetched)."""
    lv = r.levels[0]
    issued = lv["prefetch_issued"]
    return {"hit_ratio": lv["hit_ratio"], "precision": lv["precision"] if issued else float("nan"),
            "prefetch_issued": issued}


def traces_dir() -> str:
    """Where the real traces are: ``$PREFETCHSIM_TRACES``, default ``../shared/traces``."""
    return os.environ.get("PREFETCHSIM_TRACES", os.path.join("..", "shared", "traces"))


def real_traces(unit: int) -> list[tuple[str, Trace]]:
    """The real traces at block size `unit`, as (name, trace). A missing file is an error naming it."""
    root = traces_dir()
    out = []
    for name, rel, fmt, opts in REAL_TRACES:
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            raise _core.TraceError(f"{path}: not found (the real traces are read from $PREFETCHSIM_TRACES, "
                                   f"default ../shared/traces)")
        out.append((name, open_trace(path, fmt, block_size=unit, **opts)))
    return out


# Formats whose records are block ids, not addresses: taken as 4 KiB blocks (as w106 and sprite above), so a
# larger unit groups them.
ID_FORMATS = ("u32le", "u32be", "lirs", "oracle_general")


def _trace(spec: str | Trace | None, unit: int = 4096) -> tuple[str, Trace]:
    if spec is None:
        return "associations-seq", synthetic("associations", block_size=unit, **BUILTIN)
    if isinstance(spec, Trace):
        return os.path.basename(spec.path), spec
    path, _, fmt = spec.partition(":") if ":" in os.path.basename(spec) else (spec, "", "")
    tr = open_trace(path, fmt or None, block_size=unit)
    if tr.spec.get("format") in ID_FORMATS or fmt in ID_FORMATS:
        tr = open_trace(path, fmt or None, block_size=unit, id_bytes=4096)
    return os.path.basename(tr.path), tr


def run(traces: Sequence[str | Trace | None] = (None,), shares: Sequence[float] = SHARES, study_share: float = 0.05,
        studies: bool = True, out_dir: str | None = None, plot: bool = True, progress=None, setup: str = "shipped"):
    """The curves of every scheme over cache sizes (`shares` of the footprint) and the parameter studies at
    `study_share`, in `setup`; returns two pandas DataFrames: (curves, studies)."""
    import pandas as pd

    unit = 65536 if setup == "authors" else 4096
    sch = schemes(setup)
    curve_rows, study_rows = [], []
    for spec in traces:
        name, tr = _trace(spec, unit)
        fp = tr.footprint()
        cfgs, labels = [], []
        for share in shares:
            cap = max(1, int(share * fp))
            for scheme, cfg in sch.items():
                cfgs.append(_level(cfg, cap))
                labels.append((share, cap, scheme))
        for (share, cap, scheme), r in zip(labels, simulate_many(tr, cfgs, progress=progress), strict=True):
            curve_rows.append({"trace": name, "share": share, "cache_blocks": cap, "scheme": scheme, **_row(r)})
        if studies:
            cap = max(1, int(study_share * fp))
            cfgs, labels = [], []
            for param, values in STUDIES.items():
                for v in values:
                    over = {param: v}
                    if param == "min_support":
                        over["max_support"] = max(v, mithril_params(setup).get("max_support", 8))
                    cfgs.append(_level({"policy": "lru", "prefetcher": mithril_params(setup, **over)}, cap))
                    labels.append((param, v))
            for (param, v), r in zip(labels, simulate_many(tr, cfgs, progress=progress), strict=True):
                study_rows.append({"trace": name, "cache_blocks": cap, "parameter": param, "value": str(v),
                                   **_row(r)})
    curves, study_df = pd.DataFrame(curve_rows), pd.DataFrame(study_rows)
    if out_dir is not None:
        if not studies:
            _remove_studies(out_dir)
        _write(out_dir, {"mithril-curves.csv": curves, "mithril-studies.csv": study_df})
        if plot:
            _plots(curves, study_df, out_dir)
    return curves, study_df


def _remove_studies(out_dir: str) -> None:
    """The studies' CSV and figures of an earlier run in `out_dir`: a run without studies writes none,
    and left there they would read as this run's."""
    if not os.path.isdir(out_dir):
        return
    stale = {"mithril-studies.csv"}
    for name in os.listdir(out_dir):
        if name.startswith("mithril-") and any(name.endswith(f"-{p}.png") for p in STUDIES):
            stale.add(name)
    for name in sorted(stale):
        path = os.path.join(out_dir, name)
        if os.path.isfile(path):
            os.remove(path)
            sys.stderr.write(f"prefetchsim: removed {path} (an earlier run's studies; this run has none)\n")


def gains(curves) -> list[dict[str, Any]]:
    """Per trace and size: every comparison of ``GAINS`` as the paper computes it, 100·(HR / HR_base - 1);
    the paper's +36% is Mithril-LRU against AMP."""
    out = []
    keys = [k for k in ("trace", "unit", "variant", "share") if k in curves.columns]
    for key, sub in curves.groupby(keys):
        hr = dict(zip(sub.scheme, sub.hit_ratio))
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        for label, scheme, base in GAINS:
            if scheme in hr and base in hr:
                row[label] = 100 * (hr[scheme] / hr[base] - 1) if hr[base] else float("nan")
        if {"Mithril-LRU", "LRU", "MIN-Mithril"} <= hr.keys():
            # Share of the bound's gain over LRU that Mithril-LRU reaches (docs/optimal.md).
            row["Mithril-LRU share of MIN-Mithril gain"] = share_of_gain(hr["Mithril-LRU"], hr["LRU"], hr["MIN-Mithril"])
        out.append(row)
    return out


def _sensitivity(setup: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(variant, scheme, level config) of the sensitivity runs of `setup` at its headline size."""
    out = []
    for lo, hi in SUPPORT_SWEEP:
        m = mithril_params(setup, min_support=lo, max_support=hi)
        s = schemes(setup, mithril=m)
        out += [(f"support {lo}/{hi}", k, s[k]) for k in ("Mithril-LRU", "Mithril-AMP")]
    variants = {
        "per-block clock": dict(mithril=mithril_params(setup, clock="block")),
        "lookahead 50": dict(mithril=mithril_params(setup, lookahead=50)),
        "PG uncharged": dict(pg_charged=False),
        "AMP rule on all prefetches": dict(amp_rule_on_all=True),
        "no recording skip": dict(skip_sequential=0),
        "Mithril uncharged": dict(mithril=mithril_params(setup, charge_metadata=False)),
        "record each request": dict(mithril=mithril_params(setup, record="each_req")),
    }
    only = {"per-block clock": ("Mithril-LRU", "Mithril-AMP"), "lookahead 50": ("Mithril-LRU", "Mithril-AMP"),
            "PG uncharged": ("PG",), "AMP rule on all prefetches": ("Mithril-AMP",),
            "no recording skip": ("Mithril-AMP",), "Mithril uncharged": ("Mithril-LRU",),
            "record each request": ("Mithril-LRU",)}
    for variant, kw in variants.items():
        s = schemes(setup, **kw)
        out += [(variant, k, s[k]) for k in only[variant]]
    return out


def headline(traces: Sequence[str] | None = None, units: Sequence[int] = UNITS, setup: str = "authors",
             sensitivity: bool = True, out_dir: str | None = None, progress=None):
    """The paper's comparison on real traces: for each trace and block unit, every scheme at 1% of the
    unique blocks (``variant = "headline"``), and with `sensitivity` the runs of §1.5 of the method page
    (the harness's support sweep, clock, lookahead, PG charge, Mithril-AMP choices, 5% and 256 MiB caches).
    `traces` are paths ``PATH[:FORMAT]`` or None for the real traces of ``REAL_TRACES``. Returns a pandas
    DataFrame, one row per run."""
    import pandas as pd

    rows = []
    sch = schemes(setup)
    for unit in units:
        if traces is None:
            named = real_traces(unit)
        else:
            named = [_trace(t, unit) for t in traces]
        for name, tr in named:
            info = tr.info()
            fp, nreq = info["footprint_blocks"], info["requests"]
            cap = max(1, fp // 100)
            runs = [("headline", "1%", cap, s, c) for s, c in sch.items()]
            if sensitivity:
                runs += [(v, "1%", cap, s, c) for v, s, c in _sensitivity(setup)]
                for label, size in (("5%", max(1, fp * 5 // 100)), ("256MiB", (256 << 20) // unit)):
                    runs += [(f"cache {label}", label, size, s, c) for s, c in sch.items()]
            results = simulate_many(tr, [_level(c, size) for _, _, size, _, c in runs], progress=progress)
            for (variant, size_label, size, scheme, _), r in zip(runs, results, strict=True):
                rows.append({"trace": name, "requests": nreq, "unit": unit, "footprint_blocks": fp,
                             "variant": variant, "size": size_label, "cache_blocks": size, "scheme": scheme,
                             **_row(r)})
    df = pd.DataFrame(rows)
    # An id-addressed trace opened without its format is not grouped by a larger unit: say so.
    fps = df.groupby(["trace", "unit"]).footprint_blocks.first().unstack()
    for trace, row in fps.iterrows():
        if len(row.dropna()) > 1 and row.dropna().nunique() == 1:
            sys.stderr.write(f"prefetchsim: {trace}: the same footprint at every block unit: its records are block "
                             f"ids taken one id per block; give the format (PATH:lirs, :u32le, ...) to take them "
                             f"as 4 KiB blocks\n")
    if out_dir is not None:
        _write(out_dir, {"mithril-headline.csv": df})
    return df


def summary(df, min_requests: int = MIN_REQUESTS) -> list[dict[str, Any]]:
    """Per unit and comparison: the mean and max per-trace gain over the traces of at least `min_requests`
    requests (the paper's bar) and over all traces, the ratio of mean hit ratios, and the paper's figure."""
    head = df[df.variant == "headline"]
    per = [g for g in gains(head)]
    big = set(head[head.requests >= min_requests].trace)
    out = []
    for unit in sorted(head.unit.unique(), reverse=True):
        rows = [g for g in per if g["unit"] == unit]
        sub = head[head.unit == unit]
        mean_hr = sub.groupby("scheme").hit_ratio.mean()
        for label, scheme, base in GAINS:
            vals_big = [g[label] for g in rows if g["trace"] in big and not math.isnan(g[label])]
            vals_all = [g[label] for g in rows if not math.isnan(g[label])]
            paper_mean, paper_max = PAPER[label]
            out.append({
                "unit": f"{unit // 1024} KiB", "comparison": label,
                "mean_pct (>=0.5M req)": _mean(vals_big), "max_pct (>=0.5M req)": max(vals_big, default=math.nan),
                "mean_pct (all)": _mean(vals_all), "max_pct (all)": max(vals_all, default=math.nan),
                "ratio_of_means_pct": 100 * (mean_hr[scheme] / mean_hr[base] - 1),
                "paper_mean_pct": math.nan if paper_mean is None else paper_mean,
                "paper_max_pct": math.nan if paper_max is None else paper_max,
            })
    return out


def support_sweep(df, min_requests: int = MIN_REQUESTS) -> list[dict[str, Any]]:
    """The harness's min/max support sweep: per unit and pair, the mean per-trace gain (traces of at least
    `min_requests` requests, and all) of Mithril-LRU over LRU and over AMP, and of Mithril-AMP over AMP."""
    out = []
    base = df[df.variant == "headline"].set_index(["unit", "trace", "scheme"]).hit_ratio
    big = set(df[df.requests >= min_requests].trace)
    for (unit, variant), sub in df[df.variant.str.startswith("support")].groupby(["unit", "variant"], sort=False):
        row: dict[str, Any] = {"unit": f"{unit // 1024} KiB", "support": variant.split()[1]}
        for label, scheme, ref in (("M-LRU vs LRU", "Mithril-LRU", "LRU"), ("M-LRU vs AMP", "Mithril-LRU", "AMP"),
                                   ("M-AMP vs AMP", "Mithril-AMP", "AMP")):
            g = {t: 100 * (h / base[(unit, t, ref)] - 1) for t, h in
                 zip(sub[sub.scheme == scheme].trace, sub[sub.scheme == scheme].hit_ratio) if base[(unit, t, ref)]}
            row[f"{label} (>=0.5M)"] = _mean([v for t, v in g.items() if t in big])
            row[f"{label} (all)"] = _mean(list(g.values()))
        out.append(row)
    return out


def _mean(vals: Sequence[float]) -> float:
    return sum(vals) / len(vals) if vals else math.nan


def _write(out_dir: str, frames: dict[str, Any]) -> None:
    """Write each frame as CSV, each whole or not at all; a frame without rows (the studies under
    ``--no-studies``) writes no file, as it draws no figure (it was a 1-byte CSV of a newline)."""
    os.makedirs(out_dir, exist_ok=True)
    for name, df in frames.items():
        if not df.empty:
            write_csv(df, os.path.join(out_dir, name))


def _plots(curves, studies, out_dir: str) -> list[str]:
    """Drawn with :mod:`prefetchsim.plot`: per trace, hit ratio and precision against cache size (% of the
    footprint, log axis; a marker per scheme, every other one hollow, so tied series stay visible;
    precision only where something was prefetched); per trace and parameter study, hit ratio and
    precision as bars per categorical value (a missing precision bar: nothing prefetched)."""
    import pandas as pd

    from .. import plot
    from .._deps import MissingDependency

    written: list[str] = []
    try:
        plot.new_figure()
    except MissingDependency as e:
        sys.stderr.write(f"prefetchsim: {e}; no plots\n")
        return written
    os.makedirs(out_dir, exist_ok=True)
    for trace, sub in curves.groupby("trace"):
        fig, (ax_hr, ax_pr) = plot.new_figure(ncols=2, figsize=(11, 4.2))
        plot.mrc(sub, x="share", y="hit_ratio", hue="scheme", logx=True, ax=ax_hr, title=f"Mithril: {trace}")
        # Every scheme, so the colours match the left panel; LRU and FIFO have no precision (nothing drawn).
        plot.mrc(sub, x="share", y="precision", hue="scheme", logx=True, ax=ax_pr,
                 title="precision (none where nothing was prefetched)")
        for ax in (ax_hr, ax_pr):
            _same_colours(ax)
        written.append(plot.savefig(fig, os.path.join(out_dir, f"mithril-{trace}.png")))
    groups = studies.groupby(["trace", "parameter"]) if not studies.empty else []
    for (trace, param), sub in groups:
        fig, ax = plot.new_figure(figsize=(5.6, 3.6))
        long = pd.concat([pd.DataFrame({"value": sub.value, "metric": m, "ratio": sub[m]})
                          for m in ("hit_ratio", "precision")])
        plot.bars(long, x="value", y="ratio", hue="metric", ax=ax, title=f"{trace}: {param}",
                  xlabel=f"{param} (Mithril-LRU)")
        written.append(plot.savefig(fig, os.path.join(out_dir, f"mithril-{trace}-{param}.png")))
    return written


def _same_colours(ax) -> None:
    """One colour per scheme in both panels (the plot API numbers colours per panel, and merges series
    with equal values into one named "A = B"), and earlier series drawn wider, so a series tied with a
    later one shows as a halo around it; the legend is redrawn where it was."""
    lines = ax.get_lines()
    for i, ln in enumerate(lines):
        name = str(ln.get_label()).split(" = ")[0]
        if name in _STYLE_ORDER:
            ln.set_color(f"C{_STYLE_ORDER.index(name)}")
        ln.set_linewidth(max(0.8, 3.6 - 0.45 * i))
    old = ax.get_legend()
    if old is None:
        return
    ax.legend(handles=lines, labels=[ln.get_label() for ln in lines], title=old.get_title().get_text() or None,
              fontsize="small", title_fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))


def check_names() -> None:
    """Fail early if a scheme names a prefetcher the core does not know."""
    known = set(_core_names())
    for setup in SETUPS:
        for cfg in schemes(setup).values():
            pf = cfg["prefetcher"]
            name = pf if isinstance(pf, str) else pf["name"]
            if name not in known:
                raise _core.ConfigError(f"reproduce mithril: prefetcher {name!r} is not registered")


def _core_names():
    from .._registry import prefetchers

    return prefetchers()


# --- `prefetchsim reproduce mithril` (the convention of `reproduce/__init__.py`) ---

SUMMARY = ("Yang et al.: LRU, FIFO, PG, AMP and Mithril over LRU/FIFO/AMP; parameter studies; with --trace real "
           "the paper's headline table on the real traces")


def add_arguments(parser) -> None:
    parser.add_argument("--trace", "--traces", dest="traces", action="append", metavar="PATH[:FORMAT]",
                        help="'real' for the real traces of docs/papers/mithril.md under $PREFETCHSIM_TRACES "
                             "(default ../shared/traces), or a trace file (repeatable): runs the paper's headline "
                             "table at 64 KiB and 4 KiB instead of the curves on the built-in workload")
    parser.add_argument("--setup", default="authors", choices=list(SETUPS),
                        help="'authors' (default): the evaluation as the paper and the authors' harness ran it "
                             "(docs/papers/mithril.md); 'shipped': the earlier set-up (4 KiB blocks, per-block "
                             "clock, lookahead 50, PG uncharged, AMP's rule on every prefetched block)")
    parser.add_argument("--no-studies", action="store_true",
                        help="skip the parameter studies (with --trace: the sensitivity runs)")


def run_from_args(args, progress):
    if args.traces:
        traces = None if args.traces == ["real"] else args.traces
        return headline(traces=traces, setup=args.setup, sensitivity=not args.no_studies, out_dir=args.out,
                        progress=progress)
    return run(traces=[None], out_dir=args.out, plot=not args.no_plot, studies=not args.no_studies,
               progress=progress, setup=args.setup)


def _fmt(x: float) -> str:
    return f"{x:.4f}"


def write_tables(result, out) -> None:
    from .._table import emit

    if not isinstance(result, tuple):
        _write_headline(result, out)
        return
    curves, studies = result
    for trace, sub in curves.groupby("trace"):
        wide = sub.pivot_table(index=["share", "cache_blocks"], columns="scheme", values="hit_ratio")
        wide = wide[[s for s in _STYLE_ORDER if s in wide.columns]]
        out.write(f"hit ratio on {trace}:\n{wide.to_string(float_format=_fmt)}\n\n")
    out.write("gains (%), computed as the paper does (the +36% is Mithril-LRU vs AMP):\n")
    emit(gains(curves), "table", out)
    if not studies.empty:
        out.write("\nparameter studies (Mithril-LRU, hit ratio / precision; precision empty where nothing was "
                  "prefetched):\n")
        emit(studies.to_dict("records"), "table", out,
             ["trace", "cache_blocks", "parameter", "value", "hit_ratio", "precision"])


def _write_headline(df, out) -> None:
    from .._table import emit

    head = df[df.variant == "headline"]
    for unit, sub in head.groupby("unit", sort=False):
        wide = sub.pivot_table(index=["trace", "requests", "cache_blocks"], columns="scheme", values="hit_ratio",
                               sort=False)
        wide = wide[[s for s in _STYLE_ORDER if s in wide.columns]]
        out.write(f"hit ratio, {unit // 1024} KiB blocks, cache 1% of the unique blocks:\n"
                  f"{wide.to_string(float_format=_fmt)}\n\n")
    out.write("per-trace gains (%), computed as the paper does (HR / HR_base - 1):\n")
    emit(gains(head), "table", out)
    out.write("\nmean gains beside the paper's (Table 1, §5.2):\n")
    emit(summary(df), "table", out)
    if (df.variant != "headline").any():
        out.write("\nthe authors' min/max support sweep (mean per-trace gain, %):\n")
        emit(support_sweep(df), "table", out)
        other = df[(df.variant != "headline") & ~df.variant.str.startswith("support")]
        wide = other.pivot_table(index=["unit", "variant", "scheme"], columns="trace", values="hit_ratio", sort=False)
        out.write(f"\nsensitivity runs (hit ratio):\n{wide.to_string(float_format=_fmt)}\n")


def records(result) -> list[dict[str, Any]]:
    if not isinstance(result, tuple):
        return result.to_dict("records")
    return result[0].to_dict("records") + result[1].to_dict("records")


_STYLE_ORDER = ("LRU", "FIFO", "AMP", "PG", "Mithril-LRU", "Mithril-FIFO", "Mithril-AMP", "MIN-Mithril")
