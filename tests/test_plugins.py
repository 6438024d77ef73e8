"""Python plugins (`prefetchsim.plugin`, docs/guide/plugins.md): a prefetcher or a policy named
`module:Class` gives the counters of its built-in twin in the instant and the timed engine, runs in a
sweep's worker processes, and every way of getting it wrong is an error naming the config key, the plugin
and (for Python failures) the traceback."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import prefetchsim as ps
import pytest

from conftest import shared_trace

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:  # plugin_examples.py beside this file, importable by spawned sweep workers too
    sys.path.insert(0, HERE)

# Counters that come from the prefetcher and the policy (the record's names and level are set apart).
COUNTERS = ["demand_accesses", "hits", "prefetch_hits", "misses", "late_prefetch", "prefetch_issued",
            "prefetch_used", "unused_evicted", "evictions", "fetches", "fetched_blocks", "inflight_demand_joins"]

TIMED = {"kind": "timed", "replay": "open"}


def counters(r: ps.Result) -> list[dict]:
    return [{k: lv[k] for k in COUNTERS} for lv in r.levels]


@pytest.fixture(scope="module")
def oltp():
    return ps.synthetic("oltp-like", requests=20_000, seed=3)


def run(trace, engine=None, **level):
    kw = {"engine": engine, "device": "cheetah9lp"} if engine else {}
    return ps.simulate(trace, levels=[level], **kw)


# ----------------------------------------------------------------------------- same counters as built-ins


@pytest.mark.parametrize("engine", [None, TIMED], ids=["instant", "timed"])
@pytest.mark.parametrize("cls", ["NextN", "NextNList"])
def test_a_next_n_prefetcher_gives_the_counters_of_read_ahead_pa(oltp, engine, cls):
    plugin = run(oltp, engine, size="2%", policy="lru", prefetcher={"name": f"plugin_examples:{cls}", "n": 3})
    builtin = run(oltp, engine, size="2%", policy="lru", prefetcher={"name": "ra", "mode": "pa", "p": 3})
    assert counters(plugin) == counters(builtin)
    assert builtin.levels[0]["prefetch_issued"] > 1000, "the comparison exercises prefetching"
    assert plugin.levels[0]["prefetcher"] == f"plugin_examples:{cls}"
    if engine:
        assert plugin.summary["rt_mean_ms"] == builtin.summary["rt_mean_ms"]


@pytest.mark.parametrize("engine", [None, TIMED], ids=["instant", "timed"])
def test_a_tagged_obl_prefetcher_gives_the_counters_of_obl(oltp, engine):
    plugin = run(oltp, engine, size="2%", policy="lru", prefetcher="plugin_examples:TaggedObl")
    builtin = run(oltp, engine, size="2%", policy="lru", prefetcher="obl")
    assert counters(plugin) == counters(builtin)


@pytest.mark.parametrize("engine", [None, TIMED], ids=["instant", "timed"])
def test_a_python_lru_gives_the_counters_of_lru(oltp, engine):
    plugin = run(oltp, engine, size="2%", policy="plugin_examples:Lru", prefetcher="obl")
    builtin = run(oltp, engine, size="2%", policy="lru", prefetcher="obl")
    assert counters(plugin) == counters(builtin)
    assert builtin.levels[0]["evictions"] > 1000
    assert plugin.levels[0]["policy"] == "plugin_examples:Lru"
    if engine:
        # In-flight blocks cannot be evicted: the timed run passes them in `skip`.
        assert plugin.summary["rt_mean_ms"] == builtin.summary["rt_mean_ms"]


def test_python_policy_and_prefetcher_together_at_a_lower_level_and_in_a_stack(oltp):
    top = {"size": "1%", "policy": "lru"}
    plugin = ps.simulate(oltp, levels=[top, {"size": "2x", "policy": "plugin_examples:Lru",
                                             "prefetcher": "obl+plugin_examples:Nothing"}])
    builtin = ps.simulate(oltp, levels=[top, {"size": "2x", "policy": "lru", "prefetcher": "obl"}])
    assert counters(plugin) == counters(builtin)


@pytest.mark.parametrize("exclusive", ["du", "demote"])
def test_a_python_lru_under_du_and_demote_gives_the_counters_of_lru(oltp, exclusive):
    # DU calls demote(); DEMOTE inserts the blocks coming down at the LRU end (PLACE_LRU).
    levels = lambda pol: [{"size": "1%", "policy": "lru"},  # noqa: E731
                          {"size": "2x", "policy": pol, "options": {"exclusive": exclusive}}]
    builtin = ps.simulate(oltp, levels=levels("lru"))
    assert counters(ps.simulate(oltp, levels=levels("plugin_examples:Lru"))) == counters(builtin)
    assert builtin.levels[1]["demoted_in" if exclusive == "demote" else "hits"] > 100


def test_several_plugin_configs_on_parallel_threads_give_each_its_own_counters(oltp):
    # Decoded once, replayed on 3 threads that take the GIL in turn; each plugin instance is its own.
    ns = [1, 2, 3, 4, 5, 6]
    plugin = ps.simulate_many(oltp, [{"level": [{"size": "2%", "prefetcher": {"name": "plugin_examples:NextN",
                                                                              "n": n}}]} for n in ns], threads=3)
    builtin = ps.simulate_many(oltp, [{"level": [{"size": "2%", "prefetcher": {"name": "ra", "mode": "pa",
                                                                               "p": n}}]} for n in ns], threads=1)
    assert [counters(r) for r in plugin] == [counters(r) for r in builtin]
    assert len({r.levels[0]["prefetch_issued"] for r in builtin}) == len(ns)


def test_the_command_line_runs_plugins_from_pythonpath(tmp_path):
    env = {**os.environ, "PYTHONPATH": HERE}
    p = subprocess.run([sys.executable, "-m", "prefetchsim", "sim", "zipf", "synthetic",
                        "lru+plugin_examples:NextN(n=2),plugin_examples:Lru+obl,lru+ra(mode=pa,p=2),lru+obl", "5%",
                        "-t", "requests=5000,seed=1", "-f", "csv"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert [r["prefetcher"] for r in rows] == ["plugin_examples:NextN", "obl", "ra", "obl"]
    assert rows[0]["hits"] == rows[2]["hits"] and rows[1]["hits"] == rows[3]["hits"]


def test_ctrl_c_stops_a_run_whose_plugin_is_slow(tmp_path):
    # A plugin taking 10 ms a call held Ctrl-C until the run ended (the run stops at its progress ticks,
    # 65,536 requests apart): 2,500 requests exited 130 only 22.8 s after the signal.
    import signal
    import time

    (tmp_path / "slowplug.py").write_text(textwrap.dedent("""
        import pathlib, time
        from prefetchsim.plugin import Prefetcher
        class Slow(Prefetcher):
            def on_access(self, block, nblocks, misses, prefetch_hits):
                pathlib.Path("started").touch()
                time.sleep(0.01)
    """))
    script = ("import prefetchsim as ps\n"
              "ps.simulate(ps.synthetic('zipf', requests=20000, seed=1), size=64, prefetcher='slowplug:Slow')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert p.poll() is None, p.communicate()
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    # Without the fix the run goes on for its 200 s (20,000 calls of 10 ms).
    assert time.monotonic() - t0 < 10, err
    assert "KeyboardInterrupt" in err, err


# ----------------------------------------------------------------------------- sweeps


def test_a_sweep_over_plugin_parameters_runs_in_worker_processes():
    s = {"trace": {"path": "zipf", "format": "synthetic", "params": {"requests": 5000, "seed": 1}},
         "level": [{"size": "5%", "prefetcher": "plugin_examples:NextN"}],
         "sweep": {"level[0].prefetcher.n": [1, 2]}}
    df = ps.sweep(s, db=None, workers=2)
    tr = ps.synthetic("zipf", requests=5000, seed=1)
    assert list(df.level0_prefetcher_n) == [1, 2]
    for (_, row), n in zip(df.iterrows(), [1, 2]):
        lv = ps.simulate(tr, size="5%", prefetcher={"name": "ra", "mode": "pa", "p": n}).levels[0]
        assert (row.hits, row.prefetch_issued, row.fetches) == (lv["hits"], lv["prefetch_issued"], lv["fetches"])
        assert row.prefetcher == "plugin_examples:NextN"


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(("name", "needles"), [
    ("no_such_module_xyz:Foo", ["level[0].prefetcher", "no_such_module_xyz:Foo", "cannot import module",
                                "ModuleNotFoundError"]),
    ("plugin_examples:NoSuchClass", ["has no 'NoSuchClass'", "AttributeError"]),
    ("plugin_examples:", ["'package.module:Class'"]),
    ("plugin_examples:PLACE_LRU", ["is not a class"]),
    # A function is callable but no class: it was said not to define on_access.
    ("os:getcwd", ["'getcwd' in module 'os' is not a class"]),
    ("prefetchsim.plugin:Prefetcher", ["does not define on_access(self, block, nblocks, misses, prefetch_hits)"]),
])
def test_a_bad_plugin_name_is_a_config_error_naming_the_key_and_the_plugin(oltp, name, needles):
    with pytest.raises(ps.ConfigError) as e:
        run(oltp, size=100, prefetcher=name)
    for n in needles:
        assert n in str(e.value), str(e.value)
    with pytest.raises(ps.ConfigError, match="level\\[0\\].prefetcher"):
        ps.sweep_plan({"trace": {"path": "zipf", "format": "synthetic"}, "level": [{"size": 10, "prefetcher": name}]})


def test_a_policy_missing_a_required_callback_is_a_config_error(oltp):
    with pytest.raises(ps.ConfigError, match=r"level\[0\]\.policy: plugin 'prefetchsim.plugin:Policy': the class "
                                             r"does not define on_hit\(self, block\)"):
        run(oltp, size=100, policy="prefetchsim.plugin:Policy")


def test_parameters_the_class_does_not_take_are_a_config_error_with_the_traceback(oltp):
    with pytest.raises(ps.ConfigError) as e:
        run(oltp, size=100, prefetcher={"name": "plugin_examples:NextN", "m": 2})
    msg = str(e.value)
    assert "level[0].prefetcher: plugin 'plugin_examples:NextN'" in msg and 'NextN(**{"m":2}) failed' in msg
    assert "TypeError" in msg and "unexpected keyword argument 'm'" in msg


def _module(tmp_path, monkeypatch, name, source):
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_a_callback_that_raises_stops_the_run_with_a_plugin_error_and_its_traceback(oltp, tmp_path, monkeypatch):
    mod = _module(tmp_path, monkeypatch, "raising_plugin", """
        class Boom:
            def on_access(self, block, nblocks, misses, prefetch_hits):
                if block > 1000:
                    raise RuntimeError(f"no prefetch for {block}")
    """)
    for engine in (None, TIMED):
        with pytest.raises(ps.PluginError) as e:
            run(oltp, engine, size=100, prefetcher=f"{mod}:Boom")
        msg = str(e.value)
        assert msg.startswith(f"level[0].prefetcher: plugin '{mod}:Boom': on_access failed:"), msg
        assert "Traceback (most recent call last)" in msg and "RuntimeError: no prefetch for" in msg
        assert "raising_plugin.py" in msg and "line 5" in msg


@pytest.mark.parametrize(("ret", "needle"), [
    ("[block + 1, 2.5]", "on_access returned 2.5 (<class 'float'>)"),
    ("True", "on_access returned True (<class 'bool'>)"),
    ("-1", "on_access returned block -1, outside 0 to 2**64-2"),
    ("2**64 - 1", "on_access returned block 18446744073709551615, outside 0 to 2**64-2 (the last block)"),
    ("range(2**64 - 3, 2**64)", "blocks past 2**64-2 (the last block)"),
    ("range(2**70, 2**70 + 2)", "blocks past 2**64-2 (the last block)"),
    ("object()", "expected None, a block number or an iterable of block numbers"),
    # Text is iterable but holds no blocks: b"ab" prefetched blocks 97 and 98, "12" was refused as '1'.
    ('b"ab"', "on_access returned b'ab' (<class 'bytes'>); expected None, a block number or an iterable"),
    ('"12"', "on_access returned '12' (<class 'str'>); expected None"),
    ("__import__('numpy').float64(3.0)", "expected None, a block number or an iterable of block numbers"),
    ("[__import__('numpy').bool_(True)]", "where a block number (int) was expected"),
    ("range(-3, 2)", "negative blocks"),
    # Runs beyond what one trace request may span: a range of 10**9 blocks used to hang the run.
    ("range(block + 1, block + 10**9)", "on_access returned 999999999 or more blocks; one call may prefetch at most"),
    ("__import__('itertools').count(block + 1)", "on_access returned 16777217 or more blocks"),
])
def test_a_callback_returning_a_non_block_is_a_plugin_error(oltp, tmp_path, monkeypatch, ret, needle):
    mod = _module(tmp_path, monkeypatch, f"bad_return_{abs(hash(ret))}", f"""
        class Bad:
            def on_access(self, block, nblocks, misses, prefetch_hits):
                return {ret}
    """)
    with pytest.raises(ps.PluginError) as e:
        run(oltp, size=100, prefetcher=f"{mod}:Bad")
    assert needle in str(e.value) and "level[0].prefetcher" in str(e.value), str(e.value)


def test_a_policy_naming_a_block_that_is_not_cached_is_a_plugin_error(oltp, tmp_path, monkeypatch):
    mod = _module(tmp_path, monkeypatch, "bad_policy", """
        from prefetchsim.plugin import Policy
        class Wrong(Policy):
            def on_hit(self, block): pass
            def on_insert(self, block, prefetched, after, place): pass
            def victim(self, skip): return 123456789
            def on_remove(self, block, evicted): pass
    """)
    with pytest.raises(ps.PluginError, match=r"level\[0\]\.policy: plugin 'bad_policy:Wrong': victim failed:(.|\n)*"
                                             r"victim returned block 123456789, which is not cached"):
        run(oltp, size=100, policy=f"{mod}:Wrong")


def test_skip_is_a_frozenset_at_every_call_so_a_policy_cannot_clear_it(tmp_path, monkeypatch):
    # From the second call on it was one mutable set the level kept adding to: a policy that cleared it
    # made the run ask for ever (40 M calls in 15 s, Ctrl-C included).
    mod = _module(tmp_path, monkeypatch, "skip_policy", """
        from collections import OrderedDict
        from prefetchsim.plugin import Policy
        SEEN = []
        class Oldest(Policy):
            def __init__(self): self.o = OrderedDict()
            def on_hit(self, block): self.o.move_to_end(block)
            def on_insert(self, block, prefetched, after, place): self.o[block] = None
            def victim(self, skip):
                SEEN.append((type(skip).__name__, len(skip)))
                return next((b for b in self.o if b not in skip), None)
            def on_remove(self, block, evicted): del self.o[block]
    """)
    tr = ps.synthetic("oltp-like", requests=300, seed=1)
    r = ps.simulate(tr, size=8, policy=f"{mod}:Oldest", prefetcher={"name": "ra", "mode": "pa", "p": 4},
                    engine=TIMED, device={"name": "fixed", "read_latency_ms": 5.0})
    seen = __import__(mod).SEEN
    assert r.levels[0]["evictions"] > 0 and any(n > 0 for _, n in seen), "some victims were in flight"
    assert {t for t, _ in seen} == {"frozenset"}


def test_a_failing_config_among_several_is_named_by_its_index(oltp, tmp_path, monkeypatch):
    # The error named the level and the plugin but not which of the configs failed.
    mod = _module(tmp_path, monkeypatch, "fails_on_k", """
        class Fails:
            def __init__(self, k=0): self.k = k
            def on_access(self, block, nblocks, misses, prefetch_hits):
                if self.k: raise RuntimeError("boom")
    """)
    cfgs = [{"level": [{"size": 64, "prefetcher": {"name": f"{mod}:Fails", "k": k}}]} for k in (0, 1)]
    with pytest.raises(ps.PluginError, match=r"^config 1: level\[0\]\.prefetcher: plugin 'fails_on_k:Fails'"):
        ps.simulate_many(oltp, cfgs)


def test_a_policy_answering_none_while_blocks_could_go_is_a_plugin_error(oltp, tmp_path, monkeypatch):
    # None means nothing can go; said always, the level stopped caching in silence (14,255 of 14,319
    # missed blocks read and dropped, no counter, more hits than LRU).
    mod = _module(tmp_path, monkeypatch, "hoarder_policy", """
        from prefetchsim.plugin import Policy
        class Hoarder(Policy):
            def on_hit(self, block): pass
            def on_insert(self, block, prefetched, after, place): pass
            def victim(self, skip): return None
            def on_remove(self, block, evicted): pass
    """)
    with pytest.raises(ps.PluginError, match=r"victim returned None \(nothing can go\), but 64 of the 64 cached"):
        run(oltp, size=64, policy=f"{mod}:Hoarder")


def test_a_policy_without_demote_under_du_says_which_callback_is_missing(oltp):
    levels = [{"size": "1%", "policy": "lru"},
              {"size": "2x", "policy": "plugin_examples:LruNoDemote", "options": {"exclusive": "du"}}]
    with pytest.raises(ps.PluginError, match=r"level\[1\]\.policy(.|\n)*does not define demote\(self, block\)"):
        ps.simulate(oltp, levels=levels)


def test_attach_and_evictions_reach_the_plugin(oltp):
    r = run(oltp, size="2%", prefetcher="plugin_examples:Recorder")
    lv = r.levels[0]
    from plugin_examples import Recorder
    rec = Recorder.last
    assert rec.attached == (lv["capacity_blocks"], 4096)
    assert rec.evicted == lv["evictions"] and rec.evicted_unused == lv["unused_evicted"]


def test_real_trace_counters_match_the_builtin(tmp_path):
    tr = ps.open_trace(shared_trace("arc/OLTP.lis.zst"), "arc")
    kw = {"engine": {"limit": 50_000}}
    plugin = ps.simulate(tr, size="1%", prefetcher={"name": "plugin_examples:NextN", "n": 2}, **kw)
    builtin = ps.simulate(tr, size="1%", prefetcher={"name": "ra", "mode": "pa", "p": 2}, **kw)
    assert counters(plugin) == counters(builtin)


def test_numpy_integers_are_block_numbers_like_ints(oltp, tmp_path, monkeypatch):
    # np.arange and np.int64 answers were refused ("where a block number (int) was expected").
    mod = _module(tmp_path, monkeypatch, "numpy_answers", """
        import numpy as np
        class Arange:
            def on_access(self, block, nblocks, misses, prefetch_hits):
                return np.arange(block + nblocks, block + nblocks + 4)
        class Scalar:
            def on_access(self, block, nblocks, misses, prefetch_hits):
                return np.int64(block + nblocks)
        class Ints:
            def on_access(self, block, nblocks, misses, prefetch_hits):
                return range(block + nblocks, block + nblocks + 4)
        class Int:
            def on_access(self, block, nblocks, misses, prefetch_hits):
                return block + nblocks
    """)
    for np_cls, plain in (("Arange", "Ints"), ("Scalar", "Int")):
        got = counters(run(oltp, size=100, prefetcher=f"{mod}:{np_cls}"))
        assert got == counters(run(oltp, size=100, prefetcher=f"{mod}:{plain}")) and got[0]["prefetch_issued"] > 0


def test_a_prefetch_of_the_last_block_number_is_an_error_not_a_silent_no_read(oltp, tmp_path, monkeypatch):
    # Block 2**64-1: the fetch's end wrapped to 0, so it passed the device's bounds check and was counted
    # as issued but never read (device_requests_prefetch 0). Every prefetch run now stops at 2**64-2, the
    # last block a request may name, so a plugin naming the one after it is told, in both engines.
    mod = _module(tmp_path, monkeypatch, "last_block", """
        class Last:
            def on_access(self, block, nblocks, misses, prefetch_hits):
                return 2**64 - 1
    """)
    for engine in (None, TIMED):
        with pytest.raises(ps.PluginError, match=r"on_access returned block 18446744073709551615, outside 0 to 2\*\*64-2"):
            run(oltp, engine, size=100, prefetcher=f"{mod}:Last")


def test_a_prefetchers_notes_become_the_runs_notes_and_a_bad_one_a_plugin_error(oltp, tmp_path, monkeypatch):
    mod = _module(tmp_path, monkeypatch, "noting", """
        class Noting:
            def __init__(self, say="fine"):
                self.say, self.seen = say, 0
            def on_access(self, block, nblocks, misses, prefetch_hits):
                self.seen += 1
            def notes(self):
                if self.say == "str":
                    return "not a list"
                if self.say == "raise":
                    raise RuntimeError("no notes today")
                return [f"saw {self.seen} requests"] if self.say == "fine" else None
    """)
    with pytest.warns(ps.RunNote, match=r"^level\[0\] \(L1\): saw \d+ requests$"):
        r = run(oltp, size=100, prefetcher=f"{mod}:Noting")
    assert r.notes == [f"level[0] (L1): saw {r.levels[0]['requests']} requests"]
    assert run(oltp, size=100, prefetcher={"name": f"{mod}:Noting", "say": "none"}).notes == []
    for say, needle in (("str", "notes failed"), ("raise", "no notes today")):
        with pytest.raises(ps.PluginError, match=r"level\[0\]\.prefetcher: plugin 'noting:Noting': notes failed") as e:
            run(oltp, size=100, prefetcher={"name": f"{mod}:Noting", "say": say})
        assert needle in str(e.value)
