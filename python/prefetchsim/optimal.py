"""Offline bounds and the share of the optimal gain (docs/optimal.md).

- Replacement: Belady's MIN is the policy ``"opt"`` (any level, instant engine); ``simulate`` prepares it.
- Prefetching and caching on one disk (Cao, Felten, Karlin & Li, SIGMETRICS 1995): :func:`integrated`
  gives the stall and elapsed time of their Aggressive and Conservative strategies and of demand fetching
  under MIN, in units of one request's service, for a fetch time of ``fetch_time`` units.
- :func:`single_disk` times any one-level hierarchy in that same model, so a prefetcher's stall can be set
  beside the bounds; :func:`share_of_gain` is the share of the bound's gain over a baseline it captures.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from typing import Any

from . import _core
from ._numbers import int_arg
from ._sim import Level, _as_trace, _dumps
from ._trace import Trace
from ._typeerror import ConfigTypeError


#: The longest fetch time the core takes, in request services (its argument is read as 0 to 2^32, and a
#: fetch time of 0 is then refused: the range it said, "0 to 4294967296", was not the one it takes).
FETCH_TIME_MAX = 2**32


def _fetch_time(fetch_time: int) -> int:
    """``fetch_time`` if the single-disk model takes it: a whole number of request services, 1 to 2^32
    (NumPy's integers too, as for ``cache_blocks``; a bool is not one)."""
    fetch_time = int_arg("fetch_time", fetch_time)
    if not 1 <= fetch_time <= FETCH_TIME_MAX:
        raise _core.ConfigError(f"fetch_time: {fetch_time} is out of range (1 to {FETCH_TIME_MAX}): the fetch time F "
                                "is in request services, at least one")
    return fetch_time


#: The largest cache the single-disk model takes, in blocks.
CACHE_BLOCKS_MAX = 2**32


def _cache_blocks(cache_blocks: int) -> int:
    """``cache_blocks`` if the single-disk model takes it: a whole number of blocks, 1 to 2^32. A bool was
    taken as a 1-block cache, -1 was reported as ``cache = -1 ... (0 to 4294967296)`` (an argument named
    otherwise, a range that 0 is not in), and 0 was a ZeroDivisionError in :func:`optimum_range`."""
    cache_blocks = int_arg("cache_blocks", cache_blocks)
    if not 1 <= cache_blocks <= CACHE_BLOCKS_MAX:
        raise _core.ConfigError(f"cache_blocks: {cache_blocks} is out of range (1 to {CACHE_BLOCKS_MAX}): the "
                                "cache holds at least one block")
    return cache_blocks


def _limit(limit: int | None) -> int | None:
    """``limit`` if the single-disk model takes it: ``None`` (the whole trace) or a whole number of requests,
    1 to 2^64 - 1 (NumPy's integers too; a bool is not one). -1 was a plain ValueError, 2.5 a TypeError
    naming nothing."""
    if limit is None:
        return None
    limit = int_arg("limit", limit)
    if limit == 0:
        raise _core.ConfigError("limit: 0 requests measure nothing: give at least 1, or leave the limit out to read "
                                "the whole trace")
    if not 1 <= limit <= 2**64 - 1:
        raise _core.ConfigError(f"limit: {limit} is out of range (1 to {2**64 - 1}): the first N requests, at "
                                "least one; leave it out to read the whole trace")
    return limit


def _no_requests(trace: Trace, schedule: Mapping[str, int]) -> None:
    """An empty trace (or one whose every record a filter drops) is an error, as in :func:`simulate`: a
    schedule of nothing reported zeros and a hit ratio of 0 as if measured."""
    if schedule["requests"] == 0:
        raise _core.TraceError(f"{trace.path}: no requests to simulate (the trace is empty, or no record is kept)")


def share_of_gain(value: float, baseline: float, bound: float) -> float:
    """``(value - baseline) / (bound - baseline)``: 0 is no better than the baseline, 1 is all the gain the
    bound shows. Works for quantities to maximise (hit ratio) and to minimise (stall time) alike. NaN when
    the bound gains nothing over the baseline (no gain to share)."""
    gain = bound - baseline
    if gain == 0:
        return math.nan
    return (value - baseline) / gain


def integrated(trace: Trace | str | os.PathLike[str], cache_blocks: int, fetch_time: int,
               limit: int | None = None) -> dict[str, dict[str, int]]:
    """Cao et al.'s single-disk model on ``trace`` (every block of every request one access, the first
    ``limit`` requests): the schedules ``aggressive``, ``conservative`` and ``min_demand`` (Belady's MIN
    with demand fetching), each ``{requests, elapsed, stall, fetches}`` in request-service units.

    The optimum lies between: its elapsed time is at most the smaller of Aggressive's and Conservative's,
    and at least Aggressive's divided by min(1 + F/k, 2) and Conservative's divided by 2
    (:func:`optimum_range`)."""
    tr = _as_trace(trace)
    out = json.loads(_core.integrated(tr._json(), _cache_blocks(cache_blocks), _fetch_time(fetch_time), _limit(limit)))
    _no_requests(tr, out["aggressive"])
    return out


def optimum_range(bounds: Mapping[str, Mapping[str, int]], cache_blocks: int, fetch_time: int) -> tuple[int, int]:
    """The range (low, high) of the optimal stall time that :func:`integrated`'s schedules prove: high is the
    better of Aggressive and Conservative (reached), low follows from their published ratios."""
    a, c = bounds["aggressive"], bounds["conservative"]
    n = a["requests"]
    f, k = _fetch_time(fetch_time), _cache_blocks(cache_blocks)
    # ceil(A / min(1 + F/k, 2)) in whole numbers: in floating point 5 / (1 + 4/6) is 3.0000000000000004,
    # whose ceiling is one unit too high.
    low_a = -(-a["elapsed"] // 2) if f >= k else -(-a["elapsed"] * k // (k + f))
    low_elapsed = max(low_a, -(-c["elapsed"] // 2), n)
    return low_elapsed - n, min(a["stall"], c["stall"])


def single_disk(trace: Trace | str | os.PathLike[str], level: Level | Mapping[str, Any],
                fetch_time: int) -> dict[str, Any]:
    """Time one cache level (a :class:`Level` or a ``[[level]]`` table) on ``trace`` in Cao et al.'s
    single-disk model: ``{"schedule": {requests, elapsed, stall, fetches}, "level": its record}``. Demand
    fetching stalls ``fetch_time`` per miss; a prefetcher's blocks queue on the one disk."""
    tr = _as_trace(trace)
    if not isinstance(level, (Level, Mapping)):
        raise ConfigTypeError(f"level must be a Level or a mapping (a [[level]] table), not {type(level).__name__}")
    doc = {"level": [level.to_config() if isinstance(level, Level) else dict(level)]}
    out = json.loads(_core.single_disk(tr._json(), _dumps("config", doc), _fetch_time(fetch_time)))
    _no_requests(tr, out["schedule"])
    return out


def bounds_table(trace: Trace | str | os.PathLike[str], cache_blocks: int, prefetchers: Iterable[str],
                 fetch_time: int, limit: int | None = None, progress=None) -> list[dict[str, Any]]:
    """One row per scheme on ``trace`` with a cache of ``cache_blocks``: LRU and MIN (``opt``), each with
    no prefetcher and with each of ``prefetchers``; their hit ratios and their stall times in the single-disk
    model (fetch time ``fetch_time``), and:

    - ``hit_share``: the share of the hit-ratio gain of MIN with the same prefetcher over plain LRU,
      ``(hit(x) - hit(LRU)) / (hit(MIN with x's prefetcher) - hit(LRU))``;
    - ``stall_share``: the share of the stall-time gain over LRU's demand fetching that the best proven
      schedule reaches (the better of Aggressive and Conservative);
    - ``stall_share_opt_max``: the same against the lowest stall the optimum can have (from both published
      ratios); the share of the optimum's own gain lies between the two.

    Rows for MIN's demand fetching, Conservative, Aggressive and the optimum's lowest possible stall close
    the table."""
    tr = _as_trace(trace)
    _cache_blocks(cache_blocks)
    _fetch_time(fetch_time)
    limit = _limit(limit)
    if isinstance(prefetchers, str):
        raise ConfigTypeError("prefetchers must be an iterable of names, not a single string")
    pfs = ["none", *[p for p in prefetchers if p != "none"]]
    engine = {"limit": limit} if limit is not None else {}
    stalls, hits = {}, {}
    for p, pf in ((p, pf) for pf in pfs for p in ("lru", "opt")):
        doc = {"level": [Level(cache_blocks, p, pf).to_config()], "engine": engine}
        r = json.loads(_core.single_disk(tr._json(), _dumps("config", doc), fetch_time))
        _no_requests(tr, r["schedule"])
        # The single-disk replay makes the instant engine's decisions: its level record is the run's.
        stalls[(p, pf)], hits[(p, pf)] = r["schedule"], r["level"]["hit_ratio"]
        if progress is not None:
            progress(len(stalls))
    b = integrated(tr, cache_blocks, fetch_time, limit)
    low, high = optimum_range(b, cache_blocks, fetch_time)
    base_hit, base_stall = hits[("lru", "none")], stalls[("lru", "none")]["stall"]
    head = {"trace": tr.path, "cache_blocks": cache_blocks, "fetch_time": fetch_time}
    rows = []
    for (p, pf), s in stalls.items():
        rows.append({**head, "scheme": p if pf == "none" else f"{p}+{pf}", "hit_ratio": hits[(p, pf)],
                     "hit_share": share_of_gain(hits[(p, pf)], base_hit, hits[("opt", pf)]),
                     "stall": s["stall"], "fetches": s["fetches"],
                     "stall_share": share_of_gain(s["stall"], base_stall, high),
                     "stall_share_opt_max": share_of_gain(s["stall"], base_stall, low)})
    for name in ("min_demand", "conservative", "aggressive"):
        s = b[name]
        rows.append({**head, "scheme": name, "hit_ratio": math.nan, "hit_share": math.nan,
                     "stall": s["stall"], "fetches": s["fetches"],
                     "stall_share": share_of_gain(s["stall"], base_stall, high),
                     "stall_share_opt_max": share_of_gain(s["stall"], base_stall, low)})
    rows.append({**head, "scheme": "optimum, lowest possible", "hit_ratio": math.nan, "hit_share": math.nan,
                 "stall": low, "fetches": math.nan, "stall_share": math.nan, "stall_share_opt_max": math.nan})
    return rows


__all__ = ["bounds_table", "integrated", "optimum_range", "share_of_gain", "single_disk"]
