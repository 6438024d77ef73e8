//! SARC (policy and prefetcher) and AMP: hand-worked sequences whose expected values are derived from
//! `shared/docs/algorithms/sarc.md` and `amp.md` (the derivation is written beside each step), the
//! acceptance checks (prefetch-hit share on a sequential stream, waste on random traffic against RA(4)),
//! configuration rules, and property tests over random and mixed workloads.

use std::sync::{Arc, Mutex};

use prefetchsim_core::build::build_level;
use prefetchsim_core::component::ComponentSpec;
use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{run_instant, Hierarchy, Silent, VecSource};
use prefetchsim_core::level::{AnyLevel, CacheLevel, Demotion, Level, LevelOptions};
use prefetchsim_core::policy::lru::Lru;
use prefetchsim_core::policy::sarc::{BottomMode, InitDesired, Sarc, SarcParams, SEQ};
use prefetchsim_core::policy::{Entry, FirstHit, Placement, PolicyEnv};
use prefetchsim_core::prefetch::amp::{Amp, AmpParams, PageMeta};
use prefetchsim_core::prefetch::none::NoPrefetch;
use prefetchsim_core::prefetch::sarc::{Group, SarcPrefetchParams, SarcPrefetcher};
use prefetchsim_core::prefetch::{CacheView, Outcome, PrefetchCtx, Prefetcher};
use prefetchsim_core::request::{Fetch, Request};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------------------
// Harness

/// A prefetcher the test can still read after the level took it.
struct Shared<P>(Arc<Mutex<P>>);

impl<P: Prefetcher> Prefetcher for Shared<P> {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        self.0.lock().unwrap().on_access(ctx);
    }
    fn on_second_chance(&mut self, entry: &Entry, cache: CacheView<'_>) {
        self.0.lock().unwrap().on_second_chance(entry, cache);
    }
    fn on_evicted(&mut self, entry: &Entry) {
        self.0.lock().unwrap().on_evicted(entry);
    }
    fn on_late(&mut self, block: u64) {
        self.0.lock().unwrap().on_late(block);
    }
    fn attach(
        &mut self,
        geometry: prefetchsim_core::prefetch::LevelGeometry,
    ) -> prefetchsim_core::prefetch::Capabilities {
        self.0.lock().unwrap().attach(geometry)
    }
}

/// Test prefetcher: a request of stream 1 that misses is a sequential miss (its demand blocks go to
/// SEQ); nothing is prefetched. Drives SARC's lists by hand.
struct MarkSeq;

impl Prefetcher for MarkSeq {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        if ctx.req.stream == 1 && ctx.any_miss() {
            ctx.plan.demand_placement = Placement::List(SEQ);
        }
    }
}

/// RA(P) in its Prefetch-Always form (sequential.md): after every request, prefetch `[e+1, e+P]`.
struct RaAlways(u32);

impl Prefetcher for RaAlways {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        let next = ctx.req.last() + 1;
        ctx.prefetch(next, self.0);
    }
}

fn sarc_params(delta_l: u64) -> SarcParams {
    SarcParams { delta_l: Some(delta_l), ..SarcParams::default() }
}

/// A SARC level (policy `params`, prefetcher `pf`) and a handle on its prefetcher.
fn sarc_level(cap: usize, params: SarcParams, pf: SarcPrefetchParams) -> (Level<Sarc>, Arc<Mutex<SarcPrefetcher>>) {
    let env = PolicyEnv { capacity: cap, first_hit: FirstHit::Promote };
    let shared = Arc::new(Mutex::new(SarcPrefetcher::new(pf)));
    let mut l = Level::new(cap, Sarc::new(&env, params), Box::new(Shared(shared.clone())), LevelOptions::default());
    l.record_evictions(true);
    (l, shared)
}

/// A SARC policy level driven by [`MarkSeq`].
fn marked_level(cap: usize, params: SarcParams) -> Level<Sarc> {
    let env = PolicyEnv { capacity: cap, first_hit: FirstHit::Promote };
    let mut l = Level::new(cap, Sarc::new(&env, params), Box::new(MarkSeq), LevelOptions::default());
    l.record_evictions(true);
    l
}

