"""No panic across the Python boundary: every public function of ``prefetchsim`` and of
``prefetchsim._core``, fed invalid arguments (wrong types, negative, NaN, huge values, missing files,
directories, unknown names, invalid JSON), raises a typed exception: ``PrefetchsimError``, ``TypeError``,
``ValueError`` or ``OSError``; never ``pyo3_runtime.PanicException`` (a ``BaseException``) and never a
crash of the interpreter."""

from __future__ import annotations

import json
import math
import os
import re

import hypothesis.strategies as st
import prefetchsim as ps
import pytest
from hypothesis import HealthCheck, given, settings
from prefetchsim import _core

ALLOWED = (ps.PrefetchsimError, TypeError, ValueError, OSError)

BAD_VALUES = [
    None, -1, -(2**63), 2**64, 2**200, math.nan, math.inf, -math.inf, 0.5, "", "nope", "-3", "{", "[]",
    [], {}, [1, 2], {"a": 1}, b"bytes", object(), True,
]


def expect_typed_error(f, *args, **kwargs):
    """``f(*args, **kwargs)`` either returns or raises one of ALLOWED; a panic or anything else fails."""
    try:
        f(*args, **kwargs)
    except ALLOWED:
        return
    except BaseException as e:  # noqa: BLE001 - PanicException is a BaseException: catch it to report it
        pytest.fail(f"{getattr(f, '__name__', f)}{args!r} {kwargs!r} raised {type(e).__module__}.{type(e).__name__}: {e}")


def must_raise(f, *args, **kwargs):
    """As expect_typed_error, but returning normally is a failure too."""
    try:
        f(*args, **kwargs)
    except ALLOWED:
        return
    except BaseException as e:  # noqa: BLE001
        pytest.fail(f"{getattr(f, '__name__', f)}{args!r} {kwargs!r} raised {type(e).__module__}.{type(e).__name__}: {e}")
    pytest.fail(f"{getattr(f, '__name__', f)}{args!r} {kwargs!r} accepted an invalid argument")


@pytest.fixture
def spec_json(lirs_trace) -> str:
    return ps.open_trace(lirs_trace, "lirs")._json()


@pytest.fixture
def cfg_json() -> str:
    return json.dumps([{"level": [{"size": 4}]}])


# ---------------------------------------------------------------------------------------------------------
# prefetchsim._core, argument by argument


def _valid_uint(v, top=2**64 - 1) -> bool:
    return isinstance(v, int) and 0 <= v <= top


def test_core_simulate_rejects_every_bad_argument(spec_json, cfg_json):
    for bad in BAD_VALUES:
        must_raise(_core.simulate, bad, cfg_json)
        if bad == "[]":
            expect_typed_error(_core.simulate, spec_json, bad)  # no configs: no results
        else:
            must_raise(_core.simulate, spec_json, bad)
        if bad is None or _valid_uint(bad, 4096):
            expect_typed_error(_core.simulate, spec_json, cfg_json, None, bad)
        else:
            must_raise(_core.simulate, spec_json, cfg_json, None, bad)
        if bad is not None:
            must_raise(_core.simulate, spec_json, cfg_json, bad)  # progress must be callable
    must_raise(_core.simulate, spec_json, json.dumps([{"level": []}]))
    must_raise(_core.simulate, spec_json, json.dumps({"level": [{"size": 4}]}))


@pytest.mark.parametrize("size", [-1, 0, 2**32, 2**40, 2**64 - 1, 2**64, "1e30", "1e300TiB", "nan", "inf%", "-5%",
                                  "0x", "1e-30x", 1e-300, 1.5, "999999999999TiB", "4000000000"])
def test_core_simulate_rejects_impossible_sizes_without_allocating_them(spec_json, size):
    cfg = {"level": [{"size": 4}, {"size": size}]}
    must_raise(_core.simulate, spec_json, json.dumps([cfg]))


