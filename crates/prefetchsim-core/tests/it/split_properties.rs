//! Property tests of StreamLRU and SplitLRU.
//!
//! 1. Through a level: random requests (sequential runs of several streams, random blocks, multi-block
//!    requests with an upper-prefetch tail), random capacities and options, a sequential prefetcher.
//!    After every request the invariants hold, nothing exceeds the capacity and every demand access is
//!    a hit or a miss; after `finish()` every issued prefetch is accounted for.
//! 2. Through the policy hooks alone, with pinned blocks, demotion, second chances and removals the
//!    level's instant engine never produces.
//! 3. Against plain models in the paper's setting (no re-reference, T1/T2): SplitLRU against the
//!    pseudocode of replacement.md §6 — which evicts after inserting, where the level evicts before —
//!    and StreamLRU against a list-of-groups model of §5.

use std::collections::{BTreeSet, HashMap, VecDeque};

use proptest::prelude::*;

use prefetchsim_core::level::{CacheLevel, Demotion, Level, LevelOptions};
use prefetchsim_core::policy::split_lru::{SplitLru, SplitLruParams};
use prefetchsim_core::policy::stream_lru::{StreamLru, StreamLruParams};
use prefetchsim_core::policy::{flags, BlockTable, FirstHit, Insert, Origin, Placement, Policy, PolicyEnv, Slot};
use prefetchsim_core::prefetch::obl::{Obl, OblParams, OblVariant};
use prefetchsim_core::prefetch::{PrefetchCtx, PrefetchRun, Prefetcher};
use prefetchsim_core::request::{Fetch, Request};

use crate::split_examples::{paper_options, Technic, Technique};

// ---------------------------------------------------------------------------------------------------
// 1. Through a level

/// Read-ahead of `p` blocks after every request (T1 generalised), in the request's stream.
struct ReadAhead(u32);

impl Prefetcher for ReadAhead {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        let next = ctx.req.last() + 1;
        ctx.prefetch(next, self.0);
    }
}

/// One scripted prefetch decision: a run `offset` blocks past the request, of `len` blocks, in stream
/// `stream` (0: the request's), at placement number `placement`.
#[derive(Clone, Copy, Debug)]
struct RunSpec {
    offset: u8,
    len: u8,
    stream: u8,
    placement: u8,
    demand_stream: bool,
}

fn placement(n: u8) -> Placement {
    match n % 5 {
        0 => Placement::Default,
        1 => Placement::Mru,
        2 => Placement::Lru,
        3 => Placement::List(0),
        _ => Placement::List(1),
    }
}

/// Plays a script of prefetch decisions, one or two runs per request, cyclically.
struct Scripted {
    script: Vec<RunSpec>,
    pos: usize,
}

impl Prefetcher for Scripted {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        for _ in 0..2 {
            let spec = self.script[self.pos % self.script.len()];
            self.pos += 1;
            let stream = if spec.stream == 0 { ctx.req.stream } else { u32::from(spec.stream) };
            if spec.demand_stream {
                ctx.plan.demand_stream = Some(stream);
            }
            ctx.prefetch_run(PrefetchRun {
                first: ctx.req.last() + 1 + u64::from(spec.offset),
                len: u32::from(spec.len),
                stream,
                placement: placement(spec.placement),
            });
            if spec.offset % 2 == 0 {
                break;
            }
        }
    }
}

fn run_spec() -> impl Strategy<Value = RunSpec> {
    (0u8..4, 0u8..5, 0u8..4, 0u8..5, any::<bool>()).prop_map(|(offset, len, stream, placement, demand_stream)| {
        RunSpec { offset, len, stream, placement, demand_stream }
    })
}

fn prefetcher(kind: u8, p: u32, script: Vec<RunSpec>) -> Box<dyn Prefetcher> {
    match kind % 4 {
        0 => Box::new(Obl::new(OblParams { variant: OblVariant::Tagged, ..OblParams::default() })),
        1 => Box::new(Obl::new(OblParams { variant: OblVariant::Always, ..OblParams::default() })),
        2 => Box::new(ReadAhead(p)),
        _ => Box::new(Scripted { script, pos: 0 }),
    }
}

