"""The malformed-input rule from Python and the command line: strict by default, ``skip_bad=N`` /
``--skip-bad N`` skips and counts up to N bad records, reports them (results, ``trace info``, a warning on
stderr) and fails on the next one."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import prefetchsim as ps
import pytest

GOOD = [f"0,{16 * i},8192,r,{0.001 * i:.6f}" for i in range(20)]


@pytest.fixture
def damaged(tmp_path) -> str:
    """20 good SPC lines with 3 bad ones among them (a non-number, a missing field, a negative size)."""
    lines = GOOD[:5] + ["0,x9,8192,r,0.1"] + GOOD[5:10] + ["0,7,8192"] + GOOD[10:] + ["0,9,-1,r,0.5"]
    p = tmp_path / "damaged.spc"
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "prefetchsim", *args], capture_output=True, text=True)


def test_strict_by_default_names_file_line_offset_and_field(damaged):
    with pytest.raises(ps.TraceError) as e:
        ps.simulate(ps.open_trace(damaged, "spc"), size=8)
    offset = sum(len(x) + 1 for x in GOOD[:5])
    assert f"{damaged}: line 6 (byte {offset}): field 'LBA': 'x9' is not an unsigned integer" == str(e.value)


def test_skip_bad_counts_what_it_skipped_in_results_and_info(damaged):
    tr = ps.open_trace(damaged, "spc", skip_bad=3)
    r = ps.simulate(tr, size=8)
    assert r.summary["requests"] == 20 and r.summary["skipped_records"] == 3
    sk = r.skipped
    assert sk["records"] == 3 and len(sk["messages"]) == 3
    assert "line 6" in sk["messages"][0] and "line 12" in sk["messages"][1] and "negative" in sk["messages"][2]
    info = tr.info()
    assert info["requests"] == 20 and info["skipped_records"] == 3 and info["skipped_messages"] == sk["messages"]
    # The footprint pass skips the same records: a share of the footprint resolves as without them.
    clean = ps.open_trace(damaged, "spc", skip_bad=3)
    assert clean.footprint() == 40
    assert ps.simulate(clean, size="50%").levels[0]["capacity_blocks"] == 20


def test_one_bad_record_past_the_limit_is_an_error_naming_the_limit(damaged):
    with pytest.raises(ps.TraceError) as e:
        ps.simulate(ps.open_trace(damaged, "spc", skip_bad=2), size=8)
    assert "line 23" in str(e.value) and "more than skip_bad = 2 allows" in str(e.value)


def test_time_going_backwards_is_counted_not_skipped(tmp_path):
    p = tmp_path / "b.spc"
    p.write_text("0,0,4096,r,2.0\n0,8,4096,r,1.0\n0,16,4096,r,3.0\n")
    r = ps.simulate(ps.open_trace(str(p), "spc"), size=8)
    assert r.skipped == {"records": 0, "messages": [], "time_backwards": 1}


def test_cli_skip_bad_on_sim_info_convert_and_run(damaged, tmp_path):
    p = cli("sim", damaged, "spc", "lru", "8", "-f", "json")
    assert p.returncode == 2 and "line 6" in p.stderr
    p = cli("sim", damaged, "spc", "lru,fifo", "8", "-f", "json", "--skip-bad", "3")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    assert [r["trace_skipped"] for r in rows] == [3, 3]
    warn = [x for x in p.stderr.splitlines() if x.startswith("prefetchsim: warning:")]
    assert len(warn) == 1, p.stderr
    assert "skipped 3 bad record(s)" in warn[0] and "line 6" in warn[0]
    assert p.stderr.count("  also: ") == 2

    p = cli("trace", "info", damaged, "--format", "spc", "--skip-bad", "3", "-f", "json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["skipped_records"] == 3 and "skipped 3 bad record(s)" in p.stderr

    out = tmp_path / "clean.csv"
    p = cli("trace", "convert", damaged, str(out), "--format", "spc", "--skip-bad", "5")
    assert p.returncode == 0, p.stderr
    assert "skipped 3 bad record(s)" in p.stderr and len(out.read_text().splitlines()) == 23  # 2 comments, header, 20

    toml = tmp_path / "run.toml"
    toml.write_text(f"[trace]\npath = {damaged!r}\nformat = 'spc'\n\n[[level]]\nsize = 8\n")
    assert cli("run", str(toml)).returncode == 2
    p = cli("run", str(toml), "--skip-bad", "3", "-f", "json")
    assert p.returncode == 0 and "skipped 3" in p.stderr, p.stderr
    toml.write_text(f"[trace]\npath = {damaged!r}\nformat = 'spc'\nskip_bad = 3\n\n[[level]]\nsize = 8\n")
    p = cli("run", str(toml), "-f", "json")
    assert p.returncode == 0 and "skipped 3" in p.stderr, p.stderr
    assert "(trace.skip_bad = 3)" in p.stderr, p.stderr  # not "--skip-bad 3", which was never given


def test_run_skip_bad_0_overrides_the_configs_skip_bad(damaged, tmp_path):
    # `--skip-bad 0` was taken for "not given" and the config's skip_bad = 3 skipped the bad records.
    toml = tmp_path / "run.toml"
    toml.write_text(f"[trace]\npath = {damaged!r}\nformat = 'spc'\nskip_bad = 3\n\n[[level]]\nsize = 8\n")
    p = cli("run", str(toml), "--skip-bad", "0", "-f", "json")
    assert p.returncode == 2 and "line 6" in p.stderr and p.stdout == "", p.stderr
    p = cli("run", str(toml), "--skip-bad", "1", "-f", "json")
    assert p.returncode == 2 and "more than skip_bad = 1 allows" in p.stderr, p.stderr


def test_skip_bad_cannot_skip_a_truncated_binary_tail(tmp_path):
    rec = (1).to_bytes(4, "little") + (7).to_bytes(8, "little") + (4096).to_bytes(4, "little") + (-1).to_bytes(
        8, "little", signed=True)
    p = tmp_path / "cut.oracleGeneral.bin"
    p.write_bytes(rec * 3 + rec[:10])
    with pytest.raises(ps.TraceError, match=r"record 3 \(byte 72\): truncated record: 10 of 24 bytes"):
        ps.simulate(ps.open_trace(str(p), "oracle_general", skip_bad=100), size=4)


def test_a_format_detected_from_the_content_skips_bad_records_too(tmp_path):
    # A bad record among those read to tell the format from the content failed the read whatever
    # skip_bad allowed (a name that names no format: ids.trace).
    p = tmp_path / "ids.trace"
    p.write_text("0\n1\n2\nabc\n4\n")
    info = ps.open_trace(str(p), skip_bad=3).info()
    assert (info["format"], info["requests"], info["skipped_records"]) == ("lirs", 4, 1)
    r = cli("sim", str(p), "auto", "lru", "2", "--skip-bad", "1", "-f", "json")
    assert r.returncode == 0 and "skipped 1 bad record(s)" in r.stderr, r.stderr
    with pytest.raises(ps.TraceError, match="line 4 .*'abc' is not an unsigned integer"):
        ps.open_trace(str(p)).info()


def test_a_format_detected_from_the_name_skips_bad_records_too(damaged, tmp_path):
    # Detection read the head strictly: `trace info`, `trace convert` and `run --trace` with --skip-bad
    # failed with "cannot tell the trace format" when a bad record came early, though `sim` with the
    # format named worked.
    named = tmp_path / "damaged.spc"
    assert str(named) == damaged
    tr = ps.open_trace(damaged, skip_bad=3)
    assert tr.info()["requests"] == 20
    assert ps.simulate(tr, size=8).summary["skipped_records"] == 3
    out = cli("trace", "info", damaged, "--skip-bad", "3")
    assert out.returncode == 0, out.stderr
    # Strict detection still names the bad line, and too many bad records still fail.
    with pytest.raises(ps.TraceError, match="line 6"):
        ps.open_trace(damaged).info()
    with pytest.raises(ps.TraceError):
        ps.simulate(ps.open_trace(damaged, skip_bad=2), size=8)


def test_a_sweep_database_keeps_every_run_total(damaged, tmp_path):
    # The database stored four of the six run totals: a sweep over a damaged trace did not say that it
    # had skipped records, nor that a trace's time went backwards.
    back = tmp_path / "b.spc"
    back.write_text("0,0,4096,r,2.0\n0,8,4096,r,1.0\n0,16,4096,r,3.0\n")
    doc = {"trace": {"path": damaged, "format": "spc", "skip_bad": 3}, "level": [{"size": 8}],
           "sweep": {"level[0].policy": ["lru", "fifo"]}}
    db = str(tmp_path / "s.sqlite")
    df = ps.sweep(doc, db=db)
    assert list(df.skipped_records) == [3, 3] and list(df.time_backwards) == [0, 0]
    doc["trace"] = {"path": str(back), "format": "spc"}
    ps.sweep(doc, db=db)
    stored = ps.results(db)
    assert sorted(zip(stored.trace_requests, stored.skipped_records, stored.time_backwards)) == [
        (3, 0, 1), (3, 0, 1), (20, 3, 0), (20, 3, 0)]
    # The columns are run totals: not axes, not metrics.
    kinds = dict(sqlite3.connect(db).execute("SELECT name, kind FROM columns").fetchall())
    assert kinds["skipped_records"] == kinds["time_backwards"] == "total"


def test_every_key_of_a_trace_table_is_a_sweep_axis(damaged):
    # The sweep kept its own copy of a trace table's keys, without skip_bad, id_bytes, cache, client_from
    # and volumes: `trace.skip_bad` was "unknown axis", though `[trace] skip_bad = 3` works.
    doc = {"trace": {"path": damaged, "format": "spc"}, "level": [{"size": 8}],
           "sweep": {"trace.skip_bad": [3, 5]}}
    df = ps.sweep(doc, db=None)
    assert list(df.skipped_records) == [3, 3] and list(df.requests) == [20, 20]
    with pytest.raises(ps.ConfigError, match=r"unknown axis 'trace.skip_bda'.*skip_bad.*label"):
        ps.sweep_plan({**doc, "sweep": {"trace.skip_bda": [3]}})
