"""prefetchsim: caching and prefetching in multi-level storage hierarchies, on real I/O traces.

Quick start::

    import prefetchsim as ps
    tr = ps.open_trace("../shared/traces/arc/OLTP.lis.zst")  # format detected from name and content
    r = ps.simulate(tr, levels=[ps.Level("5%", policy="lru", prefetcher="obl"),
                                ps.Level("2x", policy="arc")])
    r.summary          # dict of the first level's metrics
    r.to_pandas()      # one row per level
    df = ps.sweep("grid.toml")                         # a grid of runs on all cores, stored in grid.sqlite
    ps.plot.mrc(df)                                    # matplotlib Axes

The model runs in Rust (``prefetchsim._core``); this package is the Python face: traces, configs,
results, sweeps, plots and the ``prefetchsim`` command line.
"""

from ._core import ConfigError, PluginError, PrefetchsimError, TraceError, __version__
from ._registry import formats, generators, policies, prefetchers, result_schema
from ._sim import Level, Result, device_bench, devices, simulate, simulate_many
from ._events import read_events
from ._trace import Trace, merge_traces, open_trace, synthetic
from ._grid import SweepPlan
from ._mrc import mrc
from ._grid import plan as sweep_plan
from ._sweep import results, sweep
from . import plot
from . import plugin

# The core's exceptions are defined in `prefetchsim._core` with module `prefetchsim`: they are raised,
# pickled and shown as `prefetchsim.X`.

__all__ = [
    "ConfigError",
    "Level",
    "PluginError",
    "PrefetchsimError",
    "Result",
    "SweepPlan",
    "Trace",
    "TraceError",
    "__version__",
    "device_bench",
    "devices",
    "formats",
    "generators",
    "merge_traces",
    "mrc",
    "open_trace",
    "policies",
    "plot",
    "plugin",
    "prefetchers",
    "read_events",
    "result_schema",
    "results",
    "simulate",
    "simulate_many",
    "sweep",
    "sweep_plan",
    "synthetic",
]
