"""Traces: a file in one of the supported formats, or a seeded synthetic generator."""

from __future__ import annotations

import json
import os
from typing import Any

from . import _core
from ._numbers import as_int, int_arg, json_default
from ._typeerror import ConfigTypeError

_MODES = ("blocks", "objects")
_U64_MAX = 2**64 - 1


def _check_int(key: str, value: Any, least: int) -> int:
    """``value`` as an int: an integer (not a bool; NumPy's integers too) from ``least`` to 2^64-1, else a
    TypeError or a ConfigError naming ``key``."""
    i = as_int(value)
    if i is None:
        raise ConfigTypeError(f"{key} must be an integer, not {type(value).__name__}")
    if not least <= i <= _U64_MAX:
        raise _core.ConfigError(f"{key}: {i} is out of range ({least} to 2^64-1)")
    return i
_OPS = ("all", "reads", "writes")
_VOLUMES = ("separate", "shared")
_CLIENT_FROM = ("trace", "stream", "asu", "volume", "lun")


def _client_from(spec: dict[str, Any], client_from: str) -> None:
    """Add ``client_from`` to ``spec`` unless it is the default (so existing specs keep their keys)."""
    if client_from not in _CLIENT_FROM:
        raise _core.ConfigError(
            f"trace.client_from: unknown value {client_from!r}; choose one of {', '.join(_CLIENT_FROM)}"
        )
    if client_from != "trace":
        spec["client_from"] = client_from


class Trace:
    """A trace to replay: a spec (path or generator, format, conversion options), read lazily.

    Nothing is read until a simulation, ``info()`` or ``head()`` asks for it; every pass streams the
    file again, so a trace of any length fits in memory.
    """

    def __init__(self, spec: dict[str, Any]):
        self._spec = dict(spec)
        self._footprint: int | None = None
        self._info: dict[str, Any] | None = None

    @property
    def spec(self) -> dict[str, Any]:
        """The trace spec as the Rust core reads it (the ``[trace]`` table of a run config)."""
        return dict(self._spec)

    @property
    def path(self) -> str:
        return self._spec["path"]

    @property
    def block_size(self) -> int:
        return int(self._spec.get("block_size", 4096))

    def _json(self) -> str:
        try:
            return json.dumps(self._spec, allow_nan=False, default=json_default)
        except ValueError as e:
            from ._sim import _non_finite  # _sim imports this module

            where = _non_finite(self._spec, "trace")  # the field, not just "trace"
            if where is None:
                raise _core.ConfigError(f"trace: {e} (NaN and infinity are not valid values)") from None
            raise _core.ConfigError(f"{where[0]}: {where[1]!r} is not a valid value (NaN and infinity are not)") from None

    def footprint(self) -> int:
        """Unique blocks (or objects) the trace touches; one pass, remembered."""
        if self._footprint is None:
            self._footprint = _core.footprint(self._json())
        return self._footprint

    def info(self, window: int | None = None) -> dict[str, Any]:
        """Trace statistics (requests, read share, footprint, sizes, span, duration, random share)."""
        if window is None and self._info is not None:
            return dict(self._info)
        args = {} if window is None else {"window": int_arg("window", window)}
        info = json.loads(_core.trace_info(self._json(), **args))
        if window is None:
            self._info = info
            self._footprint = info.get("footprint_blocks", self._footprint)
        return info

    def head(self, n: int = 10):
        """The first ``n`` requests as a pandas DataFrame."""
        import pandas as pd

        n = int_arg("n", n)
        if n < 0:
            # A plain ValueError naming a range of the core's type before.
            raise _core.ConfigError(f"n: {n} is negative; the first n requests, 0 or more")
        rows = _core.head(self._json(), n)
        return pd.DataFrame(rows, columns=["time_ns", "op", "first", "len", "stream", "client"])

    def convert(self, output: str | os.PathLike[str], to: str | None = None, per_block: bool = False,
                rebase_time: bool = False) -> dict[str, Any]:
        """Write the trace as libCacheSim oracleGeneral (``.zst``/``.gz`` compressed by name) or CSV.

        Args:
            output: the file to write; it appears only once the whole trace is written.
            to: ``"oracle_general"`` or ``"csv"`` (default: ``csv`` for ``.csv``/``.csv.gz``/``.csv.zst``
                names, else oracleGeneral). The CSV is read back exactly (format ``prefetchsim_csv``,
                detected).
            per_block: oracleGeneral: one record per block (libCacheSim's "blk4k" files) instead of one
                object per request.
            rebase_time: oracleGeneral: times from the first request (absolute clocks such as MSR's do
                not fit its 32-bit seconds).

        Returns:
            A summary: ``requests``, ``records``, ``multi_block_requests``, ``time_origin_ns`` and what was
            skipped.

        Warns:
            UserWarning: when an object-per-request oracleGeneral output has requests of more than one
                block: replayed by blocks, it is not the same trace (use ``per_block=True``).
        """
        import warnings

        if not isinstance(output, (str, os.PathLike)):  # os.fspath's TypeError named no argument
            raise ConfigTypeError(f"output must be a str or os.PathLike, not {type(output).__name__}")
        out = os.fspath(output)
        for name, flag in (("per_block", per_block), ("rebase_time", rebase_time)):
            if not isinstance(flag, bool):  # said "'int' object is not an instance of 'bool'"
                raise ConfigTypeError(f"{name} must be True or False, not {type(flag).__name__}")
        if to is None:
            to = _output_format(out)
        refuse_oracle_options_for_csv(out, to, {"per_block": per_block, "rebase_time": rebase_time})
        summary = json.loads(_core.convert(self._json(), out, to, per_block, rebase_time))
        multi = summary.get("multi_block_requests", 0)
        if multi and not per_block and to.lower().replace("-", "_") in ("oracle_general", "oraclegeneral"):
            warnings.warn(
                f"{out}: {multi:,} of {summary['requests']:,} requests cover more than one block and were written "
                f"as one object each (named by the first block); replayed by blocks this is not the same trace. "
                f"Write one record per block with per_block=True (CLI: --per-block).",
                UserWarning, stacklevel=2)
        return summary

    def __repr__(self) -> str:
        opts = {k: v for k, v in self._spec.items() if k != "path"}
        return f"Trace({self._spec['path']!r}, {opts})"


