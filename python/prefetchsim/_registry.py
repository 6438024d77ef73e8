"""The registries of the Rust core (one list each, shared by the CLI, configs, errors and docs)."""

from __future__ import annotations

import json
from functools import cache

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
