//! CLOCK, ARC, MQ and 2Q: hand-worked sequences (derived from the papers' rules, replacement.md §1-4),
//! pinned-entry and prefetch rules, and property tests driving whole levels.

use prefetchsim_core::build::build_level;
use prefetchsim_core::component::ComponentSpec;
use prefetchsim_core::level::{AnyLevel, CacheLevel, Demotion, Level, LevelOptions};
use prefetchsim_core::policy::arc::{Arc, ArcParams};
use prefetchsim_core::policy::clock::{Clock, ClockParams};
use prefetchsim_core::policy::mq::{Mq, MqParams};
use prefetchsim_core::policy::two_q::{TwoQ, TwoQParams};
use prefetchsim_core::policy::{flags, BlockTable, FirstHit, Insert, Origin, Placement, Policy, PolicyEnv, Slot};
use prefetchsim_core::prefetch::none::NoPrefetch;
use prefetchsim_core::prefetch::obl::Obl;
use prefetchsim_core::prefetch::Prefetcher;
use prefetchsim_core::request::{Fetch, Request};
use proptest::prelude::*;

fn env(capacity: usize) -> PolicyEnv {
    PolicyEnv { capacity, first_hit: FirstHit::Promote }
}

fn level<P: Policy>(capacity: usize, policy: P) -> Level<P> {
    let mut l = Level::new(capacity, policy, Box::new(NoPrefetch), LevelOptions::default());
    l.record_evictions(true);
    l
}

fn obl_level<P: Policy>(capacity: usize, policy: P) -> Level<P> {
    let mut l = Level::new(capacity, policy, Box::new(Obl::new(Default::default())), LevelOptions::default());
    l.record_evictions(true);
    l
}

/// One demand read of `block`; returns whether it hit.
fn read<P: Policy>(l: &mut Level<P>, block: u64) -> bool {
    let hits = l.counters().hits;
    let mut out = Vec::new();
    l.access(&Request::read(block, 1), 1, &mut out);
    l.check_invariants().unwrap();
    l.counters().hits > hits
}

// ---------------------------------------------------------------------------------------------------------
// A policy driven hook by hook, as the level drives it, with pins, removals and demotions the instant
// engine never issues.

struct Drive<P: Policy> {
    table: BlockTable,
    policy: P,
    capacity: usize,
}

impl<P: Policy> Drive<P> {
    fn new(capacity: usize, policy: P) -> Self {
        Self { table: BlockTable::with_capacity(capacity), policy, capacity }
    }

    fn check(&self) {
        assert!(self.table.len() <= self.capacity);
        self.policy.check(&self.table).unwrap();
    }

    /// A demand access; returns whether it hit.
    fn demand(&mut self, block: u64) -> bool {
        let hit = match self.table.get(block) {
            Some(s) => {
                let first = self.table.entry(s).unused_prefetch();
                self.policy.on_hit(s, &self.table, first);
                self.table.entry_mut(s).flags |= flags::ACCESSED;
                true
            }
            None => {
                self.admit(block, Origin::Demand);
                false
            }
        };
        self.check();
        hit
    }

    fn prefetch(&mut self, block: u64) {
        if !self.table.contains(block) {
            self.admit(block, Origin::Prefetch);
        }
        self.check();
    }

    /// Insert `block` as the level does; `None` when no victim could be found.
    fn admit(&mut self, block: u64, origin: Origin) -> Option<Slot> {
        self.policy.on_miss(block, origin, &self.table);
        while self.table.len() >= self.capacity {
            let s = self.policy.victim(&self.table)?;
            assert!(!self.table.entry(s).pinned(), "victim is pinned");
            self.policy.on_evicted(s, &self.table);
            self.table.remove(s);
        }
        let (flag, how) = match origin {
            Origin::Demand => (flags::ACCESSED, Insert::demand()),
            Origin::Prefetch => (flags::PREFETCHED, Insert::prefetch(0, None, Placement::Default)),
        };
        let s = self.table.insert(block, 0, flag);
        self.policy.on_insert(s, &self.table, &how);
        Some(s)
    }

