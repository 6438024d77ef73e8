"""The sweep runner: a grid of runs executed as (one trace, a batch of configs) tasks on any
``concurrent.futures.Executor``, each finished task written at once to the results store.

* Local by default: a pool of spawned processes, one per core, each task on one Rust thread (so the
  processes, not the threads, fill the cores); no server.
* Any other executor the caller passes: a Dask ``distributed`` client (``client.get_executor()``, or the
  client itself), a ``ThreadPoolExecutor`` (the core releases the GIL), an MPI pool ...
* Resume: runs already in the store are skipped; an interrupted or killed sweep loses at most the tasks
  that were running.
* Ctrl-C cancels the pending tasks, terminates the local workers, keeps every finished task and raises
  KeyboardInterrupt.
* A local worker that dies (SIGKILL, the out-of-memory killer) breaks the process pool: the finished tasks
  are kept, the pool is restarted and the tasks it held run again (a task whose worker dies three times
  is recorded as failed).
"""

from __future__ import annotations

import ast
import datetime as _dt
import multiprocessing as mp
import os
import queue as _queue
import signal
import socket
import sys
import threading
import time
from collections.abc import Mapping
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from . import _core
from ._grid import SweepPlan, Task, _dumps, plan, point_text
from ._progress import Progress
from ._sim import share_blocks
from ._registry import run_totals
from ._store import Store, level_record_keys, now, timing_metric_keys, total_columns
from ._trace import Trace
from ._typeerror import ConfigTypeError

_AUTO = "auto"

# --------------------------------------------------------------------------- worker side

# Set in local pool workers by the initializer: where in-run progress goes.
_PROGRESS_QUEUE: Any = None
# Traces opened by this worker process, by trace id: their footprint is measured once per process,
# not once per task.
_TRACES: dict[str, Trace] = {}


def _init_worker(progress_queue: Any, parent: int) -> None:
    global _PROGRESS_QUEUE
    # The parent handles Ctrl-C (cancels and terminates us); a worker must not die half-way on its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _PROGRESS_QUEUE = progress_queue
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True, name="parent-watch").start()


def _exit_with_parent(parent: int) -> None:
    """A worker whose parent (the process that made the pool, `parent`) is gone exits. A parent killed
    outright (SIGKILL, the OOM killer) cannot stop its pool, and its workers waited for tasks for ever
    (holding a `| tee` pipe open); the parent's death reparents them, which `getppid` shows (the parent's
    pid is passed in, not read here: a worker still starting when its parent died would read its new
    parent). Checked once a second, so a worker in a task exits after it."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


class _TaskProgress:
    """The core's progress callback in a worker: requests replayed by this task, sent to the parent."""

    def __init__(self, task: int):
        self.task = task

    def __call__(self, n: int) -> None:
        try:
            _PROGRESS_QUEUE.put_nowait((self.task, n))
        except (ValueError, OSError, _queue.Full):
            pass


def _resolved_sizes(config: dict[str, Any], shares: list[float | None], trace: Trace) -> dict[str, Any]:
    """Footprint shares resolved to blocks with this process's footprint of the trace, exactly as the
    core resolves them (floor(share x footprint)); a share under one block is left to the core's error."""
    if not any(s is not None for s in shares):
        return config
    fp = trace.footprint()
    levels = [dict(lv) for lv in config["level"]]
    for lv, share in zip(levels, shares):
        if share is not None and share_blocks(share, fp) >= 1:
            lv["size"] = share_blocks(share, fp)
    return {**config, "level": levels}


