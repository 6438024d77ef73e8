//! Replay a trace through one level and print the miss ratio and the speed (a quick profiling aid).
//!
//! `cargo run --release -p prefetchsim-trace --example replay -- TRACE FORMAT POLICY[+PREFETCHER] BLOCKS`
//!
//! PREFETCHER is a name or an inline TOML table: `lru+{ name = 'mithril', preset = 'libcachesim' }`.
//! With `PREFETCHSIM_PRELOAD=1` the trace is decoded into memory first, so the time (and a profile of
//! `run_instant`) is the simulation's alone, as in the Python benchmark.
//!
//! With `PREFETCHSIM_REPS=N` the trace is decoded once, `run_instant` runs N times on fresh levels, and
//! the line printed is the thread's CPU time summed over the N runs, in seconds
//! (`CLOCK_THREAD_CPUTIME_ID`). This is the A/B measure of docs/prefetcher-speed.md, round 4. The
//! wall-clock milliseconds of a single replay are too coarse for runs of 35 ms. Where the CPU clock moves
//! in scheduler ticks (4 ms on that machine), N makes each process's total long enough for the tick not
//! to matter.

use std::time::Instant;

use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{run_instant, Hierarchy, Silent, VecSource};
use prefetchsim_trace::TraceSpec;

#[path = "common/speed.rs"]
mod speed;
use speed::{read_all, thread_cpu};

type Error = Box<dyn std::error::Error + Send + Sync>;

fn main() -> Result<(), Error> {
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
    let reps = match std::env::var("PREFETCHSIM_REPS") {
        Ok(v) => Some(v.parse::<u32>().map_err(|e| format!("PREFETCHSIM_REPS='{v}': {e}"))?),
        Err(_) => None,
    };
    if let Some(reps) = reps {
        let reqs = read_all(spec.open()?.as_mut())?;
        let mut total = 0.0;
        for _ in 0..reps {
            let mut h = Hierarchy::build(&cfg, spec.block_size, None)?;
            let mut src = VecSource::new(reqs.clone());
            let t = thread_cpu();
            let r = run_instant(&mut src, &mut h, &cfg.engine, &mut Silent)?;
            total += thread_cpu() - t;
            std::hint::black_box(r);
        }
        println!("{total:.6}");
        return Ok(());
    }
    let mut h = Hierarchy::build(&cfg, spec.block_size, None)?;
    let mut src = spec.open()?;
    if std::env::var_os("PREFETCHSIM_PRELOAD").is_some() {
        src = Box::new(VecSource::new(read_all(src.as_mut())?));
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
