//! Time of the exact LRU curve, SHARDS and one LRU run on a trace decoded into memory first, so that the
//! times are the methods' own work without the reading every method pays once (docs/mrc.md).
//!
//! `cargo run --release -p prefetchsim-trace --example mrc_speed -- TRACE FORMAT [RATE] [REPEAT]`
//!
//! Prints, for each method, the median seconds over REPEAT (default 5) runs: `exact`, `shards` at RATE
//! (default 0.01, SHARDS_adj, seed 0), `lru` at 10% of the footprint (the engine's LRU), `read` (decoding).

use std::time::Instant;

use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{run_instant, Hierarchy, Silent, VecSource};
use prefetchsim_core::mrc::{self, ShardsConfig};
use prefetchsim_core::Request;
use prefetchsim_trace::TraceSpec;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn timed<T>(f: impl FnOnce() -> Res<T>) -> Res<(T, f64)> {
    let t = Instant::now();
    let out = f()?;
    Ok((out, t.elapsed().as_secs_f64()))
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        return Err("usage: mrc_speed TRACE FORMAT [RATE] [REPEAT]".into());
    }
    let rate: f64 = args.get(3).map_or(Ok(0.01), |s| s.parse())?;
    let repeat: usize = args.get(4).map_or(Ok(5), |s| s.parse())?;
    let spec = TraceSpec::with_format(&args[1], &args[2]);
    let read = |_: ()| -> Res<Vec<Request>> {
        let mut src = spec.open()?;
        let mut reqs = Vec::new();
        while src.fill(&mut reqs, 1 << 16)? > 0 {}
        Ok(reqs)
    };
    let (reqs, _) = timed(|| read(()))?;
    let curve = |cfg: ShardsConfig| -> Res<f64> {
        let (h, _) = mrc::histogram(&mut VecSource::new(reqs.clone()), cfg, &mut |_| true)?;
        Ok(h.footprint())
    };
    let footprint = curve(ShardsConfig::exact())?;
    let size = ((footprint * 0.1).round() as u64).max(1);
    let cfg = HierarchyConfig::from_toml(&format!("[[level]]\nsize = {size}\npolicy = 'lru'\n"))?;
    let (mut t_read, mut t_exact, mut t_shards, mut t_lru) = (vec![], vec![], vec![], vec![]);
    for _ in 0..repeat {
        t_read.push(timed(|| read(()))?.1);
        // The copy of the requests is outside the timed part of every method.
        let mut src = VecSource::new(reqs.clone());
        t_exact.push(timed(|| mrc::histogram(&mut src, ShardsConfig::exact(), &mut |_| true))?.1);
        let mut src = VecSource::new(reqs.clone());
        t_shards.push(timed(|| mrc::histogram(&mut src, ShardsConfig::fixed_rate(rate), &mut |_| true))?.1);
        let mut src = VecSource::new(reqs.clone());
        let mut h = Hierarchy::build(&cfg, spec.block_size, None)?;
        t_lru.push(timed(|| run_instant(&mut src, &mut h, &cfg.engine, &mut Silent))?.1);
    }
    let (e, s, l, r) = (median(t_exact), median(t_shards), median(t_lru), median(t_read));
    println!(
        "{} requests, footprint {footprint}: read {r:.3} s, exact {e:.3} s, shards({rate}) {s:.3} s, \
         lru({size}) {l:.3} s; exact/lru {:.2}, exact/shards {:.1}",
        reqs.len(),
        e / l,
        e / s
    );
    Ok(())
}
