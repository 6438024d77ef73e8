"""The command line: `sim` in libCacheSim's order, `run`, `trace info|convert`, `list`; exit codes."""

from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
import subprocess
import sys

import prefetchsim as ps
import pytest
from prefetchsim.cli import _parse_kv, build_parser, main


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "prefetchsim", *args], capture_output=True, text=True)


def test_sim_runs_every_algo_at_every_size_as_csv(spc_trace):
    p = cli("sim", spc_trace, "spc", "lru,fifo+obl", "4,50%", "-f", "csv")
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert [(r["policy"], r["prefetcher"], r["size"]) for r in rows] == [
        ("lru", "none", "4"), ("lru", "none", "50%"), ("fifo", "obl", "4"), ("fifo", "obl", "50%")
    ]
    assert rows[1]["capacity_blocks"] == "40"


def test_cli_and_python_give_identical_results(spc_trace):
    p = cli("sim", spc_trace, "auto", "lru+obl", "16", "-f", "json")
    assert p.returncode == 0, p.stderr
    row = json.loads(p.stdout.splitlines()[0])
    py = ps.simulate(ps.open_trace(spc_trace), size=16, policy="lru", prefetcher="obl").levels[0]
    for k, v in py.items():
        assert row[k] == v, k


def test_sim_table_output_has_a_header_and_one_line_per_run(spc_trace):
    p = cli("sim", spc_trace, "spc", "lru", "4,8,16")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.strip().splitlines()
    assert len(lines) == 4 and "miss_ratio" in lines[0]


def test_errors_exit_nonzero_with_a_message_on_stderr(spc_trace, tmp_path):
    p = cli("sim", spc_trace, "spc", "lur", "4")
    assert p.returncode == 2 and "unknown policy 'lur'" in p.stderr and p.stdout == ""
    bad = tmp_path / "bad.spc"
    bad.write_text("0,0,4096,r,0\n0,0,-5,r,0\n")
    p = cli("sim", str(bad), "spc", "lru", "4")
    assert p.returncode == 2 and "line 2" in p.stderr and "'Size'" in p.stderr
    p = cli("sim", spc_trace, "nosuchformat", "lru", "4")
    assert p.returncode == 2 and "unknown trace format" in p.stderr


def test_run_without_config_runs_the_builtin_default():
    p = cli("run", "-f", "json")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    assert [r["name"] for r in rows] == ["client", "server"]
    assert rows[0]["trace_requests"] == 200_000 and rows[0]["requests"] == 200_000
    assert rows[0]["prefetch_issued"] > 0 and rows[1]["requests"] == rows[0]["fetches"]