# Found by probing every parameter with values near 2^32 and 2^63: each allocated its state up front and
# aborted the interpreter ("memory allocation of N bytes failed"); now each is a ConfigError naming the key.
ALLOCATION_CRASHES = [
    ("trace.params.streams", {"path": "sequential", "format": "synthetic", "params": {"streams": 2**32 - 1}}),
    ("trace.params.streams", {"path": "oltp-like", "format": "synthetic", "params": {"streams": 2**31}}),
    ("trace.params.files", {"path": "multi-like", "format": "synthetic", "params": {"files": 2**32 - 1}}),
    ("trace.params.concurrency", {"path": "associations", "format": "synthetic", "params": {"concurrency": 2**31}}),
    ("trace.params.single", {"path": "split", "format": "synthetic", "params": {"single": 2**32 - 1}}),
]


@pytest.mark.parametrize("key,spec", ALLOCATION_CRASHES)
def test_generator_state_counts_are_bounded_not_aborts(key, spec):
    with pytest.raises(ps.ConfigError, match=re.escape(key)):
        _core.head(json.dumps(spec), 5)


@pytest.mark.parametrize("key,cfg", [
    ("level[0].prefetcher.k", {"size": 16, "prefetcher": {"name": "obl", "variant": "libcachesim", "k": 2**32 - 1}}),
    ("level[0].policy.history", {"size": 16, "policy": {"name": "mq", "history": 2**32 - 1}}),
    ("level[0].policy.history", {"size": 16, "policy": {"name": "mq", "history": 2**63}}),
])
def test_component_tables_are_bounded_not_aborts(key, cfg):
    with pytest.raises(ps.ConfigError, match=re.escape(key)):
        _core.check_config(json.dumps({"level": [cfg]}))


def test_a_huge_level_is_a_config_error_not_an_abort(spec_json):
    # 4e9 blocks of ARC metadata would need hundreds of GiB: refused before any allocation.
    with pytest.raises(ps.ConfigError, match=r"level\[0\]\.size: 4000000000 blocks need about"):
        _core.simulate(spec_json, json.dumps([{"level": [{"size": 4_000_000_000, "policy": "arc"}]}]))


def test_core_functions_reject_bad_trace_specs(tmp_path, lirs_trace):
    specs = [
        "", "{", "[]", "null", json.dumps({}), json.dumps({"path": 1}),
        json.dumps({"path": str(tmp_path / "missing.lis")}),
        json.dumps({"path": str(tmp_path)}),  # a directory
        json.dumps({"path": lirs_trace, "format": "nosuch"}),
        json.dumps({"path": lirs_trace, "block_size": 0}),
        json.dumps({"path": lirs_trace, "block_size": -1}),
        json.dumps({"path": lirs_trace, "block_size": 2**70}),
        json.dumps({"path": lirs_trace, "skip_bad": -1}),
        json.dumps({"path": lirs_trace, "mode": "bytes"}),
        json.dumps({"path": lirs_trace, "params": {"x": 1}}),
        json.dumps({"path": lirs_trace, "bogus": 1}),
        '{"path": NaN}',
        json.dumps({"path": "zipf", "format": "synthetic", "params": {"objects": 0}}),
        json.dumps({"path": "zipf", "format": "synthetic", "params": {"requests": -5}}),
        json.dumps({"path": "nosuchgen", "format": "synthetic"}),
    ]
    cfg = json.dumps([{"level": [{"size": 4}]}])
    for s in specs:
        must_raise(_core.simulate, s, cfg)
        must_raise(_core.footprint, s)
        must_raise(_core.head, s, 3)
        must_raise(_core.trace_info, s)
        must_raise(_core.convert, s, str(tmp_path / "out.csv"), "csv")


def test_core_head_trace_info_and_convert_reject_bad_numbers_and_outputs(spec_json, tmp_path):
    for bad in BAD_VALUES:
        if not _valid_uint(bad):
            must_raise(_core.head, spec_json, bad)
        if bad is not None and not _valid_uint(bad, 2**32 - 1):
            must_raise(_core.trace_info, spec_json, window=bad)
        if bad is not None and not _valid_uint(bad):
            must_raise(_core.trace_info, spec_json, gap=bad)
    expect_typed_error(_core.head, spec_json, 2**63)
    expect_typed_error(_core.trace_info, spec_json, window=2**32 - 1)
    for out in [str(tmp_path), str(tmp_path / "no" / "such" / "dir" / "x.csv"), ""]:
        must_raise(_core.convert, spec_json, out, "csv")
    must_raise(_core.convert, spec_json, str(tmp_path / "x.bin"), "nosuchformat")
    must_raise(_core.convert, spec_json, 5, "csv")


