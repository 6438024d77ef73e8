"""Prefetchers and replacement policies written in Python (plugins).

A config names a plugin by its import path, a module and a class separated by a colon (the form of
Python entry points)::

    [[level]]
    size = "5%"
    policy = "lru"
    prefetcher = { name = "mypkg.mymod:NextN", n = 4 }   # keys other than `name` go to __init__

A name with a colon is a plugin; every other name is looked up in the registry (``prefetchsim.prefetchers()``).
The class is imported wherever the run happens (in a sweep, in each worker process), so its module must be
importable there: an installed package, or a module on ``sys.path`` (spawned local workers get the parent's
``sys.path``). Plugins run in the instant and the timed engine, at any level, in stacks (``"obl+mymod:X"``)
and in sweeps.

The engine calls the class's methods with plain ints and bools. Each method is optional except those
marked *required*; a method the class does not define (or leaves ``None``, as these base classes do) is
never called, which saves its cost. A method that raises, or returns something other than block numbers,
stops the run with :class:`prefetchsim.PluginError` naming the config key, the plugin and the traceback.
An unknown module or class, a missing required method or an ``__init__`` that raises is a
:class:`prefetchsim.ConfigError` before the run.

Speed: each call attaches to the interpreter (the engines run without the GIL); see
``benches/plugin_speed.py`` and docs/guide/plugins.md for measured costs. Runs with plugins in one process share one interpreter, so
``simulate_many`` with several plugin configs is not faster with more threads; sweeps use processes.

Sweeps store results under a run id computed from the config, which holds the plugin's path and
parameters but not its code: after changing a plugin's code, use a new results database (or add a
``version`` parameter).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Callable

__all__ = ["PLACE_DEFAULT", "PLACE_LIST", "PLACE_LRU", "PLACE_MRU", "Policy", "Prefetcher"]

#: ``on_insert``'s ``place``: the policy's own rule (MRU for list policies).
PLACE_DEFAULT = 0
#: ``on_insert``'s ``place``: the insertion (MRU) end.
PLACE_MRU = 1
#: ``on_insert``'s ``place``: the eviction (LRU) end (DEMOTE's LRU-bottom, a prefetcher's ``insert_pos``).
PLACE_LRU = 2
#: ``on_insert``'s ``place``: ``PLACE_LIST + k`` is the policy-specific list ``k`` (SARC's prefetcher).
PLACE_LIST = 3


def _no_params(obj: object, params: dict[str, Any]) -> None:
    if params:
        raise TypeError(f"{type(obj).__name__} takes no parameters; got {', '.join(sorted(params))}")


class Prefetcher:
    """Base class of a Python prefetcher (subclassing it is optional: the engine looks up the methods).

    ``__init__(self, **params)`` receives the config's parameters (``{ name = "m:C", n = 4 }`` gives
    ``n=4``); this base class takes none.

    Methods the engine calls, once per level and run, all on the thread of the run:

    ``attach(self, capacity, block_bytes)``
        Once, before the first request: the level's capacity in blocks and block size in bytes.
    ``on_access(self, block, nblocks, misses, prefetch_hits)`` *(required)*
        One request of ``nblocks`` blocks from ``block`` reached the level, which has looked each block up
        and not yet inserted the missing ones. ``misses``: blocks not cached or still in flight (timed
        engine); ``prefetch_hits``: blocks found that were prefetched and are used for the first time.
        Return the blocks to prefetch: ``None`` (nothing; the cheapest), one block number, a ``range``
        (one run, no per-block cost) or an iterable of block numbers. Consecutive ascending blocks form one
        run, read as one I/O and inserted nearest first, as the built-in read-ahead does; blocks already
        cached are skipped by the level. One call names at most 2**24 blocks (a trace request's bound).
    ``on_evict(self, block, prefetched, used)``
        A block left the cache: whether it came by prefetch and whether a demand access used it.
        Defining it costs a call per eviction.
    ``on_late(self, block)``
        Timed engine: a demand access found the prefetched ``block`` still in flight.
    ``notes(self)``
        Once, at the end of the run: what the user should know that is not an error (a model's
        assumption the trace broke), as a list of strings or ``None``. Each becomes one of the run's
        notes (``Result.notes``, a ``RunNote`` warning), prefixed with the level.
    """

    attach: Callable[[int, int], None] | None = None
    on_access: Callable[[int, int, int, int], int | Iterable[int] | None] | None = None
    on_evict: Callable[[int, bool, bool], None] | None = None
    on_late: Callable[[int], None] | None = None
    notes: Callable[[], list[str] | None] | None = None

    def __init__(self, **params: Any) -> None:
        _no_params(self, params)


class Policy:
    """Base class of a Python replacement policy (subclassing it is optional).

    The policy keeps the order of the level's resident blocks; the level keeps the blocks themselves,
    their flags and the counters. ``__init__(self, **params)`` receives the config's parameters.

    ``attach(self, capacity)``
        Once, before the first request: the level's capacity in blocks.
    ``on_hit(self, block)`` *(required)*
        A demand access hit ``block``. When the level's first-hit rule keeps a prefetched block in place
        on its first use (AMP's rule, ``first_hit = "stay"``), this is not called for that access.
    ``on_insert(self, block, prefetched, after, place)`` *(required)*
        ``block`` entered the cache (room was made first). ``prefetched``: it came by prefetch.
        ``after``: for the second and later blocks of a prefetch run, the run's previous block when it is
        still cached, which list policies place just after it (so the nearer block is nearer MRU);
        otherwise ``None``. ``place``: one of ``PLACE_DEFAULT``, ``PLACE_MRU``, ``PLACE_LRU``,
        ``PLACE_LIST + k``. A second chance (an unused prefetched block kept instead of evicted) is
        ``on_remove(block, False)`` then ``on_insert(block, True, None, PLACE_MRU)``.
    ``victim(self, skip)`` *(required)*
        Name the block to evict now, without removing it (``on_remove`` follows), or ``None`` when
        nothing can go: every cached block is in flight (``None`` while a block could go is a
        ``PluginError``). Never a block in ``skip``: blocks still in flight in the timed engine, which the
        level cannot evict (an empty frozenset otherwise; when the named block is in flight the level
        calls again with it added).
    ``on_remove(self, block, evicted)`` *(required)*
        ``block`` leaves the cache: ``evicted`` (it was the victim) or for another reason (consumed by a
        hit, invalidated, handed to another level, or a second chance's removal before its re-insertion).
    ``on_miss(self, block, prefetch)``
        ``block`` is about to be inserted (before room is made): ghost-list lookups. ``prefetch``: it comes
        by prefetch.
    ``demote(self, block)``
        Move ``block`` to the eviction end (level options ``du`` and exclusive caching); a level using
        them with a policy that lacks it stops with an error.
    ``on_prefetch_cached(self, block, rank)``
        A prefetch run named ``block``, already cached, at ``rank`` in the run.
    """

    attach: Callable[[int], None] | None = None
    on_hit: Callable[[int], None] | None = None
    on_insert: Callable[[int, bool, int | None, int], None] | None = None
    victim: Callable[[frozenset[int] | set[int]], int | None] | None = None
    on_remove: Callable[[int, bool], None] | None = None
    on_miss: Callable[[int, bool], None] | None = None
    demote: Callable[[int], None] | None = None
    on_prefetch_cached: Callable[[int, int], None] | None = None

    def __init__(self, **params: Any) -> None:
        _no_params(self, params)