def test_run_reads_a_toml_config(spc_trace, tmp_path):
    toml = tmp_path / "c.toml"
    toml.write_text(f"[trace]\npath = {spc_trace!r}\n[[level]]\nsize = 8\n[[level]]\nsize = '2x'\npolicy = 'fifo'\n")
    p = cli("run", str(toml), "-f", "csv", "-o", str(tmp_path / "out.csv"))
    assert p.returncode == 0, p.stderr
    with open(tmp_path / "out.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["capacity_blocks"] for r in rows] == ["8", "16"]


def test_json_rows_carry_every_run_total_so_a_warm_up_run_says_what_it_left_out(spc_trace, tmp_path):
    # counters.md §6: the rows had trace_requests and trace_skipped only; no warmup_requests, trace_blocks
    # or stopped_early, which the results database and Result.raw have.
    py = ps.simulate(ps.open_trace(spc_trace, "spc"), size=8, engine={"warmup_requests": 10}).summary
    run = {f["name"] for f in ps.result_schema()["run"] if f["kind"] != "textlist"}
    want = {{"requests": "trace_requests", "blocks": "trace_blocks"}.get(n, n) for n in run}
    toml = tmp_path / "w.toml"
    toml.write_text(f"[trace]\npath = {spc_trace!r}\nformat = 'spc'\n[[level]]\nsize = 8\n"
                    "[engine]\nwarmup_requests = 10\n")
    for args in (("sim", spc_trace, "spc", "lru", "8", "--warmup", "10"), ("run", str(toml))):
        p = cli(*args, "-f", "json")
        assert p.returncode == 0, p.stderr
        row = json.loads(p.stdout.splitlines()[0])
        assert want <= set(row), args
        assert (row["trace_requests"], row["warmup_requests"], row["stopped_early"], row["requests"]) == (50, 10, False, 40)
        assert {k: row[k] for k in want} == {k: py[k] for k in want}, args


def test_trace_info_prints_the_statistics(spc_trace):
    p = cli("trace", "info", spc_trace, "-f", "json")
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert info["requests"] == 50 and info["footprint_blocks"] == 80 and info["read_share"] == 1.0


def test_trace_convert_round_trips_through_oracle_general(spc_trace, tmp_path):
    out = tmp_path / "t.oracleGeneral.bin.zst"
    p = cli("trace", "convert", spc_trace, str(out), "--per-block")
    assert p.returncode == 0, p.stderr
    a = ps.simulate(ps.open_trace(spc_trace), size=8).levels[0]
    b = ps.simulate(ps.open_trace(str(out)), size=8).levels[0]
    assert (a["demand_accesses"], a["hits"]) == (b["demand_accesses"], b["hits"])


def test_trace_convert_refuses_to_write_over_the_trace_it_reads(tmp_path):
    # `trace convert t.lis t.lis --to csv` replaced the trace with its conversion.
    import os

    t = tmp_path / "t.lis"
    t.write_text("1 2 0 1\n5 3 0 2\n")
    before = t.read_bytes()
    os.link(t, tmp_path / "hard.lis")
    (tmp_path / "sym.lis").symlink_to(t)
    for out in (str(t), str(tmp_path / "hard.lis"), str(tmp_path / "sym.lis"), str(tmp_path / ".." / tmp_path.name / "t.lis")):
        p = cli("trace", "convert", str(t), out, "--format", "arc", "--to", "csv")
        assert p.returncode == 2 and "is the trace being converted" in p.stderr, (out, p.stderr)
        assert t.read_bytes() == before
    # A merge member too.
    with pytest.raises(ps.TraceError, match="is the trace being converted"):
        both = ps.merge_traces(ps.open_trace(str(t), "arc"), ps.open_trace(str(t), "arc"))
        both.convert(str(tmp_path / "hard.lis"), to="csv")


def test_an_output_naming_an_input_is_refused_before_any_work(tmp_path):
    # `sim t.lis arc lru 10 -o t.lis` replaced the trace with the results table.
    t = tmp_path / "t.lis"
    t.write_text("1 2 0 1\n5 3 0 2\n")
    before = t.read_bytes()
    cfg = tmp_path / "c.toml"
    cfg.write_text("[[level]]\nsize = 4\n")
    backing = tmp_path / "disk.img"
    backing.write_bytes(b"\0" * 4096)
    for args in (["sim", str(t), "arc", "lru", "10", "-o", str(t)],
                 ["mrc", str(t), "--format", "arc", "--plot", str(t)],
                 ["trace", "info", str(t), "--format", "arc", "-o", str(t)],
                 ["run", str(cfg), "--trace", str(t), "-o", str(cfg)],
                 ["serve", str(cfg), "--backing", str(backing), "--socket", str(tmp_path / "s"), "--record", str(backing)]):
        p = cli(*args)
        assert p.returncode == 2 and "is the file this command reads" in p.stderr, (args, p.stderr)
    assert t.read_bytes() == before and backing.read_bytes() == b"\0" * 4096


def test_a_sweep_output_naming_its_own_database_is_refused_before_any_work(tmp_path):
    # `sweep s.toml -o s.sqlite` (the default database, in the current directory) or `--db X -o X` ran the
    # sweep, exit 0, and then replaced the database with the CSV rows; `--dry-run` too.
    spec = tmp_path / "s.toml"
    spec.write_text('[trace]\npath = "sequential"\nformat = "synthetic"\nparams = { requests = 2000, seed = 1 }\n'
                    '[[level]]\nsize = "5%"\n[sweep]\n"level[0].policy" = ["lru", "fifo"]\n')

    def sweep(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "prefetchsim", "sweep", "s.toml", *args], capture_output=True,
                              text=True, cwd=tmp_path)

    db, other = tmp_path / "s.sqlite", tmp_path / "other.sqlite"
    for args in (["--workers", "1", "-o", "s.sqlite"], ["--workers", "1", "-o", str(db)],
                 ["--workers", "1", "--db", "other.sqlite", "-o", str(other)], ["--dry-run", "-o", "s.sqlite"]):
        p = sweep(*args)
        assert p.returncode == 2 and "is this sweep's results database" in p.stderr, (args, p.stderr)
        assert not db.exists() and not other.exists(), args
    assert sweep("--workers", "1", "--no-progress").returncode == 0
    count = "select count(distinct run_id) from runs"
    assert sqlite3.connect(db).execute(count).fetchone()[0] == 2
    p = sweep("--dry-run", "-f", "csv", "-o", "s.sqlite")
    assert p.returncode == 2, p.stderr
    assert sqlite3.connect(db).execute(count).fetchone()[0] == 2, "the database is intact"


