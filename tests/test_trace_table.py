"""A run config's ``[trace]`` table (TOML file, config dict, sweep spec, merge member): every key it
documents is accepted, and a wrong type is a ConfigError naming the key, never a traceback."""

from __future__ import annotations

import prefetchsim as ps
import pytest
from prefetchsim._sim import load_config
from prefetchsim.cli import main

WRONG_TYPES = [
    ("block_size", "'4k'"), ("block_size", "4096.0"), ("block_size", "true"), ("sector_size", "'x'"),
    ("skip_bad", "'x'"), ("params", "5"), ("path", "5"), ("format", "5"), ("id_bytes", "'64k'"),
]


def _toml(tmp_path, trace_table: str, size: int = 4) -> str:
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(f"[trace]\n{trace_table}\n[[level]]\nsize = {size}\n")
    return str(cfg)


@pytest.mark.parametrize("key,value", WRONG_TYPES)
def test_a_wrong_type_in_a_run_config_exits_2_naming_the_key(lirs_trace, tmp_path, capsys, key, value):
    # They crashed with a TypeError traceback (exit 1): "open_trace() argument after ** must be a mapping".
    table = f"{key} = {value}" if key == "path" else f"path = {lirs_trace!r}\n{key} = {value}"
    assert main(["run", _toml(tmp_path, table)]) == 2
    assert f"error: trace.{key}: " in capsys.readouterr().err


@pytest.mark.parametrize("key,value", [("block_size", "4k"), ("params", 5), ("path", 5), ("format", 5)])
def test_a_wrong_type_in_a_config_dict_or_merge_member_is_a_config_error(lirs_trace, key, value):
    table = {"path": lirs_trace, key: value}
    with pytest.raises(ps.ConfigError, match=rf"^trace\.{key}: "):
        ps.simulate(config={"trace": table, "level": [{"size": 4}]})
    with pytest.raises(ps.ConfigError, match=rf"^trace\.merge\[0\]\.{key}: "):
        ps.simulate(config={"trace": {"merge": [table]}, "level": [{"size": 4}]})


def test_id_bytes_is_accepted_in_a_run_config_and_a_merge_member(lirs_trace, tmp_path):
    # docs/guide/configs.md lists it, but a config refused it: "trace.id_bytes: unknown key".
    want = ps.simulate(ps.open_trace(lirs_trace, "lirs", id_bytes=65536), size=64).summary
    plain = ps.simulate(ps.open_trace(lirs_trace, "lirs"), size=64).summary
    assert want["trace_blocks"] == 16 * plain["trace_blocks"]
    table = f"path = {lirs_trace!r}\nformat = 'lirs'\nid_bytes = 65536"
    assert want["hits"] > 0  # ids of 16 blocks: a re-read id hits 16 times
    got = ps.simulate(config=_toml(tmp_path, table, 64)).summary
    assert (got["trace_blocks"], got["hits"]) == (want["trace_blocks"], want["hits"])
    merged = ps.simulate(config=_toml(tmp_path, f"merge = [{{ {table.replace(chr(10), ', ')} }}]", 64)).summary
    assert (merged["trace_blocks"], merged["hits"]) == (want["trace_blocks"], want["hits"])


@pytest.mark.parametrize("value", ["'false'", "0", "1"])
def test_cache_takes_only_true_or_false(lirs_trace, tmp_path, capsys, value):
    # cache = "false" is a true Python value: the decoded-trace cache silently stayed on.
    assert main(["run", _toml(tmp_path, f"path = {lirs_trace!r}\ncache = {value}")]) == 2
    assert "error: trace.cache: " in capsys.readouterr().err
    with pytest.raises(TypeError, match="cache must be True or False"):
        ps.open_trace(lirs_trace, cache="false")
    _, off = load_config(_toml(tmp_path, f"path = {lirs_trace!r}\ncache = false"))
    assert off.spec["cache"] is False