def run_task(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Run one task (in a worker): one trace, a batch of configs, with `simulate_many`.

    Returns the raw results by run id, and per-run errors: a batch that fails is retried run by run,
    so one bad run does not take its batch with it.
    """
    from ._sim import simulate_many

    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    tid = payload["trace_id"]
    tr = _TRACES.get(tid)
    if tr is None:
        tr = _TRACES[tid] = Trace(payload["trace"])
    runs = payload["runs"]
    progress = _TaskProgress(payload["task"]) if _PROGRESS_QUEUE is not None else None
    out: dict[str, Any] = {"task": payload["task"], "host": socket.gethostname(), "pid": os.getpid(),
                           "started_at": started, "results": [], "errors": []}
    try:
        configs = [_resolved_sizes(cfg, shares, tr) for _, cfg, shares in runs]
        res = simulate_many(tr, configs, threads=payload["threads"], progress=progress)
        out["results"] = [(rid, r.raw) for (rid, _, _), r in zip(runs, res, strict=True)]
    except _core.PrefetchsimError as e:
        if len(runs) == 1:
            out["errors"] = [(runs[0][0], f"{type(e).__name__}: {e}")]
        else:
            for rid, cfg, _ in runs:
                try:
                    r = simulate_many(tr, [cfg], threads=payload["threads"], progress=progress)[0]
                    out["results"].append((rid, r.raw))
                except _core.PrefetchsimError as e1:
                    out["errors"].append((rid, f"{type(e1).__name__}: {e1}"))
    finally:
        if progress is not None:
            progress(-1)
    out["wall_s"] = time.perf_counter() - t0
    return out


# --------------------------------------------------------------------------- parent side


def _parse_shard(shard: str | tuple[int, int] | None) -> tuple[int, int] | None:
    if shard is None:
        return None
    if isinstance(shard, str):
        k, sep, n = shard.partition("/")
        try:
            if not sep:
                raise ValueError
            return int(k), int(n)
        except ValueError:
            raise _core.ConfigError(f"shard: cannot read {shard!r}; write K/N, e.g. 0/4 (shards 0..N-1)") from None
    try:
        k, n = shard
    except (TypeError, ValueError):
        raise ConfigTypeError(f"shard: {shard!r} is not 'K/N' nor a pair (K, N)") from None
    return k, n  # checked by SweepPlan.shard (whole numbers: 1.5 was truncated to 1)


def default_db(spec: Any, shard: tuple[int, int] | None) -> str | None:
    """``NAME.sqlite`` in the current directory for a spec file NAME.toml (``NAME.shard-K-of-N.sqlite``
    for a shard: shards of a job array never write to one file); None (in memory) for a dict spec."""
    if isinstance(spec, Mapping):
        return None
    stem = os.path.splitext(os.path.basename(os.fspath(spec)))[0]
    if shard is not None:
        return f"{stem}.shard-{shard[0]}-of-{shard[1]}.sqlite"
    return f"{stem}.sqlite"


def _as_executor(executor: Any) -> Executor:
    if isinstance(executor, Executor):
        return executor
    if hasattr(executor, "get_executor"):  # a dask.distributed Client
        return executor.get_executor()
    raise _core.ConfigError(f"executor: expected a concurrent.futures.Executor or a dask Client, got {executor!r}")


def _executor_workers(executor: Any) -> int | None:
    """How many tasks an executor runs at once, when it says (a Dask client, a standard pool)."""
    for obj in (executor, getattr(executor, "_client", None)):
        nthreads = getattr(obj, "nthreads", None)
        if callable(nthreads):
            try:
                return max(1, sum(nthreads().values()))
            except Exception:  # a client that cannot answer now: fall back to the defaults
                return None
    n = getattr(executor, "_max_workers", None)
    return n if isinstance(n, int) and n > 0 else None


def _shares(run_canonical: Mapping[str, Any]) -> list[float | None]:
    out: list[float | None] = []
    for lv in run_canonical["level"]:
        size = lv.get("size")
        out.append(size["Footprint"] if isinstance(size, dict) and "Footprint" in size else None)
    return out


def _payload(t: Task, threads: int) -> dict[str, Any]:
    return {"task": t.index, "trace_id": t.trace.trace_id, "trace": t.trace.spec, "threads": threads,
            "runs": [(r.run_id, r.config, _shares(r.canonical)) for r in t.runs]}


class _LocalPool:
    """A process pool of spawned workers that ignore SIGINT, with a queue for in-run progress."""

    def __init__(self, workers: int):
        ctx = mp.get_context("spawn")
        self.ctx = ctx
        self.workers = workers
        self.queue = ctx.Queue()
        self.executor = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker,
                                            initargs=(self.queue, os.getpid()))

    def restart(self) -> Executor:
        """A fresh pool after a worker died: a broken ``ProcessPoolExecutor`` takes no more tasks."""
        self.executor.shutdown(wait=True, cancel_futures=True)
        self.executor = ProcessPoolExecutor(max_workers=self.workers, mp_context=self.ctx, initializer=_init_worker,
                                            initargs=(self.queue, os.getpid()))
        return self.executor

    def drain(self, running: dict[int, int]) -> None:
        while True:
            try:
                task, n = self.queue.get_nowait()
            except (_queue.Empty, OSError, ValueError, EOFError):
                return
            if n < 0:
                running.pop(task, None)
            else:
                running[task] = n

    def close(self, kill: bool) -> None:
        ex = self.executor
        if kill:
            # Stop running tasks now: Python 3.14 has terminate_workers(); before it, the pool's processes.
            procs = list((getattr(ex, "_processes", None) or {}).values())
            ex.shutdown(wait=False, cancel_futures=True)
            for p in procs:
                if p.is_alive():
                    p.terminate()
            for p in procs:
                p.join(timeout=10)
        ex.shutdown(wait=True, cancel_futures=True)
        self.queue.close()
        self.queue.join_thread()


def _rows(p: SweepPlan, t: Task, result: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    by_id = {r.run_id: r for r in t.runs}
    rows, attempts = [], []
    finished = now()
    info = {"host": result["host"], "pid": result["pid"], "task": result["task"], "started_at": result["started_at"],
            "wall_s": result["wall_s"]}
    for rid, raw in result["results"]:
        run = by_id[rid]
        base = {"run_id": rid, "trace": t.trace.label, "trace_id": t.trace.trace_id, **run.labels}
        totals = run_totals(raw)
        tail = {**{c: totals[c] for c in total_columns()},
                "config": _dumps(run.config), "trace_spec": _dumps(t.trace.spec), "sweep": p.name,
                "grid_index": run.index,
                "version": _core.__version__, "host": result["host"], "pid": result["pid"],
                "task_wall_s": result["wall_s"], "finished_at": finished}
        # A timed run's response times and device figures, on each of its level rows (they were dropped,
        # so a timed sweep could not plot response times).
        timing = {k: raw["timing"][k] for k in timing_metric_keys()} if raw.get("timing") else {}
        rows += [{**base, **lv, **timing, **tail} for lv in raw["levels"]]
        attempts.append({"run_id": rid, "status": "done", **info})
    for rid, err in result["errors"]:
        attempts.append({"run_id": rid, "status": "failed", "error": err, **info})
    return rows, attempts


def _kinds(p: SweepPlan) -> dict[str, str]:
    k = {c: "axis" for c in p.columns}
    k.update({c: "metric" for c in (*level_record_keys(), *timing_metric_keys()) if c != "level"})
    k.update({c: "total" for c in total_columns()})
    return k


def _is_main_test(test: ast.expr) -> bool:
    """Whether ``test`` is ``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(x, ast.Name) and x.id == "__name__" for x in sides)
            and any(isinstance(x, ast.Constant) and x.value == "__main__" for x in sides))