    fn pin(&mut self, block: u64, on: bool) {
        let s = self.table.get(block).unwrap();
        let e = self.table.entry_mut(s);
        if on {
            e.flags |= flags::PINNED;
        } else {
            e.flags &= !flags::PINNED;
        }
    }

    fn remove(&mut self, block: u64) {
        if let Some(s) = self.table.get(block) {
            self.policy.on_remove(s, &self.table);
            self.table.remove(s);
        }
        self.check();
    }

    fn demote(&mut self, block: u64) {
        if let Some(s) = self.table.get(block) {
            self.policy.demote(s, &self.table);
        }
        self.check();
    }

    fn resident(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.table.iter().map(|(_, e)| e.block).collect();
        v.sort_unstable();
        v
    }
}

// ---------------------------------------------------------------------------------------------------------
// CLOCK

#[test]
fn clock_gives_referenced_frames_a_second_chance() {
    let mut l = level(3, Clock::new(&env(3), ClockParams::default()));
    // (block, hit?, frames in hand order with their bits, evicted)
    #[allow(clippy::type_complexity)]
    let steps: &[(u64, bool, &[(u64, u8)], &[u64])] = &[
        (1, false, &[(1, 0)], &[]),
        (2, false, &[(1, 0), (2, 0)], &[]),
        (3, false, &[(1, 0), (2, 0), (3, 0)], &[]),
        (1, true, &[(1, 1), (2, 0), (3, 0)], &[]),
        // The hand clears 1's bit and passes it; 2 goes.
        (4, false, &[(3, 0), (1, 0), (4, 0)], &[2]),
        (3, true, &[(3, 1), (1, 0), (4, 0)], &[]),
        (4, true, &[(3, 1), (1, 0), (4, 1)], &[]),
        // 3 is passed (bit cleared); 1, unreferenced since its second chance, goes.
        (5, false, &[(4, 1), (3, 0), (5, 0)], &[1]),
        // 4 is passed; 3 had its second chance and was not referenced again.
        (6, false, &[(5, 0), (4, 0), (6, 0)], &[3]),
    ];
    for (i, &(b, hit, frames, evicted)) in steps.iter().enumerate() {
        assert_eq!(read(&mut l, b), hit, "step {i}: access {b}");
        assert_eq!(l.policy().hand_order(l.table()), frames, "step {i}: frames");
        assert_eq!(l.take_evicted(), evicted, "step {i}: evicted");
    }
}

#[test]
fn clock_counter_of_two_bits_saturates_and_loses_one_per_pass() {
    let mut l = level(2, Clock::new(&env(2), ClockParams { bits: 2, insert_ref: 0 }));
    for _ in 0..5 {
        read(&mut l, 1);
    }
    read(&mut l, 2);
    assert_eq!(l.policy().hand_order(l.table()), [(1, 3), (2, 0)]);
    read(&mut l, 3);
    assert_eq!(l.policy().hand_order(l.table()), [(1, 2), (3, 0)]);
    assert_eq!(l.take_evicted(), [2]);
    read(&mut l, 4);
    assert_eq!(l.policy().hand_order(l.table()), [(1, 1), (4, 0)]);
    assert_eq!(l.take_evicted(), [3]);
}

#[test]
fn clock_insert_ref_makes_new_blocks_survive_one_pass() {
    let mut l = level(2, Clock::new(&env(2), ClockParams { bits: 1, insert_ref: 1 }));
    read(&mut l, 1);
    read(&mut l, 2);
    assert_eq!(l.policy().hand_order(l.table()), [(1, 1), (2, 1)]);
    // A full lap clears both bits, then 1 goes: FIFO order, one lap late.
    read(&mut l, 3);
    assert_eq!(l.policy().hand_order(l.table()), [(2, 0), (3, 1)]);
    assert_eq!(l.take_evicted(), [1]);
}

#[test]
fn clock_prefetched_blocks_enter_with_a_clear_bit_even_with_insert_ref() {
    let mut l = obl_level(4, Clock::new(&env(4), ClockParams { bits: 1, insert_ref: 1 }));
    read(&mut l, 10);
    assert_eq!(l.policy().hand_order(l.table()), [(10, 1), (11, 0)]);
}

