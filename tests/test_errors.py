"""Bad input never panics and never passes silently: each error names the file, record/line and field,
or lists the valid choices, and is a typed Python exception."""

from __future__ import annotations

import os

import prefetchsim as ps
from prefetchsim.optimal import integrated
import pytest


def test_malformed_record_names_file_line_and_field(tmp_path):
    p = tmp_path / "bad.spc"
    p.write_text("0,0,4096,r,0.0\n0,xyz,4096,r,0.1\n")
    with pytest.raises(ps.TraceError) as e:
        ps.simulate(ps.open_trace(str(p), "spc"), size=4)
    msg = str(e.value)
    assert str(p) in msg and "line 2" in msg and "LBA" in msg


def test_truncated_binary_file_names_the_record(tmp_path):
    p = tmp_path / "cut.oracleGeneral.bin"
    rec = (1).to_bytes(4, "little") + (7).to_bytes(8, "little") + (4096).to_bytes(4, "little") + (-1).to_bytes(8, "little", signed=True)
    p.write_bytes(rec * 3 + rec[:10])
    with pytest.raises(ps.TraceError) as e:
        ps.simulate(ps.open_trace(str(p), "oracle_general"), size=4)
    msg = str(e.value)
    assert str(p) in msg and "record 3" in msg and "truncated" in msg


def test_unknown_format_lists_the_choices(lirs_trace):
    with pytest.raises(ps.TraceError) as e:
        ps.simulate(ps.open_trace(lirs_trace, "lisr"), size=4)
    assert "unknown trace format 'lisr'" in str(e.value) and "lirs" in str(e.value)


def test_unknown_policy_lists_the_choices(lirs_trace):
    with pytest.raises(ps.ConfigError) as e:
        ps.simulate(ps.open_trace(lirs_trace, "lirs"), size=4, policy="lur")
    assert "level[0].policy" in str(e.value) and "unknown policy 'lur'" in str(e.value) and "arc" in str(e.value)


def test_unknown_parameter_names_the_key(lirs_trace):
    cfg = {"level": [{"size": 4, "prefetcher": {"name": "obl", "variant": "always", "degre": 2}}]}
    with pytest.raises(ps.ConfigError) as e:
        ps.simulate(ps.open_trace(lirs_trace, "lirs"), cfg)
    assert "level[0].prefetcher" in str(e.value) and "degre" in str(e.value)


@pytest.mark.parametrize("size,needle", [("1KiB", "less than one block"), ("12 parsecs", "cannot read size"), ("150%", "(0, 1]")])
def test_impossible_sizes_are_errors_naming_the_level(lirs_trace, size, needle):
    with pytest.raises(ps.ConfigError) as e:
        ps.simulate(ps.open_trace(lirs_trace, "lirs"), size=size)
    assert "level[0].size" in str(e.value) and needle in str(e.value)


def test_unknown_config_key_and_unknown_trace_key_are_named(lirs_trace, tmp_path):
    with pytest.raises(ps.ConfigError) as e:
        ps.simulate(ps.open_trace(lirs_trace, "lirs"), {"level": [{"size": 4}], "engin": {}})
    assert "engin" in str(e.value)
    toml = tmp_path / "bad.toml"
    toml.write_text(f"[trace]\npath = {lirs_trace!r}\nblok_size = 512\n[[level]]\nsize = 4\n")
    with pytest.raises(ps.ConfigError) as e:
        ps.simulate(config=str(toml))
    assert "trace.blok_size" in str(e.value)


def test_missing_file_and_bad_mode_are_errors(tmp_path):
    with pytest.raises(ps.TraceError):
        ps.open_trace(str(tmp_path / "nope.spc"))
    with pytest.raises(ps.ConfigError):
        ps.open_trace(str(tmp_path), mode="bytes")


def test_a_config_error_is_raised_before_reading_the_trace(tmp_path):
    # The trace is malformed, but the config error must come first: configs are checked up front.
    p = tmp_path / "bad.spc"
    p.write_text("garbage\n")
    with pytest.raises(ps.ConfigError):
        ps.simulate(ps.open_trace(str(p), "spc"), size=4, policy="nope")


@pytest.mark.parametrize("kind", ["instant", "timed"])
def test_a_warm_up_covering_the_whole_trace_is_an_error_not_a_result(kind):
    # It used to return the warm-up's counters as if measured (instant) or half-reset counters (timed).
    tr = ps.synthetic("oltp-like", requests=300, seed=1)
    engine = {"kind": kind, "warmup_requests": 300}
    with pytest.raises(ps.ConfigError, match=r"engine.warmup_requests: 300 covers the whole trace \(300 requests\)"):
        ps.simulate(tr, {"level": [{"size": 50}], "engine": engine})
    # Many sizes of one policy go through the one-pass size family: the same check there.
    with pytest.raises(ps.ConfigError, match="covers the whole trace"):
        ps.simulate_many(tr, [{"level": [{"size": s}], "engine": {"warmup_requests": 300}} for s in (20, 40, 80)])
    r = ps.simulate(tr, {"level": [{"size": 50}], "engine": {**engine, "warmup_requests": 299}})
    assert r.summary["warmup_requests"] == 299


