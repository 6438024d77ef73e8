"""Bad input never panics and never passes silently: each error names the file, record/line and field,
or lists the valid choices, and is a typed Python exception."""

from __future__ import annotations

import prefetchsim as ps
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
