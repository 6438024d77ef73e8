"""How far from optimal: Belady's MIN and Cao et al.'s integrated bounds on a trace, and each scheme's
share of the optimal gain in hit ratio and in single-disk stall time (docs/optimal.md).

Schemes: LRU and MIN (`opt`), without prefetching and with each prefetcher; cache sizes as shares of the
trace's footprint; the single-disk model with fetch time F (request services); Aggressive, Conservative,
demand fetching under MIN, and the lowest stall the optimum can have.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from .. import _core
from .._argtypes import positive
from .._atomic import write_csv
from .._trace import open_trace
from ..optimal import bounds_table

PREFETCHERS = ("obl", "ra", "amp", "linux")


def _floats(text: str, what: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise _core.ConfigError(f"{what}: expected a comma list of numbers, got {text!r}") from None


def _fetch_times(text: str, what: str) -> list[int]:
    """A comma list of fetch times, whole numbers from 1 (``2.7`` was cut to 2 and ``nan`` failed unnamed;
    0 was let through to the core's error)."""
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise _core.ConfigError(f"{what}: expected a comma list of whole numbers, got {text!r}") from None
    if any(v < 1 for v in values):
        raise _core.ConfigError(f"{what}: {text!r} has a fetch time below 1; give 1 or more (request services)")
    return values


def run(
    trace: str,
    trace_format: str | None = None,
    cache_shares: Sequence[float] = (0.01, 0.1),
    fetch_times: Sequence[int] = (10,),
    sensitivity: Sequence[int] = (),
    prefetchers: Sequence[str] = PREFETCHERS,
    limit: int | None = None,
    out_dir: str | None = None,
):
    """Run the bounds on ``trace``: every cache share at every fetch time of ``fetch_times``, and the
    fetch times of ``sensitivity`` at the first share. Returns a pandas DataFrame (one row per scheme)."""
    import pandas as pd

    tr = open_trace(trace, trace_format) if trace_format else open_trace(trace)
    footprint = tr.footprint()
    rows: list[dict[str, Any]] = []
    combos = [(s, f) for s in cache_shares for f in fetch_times]
    if cache_shares:
        combos += [(cache_shares[0], f) for f in sensitivity if f not in fetch_times]
    for share, f in combos:
        if not 0 < share <= 1:
            raise _core.ConfigError(f"cache share {share}: give a share of the footprint in (0, 1]")
        blocks = max(1, int(footprint * share))
        for r in bounds_table(tr, blocks, prefetchers, int(f), limit):
            rows.append({**r, "cache_share": share, "footprint": footprint})
    df = pd.DataFrame(rows)
    if out_dir is not None:
        os.makedirs(out_dir, exist_ok=True)
        write_csv(df, os.path.join(out_dir, f"optimal-{os.path.basename(trace)}.csv"))
    return df


# --- `prefetchsim reproduce optimal` (the convention of `reproduce/__init__.py`) ---

SUMMARY = "Belady's MIN and Cao et al.'s Aggressive/Conservative: each scheme's share of the optimal gain"
#: ``--out DIR`` writes the one CSV; docs/optimal.md describes tables only, so there is no plot.
PLOTS = False


def add_arguments(parser) -> None:
    parser.add_argument("trace", help="trace file")
    parser.add_argument("--format", dest="trace_format", default=None, help="trace format (default: detected)")
    parser.add_argument("--cache-shares", default="0.01,0.1", metavar="S,S",
                        help="cache sizes as shares of the footprint (default 0.01,0.1)")
    parser.add_argument("--fetch-times", default="10", metavar="F,F",
                        help="fetch times F in request services for every share (default 10)")
    parser.add_argument("--sensitivity", default="", metavar="F,F",
                        help="more fetch times, at the first share only")
    parser.add_argument("--prefetchers", default=",".join(PREFETCHERS), metavar="P,P",
                        help=f"prefetchers beside none (default {','.join(PREFETCHERS)})")
    parser.add_argument("--limit", type=positive, default=None, metavar="N", help="first N requests only")


def run_from_args(args, progress):
    return run(args.trace, args.trace_format, _floats(args.cache_shares, "--cache-shares"),
               _fetch_times(args.fetch_times, "--fetch-times"), _fetch_times(args.sensitivity, "--sensitivity"),
               [p for p in args.prefetchers.split(",") if p], args.limit, args.out)


COLUMNS = ["cache_blocks", "fetch_time", "scheme", "hit_ratio", "hit_share", "stall", "fetches", "stall_share",
           "stall_share_opt_max"]


def write_tables(df, out) -> None:
    from .._table import emit

    if df.empty:
        return
    out.write(f"{df.trace.iloc[0]}: footprint {df.footprint.iloc[0]} blocks; stall in request services\n")
    rows = [{**r, "fetches": "" if r["fetches"] != r["fetches"] else int(r["fetches"])} for r in records(df)]
    emit(rows, "table", out, COLUMNS)


def records(df) -> list[dict[str, Any]]:
    return df.to_dict("records")
