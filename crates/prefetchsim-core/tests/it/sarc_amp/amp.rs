//! AMP, worked by hand from `amp.md`.

use super::*;

// ---------------------------------------------------------------------------------------------------------
// AMP

fn meta(amp: &Arc<Mutex<Amp>>, block: u64) -> PageMeta {
    amp.lock().unwrap().meta(block)
}

fn pg(amp: &Arc<Mutex<Amp>>, block: u64) -> (u32, Option<u32>) {
    let m = meta(amp, block);
    (m.p, m.g)
}

#[test]
fn amp_p_grows_by_the_read_size_on_last_page_hits_and_async_prefetch_starts_above_apt() {
    let (mut l, amp) = amp_level(64, AmpParams { p_max: 6, ..AmpParams::default() });
    // 0: random miss, a set of its own (p = 0).
    assert_eq!(read(&mut l, 0, 1), vec![fetch(0, 1, 1)]);
    // 1: 0 cached: sequential; P = 0 has p = 0, so q = p_init = read size 1: set [1, 2], p = 1.
    assert_eq!(read(&mut l, 1, 1), vec![fetch(1, 2, 1)]);
    assert_eq!((meta(&amp, 1).last, pg(&amp, 2)), (2, (1, None)));
    // 2: hit on the last page: p = 1 + 1.
    assert_eq!(read(&mut l, 2, 1), vec![]);
    assert_eq!(pg(&amp, 2), (2, None));
    // 3: sequential miss, q = 2: set [3, 5]. 4, 5: p(5) = 3. 6: set [6, 9]. 7..9: p(9) = 4.
    assert_eq!(read(&mut l, 3, 1), vec![fetch(3, 3, 1)]);
    read(&mut l, 4, 1);
    read(&mut l, 5, 1);
    assert_eq!(pg(&amp, 5), (3, None));
    assert_eq!(read(&mut l, 6, 1), vec![fetch(6, 4, 1)]);
    for b in 7..=9 {
        read(&mut l, b, 1);
    }
    assert_eq!(pg(&amp, 9), (4, None));
    // 10: set [10, 14], p = 4 = APT: still synchronous, no tag. 11..14: p(14) = 5.
    assert_eq!(read(&mut l, 10, 1), vec![fetch(10, 5, 1)]);
    assert!(amp.lock().unwrap().tags().is_empty());
    for b in 11..=14 {
        read(&mut l, b, 1);
    }
    // 15: set [15, 20], p = 5 > APT: g starts at APT/2 = 2 (< p), tag on 20 - 2 = 18.
    assert_eq!(read(&mut l, 15, 1), vec![fetch(15, 6, 1)]);
    assert_eq!(pg(&amp, 20), (5, Some(2)));
    assert_eq!(amp.lock().unwrap().tags(), vec![18]);
    read(&mut l, 16, 1);
    read(&mut l, 17, 1);
    // 18: the tag: an asynchronous set [21, 25] with the inherited p = 5 and g = 2; its tag on 23.
    assert_eq!(read(&mut l, 18, 1), vec![fetch(21, 5, 0)]);
    assert_eq!((meta(&amp, 21).last, pg(&amp, 25)), (25, (5, Some(2))));
    assert_eq!(amp.lock().unwrap().tags(), vec![23]);
    read(&mut l, 19, 1);
    // 20: the old set's last page: the stream head is 25 (21 is cached and belongs to a later set), so
    // p(25) = 6 while p(20) stays.
    read(&mut l, 20, 1);
    assert_eq!((pg(&amp, 25), pg(&amp, 20)), ((6, Some(2)), (5, Some(2))));
    read(&mut l, 21, 1);
    read(&mut l, 22, 1);
    // 23: set [26, 31], p = 6, g = 2, tag 29. 24, 25: p(31) = min(6 + 1, p_max 6) = 6.
    assert_eq!(read(&mut l, 23, 1), vec![fetch(26, 6, 0)]);
    read(&mut l, 24, 1);
    read(&mut l, 25, 1);
    assert_eq!(pg(&amp, 31), (6, Some(2)));
    assert_eq!(amp.lock().unwrap().tags(), vec![29]);
    let c = l.counters();
    // Issued: 1 + 2 + 3 + 4 + 5 (synchronous) + 5 + 6 (asynchronous).
    assert_eq!((c.misses, c.prefetch_hits, c.prefetch_issued), (6, 20, 26));
}