def unguarded_main_call() -> str | None:
    """``"FILE, line N"`` when the caller runs from a script's top-level code outside
    ``if __name__ == "__main__":`` (directly or through functions it calls), else None.

    Local sweep workers are spawned processes that import the main script; unguarded, each would start
    the sweep again (and fail while bootstrapping). Interactive sessions and ``python -c`` have no script
    and are fine.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or not path or not os.path.isfile(path):
        return None
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_globals is main.__dict__ and frame.f_code.co_name == "<module>"):
        frame = frame.f_back
    if frame is None:
        return None
    line = frame.f_lineno
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    for node in tree.body:
        if node.lineno <= line <= (node.end_lineno or node.lineno):
            if isinstance(node, ast.If) and _is_main_test(node.test):
                return None
            return f"{path}, line {line}"
    return None


def sweep(
    spec: str | os.PathLike[str] | Mapping[str, Any] | SweepPlan,
    executor: Any = None,
    *,
    db: str | os.PathLike[str] | None = _AUTO,
    preset: str | None = None,
    shard: str | tuple[int, int] | None = None,
    workers: int | None = None,
    threads: int | None = None,
    batch_size: int | None = None,
    progress: bool | None = None,
    max_pending: int | None = None,
):
    """Run every run of a sweep spec that the results store does not hold yet; return the grid's rows.

    ``spec``: a TOML path, a dict of the same shape, or a `SweepPlan` from `plan`.
    ``executor``: None for local processes (``workers``, default all cores), or any
    ``concurrent.futures.Executor`` or dask ``Client``. ``db``: the results database (default
    ``NAME.sqlite`` in the current directory for ``NAME.toml``, in memory for a dict; None for in
    memory). ``shard``: ``"K/N"`` or ``(K, N)`` runs only shard K of N. ``threads``: Rust threads per
    task (default: cores / workers locally, 1 elsewhere). ``progress``: a bar on stderr (default: when
    stderr is a terminal).

    Returns a pandas DataFrame with one row per (run, level), in grid order (see
    `prefetchsim._store` for the columns). Raises ``PrefetchsimError`` after the other runs
    finished if some runs failed; ``KeyboardInterrupt`` after keeping what finished.
    """
    if executor is None:
        where = unguarded_main_call()
        if where is not None:
            raise _core.ConfigError(
                f"sweep: called from the top level of a script ({where}) outside `if __name__ == \"__main__\":`. "
                "The local workers are spawned processes that import the script, and each would start the sweep "
                "again; put the code that runs the sweep under that guard.")
    for name, value in (("workers", workers), ("threads", threads), ("batch_size", batch_size),
                        ("max_pending", max_pending)):
        # A count below 1 used to pass silently: a negative batch size planned no task and ran nothing.
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise _core.ConfigError(f"{name}: {value!r} is not a whole number of 1 or more (None: the default)")
    sh = _parse_shard(shard)
    if isinstance(spec, SweepPlan):
        p = spec
        src = p.name
    else:
        p = plan(spec, preset=preset)
        src = spec
    if sh is not None:
        p = p.shard(*sh)
    if db == _AUTO:
        db = None if isinstance(spec, SweepPlan) else default_db(src, sh)
    with Store(db) as store:
        done = store.done_ids()
        todo = [r for r in p.runs if r.run_id not in done]
        already = len(p.runs) - len(todo)
        owned = executor is None
        cores = os.cpu_count() or 1
        nworkers = max(1, workers or cores) if owned else max(1, workers or _executor_workers(executor) or 1)
        todo_plan = SweepPlan(todo, p.traces, p.columns, p.name, p.spec, p.preset)
        tasks = todo_plan.tasks(batch_size, nworkers)
        if owned:
            nworkers = max(1, min(nworkers, len(tasks)))
        nthreads = threads or (max(1, cores // nworkers) if owned else 1)
        session = store.begin_session({
            # A plan sharded before the call (the CLI's `--shard`) carries its shard: its session said None.
            "sweep": p.name, "preset": p.preset, "shard": f"{p.shard_of[0]}/{p.shard_of[1]}" if p.shard_of else None,
            "planned": len(p.runs),
            "already_done": already, "executor": "local processes" if owned else type(executor).__name__,
            "spec": p.spec,
        })
        bar = Progress(len(p.runs), already, progress, desc=p.name)
        status = "failed"
        failures: list[tuple[str, str]] = []
        pool = _LocalPool(nworkers) if owned and tasks else None
        killed = True
        try:
            ex = pool.executor if pool else (_as_executor(executor) if tasks else None)
            window = max_pending or (2 * nworkers if owned else 10_000)
            failures = _drive(p, store, session, tasks, ex, nthreads, window, bar, pool, _kinds(p))
            status = "failed" if failures else "finished"
            killed = False
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        finally:
            bar.close()
            if pool is not None:
                pool.close(kill=killed)
            store.end_session(session, status)
        if failures:
            rid, err = failures[0]
            raise _core.PrefetchsimError(
                f"{len(failures)} of {len(p.runs)} runs failed (the others are in {store.path}); "
                f"first: run {rid} ({_where(p, rid)}): {err}")
        df = store.read(run_ids=[r.run_id for r in p.runs])
    return _relabel(df, p)


def _where(p: SweepPlan, rid: str) -> str:
    """The grid point of run ``rid`` as the checks before a sweep name one (the hash alone said nothing of
    which sizes or policies failed), with its trace when the sweep has several."""
    run = next(r for r in p.runs if r.run_id == rid)
    trace = p.traces[run.trace_id].label if len(p.traces) > 1 else None
    return f"grid point {point_text(run.labels, trace)}"


# A task whose worker dies this many times is recorded as failed instead of being run again.
_MAX_WORKER_DEATHS = 3


def _drive(p: SweepPlan, store: Store, session: int, tasks: list[Task], ex: Executor | None, threads: int,
           window: int, bar: Progress, pool: _LocalPool | None, kinds: dict[str, str]) -> list[tuple[str, str]]:
    """Submit tasks (at most ``window`` at a time), write each as it finishes; on any exception or
    Ctrl-C cancel what has not started and keep what has finished."""
    failures: list[tuple[str, str]] = []
    if not tasks or ex is None:
        return failures
    it = iter(tasks)
    pending: dict[Future, Task] = {}
    retry: list[Task] = []
    deaths: dict[int, int] = {}
    running: dict[int, int] = {}

    def fill() -> None:
        while len(pending) < window:
            t = retry.pop() if retry else next(it, None)
            if t is None:
                return
            pending[ex.submit(run_task, _payload(t, threads))] = t

    def record(f: Future, t: Task) -> None:
        rows, attempts = _rows(p, t, f.result())
        store.write_task(session, rows, attempts, kinds)
        failures.extend((a["run_id"], a["error"]) for a in attempts if a["status"] == "failed")
        bar.update(sum(a["status"] == "done" for a in attempts))

    def worker_died() -> None:
        """A local worker died (SIGKILL, the out-of-memory killer): the pool fails every task it held.
        Keep what finished, restart the pool and run the failed tasks again, each at most
        ``_MAX_WORKER_DEATHS`` times (a task that kills its worker every time is recorded as failed)."""
        nonlocal ex
        wait(pending)
        for f, t in list(pending.items()):
            del pending[f]
            if isinstance(f.exception(), BrokenProcessPool):
                deaths[t.index] = deaths.get(t.index, 0) + 1
                if deaths[t.index] < _MAX_WORKER_DEATHS:
                    retry.append(t)
                    continue
                err = (f"the worker process died {deaths[t.index]} times running this task (killed, out of memory, "
                       "or it could not start: a worker imports the main script, see its stderr)")
                attempts = [{"run_id": r.run_id, "status": "failed", "error": err, "task": t.index} for r in t.runs]
                store.write_task(session, [], attempts, kinds)
                failures.extend((a["run_id"], err) for a in attempts)
            else:
                record(f, t)
        assert pool is not None
        ex = pool.restart()

    try:
        fill()
        while pending:
            finished, _ = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            if pool is not None:
                pool.drain(running)
                bar.set_requests(sum(running.values()))
            broken = False
            for f in finished:
                if pool is not None and isinstance(f.exception(), BrokenProcessPool):
                    broken = True
                    continue
                t = pending.pop(f)
                record(f, t)
            if broken:
                worker_died()
            fill()
    except BaseException:
        for f in pending:
            f.cancel()
        # Keep what finished while we were stopping.
        for f, t in list(pending.items()):
            if f.done() and not f.cancelled() and f.exception() is None:
                record(f, t)
        raise
    return failures


def _relabel(df, p: SweepPlan):
    """Axis columns as this spec names them (a resumed run keeps the labels of the spec it ran under)."""
    if df.empty:
        return df
    grid = p.grid().set_index("run_id")
    for c in ["trace", *p.columns]:
        df[c] = df["run_id"].map(grid[c])
    return df


def results(db: str | os.PathLike[str], filters: Any = ()):
    """The rows of a results database (or several, or CSV/Parquet exports) as a DataFrame;
    ``filters`` like ``["policy=lru,arc", "capacity_blocks>=1000"]`` or ``{"policy": "lru"}``."""
    from ._store import read_results

    return read_results(db, filters)


__all__ = ["results", "run_task", "sweep"]
