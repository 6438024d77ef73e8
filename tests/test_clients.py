"""Several clients: one L1 per client over a shared server, K servers, clients from merged traces or from a
trace's stream field, and the per-client breakdown of results."""

from __future__ import annotations

import pytest

import prefetchsim as ps
from conftest import shared_trace


def _gen(seed: int, requests: int = 400) -> ps.Trace:
    return ps.synthetic("zipf", requests=requests, seed=seed)


def test_per_client_l1_over_a_shared_server_reports_each_client():
    tr = ps.merge_traces(_gen(1), _gen(2))
    r = ps.simulate(tr, levels=[ps.Level(64, prefetcher="obl", per_client=True), ps.Level("2x")])
    clients = r.per_client(0)
    assert sorted(clients) == [0, 1]
    l1 = r.levels[0]
    for key in ("hits", "misses", "demand_accesses", "prefetch_issued"):
        assert l1[key] == clients[0][key] + clients[1][key], key
    assert all(c["demand_accesses"] > 0 for c in clients.values())
    # Client 0's L1 is what a run of its trace alone sees at L1.
    alone = ps.simulate(_gen(1), levels=[ps.Level(64, prefetcher="obl")])
    for key in ("hits", "misses", "prefetch_issued", "prefetch_hits"):
        assert clients[0][key] == alone.levels[0][key], key
    assert r.per_client(1) == {}, "the server is one cache"


def test_timed_per_client_run_through_a_config_dict():
    cfg = {
        "level": [
            {"size": 32, "prefetcher": "pfc-ra", "per_client": True},
            {"size": 128, "prefetcher": "pfc-ra", "instances": 2, "route": "stripe", "stripe_blocks": 16},
        ],
        "engine": {"kind": "timed", "replay": "closed", "stream_key": "client"},
    }
    r = ps.simulate(ps.merge_traces(_gen(3, 200), _gen(4, 200), _gen(5, 200)), cfg)
    assert sorted(r.per_client(0)) == [0, 1, 2]
    servers = [i for i in r.instances if i["level"] == 1]
    assert [s["instance"] for s in servers] == [0, 1]
    assert all("client" not in s for s in servers)
    assert sum(s["demand_accesses"] for s in servers) == r.levels[1]["demand_accesses"]
    assert sorted(c["client"] for c in r.clients) == [0, 1, 2]


def test_client_from_stream_splits_one_trace():
    tr = ps.synthetic("multi-like", requests=500, client_from="stream")
    head = tr.head(50)
    assert (head["client"] == head["stream"]).all()
    r = ps.simulate(tr, levels=[ps.Level(16, per_client=True), ps.Level(64)])
    assert len(r.per_client(0)) > 1


def test_merged_trace_table_in_a_config(tmp_path):
    (tmp_path / "run.toml").write_text(
        "[trace]\nmerge = [{ path = 'zipf', format = 'synthetic', params = { requests = 100, seed = 1 } },\n"
        "         { path = 'zipf', format = 'synthetic', params = { requests = 100, seed = 2 } }]\n"
        "[[level]]\nsize = 8\nper_client = true\n[[level]]\nsize = 32\n"
    )
    r = ps.simulate(None, tmp_path / "run.toml")
    assert r.raw["requests"] == 200
    assert sorted(r.per_client(0)) == [0, 1]


@pytest.mark.parametrize(
    "level, key",
    [
        ({"size": 8, "instances": 0}, "level[0].instances"),
        ({"size": 8, "per_client": True, "instances": 2}, "level[0].instances"),
        ({"size": 8, "instances": 2, "route": "stripe", "stripe_blocks": 0}, "level[0].stripe_blocks"),
        ({"size": 8, "instances": 2, "route": "hash"}, "level[0].route"),
        ({"size": 8, "per_clients": True}, "level[0]"),
        # Keys that cannot apply were accepted and ignored, the default route above all.
        ({"size": 8, "per_client": True, "route": "client"}, "level[0].route"),
        ({"size": 8, "per_client": True, "stripe_blocks": 8}, "level[0].stripe_blocks"),
        ({"size": 8, "instances": 2, "route": "client", "stripe_blocks": 8}, "level[0].stripe_blocks"),
        (ps.Level(8, per_client=True, route="client"), "level[0].route"),
        (ps.Level(8, per_client=True, stripe_blocks=64), "level[0].stripe_blocks"),
    ],
)
def test_bad_fan_out_keys_name_the_key(level, key):
    with pytest.raises(ps.ConfigError, match=key.replace("[", r"\[").replace("]", r"\]")):
        if isinstance(level, ps.Level):
            ps.simulate(_gen(1, 10), levels=[level])
        else:
            ps.simulate(_gen(1, 10), {"level": [level]})


