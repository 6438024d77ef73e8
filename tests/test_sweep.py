"""Sweeps: spec grids (axes, named axes, exclude rules, presets), stable run identities, execution on
local processes, any executor and a Dask LocalCluster, shards, progress, Ctrl-C and resume."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import prefetchsim as ps
import pytest
from prefetchsim.cli import main

ZIPF = {"path": "zipf", "format": "synthetic", "params": {"requests": 5000, "seed": 1}}


def spec(**sweep):
    return {"trace": dict(ZIPF), "level": [{"size": "5%"}], "sweep": sweep}


def write_spec(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "prefetchsim", *args], capture_output=True, text=True, cwd=cwd)


def no_timing(df):
    """Rows without what differs between executions of the same run (where and when it ran)."""
    return df.drop(columns=["host", "pid", "task_wall_s", "finished_at"]).reset_index(drop=True)


# ----------------------------------------------------------------------------- the grid


def test_grid_is_the_product_of_the_axes_minus_excluded_points():
    p = ps.sweep_plan(spec(**{
        "level[0].size": ["1%", "5%", "10%"],
        "level[0].policy": ["lru", "arc", "fifo"],
        "level[0].prefetcher": ["none", "obl"],
        "exclude": [{"level[0].policy": "fifo", "level[0].prefetcher": "obl"},
                    {"level[0].size": "1%", "level[0].policy": ["arc", "fifo"]}],
    }))
    # 3 x 3 x 2 = 18; rule 1 drops fifo+obl at 3 sizes (3), rule 2 drops arc/fifo at 1% (4, one already gone).
    assert len(p) == 18 - 3 - 3 and p.excluded == 6
    assert p.columns == ["level0_size", "level0_policy", "level0_prefetcher"]
    g = p.grid()
    assert not ((g.level0_policy == "fifo") & (g.level0_prefetcher == "obl")).any()
    assert set(g[g.level0_size == "1%"].level0_policy) == {"lru"}
    # Grid order: the last axis varies fastest.
    assert list(g.level0_prefetcher[:2]) == ["none", "obl"]


def test_a_grid_too_large_to_plan_is_refused_at_once():
    # 10^8 points used to be expanded one by one (still going after 60 s, on the way to about 100 GB).
    big = spec(**{"trace.params.seed": list(range(1000)), "level[0].size": list(range(1, 1001)),
                  "engine.warmup_requests": list(range(100))})
    with pytest.raises(ps.ConfigError, match=r"100,000,000 points \(1000 \(trace.params.seed\) x 1000"):
        ps.sweep_plan(big)


def test_lists_outside_the_sweep_table_are_not_axes():
    # A two-level hierarchy is a list in the config; only [sweep] entries are axes.
    p = ps.sweep_plan({"trace": ZIPF, "level": [{"size": 100}, {"size": "2x"}], "sweep": {"level[1].size": ["2x", "4x"]}})
    assert len(p) == 2
    assert [r.config["level"][1]["size"] for r in p.runs] == ["2x", "4x"]
    assert all(len(r.config["level"]) == 2 for r in p.runs)


def test_named_axes_set_several_keys_and_label_the_rows():
    p = ps.sweep_plan({
        "trace": ZIPF, "level": [{"size": "5%"}],
        "sweep": {"level[0].size": ["1%", "5%"],
                  "named": {"scheme": {"LRU": {"level[0].policy": "lru"},
                                       "ARC+OBL": {"level[0].policy": "arc", "level[0].prefetcher": "obl"}}},
                  "exclude": [{"scheme": "ARC+OBL", "level[0].size": "1%"}]},
    })
    assert [(r.labels["level0_size"], r.labels["scheme"]) for r in p.runs] == [("1%", "LRU"), ("5%", "LRU"), ("5%", "ARC+OBL")]
    arc = p.runs[-1].config["level"][0]
    assert arc["policy"] == "arc" and arc["prefetcher"] == "obl"


def test_whole_hierarchies_are_an_axis_recorded_in_the_hierarchy_column():
    two = [{"size": 100}, {"size": "2x"}]
    pfc = [{"size": 100}, {"size": "2x", "pfc": {"version": "A"}}]
    p = ps.sweep_plan({"trace": ZIPF, "level": two, "sweep": {"level": [two, pfc]}})
    assert [r.config["level"] for r in p.runs] == [two, pfc]
    assert p.columns == ["hierarchy"]
    assert [r.labels["hierarchy"] for r in p.runs] == [
        '[{"size":100},{"size":"2x"}]', '[{"size":100},{"pfc":{"version":"A"},"size":"2x"}]']


def test_any_level_key_is_an_axis_even_when_the_base_does_not_set_it():
    p = ps.sweep_plan({"trace": ZIPF, "level": [{"size": 100}, {"size": "2x"}],
                       "sweep": {"level[1].pfc": [{"version": "A"}, {"version": "B"}], "level[1].instances": [1, 2],
                                 "level[0].per_client": [False, True], "level[1].pfc.mode": ["full"]}})
    assert len(p) == 8
    assert p.runs[-1].config["level"] == [{"size": 100, "per_client": True},
                                          {"size": "2x", "pfc": {"version": "B", "mode": "full"}, "instances": 2}]
    with pytest.raises(ps.ConfigError, match=r"level\[1\]\.pfc\.bogus.*unknown field.*version"):
        ps.sweep_plan({"trace": ZIPF, "level": [{"size": 100}, {"size": "2x"}], "sweep": {"level[1].pfc.bogus": [1]}})


def test_a_parameter_axis_turns_a_component_name_into_a_table():
    p = ps.sweep_plan({"trace": ZIPF, "level": [{"size": 100, "policy": "splitlru"}],
                       "sweep": {"level[0].policy.up_ratio": [0.5, "2/3"]}})
    assert [r.config["level"][0]["policy"] for r in p.runs] == [
        {"name": "splitlru", "up_ratio": 0.5}, {"name": "splitlru", "up_ratio": "2/3"}]


def test_a_preset_replaces_axes_and_adds_rules():
    s = spec(**{"level[0].size": ["1%", "5%", "10%"], "level[0].policy": ["lru", "arc"],
                "presets": {"quick": {"level[0].size": ["5%"], "exclude": [{"level[0].policy": "arc"}]}}})
    assert len(ps.sweep_plan(s)) == 6
    quick = ps.sweep_plan(s, preset="quick")
    assert [(r.labels["level0_size"], r.labels["level0_policy"]) for r in quick.runs] == [("5%", "lru")]


def test_a_trace_axis_and_trace_parameters(tmp_path, spc_trace):
    # Strings are files (relative to the spec); tables are [trace] tables; trace.params.* are axes too.
    local = tmp_path / "local.spc"
    shutil.copy(spc_trace, local)
    path = write_spec(tmp_path / "t.toml", """
