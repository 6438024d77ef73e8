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