def test_core_check_config_and_device_reject_bad_input():
    for text in ["", "{", "[]", "null", "1", json.dumps({"level": []}), json.dumps({"level": [{"size": -1}]}),
                 json.dumps({"level": [{"size": 4, "policy": "lur"}]}), '{"level": [{"size": NaN}]}',
                 json.dumps({"level": [{"size": 4, "prefetcher": {"name": "obl", "k": -1}}]})]:
        must_raise(_core.check_config, text)
    for bad in BAD_VALUES:
        if not isinstance(bad, str):
            must_raise(_core.check_config, bad)
            must_raise(_core.device_random_read_ms, bad)
    must_raise(_core.device_random_read_ms, "nosuchdisk")
    for kw in ("sectors", "count", "seed"):
        for bad in (-1, 2**64, math.nan, "3", [1]):
            must_raise(_core.device_random_read_ms, "cheetah9lp", **{kw: bad})
    for sectors in (0, 2**31, 2**32 - 1):
        expect_typed_error(_core.device_random_read_ms, "cheetah9lp", sectors=sectors, count=10)
    must_raise(_core.device_random_read_ms, "cheetah9lp", count=2**40)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
        lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
        max_leaves=12,
    )
)
def test_core_check_config_takes_any_json_shape(value):
    try:
        text = json.dumps(value)
    except ValueError:
        return
    expect_typed_error(_core.check_config, text)
    expect_typed_error(_core.check_config, json.dumps({"level": [value]}))
    expect_typed_error(_core.check_config, json.dumps({"level": [{"size": 4, "policy": value}]}))
    expect_typed_error(_core.check_config, json.dumps({"level": [{"size": 4, "prefetcher": value}]}))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    key=st.sampled_from(["objects", "alpha", "read_share", "seed", "files", "apps", "streams", "concurrency",
                         "single", "multi", "random", "groups", "group_len", "volumes", "len", "spacing", "start",
                         "mean_interarrival_s", "mean_run", "footprint_bytes", "extent_bytes", "space_blocks",
                         "hot_blocks", "mean_file_bytes", "min_blocks", "max_blocks", "disk_bytes"]),
    gen=st.sampled_from([n for n in ps.generators()]),
    value=st.one_of(st.sampled_from([2**32 - 1, 2**31, 2**63, 2**64 - 1, 0, 1]),
                    st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=False), st.text(max_size=5)),
)
def test_generators_take_any_parameter_value(lirs_trace, key, gen, value):
    spec = json.dumps({"path": gen, "format": "synthetic", "params": {key: value, "requests": 50}})
    expect_typed_error(_core.head, spec, 50)


# ---------------------------------------------------------------------------------------------------------
# prefetchsim, the Python API


def test_open_trace_and_synthetic_reject_bad_arguments(tmp_path, lirs_trace):
    must_raise(ps.open_trace, str(tmp_path / "missing.lis"))
    must_raise(ps.open_trace, str(tmp_path))  # a directory
    for bad in BAD_VALUES:
        if not isinstance(bad, (str, bytes)):
            must_raise(ps.open_trace, bad)
        if bad != 4096 and not (isinstance(bad, int) and not isinstance(bad, bool) and 1 <= bad < 2**64):
            must_raise(ps.open_trace, lirs_trace, block_size=bad)
            must_raise(ps.synthetic, "zipf", block_size=bad)
        if not (isinstance(bad, int) and not isinstance(bad, bool) and 0 <= bad < 2**64):
            must_raise(ps.open_trace, lirs_trace, skip_bad=bad)
        if bad not in ("blocks", "objects"):
            must_raise(ps.open_trace, lirs_trace, mode=bad)
        if not isinstance(bad, str):
            must_raise(ps.synthetic, bad)
    # Errors that need the content show up at the first pass.
    tr = ps.open_trace(lirs_trace, "nosuchformat")
    for f in (tr.footprint, tr.info, tr.head):
        must_raise(f)
    must_raise(ps.synthetic("nosuchgen").head)
    must_raise(ps.synthetic("zipf", objects=-1).head)
    must_raise(ps.synthetic("zipf", alpha=math.nan).head)
    must_raise(ps.synthetic("zipf", requests=2**70).head)