[trace]
path = "zipf"
format = "synthetic"
params = { requests = 2000 }
[[level]]
size = 8
[sweep]
"trace" = [{ path = "zipf", format = "synthetic", params = { requests = 2000 } }, "local.spc"]
"trace.params.seed" = [1, 2]
""")
    with pytest.raises(ps.ConfigError, match="trace"):
        # seed is a generator parameter: a file's reader has no `seed`.
        ps.sweep(path, ThreadPoolExecutor(2), db=None)
    path = write_spec(tmp_path / "t2.toml", """
[[level]]
size = 8
[sweep]
"trace" = [{ path = "zipf", format = "synthetic", params = { requests = 2000, seed = 1 }, label = "zipf-1" },
           { path = "zipf", format = "synthetic", params = { requests = 2000, seed = 2 }, label = "zipf-2" },
           "local.spc"]
"level[0].policy" = ["lru", "fifo"]
""")
    p = ps.sweep_plan(path)
    assert len(p) == 6 and len(p.traces) == 3
    assert sorted(t.label for t in p.traces.values()) == ["local.spc", "zipf-1", "zipf-2"]
    # A task never mixes traces.
    assert all(len({r.trace_id for r in t.runs}) == 1 for t in p.tasks(batch_size=4))
    df = ps.sweep(path, ThreadPoolExecutor(2), db=None)
    assert set(df.trace) == {"zipf-1", "zipf-2", "local.spc"}
    assert df[df.trace == "local.spc"].demand_accesses.iloc[0] == 100


def test_one_trace_under_two_labels_in_a_trace_axis_is_refused_naming_both(tmp_path, spc_trace):
    # The same file under two paths or labels is one run by identity: the first point's label vanished,
    # even from --dry-run. Under one label (the file in two folders) it is a plain duplicate.
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        shutil.copy(spc_trace, tmp_path / folder / "scan.spc")
    shutil.copy(spc_trace, tmp_path / "copy.spc")
    path = write_spec(tmp_path / "d.toml", """
[[level]]
size = 8
[sweep]
"trace" = ["a/scan.spc", { path = "copy.spc", label = "copy" }]
""")
    with pytest.raises(ps.ConfigError, match=r"'copy' \(.*copy.spc\) and 'scan.spc' \(.*scan.spc\) are the same trace"):
        ps.sweep_plan(path)
    p = cli("sweep", path, "--dry-run")
    assert p.returncode == 2 and "'copy'" in p.stderr and "'scan.spc'" in p.stderr, p.stderr
    path = write_spec(tmp_path / "d2.toml", """