#[test]
fn clock_hand_passes_over_pinned_frames_and_gives_up_when_all_are_pinned() {
    let mut d = Drive::new(2, Clock::new(&env(2), ClockParams::default()));
    d.demand(1);
    d.demand(2);
    d.pin(1, true);
    d.demand(3);
    assert_eq!(d.resident(), [1, 3]);
    d.pin(3, true);
    assert_eq!(d.admit(4, Origin::Demand), None);
    d.check();
    d.pin(1, false);
    d.demand(4);
    assert_eq!(d.resident(), [3, 4]);
}

// ---------------------------------------------------------------------------------------------------------
// ARC

/// After each access of block `.0`: T1, T2, B1, B2 (MRU first) and p.
type ArcState = (u64, &'static [u64], &'static [u64], &'static [u64], &'static [u64], f64);

fn arc_run(c: usize, steps: &[ArcState]) -> Level<Arc> {
    let mut l = level(c, Arc::new(&env(c), ArcParams::default()));
    for (i, &(b, t1, t2, b1, b2, p)) in steps.iter().enumerate() {
        read(&mut l, b);
        let a = l.policy();
        let got = (a.t1_blocks(l.table()), a.t2_blocks(l.table()), a.b1_blocks(), a.b2_blocks(), a.p());
        assert_eq!(got, (t1.to_vec(), t2.to_vec(), b1.to_vec(), b2.to_vec(), p), "step {i}: access {b}");
    }
    l
}

#[test]
fn arc_moves_pages_between_t1_t2_and_their_ghosts_as_in_fig4() {
    arc_run(
        4,
        &[
            (1, &[1], &[], &[], &[], 0.0),
            (2, &[2, 1], &[], &[], &[], 0.0),
            (3, &[3, 2, 1], &[], &[], &[], 0.0),
            (4, &[4, 3, 2, 1], &[], &[], &[], 0.0),
            // Case I: a hit in T1 moves to T2.
            (1, &[4, 3, 2], &[1], &[], &[], 0.0),
            // Case IV(B): REPLACE takes LRU(T1) into B1.
            (5, &[5, 4, 3], &[1], &[2], &[], 0.0),
            // Case IV(A): |T1|+|B1| = c, so LRU(B1) is dropped, then REPLACE.
            (6, &[6, 5, 4], &[1], &[3], &[], 0.0),
            // Case II: B1 hit, p += max(1, 0/1) = 1; REPLACE takes LRU(T1) since |T1| = 3 > 1.
            (3, &[6, 5], &[3, 1], &[4], &[], 1.0),
            (7, &[7, 6], &[3, 1], &[5, 4], &[], 1.0),
            (1, &[7, 6], &[1, 3], &[5, 4], &[], 1.0),
            (8, &[8, 7], &[1, 3], &[6, 5], &[], 1.0),
            (9, &[9, 8], &[1, 3], &[7, 6], &[], 1.0),
            // Case II: p = 2; now |T1| = 2 is not above p, so LRU(T2) goes to B2.
            (6, &[9, 8], &[6, 1], &[7], &[3], 2.0),
            // Case III: B2 hit, p -= max(1, 1/1); |T1| = 2 > 1 so T1 loses its LRU.
            (3, &[9], &[3, 6, 1], &[8, 7], &[], 1.0),
            // Case IV(B): |T1| = 1 = p and the page is not from B2, so T2 loses its LRU.
            (10, &[10, 9], &[3, 6], &[8, 7], &[1], 1.0),
            // Case III: p -= max(1, 2/1) = 2, floored at 0.
            (1, &[10], &[1, 3, 6], &[9, 8, 7], &[], 0.0),
        ],
    );
}

