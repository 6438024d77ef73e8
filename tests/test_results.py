"""The results store: schema (one row per run and level, keyed by the run hash), transactions, resume,
filters, exports (CSV, JSON lines, Parquet or a clear error), merging shards, the `results` command."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import prefetchsim as ps
import pytest
from prefetchsim._deps import MissingDependency
from prefetchsim._store import Store, export
from prefetchsim.cli import main

TWO_LEVELS = {
    "trace": {"path": "oltp-like", "format": "synthetic", "params": {"requests": 4000, "seed": 2}},
    "level": [{"name": "client", "size": "2%", "prefetcher": "obl"}, {"name": "server", "size": "2x", "policy": "arc"}],
    "sweep": {"level[0].size": ["1%", "2%", "5%"], "level[1].policy": ["arc", "lru"]},
}


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "two.sqlite"
    ps.sweep(TWO_LEVELS, ThreadPoolExecutor(2), db=path)
    return path


def test_one_row_per_run_and_level_keyed_by_the_run_hash(db):
    con = sqlite3.connect(db)
    try:
        pk = [r[1] for r in sorted(con.execute("PRAGMA table_info(runs)"), key=lambda r: r[5]) if r[5]]
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        (mode,) = con.execute("PRAGMA journal_mode").fetchone()
        kinds = dict(con.execute("SELECT name, kind FROM columns"))
    finally:
        con.close()
    assert pk == ["run_id", "level"] and mode == "wal"
    assert {"runs", "attempts", "sessions", "columns", "meta"} <= tables
    assert kinds["level0_size"] == "axis" and kinds["hit_ratio"] == "metric" and kinds["trace_requests"] == "total"
    df = ps.results(db)
    assert len(df) == 12 and df.run_id.nunique() == 6
    assert list(df.columns[:5]) == ["run_id", "trace", "level0_size", "level1_policy", "level"]
    assert list(df[df.level == 1].name.unique()) == ["server"]
    # The full config of each run, as run, is kept beside its metrics; rerunning it gives the same numbers.
    row = df[(df.level0_size == "5%") & (df.level1_policy == "lru")]
    cfg = json.loads(row.config.iloc[0])
    again = ps.simulate(ps.Trace(json.loads(row.trace_spec.iloc[0])), cfg)
    assert [lv["hits"] for lv in again.levels] == list(row.sort_values("level").hits)


def test_a_second_sweep_of_the_same_spec_runs_nothing(db):
    before = ps.results(db)
    again = ps.sweep(TWO_LEVELS, ThreadPoolExecutor(2), db=db)
    assert len(again) == 12 and (again.runs_executed == 1).all()
    with Store(db, readonly=True) as s:
        sessions = s.sessions()
    assert list(sessions.executed) == [6, 0] and list(sessions.already_done) == [0, 6]
    assert list(sessions.status) == ["finished", "finished"]
    assert before.drop(columns="runs_executed").equals(ps.results(db).drop(columns="runs_executed"))


def test_a_grown_grid_runs_only_the_new_points(tmp_path):
    path = tmp_path / "g.sqlite"
    small = {**TWO_LEVELS, "sweep": {"level[0].size": ["1%", "2%"]}}
    ps.sweep(small, ThreadPoolExecutor(2), db=path)
    grown = {**TWO_LEVELS, "sweep": {"level[0].size": ["1%", "2%", "5%"], "level[0].prefetcher": ["obl"]}}
    df = ps.sweep(grown, ThreadPoolExecutor(2), db=path)
    # `prefetcher = "obl"` is the base value: the axis spells it out, the runs are the same.
    assert len(df) == 6
    with Store(path, readonly=True) as s:
        assert list(s.sessions().executed) == [2, 1]


def test_a_failing_write_leaves_no_partial_task(tmp_path):
    with Store(tmp_path / "t.sqlite") as s:
        sid = s.begin_session({"sweep": "t"})
        rows = [{"run_id": "a", "level": 0, "hits": 1}, {"run_id": "a", "level": 1, "hits": object()}]
        with pytest.raises(sqlite3.Error):
            s.write_task(sid, rows, [{"run_id": "a", "status": "done"}], {})
        assert s.done_ids() == set()
        assert s.con.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == 0
        # The rollback also undid the new column `hits`: the store must know, or every later task with it
        # fails ("no column named hits").
        s.write_task(sid, [{"run_id": "b", "level": 0, "hits": 2}], [{"run_id": "b", "status": "done"}], {})
        assert s.con.execute("SELECT hits FROM runs WHERE run_id = 'b'").fetchall() == [(2,)]


def test_two_writers_on_one_database_both_add_columns_without_a_clash(tmp_path):
    # Two sweeps on one database at once: the second failed with a traceback, "duplicate column name",
    # because its list of columns predated the first one's ALTER TABLE.
    path = tmp_path / "t.sqlite"
    with Store(path) as a, Store(path) as b:
        sa, sb = a.begin_session({"sweep": "t"}), b.begin_session({"sweep": "t"})
        a.write_task(sa, [{"run_id": "x", "level": 0, "hits": 1}], [{"run_id": "x", "status": "done"}], {})
        b.write_task(sb, [{"run_id": "x", "level": 0, "hits": 1}, {"run_id": "y", "level": 0, "hits": 2}],
                     [{"run_id": "x", "status": "done"}, {"run_id": "y", "status": "done"}], {})
        assert b.con.execute("SELECT run_id, hits FROM runs ORDER BY run_id").fetchall() == [("x", 1), ("y", 2)]


def test_stores_opened_together_on_a_new_database_all_open(tmp_path):
    # Two sweeps started together on a new database: one failed at once with "database is locked",
    # switching the file to WAL (SQLite does not wait there). 3 of 30 such trials failed before the retry.
    import threading

    failures = []
    for i in range(100):
        path = tmp_path / f"{i}.sqlite"
        start = threading.Barrier(4)

        def open_it(path=path, start=start):
            start.wait()
            try:
                with Store(path):
                    pass
            except Exception as e:  # noqa: BLE001 - any failure to open is the bug
                failures.append(str(e))

        threads = [threading.Thread(target=open_it) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert failures == []


class _CtrlCAfter:
    """A connection that lets `statement` run, then raises KeyboardInterrupt: what a Ctrl-C arriving while
    SQLite runs the statement does (Python raises it at the first bytecode after the call returns)."""

    def __init__(self, con, statement):
        self._con, self._statement = con, statement

    def execute(self, sql, *args):
        cur = self._con.execute(sql, *args)
        if sql == self._statement:
            raise KeyboardInterrupt
        return cur

    def __getattr__(self, name):
        return getattr(self._con, name)


@pytest.mark.parametrize("statement", ["COMMIT", "BEGIN IMMEDIATE"])
def test_a_ctrl_c_at_the_commit_of_a_task_stays_an_interrupt(tmp_path, statement):
    # Seen once in the 200-run kill-and-resume test: a Ctrl-C that landed as the task's COMMIT returned
    # made the rollback fail ("no transaction is active"), and that error replaced the interrupt.
    with Store(tmp_path / "t.sqlite") as s:
        sid = s.begin_session({"sweep": "t"})
        real = s.con
        s.con = _CtrlCAfter(real, statement)
        with pytest.raises(KeyboardInterrupt):
            s.write_task(sid, [{"run_id": "a", "level": 0, "hits": 1}], [{"run_id": "a", "status": "done"}], {})
        s.con = real
        assert not real.in_transaction
        # Committed before the interrupt: the task is whole; interrupted at its BEGIN: nothing is written.
        committed = statement == "COMMIT"
        assert s.done_ids() == ({"a"} if committed else set())
        assert real.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == int(committed)
        assert real.execute("SELECT executed FROM sessions").fetchone()[0] == int(committed)


def test_filters_in_python_and_on_the_command_line(db, capsys):
    df = ps.results(db, ["level1_policy=lru", "level=1", "capacity_blocks>=10"])
    assert set(df.level1_policy) == {"lru"} and set(df.level) == {1} and len(df) == 3
    assert len(ps.results(db, {"level0_size": ["1%", "5%"], "level": 0})) == 4
    with pytest.raises(ps.ConfigError, match="--filter polcy: no such column"):
        ps.results(db, ["polcy=lru"])
    assert main(["results", str(db), "--filter", "level0_size=1%,2%", "--filter", "level=0", "-f", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 4 and {r["level0_size"] for r in rows} == {"1%", "2%"}
    assert main(["results", str(db), "--filter", "level=0", "-f", "json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6 and "hit_ratio" in json.loads(lines[0])
    assert main(["results", str(db), "--filter", "level=1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 7 and "level1_policy" in lines[0] and "hit_ratio" in lines[0]
    assert main(["results", str(db), "--filter", "nope=1"]) == 2
    assert "nope" in capsys.readouterr().err


def test_a_text_filter_on_a_number_column_is_an_error_and_an_unmatched_text_value_is_named(db, tmp_path, capsys):
    # `hit_ratio=>0.5` was equality with the text ">0.5": an empty table, exit 0.
    with pytest.raises(ps.ConfigError, match=r"column hit_ratio holds numbers and '>0.5' is not one; to compare, "
                                             r"write hit_ratio>=0.5"):
        ps.results(db, ["hit_ratio=>0.5"])
    assert main(["results", str(db), "--filter", "hit_ratio=>0.5"]) == 2
    assert "write hit_ratio>=0.5" in capsys.readouterr().err
    assert main(["results", str(db), "--filter", "level=x,1"]) == 2
    assert "column level holds numbers and 'x' is not one" in capsys.readouterr().err
    csv_path = tmp_path / "r.csv"
    assert main(["results", str(db), "--export", str(csv_path)]) == 0
    with pytest.raises(ps.ConfigError, match="column hit_ratio holds numbers"):
        ps.results(csv_path, ["hit_ratio=>0.5"])
    # A text value no row has: the empty table, exit 0, and the values the column has on stderr.
    capsys.readouterr()
    assert main(["results", str(db), "--filter", "level1_policy=LRU", "-f", "csv"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) <= 1
    assert "--filter level1_policy=LRU: no row has level1_policy = LRU; its values: arc, lru" in err


def test_export_to_csv_and_json_lines_round_trips(db, tmp_path):
    for name in ("r.csv", "r.jsonl"):
        assert main(["results", str(db), "--export", str(tmp_path / name)]) == 0
        back = ps.results(tmp_path / name)
        assert len(back) == 12 and list(back.hits) == list(ps.results(db).hits)
        # Every float exactly (JSON lines kept 10 significant digits).
        assert list(back.hit_ratio) == list(ps.results(db).hit_ratio), name
    # CSV results filter like a database.
    assert len(ps.results(tmp_path / "r.csv", ["level=0"])) == 6


def test_every_export_read_back_has_the_types_of_the_database(db, tmp_path):
    # JSON lines gave `finished_at` as datetime64[us, UTC], where the database and CSV give its text.
    names = ["r.csv", "r.jsonl", "r.json"]
    try:
        import pyarrow  # noqa: F401

        names.append("r.parquet")
    except ImportError:
        pass
    want = ps.results(db)
    assert isinstance(want.finished_at[0], str)
    for name in names:
        assert main(["results", str(db), "--export", str(tmp_path / name)]) == 0
        back = ps.results(tmp_path / name)
        assert list(back.columns) == list(want.columns), name
        assert back.dtypes.to_dict() == want.dtypes.to_dict(), name
        assert list(back.finished_at) == list(want.finished_at), name


def test_columns_cut_the_export_as_they_cut_the_listing(db, tmp_path, capsys):
    # --columns was ignored by --export: all 60+ columns were written.
    for name in ("c.csv", "c.jsonl"):
        out = tmp_path / name
        assert main(["results", str(db), "--columns", "level0_size,level,hit_ratio", "--export", str(out)]) == 0
        back = ps.results(out)  # a cut-down export that keeps a results column reads back
        assert list(back.columns) == ["level0_size", "level", "hit_ratio"], name
        assert list(back.hit_ratio) == list(ps.results(db).hit_ratio), name
    assert main(["results", str(db), "--columns", "level0_size", "--export", str(tmp_path / "m.sqlite")]) == 2
    assert "--columns applies to CSV, JSON and Parquet exports" in capsys.readouterr().err
    assert main(["results", str(db), "--columns", "nope", "--export", str(tmp_path / "n.csv")]) == 2
    assert "--columns nope: no such column" in capsys.readouterr().err
    assert not (tmp_path / "n.csv").exists()


@pytest.mark.parametrize("name,text", [("junk.csv", "a,b\n1,2\n"), ("junk.jsonl", '{"a": 1}\n'),
                                       ("empty.csv", "")])
def test_a_file_that_is_not_a_results_export_is_an_error_naming_it(tmp_path, capsys, name, text):
    # Any CSV was shown as a results table with exit 0.
    junk = tmp_path / name
    junk.write_text(text)
    assert main(["results", str(junk)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"{junk}: not a results export" in err, err
    with pytest.raises(ps.ConfigError, match="not a results export"):
        ps.results(junk)


@pytest.mark.parametrize("name,text", [("t.csv", "run_id,level,hit_ratio\nx,0,0.5\ny,0,abc\n"),
                                       ("t.jsonl", '{"run_id": "x", "level": 0, "hits": "many"}\n')])
def test_text_in_a_numeric_results_column_is_an_error_naming_file_row_and_column(tmp_path, capsys, name, text):
    # It was listed with exit 0; only a numeric --filter noticed.
    bad = tmp_path / name
    bad.write_text(text)
    assert main(["results", str(bad)]) == 2
    out, err = capsys.readouterr()
    row, col = ("row 2", "hit_ratio holds text 'abc'") if name.endswith("csv") else ("row 1", "hits holds text 'many'")
    assert out == "" and f"{bad}: {row}: column {col} where results have a number" in err, err


def test_failures_and_sessions_together_are_an_error(db, capsys):
    # --sessions was dropped without a word.
    assert main(["results", str(db), "--failures", "--sessions"]) == 2
    assert "--failures and --sessions list different tables" in capsys.readouterr().err


def test_parquet_needs_pyarrow_and_says_how_to_install_it(db, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if not installed
    with pytest.raises(MissingDependency, match=r"pip install pyarrow"):
        export(ps.results(db), tmp_path / "r.parquet")
    assert not (tmp_path / "r.parquet").exists()


def test_parquet_round_trips_when_pyarrow_is_installed(db, tmp_path):
    pytest.importorskip("pyarrow", reason="pyarrow is optional (Parquet export)")
    export(ps.results(db), tmp_path / "r.parquet")
    assert list(ps.results(tmp_path / "r.parquet").hit_ratio) == list(ps.results(db).hit_ratio)


def test_a_column_of_mixed_types_exports_to_parquet_as_text(tmp_path):
    # A size axis of "1%" and 2000 (as the sweep docs write) raised pyarrow's ArrowTypeError, a traceback.
    pytest.importorskip("pyarrow", reason="pyarrow is optional (Parquet export)")
    spec = {"trace": {"path": "zipf", "format": "synthetic", "params": {"requests": 2000, "seed": 1}},
            "level": [{"size": "1%"}], "sweep": {"level[0].size": ["1%", 200]}}
    df = ps.sweep(spec, db=tmp_path / "m.sqlite")
    export(df, tmp_path / "m.parquet")
    back = ps.results(tmp_path / "m.parquet")
    assert sorted(back["level0_size"].astype(str)) == ["1%", "200"]
    assert sorted(back.hit_ratio) == sorted(df.hit_ratio)


def test_the_cli_reports_a_missing_parquet_engine_with_exit_2(db, tmp_path):
    code = ("import sys; sys.modules['pyarrow'] = None; from prefetchsim.cli import main; "
            f"raise SystemExit(main(['results', {str(db)!r}, '--export', {str(tmp_path / 'x.parquet')!r}]))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 2 and "pip install pyarrow" in p.stderr


def test_not_a_database_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "x.sqlite"
    bad.write_text("hello")
    assert main(["results", str(bad)]) == 2
    assert "x.sqlite: not an SQLite results database" in capsys.readouterr().err
    assert main(["results", str(tmp_path / "missing.sqlite")]) == 2
    assert "no such results file" in capsys.readouterr().err
    assert main(["sweep", "nope.toml", "--db", str(tmp_path / "no" / "such" / "dir.sqlite")]) == 2


def test_results_are_never_written_into_another_programs_database(db, tmp_path, capsys):
    # `results X --export inventory.sqlite` (an existing SQLite file of another program) added the results
    # tables beside its own, exit 0; a sweep's `--db` did the same.
    foreign = tmp_path / "inventory.sqlite"
    with sqlite3.connect(foreign) as con:
        con.execute("CREATE TABLE inventory (item TEXT)")
    before = foreign.read_bytes()
    assert main(["results", str(db), "--export", str(foreign)]) == 2
    assert "holds no results (tables: inventory)" in capsys.readouterr().err
    with pytest.raises(ps.ConfigError, match="holds no results"):
        ps.sweep(TWO_LEVELS, db=foreign)
    assert foreign.read_bytes() == before
    with sqlite3.connect(foreign) as con:
        assert {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} == {"inventory"}
