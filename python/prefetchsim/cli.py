"""The ``prefetchsim`` command: a thin layer over the same Python API a notebook uses.

Results go to stdout (or ``-o FILE``) as a table, CSV or JSON; progress and errors go to stderr.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import sys
import time
from collections.abc import Sequence
from importlib import resources
from typing import Any

from . import _core
from ._registry import formats, generators, policies, prefetchers
from ._sim import load_config, simulate_many
from ._trace import Trace, open_trace, synthetic

# Columns of the table view of a run; CSV and JSON carry every field.
_TABLE_COLUMNS = [
    "name", "policy", "prefetcher", "size", "capacity_blocks", "requests", "demand_accesses", "hit_ratio",
    "miss_ratio", "prefetch_issued", "precision", "unused_prefetch",
]


class _Progress:
    """Requests processed and rate, on stderr, only when stderr is a terminal (or forced)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.t0 = time.monotonic()
        self.shown = False

    def __call__(self, n: int) -> None:
        if not self.enabled:
            return
        dt = max(time.monotonic() - self.t0, 1e-9)
        sys.stderr.write(f"\r  {n:,} requests  ({n / dt / 1e6:.2f} M/s)   ")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


def _parse_kv(text: str | None) -> dict[str, Any]:
    """``"a=1,b=x"`` -> ``{"a": 1, "b": "x"}`` (values read as JSON when they parse, else strings).

    A value may itself be ``,`` (libCacheSim writes ``delimiter=,``): a comma right after ``=`` belongs
    to the value.
    """
    out: dict[str, Any] = {}
    if not text:
        return out
    i, n = 0, len(text)
    while i < n:
        eq = text.find("=", i)
        if eq < 0:
            raise _core.ConfigError(f"-t: expected key=value, got {text[i:]!r}")
        key = text[i:eq].strip()
        j = eq + 1
        if j < n and text[j] == ",":
            val, i = ",", j + 2
        else:
            k = text.find(",", j)
            k = n if k < 0 else k
            val, i = text[j:k], k + 1
        try:
            out[key] = json.loads(val)
        except ValueError:
            out[key] = val
    return out


def _open(args: argparse.Namespace) -> Trace:
    params = _parse_kv(getattr(args, "trace_params", None))
    fmt = args.format
    if fmt is not None and fmt.lower() == "synthetic":
        return synthetic(args.trace, block_size=args.block_size, **params)
    return open_trace(
        args.trace,
        None if fmt in (None, "auto") else fmt,
        block_size=args.block_size,
        mode=args.mode,
        ops=args.ops,
        skip_bad=args.skip_bad,
        **params,
    )


def _warn_skipped(path: str, report: dict[str, Any], limit: int) -> None:
    """One warning line on stderr when reading skipped bad records (then the first messages, indented)."""
    n = report.get("skipped_records", 0)
    if not n:
        return
    msgs = report.get("skipped_messages", [])
    sys.stderr.write(f"prefetchsim: warning: skipped {n} bad record(s) of {path} (--skip-bad {limit})"
                     + (f"; first: {msgs[0]}" if msgs else "") + "\n")
    for m in msgs[1:]:
        sys.stderr.write(f"  also: {m}\n")


def _emit(rows: list[dict[str, Any]], fmt: str, out: io.TextIOBase, columns: Sequence[str] | None = None) -> None:
    if fmt == "json":
        for r in rows:
            out.write(json.dumps(r) + "\n")
        return
    if fmt == "csv":
        if rows:
            w = csv.DictWriter(out, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
        return
    cols = [c for c in (columns or (list(rows[0].keys()) if rows else [])) if not rows or c in rows[0]]
    # Tables are for eyes: a trace is shown by its file name (CSV and JSON keep the path).
    rows = [{**r, "trace": os.path.basename(str(r["trace"]))} if "trace" in r else r for r in rows]

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.4f}"
        return str(v)

    table = [[cell(r.get(c, "")) for c in cols] for r in rows]
    widths = [max([len(c)] + [len(t[i]) for t in table]) for i, c in enumerate(cols)]
    out.write("  ".join(c.rjust(w) for c, w in zip(cols, widths)) + "\n")
    for t in table:
        out.write("  ".join(v.rjust(w) for v, w in zip(t, widths)) + "\n")


