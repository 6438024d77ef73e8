"""Simulation: configs in, results out. The Rust core validates every key and runs the model."""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _core
from ._numbers import as_int, int_arg, json_default
from ._registry import run_totals
from ._events import write_events
from ._trace import Trace, merge_traces, open_trace
from ._typeerror import ConfigTypeError

Size = str | int | float


@dataclass
class Level:
    """One cache level.

    ``size``: blocks (``1000``), bytes (``"64MiB"``), a share of the trace footprint (``0.05`` or
    ``"5%"``) or a multiple of the level above (``"2x"``). ``policy`` and ``prefetcher`` are registered
    names (``prefetchsim.policies()``, ``prefetchsim.prefetchers()``) with optional parameters.
    ``per_client=True`` makes the level one cache per client; ``instances=K`` makes it K servers, picked
    by ``route`` (``"client"``: client mod K, or ``"stripe"``: by units of ``stripe_blocks`` blocks).
    """

    size: Size
    policy: str = "lru"
    prefetcher: str = "none"
    name: str | None = None
    policy_params: dict[str, Any] = field(default_factory=dict)
    prefetcher_params: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    per_client: bool = False
    instances: int = 1
    # None: not given (the core's defaults, "client" and 64), so that a route or stripe unit given where it
    # cannot apply (beside per_client) is refused even when it spells out the default.
    route: str | None = None
    stripe_blocks: int | None = None

    def to_config(self) -> dict[str, Any]:
        """The ``[[level]]`` table for this level."""
        for key in ("policy", "prefetcher"):
            if not isinstance(getattr(self, key), str):
                raise ConfigTypeError(
                    f"Level.{key} must be a name (str: a registered one or a plugin's 'module:Class'), not "
                    f"{type(getattr(self, key)).__name__}; give "
                    f"parameters as {key}_params={{...}}, e.g. Level('5%', {key}=NAME, {key}_params={{'preset': ...}}), "
                    f"or a level table: levels=[{{'size': '5%', '{key}': {{'name': NAME, ...}}}}]")
        for key in ("policy_params", "prefetcher_params", "options"):
            if not isinstance(getattr(self, key), Mapping):
                raise ConfigTypeError(f"Level.{key} must be a dict, not {type(getattr(self, key)).__name__}")
        for key in ("policy", "prefetcher"):
            if "name" in getattr(self, f"{key}_params"):  # it replaced the component (obl ran as amp)
                raise _core.ConfigError(f"Level.{key}_params: 'name' names the component; give it as {key}=NAME")
        if not isinstance(self.per_client, bool):  # "false" made a per-client level
            raise ConfigTypeError(f"Level.per_client must be True or False, not {type(self.per_client).__name__}")
        for key in ("instances", "stripe_blocks"):
            if as_int(getattr(self, key)) is None and not (key == "stripe_blocks" and self.stripe_blocks is None):  # instances=True meant 1
                raise ConfigTypeError(f"Level.{key} must be an integer, not {type(getattr(self, key)).__name__}")
        d: dict[str, Any] = {
            "size": self.size,
            "policy": {"name": self.policy, **self.policy_params},
            "prefetcher": {"name": self.prefetcher, **self.prefetcher_params},
        }
        if self.name is not None:
            d["name"] = self.name
        if self.options:
            d["options"] = dict(self.options)
        # Only what differs from the defaults, so that existing configs (and their result keys) are unchanged.
        if self.per_client:
            d["per_client"] = True
        if self.instances != 1:
            d["instances"] = self.instances
        if self.route is not None:
            d["route"] = self.route
        if self.stripe_blocks is not None:
            d["stripe_blocks"] = self.stripe_blocks
        return d


class RunNote(UserWarning):
    """A run's note (`Result.notes`): what a component wants known that is not an error. ``simulate`` and
    ``simulate_many`` give each as this warning; ``warnings.simplefilter("ignore", ps.RunNote)`` silences
    them, and the notes stay in the results."""


RunNote.__module__ = "prefetchsim"  # as users import it (``ps.RunNote``)


