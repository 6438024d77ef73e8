"""The example notebooks of docs/examples run from top to bottom (nbclient, a fresh Python kernel, in
their own folder as Jupyter would), as the test command's check that the docs' examples still work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO, REQUIRED, TRACES

NOTEBOOKS = sorted((REPO / "docs" / "examples").glob("*.ipynb"))

nbformat = pytest.importorskip("nbformat", reason="the docs extra (prefetchsim[docs]) is not installed")
nbclient = pytest.importorskip("nbclient", reason="the docs extra (prefetchsim[docs]) is not installed")


def test_there_are_the_four_notebooks_of_the_guide():
    assert [p.stem for p in NOTEBOOKS] == ["first-simulation", "prefetchers-on-a-real-trace", "sweep-with-plots",
                                          "timed-two-level"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, tmp_path, monkeypatch):
    nb = nbformat.read(path, as_version=4)
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    if "TRACES" in source and not TRACES.is_dir():
        msg = f"{path.name} reads the shared traces; none at {TRACES} (set PREFETCHSIM_TRACES)"
        if REQUIRED:
            pytest.fail(msg + " and PREFETCHSIM_REQUIRE_TRACES=1")
        pytest.skip(msg)
    monkeypatch.setenv("PREFETCHSIM_TRACES", str(TRACES.resolve()))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError naming the cell and its traceback
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, json.dumps(errors)[:2000]
