"""Recount a run's per-level counters from its event log (docs/events.md), independently of the simulator.

Plain Python on purpose: it shares no code with prefetchsim. It replays the log's events per cache
(level, instance), keeps its own picture of each cache (which blocks are resident, who brought each in,
whether it is in flight, whether its prefetch was used) and

- checks that every event is possible in that picture (a hit on a resident ready block, a miss on an
  absent one, a late prefetch on an unused prefetched block in flight, an unused eviction of a block
  nobody used, ...), raising :class:`LogError` with the line otherwise;
- derives the prefetch accounting itself: a prefetched (or readmore) block is *used* at its first
  reference of any kind (native, from the level above, or a PFC silent hit), *unused-evicted* when it
  leaves unreferenced, and at the end resident-unused or in flight;
- counts every counter the run reports.

:func:`recount` returns ``{(level, instance): counters}``; :func:`level_totals` sums instances per level.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict

COUNTERS = (
    "requests", "demand_accesses", "hits", "prefetch_hits", "misses", "late_prefetch", "inflight_demand_joins",
    "upper_prefetch_accesses", "upper_prefetch_hits", "prefetch_issued", "prefetch_used", "second_issued",
    "second_used", "unused_evicted", "unused_resident_end", "prefetch_inflight_end", "prefetch_dropped",
    "prefetch_invalidated", "evictions", "fetches", "fetched_blocks", "demoted_in", "silent_hits", "bypass_pending", "bypass_reads",
    "readmore_blocks", "readmore_issued", "readmore_used", "readmore_unused_evicted",
)

PREFETCH_ORIGINS = ("native", "second", "readmore")


class LogError(AssertionError):
    """An event the recounted cache state says cannot happen."""


class Block:
    """What the recount knows of one resident block."""

    __slots__ = ("origin", "used", "native_ref", "pinned", "measured")

    def __init__(self, origin: str, pinned: bool, native_ref: bool):
        self.origin = origin          # demand, native, second, readmore
        self.used = False             # its prefetch was used (any reference)
        self.native_ref = native_ref  # the native level referenced it (what makes a prefetch hit)
        self.pinned = pinned          # in flight (timed engine)
        self.measured = True          # prefetched after the warm-up: counted in the prefetch counters

    def unused(self) -> bool:
        return self.origin in PREFETCH_ORIGINS and not self.used


class Cache:
    def __init__(self):
        self.blocks: dict[int, Block] = {}
        self.c = dict.fromkeys(COUNTERS, 0)
        self.logged_used = 0


def _open(path: str):
    if path.endswith(".zst"):
        import zstandard  # only if a test writes compressed logs

        return io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(open(path, "rb")), newline="")
    if path.endswith(".gz"):
        import gzip

        return gzip.open(path, "rt", newline="")
    return open(path, newline="")


def recount(path: str, timed: bool) -> dict[tuple[int, int], dict[str, int]]:
    """Replay the event log at ``path`` (CSV); ``timed``: the run used the timed engine (blocks cached by a
    miss or a prefetch are in flight until they arrive)."""
    caches: dict[tuple[int, int], Cache] = defaultdict(Cache)
    with _open(path) as f:
        rows = csv.reader(f)
        header = next(rows)
        if header != ["time", "level", "instance", "kind", "block", "len", "origin"]:
            raise LogError(f"unexpected header {header}")
        last_time = 0
        for n, row in enumerate(rows, start=2):
            time, level, instance, kind, block, length, origin = row
            time, level, instance, block, length = int(time), int(level), int(instance), int(block), int(length)
            if time < last_time:
                raise LogError(f"line {n}: time goes back from {last_time} to {time}")
            last_time = time
            if kind == "counters_reset":
                for (lv, _), cache in caches.items():
                    if lv == level:
                        cache.c = dict.fromkeys(COUNTERS, 0)
                        cache.logged_used = 0
                        # Prefetches issued in the warm-up are not in the new prefetch_issued; what
                        # becomes of them is not counted either (metrics.md §1: conservation).
                        for b in cache.blocks.values():
                            if b.unused():
                                b.measured = False
                continue
            try:
                _apply(caches[(level, instance)], kind, block, length, origin, timed)
            except LogError as e:
                raise LogError(f"line {n} ({','.join(row)}): {e}") from None
    out = {}
    for key, cache in caches.items():
        c = cache.c
        c["unused_resident_end"] = sum(1 for b in cache.blocks.values() if b.unused() and b.measured and not b.pinned)
        c["prefetch_inflight_end"] = sum(1 for b in cache.blocks.values() if b.unused() and b.measured and b.pinned)
        if cache.logged_used != c["prefetch_used"]:
            raise LogError(f"{key}: {cache.logged_used} prefetch_used events, {c['prefetch_used']} first uses")
        out[key] = c
    return out


def _use(cache: Cache, b: Block) -> None:
    """A reference of any kind: the first one of a prefetched block uses it."""
    if b.unused():
        if b.measured:
            cache.c["prefetch_used"] += 1
            cache.c["second_used"] += b.origin == "second"
            cache.c["readmore_used"] += b.origin == "readmore"
        b.used = True


def _resident(cache: Cache, block: int, kind: str, pinned: bool | None = None) -> Block:
    b = cache.blocks.get(block)
    if b is None:
        raise LogError(f"{kind} of block {block}, which is not resident")
    if pinned is not None and b.pinned != pinned:
        raise LogError(f"{kind} of block {block}, which is {'in flight' if b.pinned else 'ready'}")
    return b


def _absent(cache: Cache, block: int, kind: str) -> None:
    if block in cache.blocks:
        raise LogError(f"{kind} of block {block}, which is resident")


def _apply(cache: Cache, kind: str, block: int, length: int, origin: str, timed: bool) -> None:
    c = cache.c
    if kind == "request":
        c["requests"] += 1
    elif kind in ("hit", "prefetch_hit", "upper_hit"):
        b = _resident(cache, block, kind, pinned=False)
        first_native = b.origin in ("native", "second") and not b.native_ref
        if kind == "upper_hit":
            c["upper_prefetch_accesses"] += 1
            c["upper_prefetch_hits"] += 1
        else:
            if first_native != (kind == "prefetch_hit"):
                raise LogError(f"{kind} but the native level {'never' if first_native else 'already'} "
                               "referenced this prefetched block")
            c["demand_accesses"] += 1
            c["hits"] += 1
            c["prefetch_hits"] += kind == "prefetch_hit"
        b.native_ref = True
        _use(cache, b)
    elif kind in ("miss", "upper_miss"):
        _absent(cache, block, kind)
        if kind == "miss":
            c["demand_accesses"] += 1
            c["misses"] += 1
        else:
            c["upper_prefetch_accesses"] += 1
    elif kind in ("late", "join", "upper_pending"):
        b = _resident(cache, block, kind, pinned=True)
        first_native = b.origin in ("native", "second") and not b.native_ref
        if kind == "upper_pending":
            c["upper_prefetch_accesses"] += 1
        else:
            if first_native != (kind == "late"):
                raise LogError(f"{kind} on a block whose first native reference this {'is' if first_native else 'is not'}")
            c["demand_accesses"] += 1
            c["misses"] += 1
            c["late_prefetch" if kind == "late" else "inflight_demand_joins"] += 1
        b.native_ref = True
        _use(cache, b)
    elif kind == "upper_join_uncached":
        # A block the level above prefetches, not cached, whose read (sent by the access that evicted it)
        # is in flight: it waits for that read.
        _absent(cache, block, kind)
        c["upper_prefetch_accesses"] += 1
    elif kind == "bypass_join":
        # PFC: a bypassed block the level evicted while reading it, its read in flight: waited for.
        _absent(cache, block, kind)
        c["bypass_pending"] += 1
    elif kind == "join_uncached":
        # Its read is in flight but the block is not cached: evicted by the access that sent the read.
        _absent(cache, block, kind)
        c["demand_accesses"] += 1
        c["misses"] += 1
        c["inflight_demand_joins"] += 1
    elif kind == "silent_hit":
        c["silent_hits"] += 1
        _use(cache, _resident(cache, block, kind, pinned=False))
    elif kind == "bypass_pending":
        c["bypass_pending"] += 1
        _use(cache, _resident(cache, block, kind, pinned=True))
    elif kind == "bypass_read":
        _absent(cache, block, kind)
        c["bypass_reads"] += 1
    elif kind == "readmore":
        c["readmore_blocks"] += 1
    elif kind == "insert":
        _absent(cache, block, kind)
        cache.blocks[block] = Block("demand", pinned=timed, native_ref=True)
    elif kind == "insert_ready":
        _absent(cache, block, kind)
        cache.blocks[block] = Block("demand", pinned=False, native_ref=True)
    elif kind == "prefetch_issued":
        c["prefetch_issued"] += 1
        if origin == "readmore":
            b = _resident(cache, block, kind)
            if b.origin != "demand" or b.used:
                raise LogError(f"readmore issue of block {block}, which came in as {b.origin}")
            b.origin = "readmore"
            c["readmore_issued"] += 1
        elif origin in ("native", "second"):
            _absent(cache, block, kind)
            cache.blocks[block] = Block(origin, pinned=timed, native_ref=False)
            c["second_issued"] += origin == "second"
        else:
            raise LogError(f"prefetch_issued with origin {origin!r}")
    elif kind == "prefetch_dropped":
        c["prefetch_dropped"] += 1
    elif kind == "prefetch_used":
        b = cache.blocks.get(block)
        if b is None or not b.used:
            raise LogError(f"prefetch_used of block {block}, which the recount has not seen used")
        cache.logged_used += b.measured
    elif kind == "arrived":
        b = _resident(cache, block, kind, pinned=True)
        b.pinned = False
        expect = b.origin if b.unused() else "demand"
        if origin != expect:
            raise LogError(f"arrived as {origin!r}, expected {expect!r}")
    elif kind in ("evict", "evict_unused", "invalidated", "removed"):
        b = _resident(cache, block, kind)
        if kind == "evict_unused" or kind == "invalidated":
            if not b.unused():
                raise LogError(f"{kind} of block {block}, which is not an unused prefetch")
            if origin != b.origin:
                raise LogError(f"{kind} says {origin!r}, the block came in as {b.origin!r}")
        elif b.unused() and kind == "evict":
            raise LogError(f"evict of block {block}, an unused {b.origin} prefetch (expected evict_unused)")
        # (No check that an evicted block is ready: a block cached by an access is pinned only when that
        # access ends, so the same access may still evict it.)
        if kind in ("evict", "evict_unused"):
            c["evictions"] += 1
        if kind == "evict_unused" and b.measured:
            c["unused_evicted"] += 1
            c["readmore_unused_evicted"] += b.origin == "readmore"
        if kind == "invalidated":
            c["prefetch_invalidated"] += b.measured
        del cache.blocks[block]
    elif kind == "demote_in":
        c["demoted_in"] += 1
    elif kind == "fetch_sent":
        if origin != "bypass":
            c["fetches"] += 1
            c["fetched_blocks"] += length
    elif kind == "fetch_done":
        pass
    else:
        raise LogError(f"unknown event kind {kind!r}")


def level_totals(counts: dict[tuple[int, int], dict[str, int]]) -> dict[int, dict[str, int]]:
    """Sum the caches of each level."""
    out: dict[int, dict[str, int]] = {}
    for (level, _), c in counts.items():
        tot = out.setdefault(level, dict.fromkeys(COUNTERS, 0))
        for k, v in c.items():
            tot[k] += v
    return out
