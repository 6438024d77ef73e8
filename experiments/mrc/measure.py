"""Measurements of docs/mrc.md (method there): exact-curve cost, SHARDS accuracy and speed, engine vs curve
on multi-block requests, and extent-sampled miniature simulation per prefetcher.

Run from the repository root after `maturin develop --release`:
    python experiments/mrc/measure.py [exact|shards|engine|extent|all] [--traces DIR]
Times are CPU seconds of this process (time.process_time, all threads; every run single-threaded).
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time

import prefetchsim as ps

OUT = os.path.join(os.path.dirname(__file__), "results")
TRACES = {
    "w106": ("cloudphysics-w106/w106.trace.xz", "u32le"),
    "P6": ("arc/P6.lis.zst", "arc"),
    "P12": ("arc/P12.lis.zst", "arc"),
    "OLTP": ("arc/OLTP.lis.zst", "arc"),
}
PREFETCHERS = ["none", "obl", "ra", "linux", "amp", "step", "mithril", "pg"]
REPS = 3


def trace(root: str, name: str) -> ps.Trace:
    path, fmt = TRACES[name]
    return ps.open_trace(os.path.join(root, path), fmt)


def cpu(f):
    c0, w0 = time.process_time(), time.perf_counter()
    out = f()
    return out, time.process_time() - c0, time.perf_counter() - w0


def median_cpu(f, reps=REPS):
    runs = [cpu(f) for _ in range(reps)]
    return runs[-1][0], statistics.median(r[1] for r in runs), statistics.median(r[2] for r in runs)


def write(name: str, rows: list[dict]) -> None:
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, f"{name}.csv")
    with open(path + ".tmp", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    os.replace(path + ".tmp", path)
    for r in rows:
        print(r, flush=True)


def exact_and_shards(root: str) -> None:
    cost, shards = [], []
    for name in ("w106", "P6", "P12"):
        tr = trace(root, name)
        ex, ex_cpu, ex_wall = median_cpu(lambda: ps.mrc(tr, method="exact"))
        fp = ex.attrs["footprint"]
        sizes = [int(s) for s in ex["capacity_blocks"]]
        lru_size = max(1, round(0.1 * fp))
        _, lru_cpu, lru_wall = median_cpu(lambda: ps.simulate(tr, size=lru_size, policy="lru"))
        cost.append({"trace": name, "footprint": int(fp), "references": int(ex.attrs["references"]),
                     "exact_cpu_s": round(ex_cpu, 3), "exact_wall_s": round(ex_wall, 3),
                     "lru_10pct_cpu_s": round(lru_cpu, 3), "lru_10pct_wall_s": round(lru_wall, 3),
                     "ratio_cpu": round(ex_cpu / lru_cpu, 2)})
        variants = [(f"rate0.01-adj-seed{s}", {"rate": 0.01, "seed": s}) for s in range(5)]
        variants += [("rate0.01-noadj-seed0", {"rate": 0.01, "adjust": False}),
                     ("fixedsize8192-seed0", {"max_samples": 8192, "rate": 1.0})]
        for label, kw in variants:
            reps = REPS if label.endswith("seed0") else 1
            est, s_cpu, s_wall = median_cpu(lambda: ps.mrc(tr, sizes, method="shards", **kw), reps)
            err = (est["miss_ratio"] - ex["miss_ratio"]).abs()
            shards.append({"trace": name, "variant": label, "mae": round(float(err.mean()), 5),
                           "max_abs_err": round(float(err.max()), 5), "final_rate": est.attrs["rate"],
                           "cpu_s": round(s_cpu, 3), "wall_s": round(s_wall, 3),
                           "speedup_cpu": round(ex_cpu / s_cpu, 1)})
    write("exact_cost", cost)
    write("shards", shards)


def shards_sensitivity(root: str) -> None:
    """SHARDS error against the number of sampled blocks: rate 0.1 as well as 0.01, and 512-byte blocks
    (8x the blocks of the ARC traces' 4 KiB default) at 0.01; seeds 0-4 each."""
    rows = []
    for name in ("P6", "P12"):
        for bs in (4096, 512):
            path, fmt = TRACES[name]
            tr = ps.open_trace(os.path.join(root, path), fmt, block_size=bs)
            ex = ps.mrc(tr)
            sizes = [int(s) for s in ex["capacity_blocks"]]
            for rate in ((0.01, 0.1) if bs == 4096 else (0.01,)):
                for seed in range(5):
                    est = ps.mrc(tr, sizes, method="shards", rate=rate, seed=seed)
                    err = (est["miss_ratio"] - ex["miss_ratio"]).abs()
                    rows.append({"trace": name, "block_size": bs, "footprint": int(ex.attrs["footprint"]),
                                 "rate": rate, "seed": seed, "expected_sampled_blocks": round(ex.attrs["footprint"] * rate),
                                 "mae": round(float(err.mean()), 5), "max_abs_err": round(float(err.max()), 5)})
    write("shards_sensitivity", rows)


def engine(root: str) -> None:
    rows = []
    for name in ("P6", "P12"):
        tr = trace(root, name)
        ex = ps.mrc(tr, ["1%", "5%", "10%", "25%"], method="exact")
        full = ps.mrc(tr, [int(b) for b in ex["capacity_blocks"]], method="full")
        for (_, a), (_, b) in zip(ex.iterrows(), full.iterrows()):
            rows.append({"trace": name, "capacity_blocks": int(a["capacity_blocks"]),
                         "curve_hit": round(float(a["hit_ratio"]), 5), "engine_hit": round(float(b["hit_ratio"]), 5),
                         "diff": round(float(b["hit_ratio"] - a["hit_ratio"]), 5)})
    write("engine_vs_curve", rows)


def extent(root: str, traces: list[str]) -> None:
    rows = []
    for name in traces:
        tr = trace(root, name)
        fp, read_cpu, _ = median_cpu(lambda: ps._core.footprint(tr._json()), 1)
        print(f"{name}: one read pass (decode + footprint set) {read_cpu:.3f} s CPU", flush=True)
        sizes = [max(1, round(0.01 * fp)), max(1, round(0.1 * fp))]
        for pf in PREFETCHERS:
            full, f_cpu, f_wall = median_cpu(lambda: ps.mrc(tr, sizes, method="full", prefetcher=pf), 1)
            variants = [("extent256K", "extent", 256 << 10, 0), ("extent256K", "extent", 256 << 10, 1),
                        ("extent64K", "extent", 64 << 10, 0), ("extent1M", "extent", 1 << 20, 0),
                        ("block", "block", 256 << 10, 0)]
            for label, unit, eb, seed in variants:
                mini, m_cpu, m_wall = median_cpu(
                    lambda: ps.mrc(tr, sizes, method="mini", prefetcher=pf, rate=0.1, unit=unit, extent_bytes=eb,
                                   seed=seed), 1)
                for i, size in enumerate(sizes):
                    hf, hm = float(full["hit_ratio"][i]), float(mini["hit_ratio"][i])
                    rows.append({"trace": name, "prefetcher": pf, "variant": label, "seed": seed,
                                 "share": ["1%", "10%"][i], "capacity_blocks": size,
                                 "full_hit": round(hf, 4), "mini_hit": round(hm, 4), "err": round(hm - hf, 4),
                                 "read_pass_cpu_s": round(read_cpu, 3), "full_cpu_s": round(f_cpu, 3), "mini_cpu_s": round(m_cpu, 3),
                                 "speedup_cpu": round(f_cpu / m_cpu, 2)})
        write(f"extent_{name}", [r for r in rows if r["trace"] == name])


def speed(root: str, traces: list[str], seeds=(0, 1), out="speed") -> None:
    """A whole curve of 10 sizes (1% .. 10% of the footprint): CPU of 10 full runs against one extent-sampled
    pass (rate 0.1, 1 MiB extents, the trace read once, 10 miniature runs), and the errors at each size."""
    rows = []
    for name in traces:
        tr = trace(root, name)
        fp, read_cpu, _ = median_cpu(lambda: ps._core.footprint(tr._json()), 1)
        sizes = [max(1, round(i / 100 * fp)) for i in range(1, 11)]
        for pf in ("none", "obl", "linux", "mithril", "pg"):
            full, f_cpu, _ = median_cpu(lambda: ps.mrc(tr, sizes, method="full", prefetcher=pf), 1)
            for seed in seeds:
                mini, m_cpu, _ = median_cpu(lambda: ps.mrc(tr, sizes, method="mini", prefetcher=pf, rate=0.1,
                                                           unit="extent", extent_bytes=1 << 20, seed=seed), 1)
                err = (mini["hit_ratio"] - full["hit_ratio"]).abs()
                rows.append({"trace": name, "prefetcher": pf, "seed": seed, "sizes": len(sizes),
                             "max_abs_err": round(float(err.max()), 4), "mean_abs_err": round(float(err.mean()), 4),
                             "read_pass_cpu_s": round(read_cpu, 3), "full_cpu_s": round(f_cpu, 3),
                             "mini_cpu_s": round(m_cpu, 3), "speedup_cpu": round(f_cpu / m_cpu, 2),
                             "speedup_excl_read": round((f_cpu - len(sizes) * read_cpu) / max(m_cpu - read_cpu, 1e-3), 1)})
        write(f"{out}_{name}", [r for r in rows if r["trace"] == name])


def shards_bias(root: str) -> None:
    """Method 6 of docs/mrc.md: SHARDS 1% over seeds 0-19, per-seed MAE, MAE of the seed-averaged curve,
    sampled distinct blocks against their expectation."""
    rows = []
    for name in ("w106", "P6", "P12"):
        tr = trace(root, name)
        ex = ps.mrc(tr, method="exact")
        fp = ex.attrs["footprint"]
        sizes = [int(s) for s in ex["capacity_blocks"]]
        curves, maes, sampled = [], [], []
        for seed in range(20):
            est = ps.mrc(tr, sizes, method="shards", rate=0.01, seed=seed)
            curves.append(est["miss_ratio"].to_numpy())
            maes.append(float((est["miss_ratio"] - ex["miss_ratio"]).abs().mean()))
            # cold references of the sample weigh 1/rate each: the estimate / 100 is the sampled count
            sampled.append(est.attrs["footprint"] * 0.01)
        mean_curve = sum(curves) / len(curves)
        bias = float(abs(mean_curve - ex["miss_ratio"].to_numpy()).mean())
        expected = 0.01 * fp
        rows.append({"trace": name, "footprint": int(fp), "expected_sampled": round(expected, 1),
                     "sampled_mean": round(statistics.mean(sampled), 1),
                     "sampled_sd": round(statistics.pstdev(sampled), 1),
                     "binomial_sd": round((fp * 0.01 * 0.99) ** 0.5, 1),
                     "mae_min": round(min(maes), 5), "mae_median": round(statistics.median(maes), 5),
                     "mae_max": round(max(maes), 5), "mae_of_mean_curve": round(bias, 5),
                     "seeds_within_0.005": sum(m <= 0.005 for m in maes)})
    write("shards_bias", rows)


def shards_bias3(root: str, label: str, seeds: int = 80) -> None:
    """Method 8 of docs/mrc.md: SHARDS 1% over seeds 0..seeds-1; per size the mean signed error and its
    standard error (biased where |mean| > 3 SE); per-seed MAE over seeds 0-19 as in method 6; the MAE of
    the curve averaged over every seed. `label` names the estimator the build has (before / after)."""
    summary, per_size = [], []
    for name in ("w106", "P6", "P12"):
        tr = trace(root, name)
        ex = ps.mrc(tr, method="exact")
        exact = ex["miss_ratio"].to_numpy()
        sizes = [int(s) for s in ex["capacity_blocks"]]
        errs = []
        for seed in range(seeds):
            est = ps.mrc(tr, sizes, method="shards", rate=0.01, seed=seed)
            errs.append(est["miss_ratio"].to_numpy() - exact)
        maes = [float(abs(e).mean()) for e in errs[:20]]
        n = len(errs)
        mean = [sum(e[i] for e in errs) / n for i in range(len(sizes))]
        se = [statistics.stdev([e[i] for e in errs]) / n ** 0.5 for i in range(len(sizes))]
        for i, size in enumerate(sizes):
            per_size.append({"estimator": label, "trace": name, "capacity_blocks": size,
                             "exact_miss": round(float(exact[i]), 5), "mean_err": round(mean[i], 5),
                             "se": round(se[i], 5), "biased": abs(mean[i]) > 3 * se[i]})
        summary.append({"estimator": label, "trace": name, "seeds": n,
                        "mae_min_0_19": round(min(maes), 5), "mae_median_0_19": round(statistics.median(maes), 5),
                        "mae_max_0_19": round(max(maes), 5), "seeds_within_0.005_of_20": sum(m <= 0.005 for m in maes),
                        "mae_of_mean_curve": round(statistics.mean(abs(m) for m in mean), 5),
                        "sizes_biased": sum(abs(m) > 3 * s for m, s in zip(mean, se)),
                        "mean_signed_err": round(statistics.mean(mean), 5)})
    write(f"shards_bias3_{label}", summary)
    write(f"shards_bias3_{label}_per_size", per_size)


def shards_sensitivity3(root: str, label: str = "") -> None:
    """Method 8, sensitivity (after the change): seeds 0-19 at rates 0.005, 0.01 and 0.02, SHARDS_adj off
    at 0.01, and fixed-size with 8192 blocks; MAE min / median / max and seeds within 0.005."""
    variants = [("rate0.005", {"rate": 0.005}), ("rate0.01", {"rate": 0.01}), ("rate0.02", {"rate": 0.02}),
                ("rate0.01-noadj", {"rate": 0.01, "adjust": False}), ("fixedsize8192", {"max_samples": 8192})]
    rows = []
    for name in ("w106", "P6", "P12"):
        tr = trace(root, name)
        ex = ps.mrc(tr, method="exact")
        sizes = [int(s) for s in ex["capacity_blocks"]]
        for variant, kw in variants:
            maes = []
            for seed in range(20):
                est = ps.mrc(tr, sizes, method="shards", seed=seed, **kw)
                maes.append(float((est["miss_ratio"] - ex["miss_ratio"]).abs().mean()))
            rows.append({"trace": name, "variant": variant, "mae_min": round(min(maes), 5),
                         "mae_median": round(statistics.median(maes), 5), "mae_max": round(max(maes), 5),
                         "seeds_within_0.005_of_20": sum(m <= 0.005 for m in maes)})
    # (Until round 5 the loop variable shadowed `label`: every run wrote shards_sensitivity3fixedsize8192.)
    write(f"shards_sensitivity3{label}", rows)


def exact4(root: str, label: str, reps: int = 7) -> None:
    """Method 12: CPU of ps.mrc(method="exact") (the 100 default sizes) against one simulate_many LRU run
    at 10% of the footprint in blocks, on one thread, alternating, `reps` rounds after a warm-up of
    each (so the decoded-trace cache is warm); medians; load average printed before and after.
    Run with OPENBLAS_NUM_THREADS=1 (numpy's BLAS threads otherwise spin in the process)."""
    caps = {"w106": 27517, "P6": 10190, "P12": 40160}
    rows = []
    for name in ("w106", "P6", "P12"):
        tr = trace(root, name)
        lru = [{"level": [{"size": caps[name], "policy": "lru"}]}]
        run_ex = lambda: ps.mrc(tr, method="exact")  # noqa: E731
        run_lru = lambda: ps.simulate_many(tr, lru, threads=1)  # noqa: E731
        run_ex(), run_lru()
        load0 = os.getloadavg()[0]
        ex, lr = [], []
        for _ in range(reps):
            ex.append(cpu(run_ex)[1])
            lr.append(cpu(run_lru)[1])
        e, l_ = statistics.median(ex), statistics.median(lr)
        rows.append({"trace": name, "label": label, "exact_cpu_s": round(e, 4), "lru_10pct_cpu_s": round(l_, 4),
                     "ratio": round(e / l_, 2), "exact_min": round(min(ex), 4), "lru_min": round(min(lr), 4),
                     "load_before": round(load0, 2), "load_after": round(os.getloadavg()[0], 2)})
        print(rows[-1], flush=True)
    write(f"exact4_{label}", rows)


def shards5(root: str, label: str, seeds: int = 80) -> None:
    """Methods 15-16 of docs/mrc.md: SHARDS 1% (SHARDS_adj) over seeds 0..seeds-1 with the hash of this
    build (`label`): every seed's curve at the 100 sizes (raw, for the diagnosis), and the summary of
    method 8 (per-seed MAE over seeds 0-19, the averaged curve over all seeds, sizes beyond 2 and 3 SE)."""
    summary, raw = [], []
    for name in ("w106", "P6", "P12"):
        tr = trace(root, name)
        ex = ps.mrc(tr, method="exact")
        exact = ex["miss_ratio"].to_numpy()
        sizes = [int(s) for s in ex["capacity_blocks"]]
        errs = []
        for seed in range(seeds):
            est = ps.mrc(tr, sizes, method="shards", rate=0.01, seed=seed)
            e = est["miss_ratio"].to_numpy() - exact
            errs.append(e)
            sampled = round(est.attrs["footprint"] * est.attrs["rate"])
            for i, size in enumerate(sizes):
                raw.append({"hash": label, "trace": name, "seed": seed, "sampled_blocks": sampled,
                            "capacity_blocks": size, "exact_miss": round(float(exact[i]), 6),
                            "est_miss": round(float(est["miss_ratio"][i]), 6)})
        maes = [float(abs(e).mean()) for e in errs[:20]]
        n = len(errs)
        mean = [sum(e[i] for e in errs) / n for i in range(len(sizes))]
        se = [statistics.stdev([e[i] for e in errs]) / n ** 0.5 for i in range(len(sizes))]
        summary.append({"hash": label, "trace": name, "seeds": n,
                        "mae_min_0_19": round(min(maes), 5), "mae_median_0_19": round(statistics.median(maes), 5),
                        "mae_max_0_19": round(max(maes), 5), "seeds_within_0.005_of_20": sum(m <= 0.005 for m in maes),
                        "mae_median_0_79": round(statistics.median(float(abs(e).mean()) for e in errs), 5),
                        "seeds_within_0.005_of_80": sum(float(abs(e).mean()) <= 0.005 for e in errs),
                        "mae_of_mean_curve": round(statistics.mean(abs(m) for m in mean), 5),
                        "mean_se": round(statistics.mean(se), 5),
                        "sizes_beyond_3se": sum(abs(m) > 3 * s for m, s in zip(mean, se)),
                        "sizes_beyond_2se": sum(abs(m) > 2 * s for m, s in zip(mean, se)),
                        "mean_signed_err": round(statistics.mean(mean), 5)})
        print(summary[-1], flush=True)
    write(f"shards5_{label}", summary)
    write(f"shards5_{label}_per_seed", raw)


def exact5(root: str, label: str, reps: int = 7) -> None:
    """Method 14: method 12's measure (exact against simulate_many LRU at 10%, 1 thread, cache warm, `reps`
    alternating rounds, medians) with SHARDS 1% (seed 0) timed in the same rounds."""
    caps = {"w106": 27517, "P6": 10190, "P12": 40160}
    rows = []
    for name in ("w106", "P6", "P12"):
        tr = trace(root, name)
        lru = [{"level": [{"size": caps[name], "policy": "lru"}]}]
        run_ex = lambda: ps.mrc(tr, method="exact")  # noqa: E731
        run_lru = lambda: ps.simulate_many(tr, lru, threads=1)  # noqa: E731
        run_sh = lambda: ps.mrc(tr, method="shards", rate=0.01)  # noqa: E731
        run_ex(), run_lru(), run_sh()
        load0 = os.getloadavg()[0]
        ex, lr, sh = [], [], []
        for _ in range(reps):
            ex.append(cpu(run_ex)[1])
            lr.append(cpu(run_lru)[1])
            sh.append(cpu(run_sh)[1])
        e, l_, s_ = statistics.median(ex), statistics.median(lr), statistics.median(sh)
        rows.append({"trace": name, "label": label, "exact_cpu_s": round(e, 4), "lru_10pct_cpu_s": round(l_, 4),
                     "ratio": round(e / l_, 2), "shards_cpu_s": round(s_, 4), "exact_over_shards": round(e / s_, 1),
                     "exact_min": round(min(ex), 4), "exact_max": round(max(ex), 4), "lru_min": round(min(lr), 4),
                     "lru_max": round(max(lr), 4), "load_before": round(load0, 2),
                     "load_after": round(os.getloadavg()[0], 2)})
        print(rows[-1], flush=True)
    write(f"exact5_{label}", rows)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["exact", "bias", "bias3", "shards5", "exact5", "speed3", "exact4", "sensitivity3", "sensitivity", "engine", "extent", "speed", "all"])
    p.add_argument("--traces", default=os.environ.get("PREFETCHSIM_TRACES", "../shared/traces"))
    p.add_argument("--label", default="after", help="bias3: the estimator of this build (before / after)")
    p.add_argument("--only", default="w106,P6,P12,OLTP", help="extent: traces")
    a = p.parse_args()
    if a.what in ("exact", "all"):
        exact_and_shards(a.traces)
    if a.what in ("bias", "all"):
        shards_bias(a.traces)
    if a.what == "speed3":
        # Method 10: section 5 again on today's main, seeds 0-4.
        speed(a.traces, a.only.split(","), seeds=range(5), out="speed3")
    if a.what == "exact4":
        exact4(a.traces, a.label)
    if a.what == "exact5":
        exact5(a.traces, a.label)
    if a.what == "shards5":
        shards5(a.traces, a.label)
    if a.what == "bias3":
        shards_bias3(a.traces, a.label)
    if a.what == "sensitivity3":
        shards_sensitivity3(a.traces, "" if a.label == "after" else f"_{a.label}")
    if a.what in ("sensitivity", "all"):
        shards_sensitivity(a.traces)
    if a.what in ("engine", "all"):
        engine(a.traces)
    if a.what in ("speed", "all"):
        speed(a.traces, a.only.split(","))
    if a.what in ("extent", "all"):
        extent(a.traces, a.only.split(","))
    return 0


if __name__ == "__main__":
    sys.exit(main())