class Result:
    """The result of one run: per-level records (a fixed schema defined in Rust) and run totals.

    Timed runs (``engine={"kind": "timed"}``) also carry run-level timing metrics: response times,
    device, scheduler and network (``timing``, flattened into ``summary``), per-client response times
    (``clients``) and the read response-time histogram (``rt_histogram``). Time-free runs have none of
    them (``timing`` is None). Levels of several caches add one record per cache (``instances``,
    ``per_client()``).
    """

    def __init__(self, raw: dict[str, Any], config: dict[str, Any], trace: Trace):
        self.raw = raw
        self.config = config
        self.trace = trace

    @property
    def levels(self) -> list[dict[str, Any]]:
        """One flat record per level, top level first (schema: ``LevelReport::record`` in Rust)."""
        return [dict(lv) for lv in self.raw["levels"]]

    @property
    def timing(self) -> dict[str, Any] | None:
        """The run-level timing record of a timed run (schema: ``TimingReport::record`` in Rust), else None."""
        t = self.raw.get("timing")
        return dict(t) if t is not None else None

    @property
    def clients(self) -> list[dict[str, Any]]:
        """Per-client response times of a timed run (empty for time-free runs)."""
        return [dict(c) for c in self.raw.get("clients", [])]

    @property
    def instances(self) -> list[dict[str, Any]]:
        """Per-cache records of levels made of several caches (``per_client = true`` or ``instances = K``):
        ``level``, ``name``, ``instance``, ``client`` (per-client levels) and the level record's counters
        and ratios. Empty when every level is one cache. The level's own record is their sum."""
        return [dict(i) for i in self.raw.get("instances", [])]

    def per_client(self, level: int = 0) -> dict[int, dict[str, Any]]:
        """The records of a per-client level by client id (empty if that level is not per client)."""
        return {i["client"]: i for i in self.instances if i["level"] == level and "client" in i}

    @property
    def rt_histogram(self) -> list[tuple[int, int, int]]:
        """Read response times of a timed run: ``(lowest_ns, highest_ns, count)`` per non-empty bucket."""
        return [tuple(b) for b in self.raw.get("rt_histogram", [])]

    @property
    def summary(self) -> dict[str, Any]:
        """The run in one flat record: the trace, the run totals, the run-level timing metrics (timed runs
        only) and the first level's record.

        The run totals that count the whole trace are ``trace_requests`` and ``trace_blocks`` (warm-up
        included; ``Result.raw``'s ``requests`` and ``blocks``), beside ``warmup_requests``,
        ``stopped_early``, ``skipped_records`` and ``time_backwards``: the names the CLI's rows and the
        results database give them. ``requests`` is the first level's counter, as in ``levels[0]``: the
        requests that reached it after the warm-up (its blocks are ``demand_accesses``). Before, the
        summary had a whole-trace ``blocks`` beside that post-warm-up ``requests``, and ``blocks /
        requests`` was no mean request size.
        """
        s = {"trace": self.trace.path, **run_totals(self.raw)}
        s.update(self.timing or {})
        s.update(self.levels[0])
        return s

    @property
    def notes(self) -> list[str]:
        """What the levels' components want known that is not an error, each prefixed with its level: a
        model's assumption the trace broke (STEP's disk model smaller than the trace's addresses, `opt` over
        requests of several blocks). `simulate` and `simulate_many` also give each as a `RunNote` warning;
        the command line prints them on stderr."""
        return list(self.raw.get("notes", []))

    @property
    def skipped(self) -> dict[str, Any]:
        """What reading the trace skipped (``skip_bad``) or noticed: ``records`` skipped, the first
        ``messages``, and ``time_backwards`` (records earlier than the one before, kept in file order)."""
        return {
            "records": self.raw["skipped_records"],
            "messages": list(self.raw["skipped_messages"]),
            "time_backwards": self.raw["time_backwards"],
        }

    def to_dict(self) -> dict[str, Any]:
        return {"summary": self.summary, "levels": self.levels, "config": self.config}

    def to_pandas(self):
        """One row per level, with the trace and the run totals under their `summary` names
        (``trace_requests``, ``trace_blocks``, ``warmup_requests`` ...; ``requests`` is each level's), and a
        timed run's response times and device figures (`timing`), repeated on each row."""
        import pandas as pd

        base = {"trace": self.trace.path, **run_totals(self.raw)}
        return pd.DataFrame([{**base, **(self.timing or {}), **lv} for lv in self.levels])

    def __repr__(self) -> str:
        rows = [
            f"{lv['name']}: {lv['policy']}+{lv['prefetcher']} {lv['capacity_blocks']} blocks "
            f"hit {lv['hit_ratio']:.4f} miss {lv['miss_ratio']:.4f}"
            for lv in self.levels
        ]
        t = self.timing
        if t is not None:
            rows.append(f"rt mean {t['rt_mean_ms']:.3f} ms p99 {t['rt_p99_ms']:.3f} ms")
        return f"Result({self.raw['requests']} requests; " + "; ".join(rows) + ")"


