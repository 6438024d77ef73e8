"""Values of the STEP reproduction that come from a rule applied to the workload, not from STEP's results
(`docs/papers/step.md`, "Method"): the pdf's coefficients fitted to the workload's sequential runs (§4.3:
"The coefficients of these functions are tunables, which can be determined empirically") and the cache
size at the knee of LRU's miss-ratio curve (§1, Fig. 2: the paper's 1 GB nodes sit past the knee of its
traces' curves, which flatten "around 256 MBytes").

Both look only at the trace (and at plain LRU without prefetching), so they can be computed before any
STEP run and stated on the methodology page.
"""

from __future__ import annotations

from typing import Any

from .._sim import simulate_many
from .._trace import Trace

# Requests looked at by the fit (the head of the trace) [ours].
FIT_REQUESTS = 100_000
# Runs that are still open when the window of recent runs forgets them end there (as the generators'
# 32-run window) [ours].
RUN_WINDOW = 32
# Lengths x (blocks already read) at which the mean remaining run is measured for the fit.
FIT_POINTS = (0, 4, 8, 16, 32, 64, 128)
# Cache shares tried for the knee, and how close to the cold-miss floor (the miss ratio at the whole
# footprint) the knee's miss ratio must be.
KNEE_SHARES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)
KNEE_TOLERANCE = 0.02


def run_lengths(trace: Trace, requests: int = FIT_REQUESTS) -> list[int]:
    """Lengths in blocks of the trace's sequential runs (stride one, reads), found the way STEP finds its
    streams: a request continues the run whose next block it starts at, among the last RUN_WINDOW runs."""
    df = trace.head(requests)
    df = df[df.op == "R"]
    open_runs: dict[int, int] = {}  # next block -> length so far (insertion order = age)
    done: list[int] = []
    for first, n in zip(df["first"].tolist(), df["len"].tolist(), strict=True):
        length = open_runs.pop(first, 0) + n
        if first + n in open_runs:  # another run ends at the same block: it is done
            done.append(open_runs.pop(first + n))
        open_runs[first + n] = length
        while len(open_runs) > RUN_WINDOW:
            done.append(open_runs.pop(next(iter(open_runs))))
    done.extend(open_runs.values())
    return done


def fit_pdf(lengths: list[int], shape: str) -> dict[str, float]:
    """`k` and `c` of STEP's pdf (`P(x, y)` = the probability that a run that has read `x` blocks reads
    `y` more) by least squares on the mean remaining length of the runs that reached each x of
    FIT_POINTS: for `exp(-y / (k x + c))` that mean is `k x + c`, for `max(0, 1 - y / (k x + c))` it is
    half of it. `k` is at least 0 and `c` at least one block."""
    xs, ys = [], []
    for x in FIT_POINTS:
        rest = [n - x for n in lengths if n > x]
        if len(rest) >= 20:
            xs.append(float(x))
            ys.append(sum(rest) / len(rest))
    if not xs:
        return {"pdf": shape, "pdf_k": 1.0, "pdf_c": 16.0}
    factor = 2.0 if shape == "linear" else 1.0
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    k = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx > 0 else 0.0
    k = max(0.0, k)
    c = max(1.0, my - k * mx)
    return {"pdf": shape, "pdf_k": round(factor * k, 4), "pdf_c": round(factor * c, 2)}


def random_share(lengths: list[int], requests: int) -> float:
    """Share of requests that start a run (not continuing one): the trace's random share as STEP sees it."""
    return len(lengths) / max(1, requests)


def pdf_for(trace: Trace, requests: int = FIT_REQUESTS) -> dict[str, Any]:
    """The pdf for a workload (§4.3): "deflected exponential functions ... for mostly sequential
    workload, and linear functions ... for mostly random workload" — linear when more than half of the
    requests start a run — with coefficients fitted to its runs."""
    df = trace.head(requests)
    reads = int((df.op == "R").sum())
    lengths = run_lengths(trace, requests)
    shape = "linear" if random_share(lengths, reads) > 0.5 else "exp"
    out = fit_pdf(lengths, shape)
    out["random_share"] = round(random_share(lengths, reads), 4)
    out["mean_run_blocks"] = round(sum(lengths) / max(1, len(lengths)), 2)
    return out


def knee_share(trace: Trace) -> tuple[float, list[dict[str, float]]]:
    """The smallest share of the footprint in KNEE_SHARES at which plain LRU (no prefetching, instant
    engine) misses at most KNEE_TOLERANCE more than with the whole footprint cached; and the curve."""
    cfgs = [{"level": [{"name": "c", "size": f"{100 * s:g}%", "policy": "lru", "prefetcher": "none"}],
             "engine": {"kind": "instant"}} for s in KNEE_SHARES]
    curve = []
    for s, r in zip(KNEE_SHARES, simulate_many(trace, cfgs), strict=True):
        curve.append({"share": s, "miss_ratio": r.levels[0]["miss_ratio"]})
    floor = curve[-1]["miss_ratio"]
    share = next(p["share"] for p in curve if p["miss_ratio"] <= floor + KNEE_TOLERANCE)
    return share, curve
