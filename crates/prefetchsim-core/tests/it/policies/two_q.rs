//! 2Q: hand-worked sequences, A1out ghosts, prefetched and pinned blocks.

use super::*;

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