[[level]]
size = 8
[sweep]
"trace" = ["a/scan.spc", "b/scan.spc"]
""")
    p = ps.sweep_plan(path)
    assert len(p) == 1 and p.duplicates == 1 and p.grid().trace.tolist() == ["scan.spc"]


def test_a_timed_sweep_keeps_the_response_times_and_plots_them(tmp_path):
    # The rows held the levels' counters only: no rt_* column, so `plot response-time` on a timed sweep
    # said "the instant engine has no time" though the runs were timed.
    pytest.importorskip("matplotlib")
    doc = {**spec(**{"level[0].prefetcher": ["none", "obl"]}), "engine": {"kind": "timed", "limit": 2000},
           "device": {"name": "cheetah9lp"}}
    db = str(tmp_path / "t.sqlite")
    df = ps.sweep(doc, ThreadPoolExecutor(2), db=db)
    single = ps.simulate(ps.synthetic("zipf", requests=5000, seed=1), size="5%", prefetcher="obl",
                         engine={"kind": "timed", "limit": 2000}, device="cheetah9lp")
    row = df[df.level0_prefetcher == "obl"].iloc[0]
    for k in ("rt_mean_ms", "rt_p99_ms", "makespan_ms", "device_requests", "device_utilization"):
        assert row[k] == single.summary[k], k
    assert ps.results(db).rt_mean_ms.notna().all()
    assert single.to_pandas().rt_mean_ms.iloc[0] == single.summary["rt_mean_ms"]
    out = tmp_path / "rt.png"
    assert main(["plot", "response-time", db, "-o", str(out)]) == 0 and out.stat().st_size > 0
    # A time-free sweep has no such columns.
    assert "rt_mean_ms" not in ps.sweep(spec(**{"level[0].size": ["5%"]}), db=None).columns


def test_the_example_spec_of_the_guide_expands():
    from conftest import REPO

    spec_path = REPO / "experiments" / "oltp-mrc.toml"
    p = ps.sweep_plan(spec_path)
    assert (len(p), p.excluded, len(p.traces)) == (144, 18, 3)
    assert len(ps.sweep_plan(spec_path, preset="quick")) == 24
    guide = (REPO / "docs" / "guide" / "sweeps.md").read_text()
    assert "experiments/oltp-mrc.toml`: 144 runs, 24 with `--preset quick`" in guide


# ----------------------------------------------------------------------------- identities


def _rid(level, engine=None, trace=None):
    doc = {"trace": trace or ZIPF, "level": [level]}
    if engine is not None:
        doc["engine"] = engine
    return ps.sweep_plan(doc).runs[0].run_id


def test_run_ids_ignore_key_order_spelling_and_spelled_out_defaults():
    base = _rid({"size": "5%"})
    assert base == _rid({"size": 0.05})
    assert base == _rid({"policy": "LRU", "size": "5%", "prefetcher": "off"})
    assert base == _rid({"size": "5%", "policy": {"name": "lru"}, "options": {"pf_second_chance": 0}})
    assert base == _rid({"size": "5%"}, engine={"warmup_requests": 0})
    # `pf_insert = "mru"` is the documented default: it made a second id for the same run.
    assert base == _rid({"size": "5%", "options": {"pf_insert": "mru"}})
    assert base == _rid({"size": "5%", "options": {"pf_insert": "default"}})
    assert base != _rid({"size": "5%", "options": {"pf_insert": "lru"}})
    # The default level name spelled out (it made every run of a grid new); another name is another run.
    assert base == _rid({"size": "5%", "name": "L1"})
    assert base != _rid({"size": "5%", "name": "client"})
    assert base != _rid({"size": "6%"})
    assert base != _rid({"size": "5%"}, engine={"warmup_requests": 10})
    assert base != _rid({"size": "5%"}, trace={**ZIPF, "params": {"requests": 5000, "seed": 2}})
    # The hash is the same in another process (no per-process salt).
    code = ("import prefetchsim as ps; print(ps.sweep_plan({'trace': %r, 'level': [{'size': '5%%'}]}).runs[0].run_id)"
            % (ZIPF,))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == base


def test_a_file_trace_is_identified_by_content_not_path(tmp_path, spc_trace):
    a = tmp_path / "a" / "scan.spc"
    b = tmp_path / "b" / "renamed.spc"
    for p in (a, b):
        p.parent.mkdir()
        shutil.copy(spc_trace, p)
    ida = _rid({"size": 8}, trace={"path": str(a)})
    assert ida == _rid({"size": 8}, trace={"path": str(b)})
    with open(b, "a") as f:
        f.write("0,999,4096,r,1.0\n")
    assert ida != _rid({"size": 8}, trace={"path": str(b)})
    assert ida != _rid({"size": 8}, trace={"path": str(a), "mode": "objects"})


# ----------------------------------------------------------------------------- bad specs


@pytest.mark.parametrize("sweep,needles", [
    ({"level[0].polcy": ["lru"]}, ["level[0].polcy", "polcy"]),
    ({"level[3].size": [1]}, ["level[3].size", "level has 1 entry"]),
    ({"enigne.warmup_requests": [0]}, ["enigne"]),
    ({"trace.blok_size": [512]}, ["trace.blok_size"]),
    ({"level[0].size": ["12 parsecs"]}, ["level[0].size", "12 parsecs"]),
    ({"level[0].policy": ["lru", "lur"]}, ["level[0].policy", "unknown policy 'lur'"]),
    ({"level[0].policy.up_ratio": [0.5]}, ["level[0].policy", "up_ratio"]),
    ({"level[0].size": "5%"}, ["sweep.level[0].size", "list"]),
    ({"level[0].size": []}, ["sweep.level[0].size", "list"]),
    ({"level[0].policy": ["lru"], "exclude": [{"level[0].polcy": "lru"}]}, ["sweep.exclude[0]", "level[0].polcy"]),
    ({"level[0].policy": ["lru"], "exclude": [{"level[0].policy": "arc"}]}, ["sweep.exclude[0].level[0].policy", "arc"]),
    ({"level[0].policy": ["lru"], "named": {"s": {"a": {"level[0].policy": "arc"}}}}, ["sweep.named.s", "level[0].policy"]),
    ({"named": {"policy": {"a": {"level[0].prefetcher": "obl"}}}}, ["policy", "results column"]),
])
def test_bad_specs_raise_a_config_error_naming_the_key(sweep, needles):
    with pytest.raises(ps.ConfigError) as e:
        ps.sweep_plan(spec(**sweep))
    for n in needles:
        assert n in str(e.value), (n, str(e.value))


@pytest.mark.parametrize("axis,values,needle", [
    ("trace.params.seed", [1, -2], "trace.params.seed: -2 is negative; expected a whole number, 0 or more "
                                   "(grid point trace_params_seed=-2)"),
    ("trace.params.requests", [200, "many"], "(grid point trace_params_requests='many')"),
    ("engine.warmup_requests", [0, -5], "(grid point engine_warmup_requests=-5)"),
])
def test_a_bad_value_on_any_axis_names_the_grid_point(axis, values, needle):
    # The trace axes named the value but not the grid point, as the level and engine axes do.
    with pytest.raises(ps.ConfigError) as e:
        ps.sweep_plan(spec(**{axis: values}))
    assert str(e.value).startswith("sweep: ") and needle in str(e.value), str(e.value)


@pytest.mark.parametrize("sizes,needle", [
    ([10, 0], "level[0].size: 0 blocks is less than one block (4096 B) (grid point level0_size=0)"),
    ([10, "1B"], "level[0].size: 1 B is less than one block (4096 B) (grid point level0_size='1B')"),
    (["2x"], "level[0].size: a multiple of the level above is not possible for the first level"),
])
def test_sizes_wrong_once_resolved_are_refused_before_anything_runs(sizes, needle):
    # They passed the plan and failed as runs of a started sweep ("1 of 2 runs failed").
    with pytest.raises(ps.ConfigError) as e:
        ps.sweep_plan(spec(**{"level[0].size": sizes}))
    assert needle in str(e.value)
    # The trace's own block size counts; a share of the footprint is left to the run.
    s = spec(**{"level[0].size": ["4KiB", "5%"]})
    assert len(ps.sweep_plan(s)) == 2
    s["trace"]["block_size"] = 8192
    with pytest.raises(ps.ConfigError, match=r"4096 B is less than one block \(8192 B\)"):
        ps.sweep_plan(s)
    s = {**spec(**{"level[1].size": ["2x", "0.0001x"]}), "level": [{"size": 10}, {"size": "2x"}]}
    with pytest.raises(ps.ConfigError, match=r"level\[1\]\.size: .* is less than one block"):
        ps.sweep_plan(s)


def test_a_misspelt_axis_in_a_preset_not_chosen_is_an_error():
    # It passed until the day the preset was chosen.
    bad = spec(**{"level[0].size": ["1%"], "presets": {"quick": {"level[0].sizee": ["1%"]}}})
    with pytest.raises(ps.ConfigError, match=r"sweep.presets.quick \(not chosen\).*level\[0\].sizee"):
        ps.sweep_plan(bad)
    good = spec(**{"level[0].size": ["1%"], "presets": {"quick": {"level[0].policy": ["arc", "lru"]}}})
    assert len(ps.sweep_plan(good)) == 1 and len(ps.sweep_plan(good, preset="quick")) == 2


def test_unknown_preset_and_bad_shard_name_the_key():
    with pytest.raises(ps.ConfigError, match=r"sweep.presets: unknown preset 'fast'.*quick"):
        ps.sweep_plan(spec(**{"level[0].size": ["1%"], "presets": {"quick": {"level[0].size": ["5%"]}}}), preset="fast")
    with pytest.raises(ps.ConfigError, match="shard"):
        ps.sweep(spec(**{"level[0].size": ["1%"]}), db=None, shard="3/2")
    # Not whole numbers: (1.5, 2) ran shard 1 and (True, 2) shard 1, without a word.
    for bad in ((1.5, 2), (0, 2.7), (True, 2), (1,), 3):
        with pytest.raises(ps.ConfigTypeError, match="shard"):
            ps.sweep(spec(**{"level[0].size": ["1%"]}), db=None, shard=bad)
    with pytest.raises(ps.ConfigTypeError, match="shard: K must be a whole number"):
        ps.sweep_plan(spec(**{"level[0].size": ["1%"]})).shard(1.5, 2)


def test_the_cli_exits_2_on_a_bad_spec(tmp_path):
    path = write_spec(tmp_path / "bad.toml", '[trace]\npath = "zipf"\nformat = "synthetic"\n[[level]]\nsize = 10\n'
                                             '[sweep]\n"level[0].polcy" = ["lru"]\n')
    p = cli("sweep", path, cwd=tmp_path)
    assert p.returncode == 2 and "level[0].polcy" in p.stderr and p.stdout == ""
    p = cli("sweep", path.replace("bad", "missing"), cwd=tmp_path)
    assert p.returncode == 2 and "no such sweep spec" in p.stderr
    good = write_spec(tmp_path / "good.toml", '[trace]\npath = "zipf"\nformat = "synthetic"\n[[level]]\nsize = 10\n'
                                              '[sweep]\n"level[0].size" = [10]\n')
    p = cli("sweep", good, "--preset", "nope", cwd=tmp_path)
    assert p.returncode == 2 and "unknown preset 'nope'" in p.stderr
    assert not (tmp_path / "good.sqlite").exists()
    # Counts below 1 are errors naming the option; a negative batch size used to plan no task and exit 0.
    for opt, value in [("--batch-size", "-5"), ("--batch-size", "0"), ("--workers", "-2"), ("--threads", "0")]:
        p = cli("sweep", good, opt, value, cwd=tmp_path)
        assert p.returncode == 2 and opt in p.stderr and p.stdout == "", (opt, value, p.stderr)
    assert not (tmp_path / "good.sqlite").exists()


@pytest.mark.parametrize("name,value", [("batch_size", -5), ("batch_size", 0), ("workers", -2), ("threads", 0),
                                        ("max_pending", 1.5), ("workers", True)])
def test_counts_below_one_are_errors_naming_the_argument(name, value):
    with pytest.raises(ps.ConfigError, match=f"^{name}: "):
        ps.sweep(spec(**{"level[0].size": ["1%"]}), db=None, **{name: value})


# ----------------------------------------------------------------------------- running


def test_rows_equal_plain_simulations_and_keep_the_grid_order():
    s = spec(**{"level[0].size": ["10%", "1%"], "level[0].policy": ["arc", "lru"]})
    df = ps.sweep(s, ThreadPoolExecutor(2), db=None)
    assert list(zip(df.level0_size, df.level0_policy)) == [("10%", "arc"), ("10%", "lru"), ("1%", "arc"), ("1%", "lru")]
    tr = ps.synthetic("zipf", requests=5000, seed=1)
    for _, row in df.iterrows():
        lv = ps.simulate(tr, size=row.level0_size, policy=row.level0_policy).levels[0]
        assert (row.capacity_blocks, row.hits, row.hit_ratio) == (lv["capacity_blocks"], lv["hits"], lv["hit_ratio"])
    assert (df.runs_executed == 1).all()


def test_local_processes_run_the_grid_with_a_progress_bar_when_forced(tmp_path):
    path = write_spec(tmp_path / "bar.toml", '[trace]\npath = "zipf"\nformat = "synthetic"\nparams = { requests = 3000 }\n'
                                             '[[level]]\nsize = "5%"\n[sweep]\n"level[0].policy" = ["lru", "arc"]\n'
                                             '"level[0].size" = ["1%", "5%"]\n')
    p = cli("sweep", path, "--progress", "--workers", "2", "-f", "csv", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert re.search(r"\b4/4\b", p.stderr), p.stderr
    assert p.stdout.count("\n") == 5 and (tmp_path / "bar.sqlite").exists()
    # Not a terminal and not forced: quiet (a summary line, no bar).
    p = cli("sweep", path, "--db", "other.sqlite", cwd=tmp_path)
    assert p.returncode == 0 and "4/4" not in p.stderr and "runs/s" not in p.stderr
    assert p.stdout == ""


def test_a_thread_pool_or_any_executor_gives_the_rows_of_local_processes():
    s = spec(**{"level[0].size": ["1%", "5%"], "level[0].policy": ["lru", "clock"]})
    a = ps.sweep(s, db=None, workers=2)
    b = ps.sweep(s, ThreadPoolExecutor(3), db=None, batch_size=1)
    assert no_timing(a).equals(no_timing(b))


def test_failed_runs_are_recorded_and_the_others_kept(tmp_path):
    # 0.001% of a 5000-request zipf footprint is less than a block: fails at run time, not in the spec.
    s = spec(**{"level[0].size": ["0.001%", "5%", "10%"]})
    db = tmp_path / "f.sqlite"
    # The first failure is named by its grid point too, as the checks before a sweep name one (the run
    # hash alone said nothing of which size failed).
    with pytest.raises(ps.PrefetchsimError, match=r"1 of 3 runs failed.* first: run [0-9a-f]+ "
                                                  r"\(grid point level0_size='0\.001%'\): .*less than one block"):
        ps.sweep(s, ThreadPoolExecutor(2), db=db, batch_size=3)
    df = ps.results(db)
    assert sorted(df.level0_size) == ["10%", "5%"]
    with sqlite3.connect(db) as con:
        (n,) = con.execute("SELECT COUNT(*) FROM attempts WHERE status = 'failed'").fetchone()
    con.close()
    assert n == 1


def test_shards_partition_the_grid_deterministically(tmp_path, monkeypatch, capsys):
    s = spec(**{"level[0].size": [f"{i}%" for i in range(1, 11)], "level[0].policy": ["lru", "arc"]})
    p = ps.sweep_plan(s)
    shards = [p.shard(k, 3) for k in range(3)]
    ids = [r.run_id for sh in shards for r in sh.runs]
    assert sorted(ids) == sorted(r.run_id for r in p.runs) and len(set(ids)) == len(ids)
    assert [r.run_id for r in ps.sweep_plan(s).shard(1, 3).runs] == [r.run_id for r in shards[1].runs]
    # A run keeps its shard when the grid grows.
    bigger = ps.sweep_plan(spec(**{"level[0].size": [f"{i}%" for i in range(1, 11)], "level[0].policy": ["lru", "arc", "fifo"]}))
    assert {r.run_id for r in shards[1].runs} <= {r.run_id for r in bigger.shard(1, 3).runs}
    # Each shard into its own database (the CLI's default name); merged, they are the grid.
    monkeypatch.chdir(tmp_path)
    for k in range(3):
        ps.sweep(s, ThreadPoolExecutor(2), db=f"sh.shard-{k}-of-3.sqlite", shard=f"{k}/3")
    path = write_spec(tmp_path / "sh.toml", "[trace]\npath = 'zipf'\nformat = 'synthetic'\n"
                                            "params = { requests = 5000, seed = 1 }\n[[level]]\nsize = '5%'\n[sweep]\n"
                                            "'level[0].size' = [" + ", ".join(f"'{i}%'" for i in range(1, 11)) + "]\n"
                                            "'level[0].policy' = ['lru', 'arc']\n")
    # A resubmitted array task finds its shard done.
    assert main(["sweep", path, "--shard", "1/3", "--dry-run", "-f", "csv"]) == 0
    out = capsys.readouterr()
    assert "sh.shard-1-of-3.sqlite" in out.err and "True" in out.out and "False" not in out.out
    dbs = sorted(str(x) for x in tmp_path.glob("sh.shard-*-of-3.sqlite"))
    assert len(dbs) == 3
    assert main(["results", *dbs, "--export", "all.sqlite"]) == 0
    merged = ps.results(tmp_path / "all.sqlite")
    assert sorted(merged.run_id) == sorted(r.run_id for r in p.runs)
    assert (merged.runs_executed == 1).all()
    # Reading the shards together gives the same rows.
    assert sorted(ps.results(dbs).run_id) == sorted(merged.run_id)
    # Merging again adds nothing: every attempt was copied again, and runs_executed went 1, 2, 4.
    assert main(["results", *dbs, "--export", "all.sqlite"]) == 0
    assert (ps.results(tmp_path / "all.sqlite").runs_executed == 1).all()
    # A database merged into itself is refused, as any output naming an input.
    assert main(["results", "all.sqlite", "--export", "all.sqlite"]) == 2
    assert "is the file this command reads" in capsys.readouterr().err


def test_a_cli_shard_is_recorded_in_its_session(tmp_path, monkeypatch):
    # The CLI shards the plan before the sweep; its session's `shard` was empty (the API's was not).
    monkeypatch.chdir(tmp_path)
    path = write_spec(tmp_path / "c.toml", "[trace]\npath = 'zipf'\nformat = 'synthetic'\n"
                                           "params = { requests = 2000, seed = 1 }\n[[level]]\nsize = '5%'\n[sweep]\n"
                                           "'level[0].policy' = ['lru', 'arc', 'fifo', 'clock']\n")
    assert main(["sweep", path, "--shard", "1/2", "--workers", "1", "--no-progress"]) == 0
    with sqlite3.connect(tmp_path / "c.shard-1-of-2.sqlite") as con:
        assert con.execute("select shard from sessions").fetchall() == [("1/2",)]


def _rows_in(db: Path) -> int:
    if not db.exists():
        return 0
    con = sqlite3.connect(db, timeout=5)
    try:
        return con.execute("SELECT COUNT(DISTINCT run_id) FROM runs").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def _kill_and_resume(tmp_path: Path, text: str, runs: int, kill_at: int, levels: int = 1,
                     sig: int = signal.SIGINT, times: int = 1) -> None:
    """Run the sweep CLI, send it ``sig`` once ``kill_at`` runs are stored, run it again: the grid must
    end complete, each run executed once, and the sessions must say so."""
    path = write_spec(tmp_path / "kill.toml", text)
    db = tmp_path / "kill.sqlite"
    cmd = [sys.executable, "-m", "prefetchsim", "sweep", path, "--workers", "2", "--batch-size", "1"]
    p = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while _rows_in(db) < kill_at and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert p.poll() is None, "the sweep finished before it could be interrupted"
    t0 = time.monotonic()
    for i in range(times):
        if i:
            time.sleep(0.002 * i)
        if p.poll() is None:
            p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    # 128 + the signal's number, as a shell reports a process the signal ended (130 Ctrl-C, 143 SIGTERM);
    # a signal repeated after the cleanup may end the process itself as it exits (-sig).
    assert p.returncode == 128 + sig or (times > 1 and p.returncode == -sig), err
    assert time.monotonic() - t0 < 10, "Ctrl-C must stop the workers promptly"
    assert "run the same command again to resume" in err
    kept = _rows_in(db)
    assert kill_at <= kept < runs

    p2 = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert p2.returncode == 0, p2.stderr
    df = ps.results(db)
    assert len(df) == runs * levels and df.run_id.nunique() == runs
    assert (df.runs_executed == 1).all(), "no finished run may run again"
    con = sqlite3.connect(db)
    try:
        sessions = con.execute("SELECT status, already_done, executed FROM sessions ORDER BY id").fetchall()
        (done_attempts,) = con.execute("SELECT COUNT(*) FROM attempts WHERE status = 'done'").fetchone()
        (mode,) = con.execute("PRAGMA journal_mode").fetchone()
    finally:
        con.close()
    assert mode == "wal"
    assert [s[0] for s in sessions] == ["interrupted", "finished"]
    assert sessions[1][1] == sessions[0][2] == kept and sessions[0][2] + sessions[1][2] == runs == done_attempts
    print(f"{runs} runs: interrupted after {kept}, resumed {sessions[1][2]}; {done_attempts} executions")


def _zipf_sweep(sizes: list[str], policies: list[str]) -> str:
    """A sweep spec over a million-request Zipf trace (about 0.2 s a run)."""
    return f"""
