//! Properties: every policy keeps its invariants when driving whole levels.

use super::*;

// ---------------------------------------------------------------------------------------------------------
// Properties

#[derive(Clone, Copy, Debug)]
enum Which {
    Clock { bits: u8, insert_ref: u8 },
    Arc,
    Mq { life: u64 },
    TwoQ { ghost: bool },
}

fn any_policy() -> impl Strategy<Value = Which> {
    prop_oneof![
        (1u8..=3, 0u8..=2).prop_map(|(bits, insert_ref)| Which::Clock { bits, insert_ref }),
        Just(Which::Arc),
        (1u64..=20).prop_map(|life| Which::Mq { life }),
        any::<bool>().prop_map(|ghost| Which::TwoQ { ghost }),
    ]
}

fn any_options() -> impl Strategy<Value = LevelOptions> {
    (0u8..=2, any::<bool>(), any::<bool>()).prop_map(|(chances, stay, lru)| LevelOptions {
        pf_second_chance: chances,
        first_hit: if stay { FirstHit::Stay } else { FirstHit::Promote },
        pf_insert: if lru { Placement::Lru } else { Placement::Default },
        ..LevelOptions::default()
    })
}

fn build(which: Which, c: usize, opts: LevelOptions, pf: Box<dyn Prefetcher>) -> Box<dyn AnyLevel> {
    let e = PolicyEnv { capacity: c, first_hit: opts.first_hit };
    match which {
        Which::Clock { bits, insert_ref } => {
            Box::new(Level::new(c, Clock::new(&e, ClockParams { bits, insert_ref }), pf, opts))
        }
        Which::Arc => Box::new(Level::new(c, Arc::new(&e, ArcParams::default()), pf, opts)),
        Which::Mq { life } => {
            Box::new(Level::new(c, Mq::new(&e, MqParams { life_time: Some(life), ..MqParams::default() }), pf, opts))
        }
        Which::TwoQ { ghost } => Box::new(Level::new(
            c,
            TwoQ::new(&e, TwoQParams { ghost_prefetched_unused: ghost, ..TwoQParams::default() }),
            pf,
            opts,
        )),
    }
}

fn drive(l: &mut dyn AnyLevel, reqs: &[(u64, u32)]) -> Result<(), TestCaseError> {
    let mut out: Vec<Fetch> = Vec::new();
    let mut demand = 0u64;
    for &(first, len) in reqs {
        l.access(&Request::read(first, len), len, &mut out);
        demand += u64::from(len);
        l.check_invariants().map_err(TestCaseError::fail)?;
        prop_assert!(l.len() <= l.capacity());
        let c = l.counters();
        prop_assert_eq!(c.hits + c.misses, c.demand_accesses);
        prop_assert_eq!(c.demand_accesses, demand);
    }
    l.finish();
    prop_assert!(l.counters().prefetch_conserved(), "{:?}", l.counters());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn policies_keep_invariants_on_random_single_block_streams(
        which in any_policy(),
        c in 1usize..=12,
        blocks in prop::collection::vec(0u64..40, 1..300),
    ) {
        let mut l = build(which, c, LevelOptions::default(), Box::new(NoPrefetch));
        let reqs: Vec<(u64, u32)> = blocks.iter().map(|&b| (b, 1)).collect();
        drive(l.as_mut(), &reqs)?;
    }

    #[test]
    fn policies_keep_invariants_and_conserve_prefetches_with_obl(
        which in any_policy(),
        c in 1usize..=12,
        opts in any_options(),
        reqs in prop::collection::vec((0u64..40, 1u32..=3), 1..300),
    ) {
        let mut l = build(which, c, opts, Box::new(Obl::new(Default::default())));
        drive(l.as_mut(), &reqs)?;
        prop_assert!(l.counters().prefetch_issued > 0 || reqs.len() < 2 || c < 2);
    }

    #[test]
    fn policies_keep_invariants_under_pins_removals_and_demotions(
        which in any_policy(),
        c in 1usize..=8,
        ops in prop::collection::vec((0u8..6, 0u64..24), 1..300),
    ) {
        fn run<P: Policy>(d: &mut Drive<P>, ops: &[(u8, u64)]) {
            for &(op, b) in ops {
                match op {
                    0 | 1 => { d.demand(b); }
                    2 => d.prefetch(b),
                    3 => if d.table.contains(b) { let p = !d.table.lookup(b).unwrap().pinned(); d.pin(b, p) },
                    4 => d.remove(b),
                    _ => d.demote(b),
                }
            }
        }
        let e = env(c);
        match which {
            Which::Clock { bits, insert_ref } => run(&mut Drive::new(c, Clock::new(&e, ClockParams { bits, insert_ref })), &ops),
            Which::Arc => run(&mut Drive::new(c, Arc::new(&e, ArcParams::default())), &ops),
            Which::Mq { life } => run(&mut Drive::new(c, Mq::new(&e, MqParams { life_time: Some(life), ..MqParams::default() })), &ops),
            Which::TwoQ { ghost } => run(&mut Drive::new(c, TwoQ::new(&e, TwoQParams { ghost_prefetched_unused: ghost, ..TwoQParams::default() })), &ops),
        }
    }
}
