//! TaP's detection table and prefetch-cache sizing (`shared/docs/algorithms/tap.md`).

use super::*;

// ---------------------------------------------------------------------------------------------------
// TaP: the detection table and the prefetch-cache size (tap.md).
// ---------------------------------------------------------------------------------------------------

#[test]
fn tap_detects_streams_from_missed_addresses_in_its_table() {
    let (p, t) = Shared::new(tap(json!({"table_init": 2, "table_max": 8})));
    let mut l = lru_level(1000, p);
    // A miss that continues nothing goes into the table as the block it expects next.
    assert_eq!(serve(&mut l, Request::read(100, 4)).len(), 1);
    assert_eq!(lock(&t).table(), vec![104]);
    serve(&mut l, Request::read(500, 1));
    assert_eq!(lock(&t).table(), vec![501, 104]);
    assert_eq!(l.counters().prefetch_issued, 0, "no prefetch for unconfirmed traffic");
    // 104 continues the first request: a stream. The entry goes, a group of P = max(4, 2 x 4) = 8 blocks
    // is prefetched with its trigger on its first block, and the block after the group enters the table.
    let out = serve(&mut l, Request::read(104, 4));
    assert_eq!(out, vec![Fetch { first: 104, len: 12, demand_len: 4, stream: 0, client: 0 }]);
    assert_eq!(lock(&t).marks(), vec![(108, 115)]);
    assert_eq!(lock(&t).table(), vec![116, 501]);
    assert_eq!(lock(&t).stats().matches, 1);
    // A hit on the trigger starts the next group; the table, full, pushes its oldest entry to the ghost.
    assert_eq!(
        serve(&mut l, Request::read(108, 4)),
        vec![Fetch { first: 116, len: 8, demand_len: 0, stream: 1, client: 0 }]
    );
    assert_eq!(lock(&t).marks(), vec![(116, 123)]);
    assert_eq!(lock(&t).table(), vec![124, 116]);
    assert_eq!(lock(&t).table_ghost(), vec![501]);
    // A miss that a ghost entry would have matched doubles the table (no prefetch: it did not match).
    serve(&mut l, Request::read(501, 1));
    assert_eq!(lock(&t).table_limit(), 4);
    assert_eq!(lock(&t).table(), vec![502, 124, 116]);
    // A stream that skips past its trigger misses at the block after its group, which is in the table.
    let out = serve(&mut l, Request::read(124, 2));
    assert_eq!(out, vec![Fetch { first: 124, len: 6, demand_len: 2, stream: 0, client: 0 }]);
    assert_eq!(lock(&t).stats().matches, 2);
    // A request that hits entirely never touches the table.
    let before = lock(&t).table();
    serve(&mut l, Request::read(109, 2));
    assert_eq!(lock(&t).table(), before);
}

#[test]
fn tap_grows_its_prefetch_cache_on_early_evictions_and_shrinks_it_when_idle() {
    let (p, t) = Shared::new(tap(json!({"epoch": 100})));
    let mut l = lru_level(600, p);
    let cp0 = lock(&t).cp();
    assert_eq!(cp0, 30, "5% of 600 blocks");
    // 48 interleaved streams of 4-block requests: groups of 8 blocks each, 384 blocks ahead at most; the
    // unraised ones are pushed out by the demand traffic before use, and come back as demand misses.
    let mut rng = 7u64;
    let mut pos: Vec<u64> = (0..48).map(|i| i * 1_000_000).collect();
    for _ in 0..20_000 {
        let k = (splitmix(&mut rng) % 48) as usize;
        serve(&mut l, Request::read(pos[k], 4));
        pos[k] += 4;
    }
    let grown = lock(&t).cp();
    println!("TaP Cp: {cp0} -> {grown} after the streams ({:?})", lock(&t).stats());
    assert!(grown > cp0, "{grown}");
    // Random traffic: no early evictions, old unused blocks: Cp shrinks.
    for _ in 0..20_000 {
        serve(&mut l, Request::read(100_000_000 + splitmix(&mut rng) % 10_000_000, 1));
    }
    let shrunk = lock(&t).cp();
    println!("TaP Cp: {grown} -> {shrunk} after random traffic");
    assert!(shrunk < grown, "{shrunk}");
}

/// Blocks resident after one-block reads of `blocks` on an LRU level of `capacity` with TaP (defaults).
fn tap_after(capacity: usize, blocks: &[u64]) -> Level<Lru> {
    let mut level = lru_level(capacity, pf("tap", json!({})));
    for &b in blocks {
        serve(&mut level, Request::read(b, 1));
    }
    level
}

/// Both blocks a group's prefetch-cache overflow evicted unused are in TaP's PF_ghost, so a miss on
/// either grows `Cp` (tap.md) and the victim is then a demand block (the outside model's case, study of
/// 2026-12-07 D5). TaP trimmed its list of unused blocks to the cache when it planned the group, before
/// the level's evictions, so the older of the two (1007) never reached the ghost list.
#[test]
fn tap_ghosts_every_unused_block_its_prefetch_cache_overflow_evicts() {
    for last in [1007, 1008] {
        let level = tap_after(6, &[1004, 1004, 1005, 1006, last]);
        let t = level.table();
        assert!(!t.contains(1006) && t.contains(1009), "{last}: the demand block 1006 is the victim, not 1009");
    }
}

/// A trigger set on a resident block whose old copy the same access evicts and fetches again stays on
/// the new copy (as RA's and SARC's marks do, algorithms.md "Trigger marks"): its hit starts the next
/// group (the outside model's case, D4). The mark was dropped with the old copy.
#[test]
fn tap_keeps_a_trigger_over_the_old_copy_its_access_evicts() {
    let blocks = [1613, 1614, 1615, 1618, 1619, 1609, 1621, 1622, 1623, 1617, 1619, 1624, 1625];
    // Request 11 (1624) starts group 1625..1628 with 1625 resident and unused; inserting 1624 evicts it,
    // the group reads it again; request 12 hits it and starts 1629..1632.
    let level = tap_after(11, &blocks);
    assert!(level.table().contains(1631) && level.table().contains(1632), "no group after the trigger's hit");
}
