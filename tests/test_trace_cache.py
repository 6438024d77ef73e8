"""The decoded-trace cache from the command line and the Python API: a second run reads the cached
decoding and prints the same results, `--no-cache` / `cache=False` write and read nothing, `prefetchsim
cache` shows and clears it. (Damage, truncation and invalidation: crates/prefetchsim-trace/tests/it/cache.rs.)"""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import prefetchsim as ps


def _trace(tmp_path: Path) -> str:
    # A text trace with a bad line (skipped and reported) and requests of several blocks.
    lines = [f"{i * 1000},hm,{i % 2},{'Write' if i % 3 == 0 else 'Read'},{(i * 7919 % 50_000) * 4096},"
             f"{4096 * (1 + i % 4)},10" for i in range(20_000)]
    lines.insert(50, "not,a,record")
    p = tmp_path / "t.csv"
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def _cli(cache_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PREFETCHSIM_CACHE_DIR": str(cache_dir), "PREFETCHSIM_CACHE_MIN_KB": "0"}
    env.pop("PREFETCHSIM_CACHE", None)
    p = subprocess.run([sys.executable, "-m", "prefetchsim", *args], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    return p


def _files(cache_dir: Path) -> list[Path]:
    d = cache_dir / "decoded"
    return sorted(d.iterdir()) if d.is_dir() else []


def test_a_cache_folder_that_cannot_be_used_is_said_so_not_called_damaged(tmp_path: Path) -> None:
    # A cache "folder" that is a file: the message said a cache file was "damaged ... removed".
    trace = _trace(tmp_path)
    not_a_dir = tmp_path / "afile"
    not_a_dir.write_text("x")
    args = ["sim", trace, "msr", "lru", "100", "--skip-bad", "1", "-f", "csv"]
    p = _cli(not_a_dir, *args)
    assert "damaged" not in p.stderr and "removed" not in p.stderr, p.stderr
    assert "decoded-trace cache in" in p.stderr and "cannot be used" in p.stderr, p.stderr
    assert p.stdout == _cli(tmp_path / "cache", *args).stdout
    assert not_a_dir.read_text() == "x"


def test_the_second_run_reads_the_cached_decoding_and_prints_the_same_results(tmp_path: Path) -> None:
    trace, cache = _trace(tmp_path), tmp_path / "cache"
    sim = ["sim", trace, "msr", "lru,fifo,clock", "500", "--skip-bad", "1", "-f", "csv", "--threads", "1"]
    uncached = _cli(cache, *sim, "--no-cache").stdout
    assert _files(cache) == [], "--no-cache writes nothing"
    first = _cli(cache, *sim).stdout
    assert [f.suffix for f in _files(cache)] == [".psdec"]
    second = _cli(cache, *sim).stdout
    assert uncached == first == second
    rows = list(csv.DictReader(io.StringIO(second)))
    assert [r["trace_skipped"] for r in rows] == ["1", "1", "1"], "the skipped record is reported from the cache"
    info = _cli(cache, "cache", "info").stdout
    assert "1 cached decoding(s)" in info
    assert "removed 1" in _cli(cache, "cache", "clear").stdout
    assert _files(cache) == []


def test_the_python_api_opts_out_with_cache_false(tmp_path: Path, monkeypatch) -> None:
    trace, cache = _trace(tmp_path), tmp_path / "cache"
    monkeypatch.setenv("PREFETCHSIM_CACHE_DIR", str(cache))
    monkeypatch.setenv("PREFETCHSIM_CACHE_MIN_KB", "0")
    off = ps.simulate(ps.open_trace(trace, "msr", skip_bad=1, cache=False), levels=[ps.Level(500)])
    assert _files(cache) == []
    on = [ps.simulate(ps.open_trace(trace, "msr", skip_bad=1), levels=[ps.Level(500)]) for _ in range(2)]
    assert len(_files(cache)) == 1
    assert off.summary == on[0].summary == on[1].summary


def test_a_cache_variable_it_cannot_read_is_an_error_naming_it(tmp_path: Path) -> None:
    # A typo used to keep the default in silence (PREFETCHSIM_CACHE=maybe cached; MAX_MB=4G capped at 4 GiB).
    trace = _trace(tmp_path)
    for var, value, args in [
        ("PREFETCHSIM_CACHE", "maybe", ["trace", "info", trace, "--format", "msr", "--skip-bad", "1"]),
        ("PREFETCHSIM_CACHE_MAX_MB", "4G", ["trace", "info", trace, "--format", "msr", "--skip-bad", "1"]),
        ("PREFETCHSIM_CACHE_MIN_KB", "-1", ["trace", "info", trace, "--format", "msr", "--skip-bad", "1"]),
        ("PREFETCHSIM_CACHE", "maybe", ["cache", "info"]),
    ]:
        env = {**os.environ, "PREFETCHSIM_CACHE_DIR": str(tmp_path / "cache"), var: value}
        p = subprocess.run([sys.executable, "-m", "prefetchsim", *args], capture_output=True, text=True, env=env)
        assert p.returncode != 0 and var in p.stderr and value in p.stderr, (var, args, p.stderr)
        assert "Traceback" not in p.stderr
    assert _files(tmp_path / "cache") == []


def test_cache_info_and_clear_refuse_the_variables_sim_refuses(tmp_path: Path) -> None:
    # `cache info` and `cache clear` exited 0 with PREFETCHSIM_CACHE_MAX_MB=4G, which `sim` refuses.
    trace = _trace(tmp_path)
    for var, value in [("PREFETCHSIM_CACHE_MAX_MB", "4G"), ("PREFETCHSIM_CACHE_MIN_KB", "-1")]:
        env = {**os.environ, "PREFETCHSIM_CACHE_DIR": str(tmp_path / "cache"), var: value}
        env.pop("PREFETCHSIM_CACHE", None)
        errors = []
        for args in (["sim", trace, "msr", "lru", "10", "--skip-bad", "1"], ["cache", "info"], ["cache", "clear"]):
            p = subprocess.run([sys.executable, "-m", "prefetchsim", *args], capture_output=True, text=True, env=env)
            assert p.returncode == 2, (var, args, p.stdout, p.stderr)
            errors.append(p.stderr)
        assert errors[0] == errors[1] == errors[2] == f"prefetchsim: error: {var}: '{value}' is not a whole number\n"