/// An LRU level with AMP (and AMP's first-hit rule, as `build_level` would give it).
fn amp_level(cap: usize, params: AmpParams) -> (Level<Lru>, Arc<Mutex<Amp>>) {
    let mut amp = Amp::new(params);
    let first_hit = amp
        .attach(prefetchsim_core::prefetch::LevelGeometry { capacity: cap, block_bytes: 4096 })
        .first_hit
        .unwrap_or_default();
    let env = PolicyEnv { capacity: cap, first_hit };
    let opts = LevelOptions { first_hit, ..LevelOptions::default() };
    let shared = Arc::new(Mutex::new(amp));
    let mut l = Level::new(cap, Lru::new(&env), Box::new(Shared(shared.clone())), opts);
    l.record_evictions(true);
    (l, shared)
}

/// Serve `[first, first+len-1]` of `stream`; returns the fetches. Checks the invariants.
fn read_s(l: &mut dyn AnyLevel, first: u64, len: u32, stream: u32) -> Vec<Fetch> {
    let mut out = Vec::new();
    let req = Request { stream, ..Request::read(first, len) };
    l.access(&req, len, &mut out);
    l.check_invariants().unwrap();
    out
}

fn read(l: &mut dyn AnyLevel, first: u64, len: u32) -> Vec<Fetch> {
    read_s(l, first, len, 0)
}

fn fetch(first: u64, len: u32, demand_len: u32) -> Fetch {
    Fetch { first, len, demand_len, stream: 0, client: 0 }
}

fn seq(l: &Level<Sarc>) -> Vec<u64> {
    l.policy().seq_blocks(l.table())
}

fn random(l: &Level<Sarc>) -> Vec<u64> {
    l.policy().random_blocks(l.table())
}

fn desc(a: u64, b: u64) -> Vec<u64> {
    (a..=b).rev().collect()
}

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

// ---------------------------------------------------------------------------------------------------------
// SARC: the cache side

#[test]
fn sarc_random_bottom_hit_sets_adapt_and_each_eviction_moves_desired_by_half_of_it() {
    // C = 8, ΔL = 2. Blocks of stream 1 are sequential misses (SEQ), others go to RANDOM.
    let mut l = marked_level(8, sarc_params(2));
    for b in 1..=4 {
        read(&mut l, b, 1); // RANDOM 4 3 2 1, T(b) = b
    }
    for b in 11..=14 {
        read_s(&mut l, b, 1, 1); // SEQ 14 13 12 11, T = 5..8, seqMiss = 4
    }
    assert_eq!((l.policy().seq_miss(), l.len()), (4, 8));
    // Hit on 1 (t = 9): ratio = 2·seqMiss·ΔL/|SEQ| = 2·4·2/4 = 4. 1 is RANDOM's LRU block:
    // T(1) - T(LRU) = 0 <= (ΔL/|RANDOM|)·(T(MRU) - T(LRU)) = 0.5·3. So seqMiss = 0, adapt = min(4-1, 1) = 1.
    read(&mut l, 1, 1);
    let p = l.policy();
    assert_eq!((p.ratio(), p.adapt(), p.seq_miss(), p.desired()), (4.0, 1.0, 0, 0.0));
    assert_eq!(random(&l), vec![1, 4, 3, 2]);
    // 5 (miss): both lists >= ΔL and |SEQ| = 4 > desired 0: LRU(SEQ) = 11 goes; desired += 1/2.
    read(&mut l, 5, 1);
    assert_eq!((l.take_evicted(), l.policy().desired()), (vec![11], 0.5));
    // 6: |SEQ| = 3 > 0.5: 12 goes; desired 1.0.
    read(&mut l, 6, 1);
    assert_eq!((l.take_evicted(), l.policy().desired()), (vec![12], 1.0));
    // Hit on 2 (t = 12): seqMiss = 0, so ratio = 0. RANDOM = 6 5 1 4 3 2 with T 11 10 9 4 3 2:
    // T(2) - 2 = 0 <= (2/6)·9: in the bottom. adapt = max(0 - 1, -1) = -1.
    read(&mut l, 2, 1);
    assert_eq!((l.policy().ratio(), l.policy().adapt()), (0.0, -1.0));
    // 7: |SEQ| = 2 > desired 1.0: 13 goes; desired 1.0 - 0.5 = 0.5.
    read(&mut l, 7, 1);
    assert_eq!((l.take_evicted(), l.policy().desired()), (vec![13], 0.5));
    // 8: |SEQ| = 1 < ΔL: global LRU by timestamp: LRU(SEQ) = 14 (T 8), LRU(RANDOM) = 3 (T 3): 3 goes.
    // desired 0.5 - 0.5 = 0.
    read(&mut l, 8, 1);
    assert_eq!((l.take_evicted(), l.policy().desired()), (vec![3], 0.0));
    // 9: 14 (T 8) against 4 (T 4): 4 goes; desired stays at its floor 0.
    read(&mut l, 9, 1);
    assert_eq!((l.take_evicted(), l.policy().desired()), (vec![4], 0.0));
    // 15: 14 (T 8) against 1 (T 9): SEQ's block is older and goes.
    read(&mut l, 15, 1);
    assert_eq!(l.take_evicted(), vec![14]);
    assert_eq!((seq(&l), random(&l)), (vec![], vec![15, 9, 8, 7, 2, 6, 5, 1]));
}