#[test]
fn amp_p_grows_by_the_request_length() {
    let (mut l, amp) = amp_level(256, AmpParams::default());
    read(&mut l, 0, 8);
    // [8, 15]: sequential, q = p_init = 8: set [8, 23], p = 8 > 4: g = 2, tag 21.
    assert_eq!(read(&mut l, 8, 8), vec![fetch(8, 16, 8)]);
    assert_eq!((pg(&amp, 23), amp.lock().unwrap().tags()), ((8, Some(2)), vec![21]));
    // [16, 23]: 21 fires: set [24, 31] (p 8, g 2, tag 29); then 23, the old last page, credits the head
    // 31 with the read size: p = 8 + 8.
    assert_eq!(read(&mut l, 16, 8), vec![fetch(24, 8, 0)]);
    assert_eq!(pg(&amp, 31), (16, Some(2)));
    // [24, 31]: 29 fires: set [32, 47] with p 16, tag 45; 31 credits 47: p = 24.
    assert_eq!(read(&mut l, 24, 8), vec![fetch(32, 16, 0)]);
    assert_eq!((pg(&amp, 47), amp.lock().unwrap().tags()), ((24, Some(2)), vec![45]));
}

#[test]
fn amp_unused_eviction_shrinks_p_by_one_and_g_follows() {
    // p_init = 6: 0, then 1 makes the set [1, 7] with p = 6 > APT, g = 2, tag 5. LRU order (MRU first):
    // 2 3 4 5 6 7 1 0. 2 and 3 are read (first hits leave them in place); 4..7 stay unused.
    let (mut l, amp) = amp_level(10, AmpParams { p_init: Some(6), ..AmpParams::default() });
    read(&mut l, 0, 1);
    assert_eq!(read(&mut l, 1, 1), vec![fetch(1, 7, 1)]);
    assert_eq!((pg(&amp, 7), amp.lock().unwrap().tags()), ((6, Some(2)), vec![5]));
    read(&mut l, 2, 1);
    read(&mut l, 3, 1);
    assert_eq!(l.policy().queue(l.table()), vec![2, 3, 4, 5, 6, 7, 1, 0]);
    // Two random pages fill the cache; two more evict 0 and 1.
    for b in [100, 200, 300, 400] {
        read(&mut l, b, 1);
    }
    assert_eq!(l.take_evicted(), vec![0, 1]);
    // 500: the LRU end holds 7, 6, 5, 4, all unused: each gets its second chance (back to MRU), and each
    // shrinks the stream head 7: p 6 -> 5 -> 4 -> 3 -> 2; g = max(min(g-1, p-1), 0): 2 -> 1 -> 0 -> 0 -> 0.
    // 5 loses its tag. Then 3 (used) really goes.
    read(&mut l, 500, 1);
    assert_eq!(l.take_evicted(), vec![3]);
    assert_eq!(pg(&amp, 7), (2, Some(0)));
    assert!(amp.lock().unwrap().tags().is_empty());
    assert!((4..=7).all(|b| meta(&amp, b).old));
    assert_eq!(l.counters().unused_evicted, 0);
    // Queue now 500 4 5 6 7 400 300 200 100 2. Their chance is spent: next time they go for good (7 takes
    // its metadata with it).
    for b in [600, 700, 800, 900, 1000, 1100] {
        read(&mut l, b, 1);
    }
    assert_eq!(l.take_evicted(), vec![2, 100, 200, 300, 400, 7]);
    assert_eq!((l.counters().unused_evicted, meta(&amp, 7)), (1, PageMeta::alone(7)));
}