def test_an_output_naming_the_trace_of_a_config_or_the_event_log_is_refused(tmp_path):
    # `run cfg.toml -o t.lis` (t.lis the config's trace) and `--events t.lis` replaced the trace, exit 0.
    t = tmp_path / "t.lis"
    t.write_text("1 2 0 1\n5 3 0 2\n")
    before = t.read_bytes()
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[trace]\npath = {str(t)!r}\nformat = 'arc'\n[[level]]\nsize = 4\n")
    merged = tmp_path / "m.toml"
    merged.write_text(f"[trace]\nmerge = [{{ path = 'zipf', format = 'synthetic' }}, {{ path = {str(t)!r}, "
                      "format = 'arc' }]\n[[level]]\nsize = 4\n")
    spec = tmp_path / "s.toml"
    spec.write_text(f"[trace]\npath = {str(t)!r}\nformat = 'arc'\n[[level]]\nsize = 4\n"
                    "[sweep]\n'level[0].size' = [4, 8]\n")
    for args in (["run", str(cfg), "-f", "csv", "-o", str(t)],
                 ["run", str(cfg), "--events", str(t)],
                 ["run", str(merged), "-o", str(t)],
                 ["sim", str(t), "arc", "lru", "10", "--events", str(t)],
                 ["run", str(cfg), "--events", str(cfg)],
                 ["sweep", str(spec), "--db", str(tmp_path / "s.sqlite"), "-o", str(t)]):
        p = cli(*args)
        assert p.returncode == 2 and "is the file this command reads" in p.stderr, (args, p.stderr)
        assert t.read_bytes() == before, args


