//! CLOCK: hand-worked sequences, pinned frames and prefetched blocks.

use super::*;

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

/// A search that finds every frame pinned is a full lap: the hand ends where it began. It stopped one
/// frame short, so each failed search moved the hand back by one (an audit of the timed engine: after k
/// failed searches the next victim was frame -k mod c).
#[test]
fn clock_hand_after_a_search_with_every_frame_pinned_is_where_it_began() {
    let mut d = Drive::new(3, Clock::new(&env(3), ClockParams::default()));
    for b in 1..=3 {
        d.demand(b);
    }
    let before = d.policy.hand_order(&d.table);
    for b in 1..=3 {
        d.pin(b, true);
    }
    for k in 1..=2 {
        assert_eq!(d.admit(10 + k, Origin::Demand), None);
        d.check();
        assert_eq!(d.policy.hand_order(&d.table), before, "after {k} failed searches");
    }
    for b in 1..=3 {
        d.pin(b, false);
    }
    d.demand(20);
    // The frame under the hand at the start (block 1, the oldest, bit clear) is the victim.
    assert_eq!(d.resident(), [2, 3, 20]);
}
