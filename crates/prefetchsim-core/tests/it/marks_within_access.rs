//! A trigger mark set by an access survives the eviction, by that same access, of its block's old copy
//! when the access fetches the block again (RA `trigger` and SARC); so does the read-set metadata AMP
//! sets on the pages of a new set (`last`, `p` on the last page, the trigger tag).
//!
//! Found by a user study (`studies/policies.md`, finding 1): in one access the level first makes room for
//! the demand miss, then inserts the prefetch group. When the block that carries the new group's trigger
//! was resident, was evicted by that room-making and was fetched again as part of the group, the eviction
//! cleared the mark the access had just set, so the new group had no trigger and the stream stalled.
//! `sequential.md` (`start_group`: "set the mark even when t was already cached") and `sarc.md` set the
//! mark unconditionally; nothing lets the access's own evictions undo it. A second study
//! (`studies/policies2.md`, finding 2) found the same for AMP: `amp.md`'s `set_meta` puts `p` on the set's
//! last page and the tag on page `l - g` unconditionally, and already-cached pages of a prefetch range
//! join the new set.

use prefetchsim_core::build::{build_level, build_prefetcher};
use prefetchsim_core::level::{AnyLevel, LevelOptions};
use prefetchsim_core::{ComponentSpec, Request};

fn level(policy: &str, pf: serde_json::Value, capacity: usize) -> Box<dyn AnyLevel> {
    let serde_json::Value::Object(mut params) = pf else { unreachable!() };
    let name = params.remove("name").and_then(|v| v.as_str().map(str::to_string)).expect("a name");
    let (_, pf) = build_prefetcher("pf", &ComponentSpec { name, params }).expect("prefetcher");
    build_level("policy", &ComponentSpec::named(policy), capacity, LevelOptions::default(), pf).expect("level").1
}

/// The blocks each read `(first, len)` fetches beyond its own blocks, with the event log on or off.
fn prefetched_runs(level: &mut dyn AnyLevel, reads: &[(u64, u32)], events: bool) -> Vec<Vec<u64>> {
    level.record_events(events);
    reads
        .iter()
        .map(|&(first, len)| {
            let mut out = Vec::new();
            level.access(&Request::read(first, len), 1, &mut out);
            level.check_invariants().unwrap();
            let mine = first..first + u64::from(len);
            out.iter().flat_map(|f| (f.first..f.first + u64::from(f.len)).filter(|x| !mine.contains(x))).collect()
        })
        .collect()
}

/// The blocks each one-block read prefetches (the fetched blocks past the demand block), with the event
/// log on (general path) or off (lean path).
fn prefetched(level: &mut dyn AnyLevel, blocks: &[u64], events: bool) -> Vec<Vec<u64>> {
    level.record_events(events);
    blocks
        .iter()
        .map(|&b| {
            let mut out = Vec::new();
            level.access(&Request::read(b, 1), 1, &mut out);
            level.check_invariants().unwrap();
            out.iter().flat_map(|f| (f.first..f.first + u64::from(f.len)).filter(|&x| x != b)).collect()
        })
        .collect()
}

#[test]
fn ra_trigger_keeps_the_mark_of_a_block_evicted_and_fetched_again_by_the_same_access() {
    // P = 2, g = 1: the trigger is the first block of a group. Read 1 misses: group [2,3], trigger 2.
    // Read 2 hits the trigger: group [4,5], trigger 4 (3 frames: 1, 2 and 3 leave for 4 and 5). Read 1
    // misses again: it evicts the used block 2 to make room, then prefetches [2,3] again and marks 2.
    // Read 2 is a first hit on that mark and starts [4,5]. Before the fix the eviction of 2's old copy
    // cleared the new mark and read 3 prefetched nothing.
    for events in [false, true] {
        let mut l = level("lru", serde_json::json!({"name": "ra", "mode": "trigger", "p": 2}), 3);
        let got = prefetched(l.as_mut(), &[1, 2, 1, 2, 3], events);
        assert_eq!(got, vec![vec![2, 3], vec![4, 5], vec![2, 3], vec![4, 5], vec![]], "events {events}");
    }
}

#[test]
fn sarc_keeps_the_trigger_of_a_group_whose_old_copies_the_same_access_evicted() {
    // u = 8, g = 4. The control run: read 7 is a sequential miss, group [8,15] with trigger 11; the hit on
    // 11 starts [16,23].
    let sarc = || level("sarc", serde_json::json!({"name": "sarc"}), 10);
    let eight = |a: u64| (a..a + 8).collect::<Vec<_>>();
    for events in [false, true] {
        let got = prefetched(sarc().as_mut(), &[6, 7, 8, 9, 10, 11], events);
        assert_eq!(got, vec![vec![], eight(8), vec![], vec![], vec![], eight(16)], "control, events {events}");
        // Read 21 (random) evicts 7, the SEQ list's LRU block. Read 7 misses with 6 cached: a sequential
        // miss, group [8,15] again with trigger 11. Making room for 7 and the group evicts the unused old
        // copies of 8..15 one by one, after the trigger 11 was set on its resident old copy; 8..15 are
        // read again. The hit on 11 (request 7) must start [16,23] (21 is cached, not read).
        let got = prefetched(sarc().as_mut(), &[6, 7, 21, 7, 8, 9, 10, 11], events);
        assert_eq!(got[3], eight(8), "events {events}");
        let next: Vec<u64> = (16..24).filter(|&b| b != 21).collect();
        assert_eq!(got[7], next, "events {events}: {got:?}");
    }
}

