"""The ``prefetchsim`` command: a thin layer over the same Python API a notebook uses.

Results go to stdout (or ``-o FILE``) as a table, CSV or JSON; progress and errors go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from typing import IO, Any, NoReturn

from . import _core
from ._argtypes import count as _count
from ._argtypes import inches, positive
from ._atomic import atomic_open, check_writable
from ._deps import MissingDependency
from ._progress import Progress
from ._registry import formats, generators, policies, prefetchers, run_totals
from ._sim import RunNote, device_bench, devices, load_config, simulate_many
from ._table import emit as _emit
from ._trace import Trace, open_trace, synthetic

# Columns of the table view of a run; CSV and JSON carry every field.
_TABLE_COLUMNS = [
    "name", "policy", "prefetcher", "size", "capacity_blocks", "requests", "demand_accesses", "hit_ratio",
    "miss_ratio", "prefetch_issued", "precision", "unused_prefetch",
]


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
        cache=getattr(args, "cache", True),
        **params,
    )


def _warn_skipped(path: str, report: dict[str, Any], limit: int, named: str = "--skip-bad") -> None:
    """One warning line on stderr when reading skipped bad records, or records a format option drops
    (vscsi's ``other-cmds=skip``, whose messages say so), then the first messages, indented. ``named``
    is where the limit was given (``trace.skip_bad =`` when it comes from a run config)."""
    n = report.get("skipped_records", 0)
    if not n:
        return
    msgs = report.get("skipped_messages", [])
    what = f"bad record(s) of {path} ({named} {limit})" if limit else f"record(s) of {path}"
    sys.stderr.write(f"prefetchsim: warning: skipped {n} {what}"
                     + (f"; first: {msgs[0]}" if msgs else "") + "\n")
    for m in msgs[1:]:
        sys.stderr.write(f"  also: {m}\n")


@contextlib.contextmanager
def _output(args: argparse.Namespace) -> Iterator[IO[str]]:
    """Standard output, or ``-o FILE`` written whole or not at all (a failed write keeps the old file)."""
    if args.output in (None, "-"):
        try:
            yield sys.stdout
            sys.stdout.flush()  # here, so that a failure is named; at exit it would not be
        except BrokenPipeError:
            raise  # a reader that stopped early (`| head`): main treats it as no error
        except OSError as e:
            if e.filename is not None or e.errno is None:
                raise
            # A full disk under `> file` said only "[Errno 27] File too large".
            raise OSError(e.errno, e.strerror, "standard output") from None
        return
    with atomic_open(args.output, "w", newline="") as f:
        yield f


# The options that name a file a command writes (`--events`: the event log; it replaced the trace).
_OUTPUTS = ("output", "events", "db", "export", "plot", "report", "record")


def _written_outputs(args: argparse.Namespace) -> Iterator[str]:
    """The files the command's output options name (not standard output)."""
    for out in (getattr(args, k, None) for k in _OUTPUTS):
        if isinstance(out, str) and out != "-":
            yield out


def _check_output_folders(args: argparse.Namespace) -> None:
    """Refuse an output whose folder is missing or not writable before the work, naming the option
    (`sweep -o nodir/x.csv` ran the whole sweep, then failed)."""
    for key in _OUTPUTS:
        out = getattr(args, key, None)
        if not isinstance(out, str) or out == "-":
            continue
        try:
            check_writable(out)
        except OSError as e:
            flag = "-o" if key == "output" else f"--{key}"
            raise _core.ConfigError(f"{flag} {out}: {e.strerror or e}") from None


def _same_file(a: str, b: str) -> bool:
    """Whether two paths name one file, existing or not (a file not written yet has no inode to compare)."""
    if os.path.exists(a) and os.path.exists(b):
        return os.path.samefile(a, b)
    return os.path.realpath(a) == os.path.realpath(b)


def _refuse_output(out: str, read: str) -> NoReturn:
    raise _core.ConfigError(f"{out}: is the file this command reads ({read}); give another output file")


def _refuse_inputs_as_outputs(args: argparse.Namespace) -> None:
    """An output (``-o``, ``--events``, ``--export``, ``--plot``, ``--report``, ``--record``) naming a file
    the command reads (its trace, config, spec, results or backing file) would replace it: ``sim t.lis ...
    -o t.lis`` lost the trace. Checked before any work."""
    inputs = [getattr(args, k, None) for k in ("trace", "config", "spec", "backing")]
    # `results DB ...` reads its databases (a list): `results x.sqlite --export x.sqlite` merged one into itself.
    for many in ("results", "db"):
        value = getattr(args, many, None)
        if isinstance(value, list):
            inputs += value
    for out in _written_outputs(args):
        if not os.path.exists(out):
            continue
        for path in inputs:
            if isinstance(path, str) and os.path.exists(path) and os.path.samefile(path, out):
                _refuse_output(out, path)


def _refuse_trace_as_output(args: argparse.Namespace, trace: Trace) -> None:
    """An output naming a file the trace reads, when the trace comes from a config (``run cfg.toml -o
    t.lis`` with ``path = "t.lis"`` in it) or is a merge: checked by the core's own reading of the trace
    table, before the run. ``run cfg.toml -o t.lis`` replaced the trace with the results."""
    for out in _written_outputs(args):
        read = _core.file_written_by(trace._json(), out)
        if read is not None:
            _refuse_output(out, read)


def _add_trace_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--block-size", type=_count, metavar="BYTES", default=4096, help="cache block size in bytes (default 4096)")
    p.add_argument("--mode", choices=["blocks", "objects"], default="blocks",
                   help="blocks: split requests into blocks; objects: one object per request (libCacheSim)")
    p.add_argument("--ops", choices=["all", "reads", "writes"], default="all", help="which operations to keep")
    p.add_argument("-t", "--trace-params", metavar="K=V,...",
                   help="format or generator parameters, e.g. 'obj-id-col=2,delimiter=,,has-header=true'")
    _add_skip_bad(p)
    _add_cache_option(p)


def _add_cache_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-cache", dest="cache", action="store_false",
                   help="decode the trace file itself, not its cached decoding (see 'prefetchsim cache')")


