"""`prefetchsim.plot`: each kind returns labelled Axes (units, legends, log scales where they belong);
the `plot` command draws from a database or CSV; the reproduce figures are drawn through this API."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import prefetchsim as ps
import pytest
from prefetchsim import plot
from prefetchsim._deps import MissingDependency
from prefetchsim.cli import main

pytest.importorskip("matplotlib", reason="the plot extra (prefetchsim[plot]) is not installed")

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture(scope="module")
def sweep_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("plot") / "mrc.sqlite"
    spec = {
        "trace": {"path": "zipf", "format": "synthetic", "params": {"requests": 5000, "seed": 1}},
        "level": [{"size": "5%"}, {"size": "2x", "policy": "arc"}],
        "sweep": {"level[0].size": ["1%", "5%", "20%", "50%"], "level[0].policy": ["lru", "arc"],
                  "level[0].prefetcher": ["none", "obl"]},
    }
    ps.sweep(spec, ThreadPoolExecutor(2), db=path)
    return path


@pytest.fixture
def timed():
    """Rows shaped like the timed engine's (a response-time column per run), PFC-style cases."""
    rows = []
    for trace in ("OLTP", "Web"):
        for l1 in ("5%", "10%"):
            for scheme, rt in (("RA", 10.0), ("PFC", 8.0), ("DU", 9.5)):
                rows.append({"trace": trace, "level0_size": l1, "scheme": scheme, "level": 0,
                             "rt_mean_ms": rt * (2 if trace == "Web" else 1) * (0.8 if l1 == "10%" else 1)})
    return pd.DataFrame(rows)


def test_mrc_draws_one_line_per_algorithm_on_a_log_size_axis(sweep_db):
    df = ps.results(sweep_db)
    ax = plot.mrc(df, hue=["policy", "prefetcher"])
    assert ax.get_xlabel() == "cache size (blocks)" and ax.get_ylabel() == "miss ratio"
    assert ax.get_xscale() == "log"  # 1% .. 50%: sizes span decades
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["lru + none", "lru + obl", "arc + none", "arc + obl"]
    assert len(ax.lines) == 4 and all(len(line.get_xdata()) == 4 for line in ax.lines)
    # Level 0 only: the server rows (level 1) are not mixed in.
    assert max(ax.lines[0].get_xdata()) == df[df.level == 0].capacity_blocks.max()


def test_several_rows_on_one_point_name_the_column_that_varies(sweep_db):
    with pytest.raises(ValueError, match="prefetcher"):
        plot.mrc(ps.results(sweep_db), hue="policy")


def _two_seeds():
    """MRC rows of a sweep over two seeds: a share gives each seed a slightly different capacity."""
    rows = []
    for seed, caps in ((1, (532, 2660, 10643)), (2, (528, 2643, 10572))):
        for size, cap in zip(("1%", "5%", "20%"), caps):
            for policy in ("lru", "arc"):
                rows.append({"trace": "oltp-like", "trace_params_seed": seed, "level0_size": size, "level": 0,
                             "policy": policy, "capacity_blocks": cap,
                             "miss_ratio": 0.9 - cap / 20000 - seed / 100 - (policy == "arc") / 10})
    return pd.DataFrame(rows)


def test_a_line_through_rows_that_differ_in_another_column_is_an_error_naming_it():
    with pytest.raises(ValueError, match="the rows of one line differ in trace_params_seed, not only in capacity_blocks"):
        plot.mrc(_two_seeds())
    with pytest.raises(ValueError, match="several rows share one point.*differ in trace_params_seed"):
        plot.line(_two_seeds(), "level0_size", "miss_ratio", "policy")
    ax = plot.mrc(_two_seeds(), hue=["policy", "trace_params_seed"])
    assert len(ax.lines) == 4 and all(len(line.get_xdata()) == 3 for line in ax.lines)
    # 528 and 532 would print on top of each other: one tick stands for both.
    assert [int(t) for t in ax.get_xticks()] == [528, 2643, 10572]
    one = plot.mrc(_two_seeds()[lambda d: d.trace_params_seed == 1])
    assert [line.get_xdata().tolist() for line in one.lines] == [[532, 2660, 10643]] * 2


def test_a_share_axis_is_drawn_in_percent():
    df = pd.DataFrame({"share": [0.01, 0.05, 0.2], "hit_ratio": [0.1, 0.2, 0.4]})
    ax = plot.mrc(df, x="share", y="hit_ratio")
    assert ax.get_xlabel() == "cache size (% of footprint)" and list(ax.lines[0].get_xdata()) == [1.0, 5.0, 20.0]
    assert ax.get_legend() is None