def test_trace_methods_reject_bad_arguments(lirs_trace, tmp_path):
    tr = ps.open_trace(lirs_trace, "lirs")
    for bad in BAD_VALUES:
        if not _valid_uint(bad):
            must_raise(tr.head, bad)
        if bad is not None and not _valid_uint(bad, 2**32 - 1):
            must_raise(tr.info, window=bad)
        if not isinstance(bad, (str, bytes)) and bad is not None:
            must_raise(tr.convert, bad)
    must_raise(tr.convert, str(tmp_path))
    must_raise(tr.convert, str(tmp_path / "x.out"), to="nosuch")


def test_simulate_rejects_bad_arguments(lirs_trace, tmp_path):
    tr = ps.open_trace(lirs_trace, "lirs")
    for bad in BAD_VALUES:
        if not isinstance(bad, (str, bytes)) and bad is not None:
            must_raise(ps.simulate, bad, size=4)
        if bad is not True and not (isinstance(bad, int) and bad > 0) and not (isinstance(bad, float) and 0 < bad <= 1):
            must_raise(ps.simulate, tr, size=bad if bad is not None else "")
        if not isinstance(bad, str) or bad in ("nope", "-3", "{", "[]"):
            must_raise(ps.simulate, tr, size=4, policy=bad if bad is not None else 5)
            must_raise(ps.simulate, tr, size=4, prefetcher=bad if bad is not None else 5)
        if not isinstance(bad, (dict, str)) and bad is not None:
            must_raise(ps.simulate, tr, config=bad)
            must_raise(ps.simulate, tr, size=4, engine=bad)
        if not (isinstance(bad, int) and not isinstance(bad, bool) and 0 <= bad <= 4096):
            must_raise(ps.simulate_many, tr, [{"level": [{"size": 4}]}], threads=bad)
    must_raise(ps.simulate, tr)
    must_raise(ps.simulate, config=str(tmp_path / "missing.toml"))
    must_raise(ps.simulate, config=str(tmp_path))
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text("[[level]\nsize = ")
    must_raise(ps.simulate, tr, config=str(bad_toml))
    must_raise(ps.simulate, tr, {"level": [{"size": 4}], "engine": {"limit": -1}})
    must_raise(ps.simulate, tr, {"level": [{"size": 4}], "engine": {"warmup_requests": 2**64}})
    must_raise(ps.simulate, tr, levels=[ps.Level(4, "lru", "obl", prefetcher_params={"k": 2**40})])
    must_raise(ps.simulate, tr, levels=[ps.Level(4, "lru", policy_params={"x": math.nan})])
    must_raise(ps.simulate, tr, levels=[ps.Level(math.nan)])
    must_raise(ps.simulate, tr, levels=[5])
    must_raise(ps.simulate_many, tr, "not a list")
    must_raise(ps.simulate_many, tr, [{"level": [{"size": 4}]}], progress=5)

    def boom(n):
        raise RuntimeError("progress callback failed")

    # A failing progress callback is the caller's own exception, passed through (not a panic).
    try:
        ps.simulate_many(ps.synthetic("zipf", requests=5_000_000), [{"level": [{"size": 100}]}], progress=boom)
    except RuntimeError:
        pass


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    size=st.one_of(st.integers(min_value=-(2**70), max_value=2**70), st.floats(), st.text(max_size=8)),
    policy=st.sampled_from([*ps.policies(), "lur", ""]),
    prefetcher=st.sampled_from([*ps.prefetchers(), "nope"]),
    param=st.sampled_from(["k", "p", "g", "degree", "lookahead", "max_metadata", "history", "queues", "up_ratio",
                           "stream_memory", "max_streams", "ra_pages", "min_pages", "p_max", "p_init", "threshold",
                           "kin", "kout", "bits", "insert_ref", "life_time", "min_support", "max_support",
                           "pf_list_size", "shard_rows", "recording_table", "entry_bytes", "delta_l",
                           "large_ratio", "seq_threshold", "max_block"]),
    value=st.one_of(st.sampled_from([2**32 - 1, 2**31, 2**63, 2**64 - 1, 0, 1]),
                    st.integers(min_value=-(2**70), max_value=2**70), st.floats(), st.text(max_size=4),
                    st.booleans()),
)
def test_any_level_either_runs_or_raises_a_typed_error(lirs_trace, size, policy, prefetcher, param, value):
    tr = ps.open_trace(lirs_trace, "lirs")
    expect_typed_error(ps.simulate, tr, levels=[ps.Level(8, policy, policy_params={param: value})])
    # A prefetch degree of millions is valid and costs work in proportion (each request fetches that many
    # blocks): not a crash, but not for a unit test either.
    if isinstance(value, int) and 2**20 <= value < 2**32:
        value = 2**20 - 1 if value % 2 else 2**32
    pf_params = {param: value} if prefetcher not in ("none", "stack") else {}
    lv = ps.Level(size, policy, prefetcher, prefetcher_params=pf_params)
    expect_typed_error(ps.simulate, tr, levels=[lv])