def _add_skip_bad(p: argparse.ArgumentParser, default: int | None = 0, default_help: str = "default 0") -> None:
    p.add_argument("--skip-bad", type=_count, default=default, metavar="N",
                   help=f"skip and count up to N malformed records (reported on stderr); {default_help}: the first "
                        "is an error")


def _add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-f", "--output-format", choices=["table", "csv", "json"], default="table",
                   help="table (default, for reading), csv, or json (one object per line)")
    p.add_argument("-o", "--output", metavar="FILE", help="write results to this file instead of stdout")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress on stderr (default: when stderr is a terminal)")


def _add_events_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--events", metavar="FILE", default=None,
                   help="write the run's per-block event log to FILE (CSV; .csv.zst/.csv.gz compressed; "
                        ".parquet with pyarrow); one run only (docs/events.md)")


def _run_rows(results, labels: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One row per level with the run's totals (every one of the core's run schema, under the names
    `Result.summary` and the results database give them: a warm-up run's rows say what it left out);
    timed runs add their run-level timing fields to each row. ``trace_skipped`` is ``skipped_records``
    under the name these rows had first."""
    rows = []
    for i, r in enumerate(results):
        for lv in r.levels:
            row = {"trace": r.trace.path, **run_totals(r.raw), "trace_skipped": r.raw["skipped_records"]}
            if labels:
                row.update(labels[i])
            row.update(lv)
            row.update(r.timing or {})
            rows.append(row)
    return rows


def _timing_lines(results) -> str:
    """A short text summary of the timed runs among `results` (for the table view)."""
    out = []
    for r in results:
        t = r.timing
        if t is None:
            continue
        out.append(
            f"response time ({t['replay']} loop, {t['rt_requests']} reads): mean {t['rt_mean_ms']:.3f} ms, "
            f"p50 {t['rt_p50_ms']:.3f}, p95 {t['rt_p95_ms']:.3f}, p99 {t['rt_p99_ms']:.3f}, max {t['rt_max_ms']:.3f}; "
            f"makespan {t['makespan_ms'] / 1e3:.3f} s"
        )
        out.append(
            f"device {t['device']}: {t['device_requests']} requests (demand {t['device_requests_demand']}, "
            f"prefetch {t['device_requests_prefetch']}, mixed {t['device_requests_mixed']}), "
            f"{t['device_blocks_read']} blocks, service mean {t['device_service_mean_ms']:.3f} ms, "
            f"utilisation {t['device_utilization']:.3f}; scheduler queue mean {t['sched_queue_mean']:.3f}, "
            f"max {t['sched_queue_max']}; {t['net_messages']} network messages"
        )
    return "".join(line + "\n" for line in out)


def _simulate(trace: Trace, docs: list[dict[str, Any]], args: argparse.Namespace):
    _refuse_trace_as_output(args, trace)
    events = getattr(args, "events", None)
    if events is not None and len(docs) != 1:
        raise _core.ConfigError(f"--events records one run: give one algorithm and one size, not {len(docs)} runs")
    prog = Progress(None, progress=args.progress)
    try:
        with _notes_on_stderr():
            results = simulate_many(trace, docs, progress=prog, threads=getattr(args, "threads", 0), events=events)
    finally:
        prog.close()
    if results:
        # Every run reads the same trace the same way: one warning says what was skipped.
        _warn_skipped(trace.path, results[0].raw, trace.spec.get("skip_bad", 0),
                      getattr(args, "skip_bad_named", "--skip-bad"))
    return results


@contextlib.contextmanager
def _notes_on_stderr() -> Iterator[None]:
    """The runs' notes (`Result.notes`, given as `RunNote` warnings) as ``prefetchsim: warning:`` lines on
    stderr once the runs are done, each distinct one once; other warnings pass as they would."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RunNote)
        yield
    for w in caught:
        if not issubclass(w.category, RunNote):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    for note in dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, RunNote)):
        sys.stderr.write(f"prefetchsim: warning: {note}\n")


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside parentheses: ``"lru,arc+ra(p=4,mode=pm)"`` at ``,`` gives
    ``["lru", "arc+ra(p=4,mode=pm)"]``. Unbalanced parentheses are a ConfigError."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise _core.ConfigError(f"{text!r}: ')' without '('")
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if depth:
        raise _core.ConfigError(f"{text!r}: '(' without ')'")
    parts.append(cur)
    return [p.strip() for p in parts]


def _component(text: str, what: str) -> Any:
    """``"mithril(preset=libcachesim,lookahead=20)"`` -> ``{"name": "mithril", "preset": "libcachesim",
    "lookahead": 20}``; a bare name stays a string."""
    name, paren, rest = text.partition("(")
    name = name.strip()
    if not name:
        raise _core.ConfigError(f"{what}: empty name in {text!r}")
    if not paren:
        return name
    if not rest.endswith(")"):
        raise _core.ConfigError(f"{what}: {text!r}: parameters go in parentheses at the end, name(key=value,...)")
    params = _parse_kv(rest[:-1])
    if "name" in params:
        raise _core.ConfigError(f"{what}: {text!r}: the name goes before the parentheses")
    return {"name": name, **params}


