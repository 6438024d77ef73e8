"""Shared fixtures: where the real traces are, and small hand-made traces.

Tests that need the shared real traces find them through one setting, ``PREFETCHSIM_TRACES`` (default
``../shared/traces`` beside the repository). On a machine without them those tests skip with a stated
reason, unless ``PREFETCHSIM_REQUIRE_TRACES=1`` (set by ``.ci/run``): then a missing trace fails.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TRACES = Path(os.environ.get("PREFETCHSIM_TRACES", REPO.parent / "shared" / "traces"))
REQUIRED = os.environ.get("PREFETCHSIM_REQUIRE_TRACES") == "1"


@pytest.fixture(autouse=True, scope="session")
def _decoded_trace_cache(tmp_path_factory: pytest.TempPathFactory):
    """The decoded-trace cache of the whole session in a temporary folder, not the user's: runs over the
    same real trace in several tests read it (cached results must equal decoded ones, which the
    behaviour snapshot then checks too)."""
    old = os.environ.get("PREFETCHSIM_CACHE_DIR")
    os.environ["PREFETCHSIM_CACHE_DIR"] = str(tmp_path_factory.mktemp("decoded-trace-cache"))
    yield
    if old is None:
        os.environ.pop("PREFETCHSIM_CACHE_DIR", None)
    else:
        os.environ["PREFETCHSIM_CACHE_DIR"] = old


def shared_trace(rel: str) -> str:
    """Path of a shared trace, skipping (or failing when required) if it is absent."""
    p = TRACES / rel
    if not p.is_file():
        msg = f"shared trace {rel} not found under {TRACES} (set PREFETCHSIM_TRACES)"
        if REQUIRED:
            pytest.fail(msg + " and PREFETCHSIM_REQUIRE_TRACES=1")
        pytest.skip(msg)
    return str(p)


@pytest.fixture
def lirs_trace(tmp_path: Path) -> str:
    """A tiny one-id-per-line trace: 1 2 3 1 4 5 1 2."""
    p = tmp_path / "tiny.lirs.trace"
    p.write_text("\n".join(str(x) for x in [1, 2, 3, 1, 4, 5, 1, 2]) + "\n")
    return str(p)


@pytest.fixture
def spc_trace(tmp_path: Path) -> str:
    """A small SPC trace: a sequential scan of 40 requests of 8 KiB on ASU 0, then re-reads."""
    lines = [f"0,{16 * i},8192,r,{0.001 * i:.6f}" for i in range(40)]
    lines += [f"0,{16 * i},8192,r,{0.04 + 0.001 * i:.6f}" for i in range(10)]
    p = tmp_path / "scan.spc"
    p.write_text("\n".join(lines) + "\n")
    return str(p)
