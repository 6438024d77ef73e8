"""Python plugins used by tests/test_plugins.py and benches/plugin_speed.py (importable as
`plugin_examples:...` with tests/ on sys.path)."""

from __future__ import annotations

from collections import OrderedDict

from prefetchsim.plugin import PLACE_LRU, Policy, Prefetcher


class Nothing(Prefetcher):
    """Never prefetches: the cost of the call alone."""

    def on_access(self, block, nblocks, misses, prefetch_hits):
        return None


class NextN(Prefetcher):
    """The `n` blocks after every request, as one run (the built-in `ra` with mode `pa`, p = n)."""

    def __init__(self, n: int = 4):
        self.n = n

    def on_access(self, block, nblocks, misses, prefetch_hits):
        end = block + nblocks
        return range(end, end + self.n)


class NextNList(NextN):
    """NextN answering with a list of blocks (gathered into one run by the engine)."""

    def on_access(self, block, nblocks, misses, prefetch_hits):
        end = block + nblocks
        return [end + i for i in range(self.n)]


class TaggedObl(Prefetcher):
    """One-block lookahead, tagged: on a miss or the first use of a prefetched block (the built-in `obl`)."""

    def on_access(self, block, nblocks, misses, prefetch_hits):
        if misses or prefetch_hits:
            return block + nblocks
        return None


class Lru(Policy):
    """Least recently used; ignores `after` (runs of one block only, or none)."""

    def __init__(self):
        self.order: OrderedDict[int, None] = OrderedDict()  # LRU first

    def on_hit(self, block):
        self.order.move_to_end(block)

    def on_insert(self, block, prefetched, after, place):
        self.order[block] = None
        if place == PLACE_LRU:
            self.order.move_to_end(block, last=False)

    def victim(self, skip):
        for b in self.order:
            if b not in skip:
                return b
        return None

    def on_remove(self, block, evicted):
        del self.order[block]

    def demote(self, block):
        self.order.move_to_end(block, last=False)


class LruNoDemote(Lru):
    """Lru without demote (the level options that need it stop the run)."""

    demote = None


class Recorder(Prefetcher):
    """Records what the engine tells it: the geometry and the evictions (`Recorder.last` is the newest)."""

    last: "Recorder | None" = None

    def __init__(self):
        self.attached = None
        self.evicted = 0
        self.evicted_unused = 0
        Recorder.last = self

    def attach(self, capacity, block_bytes):
        self.attached = (capacity, block_bytes)

    def on_access(self, block, nblocks, misses, prefetch_hits):
        return block + nblocks if misses else None

    def on_evict(self, block, prefetched, used):
        self.evicted += 1
        self.evicted_unused += prefetched and not used