# The top-level tables of a run config.
_RUN_TABLES = ("trace", "level", "engine", "link", "device", "scheduler")


def load_config(config: str | os.PathLike[str] | Mapping[str, Any], *,
                with_trace: bool = True) -> tuple[dict[str, Any], Trace | None]:
    """Read a run config (TOML path or dict); returns the hierarchy part and the ``[trace]`` if any.

    Relative trace paths in a TOML file are relative to the file's directory. With ``with_trace=False``
    the ``[trace]`` table is dropped unread (``prefetchsim serve``: the clients are the trace).
    """
    base = None
    if isinstance(config, Mapping):
        doc = dict(config)
    else:
        if not isinstance(config, (str, os.PathLike)):  # os.fspath's TypeError named no argument
            raise ConfigTypeError(f"config must be a TOML path or a dict, not {type(config).__name__}")
        p = os.fspath(config)
        import tomllib  # on first use: `prefetchsim sim` reads no config and skips its import

        try:
            with open(p, "rb") as f:
                doc = tomllib.load(f)
        except FileNotFoundError:
            raise _core.ConfigError(f"{p}: no such config file") from None
        except IsADirectoryError:
            raise _core.ConfigError(f"{p}: is a directory; give a run config (a TOML file)") from None
        except tomllib.TOMLDecodeError as e:
            raise _core.ConfigError(f"{p}: {e}") from None
        except UnicodeDecodeError:
            raise _core.ConfigError(f"{p}: not a text file; give a run config (a TOML file)") from None
        base = os.path.dirname(os.path.abspath(p))
        unknown = [k for k in doc if k not in _RUN_TABLES]
        if unknown:
            hint = " (a sweep spec: run it with `prefetchsim sweep`)" if unknown[0] == "sweep" else ""
            # A top-level key (`bogus = 1`) is not a table: it was reported as "unknown table [bogus]".
            what = (f"unknown table [{unknown[0]}]" if isinstance(doc[unknown[0]], (dict, list))
                    else f"unknown top-level key {unknown[0]!r}")
            raise _core.ConfigError(f"{p}: {what}{hint}; a run config has "
                                    f"{', '.join(f'[{t}]' for t in _RUN_TABLES)}")
    tr = doc.pop("trace", None)
    trace = None
    if tr is not None and with_trace:
        trace = _trace_from_table(tr, base)
    return doc, trace


