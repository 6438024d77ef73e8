//! Acceptance: prefetch-hit share on a sequential stream, waste on random traffic against RA(4).

use super::*;

// ---------------------------------------------------------------------------------------------------------
// Acceptance: prefetch-hit share on a sequential stream, waste on random traffic

fn run_config(toml: &str, reqs: Vec<Request>) -> prefetchsim_core::metrics::LevelCounters {
    let cfg = HierarchyConfig::from_toml(toml).unwrap();
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    let r = run_instant(&mut VecSource::new(reqs), &mut h, &cfg.engine, &mut Silent).unwrap();
    r.levels[0].counters.clone()
}

const SARC_TOML: &str = "policy = 'sarc'\nprefetcher = 'sarc'\n";
const AMP_TOML: &str = "prefetcher = 'amp'\n";

fn sequential(n: u64, len: u32) -> Vec<Request> {
    (0..n).map(|i| Request::read(i * u64::from(len), len)).collect()
}

fn share(c: &prefetchsim_core::metrics::LevelCounters) -> f64 {
    c.prefetch_hits as f64 / c.demand_accesses as f64
}

#[test]
fn sarc_and_amp_serve_a_warm_sequential_stream_from_prefetches() {
    // SARC's degree is fixed (u = 8): requests up to u blocks. AMP's grows with the read size.
    for (name, pf, lens) in [("SARC", SARC_TOML, &[1u32, 4, 8][..]), ("AMP", AMP_TOML, &[1, 4, 8, 16, 64][..])] {
        for &len in lens {
            let toml = format!("[[level]]\nsize = 1000\n{pf}[engine]\nwarmup_requests = 1000\n");
            let c = run_config(&toml, sequential(20_000, len));
            let s = share(&c);
            println!(
                "{name}, requests of {len} blocks: prefetch-hit share {s:.4} ({} of {})",
                c.prefetch_hits, c.demand_accesses
            );
            assert!(s > 0.9, "{name} len {len}: share {s}");
        }
    }
}

#[test]
fn sarc_with_a_degree_below_the_request_size_misses_the_rest_of_each_request() {
    // u = 8, requests of 16: the trigger fires inside the request, but the blocks past the group are
    // demanded by that same request and come with its demand I/O: half of every request misses.
    let toml = "[[level]]\nsize = 1000\npolicy = 'sarc'\nprefetcher = 'sarc'\n[engine]\nwarmup_requests = 10\n";
    assert_eq!(share(&run_config(toml, sequential(1000, 16))), 0.5);
    // With u = 16 the next group is always ahead.
    let toml = toml.replace("prefetcher = 'sarc'", "prefetcher = { name = 'sarc', u = 16 }");
    assert_eq!(share(&run_config(&toml, sequential(1000, 16))), 1.0);
}

/// A uniformly random single-block trace.
fn uniform(n: usize, space: u64, mut seed: u64) -> Vec<Request> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            Request::read(seed % space, 1)
        })
        .collect()
}

#[test]
fn sarc_and_amp_waste_less_than_ra4_on_random_traffic() {
    let reqs = uniform(100_000, 1 << 20, 0x9e37_79b9_7f4a_7c15);
    let base = "[[level]]\nsize = 2000\n";
    let sarc = run_config(&format!("{base}{SARC_TOML}"), reqs.clone());
    let amp = run_config(&format!("{base}{AMP_TOML}"), reqs.clone());
    let env = PolicyEnv { capacity: 2000, first_hit: FirstHit::Promote };
    let mut ra = Level::new(2000, Lru::new(&env), Box::new(RaAlways(4)), LevelOptions::default());
    let mut out = Vec::new();
    for r in &reqs {
        out.clear();
        ra.access(r, r.len, &mut out);
    }
    ra.finish();
    let ra = ra.counters().clone();
    for (name, c) in [("SARC", &sarc), ("AMP", &amp), ("RA(4)", &ra)] {
        println!(
            "{name}: unused prefetch {} (issued {}, used {}), hit ratio {:.4}",
            c.unused_prefetch(),
            c.prefetch_issued,
            c.prefetch_used,
            c.hit_ratio()
        );
        assert!(c.prefetch_conserved());
    }
    assert!(sarc.unused_prefetch() < ra.unused_prefetch());
    assert!(amp.unused_prefetch() < ra.unused_prefetch());
}

#[test]
fn a_prefetch_run_longer_than_the_cache_keeps_the_lists_sound() {
    // Inserting a run's second block evicts its first one, whose slot the new block then reuses: the level
    // must not ask the policy to place the block after itself.
    for cap in 1..4 {
        let env = PolicyEnv { capacity: cap, first_hit: FirstHit::Promote };
        let mut l = Level::new(cap, Lru::new(&env), Box::new(RaAlways(4)), LevelOptions::default());
        for b in [10, 20, 15, 16] {
            read(&mut l, b, 1);
        }
        assert_eq!(l.len(), cap);
    }
}