#[test]
fn sarc_seq_bottom_hit_with_a_large_ratio_forces_seq_to_grow() {
    for (large_ratio, want_adapt, want_desired) in [(20.0, 1.0, 0.5), (25.0, 0.0, 0.0)] {
        let mut l = marked_level(8, SarcParams { large_ratio, ..sarc_params(2) });
        for b in 1..=4 {
            read(&mut l, b, 1);
        }
        // 21 sequential misses; from the fifth on, |SEQ| = 4 > desired 0 evicts LRU(SEQ): SEQ ends as
        // 121 120 119 118 (T 25..22) and seqMiss = 21 (no RANDOM bottom hit restarted it).
        for b in 101..=121 {
            read_s(&mut l, b, 1, 1);
        }
        assert_eq!((seq(&l), l.policy().seq_miss()), (vec![121, 120, 119, 118], 21));
        // Hit on 118, SEQ's LRU block: ratio = 2·21·2/4 = 21; in the bottom (T - 22 = 0 <= 0.5·3).
        read_s(&mut l, 118, 1, 1);
        assert_eq!(l.policy().ratio(), 21.0);
        assert_eq!(l.policy().adapt(), want_adapt, "largeRatio {large_ratio}");
        // 5: |SEQ| = 4 > desired: 119 goes, then desired moves by adapt/2.
        read(&mut l, 5, 1);
        assert_eq!(l.take_evicted().last(), Some(&119));
        assert_eq!(l.policy().desired(), want_desired, "largeRatio {large_ratio}");
    }
}

#[test]
fn sarc_exact_bottom_differs_from_the_timestamp_approximation() {
    // RANDOM: 1..9 (T 1..9), then 30 SEQ blocks (T 10..39), then 10 (T 40). |RANDOM| = 10, ΔL = 2.
    // Timestamps: bottom = T - 1 <= (2/10)·39 = 7.8, so 1..8 are all "in the bottom"; exact: only 1, 2.
    for mode in [BottomMode::Timestamp, BottomMode::Exact] {
        let mut l = marked_level(40, SarcParams { bottom_mode: mode, ..sarc_params(2) });
        for b in 1..=9 {
            read(&mut l, b, 1);
        }
        for b in 101..=130 {
            read_s(&mut l, b, 1, 1);
        }
        read(&mut l, 10, 1);
        // Hit on 5 (5th from the LRU end); ratio = 2·30·2/30 = 4.
        read(&mut l, 5, 1);
        let (adapt, seq_miss) = (l.policy().adapt(), l.policy().seq_miss());
        match mode {
            BottomMode::Timestamp => assert_eq!((adapt, seq_miss), (1.0, 0)),
            BottomMode::Exact => assert_eq!((adapt, seq_miss), (0.0, 30)),
        }
        // Hit on 2, second from the LRU end: in the bottom either way.
        read(&mut l, 2, 1);
        let want = if mode == BottomMode::Exact { 1.0 } else { -1.0 };
        assert_eq!(l.policy().adapt(), want, "{mode:?}");
    }
}

