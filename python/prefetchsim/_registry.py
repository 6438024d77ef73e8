"""The registries of the Rust core (one list each, shared by the CLI, configs, errors and docs)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from . import _core


@cache
def _registry() -> dict[str, list[tuple[str, str]]]:
    raw = json.loads(_core.registry())
    return {k: [(n, s) for n, s in v] for k, v in raw.items()}


def policies() -> dict[str, str]:
    """Replacement policies: name -> summary."""
    return dict(_registry()["policies"])


def prefetchers() -> dict[str, str]:
    """Prefetchers: name -> summary."""
    return dict(_registry()["prefetchers"])


def formats() -> dict[str, str]:
    """Trace formats: name -> summary."""
    return dict(_registry()["formats"])


def generators() -> dict[str, str]:
    """Synthetic workload generators: name -> summary."""
    return dict(_registry()["generators"])


@cache
def _schema() -> dict[str, list[dict[str, Any]]]:
    return json.loads(_core.result_schema())


def result_schema() -> dict[str, list[dict[str, str]]]:
    """The fields of a result, as the core defines them: ``{"run": [...], "level": [...]}``, each field
    ``{"name", "kind", "meaning"}`` in record order (``kind``: int, float, text, bool or textlist).
    ``run`` are a result's totals, ``level`` the keys of each level's record (`Result.levels`),
    ``timing`` a timed run's run-level metrics (what `Result.summary` adds for a timed run)."""
    return {part: [dict(f) for f in fields] for part, fields in _schema().items()}


# A flat row that holds a level's record beside the run's totals (`Result.summary`, the CLI's rows, the
# results database) names the totals that count the whole trace `trace_...`: a level record has its own
# `requests` (the requests that reached that level after the warm-up), and `blocks` beside it would pair
# a whole-trace count with a post-warm-up one (the summary's blocks / requests was no mean request size).
_FLAT_RUN_NAMES = {"requests": "trace_requests", "blocks": "trace_blocks"}


@cache
def run_total_keys() -> tuple[tuple[str, str], ...]:
    """``(name in the result, name in a flat row)`` of each run total the core's result schema lists,
    in schema order; lists (the skipped records' messages) are left out of flat rows."""
    return tuple((f["name"], _FLAT_RUN_NAMES.get(f["name"], f["name"]))
                 for f in _schema()["run"] if f["kind"] != "textlist")


def run_totals(raw: dict[str, Any]) -> dict[str, Any]:
    """A result's run totals (``Result.raw``) under their flat-row names: ``trace_requests``,
    ``trace_blocks`` (the whole trace, warm-up included), ``warmup_requests``, ``stopped_early`` ..."""
    return {flat: raw[name] for name, flat in run_total_keys()}
