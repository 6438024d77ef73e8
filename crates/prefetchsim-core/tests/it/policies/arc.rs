//! ARC: hand-worked sequences (Fig. 4), ghosts, prefetched and pinned pages.

use super::*;

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
