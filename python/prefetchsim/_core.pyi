"""Types of the Rust extension `prefetchsim._core` (crates/prefetchsim-py), checked against the built
module by `mypy.stubtest` in scripts/test.sh.

Configs, trace specs and results cross the boundary as JSON text; the Python layer (`prefetchsim`)
parses them. `progress` callbacks receive the number of requests read so far."""

import os
from collections.abc import Callable
from typing import Any, SupportsIndex

__all__ = [
    "PrefetchsimError",
    "ConfigError",
    "TraceError",
    "PluginError",
    "simulate",
    "mrc_curve",
    "simulate_sampled",
    "footprint",
    "head",
    "check_cache_settings",
    "file_written_by",
    "registry",
    "result_schema",
    "trace_info",
    "convert",
    "device_random_read_ms",
    "check_config",
    "device_bench",
    "devices",
    "device_capacity_sectors",
    "canonical_config",
    "check_sizes",
    "share_blocks",
    "integrated",
    "single_disk",
    "serve",
    "__version__",
]

__version__: str

class PrefetchsimError(Exception):
    """Base class of every prefetchsim error."""

class ConfigError(PrefetchsimError):
    """A configuration names an unknown key, value or component, or an impossible size."""

class TraceError(PrefetchsimError):
    """A trace cannot be opened, detected or parsed (the message names file, line/record and field)."""

class PluginError(PrefetchsimError):
    """A plugin's callback (a Python prefetcher or policy named `module:Class`) raised or returned a bad
    value during a run; the message names the config key, the plugin and the Python traceback."""

_Progress = Callable[[int], Any] | None
_Count = SupportsIndex | None

# Simulation (sim.rs)
def simulate(
    trace_json: str,
    configs_json: str,
    progress: _Progress = None,
    threads: _Count = None,
    events: str | None = None,
) -> str: ...
def integrated(trace_json: str, cache: SupportsIndex, fetch_time: SupportsIndex, limit: _Count = None) -> str: ...
def single_disk(trace_json: str, config_json: str, fetch_time: SupportsIndex) -> str: ...

# Miss-ratio curves and sampled simulation (mrc.rs)
def mrc_curve(
    trace_json: str,
    sampling_json: str,
    sizes: list[int] | None = None,
    shares: list[float] | None = None,
    points: int = 100,
    limit: _Count = None,
    progress: _Progress = None,
) -> str: ...
def simulate_sampled(
    trace_json: str,
    configs_json: str,
    sample_json: str,
    limit: _Count = None,
    progress: _Progress = None,
) -> str: ...

# Traces (trace.rs)
def footprint(trace_json: str) -> int: ...
def trace_info(trace_json: str, window: _Count = None, gap: _Count = None) -> str: ...
def convert(
    trace_json: str,
    output: str,
    to: str = "oracle_general",
    per_block: bool = False,
    rebase_time: bool = False,
) -> str: ...
def head(trace_json: str, n: SupportsIndex) -> list[tuple[int, str, int, int, int, int]]: ...
def check_cache_settings() -> None: ...
def file_written_by(trace_json: str, output: str) -> str | None: ...

# Registries and configs (registry.rs)
def registry() -> str: ...
def result_schema() -> str: ...
def check_config(config_json: str) -> None: ...
def canonical_config(config_json: str) -> str: ...
def check_sizes(config_json: str, block_size: int) -> None: ...
def share_blocks(share: float, footprint: int) -> int: ...

# Devices (device.rs)
def device_random_read_ms(
    model: str, sectors: _Count = None, count: _Count = None, seed: _Count = None
) -> float: ...
def device_bench(device_json: str, seed: int = 1) -> str: ...
def device_capacity_sectors(device_json: str) -> int: ...
def devices() -> str: ...

# The NBD server (serve.rs): runs until a signal handler raises; returns the report as JSON
def serve(
    config_json: str,
    backing: str | os.PathLike[str],
    *,
    socket: str | os.PathLike[str] | None = None,
    listen: str | None = None,
    block_size: int = 4096,
    emulate: str | None = None,
    record: str | os.PathLike[str] | None = None,
    direct: bool = False,
    max_connections: int = 64,
    ready: Callable[[str], Any] | None = None,
) -> str: ...