def _trace_from_table(tr: Mapping[str, Any], base: str | None, key: str = "trace") -> Trace:
    if isinstance(tr, Mapping) and "merge" in tr:
        t = dict(tr)
        members = t.pop("merge")
        if not isinstance(members, list) or not members:
            raise _core.ConfigError(f"{key}.merge: a list of trace tables, at least one")
        traces = [_trace_from_table(m, base, f"{key}.merge[{i}]") for i, m in enumerate(members)]
        spec = merge_traces(*traces, label=t.pop("path", None)).spec
        spec.update(t)  # block_size and the rest; the core checks every key
        return Trace(spec)
    if not isinstance(tr, Mapping) or "path" not in tr:
        raise _core.ConfigError(
            f"{key}: needs a `path` (a file, or a generator name with format = 'synthetic') or `merge = [...]`"
        )
    t = dict(tr)
    if str(t.get("format", "")).lower() == "synthetic":
        return Trace(t)
    unknown = sorted(set(t) - set(_TRACE_KEYS))
    if unknown:
        raise _core.ConfigError(
            f"{key}.{unknown[0]}: unknown key; valid keys: merge, {', '.join(sorted(_TRACE_KEYS))}"
        )
    _check_trace_types(t, key)
    path = os.fspath(t.pop("path"))
    if base is not None and not os.path.isabs(path):
        path = os.path.join(base, path)
    fmt = t.pop("format", None)
    params = t.pop("params", {})
    return open_trace(path, fmt, **t, **params)


# The keys of a trace file's table and the types they take (None among them: open_trace's default; no
# types: open_trace checks the value against its choices). A table is a config: a wrong type is a
# ConfigError naming the key (the CLI's exit 2), not open_trace's TypeError for Python callers.
_TRACE_KEYS: dict[str, tuple[tuple[type, ...], str] | None] = {
    "path": ((str, os.PathLike), "a string (the trace file)"),
    "format": ((str, type(None)), "a string (a format name)"),
    "params": ((Mapping,), "a table (the format's parameters)"),
    "block_size": ((int,), "a whole number of bytes"),
    "sector_size": ((int,), "a whole number of bytes"),
    "skip_bad": ((int,), "a whole number of records"),
    "id_bytes": ((int, type(None)), "a whole number of bytes"),
    "cache": ((bool,), "a boolean (true or false, unquoted)"),
    "mode": None,
    "ops": None,
    "client_from": None,
    "volumes": None,
}


def _check_trace_types(t: Mapping[str, Any], key: str) -> None:
    """Each key of a trace table has its type; bools are not numbers (``block_size = true``)."""
    for k, v in t.items():
        expected = _TRACE_KEYS[k]
        if expected is None:
            continue
        types, what = expected
        if not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
            raise _core.ConfigError(f"{key}.{k}: {v!r} is not {what}")


def share_blocks(share: float, footprint: int) -> int:
    """A share of the footprint in blocks, by the core's rule for a level's size (truncated, as
    libCacheSim does: 1% of 23,361 blocks is 233; 0 under one block), for callers that measured the
    footprint once (a sweep's workers, ``mrc``)."""
    return int(_core.share_blocks(float(share), int(footprint)))


def _dumps(what: str, value: Any) -> str:
    """JSON for the core; NaN and infinity (which JSON cannot hold) are a ConfigError naming the field
    (``what`` is the path of ``value``; empty: ``value`` is the config itself)."""
    try:
        return json.dumps(value, allow_nan=False, default=json_default)
    except TypeError as e:  # a value JSON cannot hold at all
        raise _core.ConfigError(f"{what or 'config'}: {e}") from None
    except ValueError as e:
        where = _non_finite(value, what)
        if where is None:
            raise _core.ConfigError(f"{what or 'config'}: {e}") from None
        raise _core.ConfigError(f"{where[0]}: {where[1]!r} is not a valid value (NaN and infinity are not)") from None


