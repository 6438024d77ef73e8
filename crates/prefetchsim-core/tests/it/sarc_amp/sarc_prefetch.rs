//! SARC's prefetch side and placements, worked by hand from `sarc.md`.

use super::*;

// ---------------------------------------------------------------------------------------------------------
// SARC: prefetch side and placements

#[test]
fn sarc_counts_sequential_misses_per_block_and_places_them_in_seq() {
    // C = 100, ΔL = floor(0.02 × 100) = 2; u = 8, g = 4, seqThreshold = 2.
    let (mut l, pf) = sarc_level(100, SarcParams::default(), SarcPrefetchParams::default());
    assert_eq!(l.policy().delta_l(), 2);
    // 10: 9 not cached, cnt = 1: a random miss, no prefetch.
    assert_eq!(read(&mut l, 10, 1), vec![fetch(10, 1, 1)]);
    assert_eq!((random(&l), seq(&l), l.policy().seq_miss()), (vec![10], vec![], 0));
    // 11: 10 cached, cnt = 2 = seqThreshold: a sequential miss. 11 and its group [12, 19] are one I/O;
    // the group goes to MRU(SEQ) in address order above 11, and its trigger is 19 - 4 = 15.
    assert_eq!(read(&mut l, 11, 1), vec![fetch(11, 9, 1)]);
    let mut want = desc(12, 19);
    want.push(11);
    assert_eq!(seq(&l), want);
    assert_eq!(l.policy().seq_miss(), 1);
    assert_eq!(pf.lock().unwrap().trigger(15), Some(Group { first: 12, last: 19 }));
    // [30, 32]: 29 not cached: random, three demand blocks to RANDOM, in order.
    assert_eq!(read(&mut l, 30, 3), vec![fetch(30, 3, 3)]);
    assert_eq!(random(&l), vec![32, 31, 30, 10]);
    // [33, 34]: 32 cached: sequential; both demand blocks count (seqMiss 1 + 2 = 3), group [35, 42],
    // trigger 38.
    assert_eq!(read(&mut l, 33, 2), vec![fetch(33, 10, 2)]);
    assert_eq!(l.policy().seq_miss(), 3);
    let mut want = desc(33, 42);
    want.extend(desc(12, 19));
    want.push(11);
    assert_eq!(seq(&l), want);
    assert_eq!(pf.lock().unwrap().triggers(), vec![15, 38]);
    // Virtual time: 1 + 1 + 3 + 2 demand block accesses; prefetched blocks take the time of their request.
    assert_eq!(l.policy().now(), 7);
    assert_eq!(l.policy().stamp_of(42, l.table()), Some(7));
    assert_eq!(l.policy().stamp_of(19, l.table()), Some(2));
}

#[test]
fn sarc_seq_threshold_three_needs_two_cached_predecessor_steps() {
    let pf = SarcPrefetchParams { seq_threshold: 3, ..SarcPrefetchParams::default() };
    let (mut l, _) = sarc_level(100, SarcParams::default(), pf);
    // [0, 3]: cnt 1. [4, 7]: 3 cached, cnt 2 < 3: still random. [8, 11]: cnt 3: sequential.
    assert_eq!(read(&mut l, 0, 4), vec![fetch(0, 4, 4)]);
    assert_eq!(read(&mut l, 4, 4), vec![fetch(4, 4, 4)]);
    assert_eq!(read(&mut l, 8, 4), vec![fetch(8, 12, 4)]);
    assert_eq!(random(&l), desc(0, 7));
    assert_eq!(l.policy().seq_miss(), 4);
}

#[test]
fn sarc_trigger_moves_unaccessed_group_blocks_to_mru_of_seq_then_prefetches_the_next_group() {
    let (mut l, pf) = sarc_level(100, SarcParams::default(), SarcPrefetchParams::default());
    read(&mut l, 10, 1);
    read(&mut l, 11, 1); // group [12, 19], trigger 15; SEQ = 19..12, 11
                         // 12: a prefetch hit, moved to MRU(SEQ); not a trigger, nothing fetched.
    assert_eq!(read(&mut l, 12, 1), vec![]);
    let mut want = vec![12];
    want.extend(desc(13, 19));
    want.push(11);
    assert_eq!(seq(&l), want);
    // 15: the trigger. The hit moves 15 to MRU; then the not yet accessed blocks of [12, 19] (13, 14,
    // 16..19; 12 and 15 are accessed) move to MRU(SEQ) in address order, and the next group [20, 27]
    // (one prefetch-only I/O, trigger 23) goes above them.
    assert_eq!(read(&mut l, 15, 1), vec![fetch(20, 8, 0)]);
    let mut want = desc(20, 27);
    want.extend([19, 18, 17, 16, 14, 13, 15, 12, 11]);
    assert_eq!(seq(&l), want);
    assert_eq!(pf.lock().unwrap().triggers(), vec![23]);
    assert_eq!(pf.lock().unwrap().trigger(23), Some(Group { first: 20, last: 27 }));
    let c = l.counters();
    assert_eq!((c.hits, c.prefetch_hits, c.misses, c.prefetch_issued), (2, 2, 2, 16));
}

#[test]
fn sarc_triggers_set_inside_a_large_request_fire_in_the_same_pass() {
    // u = 4, g = 2. 0 then 1: group [2, 5], trigger 3.
    let pf = SarcPrefetchParams { degree: 4, trigger_distance: Some(2), ..SarcPrefetchParams::default() };
    let (mut l, pf) = sarc_level(100, SarcParams::default(), pf);
    read(&mut l, 0, 1);
    assert_eq!(read(&mut l, 1, 1), vec![fetch(1, 5, 1)]);
    // [2, 5] all hit. 3 fires: group [6, 9], trigger 7 (not in the request).
    assert_eq!(read(&mut l, 2, 4), vec![fetch(6, 4, 0)]);
    assert_eq!(pf.lock().unwrap().triggers(), vec![7]);
    // [6, 13]: 6..9 hit, 10..13 miss. 7 fires: group [10, 13], trigger 11. 10..13 are missing, but that
    // group, set off by this request, covers them: block by block they are hits on it in flight. So 11
    // fires in the same pass (group [14, 17], trigger 15), and there is no sequential miss: the demand
    // blocks go to SEQ without counting one. Demand and both groups form one I/O.
    assert_eq!(read(&mut l, 6, 8), vec![fetch(10, 8, 4)]);
    assert_eq!(pf.lock().unwrap().triggers(), vec![15]);
    assert_eq!(l.policy().seq_miss(), 1);
    let mut want = desc(14, 17);
    want.extend(desc(6, 13));
    want.extend(desc(1, 5));
    assert_eq!(seq(&l), want);
}

#[test]
fn sarc_prefetcher_over_lru_ignores_seq_placement() {
    let env = PolicyEnv { capacity: 100, first_hit: FirstHit::Promote };
    let pf = Box::new(SarcPrefetcher::new(SarcPrefetchParams::default()));
    let mut l = Level::new(100, Lru::new(&env), pf, LevelOptions::default());
    read(&mut l, 10, 1);
    assert_eq!(read(&mut l, 11, 1), vec![fetch(11, 9, 1)]);
    // LRU's own rule: the demand block at MRU, then the run with the nearer block nearer MRU.
    let mut want: Vec<u64> = (12..=19).collect();
    want.extend([11, 10]);
    assert_eq!(l.policy().queue(l.table()), want);
}