#[test]
fn arc_p_moves_by_the_real_ghost_ratio() {
    // c = 5. The last access is a B1 hit with |B2| = 3 and |B1| = 2: p grows by 1.5, not by 1.
    arc_run(
        5,
        &[
            (9, &[9], &[], &[], &[], 0.0),
            (11, &[11, 9], &[], &[], &[], 0.0),
            (3, &[3, 11, 9], &[], &[], &[], 0.0),
            (9, &[3, 11], &[9], &[], &[], 0.0),
            (7, &[7, 3, 11], &[9], &[], &[], 0.0),
            (4, &[4, 7, 3, 11], &[9], &[], &[], 0.0),
            (2, &[2, 4, 7, 3], &[9], &[11], &[], 0.0),
            (2, &[4, 7, 3], &[2, 9], &[11], &[], 0.0),
            (1, &[1, 4, 7], &[2, 9], &[3, 11], &[], 0.0),
            (11, &[1, 4], &[11, 2, 9], &[7, 3], &[], 1.0),
            (8, &[8, 1], &[11, 2, 9], &[4, 7, 3], &[], 1.0),
            (7, &[8, 1], &[7, 11, 2], &[4, 3], &[9], 2.0),
            (12, &[12, 8, 1], &[7, 11], &[4, 3], &[2, 9], 2.0),
            (12, &[8, 1], &[12, 7, 11], &[4, 3], &[2, 9], 2.0),
            (10, &[10, 8, 1], &[12, 7], &[4, 3], &[11, 2, 9], 2.0),
            (3, &[10, 8, 1], &[3, 12], &[4], &[7, 11, 2, 9], 3.5),
        ],
    );
}

#[test]
fn arc_b2_hit_with_t1_at_target_evicts_from_t1() {
    arc_run(
        3,
        &[
            (3, &[3], &[], &[], &[], 0.0),
            (5, &[5, 3], &[], &[], &[], 0.0),
            (5, &[3], &[5], &[], &[], 0.0),
            (1, &[1, 3], &[5], &[], &[], 0.0),
            (2, &[2, 1], &[5], &[3], &[], 0.0),
            (3, &[2], &[3, 5], &[1], &[], 1.0),
            (1, &[2], &[1, 3], &[], &[5], 2.0),
            // B2 hit: p = 2 - 1 = 1 = |T1|, and the page comes from B2, so REPLACE takes T1's 2 (without the
            // tie rule it would take T2's 3).
            (5, &[], &[5, 1, 3], &[2], &[], 1.0),
        ],
    );
}

#[test]
fn arc_full_t1_evicts_without_a_ghost() {
    let mut l = arc_run(
        2,
        &[(1, &[1], &[], &[], &[], 0.0), (2, &[2, 1], &[], &[], &[], 0.0), (3, &[3, 2], &[], &[], &[], 0.0)],
    );
    assert_eq!(l.take_evicted(), [1]);
}

#[test]
fn arc_prefetched_page_first_use_stays_in_t1_and_a_second_use_promotes() {
    let mut l = obl_level(4, Arc::new(&env(4), ArcParams::default()));
    read(&mut l, 10);
    assert_eq!(l.policy().t1_blocks(l.table()), [11, 10]);
    // First use of 11: MRU of T1, and OBL (tagged) prefetches 12.
    assert!(read(&mut l, 11));
    assert_eq!(l.policy().t1_blocks(l.table()), [12, 11, 10]);
    assert!(l.policy().t2_blocks(l.table()).is_empty());
    // A second use is a real re-reference.
    assert!(read(&mut l, 11));
    assert_eq!(l.policy().t1_blocks(l.table()), [12, 10]);
    assert_eq!(l.policy().t2_blocks(l.table()), [11]);
}

#[test]
fn arc_prefetch_of_a_ghost_drops_it_without_adapting_p() {
    let mut d = Drive::new(2, Arc::new(&env(2), ArcParams::default()));
    for b in [1, 1, 2, 3] {
        d.demand(b);
    }
    assert_eq!((d.policy.t1_blocks(&d.table), d.policy.t2_blocks(&d.table)), (vec![3], vec![1]));
    assert_eq!(d.policy.b1_blocks(), [2]);
    d.prefetch(2);
    // Ghost dropped, p unchanged, 2 in T1 (REPLACE took 3 into B1); a demand miss would have set p = 1
    // and put 2 in T2.
    assert_eq!(d.policy.p(), 0.0);
    assert_eq!((d.policy.t1_blocks(&d.table), d.policy.t2_blocks(&d.table)), (vec![2], vec![1]));
    assert_eq!(d.policy.b1_blocks(), [3]);
}

