"""Plots of results (sweep rows, ``Result.to_pandas()``, experiment frames, CSV exports).

Every function takes a pandas DataFrame, draws on ``ax`` (a new pyplot figure when None) and returns the
matplotlib ``Axes``, labelled with units, with a legend when there is more than one series, and log
scales where the quantity spans decades. matplotlib is imported on first use
(``pip install 'prefetchsim[plot]'``).

==================  ====================================================================================
``mrc``             hit/miss-ratio curve against cache size, one line per algorithm
``response_time``   a response-time metric (``metric=``, e.g. ``rt_mean_ms``) per case and scheme, bars or lines
``unused_prefetch`` prefetched blocks never used, on a log scale
``level_hit_ratios`` hit ratio of each level per case
``improvement``     PFC-style heatmap: improvement (%) of a metric of each scheme over a baseline per case;
                    ``improvement_table`` gives the numbers
``timeseries``      metrics of one or more runs against time (a DataFrame with a time column)
``line``            any metric against any column, one line per hue value (what the others build on)
==================  ====================================================================================

Defaults follow the results schema: single-level plots use level 0 when a ``level`` column is present,
and the hue is whichever of ``scheme``, ``policy``, ``prefetcher`` and ``trace`` vary. When several rows
fall on one point of one line, or the rows of one line differ in a column other than x and the one
that moves x (two seeds), the function says which columns still vary, instead of drawing a zigzag.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from typing import Any

from ._atomic import atomic_path, check_writable
from ._deps import require

__all__ = [
    "improvement",
    "improvement_table",
    "label",
    "level_hit_ratios",
    "line",
    "mrc",
    "new_figure",
    "response_time",
    "savefig",
    "timeseries",
    "unused_prefetch",
]

_LABELS = {
    "capacity_blocks": "cache size (blocks)",
    "capacity_bytes": "cache size (bytes)",
    "cache_blocks": "cache size (blocks)",
    "share": "cache size (% of footprint)",
    "hit_ratio": "hit ratio",
    "miss_ratio": "miss ratio",
    "prefetch_hit_ratio": "prefetch hit ratio (prefetch hits / accesses)",
    "prefetch_hit_rate": "prefetch hit rate (hits / requests)",
    "rt_model_split_ms": "mean response time (ms), Split model",
    "hit_ratio_all": "hit ratio (incl. upper-level prefetches)",
    "precision": "prefetch precision (used / issued)",
    "coverage": "prefetch coverage",
    "unused_prefetch": "unused prefetched blocks",
    "prefetch_issued": "prefetched blocks",
    "prefetch_used": "used prefetched blocks",
    "evictions": "evictions (blocks)",
    "fetched_blocks": "blocks fetched from below",
    "trace_requests": "requests",
    "requests": "requests",
}
_UNITS = (("_ms", "ms"), ("_us", "µs"), ("_ns", "ns"), ("_s", "s"), ("_pct", "%"), ("_blocks", "blocks"),
          ("_bytes", "bytes"), ("_mib", "MiB"), ("_mb_s", "MB/s"), ("_iops", "IO/s"))
_RT_NAMES = {"rt": "response time", "mean": "mean", "p50": "median", "p95": "95th percentile",
             "p99": "99th percentile", "max": "maximum", "model": "model", "split": "(Split proxy)"}
_HUE_CANDIDATES = ("scheme", "algorithm", "policy", "prefetcher", "trace")
# Columns that never tell cases apart (provenance, run totals, the Split experiment's constants).
_NOT_CASES = {"run_id", "trace_id", "config", "trace_spec", "sweep", "grid_index", "version", "host", "pid",
              "task_wall_s", "finished_at", "runs_executed", "name", "level", "stopped_early", "warmup_requests",
              "trace_blocks", "trace_requests", "skipped_records", "time_backwards", "disk_mean_ms", "seed",
              "requests", "generator"}


def _mpl():
    return require("matplotlib", "plotting")


def _pyplot():
    _mpl()
    import matplotlib.pyplot as plt

    return plt


def label(col: str) -> str:
    """An axis label with units for a results column (``rt_mean_ms`` -> ``mean response time (ms)``)."""
    if col in _LABELS:
        return _LABELS[col]
    if col.startswith("rt_"):
        parts = col.split("_")
        unit = dict(_UNITS).get("_" + parts[-1], "")
        words = [_RT_NAMES.get(p, p) for p in parts[1:-1] if p]
        return " ".join(words + ["response time"]) + (f" ({unit})" if unit else "")
    for suffix, unit in _UNITS:
        if col.endswith(suffix):
            return f"{col[: -len(suffix)].replace('_', ' ')} ({unit})"
    m = re.fullmatch(r"level(\d+)_(.+)", col)
    if m:  # an axis column of a sweep: level0_size -> "L1 size"
        return f"L{int(m[1]) + 1} {m[2].replace('_', ' ')}"
    if col.endswith("_share") or col == "share":
        return f"{col.replace('_', ' ')} (%)"
    return col.replace("_", " ")


def _is_share(col: str) -> bool:
    return col == "share" or col.endswith("_share")


def _lower_is_better(metric: str) -> bool:
    return metric.startswith("rt_") or "miss" in metric or "unused" in metric or metric.endswith(
        ("_ms", "_us", "_ns", "_s", "latency"))


def new_figure(ncols: int = 1, nrows: int = 1, figsize: tuple[float, float] | None = None):
    """A figure without pyplot (for files: no GUI backend, nothing kept alive): ``(fig, axes)``."""
    _mpl()
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize or (6.0 * ncols, 4.0 * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=True)
    return fig, axes


def check_image_path(path: str | os.PathLike[str]) -> None:
    """Raise ValueError (an unsupported format, by the extension) or OSError (no folder, not writable)
    where `savefig` would, without drawing: a command checks its image file before its work."""
    _mpl()
    from matplotlib.backend_bases import FigureCanvasBase

    ext = os.path.splitext(os.fspath(path))[1].lstrip(".").lower()
    supported = FigureCanvasBase.get_supported_filetypes()
    if ext and ext not in supported:  # no extension: matplotlib's default format (png)
        raise ValueError(f"format {ext!r} is not supported; use one of {', '.join(sorted(supported))}")
    check_writable(path)


def check_image_option(option: str, path: str) -> None:
    """:func:`check_image_path` for a command's option, before its work: a ConfigError naming the option
    (``mrc --plot x.txt`` and ``plot -o x.txt`` failed only after the curve or the figure was made, and
    the format's error did not name the option)."""
    from . import _core

    try:
        check_image_path(path)
    except (ValueError, OSError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise _core.ConfigError(f"{option} {path}: {why}") from None


def savefig(ax_or_fig: Any, path: str | os.PathLike[str], dpi: int = 120) -> str:
    """Save the figure of ``ax_or_fig`` to ``path`` (format from the extension)."""
    fig = getattr(ax_or_fig, "figure", ax_or_fig)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi)
    return os.fspath(path)


def _axes(ax):
    if ax is not None:
        return ax
    return _pyplot().subplots(figsize=(6.4, 4.2), layout="constrained")[1]


def _level(df, level: int | None):
    """The rows of ``level`` when the results hold several levels (a level they do not hold is an error,
    not an empty plot); results of one level are drawn whatever ``level`` says."""
    if level is not None and "level" in df.columns and df["level"].nunique() > 1:
        have = sorted(int(v) for v in df["level"].dropna().unique())
        if level not in have:
            raise ValueError(f"level {level}: the results hold levels {', '.join(map(str, have))}")
        return df[df["level"] == level]
    return df


def _need(df, *cols: str | None) -> None:
    missing = [c for c in cols if c is not None and c not in df.columns]
    if missing:
        raise ValueError(f"no column {missing[0]!r} in the results; columns: {', '.join(map(str, df.columns))}")


def _auto_hue(df, exclude: Sequence[str]) -> list[str]:
    varying = [c for c in _HUE_CANDIDATES if c in df.columns and c not in exclude and df[c].nunique(dropna=False) > 1]
    if "scheme" in varying:
        varying = [c for c in varying if c not in ("policy", "prefetcher", "algorithm")]
    return varying


def _hue_cols(df, hue: str | Sequence[str] | None, exclude: Sequence[str]) -> list[str]:
    if hue is None:
        return _auto_hue(df, exclude)
    cols = [hue] if isinstance(hue, str) else list(hue)
    _need(df, *cols)
    return cols


def _hue_values(df, cols: list[str]):
    """(series label per row, ordered unique labels)."""
    if not cols:
        lab = df.index.map(lambda _: "")
    elif len(cols) == 1:
        lab = df[cols[0]].astype(str)
    else:
        lab = df[cols].astype(str).agg(" + ".join, axis=1)
    return lab, list(dict.fromkeys(lab))


def _check_unique(df, keys: list[str], what: str) -> None:
    dup = df.duplicated(keys, keep=False)
    if not dup.any():
        return
    sub = df[dup]
    cases = set(_case_cols(sub, keys))  # axes of any type (a seed is a number)
    cand = [c for c in sub.columns if c not in keys and c not in _NOT_CASES
            and (sub[c].dtype == object or c.startswith("level") or c in cases)
            and sub.groupby(keys, dropna=False)[c].nunique(dropna=False).max() > 1]
    hint = f"; the rows differ in {', '.join(cand[:6])}: add one to hue= or filter" if cand else ""
    raise ValueError(f"{what}: several rows share one point ({', '.join(keys)}){hint}")


def _check_lines(df, x: str, exclude: Sequence[str], lab, what: str) -> None:
    """Rows of one line may differ only in ``x`` and in the one column that moves it (the size axis
    behind ``capacity_blocks``): another column that varies along a line (two seeds, whose shares give
    slightly different capacities) would be drawn as a zigzag between its values. Columns of fractional
    numbers are taken as measurements (a response time beside the curve's), not as cases."""
    x_is_case = x in _case_cols(df, [])
    rank = df[x].rank(method="dense")
    extra: list[str] = []
    for s in dict.fromkeys(lab):
        sub = df[lab == s]
        varying = _case_cols(sub, [x, *exclude])
        if varying and not x_is_case:
            # The column that explains x best (least spread of x within its values) is the line's own.
            own = min(varying, key=lambda c: rank[sub.index].groupby(sub[c], dropna=False).var(ddof=0).mean())
            varying.remove(own)
        extra += [c for c in varying if c not in extra and sub[c].dtype.kind != "f"]
    if extra:
        raise ValueError(f"{what}: the rows of one line differ in {', '.join(extra)}, not only in {x}: add "
                         f"{'it' if len(extra) == 1 else 'them'} to hue= or filter (e.g. --filter {extra[0]}=...)")


def _tick_labels(ax, texts: list[str]) -> None:
    """Category labels rotated as they need: slanted when a few long ones would touch, upright when many
    would."""
    room = sum(len(t) for t in texts)
    if len(texts) > 12 or room > 80:
        ax.set_xticklabels(texts, rotation=90, fontsize="small")
    elif len(texts) > 6 or room > 40:
        ax.set_xticklabels(texts, rotation=30, ha="right")
    else:
        ax.set_xticklabels(texts)


def _logscale(values) -> bool:
    v = [x for x in values if isinstance(x, (int, float)) and not math.isnan(x)]
    return bool(v) and min(v) > 0 and max(v) / min(v) >= 20


_MARKERS = "osD^vPX*<>"


def _log_axis(axis, set_scale, values: list[float]) -> None:
    """A log axis with plain numbers (0.5, 1, 2, 5 ... rather than 10^0): the data's values as ticks
    when there are few."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    set_scale("log")
    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    if 0 < len(values) <= 12:
        # Values closer than 1/12 of the span (528 and 532 blocks) would print on top of each other.
        gap = math.log(max(values) / min(values)) / 12
        ticks = [values[0]]
        for v in values[1:]:
            if math.log(v / ticks[-1]) >= gap:
                ticks.append(v)
        axis.set_ticks(ticks)
        axis.set_minor_formatter(NullFormatter())
    axis.set_major_formatter(fmt)


def _finish(ax, x: str | None, y: str, nseries: int, hue_cols: list[str], title: str | None,
            xlabel: str | None = None, ylabel: str | None = None, hidden: Sequence[str] = ()) -> None:
    if x is not None:
        ax.set_xlabel(xlabel or label(x))
    ax.set_ylabel(ylabel or label(y))
    if title:
        ax.set_title(title)
    if nseries > 1 or (hue_cols and nseries == 1):
        legend_title = " + ".join(hue_cols) if hue_cols else None
        if hidden:
            legend_title = (legend_title + "\n" if legend_title else "") + f"not drawn (no value > 0): {', '.join(hidden)}"
        if nseries > 3:
            # Beside the axes, where it covers no curve (constrained layout makes room).
            ax.legend(title=legend_title, fontsize="small", title_fontsize="small", loc="upper left",
                      bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
        else:
            ax.legend(title=legend_title, fontsize="small", title_fontsize="small")
    ax.grid(True, which="major", alpha=0.3)


def _numeric_categories(values) -> list[float] | None:
    """Text values that are all numbers (``"5"``, ``"0.1"``: a parameter study's values as strings), as
    numbers; else None."""
    out = []
    for v in values:
        try:
            out.append(float(v))
        except (TypeError, ValueError):
            return None
    return out


def _undefined_precision(df, col: str):
    """Precision is used / issued: undefined, not 0, where nothing was prefetched. Such rows become NaN
    (no point) when the frame says how many prefetches were issued."""
    if col == "precision" and "prefetch_issued" in df.columns:
        return df[col].where(df["prefetch_issued"] > 0)
    return df[col]


def line(df, x: str, y: str | Sequence[str], hue: str | Sequence[str] | None = None, *, ax=None,
         logx: bool | str = "auto", logy: bool = False, level: int | None = 0, marker: str | None = None,
         title: str | None = None, xlabel: str | None = None, ylabel: str | None = None, sort_x: bool = True):
    """``y`` (a column, or several drawn together) against ``x``, one line per ``hue`` value (a column or
    a list of columns). Text x values are categories, kept in order of appearance."""
    ys = [y] if isinstance(y, str) else list(y)
    _need(df, x, *ys)
    df = _level(df, level)
    ax = _axes(ax)
    hue_cols = _hue_cols(df, hue, [x, *ys])
    what = f"plot of {', '.join(ys)} against {x}"
    _check_unique(df, [x, *hue_cols], what)
    lab, series = _hue_values(df, hue_cols)
    _check_lines(df, x, [*hue_cols, *ys], lab, what)
    share = _is_share(x)
    from pandas.api.types import is_numeric_dtype

    numeric_x = is_numeric_dtype(df[x])
    if not numeric_x:
        nums = _numeric_categories(df[x])
        if nums is not None:  # numbers written as text: placed by value, not as evenly spaced categories
            df = df.assign(**{x: nums})
            numeric_x = True
    # Each drawn series: (label, x values, y values). Categories are points, not a line through them.
    drawn: list[tuple[str | None, Any, Any]] = []
    for s in series:
        sub = df[lab == s]
        if sort_x and numeric_x:
            sub = sub.sort_values(x)
        xs = sub[x] * 100 if share and numeric_x else sub[x]
        for col in ys:
            name = " ".join(p for p in (s, label(col) if len(ys) > 1 else "") if p) or None
            drawn.append((name, xs.astype(str) if not numeric_x else xs, _undefined_precision(sub, col)))
    # Series with equal values would hide each other: draw each once, labelled with every name it stands for.
    merged: list[tuple[list[str | None], Any, Any]] = []
    for name, xs, vals in drawn:
        key = (list(xs), [None if v != v else round(float(v), 12) for v in vals])
        for m in merged:
            if (list(m[1]), [None if v != v else round(float(v), 12) for v in m[2]]) == key:
                m[0].append(name)
                break
        else:
            merged.append(([name], xs, vals))
    hidden: list[str] = []
    n = 0
    for names, xs, vals in merged:
        name = " = ".join(str(v) for v in names if v is not None) or None
        if logy and not (vals > 0).any():
            hidden.append(name or "")
            continue
        mk = marker or _MARKERS[n % len(_MARKERS)]
        ax.plot(xs, vals, marker=mk, markersize=4.5, label=name, markerfacecolor="none" if n % 2 else None,
                linestyle="-" if numeric_x else "none")
        n += 1
    if logx == "auto":
        logx = numeric_x and _logscale(list(df[x]))
    if logx:
        vals = sorted({float(v) * (100 if share else 1) for v in df[x] if v == v and float(v) > 0})
        _log_axis(ax.xaxis, ax.set_xscale, vals)
    if not numeric_x:
        cats = list(dict.fromkeys(df[x].astype(str)))
        ax.set_xticks(range(len(cats)))
        _tick_labels(ax, cats)
    if logy:
        ax.set_yscale("log", nonpositive="mask")
    if ylabel is None and len(ys) > 1:
        ylabel = "value"
    _finish(ax, x, ys[0], n, hue_cols or (["metric"] if len(ys) > 1 else []), title, xlabel, ylabel, hidden)
    return ax


def mrc(df, x: str | None = None, y: str = "miss_ratio", hue: str | Sequence[str] | None = None, *, ax=None,
        level: int | None = 0, logx: bool | str = "auto", title: str | None = None, **kw: Any):
    """Hit- or miss-ratio curve (``y="hit_ratio"``) against cache size: ``capacity_blocks`` by default,
    or any size column (``share`` is drawn as % of the footprint). Log x when sizes span decades."""
    if x is None:
        x = next((c for c in ("capacity_blocks", "cache_blocks", "share") if c in df.columns), "capacity_blocks")
    return line(df, x, y, hue, ax=ax, level=level, logx=logx, title=title, **kw)


def _bars(ax, df, x: str, y: str, hue_cols: list[str]) -> int:
    lab, series = _hue_values(df, hue_cols)
    cats = list(dict.fromkeys(df[x]))
    if all(isinstance(c, (int, float)) for c in cats):
        cats = sorted(cats)  # numbers in order; anything else (sizes as "5%", names) as the grid has them
    n = max(1, len(series))
    width = 0.8 / n
    for i, s in enumerate(series):
        sub = df[lab == s]
        vals = dict(zip(sub[x], sub[y]))
        pos = [j + (i - (n - 1) / 2) * width for j in range(len(cats))]
        ax.bar(pos, [vals.get(c, float("nan")) for c in cats], width=width * 0.95, label=s or None)
    ax.set_xticks(range(len(cats)))
    _tick_labels(ax, [str(c) for c in cats])
    return len(series)


def bars(df, x: str, y: str, hue: str | Sequence[str] | None = None, *, ax=None, title: str | None = None,
         xlabel: str | None = None, ylabel: str | None = None):
    """``y`` per category of ``x`` as grouped bars, one bar per ``hue`` value: for categorical parameters,
    where a line through the categories would suggest an order or a trend between them. A missing or NaN
    value leaves its bar out (nothing drawn, not a zero bar)."""
    _need(df, x, y)
    ax = _axes(ax)
    hue_cols = _hue_cols(df, hue, [x, y])
    _check_unique(df, [x, *hue_cols], f"bars of {y} per {x}")
    n = _bars(ax, df, x, y, hue_cols)
    _finish(ax, x, y, n, hue_cols, title, xlabel, ylabel)
    return ax


def _default_x(df, hue_cols: list[str], metric: str) -> str:
    for c in ("case", "trace", "capacity_blocks", "cache_blocks"):
        if c in df.columns and c not in hue_cols and df[c].nunique() > 1:
            return c
    cases = _case_cols(df, [*hue_cols, metric])
    if cases:
        return cases[0]
    return hue_cols[0] if hue_cols else df.columns[0]


def response_time(df, x: str | None = None, metric: str = "rt_mean_ms", hue: str | Sequence[str] | None = None, *,
                  kind: str = "bar", ax=None, level: int | None = 0, logx: bool | str = "auto", logy: bool = False,
                  title: str | None = None):
    """A response-time metric per case (``x``) and scheme (``hue``): grouped bars or lines.

    ``metric`` is any column (the timed engine's ``rt_mean_ms``, the Split proxy ``rt_model_split_ms``);
    a missing one is an error listing the ``rt_*`` columns present.
    """
    if metric not in df.columns:
        have = [c for c in df.columns if str(c).startswith("rt_")]
        raise ValueError(f"no column {metric!r} in the results; response-time columns: {', '.join(have) or 'none'} "
                         "(the instant engine has no time: run the timed engine)")
    df = _level(df, level)
    hue_cols = _hue_cols(df, hue, [metric] + ([x] if x else []))
    x = x or _default_x(df, hue_cols, metric)
    hue_cols = [c for c in hue_cols if c != x]
    if kind == "line":
        return line(df, x, metric, hue_cols, ax=ax, level=None, logx=logx, logy=logy, title=title)
    if kind != "bar":
        raise ValueError(f"kind: 'bar' or 'line', got {kind!r}")
    _need(df, x)
    _check_unique(df, [x, *hue_cols], f"plot of {metric} per {x}")
    ax = _axes(ax)
    n = _bars(ax, df, x, metric, hue_cols)
    if logy:
        ax.set_yscale("log", nonpositive="clip")
    _finish(ax, x, metric, n, hue_cols, title)
    return ax


def unused_prefetch(df, x: str | None = None, y: str = "unused_prefetch", hue: str | Sequence[str] | None = None, *,
                    ax=None, level: int | None = 0, kind: str = "line", title: str | None = None):
    """Prefetched blocks never used, on a log y scale (zeros are left out: log(0) has no place)."""
    _need(df, y)
    if kind == "bar":
        df = _level(df, level)
        hue_cols = _hue_cols(df, hue, [y] + ([x] if x else []))
        x = x or _default_x(df, hue_cols, y)
        hue_cols = [c for c in hue_cols if c != x]
        _check_unique(df, [x, *hue_cols], f"plot of {y} per {x}")
        ax = _axes(ax)
        n = _bars(ax, df, x, y, hue_cols)
        # Bars rise from 0: "mask" would drop every bar, "clip" draws them from the axis' bottom (a zero
        # stays empty).
        ax.set_yscale("log", nonpositive="clip")
        _finish(ax, x, y, n, hue_cols, title)
        return ax
    if x is None:
        x = next((c for c in ("capacity_blocks", "cache_blocks", "share") if c in df.columns), "capacity_blocks")
    return line(df, x, y, hue, ax=ax, level=level, logy=True, title=title)


def level_hit_ratios(df, x: str | None = None, y: str = "hit_ratio", *, ax=None, kind: str = "bar",
                     title: str | None = None):
    """The hit ratio of every level (one bar or line per level, named by the level's name) per case."""
    _need(df, y, "level")
    d = df.copy()
    d["level_label"] = (d["level"].astype(int) + 1).map(lambda i: f"L{i}")
    if "name" in d.columns:
        d["level_label"] = d["level_label"] + d["name"].map(lambda n: "" if str(n).startswith("L") else f" ({n})")
    if x is None:
        cases = _case_cols(d, [y, "level_label"])
        if len(cases) > 1:
            d["case"] = d[cases].astype(str).agg(" / ".join, axis=1)
            x = "case"
        else:
            x = cases[0] if cases else "trace"
    _need(d, x)
    if kind == "line":
        ax = line(d, x, y, "level_label", ax=ax, level=None, title=title)
        ax.get_legend().set_title("level")
        return ax
    _check_unique(d, [x, "level_label"], f"plot of {y} per {x} and level")
    ax = _axes(ax)
    n = _bars(ax, d, x, y, ["level_label"])
    _finish(ax, x, y, n, ["level_label"], title, xlabel=label(x) if x != "case" else "case")
    if ax.get_legend() is not None:
        ax.get_legend().set_title("level")
    return ax


def _case_cols(df, exclude: Sequence[str]) -> list[str]:
    """Columns that tell cases apart: whatever varies and is neither a metric nor provenance."""
    from ._store import level_record_keys

    try:
        metrics = set(level_record_keys())
    except Exception:  # the core is always there; be safe in a plotting helper
        metrics = set()
    out = []
    for c in df.columns:
        if c in exclude or c in _NOT_CASES or c in metrics or c in ("scheme",):
            continue
        if any(str(c).endswith(s) for s, _ in _UNITS) or str(c).endswith(("_ratio", "_rate", "_pct")):
            continue
        if df[c].nunique(dropna=False) > 1:
            out.append(c)
    return out


def improvement_table(df, metric: str, *, scheme: str = "scheme", baseline: str, case: Sequence[str] | None = None,
                      lower_is_better: bool | None = None, level: int | None = 0):
    """Improvement (%) of ``metric`` for each scheme over ``baseline``, per case: a DataFrame with one
    row per case and one column per scheme. Lower-is-better metrics (response times, miss ratios,
    ``rt_*``, ``*_ms``) improve when they fall: ``100 (base - x) / base``; others ``100 (x - base) / base``."""
    _need(df, metric, scheme)
    df = _level(df, level)
    if baseline not in set(df[scheme]):
        have = ", ".join(map(str, df[scheme].unique()))
        raise ValueError(f"baseline {baseline!r} is not a value of {scheme!r}; values: {have}")
    case = list(case) if case is not None else _case_cols(df, [metric, scheme])
    _need(df, *case)
    _check_unique(df, [*case, scheme], f"improvement of {metric}")
    lower = _lower_is_better(metric) if lower_is_better is None else lower_is_better
    idx = case or None
    wide = df.pivot_table(index=idx, columns=scheme, values=metric, aggfunc="first", sort=False) if idx else \
        df.set_index(scheme)[[metric]].T
    base = wide[baseline]
    out = ((base.values[:, None] - wide) if lower else (wide - base.values[:, None])).div(base, axis=0) * 100
    out = out[[c for c in wide.columns if c != baseline]]
    out.columns.name = f"improvement of {metric} over {baseline} (%)"
    return out


def improvement(df, metric: str, *, scheme: str = "scheme", baseline: str, case: Sequence[str] | None = None,
                lower_is_better: bool | None = None, level: int | None = 0, ax=None, annotate: bool = True,
                title: str | None = None):
    """A PFC-style table as a heatmap: rows are cases, columns schemes, cells the improvement (%) of
    ``metric`` over ``baseline`` (green better, red worse, annotated)."""
    import numpy as np

    table = improvement_table(df, metric, scheme=scheme, baseline=baseline, case=case,
                              lower_is_better=lower_is_better, level=level)
    ax = _axes(ax)
    vals = table.to_numpy(dtype=float)
    finite = vals[np.isfinite(vals)]
    lim = float(np.max(np.abs(finite))) if finite.size else 1.0
    lim = lim or 1.0
    im = ax.imshow(vals, cmap="RdYlGn", vmin=-lim, vmax=lim, aspect="auto")
    ax.set_xticks(range(table.shape[1]))
    ax.set_xticklabels([str(c) for c in table.columns], rotation=30 if table.shape[1] > 4 else 0,
                       ha="right" if table.shape[1] > 4 else "center")
    ax.set_yticks(range(table.shape[0]))
    rows = [" / ".join(map(str, r)) if isinstance(r, tuple) else str(r) for r in table.index]
    ax.set_yticklabels(rows)
    names = table.index.names
    ax.set_ylabel(" / ".join(str(n) for n in names if n is not None) or "case")
    ax.set_xlabel(scheme)
    if annotate and table.size <= 400:
        for i in range(vals.shape[0]):
            for j in range(vals.shape[1]):
                if np.isfinite(vals[i, j]):
                    ax.text(j, i, f"{vals[i, j]:+.1f}%", ha="center", va="center", fontsize="small",
                            color="black")
    cb = ax.figure.colorbar(im, ax=ax)
    cb.set_label(f"improvement over {baseline} (%)")
    ax.set_title(title or f"{label(metric)}: improvement over {baseline}", fontsize="medium")
    return ax


_TIME_COLUMNS = (("time_s", 1.0), ("time_ms", 1e-3), ("time_us", 1e-6), ("time_ns", 1e-9), ("time", 1.0), ("t", 1.0))


def timeseries(df, y: str | Sequence[str], *, time: str | None = None, hue: str | Sequence[str] | None = None,
               ax=None, logy: bool = False, title: str | None = None):
    """Metrics against simulated time: ``df`` has a time column (``time_s``, ``time_ms``, ``time_ns`` …,
    drawn in seconds) and one or more ``y`` columns; ``hue`` splits runs (e.g. ``scheme``)."""
    ys = [y] if isinstance(y, str) else list(y)
    scale = 1.0
    if time is None:
        time, scale = next(((c, s) for c, s in _TIME_COLUMNS if c in df.columns), (None, 1.0))
        if time is None:
            raise ValueError("no time column (time_s, time_ms, time_us, time_ns, time); pass time=")
    else:
        scale = dict(_TIME_COLUMNS).get(time, 1.0)
    _need(df, time, *ys)
    hue_cols = [] if hue is None else ([hue] if isinstance(hue, str) else list(hue))
    _need(df, *hue_cols)
    lab, series = _hue_values(df, hue_cols)
    ax = _axes(ax)
    n = 0
    for s in series:
        sub = df[lab == s].sort_values(time)
        for col in ys:
            name = " ".join(p for p in (s, label(col) if len(ys) > 1 else "") if p) or None
            ax.plot(sub[time] * scale, sub[col], label=name)
            n += 1
    if logy:
        ax.set_yscale("log", nonpositive="mask")
    xlabel = "simulated time (s)" if time in dict(_TIME_COLUMNS) else label(time)
    ylabel = label(ys[0]) if len(ys) == 1 else "value"
    _finish(ax, time, ys[0], n, hue_cols or (["metric"] if len(ys) > 1 else []), title, xlabel, ylabel)
    return ax


KINDS = {
    "mrc": mrc,
    "response-time": response_time,
    "unused-prefetch": unused_prefetch,
    "levels": level_hit_ratios,
    "improvement": improvement,
    "timeseries": timeseries,
    "line": line,
}
