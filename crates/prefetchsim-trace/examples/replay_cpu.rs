//! Replay a trace REPS times in one process and print the CPU time of `run_instant` summed over the runs,
//! in seconds: the A/B measure of docs/prefetcher-speed.md round 4.
//!
//! `replay_cpu TRACE FORMAT POLICY[+PREFETCHER] BLOCKS REPS`
//!
//! The trace is decoded once, before any timing. The CPU time is the thread's, read from Linux's
//! `/proc/thread-self/schedstat`; where that advances in scheduler ticks (4 ms on the machine of round 4),
//! REPS makes each process's total long enough for the tick not to matter. `replay`'s printed time is
//! wall-clock time in milliseconds, too coarse for runs of 35 ms.
use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{run_instant, Hierarchy, Silent, VecSource};
use prefetchsim_trace::TraceSpec;

/// CPU time this thread has run, in ns.
fn cpu_ns() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    s.split_whitespace().next().unwrap().parse().unwrap()
}

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 6 {
        return Err("usage: replay_cpu TRACE FORMAT POLICY[+PREFETCHER] BLOCKS REPS".into());
    }
    let (policy, prefetcher) = args[3].split_once('+').unwrap_or((&args[3], "none"));
    let prefetcher =
        if prefetcher.trim_start().starts_with('{') { prefetcher.to_string() } else { format!("'{prefetcher}'") };
    let cfg = HierarchyConfig::from_toml(&format!(
        "[[level]]\nsize = {}\npolicy = '{policy}'\nprefetcher = {prefetcher}\n",
        args[4]
    ))?;
    let reps: usize = args[5].parse()?;
    let spec = TraceSpec::with_format(&args[1], &args[2]);
    let mut src = spec.open()?;
    let mut reqs = Vec::new();
    while src.fill(&mut reqs, 1 << 16)? > 0 {}
    let mut total = 0u64;
    for _ in 0..reps {
        let mut h = Hierarchy::build(&cfg, spec.block_size, None)?;
        let mut s = VecSource::new(reqs.clone());
        let t = cpu_ns();
        let r = run_instant(&mut s, &mut h, &cfg.engine, &mut Silent)?;
        total += cpu_ns() - t;
        std::hint::black_box(r);
    }
    println!("{:.6}", total as f64 / 1e9);
    Ok(())
}