def _algo(text: str, default_prefetcher: str) -> tuple[Any, Any]:
    """One ``ALGOS`` entry: ``POLICY[(k=v,...)][+PREFETCHER[(k=v,...)][+PREFETCHER2...]]`` -> (policy,
    prefetcher) as a run config takes them (see `_prefetcher`)."""
    parts = _split_top(text, "+")
    policy = _component(parts[0], "policy")
    if len(parts) == 1:
        return policy, default_prefetcher
    return policy, _prefetcher(parts[1:], "prefetcher")


def _prefetcher(parts: list[str], what: str) -> Any:
    """``PREFETCHER[(k=v,...)]`` texts (an algo split at ``+``) as a run config takes them: two
    prefetchers make a ``stack``, more a stack whose second is a stack of the rest (as the core reads
    ``a+b+c``; three with parameters were refused, three without accepted). `mrc --prefetcher` reads
    the same spellings."""
    pfs = [_component(p, what) for p in parts]
    if all(isinstance(p, str) for p in pfs):
        return "+".join(pfs)  # one name, or the core's own `first+second+...` shorthand
    stacked = pfs[-1]
    for p in reversed(pfs[:-1]):
        stacked = {"name": "stack", "first": p, "second": stacked}
    return stacked


def cmd_sim(args: argparse.Namespace) -> int:
    trace = _open(args)
    docs, labels = [], []
    algos = _split_top(args.algos, ",")
    with_params = any("(" in a for a in algos)
    for algo in algos:
        pol, pf = _algo(algo, args.prefetcher)
        for size in args.sizes.split(","):
            level = {"size": size.strip(), "policy": pol, "prefetcher": pf}
            engine = {"warmup_requests": args.warmup}
            if args.limit is not None:
                engine["limit"] = args.limit
            docs.append({"level": [level], "engine": engine})
            # With parameters, the policy and prefetcher names alone do not tell the runs apart.
            labels.append({"algo": algo, "size": size.strip()} if with_params else {"size": size.strip()})
    results = _simulate(trace, docs, args)
    with _output(args) as out:
        columns = ["trace", "algo", *_TABLE_COLUMNS] if with_params else ["trace", *_TABLE_COLUMNS]
        _emit(_run_rows(results, labels), args.output_format, out, columns)
    return 0


def cmd_cache(args: argparse.Namespace) -> int:
    from ._cache import cache_dir, cached_files, check_settings, temporary_files

    check_settings()
    folder = cache_dir()
    if folder is None:
        print("decoded-trace cache: off (PREFETCHSIM_CACHE=0, or no HOME)")
        return 0
    files = cached_files(folder)
    if args.action == "clear":
        # Temporary files too: a run writing one meanwhile goes on without caching its trace.
        for f in files + temporary_files(folder):
            f.unlink(missing_ok=True)
        print(f"removed {len(files)} cached decoding(s) from {folder}")
    else:
        total = sum(f.stat().st_size for f in files)
        print(f"{folder}: {len(files)} cached decoding(s), {_human_bytes(total)}")
    return 0


def _default_config() -> str:
    from importlib import resources  # on first use: it imports tempfile, shutil and pathlib

    return str(resources.files("prefetchsim").joinpath("data", "default.toml"))


def cmd_run(args: argparse.Namespace) -> int:
    path = args.config or _default_config()
    doc, trace = load_config(path)
    if args.trace is not None:
        trace = open_trace(args.trace)
    if trace is None:
        raise _core.ConfigError(f"{path}: no [trace] table and no --trace given")
    if args.skip_bad is not None:
        trace = Trace({**trace.spec, "skip_bad": args.skip_bad})
    else:
        args.skip_bad_named = "trace.skip_bad ="  # the warning names where the limit came from
    if not args.cache and "merge" not in trace.spec and trace.spec.get("format") != "synthetic":
        trace = Trace({**trace.spec, "cache": False})
    if args.config is None:
        sys.stderr.write(f"prefetchsim: running the built-in default ({path}) on {trace.path!r}\n")
    results = _simulate(trace, [doc], args)
    with _output(args) as out:
        _emit(_run_rows(results), args.output_format, out, ["trace", *_TABLE_COLUMNS])
        if args.output_format == "table":
            out.write(_timing_lines(results))
    return 0


def _human_bytes(n: int) -> str:
    """``7852032`` -> ``7.49 MiB`` (powers of 1024, as sizes are read)."""
    x = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if x < 1024 or unit == "TiB":
            return f"{int(x)} B" if unit == "B" else f"{x:.2f} {unit}"
        x /= 1024
    return f"{n} B"


def _human_duration(ns: int) -> str:
    """``127233494100`` -> ``2 min 7.233 s``."""
    s = ns / 1e9
    if s < 60:
        return f"{s:.3f} s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{int(m)} min {s:.3f} s"
    h, m = divmod(int(m), 60)
    return f"{h} h {m} min {s:.0f} s" if h < 48 else f"{h / 24:.1f} days"


def _info_cell(key: str, v: Any) -> str:
    """A `trace info` value for the table: bytes and durations also in readable units, big counts grouped."""
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return f"{v:.4f}"
    if isinstance(v, int):
        if key.endswith("_bytes") or key == "bytes_accessed":
            return f"{v:,} ({_human_bytes(v)})"
        if key.endswith("_ns"):
            return f"{v:,} ({_human_duration(v)})"
        return f"{v:,}" if key not in ("min_block", "max_block") else str(v)
    return str(v)