def test_sigterm_removes_the_partial_output_of_a_conversion(tmp_path):
    # SIGTERM (timeout, a batch system) left trace convert's hidden partial file beside the output;
    # Ctrl-C removed it.
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "out.csv"
    out.write_text("PREV")
    cmd = [sys.executable, "-m", "prefetchsim", "trace", "convert", "zipf", str(out), "--format", "synthetic",
           "--to", "csv", "-t", "requests=200000000"]
    p = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not any(f.name.endswith(".partial") for f in tmp_path.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert p.poll() is None, p.communicate()
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143, err
    assert "terminated" in err
    assert sorted(f.name for f in tmp_path.iterdir()) == ["out.csv"]
    assert out.read_text() == "PREV"


def test_three_prefetchers_stack_alike_with_or_without_parameters(capsys):
    # `lru+obl+obl+obl` ran (the core nests a+b+c) but `lru+obl(variant=tagged)+obl+obl` was refused.
    rows = []
    for algo in ("lru+obl+ra+obl", "lru+obl(variant=tagged)+ra(p=4)+obl"):
        assert main(["sim", "oltp-like", "synthetic", algo, "64", "-t", "requests=3000", "-f", "json"]) == 0
        rows.append(json.loads(capsys.readouterr().out.splitlines()[0]))
    assert rows[0]["prefetcher"] == rows[1]["prefetcher"] == "stack"
    keep = ("hits", "prefetch_issued", "second_issued", "second_used")
    assert {k: rows[0][k] for k in keep} == {k: rows[1][k] for k in keep}
    assert rows[0]["second_issued"] > 0


def test_list_names_the_registries(capsys):
    assert main(["list", "policies"]) == 0
    out = capsys.readouterr().out
    assert "lru" in out and "splitlru" in out


def test_trace_params_accept_libcachesim_delimiter_syntax():
    assert _parse_kv("obj-id-col=2,delimiter=,,has-header=true") == {
        "obj-id-col": 2, "delimiter": ",", "has-header": True
    }


def test_ctrl_c_stops_a_long_run_cleanly():
    import signal
    import time

    p = subprocess.Popen(
        [sys.executable, "-m", "prefetchsim", "sim", "zipf", "synthetic", "lru,arc", "1000,5000",
         "-t", "requests=2000000000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    time.sleep(2.0)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert "interrupted" in err and out == ""
    assert time.monotonic() - t0 < 10, "the run must stop promptly"


def test_the_guide_names_every_registered_format_policy_prefetcher_and_generator():
    from conftest import REPO

    guide = "".join(p.read_text() for p in sorted((REPO / "docs" / "guide").glob("*.md")))
    for registry in (ps.formats, ps.policies, ps.prefetchers, ps.generators):
        for name in registry():
            assert f"`{name}`" in guide, f"the guide (docs/guide) does not mention `{name}`"


def test_an_unknown_option_shows_the_commands_usage(lirs_trace, capsys):
    # `sim ... --limt 100` printed the top-level usage, cut to `{sim,run}`.
    for argv, usage in [(["sim", lirs_trace, "lirs", "lru", "4", "--limt", "100"], "usage: prefetchsim sim "),
                        (["run", "--limt", "100"], "usage: prefetchsim run "),
                        (["trace", "info", lirs_trace, "--limt", "1"], "usage: prefetchsim trace info ")]:
        with pytest.raises(SystemExit) as e:
            main(argv)
        err = capsys.readouterr().err
        assert e.value.code == 2 and err.startswith(usage) and "unrecognized arguments: --limt" in err, (argv, err)


def test_the_table_names_a_merged_trace_by_all_its_members(tmp_path, capsys):
    a, b = tmp_path / "P6.lis", tmp_path / "P12.lis"
    a.write_text("1 2 0 1\n5 3 0 2\n")
    b.write_text("9 1 0 1\n")
    cfg = tmp_path / "m.toml"
    cfg.write_text(f'[trace]\nmerge = [{{ path = "{a}" }}, {{ path = "{b}" }}]\n[[level]]\nsize = 4\n')
    assert main(["run", str(cfg)]) == 0
    table = capsys.readouterr().out
    assert "P6.lis + P12.lis" in table
    assert main(["run", str(cfg), "-f", "csv"]) == 0
    assert f"{a} + {b}" in capsys.readouterr().out


def test_convert_refuses_an_output_name_it_does_not_know(spc_trace, tmp_path):
    # `trace convert P6.lis.zst p6.txt` wrote oracleGeneral binary into p6.txt.
    p = cli("trace", "convert", spc_trace, str(tmp_path / "p6.txt"))
    assert p.returncode == 2 and "p6.txt: unknown output name; end it in .csv, .oracleGeneral" in p.stderr, p.stderr
    assert "--to" in p.stderr and not (tmp_path / "p6.txt").exists()
    with pytest.raises(ps.ConfigError, match="unknown output name"):
        ps.open_trace(spc_trace).convert(tmp_path / "p6.txt")
    assert cli("trace", "convert", spc_trace, str(tmp_path / "p6.txt"), "--to", "csv").returncode == 0
    for name in ("p.oracleGeneral", "p.oracleGeneral.bin.zst", "p.bin.gz", "p.csv.zst"):
        assert cli("trace", "convert", spc_trace, str(tmp_path / name)).returncode == 0, name


def test_convert_refuses_oracle_general_options_for_a_csv_output(spc_trace, tmp_path):
    # --rebase-time and --per-block with a CSV output were ignored: exit 0, the same file as without them.
    for option, name in (("--rebase-time", "rebase_time"), ("--per-block", "per_block")):
        for out, to in (("t.csv", ()), ("t.bin", ("--to", "csv"))):
            p = cli("trace", "convert", spc_trace, str(tmp_path / out), option, *to)
            assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
            assert f"{option}: applies to oracleGeneral output only; {tmp_path / out} is written as CSV" in p.stderr
            assert not (tmp_path / out).exists()
        with pytest.raises(ps.ConfigError, match=f"^{name}: applies to oracleGeneral output only"):
            ps.open_trace(spc_trace).convert(tmp_path / "t.csv", **{name: True})
    assert os.listdir(tmp_path) == ["scan.spc"]
    assert cli("trace", "convert", spc_trace, str(tmp_path / "t.oracleGeneral"), "--rebase-time",
               "--per-block").returncode == 0


def test_the_command_line_page_lists_every_command_and_experiment():
    # Its summary left out mrc, serve and cache, and its reproduce line left out optimal.
    import argparse
    import re
    from pathlib import Path

    from prefetchsim import reproduce

    page = (Path(__file__).resolve().parents[1] / "docs" / "guide" / "command-line.md").read_text()
    summary = page.split("```text\n", 1)[1].split("```", 1)[0]
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert {m.group(1) for m in re.finditer(r"^prefetchsim (\w+)", summary, re.M)} == set(sub.choices)
    line = next(ln for ln in summary.splitlines() if ln.startswith("prefetchsim reproduce"))
    assert line.rsplit(": ", 1)[1].split(", ") == list(reproduce.EXPERIMENTS)


def test_a_count_beyond_64_bits_is_echoed_as_typed(capsys):
    # The core saw it as a float and said "1e+23 is too large".
    with pytest.raises(SystemExit) as e:
        main(["sim", "zipf", "synthetic", "lru", "10", "--warmup", "99999999999999999999999"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--warmup: 99999999999999999999999 is too large; give at most 2^64 - 1" in err and "e+" not in err
