#!/usr/bin/env python3
"""`prefetchsim serve` under real clients (issue 17; method in docs/serve.md, "Benchmark: method").
A benchmark script, never a timed test.

1. Emulated disk: fio `ioengine=nbd`, 4 interleaved sequential streams (4 jobs, each on its own 256 MiB
   region, bs 64 KiB, iodepth 1, 20 s) through the server with `--emulate hdd7200`: STEP, Linux read-ahead,
   no prefetching, and nbdkit's readahead filter (with its cache filter) in front of the server without
   prefetching. Measured: throughput, mean and p99 completion latency; beside each, the timed engine's
   prediction for the trace the server recorded in that run.
2. Raw speed, no emulation: `prefetchsim serve` (LRU, no prefetching) against `qemu-nbd` on the same file:
   4 KiB random reads (iodepth 16) and 1 MiB sequential reads (iodepth 4), 10 s each.

Needs fio (with the nbd engine), nbdkit (nbd plugin, readahead and cache filters) and qemu-nbd; a missing one
skips its rows with a message. Prints Markdown tables; `--json FILE` also writes every number.

Usage: python benches/serve_bench.py [--runtime 20] [--raw-runtime 10] [--only emulated|raw] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import prefetchsim as ps

MiB = 1 << 20
CACHE = "64MiB"
CACHE_NBDKIT = "64M"  # the same size in nbdkit's spelling
REGION = 256 * MiB
JOBS = 4
TIMED_ENGINE = {"kind": "timed", "replay": "closed", "iodepth": 1, "per_stream": True, "stream_key": "client",
                "think": "constant", "think_ms": 0.0, "prefetch_io": "apart"}


def level(prefetcher: str) -> dict[str, Any]:
    return {"size": CACHE, "policy": "lru", "prefetcher": prefetcher}


def write_toml(path: Path, lv: dict[str, Any]) -> Path:
    path.write_text("[[level]]\n" + "".join(f'{k} = "{v}"\n' for k, v in lv.items()))
    return path


class Served:
    """`python -m prefetchsim serve` on a Unix socket until stop()."""

    def __init__(self, config: Path, backing: Path, sock: Path, emulate: str | None, record: Path | None):
        cmd = [sys.executable, "-m", "prefetchsim", "serve", str(config), "--backing", str(backing),
               "--socket", str(sock), "--report", str(sock) + ".report.json"]
        if emulate:
            cmd += ["--emulate", emulate]
        if record:
            cmd += ["--record", str(record)]
        self.sock, self.report = sock, Path(str(sock) + ".report.json")
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            r, _, _ = select.select([self.proc.stderr], [], [], 0.5)
            if r and "listening on" in self.proc.stderr.readline():
                return
            if self.proc.poll() is not None:
                break
        raise RuntimeError(f"prefetchsim serve did not start: {self.proc.stderr.read()}")

    def stop(self) -> dict[str, Any]:
        self.proc.send_signal(signal.SIGINT)
        self.proc.communicate(timeout=120)
        return json.loads(self.report.read_text())


def wait_socket(path: Path, proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{proc.args[0]} did not create {path}")
        time.sleep(0.1)


def fio(uri: str, out: Path, args: list[str]) -> dict[str, Any]:
    cmd = ["fio", "--name=bench", "--ioengine=nbd", f"--uri={uri}", "--group_reporting", "--output-format=json",
           f"--output={out}", *args]
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=900)
    job = json.loads(out.read_text())["jobs"][0]["read"]
    clat = job["clat_ns"]
    return {"MiB_s": job["bw_bytes"] / MiB, "iops": job["iops"], "mean_ms": clat["mean"] / 1e6,
            "p99_ms": clat["percentile"]["99.000000"] / 1e6, "bytes": job["io_bytes"]}


def predict(record: Path, lv: dict[str, Any], scheduler: dict[str, Any] | None = None) -> dict[str, Any]:
    """The timed engine on the recorded trace: read response time and throughput (default I/O scheduler
    unless `scheduler` is given: the sensitivity check of docs/serve.md)."""
    trace = ps.open_trace(record, "prefetchsim_csv", block_size=4096)
    r = ps.simulate(trace, {"level": [lv], "engine": TIMED_ENGINE}, device="hdd7200", scheduler=scheduler)
    t = r.timing
    read_bytes = 0
    with open(record) as f:
        for line in f:
            parts = line.split(",")
            if len(parts) == 6 and parts[1] == "read":
                read_bytes += int(parts[3])
    return {"MiB_s": read_bytes / MiB / (t["sim_time_ms"] / 1000), "read_MiB": read_bytes / MiB, "mean_ms": t["rt_mean_ms"],
            "p99_ms": t["rt_p99_ms"], "requests": r.raw["requests"], "device_requests": t["device_requests"],
            "device_service_mean_ms": t["device_service_mean_ms"], "sched_merges": t["sched_merges"]}


def emulated(tmp: Path, runtime: int) -> list[dict[str, Any]]:
    backing = tmp / "disk.img"
    with open(backing, "wb") as f:
        f.truncate(JOBS * REGION)
    seq = [f"--rw=read", "--bs=64k", f"--size={REGION}", f"--offset_increment={REGION}", f"--numjobs={JOBS}",
           "--iodepth=1", f"--runtime={runtime}", "--time_based"]
    rows = []
    for name, pf, via_nbdkit in [("STEP", "step", False), ("Linux read-ahead", "linux", False),
                                 ("none", "none", False), ("nbdkit readahead", "none", True)]:
        if via_nbdkit and shutil.which("nbdkit") is None:
            print(f"skipping {name}: nbdkit not installed", file=sys.stderr)
            continue
        lv = level(pf)
        cfg = write_toml(tmp / f"{pf}.toml", lv)
        sock, rec = tmp / f"{pf}{'-k' if via_nbdkit else ''}.sock", tmp / f"{name.replace(' ', '_')}.csv"
        srv = Served(cfg, backing, sock, "hdd7200", rec)
        kit = None
        try:
            uri = f"nbd+unix:///?socket={sock}"
            if via_nbdkit:
                ksock = tmp / "nbdkit.sock"
                # nbdkit's cache limited to the server's size: unlimited, it kept every block its readahead
                # fetched, and once fio's time-based jobs wrapped round their regions it served the
                # second pass itself (2026-12-07: fio read 4,614 MiB, the server 1,126 MiB).
                kit = subprocess.Popen(["nbdkit", "-f", "-U", str(ksock), "--filter=readahead", "--filter=cache",
                                        "nbd", f"socket={sock}", f"cache-max-size={CACHE_NBDKIT}"],
                                       stderr=subprocess.PIPE, text=True)
                wait_socket(ksock, kit)
                uri = f"nbd+unix:///?socket={ksock}"
            m = fio(uri, tmp / "fio.json", seq)
        finally:
            if kit is not None:
                kit.send_signal(signal.SIGTERM)
                kit.communicate(timeout=60)
            report = srv.stop()
        p = predict(rec, lv)
        p_noop = predict(rec, lv, {"policy": "noop"})
        lv0 = report["levels"][0]
        rows.append({"row": name, "measured": m, "predicted": p, "predicted_noop": p_noop,
                     "prefetch_issued": lv0["prefetch_issued"], "hit_ratio": lv0["hit_ratio"],
                     "requests": report["requests"], "device": report.get("device"), "server": report["server"]})
        print(f"{name}: {m['MiB_s']:.2f} MiB/s measured, {p['MiB_s']:.2f} predicted; fio read "
              f"{m['bytes'] / MiB:.0f} MiB, the server {p['read_MiB']:.0f} MiB", file=sys.stderr)
    return rows


def raw(tmp: Path, runtime: int) -> list[dict[str, Any]]:
    backing = tmp / "raw.img"
    # Real data, not a sparse file: qemu-nbd answers reads of holes with structured-reply hole chunks that
    # carry no data, which would time something else.
    chunk = bytearray(os.urandom(MiB))
    with open(backing, "wb") as f:
        for i in range(1024):
            chunk[0] = i & 0xFF
            f.write(chunk)
    subprocess.run(["cat", str(backing)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    loads = {"4k random, iodepth 16": ["--rw=randread", "--bs=4k", "--iodepth=16", "--size=1g"],
             "1M sequential, iodepth 4": ["--rw=read", "--bs=1m", "--iodepth=4", "--size=1g"]}
    rows = []
    for server in ["prefetchsim serve", "qemu-nbd"]:
        for load, args in loads.items():
            sock = tmp / "raw.sock"
            sock.unlink(missing_ok=True)
            if server == "qemu-nbd":
                if shutil.which("qemu-nbd") is None:
                    print("skipping qemu-nbd: not installed", file=sys.stderr)
                    continue
                proc = subprocess.Popen(["qemu-nbd", "-t", "-f", "raw", "--shared=8", "-k", str(sock), str(backing)],
                                        stderr=subprocess.PIPE, text=True)
                wait_socket(sock, proc)
                try:
                    m = fio(f"nbd+unix:///?socket={sock}", tmp / "fio.json",
                            args + [f"--runtime={runtime}", "--time_based"])
                finally:
                    proc.terminate()
                    proc.communicate(timeout=60)
            else:
                cfg = write_toml(tmp / "raw.toml", level("none"))
                srv = Served(cfg, backing, sock, None, None)
                try:
                    m = fio(f"nbd+unix:///?socket={sock}", tmp / "fio.json",
                            args + [f"--runtime={runtime}", "--time_based"])
                finally:
                    srv.stop()
            rows.append({"server": server, "load": load, **m})
            print(f"{server} {load}: {m['MiB_s']:.1f} MiB/s", file=sys.stderr)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runtime", type=int, default=20)
    ap.add_argument("--raw-runtime", type=int, default=10)
    ap.add_argument("--only", choices=["emulated", "raw"])
    ap.add_argument("--json")
    a = ap.parse_args()
    if shutil.which("fio") is None:
        print("fio is not installed (Debian package fio)", file=sys.stderr)
        return 2
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="serve-bench-") as d:
        tmp = Path(d)
        if a.only in (None, "emulated"):
            out["emulated"] = emulated(tmp, a.runtime)
            print("\n| hdd7200, 4 interleaved sequential streams | MiB/s | mean ms | p99 ms | predicted MiB/s "
                  "| predicted mean ms | predicted p99 ms | server hit ratio | prefetched blocks |")
            print("|---|---|---|---|---|---|---|---|---|")
            for r in out["emulated"]:
                m, p = r["measured"], r["predicted"]
                print(f"| {r['row']} | {m['MiB_s']:.2f} | {m['mean_ms']:.2f} | {m['p99_ms']:.2f} | {p['MiB_s']:.2f} "
                      f"| {p['mean_ms']:.2f} | {p['p99_ms']:.2f} | {r['hit_ratio']:.3f} | {r['prefetch_issued']} |")
            print("\n| device: live emulation vs timed engine | live demand reads | live mean demand ms "
                  "| live prefetch reads | live device requests | live merges | live seeks | live mean service ms "
                  "| timed device requests | timed merges | timed mean service ms "
                  "| timed, noop scheduler: MiB/s | mean ms | p99 ms |")
            print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
            for r in out["emulated"]:
                d, p, q = r["device"], r["predicted"], r["predicted_noop"]
                dm, pf, dk = d["demand"], d["prefetch"], d["disk"]
                print(f"| {r['row']} | {dm['reads']} | {dm['mean_ms']:.2f} | {pf['reads']} | {dk['device_requests']} "
                      f"| {dk['merges']} | {dk['seeks']} | {dk['service_mean_ms']:.2f} | {p['device_requests']} "
                      f"| {p['sched_merges']} | {p['device_service_mean_ms']:.2f} | {q['MiB_s']:.2f} "
                      f"| {q['mean_ms']:.2f} | {q['p99_ms']:.2f} |")
        if a.only in (None, "raw"):
            out["raw"] = raw(tmp, a.raw_runtime)
            print("\n| no emulation, warm page cache | load | MiB/s | IOPS | mean ms | p99 ms |")
            print("|---|---|---|---|---|---|")
            for r in out["raw"]:
                print(f"| {r['server']} | {r['load']} | {r['MiB_s']:.1f} | {r['iops']:.0f} | {r['mean_ms']:.3f} "
                      f"| {r['p99_ms']:.3f} |")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