#[test]
fn arc_replace_passes_over_pinned_pages_and_gives_up_when_all_are_pinned() {
    let mut d = Drive::new(2, Arc::new(&env(2), ArcParams::default()));
    d.demand(1);
    d.demand(2);
    d.pin(1, true);
    d.demand(3);
    assert_eq!(d.resident(), [1, 3]);
    // |T1| = c: the evicted page leaves no ghost.
    assert!(d.policy.b1_blocks().is_empty());
    d.pin(3, true);
    assert_eq!(d.admit(4, Origin::Demand), None);
    d.check();
}

// ---------------------------------------------------------------------------------------------------------
// MQ

#[test]
fn mq_promotes_by_log2_frequency_demotes_on_expiry_and_remembers_in_qout() {
    let c = 3;
    let mut l = level(c, Mq::new(&env(c), MqParams { life_time: Some(3), ..MqParams::default() }));
    // After each access: Q0, Q1, Q2 as (block, frequency), MRU first; Qout newest first.
    #[allow(clippy::type_complexity)]
    let steps: &[(u64, &[(u64, u32)], &[(u64, u32)], &[(u64, u32)], &[(u64, u32)])] = &[
        (1, &[(1, 1)], &[], &[], &[]),
        // Frequency 2 and 3 live in Q1 (⌊log2 f⌋ = 1), 4 in Q2.
        (1, &[], &[(1, 2)], &[], &[]),
        (1, &[], &[(1, 3)], &[], &[]),
        (1, &[], &[], &[(1, 4)], &[]),
        (2, &[(2, 1)], &[], &[(1, 4)], &[]),
        (2, &[], &[(2, 2)], &[(1, 4)], &[]),
        (3, &[(3, 1)], &[(2, 2)], &[(1, 4)], &[]),
        // now = 8: 3 is evicted from Q0 into Qout; 1 (expire 4 + 3 = 7 < 8) drops from Q2 to Q1.
        (4, &[(4, 1)], &[(1, 4), (2, 2)], &[], &[(3, 1)]),
        (5, &[(5, 1)], &[(1, 4), (2, 2)], &[], &[(4, 1), (3, 1)]),
        // 3 returns with its remembered frequency + 1 = 2, into Q1; 2 (expire 9 < 10) drops to Q0.
        (3, &[(2, 2)], &[(3, 2), (1, 4)], &[], &[(5, 1), (4, 1)]),
        (6, &[(6, 1)], &[(3, 2), (1, 4)], &[], &[(2, 2), (5, 1), (4, 1)]),
        // 2 returns with frequency 3 into Q1; 1 (demoted at 8, expire 11 < 12) drops to Q0.
        (2, &[(1, 4)], &[(2, 3), (3, 2)], &[], &[(6, 1), (5, 1), (4, 1)]),
    ];
    for (i, &(b, q0, q1, q2, qout)) in steps.iter().enumerate() {
        read(&mut l, b);
        let (m, t) = (l.policy(), l.table());
        let got = (m.queue_blocks(0, t), m.queue_blocks(1, t), m.queue_blocks(2, t), m.history_blocks());
        assert_eq!(got, (q0.to_vec(), q1.to_vec(), q2.to_vec(), qout.to_vec()), "step {i}: access {b}");
    }
    assert_eq!(l.policy().now(), 12);
}

#[test]
fn mq_queue_number_is_floor_log2_capped_at_m_minus_1() {
    let m = Mq::new(&env(4), MqParams::default());
    let got: Vec<usize> = [0, 1, 2, 3, 4, 7, 8, 127, 128, 1 << 20].iter().map(|&f| m.queue_num(f)).collect();
    assert_eq!(got, [0, 0, 1, 1, 2, 2, 3, 6, 7, 7]);
}