/// Requests: `(kind, block, len, demand)`; kinds 0-2 continue sequential stream 1-3, kind 3 is a random
/// block of stream 0, kind 4 a random block of a random stream. `demand` of `len` blocks are demand.
fn requests(raw: &[(u8, u64, u32, u32)]) -> Vec<(Request, u32)> {
    let mut cursor = [0u64, 1_000, 2_000];
    raw.iter()
        .map(|&(kind, block, len, demand)| {
            let (first, stream) = match kind {
                k @ 0..=2 => {
                    let at = cursor[k as usize];
                    // Now and then a stream jumps back over blocks it has read: re-references.
                    cursor[k as usize] = if block % 17 == 0 { at.saturating_sub(8) } else { at + u64::from(len) };
                    (at, u32::from(k) + 1)
                }
                3 => (block, 0),
                _ => (block, (block % 5) as u32),
            };
            let mut r = Request::read(first, len);
            r.stream = stream;
            (r, demand.clamp(1, len))
        })
        .collect()
}

fn options(consume: bool, keep_miss: bool, stay: bool, chances: u8, pf_lru: bool) -> LevelOptions {
    LevelOptions {
        pf_second_chance: chances,
        first_hit: if stay { FirstHit::Stay } else { FirstHit::Promote },
        pf_insert: if pf_lru { Placement::Lru } else { Placement::Default },
        consume_on_hit: consume,
        cache_demand_miss: keep_miss,
        ..LevelOptions::default()
    }
}

fn drive_level<P: Policy>(
    policy: P,
    capacity: usize,
    opts: LevelOptions,
    pf: Box<dyn Prefetcher>,
    reqs: &[(Request, u32)],
) -> Result<(), TestCaseError> {
    let mut l = Level::new(capacity, policy, pf, opts);
    let mut out: Vec<Fetch> = Vec::new();
    for (i, (r, demand)) in reqs.iter().enumerate() {
        out.clear();
        l.access(r, *demand, &mut out);
        l.check_invariants().map_err(|e| TestCaseError::fail(format!("request {i} {r:?}: {e}")))?;
        prop_assert!(l.len() <= capacity, "request {}: {} blocks in {}", i, l.len(), capacity);
        let c = l.counters();
        prop_assert_eq!(c.hits + c.misses, c.demand_accesses);
    }
    l.finish();
    prop_assert!(l.counters().prefetch_conserved(), "{:?}", l.counters());
    Ok(())
}

type LevelCase = (usize, (bool, bool, bool, u8, bool), (u8, u32, Vec<RunSpec>), Vec<(u8, u64, u32, u32)>, f64, bool);

fn level_case() -> impl Strategy<Value = LevelCase> {
    (
        0usize..=24,
        (any::<bool>(), any::<bool>(), any::<bool>(), 0u8..3, any::<bool>()),
        (0u8..4, 1u32..5, prop::collection::vec(run_spec(), 1..8)),
        prop::collection::vec((0u8..5, 0u64..120, 1u32..4, 0u32..4), 1..160),
        0.0f64..=1.0,
        any::<bool>(),
    )
}

fn env(capacity: usize, stay: bool) -> PolicyEnv {
    PolicyEnv { capacity, first_hit: if stay { FirstHit::Stay } else { FirstHit::Promote } }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn stream_lru_level_invariants(
        (cap, (consume, keep, stay, chances, pf_lru), (kind, p, script), raw, _r, zero_random) in level_case()
    ) {
        let policy = StreamLru::new(&env(cap, stay), StreamLruParams { stream_zero_is_random: zero_random });
        let opts = options(consume, keep, stay, chances, pf_lru);
        drive_level(policy, cap, opts, prefetcher(kind, p, script), &requests(&raw))?;
    }

    #[test]
    fn split_lru_level_invariants(
        (cap, (consume, keep, stay, chances, pf_lru), (kind, p, script), raw, r, _z) in level_case()
    ) {
        let policy = SplitLru::new(&env(cap, stay), SplitLruParams::with_up_ratio(r));
        let opts = options(consume, keep, stay, chances, pf_lru);
        drive_level(policy, cap, opts, prefetcher(kind, p, script), &requests(&raw))?;
    }
}

