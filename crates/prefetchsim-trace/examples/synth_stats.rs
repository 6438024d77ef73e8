//! Statistics and generation speed of a synthetic workload: the calibration aid for the presets' random
//! shares (PFC §4.2) and the Split mixes (Split §4). Run it in release for meaningful speeds:
//!
//! ```text
//! cargo run --release -p prefetchsim-trace --example synth_stats -- oltp-like '{"seed": 2}' 32
//! ```
//!
//! Arguments: generator name, parameters as a JSON object (default `{}`), random-rule window (default 32)
//! or `speed` to time the generation alone.

use std::time::Instant;

use prefetchsim_trace::stats::{RandomRule, TraceStats};
use prefetchsim_trace::synth;
use serde_json::{Map, Value};

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args: Vec<String> = std::env::args().collect();
    let Some(name) = args.get(1) else {
        eprintln!("usage: synth_stats GENERATOR [PARAMS_JSON] [WINDOW]; generators: {}", synth::choices());
        std::process::exit(2);
    };
    let params: Map<String, Value> = serde_json::from_str(args.get(2).map_or("{}", String::as_str))?;
    let speed_only = args.get(3).is_some_and(|s| s == "speed");
    let window: u32 = if speed_only { 32 } else { args.get(3).map_or(Ok(32), |s| s.parse())? };
    let block_size = 4096;

    // Generation alone, in the engine's batch size.
    let mut src = synth::open(name, &params, block_size)?;
    let mut buf = Vec::with_capacity(4096);
    let (t, mut n) = (Instant::now(), 0u64);
    loop {
        buf.clear();
        let k = src.fill(&mut buf, 4096)?;
        if k == 0 {
            break;
        }
        n += k as u64;
    }
    let secs = t.elapsed().as_secs_f64();
    eprintln!("{name}: {n} requests generated in {secs:.3} s ({:.1} M requests/s)", n as f64 / secs / 1e6);
    if speed_only {
        return Ok(());
    }

    let mut src = synth::open(name, &params, block_size)?;
    let s = TraceStats::compute(&mut *src, block_size, RandomRule { window, gap: 0 })?;
    println!("{}", serde_json::to_string_pretty(&s)?);
    Ok(())
}
