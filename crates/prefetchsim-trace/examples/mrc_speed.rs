//! Time of the exact LRU curve, SHARDS and one LRU run on a trace decoded into memory first, so that the
//! times are the methods' own work without the reading every method pays once (docs/mrc.md).
//!
//! `cargo run --release -p prefetchsim-trace --example mrc_speed -- TRACE FORMAT [RATE] [REPEAT] [ONLY]`
//!
//! Prints, for each method, the median (and min-max) seconds over REPEAT (default 9) alternating runs:
//! `exact`, `shards` at RATE (default 0.01, SHARDS_adj, seed 0), `lru` at 10% of the footprint (the
//! engine's LRU), `scan` (a pass reading each request's first block and length: the floor of any method
//! that looks at every request), `read` (decoding). The curve methods are handed the decoded requests as a
//! slice, without a copy (docs/mrc.md, method 7). Times are the CPU time of the thread
//! (`CLOCK_THREAD_CPUTIME_ID`, docs/mrc.md method 13). With ONLY = `read`, `exact` or `shards`, the trace is read and that method
//! run REPEAT times, nothing else: under `valgrind --tool=callgrind` the instruction counts of the three
//! give each method's own instructions (minus `read`'s), which the machine's load does not change.

use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{run_instant, Hierarchy, Silent, VecSource};
use prefetchsim_core::mrc::{self, ShardsConfig};
use prefetchsim_core::Request;
use prefetchsim_trace::TraceSpec;

#[path = "common/speed.rs"]
mod speed;
use speed::{median, read_all, stats, thread_cpu};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn timed<T>(f: impl FnOnce() -> Res<T>) -> Res<(T, f64)> {
    let c = thread_cpu();
    let out = f()?;
    Ok((out, thread_cpu() - c))
}

/// Read every request's first block and length: what a pass over the slice costs at least.
fn scan(reqs: &[Request]) -> u64 {
    reqs.iter().fold(0u64, |acc, r| acc.wrapping_add(r.first ^ u64::from(r.len)))
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        return Err("usage: mrc_speed TRACE FORMAT [RATE] [REPEAT]".into());
    }
    let rate: f64 = args.get(3).map_or(Ok(0.01), |s| s.parse())?;
    let repeat: usize = args.get(4).map_or(Ok(9), |s| s.parse())?;
    let spec = TraceSpec::with_format(&args[1], &args[2]);
    let read = |_: ()| -> Res<Vec<Request>> { read_all(spec.open()?.as_mut()) };
    // Not timed: the ONLY modes run under valgrind, where the clock of rustix (vDSO) is not available.
    let reqs = read(())?;
    if let Some(only) = args.get(5) {
        let cfg = match only.as_str() {
            "read" => None,
            "exact" => Some(ShardsConfig::exact()),
            "shards" => Some(ShardsConfig::fixed_rate(rate)),
            other => return Err(format!("ONLY: {other} is not read, exact or shards").into()),
        };
        let mut sum = 0.0;
        for _ in 0..repeat {
            if let Some(cfg) = cfg.clone() {
                sum += mrc::histogram_of(&reqs, cfg)?.0.footprint();
            }
        }
        println!("{} requests, {only} x{repeat} (checksum {sum})", reqs.len());
        return Ok(());
    }
    let curve = |cfg: ShardsConfig| -> Res<f64> { Ok(mrc::histogram_of(&reqs, cfg)?.0.footprint()) };
    let footprint = curve(ShardsConfig::exact())?;
    let size = ((footprint * 0.1).round() as u64).max(1);
    let cfg = HierarchyConfig::from_toml(&format!("[[level]]\nsize = {size}\npolicy = 'lru'\n"))?;
    let (mut t_read, mut t_exact, mut t_shards, mut t_lru, mut t_scan) = (vec![], vec![], vec![], vec![], vec![]);
    for _ in 0..repeat {
        t_read.push(timed(|| read(()))?.1);
        t_scan.push(timed(|| Ok(std::hint::black_box(scan(std::hint::black_box(&reqs)))))?.1);
        t_exact.push(timed(|| curve(ShardsConfig::exact()))?.1);
        t_shards.push(timed(|| curve(ShardsConfig::fixed_rate(rate)))?.1);
        // The engine reads its requests from a source: the copy is made outside the timed part.
        let mut src = VecSource::new(reqs.clone());
        let mut h = Hierarchy::build(&cfg, spec.block_size, None)?;
        t_lru.push(timed(|| run_instant(&mut src, &mut h, &cfg.engine, &mut Silent))?.1);
    }
    println!(
        "{} requests, footprint {footprint}, thread CPU, medians (min-max) of {repeat}: read {}, scan {}, exact {}, \
         shards({rate}) {}, lru({size}) {}; exact/lru {:.2}, exact/shards {:.1}",
        reqs.len(),
        stats(&t_read),
        stats(&t_scan),
        stats(&t_exact),
        stats(&t_shards),
        stats(&t_lru),
        median(t_exact.clone()) / median(t_lru.clone()),
        median(t_exact.clone()) / median(t_shards.clone())
    );
    Ok(())
}
