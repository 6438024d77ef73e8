//! Replay a trace through one level and print the miss ratio and the speed (a quick profiling aid).
//!
//! `cargo run --release -p prefetchsim-trace --example replay -- TRACE FORMAT POLICY[+PREFETCHER] BLOCKS`
//!
//! PREFETCHER is a name or an inline TOML table: `lru+{ name = 'mithril', preset = 'libcachesim' }`.
//! With `PREFETCHSIM_PRELOAD=1` the trace is decoded into memory first, so the time (and a profile of
//! `run_instant`) is the simulation's alone, as in the Python benchmark.

use std::time::Instant;

use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{run_instant, Hierarchy, Silent, VecSource};
use prefetchsim_trace::TraceSpec;

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        return Err("usage: replay TRACE FORMAT POLICY[+PREFETCHER] BLOCKS".into());
    }
    let (policy, prefetcher) = args[3].split_once('+').unwrap_or((&args[3], "none"));
    // A prefetcher is a name (`mithril`, `mithril+obl`) or an inline TOML table (`{ name = 'pg' }`).
    let prefetcher =
        if prefetcher.trim_start().starts_with('{') { prefetcher.to_string() } else { format!("'{prefetcher}'") };
    let cfg = HierarchyConfig::from_toml(&format!(
        "[[level]]\nsize = {}\npolicy = '{policy}'\nprefetcher = {prefetcher}\n",
        args[4]
    ))?;
    let spec = TraceSpec::with_format(&args[1], &args[2]);
    let mut h = Hierarchy::build(&cfg, spec.block_size, None)?;
    let mut src = spec.open()?;
    if std::env::var_os("PREFETCHSIM_PRELOAD").is_some() {
        let mut reqs = Vec::new();
        while src.fill(&mut reqs, 1 << 16)? > 0 {}
        src = Box::new(VecSource::new(reqs));
    }
    let t = Instant::now();
    let r = run_instant(src.as_mut(), &mut h, &cfg.engine, &mut Silent)?;
    let dt = t.elapsed().as_secs_f64();
    let c = &r.levels[0].counters;
    println!(
        "{} requests, {} block accesses, miss ratio {:.6}, {:.3} s, {:.2} M accesses/s",
        r.requests,
        c.demand_accesses,
        c.miss_ratio(),
        dt,
        c.demand_accesses as f64 / dt / 1e6
    );
    // Every counter, so that two builds can be compared for identical results (`PREFETCHSIM_COUNTERS=1`).
    if std::env::var_os("PREFETCHSIM_COUNTERS").is_some() {
        let pairs: Vec<String> = c.pairs().iter().map(|(k, v)| format!("{k}={v}")).collect();
        println!("{}", pairs.join(" "));
    }
    Ok(())
}