@pytest.mark.parametrize("kind", ["instant", "timed"])
def test_a_trace_with_no_request_is_an_error_that_says_why(tmp_path, kind):
    # A run of nothing used to report a hit ratio and a miss ratio of 0, as if measured.
    empty = tmp_path / "empty.spc"
    empty.write_text("")
    writes = tmp_path / "writes.spc"
    writes.write_text("0,0,4096,w,0.0\n0,8,4096,w,0.1\n")
    bad = tmp_path / "bad.spc"
    bad.write_text("x\ny\n")
    engine = {"kind": kind}
    cases = [
        (ps.open_trace(str(empty), "spc"), r"empty.spc: no requests to simulate \(the trace is empty\)"),
        (ps.open_trace(str(writes), "spc", ops="reads"), r"no record is kept by ops = reads"),
        (ps.open_trace(str(bad), "spc", skip_bad=10), r"all 2 records were bad and skipped by skip_bad"),
        (ps.synthetic("zipf", requests=0), r"zipf: no requests to simulate"),
    ]
    for tr, needle in cases:
        with pytest.raises(ps.TraceError, match=needle):
            ps.simulate(tr, size=4, engine=engine)
    # Several sizes of one policy share one pass (the size family): the same error.
    with pytest.raises(ps.TraceError, match="no requests to simulate"):
        ps.simulate_many(cases[0][0], [{"level": [{"size": s}], "engine": engine} for s in (2, 4, 8)])
    # A size as a share of the footprint: the same error, not "5% of the footprint is less than one block".
    for tr, needle in cases[:3]:
        with pytest.raises(ps.TraceError, match=needle):
            ps.simulate(tr, size="5%", engine=engine)
    assert ps.simulate(ps.open_trace(str(writes), "spc"), size=4, engine=engine).summary["requests"] == 2


def test_a_limit_inside_the_warm_up_is_an_error_before_the_run():
    tr = ps.synthetic("oltp-like", requests=300, seed=1)
    with pytest.raises(ps.ConfigError, match="engine.limit: 100 is within the warm-up"):
        ps.simulate(tr, {"level": [{"size": 50}], "engine": {"warmup_requests": 100, "limit": 100}})


def test_a_limit_of_zero_is_an_error_not_a_result_of_zeros():
    # It printed requests 0, hit ratio 0 and miss ratio 0 with exit status 0.
    tr = ps.synthetic("oltp-like", requests=300, seed=1)
    for kind in ("instant", "timed"):
        with pytest.raises(ps.ConfigError, match="engine.limit: 0 requests measure nothing"):
            ps.simulate(tr, {"level": [{"size": 50}], "engine": {"kind": kind, "limit": 0}})
    for method in ("exact", "shards", "mini"):
        with pytest.raises(ps.ConfigError, match="limit: 0 requests measure nothing"):
            ps.mrc(tr, points=4, method=method, limit=0)
    with pytest.raises(ps.ConfigError, match="limit: 0 requests measure nothing"):
        integrated(tr, cache_blocks=10, fetch_time=2, limit=0)
    assert ps.simulate(tr, {"level": [{"size": 50}], "engine": {"limit": 1}}).summary["requests"] == 1


@pytest.mark.parametrize("call,needle", [
    (lambda tr: ps.simulate(ps.synthetic("oltp-like", requests=-1), size=10),
     "trace.params.requests: -1 is negative; expected a whole number"),
    (lambda tr: ps.synthetic("oltp-like", seed=1.5).info(), "trace.params.seed: 1.5 is not a whole number"),
    (lambda tr: ps.mrc(tr, [10], method="shards", seed=-1), "sampling.seed: -1 is negative"),
    (lambda tr: ps.mrc(tr, [10], method="mini", seed=-1), "sample.seed: -1 is negative"),
])
def test_trace_and_sampling_parameters_read_plainly_in_errors(call, needle):
    # They said serde's "invalid value: integer `-1`, expected u64", as config keys no longer do.
    with pytest.raises(ps.ConfigError) as e:
        call(ps.synthetic("oltp-like", requests=200, seed=1))
    assert needle in str(e.value) and "u64" not in str(e.value)


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="no named pipes on this system")
def test_a_pipe_is_an_error_that_says_to_save_it_to_a_file(tmp_path):
    # It said "Illegal seek (os error 29)".
    import os
    import threading

    fifo = tmp_path / "t.lis"
    os.mkfifo(fifo)

    def feed():
        try:
            with open(fifo, "w") as f:
                f.write("1 2 0 1\n" * 1000)
        except BrokenPipeError:
            pass

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    with pytest.raises(ps.TraceError, match=r"t\.lis: .*a pipe or stream cannot be read again; save it to a file"):
        ps.simulate(ps.open_trace(str(fifo), "arc", cache=False), size=10)
    t.join(timeout=10)


