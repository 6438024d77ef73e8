//! Replay speed of SARC and AMP against plain LRU on a synthetic mix of sequential streams and random reads:
//! the check that both stay within twice LRU's time (design.md §3: the inner loop stays cheap).
//!
//! ```text
//! cargo run --release -p prefetchsim-core --example sarc_amp_speed -- [REQUESTS] [CACHE_BLOCKS] [ONLY] [REPEAT] [MIX]
//! ```
//! Defaults: 5,000,000 requests, a 65,536-block cache. Half the requests continue one of 16 sequential
//! streams, half read a uniformly random place in a 2^24-block space; lengths are 1 to 8 blocks. Each
//! configuration runs `REPEAT` times (default 3, round-robin) on the same requests; the best time counts. Times are the
//! thread's time on a CPU where Linux reports it (a busy machine does not inflate them), else wall time.
//!
//! Prints one line per configuration: name, million requests per second, time relative to LRU, hit ratio,
//! unused prefetch. `lru+sarc-prefetcher` is a reference: the cost of prefetching itself (blocks fetched
//! ahead are looked up twice, once when prefetched and once when hit) without SARC's lists;
//! `arc` (ARC without prefetching) another policy with two lists. `ONLY`
//! (`lru`, `sarc`, `amp`, ...; `all` for every one) runs that one configuration alone (for profilers).
//!
//! `MIX = hot` sends a quarter of the random reads to a hot set of 16,384 blocks, so that plain LRU hits
//! too. In the default mix LRU hits almost never and acts as FIFO: each insertion reuses the slot just
//! freed, its victims walk the slot arrays in order and the hardware prefetcher hides their latency, which
//! no policy with hits (nor LRU itself on a trace with reuse) enjoys.

use std::error::Error;
use std::time::Instant;

use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{run_instant, Hierarchy, Silent, VecSource};
use prefetchsim_core::Request;

/// Seconds this thread has run on a CPU (Linux: `/proc/thread-self/schedstat`, which leaves out the time
/// spent waiting for a core on a busy machine), or `None` where that file does not exist.
fn cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

/// xorshift64: reproducible, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn workload(n: usize, hot: bool) -> Vec<Request> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut heads: Vec<u64> = (0..16u64).map(|i| (1 << 30) + i * (1 << 26)).collect();
    (0..n)
        .map(|_| {
            let r = rng.next();
            let len = 1 + (r >> 8) as u32 % 8;
            if r & 1 == 0 {
                let s = (r >> 16) as usize % heads.len();
                let first = heads[s];
                heads[s] += u64::from(len);
                Request { stream: s as u32 + 1, ..Request::read(first, len) }
            } else if hot && r & 6 == 0 {
                Request::read((r >> 20) % (1 << 14), len)
            } else {
                Request::read((r >> 20) % (1 << 24), len)
            }
        })
        .collect()
}

fn main() -> Result<(), Box<dyn Error + Send + Sync>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.first().map_or(Ok(5_000_000), |s| s.parse())?;
    let cache: u64 = args.get(1).map_or(Ok(65_536), |s| s.parse())?;
    let hot = args.get(4).is_some_and(|m| m == "hot");
    let reqs = workload(n, hot);
    let configs = [
        ("lru", "policy = 'lru'\n"),
        ("sarc", "policy = 'sarc'\nprefetcher = 'sarc'\n"),
        ("amp", "policy = 'lru'\nprefetcher = 'amp'\n"),
        ("lru+sarc-prefetcher", "policy = 'lru'\nprefetcher = 'sarc'\n"),
        ("arc", "policy = 'arc'\n"),
    ];
    let only = args.get(2).cloned().filter(|o| o != "all");
    let repeat: usize = args.get(3).map_or(Ok(3), |s| s.parse())?;
    let mut runs = Vec::new();
    for (name, body) in configs {
        if only.as_deref().is_none_or(|o| o == name) {
            runs.push((name, HierarchyConfig::from_toml(&format!("[[level]]\nsize = {cache}\n{body}"))?));
        }
    }
    // Round-robin over the configurations, so that each samples the same stretches of a busy machine.
    let mut best = vec![f64::INFINITY; runs.len()];
    let mut results = vec![None; runs.len()];
    for _ in 0..repeat.max(1) {
        for (i, (_, cfg)) in runs.iter().enumerate() {
            let mut h = Hierarchy::build(cfg, 4096, None)?;
            let mut src = VecSource::new(reqs.clone());
            let (t, c) = (Instant::now(), cpu_seconds());
            let r = run_instant(&mut src, &mut h, &cfg.engine, &mut Silent)?;
            let took = match (c, cpu_seconds()) {
                (Some(a), Some(b)) => b - a,
                _ => t.elapsed().as_secs_f64(),
            };
            best[i] = best[i].min(took);
            results[i] = Some(r);
        }
    }
    for (i, (name, _)) in runs.iter().enumerate() {
        let c = &results[i].as_ref().ok_or("no run")?.levels[0].counters;
        println!(
            "{name}\t{:.2} M req/s\t{:.2}x {}\thit ratio {:.4}\tunused prefetch {}",
            n as f64 / best[i] / 1e6,
            best[i] / best[0],
            runs[0].0,
            c.hit_ratio(),
            c.unused_prefetch()
        );
    }
    Ok(())
}
