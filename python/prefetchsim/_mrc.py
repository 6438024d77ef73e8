"""Miss-ratio curves: exact LRU in one pass, SHARDS estimates, and sampled (miniature) simulation of any
policy and prefetcher.

- ``method="exact"``: Mattson's LRU stack distances counted over a bit set of last-access times
  (one pass; every block of a request is one reference, in order).
- ``method="shards"``: Waldspurger, Park, Garthwaite & Ahmad, "Efficient MRC Construction with SHARDS",
  FAST 2015: spatial sampling by a hash of the block number, distances scaled by the rate; fixed-rate
  (``rate``) or fixed-size (``max_samples``).
- ``method="mini"``: Waldspurger, Saemundsson, Ahmad & Park, "Cache Modeling and Optimization using
  Miniature Simulations", USENIX ATC 2017: the policy (and prefetcher) runs on the sampled requests with
  each cache scaled by the rate. ``unit="block"`` hashes blocks (the paper's); ``unit="extent"`` hashes the
  aligned region of ``extent_bytes`` holding a block, so that sequential runs, which prefetchers need,
  survive the sampling (this project's).
- ``method="full"``: one full simulation per size (the reference the others are judged against); plain
  LRU, FIFO and CLOCK sizes (default parameters, no prefetcher) come from one pass over the trace that
  gives the same results (``simulate_many``).

The result is a ``pandas.DataFrame`` with one row per size (``capacity_blocks``, ``miss_ratio``,
``hit_ratio`` ...) that ``prefetchsim.plot.mrc`` draws; ``df.attrs`` holds the footprint estimate, the
final rate and the CPU seconds the computation took.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import _core
from ._numbers import as_int, int_arg, is_bool
from ._sim import _as_trace, _dumps, share_blocks, simulate_many
from ._trace import Trace
from ._typeerror import ConfigTypeError

METHODS = ("exact", "shards", "mini", "full")
UNITS = ("block", "extent")
#: The methods each option applies to. An option given to another method is an error naming both rather
#: than ignored (`--unit` with shards ran as if it were not there). None means "not given".
APPLIES = {
    "rate": ("shards", "mini"),
    "max_samples": ("shards",),
    "adjust": ("shards",),
    "seed": ("shards", "mini"),
    "policy": ("mini", "full"),
    "prefetcher": ("mini", "full"),
    "policy_params": ("mini", "full"),
    "prefetcher_params": ("mini", "full"),
    "unit": ("mini",),
    "extent_bytes": ("mini",),
    "threads": ("full",),
}


#: What a method computes anyway: saying it again is not an error (``policy="lru"`` with ``exact``, as
#: scripts written before options were checked do).
IMPLIED = {"exact": {"policy": "lru", "prefetcher": "none", "rate": 1}, "shards": {"policy": "lru", "prefetcher": "none"}}


def check_options(method: str, given: Mapping[str, Any], spell: Callable[[str], str] = str) -> None:
    """Refuse an option (a key of `APPLIES` whose value is not None) that ``method`` does not use, unless
    it says what the method computes anyway (`IMPLIED`); the message names it as ``spell`` writes it
    (``--max-samples`` on the command line)."""
    if method not in METHODS:
        raise _core.ConfigError(f"method: unknown value {method!r}; choose one of {', '.join(METHODS)}")
    implied = IMPLIED.get(method, {})
    for key, value in given.items():
        if value is None or method in APPLIES[key]:
            continue
        if key in implied and not isinstance(value, bool) and _same(key, value, implied[key]):
            continue
        why = f" ({method!r} computes LRU without prefetching)" if "policy" in key or "prefetcher" in key else ""
        raise _core.ConfigError(f"{spell(key)}: applies to method {' or '.join(APPLIES[key])} only, "
                                f"not {method!r}{why}")


def _same(key: str, value: Any, implied: Any) -> bool:
    """Whether ``value`` of option ``key`` says ``implied``: a policy or prefetcher as the core reads a
    level's (``"LRU"`` and ``{"name": "lru"}`` are ``"lru"``, aliases folded; they were refused with
    ``exact``), anything else as it is."""
    if key not in ("policy", "prefetcher"):
        return bool(value == implied)

    def canonical(v: Any) -> Any:
        doc = {"level": [{"size": 1, key: v}]}
        return json.loads(_core.canonical_config(json.dumps(doc)))["level"][0].get(key)

    try:
        return bool(canonical(value) == canonical(implied))
    except (_core.ConfigError, TypeError, ValueError):  # not a component the core reads: not the implied one
        return False


_MAX_U64 = 2**64 - 1


def _share(size: float | str) -> float | int:
    """A size written as text or a float, read by the core as a level's size is read (so ``mrc`` takes
    the spellings and bounds ``sim`` takes: a share in (0, 1], ``"5%"``, ``"1000"`` blocks): the share,
    or blocks."""
    try:
        parsed = json.loads(_core.canonical_config(json.dumps({"level": [{"size": size}]})))["level"][0]["size"]
    except (_core.ConfigError, ValueError) as e:
        raise _core.ConfigError(f"sizes: {size!r}: {str(e).removeprefix('level[0].size: ')}") from None
    if "Footprint" in parsed:
        return float(parsed["Footprint"])
    if "Blocks" in parsed:
        return int(parsed["Blocks"])
    raise _core.ConfigError(f"sizes: {size!r}: a curve's sizes are blocks or shares of the footprint")


def _sizes(sizes: Sequence[int | float | str] | None) -> tuple[list[int] | None, list[float] | None]:
    """Split ``sizes`` into blocks (ints) or shares of the footprint (floats up to 1, or ``"5%"``)."""
    if sizes is None:
        return None, None
    if isinstance(sizes, (str, bytes, int, float)):
        raise ConfigTypeError("sizes must be a list of sizes (blocks, shares such as 0.05, or '5%')")
    blocks: list[int] = []
    shares: list[float] = []
    for s in sizes:
        if is_bool(s):
            raise ConfigTypeError(f"sizes: {s!r} is not a size")
        if as_int(s) is not None:  # NumPy's integers (np.array([100, 1000])) are blocks like ints
            s = as_int(s)
        if isinstance(s, (str, float)):
            s = _share(s)
            if isinstance(s, float):
                shares.append(s)
                continue
        if isinstance(s, int):
            if s < 1:
                raise _core.ConfigError(f"sizes: {s} blocks; a cache holds at least 1 block")
            if s > _MAX_U64:
                raise _core.ConfigError(f"sizes: {s} blocks is more than a block number can count (2^64 - 1)")
            blocks.append(s)
        else:
            raise _core.ConfigError(f"sizes: {s!r} is neither blocks (an int) nor a share (0 < x <= 1 or 'N%')")
    if blocks and shares:
        raise _core.ConfigError("sizes: give either blocks or shares of the footprint, not both")
    if not blocks and not shares:
        raise _core.ConfigError("sizes: empty")
    return (blocks or None), (shares or None)


def _capacities(shares: list[float], footprint: int) -> list[int]:
    """Shares of the footprint in blocks as `sim` sizes a level (`share_blocks`); a share under one
    block is an error, as there."""
    out = []
    for s in shares:
        n = share_blocks(s, footprint)
        if n < 1:
            raise _core.ConfigError(f"sizes: {s * 100:g}% of the footprint ({footprint:,} blocks) is less than "
                                    "one block")
        out.append(n)
    return out


def _component(value: str | Mapping[str, Any], params: Mapping[str, Any] | None) -> str | dict[str, Any]:
    """A policy or prefetcher as a run config takes it: a name (``"obl"``, ``"mithril+amp"``) or a table
    (``{"name": "mithril", "preset": "libcachesim"}``), with ``params`` over the table's."""
    if isinstance(value, Mapping):
        return {**value, **dict(params or {})}
    return {"name": value, **params} if params else value


