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
from ._sim import Level, Result, RunNote, device_bench, devices, simulate, simulate_many
from ._events import read_events
from ._trace import Trace, merge_traces, open_trace, synthetic
from ._typeerror import ConfigTypeError

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._grid import SweepPlan
    from ._mrc import mrc
    from ._grid import plan as sweep_plan
    from ._sweep import results, sweep
    from . import plot, plugin

# Sweeps, curves and plots are imported on first use (PEP 562): `prefetchsim sim` and `import prefetchsim`
# then skip multiprocessing, concurrent.futures and the sweep store, a large part of the command's start-up.
_LAZY = {
    "SweepPlan": ("._grid", "SweepPlan"),
    "sweep_plan": ("._grid", "plan"),
    "mrc": ("._mrc", "mrc"),
    "results": ("._sweep", "results"),
    "sweep": ("._sweep", "sweep"),
    "plot": (".plot", None),
    "plugin": (".plugin", None),
}


def __getattr__(name: str):  # noqa: ANN202 - the type is the attribute's
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'prefetchsim' has no attribute {name!r}") from None
    import importlib

    mod = importlib.import_module(module, __name__)
    value = mod if attr is None else getattr(mod, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


# The core's exceptions are defined in `prefetchsim._core` with module `prefetchsim`: they are raised,
# pickled and shown as `prefetchsim.X`.

__all__ = [
    "ConfigError",
    "ConfigTypeError",
    "Level",
    "PluginError",
    "PrefetchsimError",
    "Result",
    "RunNote",
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
