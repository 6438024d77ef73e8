"""``prefetchsim serve``: the live NBD block server (crate ``prefetchsim-serve``; docs/serve.md).

The config is read exactly as ``prefetchsim run`` reads it (TOML -> the canonical JSON the core
parses); the server runs inside the extension module with the GIL released. Ctrl-C or SIGTERM stop it
cleanly: no new connections, requests in service finish, the backing file is synced, the recorded
trace closed, and the counters are printed (or written as JSON with ``--report``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from . import _core
from ._argtypes import positive
from ._atomic import atomic_open
from ._sim import _dumps, load_config


class _Stop(KeyboardInterrupt):
    """Raised by the SIGTERM handler: the server stops as on Ctrl-C (a KeyboardInterrupt, so that the core
    takes it for a stop also when it is raised inside the ``ready`` callback)."""


def _raise_stop(signum: int, frame: Any) -> None:
    raise _Stop(signal.Signals(signum).name)


def serve(config: Any, backing: str | os.PathLike[str], *, socket: str | None = None, listen: str | None = None,
          block_size: int = 4096, emulate: str | None = None, record: str | os.PathLike[str] | None = None,
          direct: bool = False, max_connections: int = 64,
          ready: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Serve ``backing`` over NBD through the hierarchy ``config`` (TOML path or dict) until SIGINT/SIGTERM.

    Returns the report: ``requests``, ``blocks``, ``levels`` (the simulator's per-level records),
    ``instances`` (when some level is several caches: one record per cache, as ``Result.raw["instances"]``;
    a ``per_client`` level's by client id, the connection's number), ``server`` (loads, uncached reads,
    writes, write_errors, flushes: client FLUSH requests), ``clients`` and ``refused_connections``
    (connections closed unserved because ``max_connections`` were being served; each connection may hold
    64 MiB of requests in service).
    """
    if (socket is None) == (listen is None):
        raise _core.ConfigError("serve: give exactly one of --socket PATH and --listen HOST:PORT")
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        # The core checks the range; a negative int used to fail its conversion with an OverflowError.
        raise _core.ConfigError(f"--block-size {block_size!r}: from 1 byte to 32 MiB")
    if isinstance(max_connections, bool) or not isinstance(max_connections, int) or max_connections < 1:
        raise _core.ConfigError(f"--max-connections {max_connections!r}: give at least 1")
    doc, _ = load_config(config, with_trace=False)
    previous = signal.signal(signal.SIGTERM, _raise_stop) if _in_main_thread() else None
    try:
        out = _core.serve(_dumps("config", doc), os.fspath(backing), socket=socket, listen=listen,
                          block_size=block_size, emulate=emulate,
                          record=None if record is None else os.fspath(record), direct=direct,
                          max_connections=max_connections, ready=ready)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return json.loads(out)


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def add_parser(sub: Any) -> None:
    s = sub.add_parser(
        "serve", help="serve a file over NBD through a cache of prefetchsim levels (live prefetching)",
        description="Serve BACKING (its length is the export's size) as an NBD export whose cache is the hierarchy "
                    "of CONFIG (TOML, as `prefetchsim run` reads it): any policy, prefetcher or PFC. Misses and "
                    "prefetches read the file, writes go through to it, FLUSH syncs it. Stop with Ctrl-C or "
                    "SIGTERM. See docs/serve.md.")
    s.add_argument("config", help="hierarchy config (TOML); its [trace] table, if any, is ignored")
    s.add_argument("--backing", required=True, help="the file to export (read and written)")
    where = s.add_mutually_exclusive_group(required=True)
    where.add_argument("--socket", metavar="PATH", help="listen on a Unix socket (created; removed at the end)")
    where.add_argument("--listen", metavar="HOST:PORT", help="listen on TCP, e.g. 127.0.0.1:10809 (port 0: any)")
    s.add_argument("--block-size", type=positive, default=4096, help="cache block size in bytes (default 4096)")
    s.add_argument("--emulate", metavar="DEVICE", default=None,
                   help="delay backing reads to a device model's completion time (hdd7200, cheetah9lp, ...)")
    s.add_argument("--record", metavar="FILE", default=None,
                   help="write the served trace (prefetchsim CSV, bytes) for replay with `prefetchsim run`")
    s.add_argument("--direct", action="store_true",
                   help="read the backing file with O_DIRECT (bypass the page cache; writes stay buffered + FLUSH)")
    s.add_argument("--max-connections", type=positive, default=64, metavar="N",
                   help="serve at most N connections at once; more are closed unserved and counted (default 64: "
                        "each may hold 64 MiB of requests in service)")
    s.add_argument("--report", metavar="FILE", default=None, help="write the final counters as JSON here")
    s.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    def ready(addr: str) -> None:
        sys.stderr.write(f"prefetchsim serve: listening on {addr}\n")
        sys.stderr.flush()

    if args.report:
        # Found only at the stop, a missing folder lost the whole session's counters.
        folder = os.path.dirname(os.path.abspath(args.report))
        if not os.path.isdir(folder):
            raise _core.ConfigError(f"--report {args.report}: no folder {folder}")
    report = serve(args.config, args.backing, socket=args.socket, listen=args.listen, block_size=args.block_size,
                   emulate=args.emulate, record=args.record, direct=args.direct,
                   max_connections=args.max_connections, ready=ready)
    if args.report:
        with atomic_open(args.report, "w") as f:
            json.dump(report, f, indent=1)
    srv = report["server"]
    lines = [f"prefetchsim serve: stopped; {report['clients']} clients"
             + (f" ({report['refused_connections']} connections refused: --max-connections)"
                if report.get("refused_connections") else "")
             + f", {report['requests']} requests, "
             f"{srv['writes']} writes, {srv['flushes']} flushes"]
    for lv in report["levels"]:
        lines.append(f"  {lv.get('name')}: {lv.get('policy')}+{lv.get('prefetcher')} hits {lv.get('hits')} "
                     f"misses {lv.get('misses')} prefetch_issued {lv.get('prefetch_issued')} "
                     f"prefetch_used {lv.get('prefetch_used')}")
    sys.stderr.write("\n".join(lines) + "\n")
    return 0