def open_trace(
    path: str | os.PathLike[str],
    format: str | None = None,
    *,
    block_size: int = 4096,
    mode: str = "blocks",
    ops: str = "all",
    sector_size: int = 512,
    skip_bad: int = 0,
    client_from: str = "trace",
    id_bytes: int | None = None,
    volumes: str = "separate",
    cache: bool = True,
    **params: Any,
) -> Trace:
    """Open a trace file. The format is detected from the name and content unless given.

    ``mode="blocks"`` (default) splits each request into the ``block_size`` blocks it touches;
    ``mode="objects"`` makes each request one object named by its start address (libCacheSim's
    convention). ``ops`` keeps ``"all"`` requests, ``"reads"`` or ``"writes"``. Extra keyword arguments
    are format parameters (the generic CSV reader's column spec, the multi-real layout, ...).

    Reading is strict: the first malformed record raises `TraceError` naming the file, the line and
    its byte offset (or the record and its byte offset) and the field. ``skip_bad=N`` skips and counts up to
    ``N`` bad records instead (a results' ``skipped_records`` and ``skipped_messages`` say which) and raises
    on the next one; I/O errors, corrupt compression and a truncated binary tail are never skipped.

    ``client_from="stream"`` (or ``"asu"``, ``"volume"``, ``"lun"``) makes each request's client id its
    stream field (SPC ASU, Tencent volume, SYSTOR LUN, ...), for hierarchies with one cache per client.

    ``id_bytes`` (id-addressed formats in blocks mode: LIRS, ``u32le``/``u32be``, oracleGeneral, ``csv``
    ids): id ``i`` starts at byte ``i * id_bytes``, and the request covers the record's own size from there
    (oracleGeneral's ``obj_size``, the ``csv`` size column), or ``id_bytes`` when the format has no size
    (LIRS, u32 arrays) or the size is 0; those bytes are cut into ``block_size`` blocks like any address
    (4 KiB ids of LIRS with 64 KiB blocks: 16 ids a block). Unset: one id = one block of one request,
    whatever the size. So ``id_bytes=block_size`` is not the same as unset on a format with sizes: an
    oracleGeneral object of 6,656 bytes spans 2 blocks of 4 KiB (``trace convert`` writes ``len`` x
    ``block_size`` as the size, which ``id_bytes=block_size`` reads back as the original blocks).

    ``volumes="separate"`` (default): each volume of a multi-volume trace (Tencent volume, SYSTOR LUN,
    SPC ASU, DiskSim/MQSim device, MSR disk of a host) is its own address space, block ``b`` of the
    volume seen ``k``-th (from 0) becoming ``k * 2**44 + b``; ``"shared"``: one space, the same address in
    two volumes is one block.

    ``cache=False``: decode the file itself on every run, never through the decoded-trace cache (a
    compact copy of the decoded requests kept in ``$PREFETCHSIM_CACHE_DIR``, default
    ``~/.cache/prefetchsim``, for files of 1 MiB and more; ``prefetchsim cache`` shows and clears it).
    """
    if mode not in _MODES:
        raise _core.ConfigError(f"trace.mode: unknown mode {mode!r}; choose one of {', '.join(_MODES)}")
    if ops not in _OPS:
        raise _core.ConfigError(f"trace.ops: unknown ops filter {ops!r}; choose one of {', '.join(_OPS)}")
    block_size = _check_int("trace.block_size", block_size, 1)
    sector_size = _check_int("trace.sector_size", sector_size, 1)
    skip_bad = _check_int("trace.skip_bad", skip_bad, 0)
    if isinstance(path, (bytes, bytearray)):  # accepted, then "Object of type bytes is not JSON serializable"
        raise ConfigTypeError("path must be a str or os.PathLike, not bytes")
    if not isinstance(path, (str, os.PathLike)):  # os.fspath's TypeError named no argument
        raise ConfigTypeError(f"path must be a str or os.PathLike, not {type(path).__name__}")
    if format is not None and not isinstance(format, str):
        raise ConfigTypeError(f"format must be a string or None, not {type(format).__name__}")
    if not isinstance(cache, bool):  # "false" is true: the cache stayed on
        raise ConfigTypeError(f"cache must be True or False, not {type(cache).__name__}")
    p = os.fspath(path)
    if not os.path.exists(p):
        raise _core.TraceError(f"{p}: no such file")
    if os.path.isdir(p):
        raise _core.TraceError(f"{p}: is a directory, not a trace file")
    spec: dict[str, Any] = {
        "path": p,
        "block_size": block_size,
        "sector_size": sector_size,
        "mode": mode,
        "ops": ops,
        "params": params,
        "skip_bad": skip_bad,
    }
    if format not in (None, "auto"):
        spec["format"] = format
    if id_bytes is not None:
        spec["id_bytes"] = _check_int("trace.id_bytes", id_bytes, 1)
    if volumes not in _VOLUMES:
        raise _core.ConfigError(f"trace.volumes: unknown value {volumes!r}; choose one of {', '.join(_VOLUMES)}")
    if volumes != "separate":
        spec["volumes"] = volumes
    if not cache:
        spec["cache"] = False
    _client_from(spec, client_from)
    return Trace(spec)


