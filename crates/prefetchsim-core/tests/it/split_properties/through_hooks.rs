//! StreamLRU and SplitLRU through the policy hooks alone, with pins, demotions, second chances and removals.

use super::*;

// ---------------------------------------------------------------------------------------------------
// 2. Through the policy hooks

#[derive(Clone, Copy, Debug)]
enum Op {
    Insert { block: u8, stream: u8, prefetch: bool, rank: u8, chain: bool, placement: u8 },
    Hit { pick: u8, consume: bool },
    Remove(u8),
    Demote(u8),
    Cached { pick: u8, rank: u8 },
    Pin(u8),
    Evict { second_chance: bool },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..40, 0u8..4, any::<bool>(), 0u8..4, any::<bool>(), 0u8..5).prop_map(
            |(block, stream, prefetch, rank, chain, placement)| Op::Insert { block, stream, prefetch, rank, chain, placement }
        ),
        3 => (any::<u8>(), any::<bool>()).prop_map(|(pick, consume)| Op::Hit { pick, consume }),
        1 => any::<u8>().prop_map(Op::Remove),
        1 => any::<u8>().prop_map(Op::Demote),
        1 => (any::<u8>(), 0u8..3).prop_map(|(pick, rank)| Op::Cached { pick, rank }),
        1 => any::<u8>().prop_map(Op::Pin),
        1 => any::<bool>().prop_map(|second_chance| Op::Evict { second_chance }),
    ]
}

/// The `pick`-th resident slot (in slot order), among unpinned ones if `unpinned`.
fn pick_slot(t: &BlockTable, pick: u8, unpinned: bool) -> Option<Slot> {
    let slots: Vec<Slot> = t.iter().filter(|(_, e)| !unpinned || !e.pinned()).map(|(s, _)| s).collect();
    (!slots.is_empty()).then(|| slots[pick as usize % slots.len()])
}

/// Ask for a victim: it must be unpinned, and there is none only when every resident block is pinned.
fn evict<P: Policy>(p: &mut P, t: &mut BlockTable, second_chance: bool) -> Result<bool, TestCaseError> {
    match p.victim(t) {
        Some(s) => {
            prop_assert!(t.is_occupied(s) && !t.entry(s).pinned(), "victim {} pinned or free", s);
            if second_chance && t.entry(s).unused_prefetch() {
                p.on_insert(s, t, &Insert::second_chance());
            } else {
                p.on_evicted(s, t);
                t.remove(s);
            }
            Ok(true)
        }
        None => {
            prop_assert!(t.iter().all(|(_, e)| e.pinned()), "no victim while an unpinned block is resident");
            Ok(false)
        }
    }
}

fn drive_hooks<P: Policy>(mut p: P, cap: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut t = BlockTable::with_capacity(cap);
    let mut last: Option<(Slot, u64)> = None;
    for (i, &op) in ops.iter().enumerate() {
        match op {
            Op::Insert { block, stream, prefetch, rank, chain, placement: pl } => {
                let block = u64::from(block);
                if t.contains(block) {
                    continue;
                }
                while t.len() >= cap {
                    if !evict(&mut p, &mut t, false)? {
                        break;
                    }
                }
                if t.len() >= cap {
                    continue;
                }
                let origin = if prefetch { Origin::Prefetch } else { Origin::Demand };
                p.on_miss(block, origin, &t);
                let f = if prefetch { flags::PREFETCHED } else { flags::ACCESSED };
                let s = t.insert(block, u32::from(stream), f);
                let after = last
                    .filter(|&(ls, lb)| chain && ls != s && t.is_occupied(ls) && t.entry(ls).block == lb)
                    .map(|(ls, _)| ls);
                let how = if prefetch {
                    Insert::prefetch(u32::from(rank), after, placement(pl))
                } else {
                    Insert { placement: placement(pl), ..Insert::demand() }
                };
                p.on_insert(s, &t, &how);
                last = Some((s, block));
            }
            Op::Hit { pick, consume } => {
                if let Some(s) = pick_slot(&t, pick, true) {
                    let first = t.entry(s).unused_prefetch();
                    p.on_hit(s, &t, first);
                    t.entry_mut(s).flags |= flags::ACCESSED;
                    if consume {
                        p.on_remove(s, &t);
                        t.remove(s);
                    }
                }
            }
            Op::Remove(pick) => {
                if let Some(s) = pick_slot(&t, pick, false) {
                    p.on_remove(s, &t);
                    t.remove(s);
                }
            }
            Op::Demote(pick) => {
                if let Some(s) = pick_slot(&t, pick, false) {
                    p.demote(s, &t);
                }
            }
            Op::Cached { pick, rank } => {
                if let Some(s) = pick_slot(&t, pick, false) {
                    p.on_prefetch_cached(s, &t, u32::from(rank));
                }
            }
            Op::Pin(pick) => {
                if let Some(s) = pick_slot(&t, pick, false) {
                    let on = !t.entry(s).pinned();
                    t.set_pinned(s, on);
                }
            }
            Op::Evict { second_chance } => {
                evict(&mut p, &mut t, second_chance)?;
            }
        }
        p.check(&t).map_err(|e| TestCaseError::fail(format!("op {i} {op:?}: {e}")))?;
        prop_assert!(t.len() <= cap);
    }
    // Drain: with everything unpinned, every block can be evicted, one at a time.
    let pinned: Vec<Slot> = t.iter().filter(|(_, e)| e.pinned()).map(|(s, _)| s).collect();
    for s in pinned {
        t.set_pinned(s, false);
    }
    while !t.is_empty() {
        prop_assert!(evict(&mut p, &mut t, false)?);
        p.check(&t).map_err(TestCaseError::fail)?;
    }
    prop_assert!(p.victim(&t).is_none());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn stream_lru_hooks_keep_invariants(
        cap in 1usize..16, stay: bool, zero_random: bool, ops in prop::collection::vec(op(), 1..200)
    ) {
        let p = StreamLru::new(&env(cap, stay), StreamLruParams { stream_zero_is_random: Some(zero_random) });
        drive_hooks(p, cap, &ops)?;
    }

    #[test]
    fn split_lru_hooks_keep_invariants(
        cap in 1usize..16, stay: bool, r in 0.0f64..=1.0, ops in prop::collection::vec(op(), 1..200)
    ) {
        drive_hooks(SplitLru::new(&env(cap, stay), SplitLruParams::with_up_ratio(r)), cap, &ops)?;
    }
}
