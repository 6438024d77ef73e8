"""Issue 18's rough edges, tried as a new user would (points 3-11 and 13; plots are in
test_plot_readability.py, the reproduce subcommands in test_reproduce_cli.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import prefetchsim as ps
import pytest

from conftest import shared_trace


def cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "prefetchsim", *args], capture_output=True, text=True, cwd=cwd)


# --- point 3: trace convert ---------------------------------------------------------------------------------

def test_convert_of_an_absolute_clock_fails_with_a_hint_and_leaves_no_file(tmp_path):
    msr = shared_trace("msr-sample/msr-cambridge1-sample.csv")
    out = tmp_path / "msr.oracleGeneral.zst"
    p = cli("trace", "convert", msr, str(out))
    assert p.returncode == 2
    assert "does not fit oracleGeneral's u32 seconds" in p.stderr and "--rebase-time" in p.stderr, p.stderr
    assert os.listdir(tmp_path) == []
    p = cli("trace", "convert", msr, str(out), "--rebase-time")
    assert p.returncode == 0, p.stderr
    assert os.listdir(tmp_path) == ["msr.oracleGeneral.zst"]
    summary = json.loads(p.stderr.strip().splitlines()[-1])
    assert summary["requests"] == 1000 and summary["time_origin_ns"] > 0


def test_convert_by_objects_warns_when_requests_span_blocks(tmp_path):
    p6 = shared_trace("arc/P6.lis.zst")
    # A prefix of P6 through the CSV round trip keeps the trace; oracleGeneral objects do not.
    p = cli("trace", "convert", "oltp-like", str(tmp_path / "o.oracleGeneral"), "--format", "synthetic",
            "-t", "requests=2000")
    assert p.returncode == 0
    assert "cover more than one block" in p.stderr and "--per-block" in p.stderr, p.stderr
    p = cli("trace", "convert", "oltp-like", str(tmp_path / "b.oracleGeneral"), "--format", "synthetic",
            "-t", "requests=2000", "--per-block")
    assert p.returncode == 0 and "warning" not in p.stderr, p.stderr
    with pytest.warns(UserWarning, match="per_block=True"):
        ps.open_trace(p6).convert(tmp_path / "p6.oracleGeneral.zst")


def test_the_csv_convert_writes_is_detected_and_replays_the_same(tmp_path):
    tr = ps.synthetic("multi-like", requests=3000, seed=2)
    out = tmp_path / "t.csv"
    tr.convert(out)
    back = ps.open_trace(out)
    assert back.info()["format"] == "prefetchsim_csv"
    a = ps.simulate(tr, size=50, prefetcher="obl").levels[0]
    b = ps.simulate(back, size=50, prefetcher="obl").levels[0]
    assert a == b


# --- point 4, 6: the samples of the docs ---------------------------------------------------------------------

def test_an_open_loop_replay_takes_no_closed_loop_keys_and_says_so():
    tr = ps.synthetic("oltp-like", requests=500)
    with pytest.raises(ps.ConfigError, match="engine.iodepth: only with engine.replay = 'closed'"):
        ps.simulate(tr, size="5%", engine={"kind": "timed", "replay": "open", "iodepth": 1})
    r = ps.simulate(tr, size="5%", engine={"kind": "timed", "replay": "open"})
    assert r.timing["replay"] == "open"


def test_the_split_quickstart_line_prefetches_and_hits():
    r = ps.simulate(ps.synthetic("split-mix1", seed=7, requests=20_000), size=110, policy="splitlru",
                    prefetcher="split-t2")
    assert r.summary["hit_ratio"] > 0.1


# --- point 7: progress during the footprint pass ------------------------------------------------------------

def test_progress_moves_during_the_footprint_pass():
    seen = []
    tr = ps.synthetic("zipf", requests=3_000_000, seed=1)
    ps.simulate(tr, size="1%", progress=seen.append)
    # The footprint pass reads the trace once before the replay; its requests count as read. The last
    # call gives the final count whatever the machine's speed (the test failed when the run ended before
    # the tick after the footprint pass).
    assert seen and seen[-1] == 6_000_000


# --- point 8: error texts ------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, text", [
    (["run", "{tmp}"], "is a directory; give a run config (a TOML file)"),
    (["sim", "oltp-like", "synthetic", "lru", "10", "--warmup", "-5"], "argument --warmup: -5 is negative"),
    (["sim", "oltp-like", "synthetic", "lru", "0.0000001", "-t", "requests=1000"],
     "0.00001% of the footprint is less than one block"),
])
def test_error_texts_say_what_is_wrong(args, text, tmp_path):
    p = cli(*[a.format(tmp=tmp_path) for a in args])
    assert p.returncode == 2 and text in p.stderr, p.stderr


def test_an_unknown_table_lists_every_table_of_a_run_config(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[trace]\npath = "zipf"\nformat = "synthetic"\n[[level]]\nsize = 4\n[bogus]\n')
    p = cli("run", str(cfg))
    assert p.returncode == 2 and "unknown table [bogus]" in p.stderr and "[trace]" in p.stderr, p.stderr
    # A top-level key is not called a table.
    cfg.write_text('bogus = 1\n[trace]\npath = "zipf"\nformat = "synthetic"\n[[level]]\nsize = 4\n')
    p = cli("run", str(cfg))
    assert p.returncode == 2 and "unknown top-level key 'bogus'" in p.stderr and "[trace]" in p.stderr, p.stderr


def test_detection_names_the_bad_line_of_the_closest_format(tmp_path):
    msr = shared_trace("msr-sample/msr-cambridge1-sample.csv")
    with open(msr) as f:
        lines = f.read().splitlines()[:5]
    lines[3] = lines[3].replace(lines[3].split(",")[4], "xx")
    bad = tmp_path / "trace.csv"
    bad.write_text("\n".join(lines) + "\n")
    p = cli("trace", "info", str(bad))
    assert p.returncode == 2
    # Only MSR reads the first lines: the bad line is the error, plainly, with how the format was found.
    assert "(msr, detected from its first 3 records)" in p.stderr and "cannot tell" not in p.stderr, p.stderr
    assert "line 4" in p.stderr and "'Offset'" in p.stderr, p.stderr


def test_results_filters_and_failures_say_when_they_cannot_match(tmp_path):
    spec = {"trace": {"path": "zipf", "format": "synthetic", "params": {"requests": 300}}, "level": [{"size": 8}],
            "sweep": {"level[0].policy": ["lru", "fifo"]}}
    db = tmp_path / "r.sqlite"
    from concurrent.futures import ThreadPoolExecutor

    ps.sweep(spec, ThreadPoolExecutor(1), db=db)
    p = cli("results", str(db), "--filter", "hit_ratio>=abc")
    assert p.returncode == 2 and "'abc' is not a number" in p.stderr, p.stderr
    # An order comparison on a text column matched no row (trace<5) or every row (trace>5), silently.
    csv = tmp_path / "r.csv"
    ps.results(db).to_csv(csv, index=False)
    for source in (db, csv):
        for f in ("trace<5", "policy>=1"):
            p = cli("results", str(source), "--filter", f)
            assert p.returncode == 2 and "holds text" in p.stderr, (source, f, p.stderr)
    p = cli("results", str(db), "--filter", "capacity_blocks>=8", "--columns", "policy")
    assert p.returncode == 0 and "fifo" in p.stdout, p.stderr
    p = cli("results", str(db), "--failures")
    assert p.returncode == 0 and "holds no failed run attempts" in p.stderr, p.stderr


# --- point 9: component parameters on the sim command line -----------------------------------------------

def test_sim_takes_component_parameters_and_presets():
    p6 = shared_trace("arc/P6.lis.zst")
    p = cli("sim", p6, "arc", "lru+mithril,lru+mithril(preset=libcachesim)", "1%", "--limit", "50000", "-f", "json")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    assert [r["algo"] for r in rows] == ["lru+mithril", "lru+mithril(preset=libcachesim)"]
    want = ps.simulate(ps.open_trace(p6), size="1%", engine={"limit": 50000},
                       prefetcher={"name": "mithril", "preset": "libcachesim"}).levels[0]
    assert rows[1]["prefetch_issued"] == want["prefetch_issued"]
    assert rows[0]["prefetch_issued"] != rows[1]["prefetch_issued"]
    p = cli("sim", "zipf", "synthetic", "lru+obl(variant=nope", "10")
    assert p.returncode == 2 and "'(' without ')'" in p.stderr, p.stderr


# --- point 10: help and the Python face ----------------------------------------------------------------------

def test_help_texts():
    for cmd in (["trace", "info"], ["trace", "convert"]):
        out = cli(*cmd, "--help").stdout
        assert len(out.split("\n\n")[1]) > 60, out  # a description paragraph after the usage
    for cmd in (["sim"], ["run"], ["results"], ["device", "bench"], ["trace", "info"]):
        out = cli(*cmd, "--help").stdout
        assert "-f {table,csv,json}, --output-format {table,csv,json}\n" in out and "json (one object" in out, cmd
    doc = ps.simulate.__doc__
    assert "Returns:" in doc and "Raises:" in doc and "Example:" in doc


def test_the_python_face_is_tidy():
    assert "annotations" not in dir(ps)
    with pytest.raises(ps.TraceError) as e:
        ps.open_trace("/no/such/trace")
    assert type(e.value).__module__ == "prefetchsim"
    with pytest.raises(TypeError, match=r"levels=\[") :
        ps.Level("5%", prefetcher={"name": "obl"}).to_config()
    r = ps.simulate(ps.synthetic("zipf", requests=1000), size=10, prefetcher={"name": "obl", "variant": "tagged"})
    assert r.summary["prefetcher"] == "obl"


# --- point 11: trace info ------------------------------------------------------------------------------------

def test_trace_info_names_the_trace_and_its_format_in_readable_units():
    msr = shared_trace("msr-sample/msr-cambridge1-sample.csv")
    out = cli("trace", "info", msr).stdout
    assert "trace                msr-cambridge1-sample.csv" in out
    assert "format               msr" in out
    assert "duration_ns          127,233,494,100 (2 min 7.233 s)" in out
    assert "footprint_bytes      7,852,032 (7.49 MiB)" in out


# --- point 13 is a Rust test (device bench lists each pattern once); sweeps: the __main__ guard -----------

def test_a_sweep_in_an_unguarded_script_says_so_before_starting_workers(tmp_path):
    body = """
        import prefetchsim as ps
        spec = {"trace": {"path": "zipf", "format": "synthetic", "params": {"requests": 300}},
                "level": [{"size": 8}], "sweep": {"level[0].policy": ["lru", "fifo"]}}
        {call}
    """
    (tmp_path / "bad.py").write_text(textwrap.dedent(body).replace("{call}", "print(len(ps.sweep(spec, workers=2)))"))
    p = subprocess.run([sys.executable, "bad.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    assert 'outside `if __name__ == "__main__":`' in p.stderr and "bad.py, line 5" in p.stderr, p.stderr
    assert p.stderr.count("Traceback") == 1
    good = textwrap.dedent(body).replace("{call}", 'if __name__ == "__main__":\n    print(len(ps.sweep(spec, workers=2)))')
    (tmp_path / "good.py").write_text(good)
    p = subprocess.run([sys.executable, "good.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.strip() == "2", p.stderr