#: Output names `convert` knows, after a compression suffix; any other name needs ``to=`` (``--to``).
_OUTPUT_NAMES = ((".csv", "csv"), (".oraclegeneral", "oracle_general"), (".oraclegeneral.bin", "oracle_general"),
                 (".bin", "oracle_general"))
# Read-only compressions too: the core then says it cannot write them.
_COMPRESSIONS = (".zst", ".zstd", ".gz", ".gzip", ".bz2", ".xz")


def refuse_oracle_options_for_csv(out: str, to: str, options: dict[str, bool]) -> None:
    """Refuse oracleGeneral's options (given, by their names in ``options``) for a CSV output: the CSV
    keeps every request's blocks and times as read, and the options were ignored without a word."""
    if to.lower() != "csv":
        return
    for name, given in options.items():
        if given:
            raise _core.ConfigError(f"{name}: applies to oracleGeneral output only; {out} is written as CSV, which "
                                    "keeps each request's blocks and times as read")


def _output_format(out: str) -> str:
    """The format an output's name asks for (``p6.txt`` silently became oracleGeneral binary)."""
    stem = out.lower()
    for c in _COMPRESSIONS:
        stem = stem.removesuffix(c)
    for suffix, fmt in _OUTPUT_NAMES:
        if stem.endswith(suffix):
            return fmt
    raise _core.ConfigError(f"{out}: unknown output name; end it in .csv, .oracleGeneral, .oracleGeneral.bin or "
                            ".bin (compressed: add .zst or .gz), or name the format (to=, --to csv|oracle_general)")


def merge_traces(*traces: Trace, label: str | None = None, member_space: str = "shared") -> Trace:
    """Several traces as one, the requests of ``traces[i]`` as client ``i``: merged by timestamp when
    every trace has times, else round-robin (one request of each in turn). All must share a block size.
    Use with a ``per_client`` level, e.g. ``Level("5%", per_client=True)``.

    ``member_space``: ``"shared"`` (default), the traces address one set of blocks, as clients sharing
    data do; ``"separate"``, each trace is its own address space (traces of different disks or hosts,
    whose block numbers would otherwise alias), as the volumes of one trace are."""
    if not traces:
        raise _core.ConfigError("trace.merge: give at least one trace")
    for t in traces:
        if not isinstance(t, Trace):
            raise ConfigTypeError(f"merge_traces takes Trace objects, not {type(t).__name__}")
    if member_space not in _VOLUMES:
        raise _core.ConfigError(
            f"trace.member_space: unknown value {member_space!r}; choose one of {', '.join(_VOLUMES)}"
        )
    spec: dict[str, Any] = {
        "path": label if label is not None else " + ".join(t.path for t in traces),
        "block_size": traces[0].block_size,
        "merge": [t.spec for t in traces],
    }
    if member_space != "shared":  # the default stays out of the spec, as the core leaves it out
        spec["member_space"] = member_space
    return Trace(spec)


def synthetic(name: str, *, block_size: int = 4096, client_from: str = "trace", mode: str | None = None,
              ops: str | None = None, **params: Any) -> Trace:
    """A built-in seeded workload (``prefetchsim.generators()`` lists them), e.g.
    ``synthetic("oltp-like", requests=200_000, seed=7)``; ``client_from``, ``mode`` and ``ops`` as in
    `open_trace` (the command line's ``--mode`` and ``--ops`` take them for generators too)."""
    if not isinstance(name, str):
        raise ConfigTypeError(f"generator name must be a string, not {type(name).__name__}")
    block_size = _check_int("trace.block_size", block_size, 1)
    spec: dict[str, Any] = {"path": name, "format": "synthetic", "block_size": block_size, "params": params}
    if mode is not None:
        spec["mode"] = mode
    if ops is not None:
        spec["ops"] = ops
    _client_from(spec, client_from)
    return Trace(spec)
