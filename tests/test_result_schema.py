"""The result schema the core exports (`prefetchsim.result_schema`, from `metrics::schema` in Rust) lists
exactly the fields results carry, with their types, in record order; the results database takes its
columns from it. And the core's exceptions show as `prefetchsim.X`, also in tracebacks."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

import prefetchsim as ps
from prefetchsim import _core
from prefetchsim._store import level_record_keys

KINDS = {"int": int, "float": float, "text": str, "bool": bool, "textlist": list}


def _check(fields, record):
    assert [f["name"] for f in fields] == list(record)
    for f in fields:
        v = record[f["name"]]
        assert isinstance(v, KINDS[f["kind"]]) and not (f["kind"] == "int" and isinstance(v, bool)), f
        assert f["meaning"] and f["meaning"] == f["meaning"].strip(), f


@pytest.mark.parametrize("engine", ["instant", "timed"])
def test_the_schema_lists_what_a_result_holds(engine):
    tr = ps.synthetic("oltp-like", requests=2_000, seed=1)
    r = ps.simulate(tr, {"level": [{"size": "5%", "prefetcher": "obl"}, {"size": 300, "policy": "arc"}],
                         "engine": {"kind": engine}})
    schema = ps.result_schema()
    run = {k: v for k, v in r.raw.items() if k not in ("levels", "instances", "timing", "clients", "rt_histogram")}
    _check(schema["run"], run)
    for level in r.raw["levels"]:
        _check(schema["level"], level)
    assert level_record_keys() == tuple(r.raw["levels"][0])
    # A timed run's run-level metrics were in no part of the schema.
    if engine == "timed":
        _check(schema["timing"], r.raw["timing"])
        assert {f["name"] for f in schema["timing"]} >= set(r.summary) - {f["name"] for f in schema["run"]} - set(
            r.raw["levels"][0]) - {"trace", "trace_requests", "trace_blocks", "trace_skipped"}


def test_the_exceptions_are_prefetchsim_classes_everywhere():
    for exc in (ps.ConfigError, ps.TraceError, ps.PrefetchsimError):
        assert exc.__module__ == "prefetchsim" and repr(exc) == f"<class 'prefetchsim.{exc.__name__}'>"
        assert getattr(_core, exc.__name__) is exc
    with pytest.raises(ps.ConfigError) as e:
        _core.check_config('{"level": [{"size": 1, "policy": "nosuch"}]}')
    assert pickle.loads(pickle.dumps(e.value)).args == e.value.args
    # A traceback names the class as users import it, even when only `_core` was imported.
    p = subprocess.run([sys.executable, "-c", "from prefetchsim import _core; _core.check_config('{\"level\": 1}')"],
                       capture_output=True, text=True)
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("prefetchsim.ConfigError: "), p.stderr
