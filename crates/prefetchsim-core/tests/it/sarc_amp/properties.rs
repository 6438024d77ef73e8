//! Properties of SARC and AMP over random and mixed workloads.

use super::*;

// ---------------------------------------------------------------------------------------------------------
// Properties

/// Random requests over a small space, or a mix of interleaved sequential runs and random blocks.
fn workload() -> impl Strategy<Value = Vec<Request>> {
    let random = prop::collection::vec((0u64..300, 1u32..6), 1..300)
        .prop_map(|v| v.into_iter().map(|(b, n)| Request::read(b, n)).collect::<Vec<_>>());
    let mixed = prop::collection::vec((0u8..4, 0u64..2000, 1u32..5), 1..300).prop_map(|v| {
        let mut heads = [0u64, 5000, 10_000];
        v.into_iter()
            .map(|(kind, b, n)| {
                if let Some(h) = heads.get_mut(usize::from(kind)) {
                    let r = Request { stream: u32::from(kind), ..Request::read(*h, n) };
                    *h += u64::from(n);
                    r
                } else {
                    Request::read(b, n)
                }
            })
            .collect()
    });
    prop_oneof![random, mixed]
}

fn check_run(
    l: &mut dyn AnyLevel,
    reqs: &[Request],
    extra: &dyn Fn(&dyn AnyLevel) -> Result<(), String>,
) -> Result<(), TestCaseError> {
    let mut out = Vec::new();
    let mut blocks = 0u64;
    for r in reqs {
        out.clear();
        l.access(r, r.len, &mut out);
        blocks += u64::from(r.len);
        prop_assert!(l.len() <= l.capacity());
        l.check_invariants().map_err(TestCaseError::fail)?;
        extra(l).map_err(TestCaseError::fail)?;
        let c = l.counters();
        prop_assert_eq!(c.hits + c.misses, c.demand_accesses);
    }
    l.finish();
    let c = l.counters();
    prop_assert_eq!(c.demand_accesses, blocks);
    prop_assert_eq!(c.hits + c.misses, c.demand_accesses);
    prop_assert!(c.prefetch_hits <= c.hits);
    prop_assert!(c.prefetch_conserved(), "prefetch accounting broken: {c:?}");
    Ok(())
}

proptest! {
    #[test]
    fn sarc_keeps_its_lists_counts_and_prefetch_accounting(
        reqs in workload(),
        cap in 1usize..80,
        delta_l in prop::option::of(1u64..10),
        exact in any::<bool>(),
        current in any::<bool>(),
        stay in any::<bool>(),
        lru_insert in any::<bool>(),
        chances in 0u8..2,
        u in 1u32..12,
        g in 0u32..12,
        threshold in 1u8..5,
    ) {
        let first_hit = if stay { FirstHit::Stay } else { FirstHit::Promote };
        let params = SarcParams {
            delta_l,
            bottom_mode: if exact { BottomMode::Exact } else { BottomMode::Timestamp },
            init_desired: if current { InitDesired::CurrentSeqSize } else { InitDesired::Zero },
            ..SarcParams::default()
        };
        let pf = SarcPrefetchParams { degree: u, trigger_distance: Some(g % u), seq_threshold: threshold };
        let env = PolicyEnv { capacity: cap, first_hit };
        let opts = LevelOptions {
            first_hit,
            pf_second_chance: chances,
            pf_insert: if lru_insert { Placement::Lru } else { Placement::Default },
            ..LevelOptions::default()
        };
        let shared = Arc::new(Mutex::new(SarcPrefetcher::new(pf)));
        let mut l = Level::new(cap, Sarc::new(&env, params), Box::new(Shared(shared.clone())), opts);
        let triggers_resident = move |l: &dyn AnyLevel| {
            match shared.lock().unwrap().triggers().into_iter().find(|&b| !l.contains(b)) {
                Some(b) => Err(format!("trigger {b} is not resident")),
                None => Ok(()),
            }
        };
        check_run(&mut l, &reqs, &triggers_resident)?;
    }

    #[test]
    fn amp_keeps_counts_prefetch_accounting_and_metadata_of_resident_pages_only(
        reqs in workload(),
        cap in 1usize..80,
        apt in 0u32..6,
        p_max in 1u32..40,
        k in 1u32..3,
        p_init in prop::option::of(1u32..10),
        stay in any::<bool>(),
    ) {
        let params = AmpParams { apt, p_max, k, p_init, first_hit_stay: stay };
        let mut amp = Amp::new(params);
        let first_hit = amp.attach(prefetchsim_core::prefetch::LevelGeometry { capacity: cap, block_bytes: 4096 }).first_hit.unwrap_or_default();
        let env = PolicyEnv { capacity: cap, first_hit };
        let opts = LevelOptions { first_hit, ..LevelOptions::default() };
        let shared = Arc::new(Mutex::new(amp));
        let mut l = Level::new(cap, Lru::new(&env), Box::new(Shared(shared.clone())), opts);
        let meta_ok = move |l: &dyn AnyLevel| {
            let a = shared.lock().unwrap();
            let tracked = a.tracked_pages();
            if let Some(b) = tracked.iter().find(|&&b| !l.contains(b)) {
                return Err(format!("metadata kept for page {b}, which is not cached"));
            }
            // The reported size counts what is tracked (evictions AMP has not processed yet excluded):
            // 40 bytes per group of 8 pages with words, 24 per page with stream values.
            let mut groups: Vec<u64> = tracked.iter().map(|b| b >> 3).collect();
            groups.dedup();
            let heads = tracked.iter().filter(|&&b| (a.meta(b).p, a.meta(b).g, a.meta(b).late) != (0, None, false));
            let want = 40 * groups.len() as u64 + 24 * heads.count() as u64;
            if a.metadata_bytes() != want {
                return Err(format!("metadata_bytes {} but {want} tracked", a.metadata_bytes()));
            }
            for b in l.resident_blocks() {
                let m = a.meta(b);
                if m.p > p_max {
                    return Err(format!("p {} of page {b} above p_max {p_max}", m.p));
                }
                if let Some(g) = m.g {
                    if m.last == b && g >= m.p.max(1) {
                        return Err(format!("g {g} of page {b} not below p {}", m.p));
                    }
                }
            }
            Ok(())
        };
        check_run(&mut l, &reqs, &meta_ok)?;
    }

    #[test]
    fn sarc_without_prefetching_equals_lru(reqs in workload(), cap in 1usize..60) {
        let env = PolicyEnv { capacity: cap, first_hit: FirstHit::Promote };
        let mut a = Level::new(cap, Sarc::new(&env, SarcParams::default()), Box::new(NoPrefetch), LevelOptions::default());
        let mut b = Level::new(cap, Lru::new(&env), Box::new(NoPrefetch), LevelOptions::default());
        let mut out = Vec::new();
        for r in &reqs {
            a.access(r, r.len, &mut out);
            b.access(r, r.len, &mut out);
            out.clear();
        }
        prop_assert_eq!(a.counters(), b.counters());
        prop_assert_eq!(random(&a), b.policy().queue(b.table()));
    }
}

#[test]
fn outcomes_other_than_miss_are_cached() {
    // The prefetchers treat every outcome but `Miss` as a cached block (a wait on an in-flight block
    // included); this pins the enum they rely on.
    assert!([Outcome::Hit, Outcome::PrefetchHit, Outcome::Pending].iter().all(|o| *o != Outcome::Miss));
}