#[test]
fn mq_prefetch_enters_q0_with_frequency_0_and_keeps_its_history_until_demanded() {
    let mut d = Drive::new(1, Mq::new(&env(1), MqParams::default()));
    for b in [5, 5, 5, 5, 1] {
        d.demand(b);
    }
    // 5 had frequency 4 (Q2) when 1 pushed it out.
    assert_eq!(d.policy.history_blocks(), [(5, 4)]);
    let now = d.policy.now();
    d.prefetch(5);
    assert_eq!(d.policy.now(), now, "a prefetch is not an access");
    assert_eq!(d.policy.queue_blocks(0, &d.table), [(5, 0)]);
    assert_eq!(d.policy.history_blocks(), [(1, 1), (5, 4)], "history stays until demanded");
    // Its first demand access takes the remembered frequency + 1 = 5: Q2.
    assert!(d.demand(5));
    assert_eq!(d.policy.queue_blocks(2, &d.table), [(5, 5)]);
    assert_eq!(d.policy.history_blocks(), [(1, 1)]);
}

#[test]
fn mq_unused_prefetched_victims_leave_no_history() {
    let mut d = Drive::new(1, Mq::new(&env(1), MqParams::default()));
    d.prefetch(7);
    d.demand(8);
    assert!(d.policy.history_blocks().is_empty());
    d.demand(9);
    assert_eq!(d.policy.history_blocks(), [(8, 1)]);
}

#[test]
fn mq_history_keeps_kout_entries() {
    let mut d = Drive::new(1, Mq::new(&env(1), MqParams { history: Some(2), ..MqParams::default() }));
    for b in 1..=5 {
        d.demand(b);
    }
    assert_eq!(d.policy.history_blocks(), [(4, 1), (3, 1)]);
}

#[test]
fn mq_victim_passes_over_pinned_blocks_into_higher_queues() {
    let mut d = Drive::new(2, Mq::new(&env(2), MqParams::default()));
    for b in [1, 1, 2] {
        d.demand(b);
    }
    d.pin(2, true);
    d.demand(3);
    // Q0 holds only the pinned 2, so Q1's 1 goes.
    assert_eq!(d.resident(), [2, 3]);
    d.pin(3, true);
    assert_eq!(d.admit(4, Origin::Demand), None);
    d.check();
}

// ---------------------------------------------------------------------------------------------------------
// 2Q

#[test]
fn two_q_moves_blocks_from_a1in_through_a1out_to_am() {
    // c = 4: Kin = 1, Kout = 2.
    let mut l = level(4, TwoQ::new(&env(4), TwoQParams::default()));
    // After each access: A1in (newest first), Am (MRU first), A1out (newest first).
    #[allow(clippy::type_complexity)]
    let steps: &[(u64, bool, &[u64], &[u64], &[u64])] = &[
        (1, false, &[1], &[], &[]),
        (2, false, &[2, 1], &[], &[]),
        (3, false, &[3, 2, 1], &[], &[]),
        (4, false, &[4, 3, 2, 1], &[], &[]),
        // A hit in A1in changes nothing (a correlated reference).
        (1, true, &[4, 3, 2, 1], &[], &[]),
        // |A1in| = 4 > Kin: its oldest goes to A1out.
        (5, false, &[5, 4, 3, 2], &[], &[1]),
        (6, false, &[6, 5, 4, 3], &[], &[2, 1]),
        // A miss on an A1out id: into Am.
        (1, false, &[6, 5, 4], &[1], &[3, 2]),
        // A1out keeps Kout = 2 ids.
        (7, false, &[7, 6, 5], &[1], &[4, 3]),
        (3, false, &[7, 6], &[3, 1], &[5, 4]),
        (1, true, &[7, 6], &[1, 3], &[5, 4]),
        (8, false, &[8, 7], &[1, 3], &[6, 5]),
        (6, false, &[8], &[6, 1, 3], &[7, 5]),
        // |A1in| = 1 = Kin: Am's LRU goes, and leaves no ghost.
        (9, false, &[9, 8], &[6, 1], &[7, 5]),
        (3, false, &[3, 9], &[6, 1], &[8, 7]),
    ];
    for (i, &(b, hit, a1in, am, a1out)) in steps.iter().enumerate() {
        assert_eq!(read(&mut l, b), hit, "step {i}: access {b}");
        let (q, t) = (l.policy(), l.table());
        assert_eq!((q.a1in_blocks(t), q.am_blocks(t), q.a1out_blocks()), (a1in.to_vec(), am.to_vec(), a1out.to_vec()));
    }
}