// ---------------------------------------------------------------------------------------------------
// 2. Through the policy hooks

#[derive(Clone, Copy, Debug)]
enum Op {
    Insert { block: u8, stream: u8, prefetch: bool, rank: u8, chain: bool, placement: u8 },
    Hit { pick: u8, consume: bool },
    Remove(u8),
    Demote(u8),
    Cached { pick: u8, rank: u8 },
    Pin(u8),
    Evict { second_chance: bool },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..40, 0u8..4, any::<bool>(), 0u8..4, any::<bool>(), 0u8..5).prop_map(
            |(block, stream, prefetch, rank, chain, placement)| Op::Insert { block, stream, prefetch, rank, chain, placement }
        ),
        3 => (any::<u8>(), any::<bool>()).prop_map(|(pick, consume)| Op::Hit { pick, consume }),
        1 => any::<u8>().prop_map(Op::Remove),
        1 => any::<u8>().prop_map(Op::Demote),
        1 => (any::<u8>(), 0u8..3).prop_map(|(pick, rank)| Op::Cached { pick, rank }),
        1 => any::<u8>().prop_map(Op::Pin),
        1 => any::<bool>().prop_map(|second_chance| Op::Evict { second_chance }),
    ]
}

/// The `pick`-th resident slot (in slot order), among unpinned ones if `unpinned`.
fn pick_slot(t: &BlockTable, pick: u8, unpinned: bool) -> Option<Slot> {
    let slots: Vec<Slot> = t.iter().filter(|(_, e)| !unpinned || !e.pinned()).map(|(s, _)| s).collect();
    (!slots.is_empty()).then(|| slots[pick as usize % slots.len()])
}

/// Ask for a victim: it must be unpinned, and there is none only when every resident block is pinned.
fn evict<P: Policy>(p: &mut P, t: &mut BlockTable, second_chance: bool) -> Result<bool, TestCaseError> {
    match p.victim(t) {
        Some(s) => {
            prop_assert!(t.is_occupied(s) && !t.entry(s).pinned(), "victim {} pinned or free", s);
            if second_chance && t.entry(s).unused_prefetch() {
                p.on_insert(s, t, &Insert::second_chance());
            } else {
                p.on_evicted(s, t);
                t.remove(s);
            }
            Ok(true)
        }
        None => {
            prop_assert!(t.iter().all(|(_, e)| e.pinned()), "no victim while an unpinned block is resident");
            Ok(false)
        }
    }
}