[trace]
path = "zipf"
format = "synthetic"
params = {{ requests = 1000000, seed = 3 }}
[[level]]
size = "5%"
[sweep]
"level[0].size" = {sizes!r}
"level[0].policy" = {policies!r}
""".replace("'", '"')


def test_an_interrupted_sweep_resumes_without_redoing_or_duplicating_runs(tmp_path):
    # 24 runs over 2 workers; SIGINT once some rows exist, then the same command again.
    text = _zipf_sweep(["1%", "2%", "4%", "8%", "16%", "32%"], ["lru", "arc", "fifo", "clock"])
    _kill_and_resume(tmp_path, text, runs=24, kill_at=4)


def test_sigterm_ends_a_sweep_as_ctrl_c_does(tmp_path):
    # SIGTERM (timeout, a batch system) killed the sweep at once and left its session "running".
    text = _zipf_sweep(["1%", "2%", "4%", "8%"], ["lru", "arc"])
    _kill_and_resume(tmp_path, text, runs=8, kill_at=2, sig=signal.SIGTERM)


def test_sigterm_sent_again_during_the_cleanup_still_marks_the_session_interrupted(tmp_path):
    # `timeout -s TERM` signals the process and then its group, so the sweep gets SIGTERM twice: the second
    # one cut the cleanup short and the session stayed "running" (3 of 11 runs of a user study).
    text = _zipf_sweep(["1%", "2%", "4%", "8%"], ["lru", "arc"])
    _kill_and_resume(tmp_path, text, runs=8, kill_at=2, sig=signal.SIGTERM, times=4)


def _workers_of(pid: int) -> list[int]:
    """The pool's worker processes among the children of ``pid`` (Linux /proc; not the resource tracker)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and "spawn_main" in cmd and "resource_tracker" not in cmd:
            out.append(int(d.name))
    return out


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the worker processes through Linux /proc")
def test_a_worker_killed_with_sigkill_loses_only_its_running_task(tmp_path):
    # 24 runs of ~0.2 s over 2 workers; once some rows are stored, SIGKILL one worker (as the out-of-memory
    # killer would). The sweep must keep what finished, rerun what the dead pool held and end complete, each
    # run stored once, the database intact.
    path = write_spec(tmp_path / "k9.toml", """
[trace]
path = "zipf"
format = "synthetic"
params = { requests = 1000000, seed = 4 }
[[level]]
size = "5%"
[sweep]
"level[0].size" = ["1%", "2%", "4%", "8%", "16%", "32%"]
"level[0].policy" = ["lru", "arc", "fifo", "clock"]
""")
    db = tmp_path / "k9.sqlite"
    cmd = [sys.executable, "-m", "prefetchsim", "sweep", path, "--workers", "2", "--batch-size", "1"]
    p = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while _rows_in(db) < 3 and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = _workers_of(p.pid)
    assert p.poll() is None and workers, "the sweep finished before a worker could be killed"
    before = _rows_in(db)
    os.kill(workers[0], signal.SIGKILL)
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    df = ps.results(db)
    assert len(df) == 24 and df.run_id.nunique() == 24 and (df.runs_executed == 1).all()
    assert before < 24, "the kill came after the last run"
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        (done,) = con.execute("SELECT COUNT(*) FROM attempts WHERE status = 'done'").fetchone()
        (failed,) = con.execute("SELECT COUNT(*) FROM attempts WHERE status = 'failed'").fetchone()
    finally:
        con.close()
    assert (done, failed) == (24, 0)
    assert workers[0] not in _workers_of(p.pid)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the worker processes through Linux /proc")
