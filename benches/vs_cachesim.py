#!/usr/bin/env python3
"""Whole-process speed and memory of `prefetchsim sim` against libCacheSim's `cachesim`, side by side
(issue 16, scope 5). A benchmark script, never a timed test.

For each case (trace, algorithm) it runs, in fresh processes one after the other:
  - `prefetchsim sim TRACE FORMAT ALGO SIZE --threads 1` on the trace in its own format (decoding and
    block splitting included);
  - `cachesim OG oracleGeneral ALGO BYTES [-p PREFETCHER]` on a per-block oracleGeneral copy of the same
    trace (the input it reads), made once by `prefetchsim trace convert --per-block`;
  - `prefetchsim sim` on that oracleGeneral copy too (`prefetchsim-og`): the same input as cachesim, so
    that prefetchers see the same one-block requests (on the ARC traces the original requests span many
    blocks, and a prefetcher fed whole requests computes something else);
  - for LRU and FIFO, the `libcachesim` PyPI package's `process_trace` on that copy, when it is installed.
and prints block accesses per second (the oracleGeneral copy's record count over the whole process's wall
time), the whole process's peak RSS (`wait4`), the miss ratio each side printed, and the ratios against
cachesim (wall and CPU) and against the libcachesim package (CPU) (speed: higher is better for
prefetchsim; memory: lower is better). The load average is printed first and last: on a shared machine
the wall-time ratio measures the run queue, the CPU-time ratio the programs.

Cases: LRU, FIFO, CLOCK, LRU+Mithril, LRU+PG, LRU+OBL on the CloudPhysics w106 week read little-endian (cachesim's
Mithril and PG keep ids as 32-bit ints, see shared/reference/libcachesim/build.sh), ARC P6 and P12, and a
synthetic Zipf oracleGeneral trace of `--synthetic` requests (default 50 M) written into a temp dir. Cache:
`--share` of the trace's footprint (default 0.1), 4 KiB blocks. Prefetchers run with prefetchsim's
`libcachesim` preset (OBL: `variant=libcachesim`), i.e. cachesim's defaults.

Needs: prefetchsim installed (its `prefetchsim` command on PATH or beside this Python), `cachesim` named by
env PREFETCHSIM_CACHESIM (build: bash ../shared/reference/libcachesim/build.sh; without it the cachesim
columns are skipped with a message). Optional: `libcachesim` (pip).

`prefetchsim` runs cold (env PREFETCHSIM_CACHE=0: the trace is decoded) and, as `prefetchsim-warm`, with
its decoded-trace cache filled by one run beforehand (in the temporary directory): both are printed.

Usage: python benches/vs_cachesim.py [--traces w106,p6,p12,synthetic] [--algos lru,fifo,clock,mithril,pg,obl]
                                     [--synthetic 50000000] [--share 0.1] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACES = Path(os.environ.get("PREFETCHSIM_TRACES", REPO.parent / "shared" / "traces"))

# name -> (path under TRACES, prefetchsim format)
REAL = {
    "w106": ("cloudphysics-w106/w106.trace.xz", "u32le"),
    "p6": ("arc/P6.lis.zst", "arc"),
    "p12": ("arc/P12.lis.zst", "arc"),
}
# name -> (prefetchsim algo, cachesim algo, cachesim prefetcher or None)
ALGOS = {
    "lru": ("lru", "lru", None),
    "fifo": ("fifo", "fifo", None),
    "clock": ("clock", "clock", None),
    "mithril": ("lru+mithril(preset=libcachesim)", "lru", "Mithril"),
    "pg": ("lru+pg(preset=libcachesim)", "lru", "PG"),
    "obl": ("lru+obl(variant=libcachesim)", "lru", "OBL"),
}

LIBCACHESIM_CHILD = r"""
import sys
import libcachesim as lcs
path, algo, cap = sys.argv[1], sys.argv[2], int(sys.argv[3])
reader = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE, lcs.ReaderInitParam(ignore_obj_size=True))
cache = {"lru": lcs.LRU, "fifo": lcs.FIFO}[algo](cache_size=cap)
print("miss ratio", cache.process_trace(reader)[0])
"""


def prefetchsim_cmd() -> list[str]:
    exe = shutil.which("prefetchsim") or str(Path(sys.executable).with_name("prefetchsim"))
    if not Path(exe).exists():
        raise SystemExit("prefetchsim command not found (pip install . first)")
    return [exe]


def measured(cmd: list[str], cwd: str, env: dict[str, str] | None = None) -> dict:
    """Run `cmd` in `cwd` (cachesim writes a result file into its working directory) as the only child of a
    fresh helper process so that RUSAGE_CHILDREN is its own; `env` is added to the environment."""
    helper = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "w = time.perf_counter() - t\n"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "sys.stderr.write(p.stderr)\n"
        "print(f'@@ {w} {u.ru_utime + u.ru_stime} {u.ru_maxrss} {p.returncode}')\n"
        "sys.stdout.write(p.stdout)\n"
    )
    p = subprocess.run([sys.executable, "-c", helper, *cmd], capture_output=True, text=True, check=True, cwd=cwd,
                       env={**os.environ, **(env or {})})
    head, _, out = p.stdout.partition("\n")
    _, wall, cpu, rss_kib, rc = head.split()
    if rc != "0":
        raise SystemExit(f"failed ({rc}): {' '.join(cmd)}\n{p.stderr}")
    return {"wall": float(wall), "cpu": float(cpu), "rss_mib": int(rss_kib) / 1024, "out": out}


def count_records(og: Path) -> int:
    return og.stat().st_size // 24


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", default="w106,p6,p12,synthetic")
    ap.add_argument("--algos", default="lru,fifo,clock,mithril,pg,obl")
    ap.add_argument("--synthetic", type=int, default=50_000_000, help="requests of the synthetic trace")
    ap.add_argument("--share", type=float, default=0.1, help="cache size as a share of the footprint")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of alternating runs; medians are printed")
    args = ap.parse_args()
    # This process and the conversions leave the user's decoded-trace cache alone; each side sets its own.
    os.environ["PREFETCHSIM_CACHE"] = "0"
    ours = prefetchsim_cmd()
    cachesim = os.environ.get("PREFETCHSIM_CACHESIM")
    if not cachesim or not Path(cachesim).exists():
        print("cachesim: skipped (set PREFETCHSIM_CACHESIM to the binary of shared/reference/libcachesim/build.sh)")
        cachesim = None
    try:
        import libcachesim  # noqa: F401

        have_lcs = True
    except ImportError:
        print("libcachesim (PyPI): skipped (not installed)")
        have_lcs = False
    import prefetchsim as ps

    # As pip does at install: an editable install under PYTHONDONTWRITEBYTECODE (set in some
    # environments) would otherwise compile the package's modules again at every start (~20 ms).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(ps.__file__).parent)], check=True,
                   capture_output=True)

    algos = [a for a in args.algos.split(",") if a]
    # Cold: no decoded-trace cache (every run decodes the trace). Warm: the cache in a folder of the
    # temporary directory, filled by one run before the rounds.
    cold = {"PREFETCHSIM_CACHE": "0"}
    for a in algos:
        if a not in ALGOS:
            raise SystemExit(f"unknown algo {a!r} (known: {', '.join(ALGOS)})")
    print(f"load average at start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)")
    rows = []
    with tempfile.TemporaryDirectory(prefix="prefetchsim-bench-") as tmp:
        warm = {"PREFETCHSIM_CACHE": "1", "PREFETCHSIM_CACHE_DIR": str(Path(tmp) / "cache")}
        for name in [t for t in args.traces.split(",") if t]:
            og = Path(tmp) / f"{name}.oracleGeneral.bin"
            if name == "synthetic":
                subprocess.run([*ours, "trace", "convert", "zipf", str(og), "--format", "synthetic", "-t",
                                f"requests={args.synthetic},seed=1"], check=True, capture_output=True)
                trace, fmt = str(og), "oracle_general"
            elif name in REAL:
                trace, fmt = str(TRACES / REAL[name][0]), REAL[name][1]
                if not Path(trace).exists():
                    print(f"{name}: skipped ({trace} not found; set PREFETCHSIM_TRACES)")
                    continue
                subprocess.run([*ours, "trace", "convert", trace, str(og), "--format", fmt, "--per-block"],
                               check=True, capture_output=True)
            else:
                raise SystemExit(f"unknown trace {name!r}")
            accesses = count_records(og)
            blocks = max(1, int(ps.open_trace(trace, fmt, block_size=4096).footprint() * args.share))
            for a in algos:
                our_algo, cs_algo, cs_pf = ALGOS[a]
                row = {"trace": name, "algo": a, "accesses": accesses, "blocks": blocks}
                sim = [*ours, "sim", trace, fmt, our_algo, str(blocks), "--threads", "1", "--block-size", "4096",
                       "-f", "csv"]
                sides = {"prefetchsim": (sim, cold), "prefetchsim-warm": (sim, warm)}
                measured(sim, tmp, warm)  # writes the cached decoding the warm side reads
                if fmt != "oracle_general":
                    # The exact input cachesim reads (one request per block): same computation on both sides.
                    sides["prefetchsim-og"] = ([*ours, "sim", str(og), "oracle_general", our_algo, str(blocks),
                                                "--threads", "1", "--block-size", "4096", "-f", "csv"], cold)
                if cachesim:
                    cs = [cachesim, str(og), "oracleGeneral", cs_algo, str(blocks * 4096)] + (
                        ["-p", cs_pf] if cs_pf else [])
                    if cs_pf == "OBL":
                        # OBL.c gives a prefetched object its `block-size` (default 512 bytes), not the
                        # trace's 4096: without this, its prefetched blocks take an eighth of their room.
                        cs += ["--prefetch-params", "block-size=4096"]
                    sides["cachesim"] = (cs, None)
                if have_lcs and cs_pf is None and a in ("lru", "fifo"):
                    sides["libcachesim"] = ([sys.executable, "-c", LIBCACHESIM_CHILD, str(og), a, str(blocks)], None)
                # Alternating: every side once per round, so that the machine's load drifts over all sides alike.
                runs: dict[str, list[dict]] = {side: [] for side in sides}
                for _ in range(args.repeat):
                    for side, (cmd, env) in sides.items():
                        runs[side].append(measured(cmd, tmp, env))
                for side, rs in runs.items():
                    row[side] = {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu", "rss_mib")}
                    row[side]["miss"] = miss_ratio(side, rs[0]["out"])
                rows.append(row)
                print_row(row, header=len(rows) == 1)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


def miss_ratio(side: str, out: str) -> str:
    if side.startswith("prefetchsim"):
        lines = out.strip().splitlines()
        head = lines[0].split(",")
        vals = lines[1].split(",")
        return f"{float(vals[head.index('miss_ratio')]):.4f}"
    m = re.search(r"miss ratio:? *([0-9.]+)", out)
    return f"{float(m.group(1)):.4f}" if m else "?"


def print_row(row: dict, header: bool) -> None:
    """One line per side; ratios on prefetchsim's lines: `speed x` = cachesim's wall / ours, `cpu x` =
    cachesim's CPU / ours (the one to read on a loaded machine: wall time then measures the queue), `lcs x` =
    the libcachesim package's CPU / ours, `RSS x` = our peak RSS / cachesim's (lower is better)."""
    if header:
        print(f"{'trace':<10}{'algo':<8}{'accesses':>11}{'cache':>8} | {'side':<15}{'M acc/s':>8}{'wall s':>8}"
              f"{'cpu s':>7}{'RSS MiB':>9}{'miss':>8} | {'speed x':>8}{'cpu x':>7}{'lcs x':>7}{'RSS x':>7}")
    base = row.get("cachesim")
    lcs = row.get("libcachesim")
    for side in ("prefetchsim", "prefetchsim-warm", "prefetchsim-og", "cachesim", "libcachesim"):
        r = row.get(side)
        if r is None:
            continue
        rate = row["accesses"] / r["wall"] / 1e6
        ratio = ""
        if side.startswith("prefetchsim"):
            speed = f"{base['wall'] / r['wall']:>8.2f}" if base else f"{'':>8}"
            cpu = f"{base['cpu'] / r['cpu']:>7.2f}" if base else f"{'':>7}"
            vs_lcs = f"{lcs['cpu'] / r['cpu']:>7.2f}" if lcs else f"{'':>7}"
            rss = f"{r['rss_mib'] / base['rss_mib']:>7.2f}" if base else ""
            ratio = speed + cpu + vs_lcs + rss
        print(f"{row['trace']:<10}{row['algo']:<8}{row['accesses']:>11,}{row['blocks']:>8} | {side:<15}{rate:>8.2f}"
              f"{r['wall']:>8.2f}{r['cpu']:>7.2f}{r['rss_mib']:>9.0f}{r['miss']:>8} | {ratio}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