def _output(args: argparse.Namespace):
    if args.output in (None, "-"):
        return sys.stdout, False
    return open(args.output, "w", newline=""), True


def _add_trace_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--block-size", type=int, default=4096, help="cache block size in bytes (default 4096)")
    p.add_argument("--mode", choices=["blocks", "objects"], default="blocks",
                   help="blocks: split requests into blocks; objects: one object per request (libCacheSim)")
    p.add_argument("--ops", choices=["all", "reads", "writes"], default="all", help="which operations to keep")
    p.add_argument("-t", "--trace-params", metavar="K=V,...",
                   help="format or generator parameters, e.g. 'obj-id-col=2,delimiter=,,has-header=true'")
    _add_skip_bad(p)


def _add_skip_bad(p: argparse.ArgumentParser) -> None:
    p.add_argument("--skip-bad", type=int, default=0, metavar="N",
                   help="skip and count up to N malformed records (reported on stderr); default 0: the first "
                        "is an error")


def _add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output-format", "-f", choices=["table", "csv", "json"], default="table")
    p.add_argument("-o", "--output", help="write results to this file instead of stdout")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress on stderr (default: when stderr is a terminal)")


def _run_rows(results, labels: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    rows = []
    for i, r in enumerate(results):
        for lv in r.levels:
            row = {"trace": r.trace.path, "trace_requests": r.raw["requests"],
                   "trace_skipped": r.raw["skipped_records"]}
            if labels:
                row.update(labels[i])
            row.update(lv)
            rows.append(row)
    return rows


def _simulate(trace: Trace, docs: list[dict[str, Any]], args: argparse.Namespace):
    prog = _Progress(sys.stderr.isatty() if args.progress is None else args.progress)
    try:
        results = simulate_many(trace, docs, progress=prog, threads=getattr(args, "threads", 0))
    finally:
        prog.close()
    if results:
        # Every run reads the same trace the same way: one warning says what was skipped.
        _warn_skipped(trace.path, results[0].raw, trace.spec.get("skip_bad", 0))
    return results


def cmd_sim(args: argparse.Namespace) -> int:
    trace = _open(args)
    docs, labels = [], []
    for algo in args.algos.split(","):
        pol, _, pf = algo.strip().partition("+")
        pf = pf or args.prefetcher
        for size in args.sizes.split(","):
            level = {"size": size.strip(), "policy": pol, "prefetcher": pf}
            engine = {"warmup_requests": args.warmup}
            if args.limit is not None:
                engine["limit"] = args.limit
            docs.append({"level": [level], "engine": engine})
            labels.append({"size": size.strip()})
    results = _simulate(trace, docs, args)
    out, close = _output(args)
    try:
        _emit(_run_rows(results, labels), args.output_format, out, ["trace", *_TABLE_COLUMNS])
    finally:
        if close:
            out.close()
    return 0


def _default_config() -> str:
    return str(resources.files("prefetchsim").joinpath("data", "default.toml"))


def cmd_run(args: argparse.Namespace) -> int:
    path = args.config or _default_config()
    doc, trace = load_config(path)
    if args.trace is not None:
        trace = open_trace(args.trace)
    if trace is None:
        raise _core.ConfigError(f"{path}: no [trace] table and no --trace given")
    if args.skip_bad:
        trace = Trace({**trace.spec, "skip_bad": args.skip_bad})
    if args.config is None:
        sys.stderr.write(f"prefetchsim: running the built-in default ({path}) on {trace.path!r}\n")
    results = _simulate(trace, [doc], args)
    out, close = _output(args)
    try:
        _emit(_run_rows(results), args.output_format, out, ["trace", *_TABLE_COLUMNS])
    finally:
        if close:
            out.close()
    return 0


def cmd_trace_info(args: argparse.Namespace) -> int:
    trace = _open(args)
    info = trace.info(window=args.window)
    _warn_skipped(trace.path, info, args.skip_bad)
    out, close = _output(args)
    try:
        if args.output_format == "table":
            width = max(len(k) for k in info)
            for k, v in info.items():
                out.write(f"{k.ljust(width)}  {v:.4f}\n" if isinstance(v, float) else f"{k.ljust(width)}  {v}\n")
        else:
            _emit([info], args.output_format, out)
    finally:
        if close:
            out.close()
    return 0


def cmd_trace_convert(args: argparse.Namespace) -> int:
    trace = _open(args)
    summary = trace.convert(args.out, to=args.to, per_block=args.per_block)
    _warn_skipped(trace.path, summary, args.skip_bad)
    sys.stderr.write(json.dumps(summary) + "\n")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from .reproduce import mithril, split

    if args.experiment == "mithril":
        return _reproduce_mithril(args, mithril)
    if args.experiment != "split":
        raise _core.ConfigError(f"reproduce: {args.experiment!r} is not available yet; available: split, mithril")
    prog = _Progress(sys.stderr.isatty() if args.progress is None else args.progress)
    try:
        df = split.run(seed=args.seed, requests=args.requests, out_dir=args.out, plot=not args.no_plot, progress=prog)
    finally:
        prog.close()
    out, close = _output(args)
    try:
        if args.output_format == "table":
            wide = df.pivot_table(index=["workload", "cache_blocks"], columns="policy", values="prefetch_hit_rate")
            wide = wide[[p for p in split.POLICIES if p in wide.columns]]
            out.write("prefetch hit rate (hits / requests), T2 prefetching:\n")
            out.write(wide.to_string(float_format=lambda x: f"{x:.4f}") + "\n\n")
            out.write("at the paper's highlighted sizes (change against LRU):\n")
            _emit(split.summary(df), "table", out)
        else:
            _emit(df.to_dict("records"), args.output_format, out)
    finally:
        if close:
            out.close()
    if args.out:
        sys.stderr.write(f"prefetchsim: results in {args.out}/\n")
    return 0


def _reproduce_mithril(args: argparse.Namespace, mithril) -> int:
    prog = _Progress(sys.stderr.isatty() if args.progress is None else args.progress)
    try:
        curves, studies = mithril.run(traces=args.traces or [None], out_dir=args.out, plot=not args.no_plot,
                                      studies=not args.no_studies, progress=prog)
    finally:
        prog.close()
    out, close = _output(args)
    try:
        if args.output_format == "table":
            for trace, sub in curves.groupby("trace"):
                wide = sub.pivot_table(index=["share", "cache_blocks"], columns="scheme", values="hit_ratio")
                wide = wide[[s for s in mithril.SCHEMES if s in wide.columns]]
                out.write(f"hit ratio on {trace}:\n{wide.to_string(float_format=lambda x: f'{x:.4f}')}\n\n")
            out.write("Mithril's gains:\n")
            _emit(mithril.gains(curves), "table", out)
            if not studies.empty:
                out.write("\nparameter studies (Mithril-LRU, hit ratio / precision):\n")
                _emit(studies.to_dict("records"), "table", out,
                      ["trace", "cache_blocks", "parameter", "value", "hit_ratio", "precision"])
        else:
            _emit(curves.to_dict("records") + studies.to_dict("records"), args.output_format, out)
    finally:
        if close:
            out.close()
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    tables = {"policies": policies, "prefetchers": prefetchers, "formats": formats, "generators": generators}
    for what in [args.what] if args.what else list(tables):
        print(f"{what}:")
        for name, summary in tables[what]().items():
            print(f"  {name:<16} {summary}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="prefetchsim",
        description="Caching and prefetching in multi-level storage hierarchies, on real I/O traces.",
    )
    p.add_argument("--version", action="version", version=f"prefetchsim {_core.__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("sim", help="one-level simulations in libCacheSim's order: TRACE FORMAT ALGOS SIZES",
                       description="Simulate every ALGO at every SIZE on TRACE (in parallel), one level each.")
    s.add_argument("trace", help="trace file, or a generator name with FORMAT 'synthetic'")
    s.add_argument("format", help="trace format name, 'auto' to detect, or 'synthetic'")
    s.add_argument("algos", help="comma list of policies, each optionally '+prefetcher' (lru,arc+obl)")
    s.add_argument("sizes", help="comma list: blocks (1000), bytes (64MiB), footprint shares (0.01, 5%%)")
    s.add_argument("--prefetcher", default="none", help="prefetcher for algos without '+' (default none)")
    s.add_argument("--warmup", type=int, default=0, help="requests that warm the cache but are not counted")
    s.add_argument("--limit", type=int, default=None, help="stop after this many requests")
    s.add_argument("--threads", type=int, default=0, help="parallel runs (default: all cores)")
    _add_trace_options(s)
    _add_output_options(s)
    s.set_defaults(func=cmd_sim)

    r = sub.add_parser("run", help="run a hierarchy config (TOML); without one, the built-in default",
                       description="Run CONFIG.toml ([trace], [[level]], [engine]). Without CONFIG, run the "
                                   "built-in default: a synthetic OLTP-like workload over a two-level hierarchy.")
    r.add_argument("config", nargs="?", help="run config (TOML)")
    r.add_argument("--trace", help="replace the config's [trace] with this file (format detected)")
    _add_skip_bad(r)
    _add_output_options(r)
    r.set_defaults(func=cmd_run, threads=1)

    t = sub.add_parser("trace", help="trace statistics and conversion")
    tsub = t.add_subparsers(dest="trace_command", required=True)
    ti = tsub.add_parser("info", help="requests, read share, footprint, sizes, span, duration, random share")
    ti.add_argument("trace")
    ti.add_argument("--format", default=None, help="format name (default: detect; 'synthetic' for generators)")
    ti.add_argument("--window", type=int, default=None,
                    help="requests remembered when deciding whether a request continues a sequential run")
    _add_trace_options(ti)
    _add_output_options(ti)
    ti.set_defaults(func=cmd_trace_info)
    tc = tsub.add_parser("convert", help="write a trace as oracleGeneral (.zst) or CSV")
    tc.add_argument("trace")
    tc.add_argument("out", help="output file (.oracleGeneral.bin[.zst] or .csv)")
    tc.add_argument("--format", default=None, help="input format (default: detect)")
    tc.add_argument("--to", choices=["oracle_general", "csv"], default=None, help="output format (default: by name)")
    tc.add_argument("--per-block", action="store_true", help="one output record per block (libCacheSim 'blk4k')")
    _add_trace_options(tc)
    tc.set_defaults(func=cmd_trace_convert)

    rp = sub.add_parser("reproduce", help="rerun a paper's experiments (split, mithril)",
                        description="Rerun the experiments of a paper of the project and print its table.")
    rp.add_argument("experiment", choices=["split", "pfc", "step", "mithril"])
    rp.add_argument("--seed", type=int, default=1, help="workload seed (default 1)")
    rp.add_argument("--requests", type=int, default=100_000, help="requests per workload (default: the paper's 100,000)")
    rp.add_argument("--out", default=None, help="directory for the CSV and the plots")
    rp.add_argument("--no-plot", action="store_true", help="do not draw plots")
    rp.add_argument("--trace", dest="traces", action="append", metavar="PATH[:FORMAT]",
                    help="mithril: a trace to use instead of the built-in workload (repeatable)")
    rp.add_argument("--no-studies", action="store_true", help="mithril: skip the parameter studies")
    _add_output_options(rp)
    rp.set_defaults(func=cmd_reproduce)

    ls = sub.add_parser("list", help="list policies, prefetchers, trace formats or generators")
    ls.add_argument("what", nargs="?", choices=["policies", "prefetchers", "formats", "generators"])
    ls.set_defaults(func=cmd_list)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        sys.stderr.write("prefetchsim: interrupted\n")
        return 130
    except BrokenPipeError:
        # Output closed early (e.g. piped into `head`): not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (_core.PrefetchsimError, ValueError, OSError) as e:
        # ValueError: an argument out of range (a negative --window); OSError: an output that cannot be written.
        sys.stderr.write(f"prefetchsim: error: {e}\n")
        return 2