fn drive_hooks<P: Policy>(mut p: P, cap: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut t = BlockTable::with_capacity(cap);
    let mut last: Option<(Slot, u64)> = None;
    for (i, &op) in ops.iter().enumerate() {
        match op {
            Op::Insert { block, stream, prefetch, rank, chain, placement: pl } => {
                let block = u64::from(block);
                if t.contains(block) {
                    continue;
                }
                while t.len() >= cap {
                    if !evict(&mut p, &mut t, false)? {
                        break;
                    }
                }
                if t.len() >= cap {
                    continue;
                }
                let origin = if prefetch { Origin::Prefetch } else { Origin::Demand };
                p.on_miss(block, origin, &t);
                let f = if prefetch { flags::PREFETCHED } else { flags::ACCESSED };
                let s = t.insert(block, u32::from(stream), f);
                let after = last
                    .filter(|&(ls, lb)| chain && ls != s && t.is_occupied(ls) && t.entry(ls).block == lb)
                    .map(|(ls, _)| ls);
                let how = if prefetch {
                    Insert::prefetch(u32::from(rank), after, placement(pl))
                } else {
                    Insert { placement: placement(pl), ..Insert::demand() }
                };
                p.on_insert(s, &t, &how);
                last = Some((s, block));
            }
            Op::Hit { pick, consume } => {
                if let Some(s) = pick_slot(&t, pick, true) {
                    let first = t.entry(s).unused_prefetch();
                    p.on_hit(s, &t, first);
                    t.entry_mut(s).flags |= flags::ACCESSED;
                    if consume {
                        p.on_remove(s, &t);
                        t.remove(s);
                    }
                }
            }
            Op::Remove(pick) => {
                if let Some(s) = pick_slot(&t, pick, false) {
                    p.on_remove(s, &t);
                    t.remove(s);
                }
            }
            Op::Demote(pick) => {
                if let Some(s) = pick_slot(&t, pick, false) {
                    p.demote(s, &t);
                }
            }
            Op::Cached { pick, rank } => {
                if let Some(s) = pick_slot(&t, pick, false) {
                    p.on_prefetch_cached(s, &t, u32::from(rank));
                }
            }
            Op::Pin(pick) => {
                if let Some(s) = pick_slot(&t, pick, false) {
                    t.entry_mut(s).flags ^= flags::PINNED;
                }
            }
            Op::Evict { second_chance } => {
                evict(&mut p, &mut t, second_chance)?;
            }
        }
        p.check(&t).map_err(|e| TestCaseError::fail(format!("op {i} {op:?}: {e}")))?;
        prop_assert!(t.len() <= cap);
    }
    // Drain: with everything unpinned, every block can be evicted, one at a time.
    let pinned: Vec<Slot> = t.iter().filter(|(_, e)| e.pinned()).map(|(s, _)| s).collect();
    for s in pinned {
        t.entry_mut(s).flags &= !flags::PINNED;
    }
    while !t.is_empty() {
        prop_assert!(evict(&mut p, &mut t, false)?);
        p.check(&t).map_err(TestCaseError::fail)?;
    }
    prop_assert!(p.victim(&t).is_none());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn stream_lru_hooks_keep_invariants(
        cap in 1usize..16, stay: bool, zero_random: bool, ops in prop::collection::vec(op(), 1..200)
    ) {
        let p = StreamLru::new(&env(cap, stay), StreamLruParams { stream_zero_is_random: zero_random });
        drive_hooks(p, cap, &ops)?;
    }

    #[test]
    fn split_lru_hooks_keep_invariants(
        cap in 1usize..16, stay: bool, r in 0.0f64..=1.0, ops in prop::collection::vec(op(), 1..200)
    ) {
        drive_hooks(SplitLru::new(&env(cap, stay), SplitLruParams::with_up_ratio(r)), cap, &ops)?;
    }
}

// ---------------------------------------------------------------------------------------------------
// 3. Against plain models, in the paper's setting

/// A workload in the style of the paper's generators: interleaved sequential runs and random blocks,
/// no block requested twice. Each choice `(slot, len, random)` either requests a lone block in a fresh
/// region or the next block of run `slot`, which starts a fresh run of `len` blocks when exhausted.
fn paper_workload(choices: &[(u8, u8, bool)]) -> Vec<u64> {
    let mut region = 0u64;
    let mut fresh = || {
        region += 1;
        region * 1_000
    };
    let mut runs: [(u64, u8); 5] = [(0, 0); 5];
    choices
        .iter()
        .map(|&(slot, len, random)| {
            if random {
                return fresh();
            }
            let run = &mut runs[slot as usize % 5];
            if run.1 == 0 {
                *run = (fresh(), len.max(1));
            }
            let b = run.0;
            *run = (b + 1, run.1 - 1);
            b
        })
        .collect()
}

/// The streams of sequential.md ambiguity 6 and the technique's decision, as the level's prefetcher
/// makes them; shared by the models.
struct ModelTechnique {
    technique: Technique,
    stream_of: HashMap<u64, u32>,
    streams: u32,
}