#[test]
fn sarc_init_desired_current_seq_size_starts_from_seq_at_the_first_adaptation() {
    let mut l = marked_level(8, SarcParams { init_desired: InitDesired::CurrentSeqSize, ..sarc_params(2) });
    for b in 1..=4 {
        read(&mut l, b, 1);
    }
    for b in 11..=14 {
        read_s(&mut l, b, 1, 1);
    }
    read(&mut l, 1, 1); // adapt = 1 as above; desired first takes |SEQ| = 4
    assert_eq!(l.policy().desired(), 4.0);
    // 5: |SEQ| = 4 is not above 4: RANDOM's LRU block 2 goes; desired 4.5.
    read(&mut l, 5, 1);
    assert_eq!((l.take_evicted(), l.policy().desired()), (vec![2], 4.5));
}

#[test]
fn sarc_policy_without_prefetching_is_lru() {
    let reqs: Vec<(u64, u32)> = (0..3000u64).map(|i| ((i * 7919) % 211, 1 + (i % 3) as u32)).collect();
    let env = PolicyEnv { capacity: 50, first_hit: FirstHit::Promote };
    let mut a = Level::new(50, Sarc::new(&env, SarcParams::default()), Box::new(NoPrefetch), LevelOptions::default());
    let mut b = Level::new(50, Lru::new(&env), Box::new(NoPrefetch), LevelOptions::default());
    for &(first, len) in &reqs {
        read(&mut a, first, len);
        read(&mut b, first, len);
    }
    assert_eq!(a.counters(), b.counters());
    assert_eq!(random(&a), b.policy().queue(b.table()));
}

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

// ---------------------------------------------------------------------------------------------------------
// Acceptance: prefetch-hit share on a sequential stream, waste on random traffic

fn run_config(toml: &str, reqs: Vec<Request>) -> prefetchsim_core::metrics::LevelCounters {
    let cfg = HierarchyConfig::from_toml(toml).unwrap();
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    let r = run_instant(&mut VecSource::new(reqs), &mut h, &cfg.engine, &mut Silent).unwrap();
    r.levels[0].counters.clone()
}

const SARC_TOML: &str = "policy = 'sarc'\nprefetcher = 'sarc'\n";
const AMP_TOML: &str = "prefetcher = 'amp'\n";

fn sequential(n: u64, len: u32) -> Vec<Request> {
    (0..n).map(|i| Request::read(i * u64::from(len), len)).collect()
}

fn share(c: &prefetchsim_core::metrics::LevelCounters) -> f64 {
    c.prefetch_hits as f64 / c.demand_accesses as f64
}

#[test]
fn sarc_and_amp_serve_a_warm_sequential_stream_from_prefetches() {
    // SARC's degree is fixed (u = 8): requests up to u blocks. AMP's grows with the read size.
    for (name, pf, lens) in [("SARC", SARC_TOML, &[1u32, 4, 8][..]), ("AMP", AMP_TOML, &[1, 4, 8, 16, 64][..])] {
        for &len in lens {
            let toml = format!("[[level]]\nsize = 1000\n{pf}[engine]\nwarmup_requests = 1000\n");
            let c = run_config(&toml, sequential(20_000, len));
            let s = share(&c);
            println!(
                "{name}, requests of {len} blocks: prefetch-hit share {s:.4} ({} of {})",
                c.prefetch_hits, c.demand_accesses
            );
            assert!(s > 0.9, "{name} len {len}: share {s}");
        }
    }
}

