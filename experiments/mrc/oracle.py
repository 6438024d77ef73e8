"""Method 16 of docs/mrc.md: what limits SHARDS at 1%.

For each trace: the exact LRU stack distance of every block reference (Mattson, Bennett & Kruskal with a
Fenwick tree over time positions, in plain Python), checked against ps.mrc(method="exact") at the 100
default sizes; from it each block's misses at each size, m_b(c). The "oracle" estimator sees the sampled
blocks with their exact distances and estimates the misses as SHARDS_adj does, sum over sampled b of
m_b(c) / R, over the N block references (so its error is only which blocks are sampled). It is evaluated
(i) on the blocks SHARDS' own hash samples for seeds 0..79 (multiply-shift, re-implemented here and
checked against the sampled counts of the Rust build, results/shards5_<label>_per_seed.csv), and (ii) on
2,000 independent Bernoulli(R) samples of the blocks. Also per seed: sampled blocks and references, and
the Spearman rank correlation of SHARDS' MAE with them; per size: SHARDS' bias and variance over seeds,
and the share of the summed absolute error carried by each tenth of the sizes.

Run after `measure.py shards5 --label LABEL` (same build):
    python experiments/mrc/oracle.py --label LABEL
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import tempfile

import numpy as np

import prefetchsim as ps

OUT = os.path.join(os.path.dirname(__file__), "results")
TRACES = {
    "w106": ("cloudphysics-w106/w106.trace.xz", "u32le"),
    "P6": ("arc/P6.lis.zst", "arc"),
    "P12": ("arc/P12.lis.zst", "arc"),
}
RATE = 0.01
M64 = (1 << 64) - 1


def mix(key: int, seed: int) -> int:
    """SplitMix64's finaliser as `hash::mix` in the Rust core."""
    z = key ^ ((seed * 0x9E3779B97F4A7C15 + 0xD1B54A32D192ED03) & M64)
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def sampled_mask(blocks: np.ndarray, seed: int, rate: float) -> np.ndarray:
    """Blocks (uint64) that `hash::MultiplyShift` of `seed` samples at `rate`."""
    a0, a1, b = (np.uint64(mix(i, seed)) for i in (1, 2, 3))
    lo, hi = blocks & np.uint64(0xFFFFFFFF), blocks >> np.uint64(32)
    with np.errstate(over="ignore"):
        s = a0 * lo + a1 * hi + b
    threshold = int(rate * 18446744073709551616.0)
    return s <= np.uint64(threshold | 0xFFFFFFFF)


