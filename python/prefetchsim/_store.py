"""The results store: an SQLite database (stdlib ``sqlite3``) that a sweep writes as each task finishes.

Tables (schema version 1):

``runs``
    One row per (run, level), primary key ``(run_id, level)``: ``run_id`` (the stable hash of trace
    identity and canonical config), ``trace`` (label), ``trace_id``, the sweep's axis columns, the level
    record exactly as the core defines it (``name``, ``policy``, ``prefetcher``, ``capacity_blocks``,
    ``hits``, ``hit_ratio`` ...; new metrics become new columns), the run totals (every one the core's
    result schema lists: ``trace_requests``, ``trace_blocks``, ``warmup_requests``, ``stopped_early``,
    ``skipped_records``, ``time_backwards``; a database written before the last two were stored has them
    empty in its older rows), and ``config`` (canonical JSON),
    ``trace_spec`` (JSON), ``sweep``, ``grid_index`` (position in that sweep's grid: the order rows are
    read back in), ``version``, ``host``, ``pid``, ``task_wall_s``, ``finished_at``.
    One row per level keeps it a plain pandas frame: filter ``level == 0`` for single-level studies,
    use ``level`` as the hue for per-level plots.
``attempts``
    One row per execution of a run that came back (``done``) or failed (``failed``, with the error):
    ``runs_executed`` in `read` counts the ``done`` ones, so a run executed twice is visible.
``sessions``
    One row per ``sweep`` invocation: start and end, status (running, finished, interrupted, failed),
    runs planned, already done, executed and failed, the shard and the executor.
``columns``
    Which columns are axes, metrics or run totals (plots use it to pick defaults).

The database is in WAL mode and every finished task is one transaction (its runs, their attempts and
the session's counters), so a killed sweep leaves a consistent database that the next sweep resumes.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import socket
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from functools import cache
from typing import Any

from . import _core
from ._atomic import atomic_path, write_csv
from ._registry import result_schema, run_total_keys
from ._typeerror import ConfigTypeError

SCHEMA_VERSION = 1

_HEAD = [("run_id", "TEXT NOT NULL"), ("level", "INTEGER NOT NULL"), ("trace", "TEXT"), ("trace_id", "TEXT")]


@cache
def total_columns() -> tuple[str, ...]:
    """The run totals a row keeps: every one of the core's run schema (lists left out), named as
    `_registry.run_totals` names them (the sweep fills them from it)."""
    return tuple(flat for _, flat in run_total_keys())

_INFO = [("config", "TEXT"), ("trace_spec", "TEXT"), ("sweep", "TEXT"), ("grid_index", "INTEGER"),
         ("version", "TEXT"), ("host", "TEXT"),
         ("pid", "INTEGER"), ("task_wall_s", "REAL"), ("finished_at", "TEXT")]


@cache
def level_record_keys() -> tuple[str, ...]:
    """The keys of a level record, in record order, as the core's result schema lists them."""
    return tuple(f["name"] for f in result_schema()["level"])


def timing_metric_keys() -> tuple[str, ...]:
    """The numeric fields of a timed run's record (response times, device, scheduler, network), which
    every level row of a timed run carries; its text fields (engine, replay, device name) are in the
    stored config."""
    return tuple(f["name"] for f in result_schema()["timing"] if f["kind"] in ("int", "float"))


def numeric_columns() -> set[str]:
    """The results columns that hold numbers: level record keys, run totals (flat names) and timing
    metrics of kind int or float in the core's result schema."""
    schema = result_schema()
    flat = dict(run_total_keys())
    return ({f["name"] for part in ("level", "timing") for f in schema[part] if f["kind"] in ("int", "float")}
            | {flat[f["name"]] for f in schema["run"] if f["kind"] in ("int", "float") and f["name"] in flat})


def reserved_columns() -> set[str]:
    """Column names an axis must not take."""
    return ({c for c, _ in _HEAD} | set(total_columns()) | {c for c, _ in _INFO} | set(level_record_keys())
            | set(timing_metric_keys()) | {"runs_executed"})


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _sql_type(v: Any) -> str:
    if isinstance(v, bool) or isinstance(v, int):
        return "INTEGER"
    if isinstance(v, float):
        return "REAL"
    return "TEXT"


