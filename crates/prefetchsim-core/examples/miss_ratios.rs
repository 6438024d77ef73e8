//! Miss ratios of replacement policies on a stream of block ids, one level, no prefetching: the Rust side of
//! a differential check against another simulator fed the same ids.
//!
//! ```text
//! cargo run --release -p prefetchsim-core --example miss_ratios -- IDS SIZES [POLICY[=JSON]]...
//! ```
//! `IDS` is a text file with one decimal id per line (or `-` for the file named by `PREFETCHSIM_IDS`);
//! `SIZES` a comma list of capacities in blocks; each `POLICY` a registered name, optionally with its
//! parameters as a JSON object (`mq={"life_time":10000}`). Default policies: lru, fifo, clock, arc, mq, 2q.
//! Prints one tab-separated line per policy and size: policy, size, requests, misses, miss ratio.

use std::error::Error;

use prefetchsim_core::build::build_level;
use prefetchsim_core::component::ComponentSpec;
use prefetchsim_core::prefetch::none::NoPrefetch;
use prefetchsim_core::{LevelOptions, Request};

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: miss_ratios IDS SIZES [POLICY[=JSON]]...";
    let (Some(path), Some(sizes)) = (args.first(), args.get(1)) else {
        return Err(usage.into());
    };
    let path = if path == "-" { std::env::var("PREFETCHSIM_IDS")? } else { path.clone() };
    let ids: Vec<u64> = std::fs::read_to_string(&path)?.split_whitespace().map(str::parse).collect::<Result<_, _>>()?;
    let sizes: Vec<usize> = sizes.split(',').map(str::parse).collect::<Result<_, _>>()?;
    let defaults = ["lru", "fifo", "clock", "arc", "mq", "2q"].map(String::from);
    let policies = if args.len() > 2 { &args[2..] } else { &defaults[..] };

    let mut out = Vec::new();
    for policy in policies {
        let (name, params) = policy.split_once('=').unwrap_or((policy, "{}"));
        let mut spec = ComponentSpec::named(name);
        spec.params = serde_json::from_str(params)?;
        for &size in &sizes {
            let (_, mut level) = build_level(name, &spec, size, LevelOptions::default(), Box::new(NoPrefetch))?;
            for &id in &ids {
                level.access(&Request::read(id, 1), 1, &mut out);
                out.clear();
            }
            let c = level.counters();
            let ratio = c.misses as f64 / c.demand_accesses.max(1) as f64;
            println!("{policy}\t{size}\t{}\t{}\t{ratio:.6}", c.demand_accesses, c.misses);
        }
    }
    Ok(())
}