def test_a_sweep_refuses_a_route_beside_per_client_on_the_grid_point():
    # Sweeps canonicalise each point, which leaves a default route out: the check comes first.
    spec = {"trace": {"path": "zipf", "format": "synthetic", "params": {"requests": 100}},
            "level": [{"size": 8, "per_client": True}], "sweep": {"level[0].route": ["client"]}}
    with pytest.raises(ps.ConfigError, match=r"level\[0\].route"):
        ps.sweep(spec)


def test_bad_client_trace_keys_name_the_key():
    with pytest.raises(ps.ConfigError, match="trace.client_from"):
        ps.synthetic("zipf", client_from="host")
    with pytest.raises(ps.ConfigError, match=r"trace.merge\[1\].block_size"):
        ps.simulate(ps.merge_traces(_gen(1, 10), ps.synthetic("zipf", block_size=512)), size=8)


def test_a_merges_own_keys_reach_its_members_or_are_refused():
    # id_bytes on the merge was accepted and read by nobody; params on it likewise.
    sprite = shared_trace("lirs/sprite.trace.gz")
    member = {"path": sprite, "format": "lirs"}
    cfg = {"level": [{"size": 200}]}
    on_merge = ps.simulate(None, {**cfg, "trace": {"merge": [dict(member)], "id_bytes": 65536}})
    on_member = ps.simulate(None, {**cfg, "trace": {"merge": [{**member, "id_bytes": 65536}]}})
    plain = ps.simulate(None, {**cfg, "trace": {"merge": [dict(member)]}})
    assert on_merge.levels[0]["hits"] == on_member.levels[0]["hits"] != plain.levels[0]["hits"]
    with pytest.raises(ps.ConfigError, match="trace.params: a merge has no parameters of its own"):
        ps.simulate(None, {**cfg, "trace": {"merge": [dict(member)], "params": {"seed": 1}}})


def test_separate_member_spaces_keep_two_traces_of_the_same_blocks_apart(tmp_path):
    # Two copies of one trace: shared, client 1 finds client 0's blocks at the server; separate, each
    # client's server traffic is what its trace alone sends (the same blocks of two disks are two blocks).
    levels = [ps.Level(32, per_client=True), ps.Level(4096)]
    one = _gen(1, 1000)
    shared = ps.simulate(ps.merge_traces(one, one), levels=levels).levels[1]
    apart = ps.simulate(ps.merge_traces(one, one, member_space="separate"), levels=levels).levels[1]
    alone = ps.simulate(one, levels=levels).levels[1]
    assert apart["misses"] == 2 * alone["misses"] and apart["hits"] == 2 * alone["hits"]
    assert shared["misses"] == alone["misses"] < apart["misses"]
    # The same from a config's trace table; the key belongs to a merge only.
    gen = {"path": "zipf", "format": "synthetic", "params": {"requests": 1000, "seed": 1}}
    cfg = {"level": [{"size": 32, "per_client": True}, {"size": 4096}]}
    table = ps.simulate(None, {**cfg, "trace": {"merge": [gen, gen], "member_space": "separate"}}).levels[1]
    assert table["misses"] == apart["misses"]
    with pytest.raises(ps.ConfigError, match="trace.member_space: only a merge"):
        ps.simulate(None, {**cfg, "trace": {**gen, "member_space": "separate"}})
    with pytest.raises(ps.ConfigError, match="trace.member_space: unknown value 'apart'"):
        ps.merge_traces(one, one, member_space="apart")