def _sql_value(v: Any) -> Any:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True)
    return v


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def is_database(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an SQLite file (by its header, not its name)."""
    try:
        with open(path, "rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _tables(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _refuse_foreign(path: str, tables: set[str]) -> None:
    """Another program's database (tables, none of them ours): writing results into it added our tables
    beside its own."""
    if tables and "runs" not in tables:
        raise _core.ConfigError(f"{path}: an SQLite database that holds no results (tables: "
                                f"{', '.join(sorted(tables))}); give another file")


class Store:
    """An open results database. ``path=None`` keeps it in memory (no resume)."""

    def __init__(self, path: str | os.PathLike[str] | None, readonly: bool = False):
        self.path = ":memory:" if path is None else os.fspath(path)
        if readonly:
            if not os.path.exists(self.path):
                raise _core.ConfigError(f"{self.path}: no such results database")
            if not is_database(self.path):
                raise _core.ConfigError(f"{self.path}: not an SQLite results database")
        # Autocommit mode: transactions are explicit (one per finished task).
        try:
            self.con = sqlite3.connect(self.path, isolation_level=None, timeout=60)
        except sqlite3.Error as e:
            raise _core.ConfigError(f"{self.path}: cannot open the results database: {e}") from None
        try:
            self._setup(readonly)
        except sqlite3.DatabaseError as e:
            self.con.close()
            raise _core.ConfigError(f"{self.path}: not a usable results database: {e}") from None
        except BaseException:
            self.con.close()
            raise

    def _setup(self, readonly: bool) -> None:
        c = self.con
        c.execute("PRAGMA busy_timeout = 60000")
        tables = _tables(c)
        if readonly:
            if "runs" not in tables:
                raise _core.ConfigError(f"{self.path}: not a prefetchsim results database (no runs table)")
        else:
            _refuse_foreign(self.path, tables)
            if self.path != ":memory:":
                self._use_wal()
                c.execute("PRAGMA synchronous = NORMAL")
            with self._transaction():
                c.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
                head = ", ".join(f"{_q(n)} {t}" for n, t in _HEAD)
                c.execute(f"CREATE TABLE IF NOT EXISTS runs ({head}, PRIMARY KEY (run_id, level))")
                c.execute("""CREATE TABLE IF NOT EXISTS attempts (
                    run_id TEXT NOT NULL, session INTEGER, task INTEGER, host TEXT, pid INTEGER,
                    started_at TEXT, wall_s REAL, status TEXT NOT NULL, error TEXT)""")
                c.execute("CREATE INDEX IF NOT EXISTS attempts_run ON attempts (run_id)")
                c.execute("""CREATE TABLE IF NOT EXISTS sessions (
                    id INTEGER PRIMARY KEY, started_at TEXT, ended_at TEXT, status TEXT, sweep TEXT,
                    preset TEXT, shard TEXT, planned INTEGER, already_done INTEGER, executed INTEGER,
                    failed INTEGER, executor TEXT, host TEXT, pid INTEGER, spec TEXT)""")
                c.execute("CREATE TABLE IF NOT EXISTS columns (name TEXT PRIMARY KEY, kind TEXT)")
                c.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                c.execute("INSERT OR IGNORE INTO meta VALUES ('created_by', ?)", (f"prefetchsim {_core.__version__}",))
        row = c.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None or int(row[0]) != SCHEMA_VERSION:
            raise _core.ConfigError(f"{self.path}: results schema version {row and row[0]}, this prefetchsim "
                                    f"reads version {SCHEMA_VERSION}")
        self._cols = self._columns()

    def _use_wal(self) -> None:
        """Switch the file to write-ahead logging. Switching needs the file to itself and SQLite answers
        "database is locked" at once, without waiting, when another connection holds it (two sweeps
        started together on a new database: one failed): retry for as long as the busy timeout."""
        deadline = time.monotonic() + 60
        while True:
            try:
                self.con.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or time.monotonic() > deadline:
                    raise
                if self.con.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
                    return
                time.sleep(0.02)

    def _columns(self) -> list[str]:
        return [r[1] for r in self.con.execute("PRAGMA table_info(runs)")]

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction. On any exception, a Ctrl-C included, what is open is rolled back: a Ctrl-C
        that lands as COMMIT returns finds the work committed and must stay an interrupt, not become a failed
        rollback. The known columns are read again, since a rolled-back ALTER TABLE is undone too."""
        try:
            self.con.execute("BEGIN IMMEDIATE")
            # Another process on the same database (two sweeps, or shards sharing it) may have added
            # columns since they were read: read them under the write lock, or ADD COLUMN fails as a
            # duplicate.
            self._cols = self._columns()
            yield
            self.con.execute("COMMIT")
        except BaseException:
            if self.con.in_transaction:
                self.con.execute("ROLLBACK")
            self._cols = self._columns()
            raise

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------- writing

    def done_ids(self) -> set[str]:
        """Runs already in the store (the ones a resumed sweep skips)."""
        return {r[0] for r in self.con.execute("SELECT DISTINCT run_id FROM runs")}

    def begin_session(self, info: Mapping[str, Any]) -> int:
        cur = self.con.execute(
            "INSERT INTO sessions (started_at, status, sweep, preset, shard, planned, already_done, executed, "
            "failed, executor, host, pid, spec) VALUES (?, 'running', ?, ?, ?, ?, ?, 0, 0, ?, ?, ?, ?)",
            (now(), info.get("sweep"), info.get("preset"), info.get("shard"), info.get("planned"),
             info.get("already_done"), info.get("executor"), socket.gethostname(), os.getpid(),
             json.dumps(info.get("spec"), default=str)),
        )
        return int(cur.lastrowid or 0)

    def end_session(self, session: int, status: str) -> None:
        self.con.execute("UPDATE sessions SET ended_at = ?, status = ? WHERE id = ?", (now(), status, session))

    def _ensure(self, row: Mapping[str, Any], kinds: Mapping[str, str]) -> None:
        for k, v in row.items():
            if k not in self._cols:
                # Axis columns get no type, so a mixed axis ("5%", 1000) keeps each value's type.
                typ = "" if kinds.get(k) == "axis" else _sql_type(v)
                self.con.execute(f"ALTER TABLE runs ADD COLUMN {_q(k)} {typ}")
                self._cols.append(k)
            if k in kinds:
                self.con.execute("INSERT OR IGNORE INTO columns VALUES (?, ?)", (k, kinds[k]))

    def write_task(self, session: int, rows: Sequence[Mapping[str, Any]], attempts: Sequence[Mapping[str, Any]],
                   kinds: Mapping[str, str]) -> None:
        """The rows of a finished task and its attempts, in one transaction."""
        c = self.con
        with self._transaction():
            for row in rows:
                self._ensure(row, kinds)
                cols = list(row)
                c.execute(f"INSERT OR IGNORE INTO runs ({', '.join(_q(k) for k in cols)}) "
                          f"VALUES ({', '.join('?' * len(cols))})", [_sql_value(row[k]) for k in cols])
            for a in attempts:
                c.execute("INSERT INTO attempts (run_id, session, task, host, pid, started_at, wall_s, status, error) "
                          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                          (a["run_id"], session, a.get("task"), a.get("host"), a.get("pid"), a.get("started_at"),
                           a.get("wall_s"), a["status"], a.get("error")))
            done = sum(a["status"] == "done" for a in attempts)
            failed = len(attempts) - done
            c.execute("UPDATE sessions SET executed = executed + ?, failed = failed + ? WHERE id = ?",
                      (done, failed, session))

    # -------------------------------------------------------------- reading

    def kinds(self) -> dict[str, str]:
        return dict(self.con.execute("SELECT name, kind FROM columns").fetchall())

    def ordered_columns(self) -> list[str]:
        """Keys and axes first, then the level record, run totals, provenance."""
        kinds = self.kinds()
        cols = self._columns()
        axes = [c for c in cols if kinds.get(c) == "axis"]
        info = [n for n, _ in _INFO]
        head = ["run_id", "trace", *axes, "level"]
        totals = total_columns()
        rest = [c for c in cols if c not in head and c not in info and c not in totals and c != "trace_id"]
        return head + rest + [c for c in totals if c in cols] + ["trace_id"] + [c for c in info if c in cols]

    def read(self, filters: Iterable[str] | Mapping[str, Any] = (), run_ids: Iterable[str] | None = None):
        """The runs table as a pandas DataFrame (plus ``runs_executed``), optionally filtered:
        ``["policy=lru,arc", "capacity_blocks>=1000"]`` or ``{"policy": "lru"}``."""
        import pandas as pd

        cols = self.ordered_columns()

        def holds_text(c: str) -> bool:
            if c not in cols:
                return False  # runs_executed: a count
            return self.con.execute(f"SELECT 1 FROM runs WHERE typeof({_q(c)}) = 'text' LIMIT 1").fetchone() is not None

        where, params = parse_filters(filters, set(cols) | {"runs_executed"}, holds_text)
        sel = ", ".join(f"r.{_q(c)}" for c in cols)
        sql = (f"SELECT {sel}, COALESCE(a.n, 0) AS runs_executed, r.rowid AS _row FROM runs r LEFT JOIN "
               "(SELECT run_id, COUNT(*) AS n FROM attempts WHERE status = 'done' GROUP BY run_id) a "
               "USING (run_id)")
        # Grid order of the sweep that ran each run (rows are stored in the order tasks finished).
        order = "sweep, grid_index, level, _row" if "grid_index" in cols else "_row"
        sql = f"SELECT * FROM ({sql}){f' WHERE {where}' if where else ''} ORDER BY {order}"
        df = pd.read_sql_query(sql, self.con, params=params).drop(columns="_row")
        if run_ids is not None:
            order = {r: i for i, r in enumerate(run_ids)}
            df = df[df.run_id.isin(order)]
            df = df.assign(_o=df.run_id.map(order)).sort_values(["_o", "level"], kind="stable").drop(columns="_o")
            df = df.reset_index(drop=True)
        return df

    def failures(self):
        import pandas as pd

        return pd.read_sql_query("SELECT * FROM attempts WHERE status = 'failed' ORDER BY rowid", self.con)

    def sessions(self):
        import pandas as pd

        return pd.read_sql_query("SELECT * FROM sessions ORDER BY id", self.con)

    def merge_from(self, other: str) -> int:
        """Copy the runs and attempts of another results database (a shard) into this one; runs already
        here are kept. Returns the number of (run, level) rows added."""
        with Store(other, readonly=True) as src:
            src_cols = src._columns()
            kinds = src.kinds()
        c = self.con
        c.execute("ATTACH DATABASE ? AS src", (other,))
        try:
            with self._transaction():
                types = {r[1]: r[2] for r in c.execute("PRAGMA src.table_info(runs)")}
                for col in src_cols:
                    if col not in self._cols:
                        c.execute(f"ALTER TABLE runs ADD COLUMN {_q(col)} {types.get(col) or ''}")
                        self._cols.append(col)
                for k, v in kinds.items():
                    c.execute("INSERT OR IGNORE INTO columns VALUES (?, ?)", (k, v))
                before = c.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
                cl = ", ".join(_q(x) for x in src_cols)
                c.execute(f"INSERT OR IGNORE INTO runs ({cl}) SELECT {cl} FROM src.runs")
                # Attempts already here (a merge run twice, a database merged into itself) are not copied
                # again: they doubled each time, and `runs_executed` with them, though nothing had run.
                c.execute("""INSERT INTO attempts SELECT * FROM src.attempts s WHERE NOT EXISTS (
                    SELECT 1 FROM attempts a WHERE a.run_id IS s.run_id AND a.session IS s.session
                    AND a.task IS s.task AND a.host IS s.host AND a.pid IS s.pid
                    AND a.started_at IS s.started_at AND a.status IS s.status)""")
                added = c.execute("SELECT COUNT(*) FROM runs").fetchone()[0] - before
        finally:
            c.execute("DETACH DATABASE src")
        return int(added)


_OPS = ("!=", ">=", "<=", "=", ">", "<")


def _filter_value(text: str) -> Any:
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_filters(filters: Iterable[str] | Mapping[str, Any], columns: set[str],
                  holds_text: Callable[[str], bool] | None = None) -> tuple[str, list[Any]]:
    """SQL for ``k=v`` filters (``=`` with a comma list means any of them; also ``!=``, ``<``, ``<=``,
    ``>``, ``>=``). An unknown column is a ConfigError naming it; so is an order comparison on a column
    that ``holds_text`` says holds text (SQLite orders text after every number: ``trace<5`` matched no
    row, ``trace>5`` every row), and ``=`` or ``!=`` with text on a column that holds no text
    (``hit_ratio=>0.5`` compared each ratio with the text ">0.5" and matched no row)."""
    clauses, params = [], []
    for k, op, v in filter_items(filters):
        if k not in columns:
            raise _core.ConfigError(f"--filter {k}: no such column; columns: {', '.join(sorted(columns))}")
        if op == "=" and isinstance(v, (list, tuple)):
            vals = list(v)
        elif op == "=" and isinstance(v, str) and "," in v:
            vals = [_filter_value(x.strip()) for x in v.split(",")]
        else:
            vals = None
        text = [x for x in (vals if vals is not None else [_filter_value(v) if isinstance(v, str) else v])
                if isinstance(x, str)]
        if text and op in ("=", "!=") and holds_text is not None and not holds_text(k):
            rest = text[0].lstrip("<>=!")
            hint = f"; to compare, write {k}>={rest} (or >, <=, <)" if rest != text[0] else ""
            raise _core.ConfigError(f"--filter {k}{op}{v}: column {k} holds numbers and {text[0]!r} is not one{hint}")
        if vals is not None:
            clauses.append(f"{_q(k)} IN ({', '.join('?' * len(vals))})")
            params += vals
        else:
            value = _filter_value(v) if isinstance(v, str) else _sql_value(v)
            if op in ("<", "<=", ">", ">=") and not isinstance(value, (int, float)):
                # SQLite orders every text after every number: the filter would match all rows or none.
                raise _core.ConfigError(f"--filter {k}{op}{v}: {v!r} is not a number ({op} compares numbers)")
            if op in ("<", "<=", ">", ">=") and holds_text is not None and holds_text(k):
                raise _core.ConfigError(f"--filter {k}{op}{v}: column {k} holds text ({op} compares numbers; "
                                        "use = or != on it)")
            clauses.append(f"{_q(k)} {op} ?")
            params.append(value)
    return " AND ".join(clauses), params


def filter_items(filters: Iterable[str] | Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    """``["policy=lru", "hit_ratio>=0.5"]`` (or ``{"policy": "lru"}``) -> ``[(column, op, value)]``."""
    if isinstance(filters, Mapping):
        return [(k, "=", v) for k, v in filters.items()]
    if isinstance(filters, (str, bytes)) or not isinstance(filters, Iterable):
        # A str was read as its characters ("expected KEY=VALUE, got 'p'").
        raise ConfigTypeError(f"filters must be a list of 'KEY=VALUE' texts or a dict, not {type(filters).__name__}; "
                              "one filter: ['policy=lru']")
    items = []
    for i, f in enumerate(filters):
        if not isinstance(f, str):  # said "'int' object has no attribute 'partition'"
            raise ConfigTypeError(f"filters[{i}] must be a 'KEY=VALUE' text (or !=, <, <=, >, >=), not "
                                  f"{type(f).__name__}; filters as a dict: {{'policy': 'lru'}}")
        for op in _OPS:
            k, sep, v = f.partition(op)
            if sep and k.strip():
                items.append((k.strip(), op, v.strip()))
                break
        else:
            raise _core.ConfigError(f"--filter: expected KEY=VALUE (or !=, <, <=, >, >=), got {f!r}")
    return items


def unmatched(df, filters: Iterable[str] | Mapping[str, Any], most: int = 10) -> list[str]:
    """For each ``=`` filter on a text column of ``df`` (the unfiltered results) naming a value no row
    has: a line saying which values the column has (at most ``most``), for a filter that matched
    nothing (``level0_policy=LRU`` where the column holds ``lru``)."""
    out = []
    for k, op, v in filter_items(filters):
        if op != "=" or k not in df.columns or not df[k].map(lambda x: isinstance(x, str)).any():
            continue
        want = list(v) if isinstance(v, (list, tuple)) else [x.strip() for x in str(v).split(",")]
        have = [str(x) for x in dict.fromkeys(df[k].dropna())]
        missing = [w for w in want if str(w) not in have]
        if missing:
            more = f" (and {len(have) - most} more)" if len(have) > most else ""
            out.append(f"--filter {k}={v}: no row has {k} = {', '.join(map(str, missing))}; "
                       f"its values: {', '.join(have[:most])}{more}")
    return out


# ------------------------------------------------------------------ results files


def read_results(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
                 filters: Iterable[str] | Mapping[str, Any] = ()):
    """Results as a DataFrame from one or more results databases, CSV, JSON-lines or Parquet files
    (shards are concatenated; a run in several is kept once)."""
    import pandas as pd

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    frames = []
    for p in paths:
        p = os.fspath(p)
        if not os.path.exists(p):
            raise _core.ConfigError(f"{p}: no such results file")
        if is_database(p):
            with Store(p, readonly=True) as s:
                frames.append(s.read(filters))
            continue
        if p.endswith((".sqlite", ".sqlite3", ".db")):
            raise _core.ConfigError(f"{p}: not an SQLite results database")
        if not p.endswith((".parquet", ".pq", ".json", ".jsonl", ".csv", ".csv.gz")):
            raise _core.ConfigError(f"{p}: unknown results file; give a results database (.sqlite), "
                                    ".csv, .jsonl or .parquet")
        df = _read_export(p)
        if filters:
            df = _filter_frame(df, filters)
        frames.append(df)
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    if len(frames) > 1 and {"run_id", "level"} <= set(df.columns):
        df = df.drop_duplicates(["run_id", "level"]).reset_index(drop=True)
    return df


def _read_export(p: str):
    """A results export (CSV, JSON lines or Parquet) as a DataFrame, typed as the database gives it."""
    import pandas as pd

    try:
        if p.endswith((".parquet", ".pq")):
            from ._deps import require

            require("pyarrow", "reading Parquet")
            df = pd.read_parquet(p)
        elif p.endswith((".json", ".jsonl")):
            # Python's parser, not pandas': pandas rounded the last digits unless asked, and read columns named
            # like dates (`finished_at`) as datetime64 where the database and CSV give the text written.
            with open(p, encoding="utf-8") as f:
                try:
                    records = [json.loads(line) for line in f if line.strip()]
                except json.JSONDecodeError as e:
                    raise ValueError(f"not JSON lines: {e}") from None
            if not all(isinstance(r, dict) for r in records):
                raise ValueError("not JSON lines of objects")
            df = pd.DataFrame.from_records(records)
        else:
            df = pd.read_csv(p)
    except ValueError as e:  # pandas' and pyarrow's parse errors (an empty file, a bad line) are ValueErrors
        raise _core.ConfigError(f"{p}: not a results export: {e}") from None
    check_results_export(df, p)
    return df


def check_results_export(df, path: str) -> None:
    """Refuse a table with none of the columns results have (``run_id``, ``level``, a metric such as
    ``hit_ratio``, a run total): any CSV was shown as a results table with exit 0. An export cut down by
    ``results --columns`` passes as long as it keeps one such column."""
    known = reserved_columns()
    if not any(c in known for c in df.columns):
        cols = [str(c) for c in df.columns]
        shown = ", ".join(cols[:8]) + (f" (and {len(cols) - 8} more)" if len(cols) > 8 else "")
        raise _core.ConfigError(f"{path}: not a results export: none of its columns ({shown or 'none'}) is a "
                                "results column such as run_id, level or hit_ratio; give a results database or "
                                "a file written by `prefetchsim results --export` or `sweep -o`")
    # A results column that holds text where results have numbers (`hit_ratio` = "abc") was listed without
    # a word, and failed only under a numeric --filter.
    for col in sorted(numeric_columns() & {str(c) for c in df.columns}):
        if df[col].dtype.kind in "biuf":  # numbers already (text columns are object or str dtype)
            continue
        for row, value in enumerate(df[col], start=1):
            if isinstance(value, str):
                try:
                    float(value)
                except ValueError:
                    raise _core.ConfigError(f"{path}: row {row}: column {col} holds text {value!r} where results "
                                            "have a number; not a results export as prefetchsim writes it") from None


def _filter_frame(df, filters):
    """The same filters over a DataFrame (results read from CSV or Parquet), through in-memory SQLite."""
    import pandas as pd

    con = sqlite3.connect(":memory:")
    try:
        df.to_sql("runs", con, index=False)
        where, params = parse_filters(filters, set(df.columns),
                                      lambda c: bool(df[c].map(lambda x: isinstance(x, str)).any()))
        return pd.read_sql_query(f"SELECT * FROM runs WHERE {where}", con, params=params)
    finally:
        con.close()


def merge_databases(sources: Sequence[str], path: str | os.PathLike[str]) -> int:
    """Merge results databases into ``path`` whole or not at all: the merge is made in a temporary file
    beside ``path`` (a copy of it, when it exists) that replaces it only once every source is in. Merging
    in place left a new database holding the first sources' rows when a later one failed. Returns the
    number of (run, level) rows added."""
    target = os.fspath(path)
    with atomic_path(target) as tmp:
        try:
            if tmp != target and os.path.exists(target):
                if not is_database(target):
                    raise _core.ConfigError(f"{target}: not an SQLite results database")
                with closing(sqlite3.connect(target)) as con:
                    _refuse_foreign(target, _tables(con))
                # SQLite's backup copies a consistent state, write-ahead log included.
                try:
                    with closing(sqlite3.connect(target)) as old, closing(sqlite3.connect(tmp)) as new:
                        old.backup(new)
                except sqlite3.DatabaseError as e:
                    raise _core.ConfigError(f"{target}: not a usable results database: {e}") from None
            with Store(tmp) as st:
                added = sum(st.merge_from(src) for src in sources)
        finally:
            # A database closed in WAL mode removes its log files; one that failed to open may not.
            for side in ("-wal", "-shm", "-journal"):
                if tmp != target:
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(tmp + side)
    return added


def export(df, path: str | os.PathLike[str]) -> str:
    """Write results by the file's extension: ``.csv``, ``.parquet`` (needs pyarrow), ``.jsonl``/``.json``."""
    p = os.fspath(path)
    if p.endswith((".parquet", ".pq")):
        from ._deps import require

        require("pyarrow", "exporting Parquet")
        # A column whose values mix types (a size axis of "1%" and 2000, as the sweep docs write) has no
        # Parquet type: pyarrow raised ArrowTypeError. Such a column is written as text, as CSV writes it.
        mixed = [c for c in df.columns if df[c].dtype == object
                 and len({type(v) for v in df[c] if v is not None and v == v}) > 1]
        out = df.astype({c: "string" for c in mixed}) if mixed else df
        with atomic_path(p) as tmp:
            out.to_parquet(tmp, index=False)
    elif p.endswith((".jsonl", ".json")):
        # json.dumps writes every float exactly; pandas' to_json kept 10 significant digits
        # (hit_ratio 0.5236450011 for 0.5236450010796804). Missing values are null.
        import math

        with atomic_path(p) as tmp, open(tmp, "w", encoding="utf-8") as f:
            for r in df.to_dict("records"):
                clean = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()}
                f.write(json.dumps(clean, default=str) + "\n")
    elif p.endswith(".csv"):
        write_csv(df, p)
    else:
        raise _core.ConfigError(f"--export {p}: unknown file type; use .csv, .parquet, .jsonl or .sqlite")
    return p