#[test]
fn sarc_with_a_degree_below_the_request_size_misses_the_rest_of_each_request() {
    // u = 8, requests of 16: the trigger fires inside the request, but the blocks past the group are
    // demanded by that same request and come with its demand I/O: half of every request misses.
    let toml = "[[level]]\nsize = 1000\npolicy = 'sarc'\nprefetcher = 'sarc'\n[engine]\nwarmup_requests = 10\n";
    assert_eq!(share(&run_config(toml, sequential(1000, 16))), 0.5);
    // With u = 16 the next group is always ahead.
    let toml = toml.replace("prefetcher = 'sarc'", "prefetcher = { name = 'sarc', u = 16 }");
    assert_eq!(share(&run_config(&toml, sequential(1000, 16))), 1.0);
}

/// A uniformly random single-block trace.
fn uniform(n: usize, space: u64, mut seed: u64) -> Vec<Request> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            Request::read(seed % space, 1)
        })
        .collect()
}

#[test]
fn sarc_and_amp_waste_less_than_ra4_on_random_traffic() {
    let reqs = uniform(100_000, 1 << 20, 0x9e37_79b9_7f4a_7c15);
    let base = "[[level]]\nsize = 2000\n";
    let sarc = run_config(&format!("{base}{SARC_TOML}"), reqs.clone());
    let amp = run_config(&format!("{base}{AMP_TOML}"), reqs.clone());
    let env = PolicyEnv { capacity: 2000, first_hit: FirstHit::Promote };
    let mut ra = Level::new(2000, Lru::new(&env), Box::new(RaAlways(4)), LevelOptions::default());
    let mut out = Vec::new();
    for r in &reqs {
        out.clear();
        ra.access(r, r.len, &mut out);
    }
    ra.finish();
    let ra = ra.counters().clone();
    for (name, c) in [("SARC", &sarc), ("AMP", &amp), ("RA(4)", &ra)] {
        println!(
            "{name}: unused prefetch {} (issued {}, used {}), hit ratio {:.4}",
            c.unused_prefetch(),
            c.prefetch_issued,
            c.prefetch_used,
            c.hit_ratio()
        );
        assert!(c.prefetch_conserved());
    }
    assert!(sarc.unused_prefetch() < ra.unused_prefetch());
    assert!(amp.unused_prefetch() < ra.unused_prefetch());
}

#[test]
fn a_prefetch_run_longer_than_the_cache_keeps_the_lists_sound() {
    // Inserting a run's second block evicts its first one, whose slot the new block then reuses: the level
    // must not ask the policy to place the block after itself.
    for cap in 1..4 {
        let env = PolicyEnv { capacity: cap, first_hit: FirstHit::Promote };
        let mut l = Level::new(cap, Lru::new(&env), Box::new(RaAlways(4)), LevelOptions::default());
        for b in [10, 20, 15, 16] {
            read(&mut l, b, 1);
        }
        assert_eq!(l.len(), cap);
    }
}

// ---------------------------------------------------------------------------------------------------------
// Configuration

#[test]
fn sarc_and_amp_are_registered_and_their_parameters_are_checked() {
    let ok = |toml: &str| Hierarchy::build(&HierarchyConfig::from_toml(toml).unwrap(), 4096, None);
    assert!(ok("[[level]]\nsize = 100\npolicy = 'sarc'\nprefetcher = 'sarc'\n").is_ok());
    assert!(ok("[[level]]\nsize = 100\npolicy = 'sarc'\n").is_ok());
    assert!(ok("[[level]]\nsize = 100\nprefetcher = { name = 'sarc', u = 16, g = 4 }\n").is_ok());
    assert!(ok("[[level]]\nsize = 100\npolicy = { name = 'sarc', bottom_mode = 'exact', delta_l = 3 }\n").is_ok());
    let err = |toml: &str| ok(toml).err().unwrap();
    let e = err("[[level]]\nsize = 100\npolicy = 'sarc'\nprefetcher = 'amp'\n");
    assert_eq!(e.path, "level[0].prefetcher");
    assert!(e.message.contains("policy 'sarc' needs prefetcher 'sarc'"), "{e}");
    let e = err("[[level]]\nsize = 100\n[[level]]\nsize = 100\npolicy = 'sarc'\nprefetcher = 'obl'\n");
    assert_eq!(e.path, "level[1].prefetcher");
    let e = err("[[level]]\nsize = 100\nprefetcher = { name = 'sarc', degree = 8, trigger_distance = 8 }\n");
    assert_eq!(e.path, "level[0].prefetcher.trigger_distance");
    let e = err("[[level]]\nsize = 100\npolicy = { name = 'sarc', delta_l_share = 0 }\n");
    assert_eq!(e.path, "level[0].policy.delta_l_share");
    let e = err("[[level]]\nsize = 100\npolicy = { name = 'sarc', bottom_mode = 'fast' }\n");
    assert!(e.path.starts_with("level[0].policy"), "{e}");
    let e = err("[[level]]\nsize = 100\nprefetcher = { name = 'amp', p_max = 0 }\n");
    assert_eq!(e.path, "level[0].prefetcher.p_max");
    let e = err("[[level]]\nsize = 100\nprefetcher = { name = 'amp', apt = 4, pmax = 9 }\n");
    assert!(e.to_string().contains("pmax"), "{e}");
}

