"""``prefetchsim mrc``: miss-ratio curves from the command line (see ``prefetchsim._mrc``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from . import _core
from ._argtypes import count
from ._mrc import METHODS, UNITS, mrc
from ._table import emit

_COLUMNS = ["method", "capacity_blocks", "cache_bytes", "miss_ratio", "hit_ratio", "request_miss_ratio",
            "sample_blocks", "prefetch_issued", "precision"]


def _sizes(text: str | None) -> list[Any] | None:
    if text is None:
        return None
    out: list[Any] = []
    for s in text.split(","):
        s = s.strip()
        if s.endswith("%"):
            out.append(s)
            continue
        try:
            out.append(int(s))
        except ValueError:
            try:
                out.append(float(s))
            except ValueError:
                raise _core.ConfigError(f"--sizes: {s!r} is neither blocks, a share (0.05) nor 'N%'") from None
    return out


def cmd_mrc(args: argparse.Namespace) -> int:
    from ._progress import Progress
    from .cli import _open, _output

    trace = _open(args)
    prog = Progress(None, progress=args.progress)
    try:
        df = mrc(trace, _sizes(args.sizes), method=args.method, points=args.points, rate=args.rate,
                 max_samples=args.max_samples, adjust=args.adjust, seed=args.seed, policy=args.policy,
                 prefetcher=args.prefetcher, unit=args.unit, extent_bytes=args.extent_bytes, limit=args.limit,
                 progress=prog)
    finally:
        prog.close()
    a = df.attrs
    # Sizes in blocks spare the footprint pass of a simulated curve: then there is no footprint to print.
    footprint = f"footprint {a['footprint']:,.0f} blocks, " if "footprint" in a else ""
    sys.stderr.write(f"prefetchsim: {args.method}: {footprint}rate {a.get('rate', 1.0):.4g}, {a['cpu_s']:.2f} s CPU, "
                     f"{a['wall_s']:.2f} s wall\n")
    with _output(args) as out:
        emit(df.to_dict("records"), args.output_format, out, [c for c in _COLUMNS if c in df.columns])
    if args.plot:
        from . import plot

        fig, ax = plot.new_figure()
        plot.mrc(df, ax=ax, title=f"{trace.path} ({args.method})")
        plot.savefig(fig, args.plot)
        sys.stderr.write(f"prefetchsim: {args.plot}\n")
    return 0


def add_parser(sub: Any, add_trace_options: Any, add_output_options: Any) -> None:
    """The ``mrc`` subcommand on the ``prefetchsim`` parser's subparsers ``sub``."""
    m = sub.add_parser("mrc", help="miss-ratio curve: exact LRU, SHARDS, or sampled simulation of any policy",
                       description="The miss-ratio curve of TRACE in one pass (exact LRU or SHARDS), or by "
                                   "miniature simulation of a policy and prefetcher on a spatial sample.")
    m.add_argument("trace", help="trace file, or a generator name with --format synthetic")
    m.add_argument("--format", default=None, help="trace format name (default: detect), or 'synthetic'")
    m.add_argument("--method", choices=METHODS, default="exact", help="exact (default), shards, mini or full")
    m.add_argument("--sizes", metavar="S,...", help="blocks (1000), shares (0.05) or '5%%'; default --points sizes")
    m.add_argument("--points", type=count, default=100, help="sizes up to the footprint when --sizes is not given")
    m.add_argument("--rate", type=float, default=None, help="sampling rate (shards: 0.01, mini: 0.1)")
    m.add_argument("--max-samples", type=count, default=None, help="fixed-size SHARDS: sampled blocks kept")
    m.add_argument("--adjust", action=argparse.BooleanOptionalAction, default=True, help="SHARDS_adj correction")
    m.add_argument("--seed", type=count, default=0, help="seed of the sampling hash")
    m.add_argument("--policy", default="lru", help="mini/full: replacement policy")
    m.add_argument("--prefetcher", default="none", help="mini/full: prefetcher")
    m.add_argument("--unit", choices=UNITS, default="extent", help="mini: sample by block or by extent")
    m.add_argument("--extent-bytes", type=count, default=256 * 1024, help="mini: extent size (default 256 KiB)")
    m.add_argument("--limit", type=count, default=None, help="read only the first N requests")
    m.add_argument("--plot", metavar="FILE.png", help="also draw the curve to this file")
    add_trace_options(m)
    add_output_options(m)
    m.set_defaults(func=cmd_mrc)