def test_an_output_named_for_a_compression_it_cannot_write_is_refused(tmp_path):
    # `--events e.csv.bz2` and `convert t.xz` wrote plain bytes under the compressed name.
    tr = ps.synthetic("oltp-like", requests=100, seed=1)
    for name in ("e.csv.bz2", "e.csv.xz"):
        with pytest.raises(ps.PrefetchsimError, match="compression is read but not written"):
            ps.simulate(tr, size=10, events=str(tmp_path / name))
        with pytest.raises(ps.TraceError, match="compression is read but not written"):
            tr.convert(str(tmp_path / name))
    assert list(tmp_path.iterdir()) == []


def test_an_event_log_name_that_is_neither_csv_nor_parquet_is_refused_before_the_run(tmp_path, capsys):
    # `sim --events ev.xyz` wrote CSV under that name, while `trace convert` refuses names it does not know.
    from prefetchsim.cli import main

    tr = ps.synthetic("oltp-like", requests=100, seed=1)
    for name in ("ev.xyz", "ev.txt.gz", "ev"):
        with pytest.raises(ps.ConfigError, match=f"{name}: unknown output name for an event log; end it in .csv"):
            ps.simulate(tr, size=10, events=str(tmp_path / name))
        assert main(["sim", "oltp-like", "synthetic", "lru", "10", "-t", "requests=100",
                     "--events", str(tmp_path / name)]) == 2
        assert "unknown output name for an event log" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    for name in ("ev.csv", "ev.CSV.zst", "ev.csv.gzip"):
        ps.simulate(tr, size=10, events=str(tmp_path / name))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ev.CSV.zst", "ev.csv", "ev.csv.gzip"]


def test_an_output_in_a_missing_folder_is_refused_before_the_work(tmp_path, capsys, monkeypatch):
    # `sweep spec -o nodir/rows.csv` ran every run and only then failed; so did `sim`/`run -o`.
    from prefetchsim import cli

    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "s.toml"
    spec.write_text('[trace]\npath = "zipf"\nformat = "synthetic"\nparams = { requests = 200 }\n'
                    '[[level]]\nsize = 10\n[sweep]\n"level[0].policy" = ["lru", "arc"]\n')
    for args in (["sweep", str(spec), "--db", "s.sqlite", "-o", "nodir/rows.csv"],
                 ["sim", "zipf", "synthetic", "lru", "10", "-t", "requests=100", "-o", "nodir/r.csv"],
                 ["sim", "zipf", "synthetic", "lru", "10", "-t", "requests=100", "--events", "nodir/e.csv"]):
        assert cli.main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "no folder" in err and f"{args[-2]} {args[-1]}: " in err, err
    assert sorted(os.listdir(tmp_path)) == ["s.toml"]  # the sweep made no database: nothing ran


@pytest.mark.parametrize("call,needle", [
    (lambda p: ps.open_trace(p, block_size=4096.0), "trace.block_size must be an integer, not float"),
    (lambda p: ps.open_trace(p, skip_bad="3"), "trace.skip_bad must be an integer, not str"),
    (lambda p: ps.simulate(p, size=10, policy=5), "simulate: policy= takes a name or a table"),
    (lambda p: ps.simulate(config=5), "config must be a TOML path or a dict, not int"),
    # These raised plain TypeError/ValueError/AttributeError naming no argument.
    (lambda p: ps.simulate(p, size=10, engine=[("warmup_requests", 1)]), "simulate: engine= takes a table (dict)"),
    (lambda p: ps.simulate(p, size=10, engine="timed"), "engine= takes a table (dict) of [engine] keys, not str"),
    (lambda p: ps.simulate(p, levels={"size": 10}), "simulate: levels= takes a list of Level(...) or level tables"),
    (lambda p: ps.simulate(p, levels="5%"), "levels= takes a list of Level(...) or level tables (dicts), not str"),
    (lambda p: ps.simulate(p, levels=[{"size": 10}, None]), "simulate: levels[1] must be a Level(...) or a level"),
    (lambda p: ps.simulate(p, size=10, engine={"kind": "timed"}, device=5), "simulate: device= takes a preset name"),
    (lambda p: ps.simulate(p, size=10, engine={"kind": "timed"}, scheduler="noop"), "simulate: scheduler= takes a"),
    (lambda p: ps.open_trace(None), "path must be a str or os.PathLike, not NoneType"),
    (lambda p: ps.open_trace(p).convert(None), "output must be a str or os.PathLike, not NoneType"),
])
def test_arguments_of_the_wrong_type_are_config_errors_naming_them(tmp_path, call, needle):
    # They were plain TypeErrors, which `except ps.PrefetchsimError` missed; config=5 named no argument.
    p = tmp_path / "t.lis"
    p.write_text("1 1 0 0\n2 4 0 1\n")
    with pytest.raises(ps.ConfigError) as e:
        call(str(p))
    assert needle in str(e.value)
    # Still a TypeError, for code that caught that.
    assert isinstance(e.value, TypeError) and type(e.value) is ps.ConfigTypeError