def mrc(
    trace: Trace | str | os.PathLike[str],
    sizes: Sequence[int | float | str] | None = None,
    *,
    method: str = "exact",
    points: int | None = None,
    rate: float | None = None,
    max_samples: int | None = None,
    adjust: bool | None = None,
    seed: int | None = None,
    policy: str | Mapping[str, Any] | None = None,
    prefetcher: str | Mapping[str, Any] | None = None,
    policy_params: Mapping[str, Any] | None = None,
    prefetcher_params: Mapping[str, Any] | None = None,
    unit: str | None = None,
    extent_bytes: int | None = None,
    limit: int | None = None,
    threads: int | None = None,
    progress: Callable[[int], Any] | None = None,
):
    """The miss-ratio curve of ``trace``: one row per cache size.

    Args:
        trace: a `Trace` or a path (format detected).
        sizes: cache sizes in blocks (ints) or shares of the footprint (``0.05``, ``"5%"``); default
            ``points`` sizes (100) evenly spaced up to the footprint.
        method: ``"exact"`` (LRU, one pass), ``"shards"`` (LRU, sampled), ``"mini"`` (any policy and
            prefetcher on a spatial sample, caches scaled) or ``"full"`` (one simulation per size).
        rate: ``shards``/``mini``: sampling rate in (0, 1]: SHARDS default 0.01 (the start rate with
            ``max_samples``), ``mini`` default 0.1.
        max_samples: ``shards``: fixed-size SHARDS, at most this many sampled blocks.
        adjust: ``shards``: SHARDS_adj correction (fixed-rate SHARDS; default True).
        seed: ``shards``/``mini``: seed of the sampling hash (default 0).
        policy, prefetcher, policy_params, prefetcher_params: what ``mini`` and ``full`` simulate (default
            ``lru``, ``none``): a name or a table ``{"name": ..., params}``, as a run config takes them.
        unit: ``mini``: hash each ``"block"`` or each ``"extent"`` (default) of ``extent_bytes`` (256 KiB).
        limit: read only the first ``limit`` requests.
        threads: ``full``: parallel runs (1 by default, so CPU time compares with the other methods).
        progress: called about ten times a second with the requests read so far.

    An option the method does not use (``unit`` with ``shards``, ``points`` with ``sizes``) is a
    ConfigError naming it and the methods it applies to, not ignored; one that says what the method
    computes anyway (``policy="lru"``, ``prefetcher="none"`` with ``exact`` or ``shards``) is accepted.

    Returns:
        A ``pandas.DataFrame``: ``method``, ``capacity_blocks``, ``cache_bytes``, ``miss_ratio``,
        ``hit_ratio`` (block references, equal to bytes since blocks have one size), and
        ``request_miss_ratio`` (``exact``/``shards``: requests with a missed block) or the simulated
        level's metrics (``mini``/``full``, with ``sample_blocks``, the miniature cache). ``df.attrs``:
        ``footprint``, ``rate``, ``cpu_s`` (process CPU seconds of the computation), ``wall_s``; for
        ``exact``/``shards`` also ``requests`` and ``references`` read (counted, not estimated) and for
        ``shards`` their ``estimated_...`` counterparts from the sample (docs/mrc.md lists them all).

    Raises:
        ConfigError: a bad size, method or sampling parameter; the message names it (``sampling.rate``).

    Example:
        ```python
        import prefetchsim as ps

        tr = ps.synthetic("oltp-like", requests=20_000, seed=1)
        exact = ps.mrc(tr, points=20)
        est = ps.mrc(tr, points=20, method="shards", rate=0.1)
        mini = ps.mrc(tr, [500, 1000], method="mini", prefetcher="obl", rate=0.5)
        ```
    """
    import pandas as pd

    tr = _as_trace(trace)
    check_options(method, {"rate": rate, "max_samples": max_samples, "adjust": adjust, "seed": seed,
                           "policy": policy, "prefetcher": prefetcher, "policy_params": policy_params,
                           "prefetcher_params": prefetcher_params, "unit": unit, "extent_bytes": extent_bytes,
                           "threads": threads})
    if progress is not None and not callable(progress):
        raise ConfigTypeError(f"progress must be callable, not {type(progress).__name__}")
    blocks, shares = _sizes(sizes)
    if points is not None and (blocks is not None or shares is not None):
        raise _core.ConfigError("points: applies only when no sizes are given")
    points = 100 if points is None else (as_int(points) if as_int(points) is not None else points)
    if adjust is not None:
        if not is_bool(adjust):  # adjust=0 turned SHARDS_adj on
            raise ConfigTypeError(f"adjust must be True or False, not {type(adjust).__name__}")
        adjust = bool(adjust)
    # Options that apply to the method but not with another option given: they changed nothing.
    if adjust is not None and max_samples is not None:
        raise _core.ConfigError("adjust: SHARDS_adj applies to fixed-rate SHARDS only, not with max_samples")
    if extent_bytes is not None and unit == "block":
        raise _core.ConfigError("extent_bytes: applies to unit='extent' only, not unit='block'")
    limit = None if limit is None else int_arg("limit", limit)
    # Bounds said as they are: "0 or more" was printed for values where 0 is refused too, and a negative
    # limit was a plain ValueError.
    if limit is not None and limit < 0:
        raise _core.ConfigError(f"limit: {limit} is negative; give 1 or more")
    if max_samples is not None and not (as_int(max_samples) is not None and 1 <= as_int(max_samples) <= _MAX_U64):
        raise _core.ConfigError(f"sampling.max_samples: {max_samples!r}; give a whole number of blocks, 1 or more")
    threads = None if threads is None else int_arg("threads", threads)
    if blocks is None and shares is None and (isinstance(points, bool) or not isinstance(points, int) or points < 1):
        raise _core.ConfigError(f"points: {points!r}; a curve needs at least 1 size (or give sizes)")
    if blocks is None and shares is None and points > _MAX_U64:
        raise _core.ConfigError(f"points: {points}; at most 2^64 - 1 (a curve has at most one point per block)")
    seed = 0 if seed is None else seed
    cpu0, wall0 = time.process_time(), time.perf_counter()
    attrs: dict[str, Any] = {"method": method, "trace": tr.path}
    if shares is not None and (method != "shards" or limit is not None):
        # The blocks `sim` gives a share: truncated, of the whole trace's footprint (a pass the trace
        # remembers). SHARDS takes shares of the footprint it estimates, in the core, except with a limit:
        # it saw only the slice, so "10%" was 10% of the slice's footprint there and of the whole trace's
        # for every other method (P6 at 100,000 requests: 3,356 blocks against 10,190).
        fp = tr.footprint()
        attrs["footprint"] = fp
        blocks, shares = _capacities(shares, fp), None
    if method in ("exact", "shards"):
        if method == "exact":
            sampling: dict[str, Any] = {}
        else:
            sampling = {"rate": 0.01 if rate is None and max_samples is None else (1.0 if rate is None else rate),
                        "adjust": adjust is not False, "seed": seed}
            if max_samples is not None:
                sampling["max_samples"] = max_samples
        raw = json.loads(_core.mrc_curve(tr._json(), _dumps("sampling", sampling), blocks, shares, points, limit,
                                         progress))
        if raw["references"] == 0:
            raise _core.TraceError(f"{tr.path}: no block references; a miss-ratio curve needs at least one")
        if raw["sampled_references"] == 0:
            # An empty sample estimated "every reference hits" (miss ratio 0), as if measured.
            raise _core.TraceError(f"{tr.path}: no block references in the {raw['rate']:g} SHARDS sample (of "
                                   f"{raw['references']:,}; raise the rate or the sample size); a miss-ratio curve "
                                   "needs at least one")
        df = pd.DataFrame(raw["points"]).rename(columns={"size": "capacity_blocks"})
        df["hit_ratio"] = 1.0 - df["miss_ratio"]
        # `footprint` is what the shares were taken of (the whole trace's when resolved above); the
        # blocks of the requests read (estimated by SHARDS) are `footprint_read`.
        attrs.setdefault("footprint", raw["footprint"])
        # Requests and references as read; SHARDS' estimates from its sample under their own names (they
        # were `requests` and `references`: P6 at 1% "had" 1,628,100 requests for 519,711).
        attrs.update(footprint_read=raw["footprint"], references=raw["references"], requests=raw["requests"],
                     rate=raw["rate"], skipped_records=raw["skipped_records"])
        if method == "shards":
            attrs.update(estimated_references=raw["estimated_references"],
                         estimated_requests=raw["estimated_requests"], sampled_references=raw["sampled_references"])
    else:
        if blocks is None:  # `points` sizes evenly spaced up to the footprint
            fp = tr.footprint()
            attrs["footprint"] = fp
            blocks = sorted({max(1, round(i / points * fp)) for i in range(1, points + 1)})
        level = {"policy": _component("lru" if policy is None else policy, policy_params),
                 "prefetcher": _component("none" if prefetcher is None else prefetcher, prefetcher_params)}
        if method == "full":
            engine = {"limit": limit} if limit is not None else {}
            docs = [{"level": [{"size": b, **level}], "engine": engine} for b in blocks]
            threads = 1 if threads is None else threads
            results = [r.raw for r in simulate_many(tr, docs, progress=progress, threads=threads)]
            scaled = blocks
            attrs["rate"] = 1.0
        else:
            unit = "extent" if unit is None else unit
            extent_bytes = 256 * 1024 if extent_bytes is None else extent_bytes
            if unit not in UNITS:
                raise _core.ConfigError(f"sample.unit: unknown value {unit!r}; choose one of {', '.join(UNITS)}")
            r = 0.1 if rate is None else rate
            sample = {"rate": r, "unit": unit, "extent_bytes": extent_bytes, "seed": seed}
            if not (isinstance(r, (int, float)) and 0 < r <= 1):
                raise _core.ConfigError(f"sample.rate: {r!r} is not in (0, 1]")
            scaled = [max(1, round(b * r)) for b in blocks]
            docs = [{"level": [{"size": s, **level}]} for s in scaled]
            results = json.loads(_core.simulate_sampled(tr._json(), _dumps("configs", docs), _dumps("sample", sample),
                                                        limit, progress))
            attrs.update(rate=r, unit=unit, extent_bytes=extent_bytes)
        attrs["skipped_records"] = results[0].get("skipped_records", 0) if results else 0
        attrs["skipped_messages"] = results[0].get("skipped_messages", []) if results else []
        if all(res["levels"][0]["demand_accesses"] == 0 for res in results):
            where = "" if method == "full" else f" in the {attrs['rate']:g} sample (raise the rate)"
            raise _core.TraceError(f"{tr.path}: no block references{where}; a miss-ratio curve needs at least one")
        rows = []
        for b, s, res in zip(blocks, scaled, results, strict=True):
            rec = dict(res["levels"][0])
            rec.pop("capacity_blocks", None)
            rows.append({"capacity_blocks": b, "sample_blocks": s, **rec})
        df = pd.DataFrame(rows)
    df.insert(0, "method", method)
    df.insert(2, "cache_bytes", df["capacity_blocks"] * tr.block_size)
    attrs.update(cpu_s=time.process_time() - cpu0, wall_s=time.perf_counter() - wall0)
    df.attrs.update(attrs)
    return df

