"""docs/mrc.md method 7, with reading: CPU of ps.mrc exact over SHARDS 1%, decoded-trace cache on and off."""
import os, statistics, time, prefetchsim as ps
root = os.environ.get("PREFETCHSIM_TRACES", "../shared/traces")
T = {"w106": ("cloudphysics-w106/w106.trace.xz", "u32le"), "P6": ("arc/P6.lis.zst", "arc"), "P12": ("arc/P12.lis.zst", "arc")}
print("load", os.getloadavg())
for name, (p, f) in T.items():
    for cache in (True, False):
        tr = ps.open_trace(os.path.join(root, p), f, cache=cache)
        ps.mrc(tr, method="exact")  # warms the decoded-trace cache when on
        e, s = [], []
        for _ in range(3):
            c = time.process_time(); ps.mrc(tr, method="exact"); e.append(time.process_time() - c)
            c = time.process_time(); ps.mrc(tr, method="shards", rate=0.01); s.append(time.process_time() - c)
        me, ms = statistics.median(e), statistics.median(s)
        print(f"{name} cache={cache}: exact {me:.3f} s CPU, shards 1% {ms:.3f} s CPU, ratio {me/ms:.1f}", flush=True)
print("load", os.getloadavg())