#[test]
fn amp_one_second_chance_moves_p_and_g_down_once_and_the_next_set_inherits_them() {
    let (mut l, amp) = amp_level(10, AmpParams { p_init: Some(6), ..AmpParams::default() });
    read(&mut l, 0, 1);
    read(&mut l, 1, 1); // set [1, 7], p 6, g 2, tag 5; queue 2 3 4 5 6 7 1 0
    for b in [2, 3, 4, 6] {
        read(&mut l, b, 1); // used, they stay in place; 5 (the tag) and 7 stay unused
    }
    for b in [100, 200, 300, 400] {
        read(&mut l, b, 1); // evict 0, 1
    }
    // 500: 7 is unused: second chance, p 5, g 1; 6 is used and goes.
    read(&mut l, 500, 1);
    assert_eq!(l.take_evicted(), vec![0, 1, 6]);
    assert_eq!(pg(&amp, 7), (5, Some(1)));
    // Queue 500 7 400 300 200 100 2 3 4 5. 5, the tag: L = last(5) = 7: an asynchronous set [8, 12]
    // inheriting p = 5, g = 1; tag 12 - 1 = 11. Making room evicts 5, 4, 3, 2 (used) and 100.
    assert_eq!(read(&mut l, 5, 1), vec![fetch(8, 5, 0)]);
    assert_eq!(pg(&amp, 12), (5, Some(1)));
    assert_eq!(amp.lock().unwrap().tags(), vec![11]);
    assert_eq!(l.take_evicted(), vec![5, 4, 3, 2, 100]);
    // 7 is the old set's last page but had its second chance: no credit.
    read(&mut l, 7, 1);
    assert_eq!(pg(&amp, 12), (5, Some(1)));
}

#[test]
fn amp_stream_head_follows_a_later_set_and_skips_missing_heads() {
    let (mut l, amp) = amp_level(64, AmpParams { p_init: Some(6), ..AmpParams::default() });
    read(&mut l, 0, 1);
    read(&mut l, 1, 1); // set [1, 7], tag 5
    read(&mut l, 5, 1); // set [8, 13], p 6, g 2, tag 11
                        // 7 is the last page of [1, 7]; 8 is cached and last(8) = 13 > 7: the head is 13.
    read(&mut l, 7, 1);
    assert_eq!((pg(&amp, 13), pg(&amp, 7)), ((7, Some(2)), (6, Some(2))));
    // A page with no stream: its own head; a hit adds the read size (p 0 -> 1).
    read(&mut l, 40, 1);
    read(&mut l, 40, 1);
    assert_eq!(pg(&amp, 40), (1, None));
}

#[test]
fn amp_late_prefetch_grows_g_once_per_read_set_up_to_p_minus_one() {
    let (mut l, amp) = amp_level(64, AmpParams { p_init: Some(6), ..AmpParams::default() });
    read(&mut l, 0, 1);
    read(&mut l, 1, 1); // set [1, 7], p 6, g 2
    let mut a = amp.lock().unwrap();
    a.on_late(2);
    assert_eq!(a.meta(7).g, Some(3));
    a.on_late(3); // same set: no second increment
    assert_eq!(a.meta(7).g, Some(3));
    drop(a);
    // The instant engine never reports late prefetches: g moved only because the hook was called here.
    let (mut l2, amp2) = amp_level(64, AmpParams { p_init: Some(6), ..AmpParams::default() });
    read(&mut l2, 0, 1);
    read(&mut l2, 1, 1);
    assert_eq!(pg(&amp2, 7), (6, Some(2)));
    drop(l);
}

#[test]
fn amp_first_hit_rule_reaches_the_policy_through_build_level() {
    // LRU, 4 blocks. 0; 1 (sequential, p_init 2: prefetch 2, 3); 100 (evicts 0); 3 (first use); 200
    // (evicts 1); 300. With AMP's rule 3 stayed behind 2 and, used, is the victim; with the ordinary
    // promotion 3 went to MRU, 2 (unused) gets its second chance and 100 goes.
    for (stay, want) in [(true, vec![0, 1, 3]), (false, vec![0, 1, 100])] {
        let mut spec = ComponentSpec::named("amp");
        spec.params.insert("p_init".into(), 2.into());
        spec.params.insert("first_hit_stay".into(), stay.into());
        let pf = prefetchsim_core::build::build_prefetcher("pf", &spec).unwrap().1;
        let (_, mut l) = build_level("p", &ComponentSpec::named("lru"), 4, LevelOptions::default(), pf).unwrap();
        l.record_evictions(true);
        for b in [0, 1, 100, 3, 200, 300] {
            read(l.as_mut(), b, 1);
        }
        assert_eq!(l.take_evicted(), want, "first_hit_stay = {stay}");
    }
}

