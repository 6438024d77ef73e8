//! The size families' own work (docs/decode-once.md): one pass of 16 sizes in blocks of a plain LRU, FIFO
//! or CLOCK level against one engine run at the largest size, both over a trace decoded into memory first,
//! so that neither pays the reading (what `benches/decode_once.py --blocks` measures whole).
//!
//! `cargo run --release -p prefetchsim-trace --example family_speed -- TRACE FORMAT POLICY [REPEAT]`
//!
//! Sizes are 0.625% to 10% of the footprint in 16 steps, rounded down. Prints the medians (min-max) of
//! REPEAT (default 9) alternating runs, in thread CPU seconds, and their ratio.

use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{run_instant, Hierarchy, Silent, VecSource};
use prefetchsim_core::mrc::{self, family, ShardsConfig};
use prefetchsim_trace::TraceSpec;

#[path = "common/speed.rs"]
mod speed;
use speed::{median, read_all, stats, thread_cpu};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        return Err("usage: family_speed TRACE FORMAT POLICY [REPEAT]".into());
    }
    let repeat: usize = args.get(4).map_or(Ok(9), |s| s.parse())?;
    let spec = TraceSpec::with_format(&args[1], &args[2]);
    let reqs = read_all(spec.open()?.as_mut())?;
    let footprint = mrc::histogram_of(&reqs, ShardsConfig::exact())?.0.footprint();
    let configs: Vec<HierarchyConfig> = (1..=16)
        .map(|i| {
            let size = ((footprint * 0.1 * f64::from(i) / 16.0) as u64).max(1);
            HierarchyConfig::from_toml(&format!("[[level]]\nsize = {size}\npolicy = '{}'\n", args[3]))
        })
        .collect::<Result<_, _>>()?;
    let (mut t_pass, mut t_run) = (vec![], vec![]);
    let mut check = 0u64;
    for _ in 0..repeat {
        let mut vs = VecSource::new(reqs.clone());
        let c = thread_cpu();
        let out = family::precompute(&configs, spec.block_size, None, &mut vs)?;
        t_pass.push(thread_cpu() - c);
        check = out.iter().flatten().map(|p| p.counters.hits).sum();
        assert!(out.iter().all(Option::is_some), "the pass left a size to the engine");
        let cfg = &configs[15];
        let mut vs = VecSource::new(reqs.clone());
        let mut h = Hierarchy::build(cfg, spec.block_size, None)?;
        let c = thread_cpu();
        run_instant(&mut vs, &mut h, &cfg.engine, &mut Silent)?;
        t_run.push(thread_cpu() - c);
    }
    println!(
        "{} requests, footprint {footprint}, {} x16 pass {}, one run {}; ratio {:.2} (hits summed {check})",
        reqs.len(),
        args[3],
        stats(&t_pass),
        stats(&t_run),
        median(t_pass.clone()) / median(t_run.clone())
    );
    Ok(())
}