def cmd_trace_info(args: argparse.Namespace) -> int:
    trace = _open(args)
    info = trace.info(window=args.window)
    _warn_skipped(trace.path, info, args.skip_bad)
    with _output(args) as out:
        if args.output_format == "table":
            rows = {"trace": os.path.basename(trace.path) or trace.path, **info}
            width = max(len(k) for k in rows)
            for k, v in rows.items():
                out.write(f"{k.ljust(width)}  {_info_cell(k, v)}\n")
        else:
            _emit([info], args.output_format, out)
    return 0


def cmd_trace_convert(args: argparse.Namespace) -> int:
    from ._trace import _output_format, refuse_oracle_options_for_csv

    # Under the command line's names, before the trace is opened.
    refuse_oracle_options_for_csv(args.out, args.to or _output_format(args.out),
                                  {"--per-block": args.per_block, "--rebase-time": args.rebase_time})
    trace = _open(args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary = trace.convert(args.out, to=args.to, per_block=args.per_block, rebase_time=args.rebase_time)
    _warn_skipped(trace.path, summary, args.skip_bad)
    for w in caught:
        sys.stderr.write(f"prefetchsim: warning: {w.message}\n".replace("per_block=True (CLI: --per-block)",
                                                                         "--per-block"))
    sys.stderr.write(json.dumps(summary) + "\n")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    """Run the chosen experiment module (``reproduce/<name>.py``) under a progress bar, then print its tables
    (``write_tables``) or, for CSV and JSON, its rows (``records``)."""
    experiment = args.experiment_module
    prog = Progress(None, progress=args.progress)
    try:
        with _notes_on_stderr():
            result = experiment.run_from_args(args, prog)
    finally:
        prog.close()
    with _output(args) as out:
        if args.output_format == "table":
            experiment.write_tables(result, out)
        else:
            _emit(experiment.records(result), args.output_format, out)
    if args.out:
        sys.stderr.write(f"prefetchsim: results in {args.out}/\n")
    return 0


def _add_reproduce_parsers(sub: Any) -> None:
    """``prefetchsim reproduce NAME``: one subcommand per module of `prefetchsim.reproduce`, each with
    the common options plus its own (so ``--help`` shows only what applies, and argparse rejects the rest)."""
    from . import reproduce

    rp = sub.add_parser("reproduce", help=f"rerun a paper's experiments ({', '.join(reproduce.EXPERIMENTS)})",
                        description="Rerun the experiments of a paper of the project and print its tables. "
                                    "'prefetchsim reproduce NAME --help' lists the options of one experiment.")
    rsub = rp.add_subparsers(dest="experiment", required=True, metavar="EXPERIMENT")
    for name, module in reproduce.EXPERIMENTS.items():
        e = rsub.add_parser(name, help=module.SUMMARY, description=reproduce.description(module),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(e)
        if getattr(module, "PLOTS", True):
            e.add_argument("--out", default=None, metavar="DIR", help="directory for the CSV files and the plots")
            e.add_argument("--no-plot", action="store_true", help="do not draw plots (with --out)")
        else:  # no --no-plot for an experiment that draws none (it was accepted and did nothing)
            e.add_argument("--out", default=None, metavar="DIR", help="directory for the CSV file(s)")
        _add_output_options(e)
        e.set_defaults(func=cmd_reproduce, experiment_module=module)


_BENCH_COLUMNS = [
    "pattern", "requests", "mean_response_ms", "mean_service_ms", "p50_service_ms", "p95_service_ms",
    "hit_fraction", "mean_seek_cyl", "mean_seek_ms", "mean_rot_ms", "mean_media_ms", "throughput_mb_s",
]


def _nested(flat: dict[str, Any]) -> dict[str, Any]:
    """Dotted keys as nested tables: ``{"cache.enabled": False}`` -> ``{"cache": {"enabled": False}}``
    (``-p cache.enabled=false`` was refused as an unknown field ``cache.enabled``)."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        *path, last = key.split(".")
        table = out
        for part in path:
            table = table.setdefault(part, {})
            if not isinstance(table, dict):
                raise _core.ConfigError(f"-p: {key}: {part} is set both as a value and as a table")
        if isinstance(table.get(last), dict):
            raise _core.ConfigError(f"-p: {key}: {last} is set both as a value and as a table")
        table[last] = value
    return out


def cmd_device_bench(args: argparse.Namespace) -> int:
    overrides = _nested(_parse_kv(args.params))
    spec: Any = {"name": args.model, **overrides} if overrides else args.model
    rows = device_bench(spec, seed=args.seed)
    with _output(args) as out:
        _emit(rows, args.output_format, out, _BENCH_COLUMNS)
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from ._grid import plan
    from ._store import Store
    from ._sweep import _parse_shard, default_db, sweep

    shard = _parse_shard(args.shard)
    p = plan(args.spec, preset=args.preset)
    for ref in p.traces.values():
        _refuse_trace_as_output(args, ref.open())
    total = len(p)
    if shard is not None:
        p = p.shard(*shard)
    db = args.db or default_db(args.spec, shard)
    # The sweep writes its database before the outputs: `-o` naming it (given or default, existing or
    # not) replaced every result with the CSV, `--dry-run` included.
    for key in (k for k in _OUTPUTS if k != "db"):
        out = getattr(args, key, None)
        if isinstance(out, str) and out != "-" and _same_file(out, db):
            raise _core.ConfigError(f"{out}: is this sweep's results database ({db}); give another output file")
    notes = []
    if p.excluded:
        notes.append(f"{p.excluded} excluded")
    if p.duplicates:
        notes.append(f"{p.duplicates} duplicate point(s) run once")
    note = f" ({', '.join(notes)})" if notes else ""
    where = f"shard {shard[0]}/{shard[1]}: {len(p)} of {total}" if shard else f"{len(p)}"
    if args.dry_run:
        done = set()
        if os.path.exists(db):
            with Store(db, readonly=True) as st:
                done = st.done_ids()
        grid = p.grid()
        grid.insert(1, "done", grid.run_id.isin(done))
        sys.stderr.write(f"prefetchsim: {where} runs{note} over {len(p.traces)} trace(s), "
                         f"{int(grid.done.sum())} already in {db}\n")
        with _output(args) as out:
            _emit(grid.to_dict("records"), args.output_format or "table", out)
        return 0
    executor = None
    client = None
    if args.scheduler:
        from ._deps import require

        distributed = require("distributed", "--scheduler")
        if args.scheduler.endswith(".json"):
            if not os.path.isfile(args.scheduler):
                # Dask waits for the file to appear, forever and silently.
                raise _core.ConfigError(f"--scheduler {args.scheduler}: no such scheduler file; start the scheduler "
                                        "first (dask scheduler --scheduler-file FILE.json)")
            client = distributed.Client(scheduler_file=args.scheduler)
        else:
            client = distributed.Client(args.scheduler)
        executor = client
    sys.stderr.write(f"prefetchsim: sweep {p.name!r}: {where} runs{note}; results in {db}\n")
    done_before = set()
    if os.path.exists(db):
        with Store(db, readonly=True) as st:
            done_before = st.done_ids()
    left = sum(r.run_id not in done_before for r in p.runs)
    t0 = time.monotonic()
    try:
        with _term_as_interrupt():
            df = sweep(p, executor, db=db, workers=args.workers, threads=args.threads, batch_size=args.batch_size,
                       progress=args.progress)
    except KeyboardInterrupt:
        sys.stderr.write(f"prefetchsim: finished runs are kept in {db}; run the same command again to resume\n")
        raise
    finally:
        if client is not None:
            client.close()
    n = df.run_id.nunique() if len(df) else 0
    if left == 0:
        sys.stderr.write(f"prefetchsim: nothing left to run: all {n} runs are in {db}\n")
    else:
        sys.stderr.write(f"prefetchsim: {n} runs in {db} ({left} run now, {time.monotonic() - t0:.1f} s)\n")
    if args.output_format or args.output:
        with _output(args) as out:
            fmt = args.output_format or ("csv" if str(args.output).endswith(".csv") else "table")
            _emit(_records(df), fmt, out, _table_columns(df, p.columns))
    return 0


def _records(df) -> list[dict[str, Any]]:
    """DataFrame rows as plain Python values (NaN and missing as empty)."""
    import math

    rows = df.to_dict("records")
    return [{k: ("" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in rows]


def _table_columns(df, axes: Sequence[str]) -> list[str]:
    cols = ["trace", *axes, "level", *[c for c in _TABLE_COLUMNS if c not in ("requests",)], "runs_executed"]
    return [c for c in dict.fromkeys(cols) if c in df.columns]


def cmd_results(args: argparse.Namespace) -> int:
    from ._store import Store, export, is_database, merge_databases, read_results, unmatched

    if args.failures and args.sessions:  # --sessions was dropped without a word
        raise _core.ConfigError("--failures and --sessions list different tables; give one of them")
    if args.failures or args.sessions:
        if len(args.db) != 1 or not is_database(args.db[0]):
            raise _core.ConfigError("--failures/--sessions: give one results database")
        with Store(args.db[0], readonly=True) as st:
            df = st.failures() if args.failures else st.sessions()
        if df.empty and args.output_format == "table":
            what = "failed run attempts" if args.failures else "sweep sessions"
            sys.stderr.write(f"prefetchsim: {args.db[0]} holds no {what}\n")
            return 0
        if args.sessions and args.output_format == "table":
            df = df.drop(columns="spec")  # the whole spec is for CSV/JSON, not for a terminal
        with _output(args) as out:
            _emit(_records(df), args.output_format, out)
        return 0
    if args.export and args.export.endswith((".sqlite", ".db")):
        for given, option in ((args.filter, "--filter"), (args.columns, "--columns")):
            if given:
                raise _core.ConfigError(f"--export to a database merges whole databases; {option} applies to CSV, "
                                        "JSON and Parquet exports")
        for src in args.db:  # refused before anything is written
            if not is_database(src):
                raise _core.ConfigError(f"{src}: only results databases merge into a database")
        added = merge_databases(args.db, args.export)
        sys.stderr.write(f"prefetchsim: {added} rows added to {args.export}\n")
        return 0
    df = read_results(args.db, args.filter or ())
    if df.empty and args.filter:
        # An empty table is an answer, but a text value no row has is most likely misspelt: say what there is.
        for line in unmatched(read_results(args.db), args.filter):
            sys.stderr.write(f"prefetchsim: {line}\n")
    cols = None
    if args.columns:
        cols = [c.strip() for c in args.columns.split(",")]
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise _core.ConfigError(f"--columns {missing[0]}: no such column; columns: {', '.join(df.columns)}")
        if args.output_format != "table" or args.export:
            df = df[cols]
    if args.export:
        # --columns cuts the export as it cuts the listing (every column was written whatever it said).
        export(df, args.export)
        sys.stderr.write(f"prefetchsim: {len(df)} rows written to {args.export}\n")
        return 0
    elif args.output_format == "table":
        axes = [c for c in df.columns if c not in _NOT_AXES and c not in _core_metric_names()]
        cols = _table_columns(df, [c for c in axes if c not in ("run_id", "trace")])
    with _output(args) as out:
        _emit(_records(df), args.output_format, out, cols)
    return 0


_NOT_AXES = {"run_id", "trace", "level", "trace_id", "config", "trace_spec", "sweep", "grid_index", "version", "host",
             "pid", "task_wall_s", "finished_at", "runs_executed", "trace_requests", "trace_blocks",
             "warmup_requests", "stopped_early"}


def _core_metric_names() -> set[str]:
    from ._store import level_record_keys

    return set(level_record_keys())


def cmd_plot(args: argparse.Namespace) -> int:
    from . import plot
    from ._store import read_results

    plot.check_image_option("-o", args.output)
    df = read_results(args.results, args.filter or ())
    if df.empty:
        after = " (after --filter)" if args.filter else ""
        raise _core.ConfigError(f"{', '.join(args.results)}: no rows to plot{after}")
    hue = args.hue.split(",") if args.hue else None
    if args.level is not None:
        # Results of one level are drawn whatever the level says; one asked for by name must be there.
        have = sorted({int(v) for v in df["level"].dropna()}) if "level" in df.columns else [0]
        if args.kind == "levels":
            raise _core.ConfigError("plot levels: draws every level; --level is for single-level plots")
        if args.level not in have:
            raise _core.ConfigError(f"--level {args.level}: the results hold level(s) {', '.join(map(str, have))}")
    else:
        args.level = 0
    fig, ax = plot.new_figure(figsize=(args.width, args.height))
    kw: dict[str, Any] = {"ax": ax, "title": args.title}
    k = args.kind
    try:
        if k == "mrc":
            plot.mrc(df, x=args.x, y=args.y or "miss_ratio", hue=hue, level=args.level,
                     logx="auto" if args.logx is None else args.logx, **kw)
        elif k == "response-time":
            plot.response_time(df, x=args.x, metric=args.metric or args.y or "rt_mean_ms", hue=hue,
                               kind=args.style or "bar", level=args.level, logy=bool(args.logy), **kw)
        elif k == "unused-prefetch":
            plot.unused_prefetch(df, x=args.x, y=args.y or "unused_prefetch", hue=hue, level=args.level,
                                 kind=args.style or "line", **kw)
        elif k == "levels":
            plot.level_hit_ratios(df, x=args.x, y=args.y or "hit_ratio", kind=args.style or "bar", **kw)
        elif k == "improvement":
            if not args.baseline:
                raise _core.ConfigError("plot improvement: --baseline SCHEME is required")
            plot.improvement(df, args.metric or args.y or "rt_mean_ms", scheme=args.scheme, baseline=args.baseline,
                             case=args.case.split(",") if args.case else None, level=args.level, **kw)
        elif k == "timeseries":
            if not args.y:
                raise _core.ConfigError("plot timeseries: --y COLUMN[,COLUMN] is required")
            plot.timeseries(df, args.y.split(","), time=args.x, hue=hue, logy=bool(args.logy), **kw)
        else:
            if not (args.x and args.y):
                raise _core.ConfigError("plot line: --x and --y are required")
            plot.line(df, args.x, args.y, hue, level=args.level, logx="auto" if args.logx is None else args.logx,
                      logy=bool(args.logy), **kw)
    except ValueError as e:
        raise _core.ConfigError(f"plot {k}: {e}") from None
    plot.savefig(fig, args.output)
    sys.stderr.write(f"prefetchsim: {args.output}\n")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    tables = {
        "policies": policies, "prefetchers": prefetchers, "formats": formats, "generators": generators,
        "devices": devices,
    }
    for what in [args.what] if args.what else list(tables):
        print(f"{what}:")
        for name, summary in tables[what]().items():
            print(f"  {name:<16} {summary}")
    return 0


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``only`` = ``"sim"`` or ``"run"``, just that command's (see `main`)."""
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
    s.add_argument("algos", help="comma list of policies, each optionally '+prefetcher'; parameters and presets "
                                 "in parentheses: lru,arc+obl,lru+mithril(preset=libcachesim),"
                                 "splitlru(up_ratio=0.5)+ra(p=4)")
    s.add_argument("sizes", help="comma list: blocks (1000), bytes (64MiB), footprint shares (0.01, 5%%)")
    s.add_argument("--prefetcher", default="none", help="prefetcher for algos without '+' (default none)")
    s.add_argument("--warmup", type=_count, metavar="N", default=0, help="requests that warm the cache but are not counted")
    s.add_argument("--limit", type=_count, metavar="N", default=None, help="stop after this many requests")
    s.add_argument("--threads", type=_count, metavar="N", default=0, help="parallel runs (default: all cores)")
    _add_trace_options(s)
    _add_output_options(s)
    _add_events_option(s)
    s.set_defaults(func=cmd_sim)

    r = sub.add_parser("run", help="run a hierarchy config (TOML); without one, the built-in default",
                       description="Run CONFIG.toml ([trace], [[level]], [engine]). Without CONFIG, run the "
                                   "built-in default: a synthetic OLTP-like workload over a two-level hierarchy.")
    r.add_argument("config", nargs="?", help="run config (TOML)")
    r.add_argument("--trace", help="replace the config's [trace] with this file (format detected)")
    # None when not given: an explicit 0 must override the config's skip_bad (`if args.skip_bad` ignored it).
    _add_skip_bad(r, None, "default: the config's trace.skip_bad, else 0")
    _add_cache_option(r)
    _add_output_options(r)
    _add_events_option(r)
    r.set_defaults(func=cmd_run, threads=1)
    if only is not None:
        return p

    t = sub.add_parser("trace", help="trace statistics and conversion")
    tsub = t.add_subparsers(dest="trace_command", required=True)
    ti = tsub.add_parser(
        "info", help="requests, read share, footprint, sizes, span, duration, random share",
        description="Read TRACE once and print its statistics: the format (detected unless --format), requests "
                    "and read share, blocks accessed and footprint (unique blocks), request sizes, address span, "
                    "duration, streams, clients, and the share of random requests (a request is sequential when "
                    "it starts right after one of the previous --window requests).")
    ti.add_argument("trace", help="trace file, or a generator name with --format synthetic")
    ti.add_argument("--format", default=None, help="format name (default: detect; 'synthetic' for generators)")
    ti.add_argument("--window", type=_count, metavar="N", default=None,
                    help="requests remembered when deciding whether a request continues a sequential run")
    _add_trace_options(ti)
    _add_output_options(ti)
    ti.set_defaults(func=cmd_trace_info)
    tc = tsub.add_parser(
        "convert", help="write a trace as oracleGeneral (.zst) or CSV",
        description="Write TRACE as libCacheSim's oracleGeneral binary (compressed by the name: .zst, .gz) or as "
                    "CSV (read back exactly, format detected). The output appears only when the whole trace is "
                    "written. oracleGeneral holds one object per request unless --per-block; a block trace with "
                    "requests of several blocks then replays differently (a warning says how many).")
    tc.add_argument("trace", help="trace file, or a generator name with --format synthetic")
    tc.add_argument("out", help="output file (.oracleGeneral.bin[.zst] or .csv)")
    tc.add_argument("--format", default=None, help="input format (default: detect)")
    tc.add_argument("--to", choices=["oracle_general", "csv"], default=None, help="output format (default: by name)")
    tc.add_argument("--per-block", action="store_true",
                    help="oracleGeneral: one output record per block (libCacheSim 'blk4k'); an error with CSV output")
    tc.add_argument("--rebase-time", action="store_true",
                    help="oracleGeneral: times from the first request (MSR's absolute clock does not fit its u32 "
                         "seconds); an error with CSV output")
    _add_trace_options(tc)
    tc.set_defaults(func=cmd_trace_convert)

    _add_reproduce_parsers(sub)

    d = sub.add_parser("device", help="device models")
    dsub = d.add_subparsers(dest="device_command", required=True)
    db = dsub.add_parser("bench", help="service times of a device model on standard request patterns",
                         description="Run the standard patterns (isolated and closed-loop random reads, seek "
                                     "distances, sequential streams, Poisson arrivals) on MODEL and print "
                                     "its service-time statistics (ms).")
    db.add_argument("model", help="device preset (prefetchsim list devices)")
    db.add_argument("-p", "--params", metavar="K=V,...",
                    help="parameter overrides, e.g. 'rpm=7200'; a dotted key sets a table's key: 'cache.enabled=false'")
    db.add_argument("--seed", type=_count, default=1, help="RNG seed of the patterns (default 1)")
    db.add_argument("-f", "--output-format", choices=["table", "csv", "json"], default="table",
                    help="table (default), csv, or json (one object per line)")
    db.add_argument("-o", "--output", metavar="FILE", help="write results to this file instead of stdout")
    db.set_defaults(func=cmd_device_bench)

    sw = sub.add_parser(
        "sweep", help="run a grid of configs (a sweep spec) on all cores or a cluster, resumably",
        description="Run every run of SPEC.toml (a run config with a [sweep] table of axes) that the results "
                    "database does not hold yet. Progress on stderr; Ctrl-C keeps what finished, and running the "
                    "same command again resumes.")
    sw.add_argument("spec", help="sweep spec (TOML)")
    sw.add_argument("--db", help="results database (default: SPEC-NAME.sqlite in the current directory)")
    sw.add_argument("--preset", help="a named preset of the spec ([sweep.presets.NAME])")
    sw.add_argument("--shard", metavar="K/N", help="run only shard K of N (0 <= K < N), e.g. a job-array index")
    sw.add_argument("--workers", type=positive, default=None, help="local worker processes (default: all cores)")
    sw.add_argument("--threads", type=positive, default=None, help="Rust threads per task (default: cores / workers)")
    sw.add_argument("--batch-size", type=positive, default=None, help="configs per task (default: automatic)")
    sw.add_argument("--scheduler", metavar="ADDRESS|FILE.json",
                    help="run on a Dask cluster: a scheduler address (tcp://host:8786) or scheduler file")
    sw.add_argument("--dry-run", action="store_true", help="list the grid (and what is done) without running")
    sw.add_argument("-f", "--output-format", choices=["table", "csv", "json"], default=None,
                    help="also print the grid's rows to stdout in this format")
    sw.add_argument("-o", "--output", help="write the grid's rows to this file")
    sw.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                    help="progress bar on stderr (default: when stderr is a terminal)")
    sw.set_defaults(func=cmd_sweep)

    rs = sub.add_parser("results", help="list, filter and export a results database",
                        description="Rows of one or more results databases (shards are combined), CSV or Parquet "
                                    "files. Filters: KEY=VALUE (a comma list matches any), KEY!=V, KEY<V, KEY<=V, "
                                    "KEY>V, KEY>=V.")
    rs.add_argument("db", nargs="+", help="results database(s) (or CSV/JSON-lines/Parquet exports)")
    rs.add_argument("--filter", action="append", metavar="KEY=VALUE", help="keep matching rows (repeatable)")
    rs.add_argument("--columns", help="comma list of columns to show, or to write with --export")
    rs.add_argument("--export", metavar="FILE",
                    help="write the rows to FILE.csv, .parquet (needs pyarrow) or .jsonl; FILE.sqlite merges the "
                         "databases (e.g. the shards of a job array) into one")
    rs.add_argument("--failures", action="store_true", help="list failed run attempts instead")
    rs.add_argument("--sessions", action="store_true", help="list the sweep sessions instead")
    rs.add_argument("-f", "--output-format", choices=["table", "csv", "json"], default="table",
                    help="table (default), csv, or json (one object per line)")
    rs.add_argument("-o", "--output", help="write to this file instead of stdout")
    rs.set_defaults(func=cmd_results)

    from .plot import KINDS

    pl = sub.add_parser("plot", help="draw results: mrc, response-time, unused-prefetch, levels, improvement ...",
                        description="Draw a figure from results (a database, CSV, JSON-lines or Parquet) to a "
                                    "file (PNG, SVG, PDF by extension).")
    pl.add_argument("kind", choices=list(KINDS))
    pl.add_argument("results", nargs="+", help="results database(s) or CSV/Parquet files")
    pl.add_argument("-o", "--output", required=True, help="image file (.png, .svg, .pdf)")
    pl.add_argument("--x", help="column on the x axis (default: by kind, e.g. capacity_blocks for mrc)")
    pl.add_argument("--y", help="column on the y axis (default: by kind, e.g. miss_ratio for mrc)")
    pl.add_argument("--hue", help="column(s), comma-separated, that split lines/bars (default: what varies "
                                   "among scheme, policy, prefetcher, trace)")
    pl.add_argument("--metric", help="response-time / improvement metric (default rt_mean_ms)")
    pl.add_argument("--scheme", default="scheme", help="improvement: the column naming the schemes")
    pl.add_argument("--baseline", help="improvement: the baseline scheme")
    pl.add_argument("--case", help="improvement: comma list of the columns that make a case")
    pl.add_argument("--level", type=_count, default=None,
                    help="which level for single-level plots (default 0; the only one when there is one)")
    pl.add_argument("--style", choices=["bar", "line"], default=None, help="bars or lines where both make sense")
    pl.add_argument("--logx", action=argparse.BooleanOptionalAction, default=None,
                    help="log x axis (default: when sizes span decades)")
    pl.add_argument("--logy", action=argparse.BooleanOptionalAction, default=None, help="log y axis")
    pl.add_argument("--filter", action="append", metavar="KEY=VALUE", help="keep matching rows (repeatable)")
    pl.add_argument("--title", default=None)
    pl.add_argument("--width", type=inches, default=6.4, help="inches")
    pl.add_argument("--height", type=inches, default=4.2, help="inches")
    pl.set_defaults(func=cmd_plot)

    from ._mrc_cli import add_parser as add_mrc_parser

    add_mrc_parser(sub, _add_trace_options, _add_output_options)

    from ._serve import add_parser as add_serve_parser

    add_serve_parser(sub)

    ca = sub.add_parser("cache", help="the decoded-trace cache: where it is, its size; clear it",
                        description="Runs over a trace file of 1 MiB or more keep its decoded requests in a "
                                    "cache folder ($PREFETCHSIM_CACHE_DIR, default ~/.cache/prefetchsim) and "
                                    "later runs read them instead of decoding the trace again.")
    ca.add_argument("action", choices=["info", "clear"], help="info: folder, files and size; clear: remove all")
    ca.set_defaults(func=cmd_cache)

    ls = sub.add_parser("list", help="list policies, prefetchers, trace formats, generators or devices")
    ls.add_argument("what", nargs="?", choices=["policies", "prefetchers", "formats", "generators", "devices"])
    ls.set_defaults(func=cmd_list)
    return p


def _command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command ``args`` were parsed for: ``trace convert``'s for ``trace convert``."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, subs[0].dest, None) if subs else None
        if name not in (subs[0].choices if subs else {}):
            return parser
        parser = subs[0].choices[name]


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Python runs signal handlers (the core checks for them while it works)."""


@contextlib.contextmanager
def _term_as_interrupt() -> Iterator[None]:
    """SIGTERM (`timeout`, a batch system's stop, `kill`) ends the block as Ctrl-C does (raising
    :class:`_Terminated`, a KeyboardInterrupt): a sweep keeps its finished runs and marks its session
    interrupted (it died at once and the session stayed "running"), and an output being written is removed
    (``trace convert`` left its hidden partial file, 54 MB of it)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    fired = False

    def interrupt(signum: int, frame: Any) -> None:
        # Once: `timeout -s TERM` signals the process and then its process group, and the second SIGTERM
        # cut the cleanup of the first short (a sweep's session stayed "running").
        nonlocal fired
        if fired:
            return
        fired = True
        raise _Terminated

    old = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # `sim` and `run` build their own parser only: the whole one (20 commands, their imports and
    # argparse's message look-ups) took longer than a simulation of a million requests.
    parser = build_parser(argv[0] if argv and argv[0] in ("sim", "run") else None)
    args, extra = parser.parse_known_args(argv)
    if extra:
        # The command's own usage, not the top level's (which, for sim and run, lists just that command).
        _command_parser(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        _refuse_inputs_as_outputs(args)
        _check_output_folders(args)
        with _term_as_interrupt():
            return int(args.func(args) or 0)
    except _Terminated:
        sys.stderr.write("prefetchsim: terminated\n")
        return 128 + 15
    except KeyboardInterrupt:
        sys.stderr.write("prefetchsim: interrupted\n")
        return 130
    except BrokenPipeError:
        # Output closed early (e.g. piped into `head`): not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (_core.PrefetchsimError, MissingDependency, ValueError, OSError) as e:
        # ValueError: an argument out of range (a negative --window); OSError: an output that cannot be written.
        sys.stderr.write(f"prefetchsim: error: {e}\n")
        return 2
