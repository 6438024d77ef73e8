"""The Mithril experiments (Yang et al., "Mithril: Mining Sporadic Associations for Cache Prefetching",
SoCC 2017, §5): hit-ratio curves of LRU, PG, AMP, Mithril-LRU, Mithril-FIFO and Mithril-AMP over cache
sizes, and the paper's parameter studies (lookahead range, min support, max support, prefetch list size,
metadata size, recording location), in time-free runs (request-count clock; prefetches land at once).

The default trace is the built-in `associations` workload (sporadic groups of scattered blocks requested
together, with hot and one-off noise: the access pattern Mithril targets); real traces are given as
`path[:format]`. Mithril runs its `paper` preset (metadata up to 10% of the cache, taken out of it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from .. import _core
from .._sim import simulate_many
from .._trace import Trace, open_trace, synthetic

SHARES = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
MITHRIL = {"name": "mithril", "preset": "paper"}
SCHEMES: dict[str, tuple[str, Any]] = {
    "LRU": ("lru", "none"),
    "PG": ("lru", "pg"),
    "AMP": ("lru", "amp"),
    "Mithril-LRU": ("lru", MITHRIL),
    "Mithril-FIFO": ("fifo", MITHRIL),
    "Mithril-AMP": ("lru", {"name": "stack", "first": MITHRIL, "second": "amp"}),
}
# The paper's parameter studies (§5.4), each around the preset's value.
STUDIES: dict[str, list[Any]] = {
    "lookahead": [5, 10, 20, 50, 100, 200],
    "min_support": [1, 2, 3, 4, 6],
    "max_support": [4, 8, 16, 32],
    "pf_list_size": [1, 2, 4, 8],
    "max_metadata": [0.01, 0.02, 0.05, 0.1, 0.2],
    "record": ["miss", "evict", "miss_evict", "each_req"],
}


def _trace(spec: str | Trace | None) -> Trace:
    if spec is None:
        return synthetic("associations")
    if isinstance(spec, Trace):
        return spec
    path, _, fmt = spec.partition(":") if ":" in os.path.basename(spec) else (spec, "", "")
    return open_trace(path, fmt or None)


def run(traces: Sequence[str | Trace | None] = (None,), shares: Sequence[float] = SHARES, study_share: float = 0.05,
        studies: bool = True, out_dir: str | None = None, plot: bool = True, progress=None):
    """Run the curves (and the parameter studies at `study_share` of the footprint); returns two pandas
    DataFrames: (curves, studies)."""
    import pandas as pd

    curve_rows, study_rows = [], []
    for spec in traces:
        tr = _trace(spec)
        fp = tr.footprint()
        name = os.path.basename(tr.path)
        cfgs, labels = [], []
        for share in shares:
            cap = max(1, int(share * fp))
            for scheme, (policy, pf) in SCHEMES.items():
                cfgs.append({"level": [{"size": cap, "policy": policy, "prefetcher": pf}]})
                labels.append((share, cap, scheme))
        for (share, cap, scheme), r in zip(labels, simulate_many(tr, cfgs, progress=progress), strict=True):
            lv = r.levels[0]
            curve_rows.append({"trace": name, "share": share, "cache_blocks": cap, "scheme": scheme,
                               "hit_ratio": lv["hit_ratio"], "precision": lv["precision"],
                               "prefetch_issued": lv["prefetch_issued"]})
        if studies:
            cap = max(1, int(study_share * fp))
            cfgs, labels = [], []
            for param, values in STUDIES.items():
                for v in values:
                    cfgs.append({"level": [{"size": cap, "policy": "lru", "prefetcher": {**MITHRIL, param: v}}]})
                    labels.append((param, v))
            for (param, v), r in zip(labels, simulate_many(tr, cfgs, progress=progress), strict=True):
                lv = r.levels[0]
                study_rows.append({"trace": name, "cache_blocks": cap, "parameter": param, "value": str(v),
                                   "hit_ratio": lv["hit_ratio"], "precision": lv["precision"]})
    curves, study_df = pd.DataFrame(curve_rows), pd.DataFrame(study_rows)
    if out_dir is not None:
        os.makedirs(out_dir, exist_ok=True)
        curves.to_csv(os.path.join(out_dir, "mithril-curves.csv"), index=False)
        study_df.to_csv(os.path.join(out_dir, "mithril-studies.csv"), index=False)
        if plot:
            _plots(curves, study_df, out_dir)
    return curves, study_df


def gains(curves) -> list[dict[str, Any]]:
    """Per trace and size: each Mithril variant's hit ratio against its base (LRU, FIFO's LRU baseline,
    AMP), as the paper reports (+55% over LRU on average, +36% over AMP)."""
    out = []
    for (trace, share), sub in curves.groupby(["trace", "share"]):
        hr = dict(zip(sub.scheme, sub.hit_ratio))
        out.append({"trace": trace, "share": share, "lru": hr["LRU"], "mithril_lru": hr["Mithril-LRU"],
                    "gain_over_lru_pct": 100 * (hr["Mithril-LRU"] / hr["LRU"] - 1) if hr["LRU"] else float("nan"),
                    "amp": hr["AMP"], "mithril_amp": hr["Mithril-AMP"],
                    "gain_over_amp_pct": 100 * (hr["Mithril-AMP"] / hr["AMP"] - 1) if hr["AMP"] else float("nan")})
    return out


def _plots(curves, studies, out_dir: str) -> list[str]:
    """Drawn with :mod:`prefetchsim.plot`: a hit-ratio curve per trace (one line per scheme, cache size
    as % of the footprint on a log axis) and one figure per parameter study (hit ratio and precision)."""
    from .. import plot
    from .._deps import MissingDependency

    written = []
    try:
        plot.new_figure()
    except MissingDependency as e:
        sys.stderr.write(f"prefetchsim: {e}; no plots\n")
        return written
    for trace, sub in curves.groupby("trace"):
        fig, ax = plot.new_figure(figsize=(6.4, 4.2))
        plot.mrc(sub, x="share", y="hit_ratio", hue="scheme", logx=True, ax=ax, title=f"Mithril: {trace}")
        written.append(plot.savefig(fig, os.path.join(out_dir, f"mithril-{trace}.png")))
    groups = studies.groupby(["trace", "parameter"]) if not studies.empty else []
    for (trace, param), sub in groups:
        fig, ax = plot.new_figure(figsize=(5.2, 3.6))
        plot.line(sub, x="value", y=["hit_ratio", "precision"], ax=ax, sort_x=False, xlabel=f"{param} (Mithril-LRU)",
                  ylabel="ratio", title=f"{trace}: {param}")
        written.append(plot.savefig(fig, os.path.join(out_dir, f"mithril-{trace}-{param}.png")))
    return written


def check_names() -> None:
    """Fail early if a scheme names a prefetcher the core does not know."""
    known = set(_core_names())
    for _, (_, pf) in SCHEMES.items():
        name = pf if isinstance(pf, str) else pf["name"]
        if name not in known:
            raise _core.ConfigError(f"reproduce mithril: prefetcher {name!r} is not registered")


def _core_names():
    from .._registry import prefetchers

    return prefetchers()


# --- `prefetchsim reproduce mithril` (the convention of `reproduce/__init__.py`) ---

SUMMARY = "Yang et al.: LRU, PG, AMP and Mithril over LRU/FIFO/AMP; parameter studies"


def add_arguments(parser) -> None:
    parser.add_argument("--trace", "--traces", dest="traces", action="append", metavar="PATH[:FORMAT]",
                        help="a trace to use instead of the built-in 'associations' workload (repeatable)")
    parser.add_argument("--no-studies", action="store_true", help="skip the parameter studies")


def run_from_args(args, progress):
    return run(traces=args.traces or [None], out_dir=args.out, plot=not args.no_plot, studies=not args.no_studies,
               progress=progress)


def write_tables(result, out) -> None:
    from .._table import emit

    curves, studies = result
    for trace, sub in curves.groupby("trace"):
        wide = sub.pivot_table(index=["share", "cache_blocks"], columns="scheme", values="hit_ratio")
        wide = wide[[s for s in SCHEMES if s in wide.columns]]
        out.write(f"hit ratio on {trace}:\n{wide.to_string(float_format=lambda x: f'{x:.4f}')}\n\n")
    out.write("Mithril's gains:\n")
    emit(gains(curves), "table", out)
    if not studies.empty:
        out.write("\nparameter studies (Mithril-LRU, hit ratio / precision):\n")
        emit(studies.to_dict("records"), "table", out,
             ["trace", "cache_blocks", "parameter", "value", "hit_ratio", "precision"])


def records(result) -> list[dict[str, Any]]:
    return result[0].to_dict("records") + result[1].to_dict("records")
