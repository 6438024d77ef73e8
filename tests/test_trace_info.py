"""What `trace info` reports about real and hand-made traces, and the reader options behind it: the
requests' own bytes, volumes as separate address spaces, time going backwards over the requests kept,
vscsi's WRITE(6) and `other-cmds`, and detection refusing lines two formats read."""

from __future__ import annotations

import json
import struct
import subprocess
import sys

import prefetchsim as ps
import pytest

from conftest import shared_trace


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "prefetchsim", *args], capture_output=True, text=True)


@pytest.mark.parametrize("block_size", [512, 4096, 65536])
def test_request_bytes_are_the_records_own_sizes_whatever_the_block_size(block_size):
    # They were blocks x block size: 10,129.408 bytes a request at 4 KiB, 71,237.632 at 64 KiB.
    msr = ps.open_trace(shared_trace("msr-sample/msr-cambridge1-sample.csv"), block_size=block_size).info()
    assert (msr["bytes_accessed"], msr["mean_request_bytes"], msr["bytes_from"]) == (9_689_600, 9_689.6, "records")
    systor = ps.open_trace(shared_trace("systor17-sample/systor17-traces-sample.csv.gz"), block_size=block_size)
    assert systor.info()["bytes_accessed"] == 39_122_432


def test_request_bytes_of_a_format_without_sizes_are_its_blocks(lirs_trace):
    info = ps.open_trace(lirs_trace, block_size=512).info()
    assert (info["bytes_accessed"], info["mean_request_bytes"], info["bytes_from"]) == (8 * 512, 512.0, "blocks")


def test_each_tencent_volume_is_its_own_address_space(tmp_path):
    # Two volumes at the same sector: one block, and the second read hit the first volume's data.
    p = tmp_path / "two_vol_cloud_storage.csv"
    p.write_text("1538323199,822728,16,0,1243\n1538323199,822728,8,0,1344\n")
    t = ps.open_trace(str(p), "tencent", cache=False)
    assert ps.simulate(t, levels=[ps.Level(100)]).summary["hits"] == 0
    assert t.info()["footprint_blocks"] == 3
    shared = ps.open_trace(str(p), "tencent", cache=False, volumes="shared")
    assert ps.simulate(shared, levels=[ps.Level(100)]).summary["hits"] == 1
    with pytest.raises(ps.ConfigError, match="trace.volumes"):
        ps.open_trace(str(p), "tencent", volumes="one")


def test_the_tencent_footprint_is_its_volume_block_pairs():
    path = shared_trace("tencent-cbs-sample/cloud_storage-sample.bz2")
    assert ps.open_trace(path).info()["footprint_blocks"] == 348_239
    p = cli("trace", "info", path, "-t", "volumes=shared", "-f", "json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["footprint_blocks"] == 334_782


def test_time_backwards_counts_the_requests_the_ops_filter_keeps():
    path = shared_trace("systor17-sample/systor17-traces-sample.csv.gz")
    got = {ops: ps.open_trace(path, ops=ops).info()["time_backwards"] for ops in ("all", "reads", "writes")}
    assert got == {"all": 243, "reads": 205, "writes": 7}


def _vscsi(tmp_path, cmds) -> str:
    recs = b"".join(struct.pack("<IIIHHQQ", i, 4096, 1, c, 0x0100, 100 + 8 * i, 7 + i) for i, c in enumerate(cmds))
    p = tmp_path / "mix.vscsi"
    p.write_bytes(recs)
    return str(p)


def test_vscsi_write6_is_a_write_and_other_cmds_skip_is_counted_and_warned(tmp_path):
    p = _vscsi(tmp_path, [0x08, 0x0A, 0x28, 0x2A, 0x0A, 0x12])
    with pytest.raises(ps.TraceError, match="record 5 .*0x12"):
        ps.open_trace(p, cache=False).info()
    r = cli("trace", "info", "--no-cache", p, "-t", "other-cmds=skip", "-f", "json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert (info["requests"], info["reads"], info["writes"], info["skipped_records"]) == (5, 2, 3, 1)
    assert "0x12" in info["skipped_messages"][0] and "other-cmds" in info["skipped_messages"][0]
    assert "warning: skipped 1 record(s)" in r.stderr and "0x12" in r.stderr


def test_a_disksim_trace_of_whole_milliseconds_is_not_taken_for_mqsim(tmp_path):
    # It was detected as MQSim: 25 ns instead of 25 ms.
    p = tmp_path / "dsim_int.txt"
    p.write_text("0 0 657728 16 1\n12 1 31244784 64 1\n25 1 21868784 16 0\n")
    r = cli("trace", "info", "--no-cache", str(p))
    assert r.returncode == 2 and "cannot tell the trace format" in r.stderr and "disksim, mqsim" in r.stderr, r.stderr
    assert ps.open_trace(str(p), "disksim").info()["duration_ns"] == 25_000_000


def test_info_says_whether_the_stream_field_carries_ids(tmp_path):
    # What stream 0 means to Linux read-ahead's default key and StreamLRU: an id (SPC's ASU 0) or "no
    # stream" (a format without the field). `trace info` is where a user sees which.
    spc = tmp_path / "a.spc"
    spc.write_text("0,0,4096,r,0.0\n1,8,4096,r,0.1\n")
    assert ps.open_trace(str(spc), "spc", cache=False).info()["stream_ids"] is True
    assert ps.synthetic("zipf", requests=100, seed=1).info()["stream_ids"] is False
    r = cli("trace", "info", "--no-cache", str(spc), "-f", "json")
    assert r.returncode == 0 and json.loads(r.stdout)["stream_ids"] is True, r.stderr