#[test]
fn amp_second_chances_of_the_access_that_forms_a_set_do_not_undo_its_set_meta() {
    // amp.md's order: the missing blocks are read (making room: evictions, second chances), then
    // `set_meta` writes the set's p, g and tag. A user study's seed 5 (LRU, 7 blocks).
    let (mut l, amp) = amp_level(7, AmpParams::default());
    // [0, 3]: a set of its own, p 0. [4, 8]: sequential (3 cached), P = 3 has p 0: q = p_init = 5,
    // set [4, 13]; 9..13 prefetched, 0..6 evicted. [4, 5]: 3 is gone: a new set [4, 5], p 0.
    read(&mut l, 0, 4);
    assert_eq!(read(&mut l, 4, 5), vec![fetch(4, 10, 5)]);
    read(&mut l, 4, 2);
    // [6, 9]: 9 hit; 6 misses, 5 cached: sequential, P = 5 has p 0: q = p_init = 4, set [6, 13]; 10..13
    // are cached (nothing to prefetch) and join it: p(13) = 4 (<= APT: no tag). Making room for 6, 7, 8
    // evicts 9 and gives 10..13 their second chance before set_meta, so they are old and p(13) stays 4.
    assert_eq!(read(&mut l, 6, 4), vec![fetch(6, 3, 3)]);
    assert_eq!(pg(&amp, 13), (4, None));
    assert!((10..=13).all(|b| meta(&amp, b).last == 13 && meta(&amp, b).old));
    assert!(amp.lock().unwrap().tags().is_empty());
    // [12, 14]: 13 is the last page but old: no growth. 14 misses, 13 cached: P = 13, q = p = 4: [14, 18].
    // (Had the second chances lowered p(13) to 1, only 15 would be prefetched.)
    assert_eq!(read(&mut l, 12, 3), vec![fetch(14, 5, 1)]);
    assert_eq!(pg(&amp, 18), (4, None));
}

#[test]
fn amp_a_miss_set_formed_after_a_trigger_set_of_the_same_request_takes_over_its_pages_in_range() {
    // amp.md's order: the hit loop issues the trigger's set (and its set_meta), then the MISS forms its
    // set, the newer one; a block the trigger set covers still counts as missing ([ours]). An AMP study's
    // seed 124 (LRU, 7 blocks), non-sequential.
    let (mut l, amp) = amp_level(7, AmpParams::default());
    read(&mut l, 0, 1);
    // [1, 3]: sequential, q = p_init = 3: set [1, 6], p 3. [6, 7]: 6 hit (last page: p 5); 7 misses:
    // sequential, q = 5: set [7, 12], p 5 > APT: g 2, tag on 10.
    read(&mut l, 1, 3);
    read(&mut l, 6, 2);
    assert_eq!((pg(&amp, 12), amp.lock().unwrap().tags()), ((5, Some(2)), vec![10]));
    // [7, 15]: 7 was evicted. Hits 8..12: the tag 10 issues [13, 17] (p 5, g 2, tag on 15); the last
    // page 12 grows the stream head 17 to p 5 + 9 = 14. Then the miss: first missing block 7, 6 is
    // gone: not sequential, set [7, 15] with p 0. 13, 14, 15 (covered by the trigger set, read once as
    // demand misses) join it (8..12 are evicted making room); 15 loses the trigger set's tag; 16, 17
    // stay in the trigger set.
    assert_eq!(read(&mut l, 7, 9), vec![fetch(7, 1, 1), fetch(13, 5, 3)]);
    for b in [7, 13, 14, 15] {
        assert_eq!(meta(&amp, b).last, 15, "page {b}");
    }
    assert_eq!(pg(&amp, 15), (0, None));
    assert_eq!((meta(&amp, 16).last, pg(&amp, 17)), (17, (14, Some(2))));
    assert!(amp.lock().unwrap().tags().is_empty());
    // [15]: no trigger (had the trigger set kept 15, its tag would issue [18, 31] here). 15 is its set's
    // last page: the stream head 17 (16 is cached, in a later set) grows by 1.
    assert_eq!(read(&mut l, 15, 1), vec![]);
    assert_eq!(pg(&amp, 17), (15, Some(2)));
}