def test_the_workers_of_a_client_killed_with_sigkill_exit(tmp_path):
    # `kill -9` of the sweep client (the OOM killer, `timeout -s KILL`) left its local workers waiting for
    # tasks for ever, holding a `| tee` pipe open. They now see their parent gone and exit.
    path = write_spec(tmp_path / "orphans.toml", _zipf_sweep(["1%", "2%", "4%", "8%"], ["lru", "arc"]))
    cmd = [sys.executable, "-m", "prefetchsim", "sweep", path, "--workers", "2", "--batch-size", "1"]
    p = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while len(workers) < 2 and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
        workers = _workers_of(p.pid)
    assert workers and p.poll() is None, "no worker seen before the sweep ended"
    p.kill()
    p.wait()
    deadline = time.monotonic() + 60
    while any(Path(f"/proc/{w}").exists() for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [w for w in workers if Path(f"/proc/{w}").exists()]
    for w in left:
        os.kill(w, signal.SIGKILL)
    assert not left, f"workers {left} outlived their killed client"


@pytest.mark.slow
def test_the_200_run_acceptance_sweep_killed_halfway_resumes(tmp_path):
    # The acceptance size; run by hand: pytest -m slow -k 200_run -s
    _kill_and_resume(tmp_path, """
[trace]
path = "oltp-like"
format = "synthetic"
params = { requests = 400000, seed = 5 }
[[level]]
name = "client"
size = "5%"
[[level]]
name = "server"
size = "2x"
policy = "arc"
[sweep]
"level[0].size" = ["0.5%", "1%", "2%", "3%", "5%", "8%", "10%", "15%", "20%", "30%"]
"level[0].policy" = ["lru", "arc", "fifo", "clock", "2q"]
"level[0].prefetcher" = ["none", "obl", "linux", "amp"]
""", runs=200, kill_at=100, levels=2)


def test_a_dask_local_cluster_gives_the_rows_of_the_local_run():
    distributed = pytest.importorskip("distributed", reason="the cluster extra (prefetchsim[cluster]) is not installed")
    s = spec(**{"level[0].size": ["1%", "5%", "20%"], "level[0].policy": ["lru", "arc"], "level[0].prefetcher": ["none", "obl"]})
    local = ps.sweep(s, db=None, workers=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            remote = ps.sweep(s, client, db=None)
            via_executor = ps.sweep(s, client.get_executor(), db=None, batch_size=1)
    assert len(local) == 12
    assert no_timing(local).equals(no_timing(remote))
    assert no_timing(local).equals(no_timing(via_executor))
    assert set(remote.pid) != {os.getpid()}


def test_a_missing_scheduler_file_is_an_error_not_a_wait(tmp_path):
    # Dask's Client(scheduler_file=...) waited forever, silently, for the file to appear.
    pytest.importorskip("distributed", reason="the cluster extra (prefetchsim[cluster]) is not installed")
    good = write_spec(tmp_path / "good.toml", '[trace]\npath = "zipf"\nformat = "synthetic"\n[[level]]\nsize = 10\n'
                                              '[sweep]\n"level[0].size" = [10]\n')
    p = subprocess.run([sys.executable, "-m", "prefetchsim", "sweep", good, "--scheduler", str(tmp_path / "s.json")],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert p.returncode == 2 and "no such scheduler file" in p.stderr, p.stderr


def test_the_run_bar_uses_tqdm_when_installed_and_a_plain_line_otherwise(monkeypatch):
    import io
    import types

    from prefetchsim import _progress

    monkeypatch.setattr(_progress, "optional", lambda name: None)
    out = io.StringIO()
    bar = _progress.Progress(10, initial=4, progress=True, desc="grid", stream=out)
    bar.update(6)
    bar.close()
    assert "grid: 10/10 runs (100%)" in out.getvalue() and out.getvalue().endswith("\n")
    quiet = io.StringIO()
    bar = _progress.Progress(10, progress=None, stream=quiet)  # not a terminal, not forced
    bar.update(10)
    bar.close()
    assert quiet.getvalue() == ""

    calls = []

    class FakeTqdm:
        def __init__(self, **kw):
            calls.append(("init", kw["total"], kw["initial"], kw["unit"]))

        def update(self, n):
            calls.append(("update", n))

        def set_postfix_str(self, s, refresh=True):
            calls.append(("postfix", s))

        def close(self):
            calls.append(("close",))

    monkeypatch.setattr(_progress, "optional", lambda name: types.SimpleNamespace(tqdm=FakeTqdm))
    bar = _progress.Progress(10, initial=2, progress=True, stream=io.StringIO())
    bar.set_requests(3_000_000)
    bar.update(8)
    bar.close()
    assert calls == [("init", 10, 2, "run"), ("postfix", "3.0M requests in running tasks"), ("update", 8), ("close",)]


def test_the_cli_says_when_a_sweep_has_nothing_left_to_run(tmp_path):
    # Re-running a finished sweep said "2 runs in s.sqlite", though the docs promise it says nothing is left.
    path = write_spec(tmp_path / "s.toml", '[trace]\npath = "zipf"\nformat = "synthetic"\nparams = { requests = 500 }\n'
                                           '[[level]]\nsize = 10\n[sweep]\n"level[0].policy" = ["lru", "arc"]\n')
    first = cli("sweep", path, "--workers", "1", cwd=tmp_path)
    assert first.returncode == 0 and "2 runs in s.sqlite (2 run now" in first.stderr, first.stderr
    again = cli("sweep", path, "--workers", "1", cwd=tmp_path)
    assert again.returncode == 0 and "nothing left to run: all 2 runs are in s.sqlite" in again.stderr, again.stderr


def test_demote_runs_spell_out_demote_read_pos_and_du_runs_keep_their_form():
    # A sweep's run id hashes the canonical config. DEMOTE's default changed (blocks sent up now stay at
    # the lower level's eviction end; before, they left, today's `demote_read_pos = "none"`), so a DEMOTE
    # run's canonical form names its `demote_read_pos` and no result of the old model is reused as the new
    # default's. DU did not change: its defaults spelled out give the form it always had.
    from prefetchsim._grid import canonical_config

    def server(options):
        return canonical_config({"level": [{"size": 4}, {"size": 8, "options": options}]})["level"][1]

    assert server({"exclusive": "demote"})["options"] == {"exclusive": "demote", "demote_read_pos": "lru_end"}
    assert server({"exclusive": "demote", "demote_read_pos": "lru_end", "demote_insert_pos": "mru"}) == \
        server({"exclusive": "demote"})
    assert server({"exclusive": "demote", "demote_read_pos": "none"}) != server({"exclusive": "demote"})
    assert server({"exclusive": "du", "du_position": "lru_end", "du_on_prefetch": False})["options"] == \
        {"exclusive": "du"}
    assert server({"exclusive": "du", "du_position": "evict_now"}) != server({"exclusive": "du"})