#[test]
fn sarc_counts_a_group_block_fetched_again_by_the_access_that_evicted_its_old_copy() {
    // seqThreshold 3, u = 2 (g = 1), LRU of 4 frames. Reads 8, 9, 10: the third is a sequential miss
    // (cnt 1, 2, 3) and starts the group [11,12], whose blocks were cached (reads 0 and 1, the oldest).
    // Making room for 10 and the group evicts both old copies; the group reads them again, so the new
    // copies are prefetched blocks with cnt 3. Reads 30 and 31 evict 8 and 9; read 12 hits; read 13
    // misses with 12 cached: cnt(13) = min(3, cnt(12) + 1) = 3, a sequential miss that prefetches
    // [14,15]. The control run has other blocks where 11 and 12 were. Before the fix the eviction of 12's
    // old copy dropped its counter for good, cnt(13) was 2 and read 13 prefetched nothing.
    let params = serde_json::json!({"name": "sarc", "degree": 2, "seq_threshold": 3});
    for events in [false, true] {
        let control = prefetched(level("lru", params.clone(), 4).as_mut(), &[50, 51, 8, 9, 10, 30, 31, 12, 13], events);
        assert_eq!(control[8], vec![14, 15], "control, events {events}: {control:?}");
        let got = prefetched(level("lru", params.clone(), 4).as_mut(), &[11, 12, 8, 9, 10, 30, 31, 12, 13], events);
        assert_eq!(got[4], vec![11, 12], "events {events}: {got:?}");
        assert_eq!(got[8], vec![14, 15], "events {events}: {got:?}");
    }
}

#[test]
fn amp_keeps_p_on_a_last_page_whose_old_copy_the_building_access_evicted() {
    // `studies/policies2.md`, reproduction A (1-block reads, LRU with AMP, 4 frames). Read 1 (request 4)
    // misses with 0 cached: a sequential miss that builds the set [1,2] with p = 1 on page 2. Making room
    // for 1 evicts the old copy of 2 (with 10), and the set reads 2 again. Request 5 hits 2, the set's
    // last page: p = 2. Request 6 (miss on 3) reads q = 2 pages, 4 and 5. Before the fix the new copy of
    // 2 had no metadata (a page alone), p stayed 1 and request 6 read 4 only.
    let reads: Vec<(u64, u32)> = [2, 10, 20, 0, 1, 2, 3, 4, 5, 6, 7, 8].iter().map(|&b| (b, 1)).collect();
    for events in [false, true] {
        let mut want: Vec<Vec<u64>> = vec![vec![]; reads.len()];
        (want[6], want[9]) = (vec![4, 5], vec![7, 8, 9]);
        let control = prefetched_runs(level("lru", serde_json::json!({"name": "amp"}), 8).as_mut(), &reads, events);
        assert_eq!(control, want, "control (8 frames, nothing fetched again), events {events}");
        want[4] = vec![2];
        let got = prefetched_runs(level("lru", serde_json::json!({"name": "amp"}), 4).as_mut(), &reads, events);
        assert_eq!(got, want, "events {events}");
    }
}

#[test]
fn amp_keeps_the_trigger_tag_of_a_page_whose_old_copy_the_building_access_evicted() {
    // `studies/policies2.md`, reproduction B. Request 2 ([5,9], sequential, p = 5 > APT) builds the set
    // [5,14] with g = 2 and the tag on page 12, which is cached (request 0). At 12 frames the same access
    // evicts the old 12 and reads it again; request 5's hit on 12 must issue the next set [15,19]. Before
    // the fix the new copy of 12 had no tag and the stream ran without asynchronous prefetching.
    let reads = [(12, 1), (0, 5), (5, 5), (10, 1), (11, 1), (12, 1), (13, 1)];
    let run = |b: u64| (b..b + 5).collect::<Vec<u64>>();
    for events in [false, true] {
        for size in [20, 12] {
            let got = prefetched_runs(level("lru", serde_json::json!({"name": "amp"}), size).as_mut(), &reads, events);
            let mut want: Vec<Vec<u64>> = vec![vec![]; reads.len()];
            (want[2], want[5]) = (run(10), run(15));
            if size == 20 {
                want[2].retain(|&b| b != 12); // cached, not read again
            }
            assert_eq!(got, want, "size {size}, events {events}");
        }
    }
}
