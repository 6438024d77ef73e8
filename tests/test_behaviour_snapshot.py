"""Behaviour is unchanged by restructuring: `scripts/behaviour_snapshot.py` records the registry listing,
the canonical configs and run ids of every experiment spec, JSON results of a fixed set of runs (PFC,
DEMOTE, DU, mithril+amp, per-client and multi-server levels, both engines) and the texts of bad-config
errors; this test records them again and compares byte for byte with the committed recording in
tests/data/behaviour. A change of behaviour that is meant regenerates the recording in the same commit
(`python scripts/behaviour_snapshot.py tests/data/behaviour`) and says why in the commit message."""

from __future__ import annotations

import difflib
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDED = os.path.join(ROOT, "tests", "data", "behaviour")
FILES = ["list.txt", "experiments.txt", "runs.json", "errors.txt"]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    out = tmp_path_factory.mktemp("behaviour")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "behaviour_snapshot.py"), str(out)],
                   check=True, capture_output=True, cwd=ROOT)
    return out


@pytest.mark.parametrize("name", FILES)
def test_behaviour_matches_the_recording(fresh, name):
    with open(os.path.join(RECORDED, name)) as f:
        want = f.read()
    with open(os.path.join(fresh, name)) as f:
        got = f.read()
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "recorded", "now", n=1))
        pytest.fail(f"{name} differs from tests/data/behaviour/{name}:\n{diff[:6000]}")