// ---------------------------------------------------------------------------------------------------------
// Properties

/// Random requests over a small space, or a mix of interleaved sequential runs and random blocks.
fn workload() -> impl Strategy<Value = Vec<Request>> {
    let random = prop::collection::vec((0u64..300, 1u32..6), 1..300)
        .prop_map(|v| v.into_iter().map(|(b, n)| Request::read(b, n)).collect::<Vec<_>>());
    let mixed = prop::collection::vec((0u8..4, 0u64..2000, 1u32..5), 1..300).prop_map(|v| {
        let mut heads = [0u64, 5000, 10_000];
        v.into_iter()
            .map(|(kind, b, n)| {
                if let Some(h) = heads.get_mut(usize::from(kind)) {
                    let r = Request { stream: u32::from(kind), ..Request::read(*h, n) };
                    *h += u64::from(n);
                    r
                } else {
                    Request::read(b, n)
                }
            })
            .collect()
    });
    prop_oneof![random, mixed]
}

fn check_run(
    l: &mut dyn AnyLevel,
    reqs: &[Request],
    extra: &dyn Fn(&dyn AnyLevel) -> Result<(), String>,
) -> Result<(), TestCaseError> {
    let mut out = Vec::new();
    let mut blocks = 0u64;
    for r in reqs {
        out.clear();
        l.access(r, r.len, &mut out);
        blocks += u64::from(r.len);
        prop_assert!(l.len() <= l.capacity());
        l.check_invariants().map_err(TestCaseError::fail)?;
        extra(l).map_err(TestCaseError::fail)?;
        let c = l.counters();
        prop_assert_eq!(c.hits + c.misses, c.demand_accesses);
    }
    l.finish();
    let c = l.counters();
    prop_assert_eq!(c.demand_accesses, blocks);
    prop_assert_eq!(c.hits + c.misses, c.demand_accesses);
    prop_assert!(c.prefetch_hits <= c.hits);
    prop_assert!(c.prefetch_conserved(), "prefetch accounting broken: {c:?}");
    Ok(())
}

