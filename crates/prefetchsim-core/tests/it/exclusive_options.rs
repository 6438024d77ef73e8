//! The parameters of DU and DEMOTE (`shared/docs/algorithms/multilevel.md`, "Parameters"): each one's
//! effect on a small worked case, the errors for a parameter given with the wrong mode, and the property
//! of DEMOTE's default (`demote_read_pos = "lru_end"`): the blocks L2 holds that L1 also holds are the
//! next ones L2 evicts.

use std::collections::HashSet;

use prefetchsim_core::config::{HierarchyConfig, LevelConfig, SizeSpec};
use prefetchsim_core::engine::instant::serve;
use prefetchsim_core::engine::Hierarchy;
use prefetchsim_core::eventlog::{EventKind, MemorySink};
use prefetchsim_core::level::{DemoteInsertPos, DemoteReadPos, DuPosition, Exclusive, LevelOptions};
use prefetchsim_core::request::{Fetch, Request};
use proptest::prelude::*;

/// Two LRU levels, L1 of `l1` blocks (prefetcher `l1_pf`) over L2 of `l2` (prefetcher `l2_pf`) with
/// the exclusive-caching options `opts`.
fn two_levels(l1: u64, l2: u64, l1_pf: &str, l2_pf: &str, opts: LevelOptions) -> HierarchyConfig {
    let mut a = LevelConfig::new(SizeSpec::Blocks(l1), "lru");
    a.prefetcher = serde_json::from_value(serde_json::json!(l1_pf)).unwrap();
    let mut b = LevelConfig::new(SizeSpec::Blocks(l2), "lru");
    b.prefetcher = serde_json::from_value(serde_json::json!(l2_pf)).unwrap();
    b.options = opts;
    HierarchyConfig { level: vec![a, b], ..HierarchyConfig::default() }
}

fn demote(read: Option<DemoteReadPos>, insert: Option<DemoteInsertPos>) -> LevelOptions {
    LevelOptions {
        exclusive: Exclusive::Demote,
        demote_read_pos: read,
        demote_insert_pos: insert,
        ..LevelOptions::default()
    }
}

fn du(position: Option<DuPosition>, on_prefetch: Option<bool>) -> LevelOptions {
    LevelOptions {
        exclusive: Exclusive::Du,
        du_position: position,
        du_on_prefetch: on_prefetch,
        ..LevelOptions::default()
    }
}

fn feed(h: &mut Hierarchy, blocks: &[u64]) {
    let mut scratch: Vec<Vec<Fetch>> = vec![Vec::new(); h.levels.len()];
    for &b in blocks {
        serve(h, &mut scratch, &Request::read(b, 1));
    }
}

fn build(cfg: &HierarchyConfig) -> Hierarchy {
    Hierarchy::build(cfg, 4096, None).unwrap()
}

#[test]
fn demote_by_default_caches_blocks_sent_up_at_l2s_eviction_end() {
    // L1 of 2 over L2 of 4, reads 1-5. L2 caches each miss at its eviction end; L1's evictions (1, 2, 3)
    // come down to its MRU end. Reading 5 fills L2: it evicts 4, the block it sent up last (L1 holds
    // it), not 1, the oldest demotion.
    let mut h = build(&two_levels(2, 4, "none", "none", demote(None, None)));
    feed(&mut h, &[1, 2, 3, 4, 5]);
    assert_eq!(h.levels[0].resident_blocks(), vec![4, 5]);
    assert_eq!(h.levels[1].resident_blocks(), vec![1, 2, 3, 5]);
    assert_eq!(h.levels[1].counters().evictions, 1);
    assert_eq!(h.levels[1].counters().demoted_in, 3);
    // A hit at L2 keeps the block (at the eviction end): 1 is in both levels. L1's eviction of 4 came
    // down first and evicted 5 (sent up, at the eviction end).
    feed(&mut h, &[1]);
    assert_eq!(h.levels[1].counters().hits, 1);
    assert_eq!(h.levels[0].resident_blocks(), vec![1, 5]);
    assert_eq!(h.levels[1].resident_blocks(), vec![1, 2, 3, 4]);
    // The strict variant: misses are not cached, the hit leaves.
    let mut h = build(&two_levels(2, 4, "none", "none", demote(Some(DemoteReadPos::None), None)));
    feed(&mut h, &[1, 2, 3, 4, 5]);
    assert_eq!(h.levels[1].resident_blocks(), vec![1, 2, 3]);
    feed(&mut h, &[1]);
    assert_eq!(h.levels[1].counters().hits, 1);
    assert_eq!(h.levels[1].resident_blocks(), vec![2, 3, 4]);
    // `lru_end` spelled out is the default.
    let mut h = build(&two_levels(2, 4, "none", "none", demote(Some(DemoteReadPos::LruEnd), None)));
    feed(&mut h, &[1, 2, 3, 4, 5, 1]);
    assert_eq!(h.levels[1].resident_blocks(), vec![1, 2, 3, 4]);
}