def test_response_time_takes_any_metric_column(timed):
    ax = plot.response_time(timed[timed.level0_size == "5%"], x="trace", metric="rt_mean_ms", hue="scheme")
    assert ax.get_ylabel() == "mean response time (ms)" and ax.get_xlabel() == "trace"
    assert len(ax.patches) == 6 and [t.get_text() for t in ax.get_legend().get_texts()] == ["RA", "PFC", "DU"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["OLTP", "Web"]
    ax = plot.response_time(timed.assign(rt_p99_ms=timed.rt_mean_ms * 3)[timed.trace == "OLTP"], x="level0_size",
                            metric="rt_p99_ms", kind="line")
    assert ax.get_ylabel() == "99th percentile response time (ms)" and len(ax.lines) == 3
    with pytest.raises(ValueError, match="response-time columns: rt_mean_ms"):
        plot.response_time(timed, metric="rt_median_ms")


def test_unused_prefetch_is_on_a_log_scale(sweep_db):
    df = ps.results(sweep_db, ["level0_prefetcher=obl"])
    ax = plot.unused_prefetch(df)
    assert ax.get_yscale() == "log" and ax.get_ylabel() == "unused prefetched blocks"
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {"lru", "arc"}
    ax = plot.unused_prefetch(df[df.level0_size == "5%"], x="policy", kind="bar")
    assert ax.get_yscale() == "log" and len(ax.patches) == 2


def test_level_hit_ratios_show_every_level(sweep_db):
    df = ps.results(sweep_db, ["level0_prefetcher=none", "level0_policy=lru"])
    ax = plot.level_hit_ratios(df)
    assert ax.get_ylabel() == "hit ratio" and ax.get_legend().get_title().get_text() == "level"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["L1", "L2"]
    assert len(ax.patches) == 2 * 4


def test_improvement_over_a_baseline_per_case(timed):
    table = plot.improvement_table(timed, "rt_mean_ms", baseline="RA")
    assert list(table.columns) == ["PFC", "DU"] and table.shape == (4, 2)
    # Response time is lower-is-better: 8 ms against 10 ms is a 20% improvement.
    assert table.loc[("OLTP", "5%"), "PFC"] == pytest.approx(20.0)
    assert table.loc[("Web", "10%"), "DU"] == pytest.approx(5.0)
    ax = plot.improvement(timed, "rt_mean_ms", baseline="RA")
    assert ax.get_xlabel() == "scheme" and ax.get_ylabel() == "trace / level0_size"
    assert "+20.0%" in [t.get_text() for t in ax.texts]
    assert ax.figure.axes[-1].get_ylabel() == "improvement over RA (%)"
    assert ax.get_title() == "mean response time (ms): improvement over RA"
    higher = plot.improvement_table(timed.rename(columns={"rt_mean_ms": "hit_ratio"}), "hit_ratio", baseline="RA")
    assert higher.loc[("OLTP", "5%"), "PFC"] == pytest.approx(-20.0)
    with pytest.raises(ValueError, match="baseline 'LRU'"):
        plot.improvement_table(timed, "rt_mean_ms", baseline="LRU")


def test_timeseries_draws_metrics_against_simulated_time():
    df = pd.DataFrame({"time_ns": [0, 1e9, 2e9, 0, 1e9, 2e9], "scheme": ["A"] * 3 + ["B"] * 3,
                       "rt_mean_ms": [1, 2, 3, 2, 3, 4], "hit_ratio": [0.1, 0.2, 0.3, 0.2, 0.3, 0.4]})
    ax = plot.timeseries(df, "rt_mean_ms", hue="scheme")
    assert ax.get_xlabel() == "simulated time (s)" and list(ax.lines[0].get_xdata()) == [0.0, 1.0, 2.0]
    assert ax.get_ylabel() == "mean response time (ms)" and len(ax.get_legend().get_texts()) == 2
    ax = plot.timeseries(df[df.scheme == "A"], ["rt_mean_ms", "hit_ratio"])
    assert len(ax.lines) == 2 and ax.get_legend() is not None


def test_the_plot_command_draws_from_a_database_or_a_csv(sweep_db, tmp_path, capsys):
    out = tmp_path / "mrc.png"
    assert main(["plot", "mrc", str(sweep_db), "-o", str(out), "--y", "hit_ratio", "--hue", "policy,prefetcher"]) == 0
    assert out.read_bytes()[:8] == PNG
    csv = tmp_path / "r.csv"
    ps.results(sweep_db).to_csv(csv, index=False)
    out2 = tmp_path / "levels.svg"
    assert main(["plot", "levels", str(csv), "-o", str(out2), "--filter", "level0_policy=lru",
                 "--filter", "level0_prefetcher=none"]) == 0
    assert out2.read_text().lstrip().startswith("<?xml")
    capsys.readouterr()
    assert main(["plot", "response-time", str(sweep_db), "-o", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "rt_mean_ms" in err and "timed engine" in err
    # And as a command.
    p = subprocess.run([sys.executable, "-m", "prefetchsim", "plot", "unused-prefetch", str(sweep_db), "-o",
                        str(tmp_path / "u.png"), "--filter", "level0_prefetcher=obl", "--hue", "policy"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "u.png").read_bytes()[:8] == PNG


def test_a_level_the_results_do_not_hold_is_an_error(sweep_db, tmp_path, capsys):
    # It drew level 0 instead (results of one level) or nothing at all (several levels).
    out = tmp_path / "x.png"
    for args, needle in [(["--level", "7"], "--level 7: the results hold level(s) 0, 1"),
                         (["--level", "1", "--filter", "level=0"], "--level 1: the results hold level(s) 0"),
                         ]:
        assert main(["plot", "mrc", str(sweep_db), "-o", str(out), *args]) == 2, args
        assert needle in capsys.readouterr().err, args
    with pytest.raises(SystemExit) as e:
        main(["plot", "mrc", str(sweep_db), "-o", str(out), "--level", "-1"])
    assert e.value.code == 2 and "--level: -1 is negative" in capsys.readouterr().err
    for side, value in [("--width", "1e9"), ("--height", "0"), ("--width", "nan")]:
        # A huge width was a matplotlib traceback; zero height "cannot write empty image".
        with pytest.raises(SystemExit) as e:
            main(["plot", "mrc", str(sweep_db), "-o", str(out), side, value])
        assert e.value.code == 2 and f"argument {side}: {value} inches" in capsys.readouterr().err
    assert main(["plot", "levels", str(sweep_db), "-o", str(out), "--level", "1"]) == 2
    assert "draws every level" in capsys.readouterr().err
    assert not out.exists()
    assert main(["plot", "mrc", str(sweep_db), "-o", str(out), "--level", "1", "--y", "hit_ratio",
                 "--hue", "level0_policy,level0_prefetcher"]) == 0
    with pytest.raises(ValueError, match="level 5: the results hold levels 0, 1"):
        plot.mrc(ps.results(sweep_db), level=5)


def test_matplotlib_is_imported_only_when_plotting(monkeypatch):
    p = subprocess.run([sys.executable, "-c", "import sys, prefetchsim; print('matplotlib' in sys.modules)"],
                       capture_output=True, text=True, check=True)
    assert p.stdout.strip() == "False"
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingDependency, match=r"pip install 'prefetchsim\[plot\]'"):
        plot.mrc(pd.DataFrame({"capacity_blocks": [1, 2], "miss_ratio": [0.5, 0.4]}))


def test_reproduce_figures_are_drawn_through_the_plot_api(tmp_path, monkeypatch):
    from prefetchsim.reproduce import mithril, split

    saved, drawn = [], []
    real_save, real_line = plot.savefig, plot.line
    monkeypatch.setattr(plot, "savefig", lambda fig, path, **kw: saved.append(real_save(fig, path, **kw)))
    monkeypatch.setattr(plot, "line", lambda *a, **kw: drawn.append(kw.get("title")) or real_line(*a, **kw))
    split.run(requests=3000, workloads=("mix1",), out_dir=str(tmp_path))
    mithril.run(traces=[ps.synthetic("associations", requests=20_000, groups=500)], shares=(0.01, 0.1),
                out_dir=str(tmp_path))
    names = sorted(p.rsplit("/", 1)[-1] for p in saved)
    assert names == sorted(["split-mix1.png", "mithril-associations.png"]
                           + [f"mithril-associations-{s}.png" for s in mithril.STUDIES])
    assert all(Path(p).read_bytes()[:8] == PNG for p in saved)
    assert len(drawn) >= 3
    # No figure code of their own.
    import inspect

    for mod in (split, mithril):
        assert "matplotlib" not in inspect.getsource(mod)


def test_the_image_file_is_checked_before_the_results_are_read(tmp_path, capsys):
    # `plot ... -o x.txt` read the results and drew the figure, then failed on the format without naming -o.
    missing = str(tmp_path / "none.sqlite")
    assert main(["plot", "mrc", missing, "-o", str(tmp_path / "x.txt")]) == 2
    err = capsys.readouterr().err
    assert f"-o {tmp_path / 'x.txt'}: format 'txt' is not supported" in err and "none.sqlite" not in err, err
    assert main(["plot", "mrc", missing, "-o", str(tmp_path / "no" / "x.png")]) == 2
    assert f"-o {tmp_path / 'no' / 'x.png'}: " in capsys.readouterr().err