def _non_finite(value: Any, path: str) -> tuple[str, float] | None:
    """The path and value of the first NaN or infinity in ``value`` (dicts and lists), if any."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, value)
    if isinstance(value, dict):
        items = ((f"{path}.{k}" if path else str(k), v) for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    return next((hit for p, v in items if (hit := _non_finite(v, p)) is not None), None)


def _configs_json(docs: list[dict[str, Any]]) -> str:
    """The configs as JSON for the core: a single one (``simulate``, ``prefetchsim run``) names a bad
    value by its own key path, as the core's errors do (``configs[0].link.alpha_ms`` named a list the
    user never wrote); of several, ``configs[i].`` says which."""
    if len(docs) == 1:
        return f"[{_dumps('', docs[0])}]"
    return _dumps("configs", docs)


def _as_trace(trace: Trace | str | os.PathLike[str]) -> Trace:
    if isinstance(trace, Trace):
        return trace
    if not isinstance(trace, (str, os.PathLike)):
        raise ConfigTypeError(f"trace must be a Trace, a path or a path-like, not {type(trace).__name__}")
    return open_trace(trace)


def _component(value: str | Mapping[str, Any]) -> str | dict[str, Any]:
    """A policy or prefetcher as a level table takes it: a name, or a table with ``name`` and parameters."""
    return value if isinstance(value, str) else dict(value)


def _link_table(link: Mapping[str, Any] | Sequence[float]) -> dict[str, Any]:
    """``[link]``: a table of ``LinkParams`` keys, or ``(alpha, beta)`` in seconds (per message, per page)."""
    if isinstance(link, Mapping):
        return dict(link)
    if isinstance(link, Sequence) and not isinstance(link, str) and len(link) == 2:
        alpha, beta = link
        return {"alpha_ms": float(alpha) * 1e3, "beta_ms_per_page": float(beta) * 1e3}
    raise _core.ConfigError("link: give a table of link parameters or (alpha, beta) in seconds")


def _hierarchy(
    config, levels, engine, size, policy, prefetcher, link=None, device=None, scheduler=None
) -> tuple[dict[str, Any], Trace | None]:
    trace = None
    given = [name for name, v in (("a config", config), ("levels=", levels), ("size=", size)) if v is not None]
    if len(given) > 1:
        raise _core.ConfigError(f"simulate: give one of a config, levels= or size=, not {' and '.join(given)}")
    if size is None and (policy is not None or prefetcher is not None):
        raise _core.ConfigError("simulate: policy= and prefetcher= describe the single level of size=; in a config "
                                "or levels= each level names its own")
    if config is not None:
        doc, trace = load_config(config)
    else:
        if levels is None:
            if size is None:
                raise _core.ConfigError("simulate: give a config, levels=[Level(...)], or size=")
            for key, value in (("policy", policy), ("prefetcher", prefetcher)):
                if value is not None and not isinstance(value, (str, Mapping)):
                    raise ConfigTypeError(f"simulate: {key}= takes a name or a table {{'name': ..., params}}, "
                                    f"not {type(value).__name__}; several levels: levels=[Level(...), ...]")
            levels = [{"size": size, "policy": "lru" if policy is None else _component(policy),
                       "prefetcher": "none" if prefetcher is None else _component(prefetcher)}]
        elif isinstance(levels, (str, bytes, Mapping)) or not isinstance(levels, Iterable):
            # A dict was read as the list of its keys and a str as its characters, with errors naming neither.
            raise ConfigTypeError(f"simulate: levels= takes a list of Level(...) or level tables (dicts), not "
                                  f"{type(levels).__name__}; one level: levels=[...] or size=")
        doc = {"level": [_level_table(i, lv) for i, lv in enumerate(levels)]}
    for key, value in (("engine", engine), ("scheduler", scheduler)):
        if value is not None and not isinstance(value, Mapping):
            raise ConfigTypeError(f"simulate: {key}= takes a table (dict) of [{key}] keys, not {type(value).__name__}"
                                  + ("; the timed engine: engine={'kind': 'timed'}" if key == "engine" else ""))
    if device is not None and not isinstance(device, (str, Mapping)):
        raise ConfigTypeError(f"simulate: device= takes a preset name or a table (dict) of [device] keys, not "
                              f"{type(device).__name__}")
    if engine is not None:
        doc["engine"] = {**doc.get("engine", {}), **engine}
    if link is not None:
        doc["link"] = _link_table(link)
    if device is not None:
        doc["device"] = device if isinstance(device, str) else dict(device)
    if scheduler is not None:
        doc["scheduler"] = dict(scheduler)
    return doc, trace


def _level_table(i: int, level: Any) -> dict[str, Any]:
    """One entry of ``levels=`` as a ``[[level]]`` table; another type is a ConfigTypeError naming it."""
    if isinstance(level, Level):
        return level.to_config()
    if isinstance(level, Mapping):
        return dict(level)
    raise ConfigTypeError(f"simulate: levels[{i}] must be a Level(...) or a level table (dict), not "
                          f"{type(level).__name__}")


def simulate(
    trace: Trace | str | os.PathLike[str] | None = None,
    config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    *,
    levels: Iterable[Level | Mapping[str, Any]] | None = None,
    engine: Mapping[str, Any] | None = None,
    size: Size | None = None,
    policy: str | Mapping[str, Any] | None = None,
    prefetcher: str | Mapping[str, Any] | None = None,
    link: Mapping[str, Any] | Sequence[float] | None = None,
    device: str | Mapping[str, Any] | None = None,
    scheduler: Mapping[str, Any] | None = None,
    progress: Callable[[int], Any] | None = None,
    events: str | os.PathLike[str] | None = None,
) -> Result:
    """Replay ``trace`` through a hierarchy and return its `Result`.

    The hierarchy is a config (a TOML path or a dict with ``level`` and ``engine``, as in a run config),
    or ``levels=[Level(...), ...]``, or a single level by ``size=``, ``policy=``, ``prefetcher=``: exactly
    one of the three (two are a ConfigError, never a silent choice).

    Args:
        trace: a `Trace` (``open_trace``, ``synthetic``) or a path (format detected); when None,
            the config's ``[trace]`` table.
        config: a run config: a TOML path or a dict with ``level`` (and ``engine``, ``link`` ...).
        levels: the levels, top (client) first: `Level` objects or ``[[level]]`` tables.
        engine: the ``[engine]`` table, e.g. ``{"warmup_requests": 10_000}`` or
            ``{"kind": "timed", "replay": "open"}``; merged over the config's.
        size: one level's size: blocks (``1000``), bytes (``"64MiB"``), a share of the footprint
            (``0.05``, ``"5%"``).
        policy: one level's replacement policy: a name (``"arc"``) or ``{"name": ..., params}``.
        prefetcher: one level's prefetcher: a name (``"obl"``) or ``{"name": "mithril", "preset":
            "libcachesim"}``.
        link: timed runs: the network between levels, ``{"alpha_ms": 6.0, "beta_ms_per_page": 0.03}``
            or ``(alpha, beta)`` in seconds.
        device: timed runs: the device under the last level, a preset (``"cheetah9lp"``) or
            ``{"name": ..., overrides}``.
        scheduler: timed runs: its I/O scheduler, e.g. ``{"policy": "deadline"}``.
        progress: called about ten times a second with the number of requests read so far (counting the
            footprint pass when a size is a share of the footprint).
        events: write the run's per-block event log to this file: CSV (``.csv.zst``/``.csv.gz``
            compressed) or ``.parquet`` (with pyarrow); it appears only when complete (docs/events.md).

    Returns:
        The run's `Result`: ``levels`` (one record per level), ``summary`` (the run's totals,
        ``trace_requests`` and ``trace_blocks`` for the whole trace, the first level's metrics with its
        own ``requests`` and, for timed runs, response times), ``to_pandas()``.

    Raises:
        ConfigError: a bad key, name or value in the hierarchy; the message names it
            (``level[0].prefetcher.lookahead: ...``).
        TraceError: the trace cannot be read; the message names the file, the line or record and the
            field.
        ConfigTypeError: an argument of the wrong type, naming it (a ConfigError that is also a
            TypeError).

    Example:
        ```python
        import prefetchsim as ps

        tr = ps.synthetic("oltp-like", requests=20_000, seed=1)
        r = ps.simulate(tr, size="5%", policy="lru", prefetcher="obl")
        print(round(r.summary["hit_ratio"], 4))
        two = ps.simulate(tr, levels=[ps.Level("5%", prefetcher="obl"), ps.Level("2x", policy="arc")])
        two.to_pandas()[["name", "hit_ratio"]]
        ```
    """
    doc, cfg_trace = _hierarchy(config, levels, engine, size, policy, prefetcher, link, device, scheduler)
    tr = _as_trace(trace) if trace is not None else cfg_trace
    if tr is None:
        raise _core.ConfigError("simulate: no trace given and the config has no [trace] table")
    r = _run_configs(tr, [doc], progress, 0, events)[0]
    _warn_notes([r])
    return r


def simulate_many(
    trace: Trace | str | os.PathLike[str],
    configs: Iterable[Mapping[str, Any]],
    *,
    progress: Callable[[int], Any] | None = None,
    threads: int = 0,
    events: str | os.PathLike[str] | None = None,
) -> list[Result]:
    """Run several hierarchy configs over one trace, in parallel threads (0 = all cores).

    The trace is decoded once (up to 2**25 requests; a longer one is read again per config) and the
    footprint, when a size needs it, measured once. Configs that are one plain LRU, FIFO or CLOCK level
    (default parameters, no prefetcher) differing only in size are computed together in one pass, each
    result equal to its run alone; a batch of only those, sized in blocks, streams the trace through
    that pass without keeping a decoded copy. Results come back in config order.
    ``events`` (one config only) writes its per-block event log, as in `simulate`.
    """
    tr = _as_trace(trace)
    threads = int_arg("threads", threads)
    if not 0 <= threads <= 4096:
        raise _core.ConfigError(f"threads: {threads} is out of range (0 = all cores, at most 4096)")
    if isinstance(configs, (str, bytes, Mapping)):
        raise ConfigTypeError("configs must be an iterable of hierarchy configs (dicts), not a single one")
    results = _run_configs(tr, [dict(c) for c in configs], progress, threads, events)
    _warn_notes(results)
    return results


def _run_configs(tr: Trace, docs: list[dict[str, Any]], progress: Callable[[int], Any] | None, threads: int,
                 events: str | os.PathLike[str] | None) -> list[Result]:
    """The runs of `simulate_many`, its arguments checked, without its warnings."""
    if progress is not None and not callable(progress):
        raise ConfigTypeError(f"progress must be callable, not {type(progress).__name__}")
    if events is None:
        raw = json.loads(_core.simulate(tr._json(), _configs_json(docs), progress, threads))
    else:
        if len(docs) != 1:
            raise _core.ConfigError(f"events: an event log records one run, not {len(docs)}")
        raw = json.loads(write_events(events, lambda path: _core.simulate(
            tr._json(), _configs_json(docs), progress, threads, path)))
    return [Result(r, d, tr) for r, d in zip(raw, docs, strict=True)]


def _warn_notes(results: Sequence[Result]) -> None:
    """Each distinct note of `results` once, as a `RunNote` at the caller's line."""
    for note in dict.fromkeys(n for r in results for n in r.notes):
        warnings.warn(note, RunNote, stacklevel=3)


def devices() -> dict[str, str]:
    """The device presets: name -> summary."""
    return {name: summary for name, summary in json.loads(_core.devices())}


def device_capacity_sectors(device: str | Mapping[str, Any] = "cheetah9lp") -> int:
    """Capacity of a device (a preset name or ``{"name": ..., overrides}``) in 512-byte sectors."""
    spec = device if isinstance(device, str) else dict(device)
    return int(_core.device_capacity_sectors(json.dumps(spec)))


def device_bench(device: str | Mapping[str, Any] = "cheetah9lp", seed: int = 1) -> list[dict[str, Any]]:
    """Service-time statistics of a device on the standard patterns (isolated and closed-loop random
    reads, seek distances, sequential streams, Poisson arrivals), one row per pattern (ms)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise _core.ConfigError(f"seed: {seed!r} is not a whole number from 0 to 2**64-1")
    spec = device if isinstance(device, str) else dict(device)
    return json.loads(_core.device_bench(json.dumps(spec), seed))