def test_cli_errors_exit_2_and_never_trace_back(lirs_trace, tmp_path, capsys):
    from prefetchsim.cli import main

    cases = [
        ["sim", lirs_trace, "lirs", "lru", "-5"],
        ["sim", lirs_trace, "lirs", "lru", "4000000000"],
        ["sim", str(tmp_path), "auto", "lru", "4"],
        ["sim", lirs_trace, "lirs", "lru", "4", "--skip-bad", "-1"],
        ["sim", lirs_trace, "lirs", "lru", "4", "--threads", "-1"],
        ["sim", lirs_trace, "lirs", "lru", "4", "-t", "nokey"],
        ["trace", "info", str(tmp_path / "missing")],
        ["trace", "info", lirs_trace, "--window", "-1"],
        ["trace", "convert", lirs_trace, str(tmp_path)],
        ["run", str(tmp_path / "missing.toml")],
    ]
    for argv in cases:
        try:
            rc = main(argv)
        except SystemExit as e:  # argparse refuses a bad option value itself (usage, then the error)
            rc = e.code
        assert rc == 2, argv
        err = capsys.readouterr().err
        assert err.startswith(("prefetchsim: error: ", "usage: prefetchsim")) and "error: " in err, (argv, err)
        assert "Traceback" not in err, (argv, err)


def test_the_interpreter_survives_everything_above():
    # Reaching this test means no case aborted the process; one more call proves the extension still works.
    assert "lru" in ps.policies()
    assert os.getpid() > 0


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_nan_or_infinity_in_a_config_is_an_error_naming_its_field(value):
    tr = ps.synthetic("zipf", requests=100, seed=1)
    # One config is named by its own key path (no `configs[0].`, a list a run config never has).
    with pytest.raises(ps.ConfigError, match=r"^level\[0\]\.size: (nan|inf|-inf) is not a valid value"):
        ps.simulate(tr, {"level": [{"size": value}]})
    with pytest.raises(ps.ConfigError, match=r"configs\[1\]\.level\[0\]\.prefetcher\.threshold"):
        ps.simulate_many(tr, [{"level": [{"size": 4}]},
                              {"level": [{"size": 4, "prefetcher": {"name": "pg", "threshold": value}}]}])


@pytest.mark.parametrize("kwargs, says", [
    ({"config": {"level": [{"size": 4}]}, "levels": [ps.Level(8)]}, "not a config and levels="),
    ({"levels": [ps.Level(8)], "size": 4}, "not levels= and size="),
    ({"config": {"level": [{"size": 4}]}, "prefetcher": "obl"}, "policy= and prefetcher= describe"),
    ({"levels": [ps.Level(8)], "policy": "arc"}, "policy= and prefetcher= describe"),
])
def test_a_hierarchy_given_two_ways_is_an_error_not_a_silent_choice(kwargs, says):
    with pytest.raises(ps.ConfigError, match=says):
        ps.simulate(ps.synthetic("zipf", requests=100, seed=1), **kwargs)
