"""Sweep specs and their grids: a run spec plus a ``[sweep]`` table of axes, expanded into runs with
stable identities.

The rules (the README's "Sweeps" section says the same for users):

* Axes are exactly the entries of the ``[sweep]`` table: an axis path (``"level[0].size"``,
  ``"level[1].policy"``, ``"level[1].pfc"``, ``"level"``, ``"engine.warmup_requests"``, ``"trace"``,
  ``"trace.params.seed"``) mapped to a list of values; a ``level`` axis is the column ``hierarchy``. Every
  value outside ``[sweep]`` is taken literally, lists included, so a config value that is a list never
  becomes an axis by accident.
* ``[sweep.named.COLUMN]`` is an axis of labelled bundles (``LRU = { "level[0].policy" = "lru" }``): each
  label sets several paths at once, and the rows get a column ``COLUMN`` holding the label.
* ``[[sweep.exclude]]`` drops the grid points that match every key of one rule (a key is an axis path or
  a named axis; a list of values matches any of them).
* ``[sweep.presets.NAME]`` holds axes, named axes and exclude rules that replace (or add to) the base
  ones when the preset is chosen.
* A row's identity is a hash of (trace identity, canonical config). Trace identity: the trace spec without
  its path, plus, for a file, its size and a SHA-256 of its first and last MiB (a copy on a cluster
  node, or a renamed file, is the same trace; a changed one is not). Canonical config: the core's
  parsed form (sizes parsed, component names resolved, hierarchy defaults filled in), then every value
  equal to its default removed and keys sorted, so a spelled-out default never makes a new run.
  Component parameters are compared as written.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import numbers
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from . import _core
from ._sim import _TRACE_KEYS as _TRACE_TABLE_KEYS
from ._sim import _trace_from_table
from ._trace import Trace
from ._typeerror import ConfigTypeError

MiB = 1 << 20
_RESERVED = ("named", "exclude", "presets")
#: The most grid points one spec may plan (before exclusions and duplicates are dropped).
MAX_GRID_POINTS = 1_000_000
_SEG = re.compile(r"([A-Za-z_][A-Za-z0-9_\-]*)((?:\[\d+\])*)$")
#: The keys a trace axis may set: those of a [trace] table (one list, in _sim), and the row label.
_TRACE_KEYS = (*_TRACE_TABLE_KEYS, "label")


def _err(msg: str) -> _core.ConfigError:
    return _core.ConfigError(msg)


def _dumps(v: Any) -> str:
    """Canonical JSON: sorted keys, no spaces (the text that is hashed)."""
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def _clone(v: Any) -> Any:
    """A copy of JSON-like data (dicts, lists, scalars); several times faster than copy.deepcopy, which
    matters when a grid has 100,000 points."""
    if isinstance(v, dict):
        return {k: _clone(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clone(x) for x in v]
    return v


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


# ---------------------------------------------------------------- paths


def parse_path(path: str) -> list[str | int]:
    """``"level[0].policy.up_ratio"`` -> ``["level", 0, "policy", "up_ratio"]``."""
    parts: list[str | int] = []
    for seg in str(path).split("."):
        m = _SEG.match(seg.strip())
        if not m:
            raise _err(f"sweep: cannot read axis path {path!r}; write keys joined by dots with list indices "
                       "in brackets, e.g. 'level[0].size', 'engine.warmup_requests', 'trace.params.seed'")
        parts.append(m[1])
        parts.extend(int(i) for i in re.findall(r"\[(\d+)\]", m[2]))
    return parts


#: The column of a ``level`` axis (whole hierarchies): ``level`` is the results column of each row's level.
HIERARCHY_COLUMN = "hierarchy"


def column_name(path: str) -> str:
    """The results column of an axis: ``level[0].size`` -> ``level0_size``, ``level`` -> ``hierarchy``."""
    if path == "level":
        return HIERARCHY_COLUMN
    return re.sub(r"\[(\d+)\]", r"\1", path).replace(".", "_").replace("-", "_")


def _is_component(v: Any) -> bool:
    return isinstance(v, dict) and set(v) == {"name", "params"}


def check_path(path: str, parts: list[str | int], canonical: Mapping[str, Any],
               core_reason: Callable[[], str | None] = lambda: "") -> None:
    """Fail unless ``path`` names a key of the config or a parameter of a component. The core's
    canonical form lists most keys with their defaults, but leaves out optional ones at their default
    (a level's ``pfc``, ``per_client``, ``instances``, ...): for a key it does not list, ``core_reason``
    asks the core whether it takes the axis's value there (None) or why not."""
    if parts[0] == "trace":
        if len(parts) >= 2 and parts[1] not in _TRACE_KEYS:
            raise _err(f"sweep: unknown axis {path!r}: a trace has keys {', '.join(_TRACE_KEYS)}")
        if len(parts) > 2 and parts[1] != "params":
            raise _err(f"sweep: unknown axis {path!r}: only trace.params has sub-keys")
        return
    node: Any = canonical
    walked = ""
    for p in parts:
        if _is_component(node):
            return  # a component's name or parameter: the core checks it against the component
        if isinstance(p, int):
            if not isinstance(node, list):
                raise _err(f"sweep: unknown axis {path!r}: {walked or 'the config'} is not a list")
            if p >= len(node):
                n = len(node)
                have = f"{walked}[0]" if n == 1 else f"{walked}[0]..{walked}[{n - 1}]"
                raise _err(f"sweep: unknown axis {path!r}: {walked} has {n} entr{'y' if n == 1 else 'ies'} ({have})")
            node, walked = node[p], f"{walked}[{p}]"
            continue
        if not isinstance(node, dict):
            raise _err(f"sweep: unknown axis {path!r}: {walked} is a value, not a table")
        if p not in node:
            reason = core_reason()
            if reason is None:
                return
            if reason:
                raise _err(f"sweep: axis {path!r}: {reason}")
            where = walked or "a run config"
            keys = ", ".join(sorted(k for k in node)) if walked else ", ".join(["trace", *sorted(node)])
            raise _err(f"sweep: unknown axis {path!r}: {where} has no key {p!r}; its keys: {keys}")
        node, walked = node[p], f"{walked}.{p}" if walked else p


def set_path(doc: dict[str, Any], parts: list[str | int], value: Any, path: str) -> None:
    """Set ``value`` at ``parts`` in ``doc``, creating tables on the way; a component written as a name
    (``policy = "lru"``) becomes a table when a parameter is set on it."""
    node: Any = doc
    for i, p in enumerate(parts[:-1]):
        nxt = parts[i + 1]
        if isinstance(p, int):
            if not isinstance(node, list) or p >= len(node):
                n = len(node) if isinstance(node, list) else 0
                raise _err(f"sweep: axis {path!r}: the config has {n} entries there")
            if node[p] is None:
                node[p] = {}
            node = node[p]
            continue
        child = node.get(p)
        if child is None:
            child = [] if isinstance(nxt, int) else {}
            node[p] = child
        elif isinstance(child, str) and not isinstance(nxt, int):
            child = {"name": child}
            node[p] = child
        node = child
    last = parts[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or last >= len(node):
            n = len(node) if isinstance(node, list) else 0
            raise _err(f"sweep: axis {path!r}: the config has {n} entries there")
    node[last] = _clone(value)


# ---------------------------------------------------------------- canonical configs and trace identity


@cache
def _defaults() -> dict[str, Any]:
    return json.loads(_core.canonical_config(json.dumps({"level": [{"size": 1}]})))


def _strip(v: Any, d: Any) -> Any:
    """Drop from ``v`` every key whose value equals the default ``d``'s, recursively."""
    if isinstance(v, dict) and isinstance(d, dict):
        out = {}
        for k, x in v.items():
            if k in d:
                if x == d[k]:
                    continue
                x = _strip(x, d[k])
            out[k] = x
        return out
    return v


def canonical_config(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The config's canonical form (see the module doc); raises ConfigError naming a bad key."""
    full = json.loads(_core.canonical_config(json.dumps(doc)))
    d = _defaults()
    level_default = {k: v for k, v in d["level"][0].items() if k != "size"}
    out = _strip({k: v for k, v in full.items() if k != "level"}, {k: v for k, v in d.items() if k != "level"})
    out["level"] = [_strip(lv, level_default) for lv in full["level"]]
    return out


def _file_digest(path: str, size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read(MiB))
        if size > MiB:
            f.seek(max(MiB, size - MiB))
            h.update(f.read(MiB))
    return h.hexdigest()


@dataclass(frozen=True)
class TraceRef:
    """A trace of a sweep: what to open, how to show it, and what identifies it."""

    trace_id: str
    label: str
    spec: dict[str, Any]
    identity: dict[str, Any]

    def open(self) -> Trace:
        return Trace(self.spec)


def trace_ref(trace: Trace, label: str | None = None) -> TraceRef:
    """Identity of a trace: its spec without the path, plus the file's size and head/tail digest."""
    spec = trace.spec
    if str(spec.get("format", "")).lower() == "synthetic":
        identity = {"spec": spec}
        name = spec["path"]
    else:
        path = spec["path"]
        try:
            size = os.path.getsize(path)
            digest = _file_digest(path, size)
        except OSError as e:
            raise _core.TraceError(f"{path}: {e.strerror or e}") from None
        identity = {"spec": {k: v for k, v in spec.items() if k != "path"}, "size": size, "head_tail_sha256": digest}
        name = os.path.basename(path)
    return TraceRef(_digest(_dumps(identity)), label or name, spec, identity)


def run_id(trace_id: str, canonical: Mapping[str, Any]) -> str:
    """The stable identity of a run (128 bits of SHA-256 as hex)."""
    return _digest(trace_id + "\n" + _dumps(canonical))


# ---------------------------------------------------------------- the spec


@dataclass
class _Axes:
    axes: dict[str, list[Any]] = field(default_factory=dict)
    named: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    exclude: list[dict[str, Any]] = field(default_factory=list)


def _parse_axes(tbl: Mapping[str, Any], where: str) -> _Axes:
    out = _Axes()
    for key, v in tbl.items():
        if key in _RESERVED:
            continue
        if not isinstance(v, list) or not v:
            raise _err(f"{where}.{key}: an axis needs a non-empty list of values, got {v!r}")
        parse_path(key)
        out.axes[key] = v
    named = tbl.get("named", {})
    if not isinstance(named, Mapping):
        raise _err(f"{where}.named: expected tables of labelled bundles, e.g. [{where}.named.scheme]")
    for name, bundles in named.items():
        if not isinstance(bundles, Mapping) or not bundles:
            raise _err(f"{where}.named.{name}: expected a table of label = {{ path = value, ... }}")
        for label, sets in bundles.items():
            if not isinstance(sets, Mapping) or not sets:
                raise _err(f"{where}.named.{name}.{label}: expected a table of path = value")
            for p in sets:
                parse_path(p)
        out.named[name] = {str(k): dict(v) for k, v in bundles.items()}
    excl = tbl.get("exclude", [])
    if isinstance(excl, Mapping):
        excl = [excl]
    if not isinstance(excl, list) or not all(isinstance(r, Mapping) and r for r in excl):
        raise _err(f"{where}.exclude: expected [[{where}.exclude]] tables of axis = value(s)")
    out.exclude = [dict(r) for r in excl]
    return out


def read_spec(spec: str | os.PathLike[str] | Mapping[str, Any]) -> tuple[dict[str, Any], str | None, str]:
    """The spec document, the directory relative trace paths are read from, and a name for it."""
    if isinstance(spec, Mapping):
        return copy.deepcopy(dict(spec)), None, "sweep"
    p = os.fspath(spec)
    try:
        with open(p, "rb") as f:
            doc = tomllib.load(f)
    except FileNotFoundError:
        raise _err(f"{p}: no such sweep spec") from None
    except tomllib.TOMLDecodeError as e:
        raise _err(f"{p}: {e}") from None
    return doc, os.path.dirname(os.path.abspath(p)), os.path.splitext(os.path.basename(p))[0]


@dataclass
class Run:
    """One run of a grid: a trace, a hierarchy config, its identity and the axis labels of its row."""

    run_id: str
    trace_id: str
    config: dict[str, Any]
    canonical: dict[str, Any]
    labels: dict[str, Any]
    index: int = 0  # position in the full grid (kept by shards): the order results are read back in


@dataclass
class Task:
    """The unit of work: one trace and a batch of configs, run by one worker with `simulate_many`."""

    index: int
    trace: TraceRef
    runs: list[Run]


class SweepPlan:
    """The expanded grid of a sweep spec: its runs in grid order, their traces and axis columns."""

    def __init__(self, runs: list[Run], traces: dict[str, TraceRef], columns: list[str], name: str,
                 spec: dict[str, Any], preset: str | None, duplicates: int = 0, shard: tuple[int, int] | None = None,
                 excluded: int = 0):
        self.runs = runs
        self.traces = traces
        self.columns = columns
        self.name = name
        self.spec = spec
        self.preset = preset
        self.duplicates = duplicates
        self.excluded = excluded
        self.shard_of = shard

    def __len__(self) -> int:
        return len(self.runs)

    def __repr__(self) -> str:
        sh = f", shard {self.shard_of[0]}/{self.shard_of[1]}" if self.shard_of else ""
        return (f"SweepPlan({self.name!r}: {len(self.runs)} runs over {len(self.traces)} trace(s), "
                f"axes {self.columns}{sh})")

    def shard(self, k: int, n: int) -> SweepPlan:
        """Shard ``k`` of ``n`` (0 <= k < n): the runs whose identity hash is k modulo n. The split
        depends only on each run's identity, so it is the same on every machine and a run keeps its
        shard when the spec grows."""
        for name, v in (("K", k), ("N", n)):
            # 1.5 or True were truncated to a shard silently.
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise ConfigTypeError(f"shard: {name} must be a whole number, not {v!r}")
        k, n = int(k), int(n)
        if n < 1 or not 0 <= k < n:
            raise _err(f"shard: {k}/{n} is not a shard; write K/N with 0 <= K < N (e.g. 0/4 .. 3/4)")
        runs = [r for r in self.runs if int(r.run_id[:15], 16) % n == k]
        used = {r.trace_id for r in runs}
        return SweepPlan(runs, {t: v for t, v in self.traces.items() if t in used}, self.columns, self.name,
                         self.spec, self.preset, self.duplicates, (k, n), self.excluded)

    def tasks(self, batch_size: int | None = None, workers: int = 1) -> list[Task]:
        """Batches of runs over one trace each. By default a trace's runs are cut into about four
        batches per worker (at most 32 runs each): big enough to share the trace's footprint pass, small
        enough to balance the workers and lose little on an interrupt."""
        by_trace: dict[str, list[Run]] = {}
        for r in self.runs:
            by_trace.setdefault(r.trace_id, []).append(r)
        tasks: list[Task] = []
        for tid, runs in by_trace.items():
            b = batch_size or max(1, min(32, math.ceil(len(runs) / (4 * max(1, workers)))))
            for i in range(0, len(runs), b):
                tasks.append(Task(len(tasks), self.traces[tid], runs[i:i + b]))
        return tasks

    def grid(self):
        """The grid as a pandas DataFrame: run_id, trace and the axis columns, in grid order."""
        import pandas as pd

        return pd.DataFrame([{"run_id": r.run_id, "trace": self.traces[r.trace_id].label, **r.labels}
                             for r in self.runs], columns=["run_id", "trace", *self.columns])


def _label_value(v: Any) -> Any:
    """How an axis value shows in its column: scalars as they are, a bare component by its name,
    anything else as compact JSON."""
    if isinstance(v, Trace):
        return os.path.basename(v.path)
    if isinstance(v, dict) and set(v) == {"name"}:
        return v["name"]
    if isinstance(v, (dict, list)):
        return _dumps(v)
    return v


def _as_trace_value(v: Any) -> Any:
    return v.spec if isinstance(v, Trace) else v


def _first_values(ax: Any) -> dict[str, Any]:
    """Each axis path of parsed axes `ax` at its first value (plain axes, then the named axes' paths),
    the values at which paths are checked against the config."""
    first: dict[str, Any] = {k: v[0] for k, v in ax.axes.items()}
    for bundles in ax.named.values():
        for sets in bundles.values():
            for p, v in sets.items():
                first.setdefault(p, v)
    return first


def plan(spec: str | os.PathLike[str] | Mapping[str, Any], preset: str | None = None) -> SweepPlan:
    """Read a sweep spec (TOML path or dict) and expand its grid. Every config is checked by the core
    here, before anything runs: a bad key or value is a ConfigError naming it."""
    doc, base_dir, name = read_spec(spec)
    sweep_tbl = doc.pop("sweep", {})
    if not isinstance(sweep_tbl, Mapping):
        raise _err("sweep: expected a table of axis = [values]")
    ax = _parse_axes(sweep_tbl, "sweep")
    presets = sweep_tbl.get("presets", {})
    if preset is not None:
        if preset not in presets:
            have = ", ".join(sorted(presets)) if presets else "none (add [sweep.presets.NAME] tables)"
            raise _err(f"sweep.presets: unknown preset {preset!r}; this spec defines: {have}")
        p = _parse_axes(presets[preset], f"sweep.presets.{preset}")
        ax.axes.update(p.axes)
        ax.named.update(p.named)
        ax.exclude += p.exclude

    # Bundles of named axes and plain axes must not set the same key twice.
    owner: dict[str, str] = {k: f"sweep.{k}" for k in ax.axes}
    for n, bundles in ax.named.items():
        paths = {p for sets in bundles.values() for p in sets}
        for p in sorted(paths):
            if p in owner:
                raise _err(f"sweep.named.{n}: sets {p!r}, which {owner[p]} also sets")
        for p in paths:
            owner[p] = f"sweep.named.{n}"

    # Check every path against the config as the core reads it (defaults filled in), with whole-table
    # axes (`level`, `engine`, ...) at their first value.
    first = _first_values(ax)
    base = {k: v for k, v in doc.items() if k != "trace"}
    for k, v in first.items():
        parts = parse_path(k)
        if len(parts) == 1 and parts[0] != "trace":
            base[parts[0]] = copy.deepcopy(v)
    if "level" not in base:
        raise _err("level: the sweep spec has no [[level]] table and no 'level' axis")
    try:
        canon0 = json.loads(_core.canonical_config(json.dumps(base)))
    except _core.ConfigError as e:
        raise _err(f"sweep: the base config: {e}") from None
    for p in owner:
        parts = parse_path(p)
        check_path(p, parts, canon0, lambda: _core_reason(base, parts, first[p], p))
    # The presets not chosen are checked too: a misspelt axis in one passed until the day it was chosen.
    if isinstance(presets, Mapping):
        for pname, ptbl in presets.items():
            if pname == preset:
                continue
            for k, v in _first_values(_parse_axes(ptbl, f"sweep.presets.{pname}")).items():
                parts = parse_path(k)
                if len(parts) == 1 or parts[0] == "trace":
                    continue  # whole tables and the trace are read only when the preset is chosen
                try:
                    check_path(k, parts, canon0, lambda: _core_reason(base, parts, v, k))
                except _core.ConfigError as e:
                    raise _err(f"sweep.presets.{pname} (not chosen): {e}") from None

    # Columns: one per plain axis (the trace axis is the `trace` column), one per named axis.
    columns: list[str] = []
    col_of: dict[str, str] = {}
    for k in ax.axes:
        if k == "trace":
            continue
        c = column_name(k)
        if c in columns:
            raise _err(f"sweep.{k}: its column {c!r} is also another axis's")
        col_of[k] = c
        columns.append(c)
    for n in ax.named:
        if n in columns:
            raise _err(f"sweep.named.{n}: column {n!r} is also another axis's")
        columns.append(n)
    from ._store import reserved_columns

    clash = [c for c in columns if c in reserved_columns()]
    if clash:
        raise _err(f"sweep: axis column {clash[0]!r} would hide the results column of that name; "
                   "rename the named axis")

    # Exclude rules: every key an axis, every value one of its values.
    dims: list[tuple[str, list[Any]]] = [(k, v) for k, v in ax.axes.items()]
    dims += [(n, list(b)) for n, b in ax.named.items()]
    values_of = dict(dims)
    rules: list[list[tuple[int, list[int]]]] = []
    index_of = {k: i for i, (k, _) in enumerate(dims)}
    for i, rule in enumerate(ax.exclude):
        r = []
        for key, want in rule.items():
            if key not in values_of:
                raise _err(f"sweep.exclude[{i}]: {key!r} is not an axis of this sweep; its axes: "
                           f"{', '.join(values_of) or 'none'}")
            vals = values_of[key]
            if want in vals:
                hits = [j for j, v in enumerate(vals) if v == want]
            elif isinstance(want, list) and want and all(w in vals for w in want):
                hits = [j for j, v in enumerate(vals) if v in want]
            else:
                raise _err(f"sweep.exclude[{i}].{key}: {want!r} is not one of the axis values {vals!r}")
            r.append((index_of[key], hits))
        rules.append(r)

    # A grid is expanded and checked point by point (about 13 us and 1 KB each): refuse one that cannot
    # fit before spending minutes and gigabytes on it (10^8 points were still expanding after 60 s, on the
    # way to about 100 GB).
    points = math.prod(len(v) for _, v in dims)
    if points > MAX_GRID_POINTS:
        sizes = " x ".join(f"{len(v)} ({k})" for k, v in dims)
        raise _err(f"sweep: the grid has {points:,} points ({sizes}), more than the {MAX_GRID_POINTS:,} one spec "
                   "may plan; narrow the axes or split the spec into several")

    # Expand.
    traces_by_key: dict[str, TraceRef] = {}
    canon_cache: dict[str, tuple[dict[str, Any], str]] = {}
    sizes_checked: set[tuple[str, int]] = set()
    runs: list[Run] = []
    seen: set[str] = set()
    duplicates = excluded = 0
    parsed = {k: parse_path(k) for k in owner}
    base_trace = doc.get("trace")
    for combo in itertools.product(*[range(len(v)) for _, v in dims]):
        if any(all(combo[d] in hits for d, hits in r) for r in rules):
            excluded += 1
            continue
        sets: dict[str, Any] = {}
        labels: dict[str, Any] = {}
        for d, j in enumerate(combo):
            key, vals = dims[d]
            if key in ax.named:
                label = list(ax.named[key])[j]
                sets.update(ax.named[key][label])
                labels[key] = label
            else:
                sets[key] = vals[j]
                if key in col_of:
                    labels[col_of[key]] = _label_value(vals[j])
        point = {k: _clone(v) for k, v in doc.items() if k != "trace"}
        point["trace"] = _clone(_as_trace_value(base_trace)) if base_trace is not None else None
        for key in sorted(sets, key=lambda k: len(parsed[k])):
            parts = parsed[key]
            if parts[0] == "trace":
                if len(parts) == 1:
                    point["trace"] = _clone(_as_trace_value(sets[key]))
                    continue
                if point["trace"] is None:
                    raise _err(f"sweep.{key}: there is no [trace] table to set it in")
                if isinstance(point["trace"], str):
                    point["trace"] = {"path": point["trace"]}
            set_path(point, parts, sets[key], key)
        tr_value = point.pop("trace")
        if tr_value is None:
            raise _err("trace: the sweep spec has no [trace] table and no 'trace' axis")
        tkey = _dumps(tr_value)
        tref = traces_by_key.get(tkey)
        if tref is None:
            try:
                tref = _resolve_trace(tr_value, base_dir)
            except (_core.ConfigError, _core.TraceError) as e:
                # As for the level and engine axes: a bad value on a trace axis names its grid point.
                if not labels:
                    raise
                raise type(e)(f"sweep: {e} (grid point {point_text(labels)})") from None
            _refuse_relabelled_trace(tref, traces_by_key.values())
            traces_by_key[tkey] = tref
        ckey = _dumps(point)
        got = canon_cache.get(ckey)
        if got is None:
            try:
                canon = canonical_config(point)
            except _core.ConfigError as e:
                raise _err(f"sweep: {e} (grid point {point_text(labels)})") from None
            got = (canon, _dumps(canon))
            canon_cache[ckey] = got
        block_size = tref.spec.get("block_size", 4096)
        if (ckey, block_size) not in sizes_checked:
            # Sizes that are wrong only once resolved (0 blocks, "1B", "2x" on the first level): before
            # anything runs too, not a failed run of a started sweep. Shares of the footprint wait for it.
            try:
                _core.check_sizes(ckey, block_size)
            except _core.ConfigError as e:
                raise _err(f"sweep: {e} (grid point {point_text(labels)})") from None
            sizes_checked.add((ckey, block_size))
        rid = _digest(tref.trace_id + "\n" + got[1])
        if rid in seen:
            duplicates += 1
            continue
        seen.add(rid)
        runs.append(Run(rid, tref.trace_id, point, got[0], labels, len(runs)))
    traces = {t.trace_id: t for t in traces_by_key.values()}
    return SweepPlan(runs, traces, columns, name, {**doc, "sweep": dict(sweep_tbl)}, preset, duplicates,
                     excluded=excluded)


def point_text(labels: Mapping[str, Any], trace: str | None = None) -> str:
    """A grid point as its errors name it: its axis values (``level0_size='1%', level0_policy='arc'``),
    after its trace's label when one is given."""
    items = ([("trace", trace)] if trace is not None else []) + list(labels.items())
    return ", ".join(f"{k}={v!r}" for k, v in items)


def _refuse_relabelled_trace(new: TraceRef, known: Iterable[TraceRef]) -> None:
    """Two values of the trace axis with one identity (a file under two paths or labels) are one run per
    config, which has one trace label: the first point's label vanished from the grid and the results.
    Refused, naming both; the same file twice under one label is a plain duplicate, run once."""
    for old in known:
        if old.trace_id == new.trace_id and old.label != new.label:
            raise _err(f"trace: {new.label!r} ({new.spec.get('path')}) and {old.label!r} ({old.spec.get('path')}) "
                       "are the same trace (a run is keyed by the trace's identity: format, options, size and "
                       "contents, not its path or label), so they would be one run under one label; list it once")


def _core_reason(base: Mapping[str, Any], parts: list[str | int], value: Any, path: str) -> str | None:
    """None when the core takes ``value`` at ``parts`` of the base config, else its reason (which names
    the key and the keys that table has)."""
    doc = _clone(dict(base))
    set_path(doc, parts, value, path)
    try:
        _core.canonical_config(json.dumps(doc))
    except _core.ConfigError as e:
        return str(e)
    return None


def _resolve_trace(value: Any, base_dir: str | None) -> TraceRef:
    """A trace axis value or [trace] table -> TraceRef; strings are file paths (format detected)."""
    if isinstance(value, str):
        value = {"path": value}
    if not isinstance(value, Mapping):
        raise _err(f"trace: expected a file path or a trace table, got {value!r}")
    t = dict(value)
    label = t.pop("label", None)
    if str(t.get("format", "")).lower() == "synthetic":
        unknown = sorted(set(t) - {"path", "format", "block_size", "params"})
        if unknown:
            raise _err(f"trace.{unknown[0]}: unknown key for a synthetic trace; valid: path, format, block_size, "
                       "params, label")
        t.setdefault("params", {})
        t.setdefault("block_size", 4096)
        tr = Trace(t)
    else:
        # Relative paths are relative to the spec file, or for a dict spec to the current directory,
        # made absolute so that workers with another working directory find the file.
        tr = _trace_from_table(t, base_dir or os.getcwd())
    # Opening reads nothing but a format's first bytes: unknown generators, parameters and formats fail
    # here, before any run.
    _core.head(tr._json(), 0)
    return trace_ref(tr, label)