#[test]
fn amp_a_sequential_miss_set_takes_over_the_trigger_set_that_starts_at_its_demand_block() {
    // The sequential case (an AMP study's seed 106, built here with a larger cache): the trigger set and
    // the miss's synchronous set both start at the request's missing block; the miss's set is the newer
    // one, so the trigger set's pages, the demand block included, join it and the trigger set's p is lost.
    let (mut l, amp) = amp_level(64, AmpParams::default());
    // As in the first AMP test: set [15, 20], p 5, g 2, tag on 18.
    for b in 0..=15 {
        read(&mut l, b, 1);
    }
    assert_eq!((pg(&amp, 20), amp.lock().unwrap().tags()), ((5, Some(2)), vec![18]));
    // [18, 21]: 18 is the tag: trigger set [21, 25] (p 5, g 2); 20 is the last page: the stream head 25
    // grows to 5 + 4 = 9. 21 misses, 20 is cached: sequential, P = 20 (p 5): q = 5, set [21, 26], one read
    // with the trigger set's blocks; p(26) = 5, g 2, tag on 24. p(25) = 9 goes with its set.
    assert_eq!(read(&mut l, 18, 4), vec![fetch(21, 6, 1)]);
    for b in 21..=26 {
        assert_eq!(meta(&amp, b).last, 26, "page {b}");
    }
    assert_eq!((pg(&amp, 26), pg(&amp, 25)), ((5, Some(2)), (0, None)));
    assert_eq!(amp.lock().unwrap().tags(), vec![24]);
}

#[test]
fn amp_a_joined_page_is_reached_only_after_the_pages_before_it_that_the_access_fetches_again() {
    // The read reaches a page that joined a new set once the blocks fetched before it are in, and those
    // include the set's pages that the same access evicted and fetches again. An AMP study's seed 1444
    // (LRU, 6 blocks).
    let (mut l, amp) = amp_level(6, AmpParams::default());
    // 0, 5: sets of their own. [5, 6]: 5 is a last-page hit (p(5) = 2); 6 misses, 5 cached: sequential,
    // q = 2: set [6, 8], p 2 (no tag). Queue 7 8 6 5 0.
    read(&mut l, 0, 1);
    read(&mut l, 5, 1);
    assert_eq!(read(&mut l, 5, 2), vec![fetch(6, 3, 1)]);
    l.take_evicted();
    // [1, 4]: all miss, 0 cached: sequential, P = 0 has p 0: q = p_init = 4, set [1, 8] with p 4; 5..8
    // join it. Inserting 2, 3, 4 evicts 0, 5, 6; 5 and 6 are fetched again after the demand blocks, and
    // making room for 5 gives 8 and 7 their second chance: the read reaches them only after 5 and 6, so
    // they only become old and p(8) stays 4 (amp.md: read, then set_meta). Then 1 and 2 go.
    assert_eq!(read(&mut l, 1, 4), vec![fetch(1, 6, 4)]);
    assert_eq!(l.take_evicted(), vec![0, 5, 6, 1, 2]);
    assert!((5..=8).all(|b| meta(&amp, b).last == 8));
    assert!(meta(&amp, 7).old && meta(&amp, 8).old);
    assert_eq!(pg(&amp, 8), (4, None));
    // [9]: sequential, P = 8 with p 4: set [9, 13].
    assert_eq!(read(&mut l, 9, 1), vec![fetch(9, 5, 1)]);
}

#[test]
fn amp_a_tag_on_a_joined_page_survives_a_second_chance_given_before_the_read_fetches_again_the_pages_before_it() {
    // As above, with the trigger tag (an AMP study's seed 1397, LRU, 7 blocks).
    let (mut l, amp) = amp_level(7, AmpParams::default());
    // 0, 4: sets of their own. [5, 6]: sequential (4 cached), q = p_init = 2: set [5, 8], p 2.
    read(&mut l, 0, 1);
    read(&mut l, 4, 1);
    assert_eq!(read(&mut l, 5, 2), vec![fetch(5, 4, 2)]);
    l.take_evicted();
    // [0, 4]: 0 and 4 hit; 1 misses, 0 cached: sequential, q = p_init = 5: set [1, 9], p 5 > APT: g 2,
    // tag on 7; 4..8 join it. Inserting 2 and 3 evicts 5 and 6, fetched again after the demand blocks;
    // making room for 5 gives 8 and 7 their second chance before the read reaches them: 7 keeps the tag.
    assert_eq!(read(&mut l, 0, 5), vec![fetch(1, 3, 3), fetch(5, 2, 0), fetch(9, 1, 0)]);
    assert_eq!(l.take_evicted(), vec![5, 6, 0, 4, 1]);
    assert!(meta(&amp, 7).old && meta(&amp, 8).old);
    assert_eq!((pg(&amp, 9), amp.lock().unwrap().tags()), ((5, Some(2)), vec![7]));
    // [7]: the tag: an asynchronous set [10, 14] with p 5.
    assert_eq!(read(&mut l, 7, 1), vec![fetch(10, 5, 0)]);
}