impl ModelTechnique {
    fn new(technique: Technique) -> Self {
        Self { technique, stream_of: HashMap::new(), streams: 0 }
    }
    fn stream(&mut self, b: u64) -> u32 {
        let s = match self.stream_of.get(&(b - 1)) {
            Some(&s) => s,
            None => {
                self.streams += 1;
                self.streams
            }
        };
        self.stream_of.insert(b, s);
        s
    }
    /// Blocks to prefetch after the request for `b` (with `b` already gone from the cache).
    fn prefetch(&mut self, b: u64, stream: u32, hit: bool, cached: impl Fn(u64) -> bool) -> Vec<u64> {
        let n = match self.technique {
            Technique::T1 => 2,
            Technique::T2 if !hit || !cached(b + 1) => 2,
            Technique::T2 => 0,
            Technique::Pm1 => u64::from(!hit),
        };
        let blocks: Vec<u64> = (1..=n).map(|i| b + i).collect();
        for &x in &blocks {
            self.stream_of.insert(x, stream);
        }
        blocks
    }
}

/// replacement.md §6 as written: queues front = MRU; blocks are inserted first and the cache is
/// trimmed from LRU(Down) afterwards.
struct SplitModel {
    cap: usize,
    c_up: usize,
    up: VecDeque<u64>,
    down: VecDeque<u64>,
    stream: HashMap<u64, u32>,
    tech: ModelTechnique,
}

impl SplitModel {
    fn unlink(&mut self, b: u64) {
        self.up.retain(|&x| x != b);
        self.down.retain(|&x| x != b);
    }
    fn promote(&mut self, b: u64) {
        self.unlink(b);
        self.up.push_front(b);
        while self.up.len() > self.c_up {
            let x = self.up.pop_back().unwrap();
            self.down.push_front(x);
        }
    }
    /// Serve one request; returns (hit, evicted).
    fn request(&mut self, b: u64) -> (bool, BTreeSet<u64>) {
        let s = self.tech.stream(b);
        let hit = self.stream.contains_key(&b);
        if hit {
            let sb = self.stream.remove(&b).unwrap();
            self.unlink(b);
            // Every cached block is an unused prefetched block here: nothing is requested twice.
            if self.stream.get(&(b + 1)) == Some(&sb) {
                self.promote(b + 1);
            }
        }
        let cached = self.stream.clone();
        let wanted = self.tech.prefetch(b, s, hit, |x| cached.contains_key(&x));
        // b1 to MRU(Up) (moved there if cached), overflow to MRU(Down), b2 to MRU(Down).
        for (rank, &x) in wanted.iter().enumerate() {
            let cached = self.stream.contains_key(&x);
            if !cached {
                self.stream.insert(x, s);
            }
            if rank == 0 {
                self.promote(x);
            } else if !cached {
                self.down.push_front(x);
            }
        }
        let mut evicted = BTreeSet::new();
        while self.up.len() + self.down.len() > self.cap {
            let v = self.down.pop_back().or_else(|| self.up.pop_back()).unwrap();
            self.stream.remove(&v);
            evicted.insert(v);
        }
        (hit, evicted)
    }
}

/// replacement.md §5: a list of stream groups, front = MRU, each group nearest block first.
struct StreamModel {
    cap: usize,
    groups: VecDeque<(u32, VecDeque<u64>)>,
    stream: HashMap<u64, u32>,
    tech: ModelTechnique,
}