#[test]
fn two_q_does_not_ghost_unused_prefetched_victims_by_default() {
    for (ghost, a1out) in [(false, vec![10]), (true, vec![11, 10])] {
        let params = TwoQParams { ghost_prefetched_unused: ghost, ..TwoQParams::default() };
        let mut l = obl_level(4, TwoQ::new(&env(4), params));
        for b in [10, 20, 30] {
            read(&mut l, b);
        }
        assert_eq!(l.policy().a1in_blocks(l.table()), [31, 30, 21, 20]);
        assert_eq!(l.policy().a1out_blocks(), a1out, "ghost_prefetched_unused = {ghost}");
    }
}

#[test]
fn two_q_prefetched_block_with_an_a1out_id_joins_am_on_first_use() {
    let mut l = obl_level(4, TwoQ::new(&env(4), TwoQParams::default()));
    for b in [10, 20, 30] {
        read(&mut l, b);
    }
    // 9 misses: 20 goes to A1out; OBL prefetches 10, whose id stays in A1out; 21 (unused) goes unghosted.
    read(&mut l, 9);
    assert_eq!(l.policy().a1in_blocks(l.table()), [10, 9, 31, 30]);
    assert_eq!(l.policy().a1out_blocks(), [20, 10]);
    // The first demand access of 10 is the re-reference A1out remembers: 10 joins Am. OBL then prefetches
    // 11, which pushes 30 out of A1in.
    assert!(read(&mut l, 10));
    assert_eq!(l.policy().am_blocks(l.table()), [10]);
    assert_eq!(l.policy().a1in_blocks(l.table()), [11, 9, 31]);
    assert_eq!(l.policy().a1out_blocks(), [30, 20]);
}

#[test]
fn two_q_reclaim_passes_over_pinned_blocks() {
    let mut d = Drive::new(4, TwoQ::new(&env(4), TwoQParams::default()));
    for b in 1..=4 {
        d.demand(b);
    }
    d.pin(1, true);
    d.demand(5);
    assert_eq!(d.resident(), [1, 3, 4, 5]);
    assert_eq!(d.policy.a1out_blocks(), [2]);
}

// ---------------------------------------------------------------------------------------------------------
// Registry

#[test]
fn registry_builds_clock_arc_mq_and_2q_with_parameters() {
    let cases = [
        ("clock", r#"{"bits": 2, "insert_ref": true}"#),
        ("second_chance", "{}"),
        ("arc", "{}"),
        ("mq", r#"{"queues": 4, "life_time": 100, "history": 10}"#),
        ("2q", r#"{"kin": 0.3, "kout": 0.6, "ghost_prefetched_unused": true}"#),
    ];
    for (name, params) in cases {
        let mut spec = ComponentSpec::named(name);
        spec.params = serde_json::from_str(params).unwrap();
        let (_, mut l) = build_level("level[0].policy", &spec, 8, LevelOptions::default(), Box::new(NoPrefetch))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut out = Vec::new();
        for b in [1, 2, 3, 1, 9, 10, 11, 12, 13, 1, 2] {
            l.access(&Request::read(b, 1), 1, &mut out);
            l.check_invariants().unwrap();
        }
    }
    for (name, params) in [("clock", r#"{"bits": 0}"#), ("mq", r#"{"queues": 0}"#), ("2q", r#"{"kin": 2}"#)] {
        let mut spec = ComponentSpec::named(name);
        spec.params = serde_json::from_str(params).unwrap();
        let err = build_level("p", &spec, 8, LevelOptions::default(), Box::new(NoPrefetch)).err();
        assert!(err.is_some(), "{name} accepted {params}");
    }
}

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
