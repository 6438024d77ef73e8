"""The papers' experiments, one function (and one ``prefetchsim reproduce NAME`` command) each."""

from __future__ import annotations

from . import mithril, split

EXPERIMENTS = {
    "split": (split.run, "Varki, Hubbe & Merchant: LRU vs StreamLRU vs SplitLRU (1:1, 2:1) on the three mixes"),
    "mithril": (mithril.run, "Yang et al.: LRU, PG, AMP and Mithril over LRU/FIFO/AMP; parameter studies"),
}

__all__ = ["EXPERIMENTS", "mithril", "split"]