#[test]
fn demote_insert_pos_lru_end_puts_demoted_blocks_first_in_line() {
    // L1 of 1 over L2 of 2, reads 1, 2, 3. Reading 3 brings 2 down (L1 evicted it) and then misses 3,
    // which evicts one block: under `mru` the demoted 2 is safe and 1 goes; under `lru_end` 2 goes.
    let run = |insert| {
        let mut h = build(&two_levels(1, 2, "none", "none", demote(None, insert)));
        feed(&mut h, &[1, 2, 3]);
        h.levels[1].resident_blocks()
    };
    assert_eq!(run(None), vec![2, 3]);
    assert_eq!(run(Some(DemoteInsertPos::Mru)), vec![2, 3]);
    assert_eq!(run(Some(DemoteInsertPos::LruEnd)), vec![1, 3]);
}

#[test]
fn du_position_evict_now_drops_what_l2_sends_up() {
    // L1 of 1 over L2 of 3: under `lru_end` L2 keeps the blocks sent up (evicting the last one first);
    // under `evict_now` it caches no miss.
    let run = |pos| {
        let mut h = build(&two_levels(1, 3, "none", "none", du(pos, None)));
        feed(&mut h, &[1, 2, 3, 4]);
        h.levels[1].resident_blocks()
    };
    assert_eq!(run(None), vec![1, 2, 4]);
    assert_eq!(run(Some(DuPosition::LruEnd)), vec![1, 2, 4]);
    assert_eq!(run(Some(DuPosition::EvictNow)), Vec::<u64>::new());
    // L2 with RA(4) prefetches 1-4 after the miss on 0. Under `evict_now`, 0 is not cached and the hit on
    // 1 takes it out of L2 (a `removed` event); prefetched 2-4 stay.
    let mut h = build(&two_levels(1, 6, "none", "pfc-ra", du(Some(DuPosition::EvictNow), None)));
    let sink = MemorySink::default();
    let events = std::sync::Arc::clone(&sink.events);
    h.set_event_sink(Box::new(sink));
    feed(&mut h, &[0, 1]);
    h.log_all(0);
    assert_eq!(h.levels[1].counters().hits, 1);
    assert!(!h.levels[1].contains(0) && !h.levels[1].contains(1), "{:?}", h.levels[1].resident_blocks());
    assert!([2, 3, 4].iter().all(|&b| h.levels[1].contains(b)), "{:?}", h.levels[1].resident_blocks());
    let removed: Vec<u64> = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.level == 1 && e.ev.kind == EventKind::Removed)
        .map(|e| e.ev.block)
        .collect();
    assert_eq!(removed, vec![1]);
}

#[test]
fn du_on_prefetch_sends_l2s_own_prefetches_to_the_eviction_end() {
    // L2 (6 blocks, RA(4)) prefetches 1-4 after 0 and 51-54 after 50. By default the prefetched blocks
    // keep their place and the blocks sent up (0, 50) go first; with `du_on_prefetch` 1-4 are at the
    // eviction end too, in front of 0, and 50's prefetches evict 50, 4, 3 and 2.
    let run = |on_prefetch| {
        let mut h = build(&two_levels(1, 6, "none", "pfc-ra", du(None, on_prefetch)));
        feed(&mut h, &[0, 50]);
        h.levels[1].resident_blocks()
    };
    assert_eq!(run(None), vec![1, 2, 51, 52, 53, 54]);
    assert_eq!(run(Some(false)), vec![1, 2, 51, 52, 53, 54]);
    assert_eq!(run(Some(true)), vec![0, 1, 51, 52, 53, 54]);
}

#[test]
fn demote_removes_on_hit_only_under_none() {
    // The `removed` event (events.md: consumed by a hit) is DEMOTE `none`'s; the default keeps the hit.
    let removed = |read| {
        let mut h = build(&two_levels(2, 4, "none", "none", demote(read, None)));
        let sink = MemorySink::default();
        let events = std::sync::Arc::clone(&sink.events);
        h.set_event_sink(Box::new(sink));
        feed(&mut h, &[1, 2, 3, 1]);
        h.log_all(0);
        assert_eq!(h.levels[1].counters().hits, 1);
        let n = events.lock().unwrap().iter().filter(|e| e.level == 1 && e.ev.kind == EventKind::Removed).count();
        n
    };
    assert_eq!(removed(Some(DemoteReadPos::None)), 1);
    assert_eq!(removed(None), 0);
}

/// The error of building `text` (two levels, the second with `options`, the first with `top`).
fn error_of(top: &str, options: &str) -> (String, String) {
    let text = format!("[[level]]\nsize = 4\noptions = {{ {top} }}\n[[level]]\nsize = 8\noptions = {{ {options} }}\n");
    let e = match HierarchyConfig::from_toml(&text) {
        Err(e) => e,
        Ok(cfg) => Hierarchy::build(&cfg, 4096, None).err().expect("a config error"),
    };
    (e.path, e.message)
}

