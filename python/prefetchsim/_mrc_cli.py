"""``prefetchsim mrc``: miss-ratio curves from the command line (see ``prefetchsim._mrc``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from . import _core
from ._argtypes import count, positive
from ._mrc import APPLIES, METHODS, UNITS, check_options, mrc
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


def _option(key: str) -> str:
    """An option of `ps.mrc` as the command line spells it (``max_samples`` -> ``--max-samples``)."""
    return "--adjust/--no-adjust" if key == "adjust" else "--" + key.replace("_", "-")


def cmd_mrc(args: argparse.Namespace) -> int:
    from ._progress import Progress
    from .cli import _component, _open, _output, _prefetcher, _split_top, _warn_skipped

    # Options are None unless given: one the method does not use is an error naming it, before any work.
    options = {k: getattr(args, k) for k in APPLIES if hasattr(args, k)}
    check_options(args.method, options, _option)
    sizes = _sizes(args.sizes)
    if args.points is not None and sizes is not None:
        raise _core.ConfigError("--points: applies only when no --sizes are given")
    # Policies and prefetchers are spelled as `sim` spells them: "splitlru(up_ratio=0.5)", "mithril+amp".
    if args.policy is not None:
        options["policy"] = _component(args.policy, "--policy")
    if args.prefetcher is not None:
        options["prefetcher"] = _prefetcher(_split_top(args.prefetcher, "+"), "--prefetcher")
    if args.plot:
        from . import plot

        plot.check_image_option("--plot", args.plot)
    trace = _open(args)
    prog = Progress(None, progress=args.progress)
    try:
        df = mrc(trace, sizes, method=args.method, points=args.points, limit=args.limit, progress=prog, **options)
    finally:
        prog.close()
    a = df.attrs
    # As `sim` does: the help promised it, and the count was only in df.attrs.
    _warn_skipped(trace.path, a, getattr(args, "skip_bad", 0))
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
    # Method options default to None (not given): one the method does not use is an error (check_options).
    m.add_argument("--points", type=positive, default=None,
                   help="sizes up to the footprint when --sizes is not given (default 100)")
    m.add_argument("--rate", type=float, default=None, help="shards/mini: sampling rate (shards: 0.01, mini: 0.1)")
    m.add_argument("--max-samples", type=positive, default=None, help="shards: fixed-size SHARDS, sampled blocks kept")
    m.add_argument("--adjust", action=argparse.BooleanOptionalAction, default=None,
                   help="shards: SHARDS_adj correction (default on)")
    m.add_argument("--seed", type=count, default=None, help="shards/mini: seed of the sampling hash (default 0)")
    m.add_argument("--policy", default=None,
                   help="mini/full: replacement policy as sim spells it, e.g. 'splitlru(up_ratio=0.5)' (default lru)")
    m.add_argument("--prefetcher", default=None,
                   help="mini/full: prefetcher as sim spells it, e.g. 'mithril(preset=libcachesim)' (default none)")
    m.add_argument("--unit", choices=UNITS, default=None, help="mini: sample by block or by extent (default)")
    m.add_argument("--extent-bytes", type=count, default=None, help="mini: extent size (default 256 KiB)")
    m.add_argument("--threads", type=count, default=None, help="full: parallel runs (default 1)")
    m.add_argument("--limit", type=count, default=None, help="read only the first N requests")
    m.add_argument("--plot", metavar="FILE.png", help="also draw the curve to this file")
    add_trace_options(m)
    add_output_options(m)
    m.set_defaults(func=cmd_mrc)
