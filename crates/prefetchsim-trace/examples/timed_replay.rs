//! Replay a trace through a timed two-level hierarchy and print the speed (trace requests per second of
//! wall time, decoding included) and the response-time summary: the timed engine's speed check.
//!
//! `cargo run --release -p prefetchsim-trace --example timed_replay -- TRACE FORMAT [PREFETCHER] [REPLAY] [DEVICE]`
//!
//! L1 = 5% of the footprint, L2 = 2x L1, both LRU with PREFETCHER (default `obl` with `variant =
//! "always"`, a one-block read-ahead), PFC's link (6 ms + 0.03 ms/page), Cheetah 9LP under DEADLINE.
//! With `REPEAT=n` in the environment the run is repeated and the best wall time is reported.
//! DEVICE is a device preset (default `cheetah9lp`). REPLAY is `closed` (default: one loop, one request outstanding, no think time) or `open`
//! (timestamps, or all at once for traces without time) or `closedN` (N outstanding), or `instant` (the
//! same hierarchy in the instant engine, for comparison).

use std::time::Instant;

use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{Hierarchy, Silent};
use prefetchsim_core::run::run_timed;
use prefetchsim_trace::{stats, TraceSpec};

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        return Err("usage: timed_replay TRACE FORMAT [PREFETCHER] [closed|closedN|open|instant] [DEVICE]".into());
    }
    let pf = args.get(3).map_or("{ name = 'obl', variant = 'always' }".to_string(), |p| {
        if p.starts_with('{') {
            p.clone()
        } else {
            format!("'{p}'")
        }
    });
    let replay = args.get(4).map_or("closed", String::as_str);
    let dev = args.get(5).map_or("cheetah9lp", String::as_str);
    if replay == "instant" {
        // The same hierarchy in the instant engine, for comparison.
        let cfg = HierarchyConfig::from_toml(&format!(
            "[[level]]\nsize = '5%'\npolicy = 'lru'\nprefetcher = {pf}\n\
             [[level]]\nsize = '2x'\npolicy = 'lru'\nprefetcher = {pf}\n"
        ))?;
        let spec = TraceSpec::with_format(&args[1], &args[2]);
        let fp = stats::footprint(spec.open()?.as_mut(), &|| false)?;
        let repeat: usize = std::env::var("REPEAT").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
        let (mut dt, mut r) = (f64::INFINITY, None);
        for _ in 0..repeat.max(1) {
            let mut h = Hierarchy::build(&cfg, spec.block_size, Some(fp))?;
            let mut src = spec.open()?;
            let t0 = Instant::now();
            r = Some(prefetchsim_core::engine::run_instant(src.as_mut(), &mut h, &cfg.engine, &mut Silent)?);
            dt = dt.min(t0.elapsed().as_secs_f64());
        }
        let r = r.ok_or("no run")?;
        println!(
            "instant: {} requests, {:.3} s wall, {:.2} M requests/s",
            r.requests,
            dt,
            r.requests as f64 / dt / 1e6
        );
        return Ok(());
    }
    let engine = match replay {
        "open" => "replay = 'open'".to_string(),
        "closed" => "replay = 'closed'\nper_stream = false\nthink = 'none'".to_string(),
        r if r.starts_with("closed") => {
            format!("replay = 'closed'\nper_stream = false\nthink = 'none'\niodepth = {}", &r[6..])
        }
        r => return Err(format!("unknown replay {r}").into()),
    };
    let cfg = HierarchyConfig::from_toml(&format!(
        "[[level]]\nsize = '5%'\npolicy = 'lru'\nprefetcher = {pf}\n\
         [[level]]\nsize = '2x'\npolicy = 'lru'\nprefetcher = {pf}\n\
         [engine]\nkind = 'timed'\n{engine}\n\
         [device]\nname = '{dev}'\n[scheduler]\npolicy = 'deadline'\n"
    ))?;
    let spec = TraceSpec::with_format(&args[1], &args[2]);
    let fp = stats::footprint(spec.open()?.as_mut(), &|| false)?;
    // Best of REPEAT runs (default 1): the machine may be shared.
    let repeat: usize = std::env::var("REPEAT").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let mut best = f64::INFINITY;
    let mut result = None;
    for _ in 0..repeat.max(1) {
        let mut h = Hierarchy::build(&cfg, spec.block_size, Some(fp))?;
        let mut src = spec.open()?;
        let t0 = Instant::now();
        let r = run_timed(src.as_mut(), &mut h, &cfg, &mut Silent)?;
        best = best.min(t0.elapsed().as_secs_f64());
        result = Some(r);
    }
    let (r, dt) = (result.ok_or("no run")?, best);
    let t = r.timing.as_ref().ok_or("no timing")?;
    println!(
        "{} requests ({} blocks), footprint {fp} blocks, L1 {} / L2 {} blocks: {:.3} s wall, {:.2} M requests/s",
        r.requests,
        r.blocks,
        r.levels[0].capacity_blocks,
        r.levels[1].capacity_blocks,
        dt,
        r.requests as f64 / dt / 1e6
    );
    for l in &r.levels {
        let c = &l.counters;
        println!(
            "  {}: hit ratio {:.4}, misses {}, prefetch issued {} used {} late {}, joins {}, fetches {}",
            l.name,
            c.hit_ratio(),
            c.misses,
            c.prefetch_issued,
            c.prefetch_used,
            c.late_prefetch,
            c.inflight_demand_joins,
            c.fetches
        );
    }
    println!(
        "  response time ms: mean {:.3}  p50 {:.3}  p95 {:.3}  p99 {:.3}  max {:.3}",
        t.reads.mean_ms, t.reads.p50_ms, t.reads.p95_ms, t.reads.p99_ms, t.reads.max_ms
    );
    let d = &t.device;
    println!(
        "  device: {} requests (demand {}, prefetch {}, mixed {}), {} sectors, mean service {:.3} ms, \
         utilisation {:.3}; scheduler queue mean {:.3} max {}; makespan {:.1} s",
        d.requests(),
        d.requests_demand,
        d.requests_prefetch,
        d.requests_mixed,
        d.sectors(),
        d.service_ns as f64 / d.requests().max(1) as f64 / 1e6,
        d.busy_ns as f64 / (t.end_ns - t.start_ns).max(1) as f64,
        d.queue_mean,
        d.queue_max,
        t.makespan_ns as f64 / 1e9
    );
    Ok(())
}