#[test]
fn a_parameter_given_with_the_wrong_mode_is_an_error_naming_it() {
    let cases = [
        ("exclusive = 'demote', du_position = 'evict_now'", "level[1].options.du_position"),
        ("exclusive = 'demote', du_on_prefetch = false", "level[1].options.du_on_prefetch"),
        ("exclusive = 'du', demote_read_pos = 'none'", "level[1].options.demote_read_pos"),
        ("exclusive = 'du', demote_insert_pos = 'mru'", "level[1].options.demote_insert_pos"),
        ("du_position = 'lru_end'", "level[1].options.du_position"),
        ("demote_read_pos = 'lru_end'", "level[1].options.demote_read_pos"),
    ];
    for (options, path) in cases {
        let (p, m) = error_of("", options);
        assert_eq!(p, path, "{options}: {m}");
        assert!(m.contains("exclusive = "), "{options}: {m}");
    }
    // On the first level (which has no level above) too.
    assert_eq!(error_of("demote_insert_pos = 'lru_end'", "").0, "level[0].options.demote_insert_pos");
    // A value outside the choices, and the reference's parameters that are not options.
    for options in ["exclusive = 'du', du_position = 'lru'", "exclusive = 'demote', demote_dirty = false"] {
        let (p, m) = error_of("", options);
        assert!(p.starts_with("level[1].options"), "{options}: {p}: {m}");
    }
    // Each mode's own parameters are accepted.
    for options in [
        "exclusive = 'du', du_position = 'evict_now', du_on_prefetch = true",
        "exclusive = 'demote', demote_read_pos = 'none', demote_insert_pos = 'lru_end'",
    ] {
        let cfg = HierarchyConfig::from_toml(&format!(
            "[[level]]\nsize = 4\n[[level]]\nsize = 8\noptions = {{ {options} }}\n"
        ))
        .unwrap();
        assert!(Hierarchy::build(&cfg, 4096, None).is_ok(), "{options}");
    }
}

/// L2's resident blocks in the order it would evict them: rebuild the hierarchy, replay `reqs`, then
/// demote fresh blocks into L2 (they go to its MRU end) until every block it held was evicted.
fn l2_eviction_order(cfg: &HierarchyConfig, reqs: &[Request]) -> Vec<u64> {
    let mut h = build(cfg);
    let mut scratch: Vec<Vec<Fetch>> = vec![Vec::new(); 2];
    for r in reqs {
        serve(&mut h, &mut scratch, r);
    }
    let held: HashSet<u64> = h.levels[1].resident_blocks().into_iter().collect();
    h.levels[1].record_evictions(true);
    for i in 0..h.levels[1].capacity() as u64 {
        h.levels[1].demote_in(1 << 40 | i, 0);
    }
    let order: Vec<u64> = h.levels[1].take_evicted().into_iter().filter(|b| held.contains(b)).collect();
    assert_eq!(order.len(), held.len());
    order
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// DEMOTE's default (`lru_end` for blocks sent up, `mru` for demoted ones), LRU at both levels and no
    /// prefetcher at L2: after each request, every block L2 holds that L1 holds too is nearer L2's
    /// eviction end than every block L2 holds that L1 does not. A block is in both levels only from L2
    /// sending it up (to the eviction end) until L1 evicts it (it comes down to the MRU end), so L2 evicts
    /// copies of L1's blocks before anything else. (With `demote_read_pos = "none"` the levels are
    /// disjoint: `exclusive.rs`.)
    #[test]
    fn demote_lru_end_evicts_the_blocks_l1_holds_first(
        reqs in prop::collection::vec((0u64..48, 1u32..5), 1..60), l1 in 1u64..8, l2 in 1u64..16, ra in any::<bool>()
    ) {
        let reqs: Vec<Request> = reqs.into_iter().map(|(b, n)| Request::read(b, n)).collect();
        let cfg = two_levels(l1, l2, if ra { "pfc-ra" } else { "none" }, "none", demote(None, None));
        let mut h = build(&cfg);
        let mut scratch: Vec<Vec<Fetch>> = vec![Vec::new(); 2];
        for (i, r) in reqs.iter().enumerate() {
            serve(&mut h, &mut scratch, r);
            for l in &h.levels {
                prop_assert_eq!(l.check_invariants(), Ok(()));
            }
            let order = l2_eviction_order(&cfg, &reqs[..=i]);
            let in_l1: Vec<bool> = order.iter().map(|&b| h.levels[0].contains(b)).collect();
            let first_not = in_l1.iter().position(|&x| !x).unwrap_or(in_l1.len());
            prop_assert!(in_l1[first_not..].iter().all(|&x| !x), "after {}: L2's eviction order {:?}, L1 {:?}",
                i, order, h.levels[0].resident_blocks());
        }
    }
}
