"""What a notebook hands over: NumPy and pandas scalars are numbers like Python's, a bool is never a count
or a size, and text is never a flag. Found by a user study: np.int64 sizes were refused ("Object of type
int64 is not JSON serializable"), adjust=0 turned SHARDS_adj on, per_client="false" made a per-client
level, a 'name' in prefetcher_params replaced the prefetcher, head(True) read a row."""

from __future__ import annotations

import numpy as np
import pytest

import prefetchsim as ps


@pytest.fixture(scope="module")
def tr():
    return ps.synthetic("oltp-like", requests=3000, seed=1)


def test_numpy_scalars_are_numbers_like_pythons(tr):
    plain = ps.simulate(tr, size=400, prefetcher="obl").levels[0]["hits"]
    assert ps.simulate(tr, size=np.int64(400), prefetcher="obl").levels[0]["hits"] == plain
    assert ps.simulate(tr, levels=[ps.Level(np.int64(400), prefetcher="obl")]).levels[0]["hits"] == plain
    share = ps.simulate(tr, size=0.05).levels[0]["hits"]
    assert ps.simulate(tr, size=np.float32(0.05)).levels[0]["hits"] == share
    assert ps.simulate(tr, size=400, engine={"warmup_requests": np.int64(100)}).summary["warmup_requests"] == 100
    assert ps.synthetic("oltp-like", requests=np.int64(500), seed=np.int64(1)).info()["requests"] == 500
    assert ps.synthetic("zipf", block_size=np.int64(4096), requests=10).block_size == 4096
    many = ps.simulate_many(tr, [{"level": [ps.Level(400, prefetcher="obl")]}], threads=np.int64(1))
    assert many[0].levels[0]["hits"] == plain
    curve = ps.mrc(tr, np.array([100, 400]))
    assert list(curve["capacity_blocks"]) == [100, 400]
    assert len(ps.mrc(tr, points=np.int64(5))) == 5
    assert len(ps.mrc(tr, [100], method="shards", seed=np.int64(3))) == 1
    assert list(tr.head(np.int64(2)).first) == list(tr.head(2).first)


def test_bools_and_text_are_not_counts_or_flags(tr):
    with pytest.raises(TypeError, match="n must be an integer, not bool"):
        tr.head(True)
    with pytest.raises(TypeError, match="window must be an integer"):
        tr.info(window=True)
    with pytest.raises(TypeError, match="limit must be an integer, not bool"):
        ps.mrc(tr, points=5, limit=True)
    for bad in (0, "false"):
        with pytest.raises(TypeError, match="adjust must be True or False"):
            ps.mrc(tr, points=5, method="shards", rate=0.1, adjust=bad)
    off = ps.mrc(tr, points=5, method="shards", rate=0.1, adjust=False)
    assert list(ps.mrc(tr, points=5, method="shards", rate=0.1, adjust=np.False_).miss_ratio) == list(off.miss_ratio)
    with pytest.raises(TypeError, match="Level.per_client must be True or False, not str"):
        ps.Level(100, per_client="false").to_config()
    with pytest.raises(TypeError, match="Level.instances must be an integer, not bool"):
        ps.Level(100, instances=True).to_config()
    with pytest.raises(TypeError, match="per_block must be True or False"):
        tr.convert("/nonexistent/never-written.csv", per_block=1)
    with pytest.raises(TypeError, match="path must be a str or os.PathLike, not bytes"):
        ps.open_trace(b"t.csv")


def test_a_name_in_the_parameters_does_not_replace_the_component(tr):
    with pytest.raises(ps.ConfigError, match="Level.prefetcher_params: 'name' names the component"):
        ps.simulate(tr, levels=[ps.Level(100, prefetcher="obl", prefetcher_params={"name": "amp"})])
    with pytest.raises(ps.ConfigError, match="Level.policy_params: 'name'"):
        ps.simulate(tr, levels=[ps.Level(100, policy="arc", policy_params={"name": "lru"})])