impl StreamModel {
    fn group(&self, stream: u32) -> Option<usize> {
        self.groups.iter().position(|(s, _)| *s == stream)
    }
    fn request(&mut self, b: u64) -> (bool, BTreeSet<u64>) {
        let s = self.tech.stream(b);
        let hit = self.stream.contains_key(&b);
        if hit {
            let sb = self.stream.remove(&b).unwrap();
            let g = self.group(sb).unwrap();
            let mut group = self.groups.remove(g).unwrap();
            group.1.retain(|&x| x != b);
            if !group.1.is_empty() {
                self.groups.push_front(group);
            }
        }
        let cached = self.stream.clone();
        let wanted = self.tech.prefetch(b, s, hit, |x| cached.contains_key(&x));
        let mut evicted = BTreeSet::new();
        for x in wanted {
            if let Some(&sx) = self.stream.get(&x) {
                // A run names a cached block: it goes behind its group's other blocks (sequence order).
                let g = self.group(sx).unwrap();
                let members = &mut self.groups[g].1;
                members.retain(|&y| y != x);
                members.push_back(x);
                continue;
            }
            if self.stream.len() >= self.cap {
                let last = self.groups.len() - 1;
                let v = self.groups[last].1.pop_back().unwrap();
                if self.groups[last].1.is_empty() {
                    self.groups.pop_back();
                }
                self.stream.remove(&v);
                evicted.insert(v);
            }
            self.stream.insert(x, s);
            let mut group = match self.group(s) {
                Some(g) => self.groups.remove(g).unwrap(),
                None => (s, VecDeque::new()),
            };
            group.1.push_back(x);
            self.groups.push_front(group);
        }
        (hit, evicted)
    }
}

fn technique(t: bool) -> Technique {
    if t {
        Technique::T1
    } else {
        Technique::T2
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// With Down non-empty whenever the cache is full (c_up < c), evicting before each insertion (the
    /// level) and trimming after all of them (the pseudocode) choose the same blocks.
    #[test]
    fn split_lru_matches_the_pseudocode(
        cap in 2usize..20, r in 0.0f64..1.0, t1: bool,
        choices in prop::collection::vec((0u8..5, 1u8..10, prop::bool::weighted(0.2)), 1..200)
    ) {
        let params = SplitLruParams::with_up_ratio(r);
        let c_up = params.c_up(cap);
        prop_assume!(c_up < cap);
        let mut l = Level::new(cap, SplitLru::new(&env(cap, false), params), Technic::new(technique(t1)), paper_options());
        l.record_evictions(true);
        let mut m = SplitModel {
            cap, c_up, up: VecDeque::new(), down: VecDeque::new(), stream: HashMap::new(),
            tech: ModelTechnique::new(technique(t1)),
        };
        let mut out = Vec::new();
        for b in paper_workload(&choices) {
            let hits = l.counters().hits;
            l.access(&Request::read(b, 1), 1, &mut out);
            let (hit, evicted) = m.request(b);
            prop_assert_eq!(l.counters().hits > hits, hit, "hit of {}", b);
            let (up, down) = l.policy().up_down(l.table());
            prop_assert_eq!(&up, &Vec::from(m.up.clone()), "Up after {}", b);
            prop_assert_eq!(&down, &Vec::from(m.down.clone()), "Down after {}", b);
            prop_assert_eq!(l.take_evicted().into_iter().collect::<BTreeSet<_>>(), evicted, "evicted at {}", b);
        }
    }

    #[test]
    fn stream_lru_matches_the_group_model(
        cap in 1usize..20, t1: bool,
        choices in prop::collection::vec((0u8..5, 1u8..10, prop::bool::weighted(0.2)), 1..200)
    ) {
        let policy = StreamLru::new(&env(cap, false), StreamLruParams::default());
        let mut l = Level::new(cap, policy, Technic::new(technique(t1)), paper_options());
        l.record_evictions(true);
        let mut m = StreamModel { cap, groups: VecDeque::new(), stream: HashMap::new(), tech: ModelTechnique::new(technique(t1)) };
        let mut out = Vec::new();
        for b in paper_workload(&choices) {
            let hits = l.counters().hits;
            l.access(&Request::read(b, 1), 1, &mut out);
            let (hit, evicted) = m.request(b);
            prop_assert_eq!(l.counters().hits > hits, hit, "hit of {}", b);
            let groups: Vec<Vec<u64>> = m.groups.iter().map(|(_, g)| Vec::from(g.clone())).collect();
            prop_assert_eq!(l.policy().groups(l.table()), groups, "groups after {}", b);
            prop_assert_eq!(l.take_evicted().into_iter().collect::<BTreeSet<_>>(), evicted, "evicted at {}", b);
        }
    }
}