def test_results_filters_of_the_wrong_type_name_the_argument(tmp_path):
    db = tmp_path / "r.sqlite"
    ps.sweep({"trace": {"path": "zipf", "format": "synthetic", "params": {"requests": 100}},
              "level": [{"size": 10}], "sweep": {"level[0].policy": ["lru"]}}, db=db)
    for filters, needle in (([5], "filters[0] must be a 'KEY=VALUE' text"), ("policy=lru", "filters must be a list"),
                            (5, "filters must be a list of 'KEY=VALUE' texts or a dict, not int")):
        with pytest.raises(ps.ConfigTypeError, match=needle.replace("[", r"\[").replace("]", r"\]")):
            ps.results(db, filters)
    assert len(ps.results(db, ["policy=lru"])) == 1


def test_a_non_finite_trace_parameter_names_its_field():
    with pytest.raises(ps.ConfigError, match=r"^trace\.params\.alpha: nan is not a valid value"):
        ps.synthetic("zipf", requests=100, alpha=float("nan")).info()


def test_a_config_type_error_survives_pickling():
    # Sweep workers send their errors back pickled.
    import pickle

    e = pickle.loads(pickle.dumps(ps.ConfigTypeError("x must be an integer, not str")))
    assert type(e) is ps.ConfigTypeError and str(e) == "x must be an integer, not str"


def test_a_nan_in_one_config_is_named_by_its_own_key_path():
    # `configs[0].` named a list that a run config or simulate() never has.
    tr = ps.synthetic("zipf", requests=100, seed=1)
    with pytest.raises(ps.ConfigError) as e:
        ps.simulate(tr, {"level": [{"size": 10}], "link": {"alpha_ms": float("nan")}})
    assert str(e.value).startswith("link.alpha_ms: nan is not a valid value"), str(e.value)
    with pytest.raises(ps.ConfigError, match=r"^level\[0\]\.size: inf"):
        ps.simulate(tr, size=float("inf"))
    # Of several configs, the index still says which.
    with pytest.raises(ps.ConfigError, match=r"^configs\[1\]\.level\[0\]\.size: inf"):
        ps.simulate_many(tr, [{"level": [{"size": 10}]}, {"level": [{"size": float("inf")}]}])


@pytest.mark.parametrize("size", ["18446744073709551616", 2**64, 10**30])
def test_a_size_beyond_64_bits_is_too_large_not_a_share(size):
    # It said "a share of the footprint must be in (0, 1] …, got 18446744073709552000".
    tr = ps.synthetic("zipf", requests=100, seed=1)
    with pytest.raises(ps.ConfigError) as e:
        ps.simulate(tr, size=size)
    assert "blocks is too large" in str(e.value) and "share" not in str(e.value), str(e.value)


def test_a_du_parameter_under_demote_names_the_key(lirs_trace):
    levels = [{"size": 2}, {"size": 4, "options": {"exclusive": "demote", "du_position": "evict_now"}}]
    with pytest.raises(ps.ConfigError) as e:
        ps.simulate(ps.open_trace(lirs_trace, "lirs"), levels=levels)
    assert "level[1].options.du_position" in str(e.value) and 'exclusive = "du"' in str(e.value)


def test_demote_read_pos_changes_what_the_lower_level_keeps(lirs_trace):
    # 1 2 3 1 4 5 1 2 through L1 of 1 block over DEMOTE L2 of 4: the default keeps what L2 sends up (at
    # its eviction end) and evicts to make room for them, `none` caches only what comes down.
    def l2_evictions(options):
        levels = [{"size": 1}, {"size": 4, "options": {"exclusive": "demote", **options}}]
        return ps.simulate(ps.open_trace(lirs_trace, "lirs"), levels=levels).levels[1]["evictions"]
    assert l2_evictions({}) == l2_evictions({"demote_read_pos": "lru_end"})
    assert l2_evictions({"demote_read_pos": "none"}) < l2_evictions({})