proptest! {
    #[test]
    fn sarc_keeps_its_lists_counts_and_prefetch_accounting(
        reqs in workload(),
        cap in 1usize..80,
        delta_l in prop::option::of(1u64..10),
        exact in any::<bool>(),
        current in any::<bool>(),
        stay in any::<bool>(),
        lru_insert in any::<bool>(),
        chances in 0u8..2,
        u in 1u32..12,
        g in 0u32..12,
        threshold in 1u8..5,
    ) {
        let first_hit = if stay { FirstHit::Stay } else { FirstHit::Promote };
        let params = SarcParams {
            delta_l,
            bottom_mode: if exact { BottomMode::Exact } else { BottomMode::Timestamp },
            init_desired: if current { InitDesired::CurrentSeqSize } else { InitDesired::Zero },
            ..SarcParams::default()
        };
        let pf = SarcPrefetchParams { degree: u, trigger_distance: Some(g % u), seq_threshold: threshold };
        let env = PolicyEnv { capacity: cap, first_hit };
        let opts = LevelOptions {
            first_hit,
            pf_second_chance: chances,
            pf_insert: if lru_insert { Placement::Lru } else { Placement::Default },
            ..LevelOptions::default()
        };
        let shared = Arc::new(Mutex::new(SarcPrefetcher::new(pf)));
        let mut l = Level::new(cap, Sarc::new(&env, params), Box::new(Shared(shared.clone())), opts);
        let triggers_resident = move |l: &dyn AnyLevel| {
            match shared.lock().unwrap().triggers().into_iter().find(|&b| !l.contains(b)) {
                Some(b) => Err(format!("trigger {b} is not resident")),
                None => Ok(()),
            }
        };
        check_run(&mut l, &reqs, &triggers_resident)?;
    }

    #[test]
    fn amp_keeps_counts_prefetch_accounting_and_metadata_of_resident_pages_only(
        reqs in workload(),
        cap in 1usize..80,
        apt in 0u32..6,
        p_max in 1u32..40,
        k in 1u32..3,
        p_init in prop::option::of(1u32..10),
        stay in any::<bool>(),
    ) {
        let params = AmpParams { apt, p_max, k, p_init, first_hit_stay: stay };
        let mut amp = Amp::new(params);
        let first_hit = amp.attach(prefetchsim_core::prefetch::LevelGeometry { capacity: cap, block_bytes: 4096 }).first_hit.unwrap_or_default();
        let env = PolicyEnv { capacity: cap, first_hit };
        let opts = LevelOptions { first_hit, ..LevelOptions::default() };
        let shared = Arc::new(Mutex::new(amp));
        let mut l = Level::new(cap, Lru::new(&env), Box::new(Shared(shared.clone())), opts);
        let meta_ok = move |l: &dyn AnyLevel| {
            let a = shared.lock().unwrap();
            let tracked = a.tracked_pages();
            if let Some(b) = tracked.iter().find(|&&b| !l.contains(b)) {
                return Err(format!("metadata kept for page {b}, which is not cached"));
            }
            // The reported size counts what is tracked (evictions AMP has not processed yet excluded):
            // 40 bytes per group of 8 pages with words, 24 per page with stream values.
            let mut groups: Vec<u64> = tracked.iter().map(|b| b >> 3).collect();
            groups.dedup();
            let heads = tracked.iter().filter(|&&b| (a.meta(b).p, a.meta(b).g, a.meta(b).late) != (0, None, false));
            let want = 40 * groups.len() as u64 + 24 * heads.count() as u64;
            if a.metadata_bytes() != want {
                return Err(format!("metadata_bytes {} but {want} tracked", a.metadata_bytes()));
            }
            for b in l.resident_blocks() {
                let m = a.meta(b);
                if m.p > p_max {
                    return Err(format!("p {} of page {b} above p_max {p_max}", m.p));
                }
                if let Some(g) = m.g {
                    if m.last == b && g >= m.p.max(1) {
                        return Err(format!("g {g} of page {b} not below p {}", m.p));
                    }
                }
            }
            Ok(())
        };
        check_run(&mut l, &reqs, &meta_ok)?;
    }

    #[test]
    fn sarc_without_prefetching_equals_lru(reqs in workload(), cap in 1usize..60) {
        let env = PolicyEnv { capacity: cap, first_hit: FirstHit::Promote };
        let mut a = Level::new(cap, Sarc::new(&env, SarcParams::default()), Box::new(NoPrefetch), LevelOptions::default());
        let mut b = Level::new(cap, Lru::new(&env), Box::new(NoPrefetch), LevelOptions::default());
        let mut out = Vec::new();
        for r in &reqs {
            a.access(r, r.len, &mut out);
            b.access(r, r.len, &mut out);
            out.clear();
        }
        prop_assert_eq!(a.counters(), b.counters());
        prop_assert_eq!(random(&a), b.policy().queue(b.table()));
    }
}

#[test]
fn outcomes_other_than_miss_are_cached() {
    // The prefetchers treat every outcome but `Miss` as a cached block (a wait on an in-flight block
    // included); this pins the enum they rely on.
    assert!([Outcome::Hit, Outcome::PrefetchHit, Outcome::Pending].iter().all(|o| *o != Outcome::Miss));
}