def block_references(tr: ps.Trace) -> np.ndarray:
    """Every block reference of the trace in order (uint64 block numbers), via the CSV the trace converts to."""
    import pandas as pd

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.csv")
        tr.convert(path, to="csv")
        df = pd.read_csv(path, comment="#", usecols=["first", "len"], dtype={"first": np.uint64, "len": np.int64})
    first, lens = df["first"].to_numpy(), df["len"].to_numpy()
    starts = np.repeat(first, lens)
    offs = np.arange(lens.sum(), dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
    return starts + offs.astype(np.uint64)


def stack_distances(ids: list[int], nb: int) -> list[int]:
    """Mattson distances (1 = re-referenced at once), 0 for a first reference."""
    n = len(ids)
    tree = [0] * (n + 1)
    last = [-1] * nb
    out = [0] * n
    tracked = 0
    for i, b in enumerate(ids):
        p = last[b]
        if p >= 0:
            # marks at positions <= p
            k, c = p + 1, 0
            while k > 0:
                c += tree[k]
                k -= k & -k
            out[i] = tracked - c + 1
            k = p + 1
            while k <= n:
                tree[k] -= 1
                k += k & -k
        else:
            tracked += 1
        k = i + 1
        while k <= n:
            tree[k] += 1
            k += k & -k
        last[b] = i
    return out


def write(name: str, rows: list[dict]) -> None:
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, f"{name}.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def spearman(x, y) -> float:
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    return float(np.corrcoef(rx, ry)[0, 1])


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--label", required=True, help="the hash label of the shards5 run of this build")
    p.add_argument("--traces", default=os.environ.get("PREFETCHSIM_TRACES", "../shared/traces"))
    p.add_argument("--draws", type=int, default=2000)
    a = p.parse_args()
    per_seed_rows = list(csv.DictReader(open(os.path.join(OUT, f"shards5_{a.label}_per_seed.csv"))))
    summary, seeds_out, sizes_out = [], [], []
    rng = np.random.default_rng(20261127)
    for name, (path, fmt) in TRACES.items():
        tr = ps.open_trace(os.path.join(a.traces, path), fmt)
        ex = ps.mrc(tr, method="exact")
        sizes = ex["capacity_blocks"].to_numpy().astype(np.int64)
        exact = ex["miss_ratio"].to_numpy()
        refs = block_references(tr)
        uniq, inv = np.unique(refs, return_inverse=True)
        nb, n = len(uniq), len(refs)
        print(f"{name}: {n} block references, {nb} blocks; distances ...", flush=True)
        d = np.array(stack_distances(inv.tolist(), nb), dtype=np.int64)
        # Size index from which a reference hits: first size >= d; cold (0) misses at every size.
        k = np.where(d == 0, len(sizes), np.searchsorted(sizes, d, side="left"))
        hist = np.zeros((nb, len(sizes) + 1), dtype=np.int32)
        np.add.at(hist, (inv, k), 1)
        # misses of block b at size j: its references whose first hitting size index is above j
        misses = np.cumsum(hist[:, ::-1], axis=1)[:, ::-1][:, 1:].astype(np.float64)
        refs_b = hist.sum(axis=1).astype(np.float64)
        check = misses.sum(axis=0) / n
        worst = float(np.abs(check - exact).max())
        print(f"{name}: Python distances against ps.mrc exact, largest difference {worst:.2e}", flush=True)
        assert worst < 1e-9, worst

        rows = [r for r in per_seed_rows if r["trace"] == name]
        seeds = sorted({int(r["seed"]) for r in rows})
        est = {s: np.array([float(r["est_miss"]) for r in rows if int(r["seed"]) == s]) for s in seeds}
        sampled_rust = {s: int(next(r["sampled_blocks"] for r in rows if int(r["seed"]) == s)) for s in seeds}
        shards_mae, oracle_mae, n_blocks, n_refs, oracle_ratio_mae = [], [], [], [], []
        for s in seeds:
            m = sampled_mask(uniq, s, RATE)
            assert int(m.sum()) == sampled_rust[s], (name, s, int(m.sum()), sampled_rust[s])
            o = misses[m].sum(axis=0) / (RATE * n)
            o_ratio = misses[m].sum(axis=0) / max(refs_b[m].sum(), 1.0)
            shards_mae.append(float(np.abs(est[s] - exact).mean()))
            oracle_mae.append(float(np.abs(o - exact).mean()))
            oracle_ratio_mae.append(float(np.abs(o_ratio - exact).mean()))
            n_blocks.append(int(m.sum()))
            n_refs.append(float(refs_b[m].sum()))
            seeds_out.append({"hash": a.label, "trace": name, "seed": s, "sampled_blocks": n_blocks[-1],
                              "sampled_references": int(n_refs[-1]), "shards_mae": round(shards_mae[-1], 6),
                              "oracle_mae": round(oracle_mae[-1], 6),
                              "oracle_ratio_mae": round(oracle_ratio_mae[-1], 6)})
        draws = []
        for _ in range(a.draws):
            m = rng.random(nb) < RATE
            o = misses[m].sum(axis=0) / (RATE * n)
            draws.append(float(np.abs(o - exact).mean()))
        errs = np.array([est[s] - exact for s in seeds])
        bias, var = errs.mean(axis=0), errs.var(axis=0)
        abs_sum = np.abs(errs).sum(axis=0)
        tenth = [float(abs_sum[i * 10:(i + 1) * 10].sum() / abs_sum.sum()) for i in range(10)]
        for j, size in enumerate(sizes):
            sizes_out.append({"hash": a.label, "trace": name, "capacity_blocks": int(size),
                              "exact_miss": round(float(exact[j]), 6), "bias": round(float(bias[j]), 6),
                              "sd": round(float(var[j] ** 0.5), 6), "rmse": round(float((bias[j] ** 2 + var[j]) ** 0.5), 6),
                              "mean_abs_err": round(float(np.abs(errs[:, j]).mean()), 6)})
        row = {"hash": a.label, "trace": name, "block_references": n, "footprint": nb, "seeds": len(seeds),
               "shards_mae_median": round(statistics.median(shards_mae), 5),
               "shards_within_0.005": sum(x <= 0.005 for x in shards_mae),
               "oracle_mae_median_hash_seeds": round(statistics.median(oracle_mae), 5),
               "oracle_within_0.005_hash_seeds": sum(x <= 0.005 for x in oracle_mae),
               "oracle_mae_median_bernoulli": round(statistics.median(draws), 5),
               "oracle_within_0.005_bernoulli_share": round(sum(x <= 0.005 for x in draws) / len(draws), 3),
               "oracle_ratio_mae_median_hash_seeds": round(statistics.median(oracle_ratio_mae), 5),
               "spearman_mae_sampled_blocks": round(spearman(shards_mae, n_blocks), 3),
               "spearman_mae_sampled_refs": round(spearman(shards_mae, n_refs), 3),
               "spearman_shards_oracle": round(spearman(shards_mae, oracle_mae), 3),
               "share_variance_in_mse": round(float(var.sum() / (var.sum() + (bias ** 2).sum())), 3),
               "abs_err_share_by_tenth_of_sizes": " ".join(f"{t:.2f}" for t in tenth)}
        print(row, flush=True)
        summary.append(row)
    write(f"oracle_{a.label}", summary)
    write(f"oracle_{a.label}_per_seed", seeds_out)
    write(f"oracle_{a.label}_per_size", sizes_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
