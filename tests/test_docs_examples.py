"""Every shell and Python block of the README and of the docs' guide runs, as a new user would paste it:
in a clean checkout (the repository's files copied to a temporary directory, nothing built or left over)
with the shared traces beside it at `../shared/traces`. Complete TOML run configs and sweep specs in
those pages are checked by the core.

A block can be marked in the Markdown, on the line before it:
- `<!-- norun: REASON -->`: not run here (a SLURM script, the test command itself); the test is skipped
  with the reason;
- `<!-- test-instead: COMMAND (REASON) -->`: COMMAND runs instead (`pip install . && prefetchsim run`:
  the test command has installed the package already, so only `prefetchsim run` runs).

Blocks of one page run in order in one checkout, so a page may make a results database in one block and
read it in the next. Blocks that read `../shared/traces` follow the trace rule of `conftest.py`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, REQUIRED, TRACES

PAGES = [REPO / "README.md", *sorted((REPO / "docs" / "guide").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\s*$")
MARK = re.compile(r"<!--\s*(norun|test-instead):\s*(.*?)\s*-->")
SHELL = {"sh", "bash", "shell"}
PYTHON = {"python", "py"}


def _blocks(page: Path) -> list[dict]:
    """The fenced blocks of `page`: language, first line number, code and the mark before it."""
    out, lines = [], page.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        prev = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        mark = MARK.search(prev)
        out.append({"lang": m[1].lower(), "line": i + 1, "code": "\n".join(lines[i + 1:j]) + "\n",
                    "mark": (mark[1], mark[2]) if mark else None})
        i = j + 1
    return out


CASES = [(page, b) for page in PAGES for b in _blocks(page)
         if b["lang"] in SHELL | PYTHON or (b["lang"] == "toml" and "[[level]]" in b["code"])]


def _id(case) -> str:
    page, b = case
    return f"{page.relative_to(REPO)}:{b['line']}:{b['lang']}"


_CHECKOUTS: dict[Path, Path] = {}


def _checkout(page: Path, tmp_root: Path) -> Path:
    """A clean copy of the repository's files for `page` (made once per page), with the shared traces at
    ../shared/traces."""
    if page in _CHECKOUTS:
        return _CHECKOUTS[page]
    base = tmp_root / page.stem
    dest = base / "prefetchsim"
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=REPO,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for f in filter(None, files):
        src = REPO / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)
    if TRACES.is_dir():
        (base / "shared").mkdir()
        (base / "shared" / "traces").symlink_to(TRACES.resolve())
    _CHECKOUTS[page] = dest
    return dest


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["MPLBACKEND"] = "Agg"
    env.pop("PREFETCHSIM_TRACES", None)  # the pages name ../shared/traces
    return env


@pytest.fixture(scope="module")
def tmp_root(tmp_path_factory):
    return tmp_path_factory.mktemp("docs-examples")


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_block_runs_from_a_clean_checkout(case, tmp_root):
    page, b = case
    where = _id(case)
    code = b["code"]
    if b["mark"] and b["mark"][0] == "norun":
        pytest.skip(f"{where}: marked norun: {b['mark'][1]}")
    if b["mark"] and b["mark"][0] == "test-instead":
        code = re.sub(r"\s*\(.*\)\s*$", "", b["mark"][1]) + "\n"
    if "../shared/traces" in code and not TRACES.is_dir():
        msg = f"{where} reads ../shared/traces; no traces at {TRACES} (set PREFETCHSIM_TRACES)"
        if REQUIRED:
            pytest.fail(msg + " and PREFETCHSIM_REQUIRE_TRACES=1")
        pytest.skip(msg)
    cwd = _checkout(page, tmp_root)
    if b["lang"] in SHELL:
        cmd = ["bash", "-euo", "pipefail", "-c", code]
    elif b["lang"] in PYTHON:
        script = cwd / f"_doc_block_{b['line']}.py"
        script.write_text(code)
        cmd = [sys.executable, script.name]
    else:
        cfg = cwd / f"_doc_block_{b['line']}.toml"
        cfg.write_text(code)
        check = ("import json, sys, prefetchsim as ps\n"
                 "from prefetchsim._sim import load_config\n"
                 "p = sys.argv[1]\n"
                 "if '[sweep]' in open(p).read():\n"
                 "    print(len(ps.sweep_plan(p)), 'runs')\n"
                 "else:\n"
                 "    doc, trace = load_config(p)\n"
                 "    ps._core.check_config(json.dumps(doc))\n"
                 "    print('valid', trace)\n")
        cmd = [sys.executable, "-c", check, cfg.name]
    p = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"{where} failed (exit {p.returncode}):\n{code}\n--- stdout\n{p.stdout[-3000:]}\n" \
                              f"--- stderr\n{p.stderr[-3000:]}"


def test_the_pages_have_blocks_to_run():
    # A page whose fences lost their language would silently leave the test above with nothing to run.
    langs = {b["lang"] for page in PAGES for b in _blocks(page)}
    assert SHELL & langs and PYTHON & langs and "" not in langs, langs
    assert json.dumps([_id(c) for c in CASES])
