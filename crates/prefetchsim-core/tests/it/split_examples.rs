//! The worked examples of Varki, Hubbe & Merchant (Split paper §2-3, Tables 1-4) as unit tests: a
//! 4-block cache, the workload `1001, 64, 1002, 72345, 65, 323, 66` (`1, 2, 1a, 3, 2a, 4, 2b`), the
//! paper's prefetch techniques, and after every request the queue contents, the hit and the evicted
//! blocks. Vectors from `shared/docs/models/replacement.md` §6 and `algorithms/sequential.md`.

use std::collections::{BTreeSet, HashMap};

use prefetchsim_core::level::{CacheLevel, Demotion, Level, LevelOptions};
use prefetchsim_core::policy::lru::Lru;
use prefetchsim_core::policy::split_lru::{SplitLru, SplitLruParams};
use prefetchsim_core::policy::stream_lru::{StreamLru, StreamLruParams};
use prefetchsim_core::policy::{FirstHit, Placement, Policy, PolicyEnv};
use prefetchsim_core::prefetch::obl::{Obl, OblParams};
use prefetchsim_core::prefetch::{PrefetchCtx, PrefetchRun, Prefetcher};
use prefetchsim_core::request::{Fetch, Request};

/// The paper's example workload, as block numbers.
const WORKLOAD: [u64; 7] = [1001, 64, 1002, 72345, 65, 323, 66];

/// First block of each stream of the example, by stream number.
const STREAM_STARTS: [(u64, &str); 4] = [(1001, "1"), (64, "2"), (72345, "3"), (323, "4")];

/// The paper's notation for a block: stream number, then `a`, `b`, ... for the following blocks.
fn name(block: u64) -> String {
    for (start, s) in STREAM_STARTS {
        if (start..start + 26).contains(&block) {
            let pos = block - start;
            return if pos == 0 { s.to_string() } else { format!("{s}{}", char::from(b'a' + pos as u8 - 1)) };
        }
    }
    format!("#{block}")
}

/// The paper's prefetch techniques (sequential.md), for single-block requests.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Technique {
    /// T1, PA with P = 2: prefetch b+1, b+2 after every request.
    T1,
    /// T2: b+1, b+2 on a miss, and on a hit when b was its stream's last cached block.
    T2,
    /// PM with P = 1: b+1 on a miss, nothing on a hit.
    Pm1,
}

/// A technique with the stream rule of sequential.md (ambiguity 6): a request for `b` continues the
/// stream that holds `b-1`, requested or prefetched, else starts a new one. The map is kept here
/// because consumed blocks leave the cache.
pub(crate) struct Technic {
    technique: Technique,
    stream_of: HashMap<u64, u32>,
    streams: u32,
}

impl Technic {
    pub(crate) fn new(technique: Technique) -> Box<Self> {
        Box::new(Self { technique, stream_of: HashMap::new(), streams: 0 })
    }
}

impl Prefetcher for Technic {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        assert_eq!(ctx.req.len, 1, "the paper's requests are single blocks");
        let b = ctx.req.first;
        let stream = match b.checked_sub(1).and_then(|p| self.stream_of.get(&p)) {
            Some(&s) => s,
            None => {
                self.streams += 1;
                self.streams
            }
        };
        self.stream_of.insert(b, stream);
        ctx.plan.demand_stream = Some(stream);
        let hit = ctx.outcomes[0].is_hit();
        let len = match self.technique {
            Technique::T1 => 2,
            Technique::T2 if !hit || !ctx.cache.contains(b + 1) => 2,
            Technique::T2 => 0,
            Technique::Pm1 => u32::from(!hit),
        };
        for i in 1..=u64::from(len) {
            self.stream_of.insert(b + i, stream);
        }
        ctx.prefetch_run(PrefetchRun { first: b + 1, len, stream, placement: Placement::Default });
    }
}

/// The paper's setting: nothing is requested twice, so a hit block leaves and a missed one is not kept.
pub(crate) fn paper_options() -> LevelOptions {
    LevelOptions { consume_on_hit: true, cache_demand_miss: false, ..LevelOptions::default() }
}

fn env(capacity: usize) -> PolicyEnv {
    PolicyEnv { capacity, first_hit: FirstHit::Promote }
}

fn level<P: Policy>(capacity: usize, policy: P, technique: Technique) -> Level<P> {
    let mut l = Level::new(capacity, policy, Technic::new(technique), paper_options());
    l.record_evictions(true);
    l
}

fn names(blocks: impl IntoIterator<Item = u64>) -> String {
    blocks.into_iter().map(name).collect::<Vec<_>>().join(" ")
}

fn set(s: &str) -> BTreeSet<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// One row of a table: the request, whether it hits, the queue(s) after it (MRU first; SplitLRU as
/// `Up | Down`) and the blocks evicted while serving it (compared as a set: the paper lists them in
/// queue order).
type Row = (&'static str, bool, &'static str, &'static str);

/// Serve the workload and check every row; `show` renders the policy's queue(s).
fn replay<P: Policy>(mut l: Level<P>, rows: &[Row], show: impl Fn(&Level<P>) -> String) -> u64 {
    assert_eq!(rows.len(), WORKLOAD.len());
    let mut out: Vec<Fetch> = Vec::new();
    for (&block, &(req, hit, queue, ev)) in WORKLOAD.iter().zip(rows) {
        assert_eq!(name(block), req, "row order");
        let hits = l.counters().hits;
        l.access(&Request::read(block, 1), 1, &mut out);
        l.check_invariants().unwrap_or_else(|e| panic!("after {req}: {e}"));
        assert_eq!(l.counters().hits > hits, hit, "hit or miss of {req}");
        assert_eq!(show(&l), queue, "queue after {req}");
        let evicted: BTreeSet<String> = l.take_evicted().into_iter().map(name).collect();
        assert_eq!(evicted, set(ev), "evicted while serving {req}");
    }
    l.finish();
    assert!(l.counters().prefetch_conserved(), "{:?}", l.counters());
    l.counters().hits
}

fn show_lru(l: &Level<Lru>) -> String {
    names(l.policy().queue(l.table()))
}

fn show_stream(l: &Level<StreamLru>) -> String {
    names(l.policy().queue(l.table()))
}

fn show_split(l: &Level<SplitLru>) -> String {
    let (up, down) = l.policy().up_down(l.table());
    format!("{} | {}", names(up), names(down))
}

fn stream_lru(capacity: usize) -> StreamLru {
    StreamLru::new(&env(capacity), StreamLruParams::default())
}

fn split_lru(capacity: usize) -> SplitLru {
    let p = SplitLru::new(&env(capacity), SplitLruParams::default());
    assert_eq!(p.c_up(), 2);
    p
}

#[test]
fn table1_lru_t1() {
    #[rustfmt::skip]
    let rows: [Row; 7] = [
        ("1",  false, "1a 1b",       ""),
        ("2",  false, "2a 2b 1a 1b", ""),
        ("1a", true,  "1c 2a 2b 1b", ""),
        ("3",  false, "3a 3b 1c 2a", "1b 2b"),
        ("2a", true,  "2b 2c 3a 3b", "1c"),
        ("4",  false, "4a 4b 2b 2c", "3b 3a"),
        ("2b", true,  "2d 4a 4b 2c", ""),
    ];
    assert_eq!(replay(level(4, Lru::new(&env(4)), Technique::T1), &rows, show_lru), 3);
}

#[test]
fn table2_stream_lru_t1() {
    #[rustfmt::skip]
    let rows: [Row; 7] = [
        ("1",  false, "1a 1b",       ""),
        ("2",  false, "2a 2b 1a 1b", ""),
        ("1a", true,  "1b 1c 2a 2b", ""),
        ("3",  false, "3a 3b 1b 1c", "2b 2a"),
        ("2a", false, "2b 2c 3a 3b", "1c 1b"),
        ("4",  false, "4a 4b 2b 2c", "3b 3a"),
        ("2b", true,  "2c 2d 4a 4b", ""),
    ];
    assert_eq!(replay(level(4, stream_lru(4), Technique::T1), &rows, show_stream), 2);
}

#[test]
fn table3_split_lru_t1() {
    #[rustfmt::skip]
    let rows: [Row; 7] = [
        ("1",  false, "1a | 1b",       ""),
        ("2",  false, "2a 1a | 2b 1b", ""),
        ("1a", true,  "1b 2a | 1c 2b", ""),
        ("3",  false, "3a 1b | 3b 2a", "2b 1c"),
        ("2a", true,  "2b 3a | 2c 1b", "3b"),
        ("4",  false, "4a 2b | 4b 3a", "1b 2c"),
        ("2b", true,  "2c 4a | 2d 4b", "3a"),
    ];
    assert_eq!(replay(level(4, split_lru(4), Technique::T1), &rows, show_split), 3);
}

#[test]
fn table4_split_lru_t2() {
    // At 1a, 1b is still cached, so T2 prefetches nothing; the hit moves 1b to Up.
    #[rustfmt::skip]
    let rows: [Row; 7] = [
        ("1",  false, "1a | 1b",       ""),
        ("2",  false, "2a 1a | 2b 1b", ""),
        ("1a", true,  "1b 2a | 2b",    ""),
        ("3",  false, "3a 1b | 3b 2a", "2b"),
        ("2a", true,  "2b 3a | 2c 1b", "3b"),
        ("4",  false, "4a 2b | 4b 3a", "1b 2c"),
        ("2b", true,  "2c 4a | 2d 4b", "3a"),
    ];
    assert_eq!(replay(level(4, split_lru(4), Technique::T2), &rows, show_split), 3);
}

/// §2 states 2 hits for LRU with T2 (no table). The final queue is replacement.md's; the intermediate
/// states are the documented rules applied step by step.
#[test]
fn section2_lru_t2_two_hits() {
    #[rustfmt::skip]
    let rows: [Row; 7] = [
        ("1",  false, "1a 1b",       ""),
        ("2",  false, "2a 2b 1a 1b", ""),
        ("1a", true,  "2a 2b 1b",    ""),
        ("3",  false, "3a 3b 2a 2b", "1b"),
        ("2a", true,  "3a 3b 2b",    ""),
        ("4",  false, "4a 4b 3a 3b", "2b"),
        ("2b", false, "2c 2d 4a 4b", "3b 3a"),
    ];
    assert_eq!(replay(level(4, Lru::new(&env(4)), Technique::T2), &rows, show_lru), 2);
}

/// §2 states 3 hits for StreamLRU with T2 (no table). The states after 3, after 2a and at the end are
/// replacement.md's; the others are the documented rules applied step by step.
#[test]
fn section2_stream_lru_t2_three_hits() {
    #[rustfmt::skip]
    let rows: [Row; 7] = [
        ("1",  false, "1a 1b",       ""),
        ("2",  false, "2a 2b 1a 1b", ""),
        ("1a", true,  "1b 2a 2b",    ""),
        ("3",  false, "3a 3b 1b 2a", "2b"),
        ("2a", true,  "2b 2c 3a 3b", "1b"),
        ("4",  false, "4a 4b 2b 2c", "3b 3a"),
        ("2b", true,  "2c 4a 4b",    ""),
    ];
    assert_eq!(replay(level(4, stream_lru(4), Technique::T2), &rows, show_stream), 3);
}

/// StreamLRU keeps a stream's blocks together: the groups of Table 2 after request 3 and at the end.
#[test]
fn table2_groups_are_contiguous_streams() {
    let mut l = level(4, stream_lru(4), Technique::T1);
    let mut out = Vec::new();
    let groups = |l: &Level<StreamLru>| -> Vec<String> {
        l.policy().groups(l.table()).into_iter().map(names).collect::<Vec<_>>()
    };
    for &b in &WORKLOAD[..4] {
        l.access(&Request::read(b, 1), 1, &mut out);
    }
    assert_eq!(groups(&l), ["3a 3b", "1b 1c"]);
    for &b in &WORKLOAD[4..] {
        l.access(&Request::read(b, 1), 1, &mut out);
    }
    assert_eq!(groups(&l), ["2c 2d", "4a 4b"]);
}

/// The order in which user requests and prefetched blocks arrive at a cache large enough that nothing
/// is evicted (`*` = prefetch hit, parentheses = prefetched), for any policy.
fn arrivals<P: Policy>(policy: P, technique: Technique) -> (String, u64) {
    let mut l = level(64, policy, technique);
    let mut seq = Vec::new();
    for &b in &WORKLOAD {
        let hits = l.counters().hits;
        let mut out = Vec::new();
        l.access(&Request::read(b, 1), 1, &mut out);
        l.check_invariants().unwrap();
        let star = if l.counters().hits > hits { "*" } else { "" };
        seq.push(format!("{}{star}", name(b)));
        for f in &out {
            for x in f.first + u64::from(f.demand_len)..f.first + u64::from(f.len) {
                seq.push(format!("({})", name(x)));
            }
        }
        assert!(l.take_evicted().is_empty());
    }
    (seq.join(" "), l.counters().prefetch_hits)
}

#[test]
fn infinite_cache_arrival_orders() {
    let cases = [
        (Technique::T1, "1 (1a) (1b) 2 (2a) (2b) 1a* (1c) 3 (3a) (3b) 2a* (2c) 4 (4a) (4b) 2b* (2d)", 3),
        (Technique::T2, "1 (1a) (1b) 2 (2a) (2b) 1a* 3 (3a) (3b) 2a* 4 (4a) (4b) 2b* (2c) (2d)", 3),
        (Technique::Pm1, "1 (1a) 2 (2a) 1a* 3 (3a) 2a* 4 (4a) 2b (2c)", 2),
    ];
    for (technique, want, hits) in cases {
        let runs = [
            arrivals(Lru::new(&env(64)), technique),
            arrivals(stream_lru(64), technique),
            arrivals(SplitLru::new(&env(64), SplitLruParams::default()), technique),
        ];
        for (policy, got) in ["lru", "streamlru", "splitlru"].iter().zip(runs) {
            assert_eq!(got, (want.to_string(), hits), "{technique:?} with {policy}");
        }
    }
}

/// The 2:1 configuration of §6 is written as a ratio or as a fraction and gives c_up = round(2c/3).
#[test]
fn split_two_to_one_configuration() {
    use prefetchsim_core::config::HierarchyConfig;
    for spec in ["up_ratio = 0.6667", "up_ratio = '2/3'"] {
        let toml = format!("[[level]]\nsize = 90\npolicy = {{ name = 'splitlru', {spec} }}\n");
        let cfg = HierarchyConfig::from_toml(&toml).unwrap();
        let p: SplitLruParams =
            prefetchsim_core::component::parse_params("level[0].policy", &cfg.level[0].policy).unwrap();
        assert_eq!(SplitLru::new(&env(90), p).c_up(), 60, "{spec}");
    }
    let bad = HierarchyConfig::from_toml("[[level]]\nsize = 9\npolicy = { name = 'splitlru', up_ratio = 2 }\n")
        .and_then(|cfg| prefetchsim_core::component::parse_params::<SplitLruParams>("p", &cfg.level[0].policy));
    assert!(bad.is_err());
    // With c_up = 3 of 4, the paper's workload still gets its 3 hits under T2.
    let p = SplitLru::new(&env(4), SplitLruParams::with_up_ratio(2.0 / 3.0));
    assert_eq!(p.c_up(), 3);
    let mut l = level(4, p, Technique::T2);
    let mut out = Vec::new();
    for &b in &WORKLOAD {
        l.access(&Request::read(b, 1), 1, &mut out);
        l.check_invariants().unwrap();
    }
    assert_eq!(l.counters().hits, 3);
}

/// A demand hit on `b` moves `b + 1` below it only when `b + 1` is an unused prefetch of `b`'s stream
/// (replacement.md §6, "the next cached prefetched block of s"; the guide said "whatever its stream"
/// until an audit of the timed engine found the code's rule). OBL (tagged) over a cache of 6: stream 0
/// reads 20 (OBL brings 21), stream `s` reads 21 (its first use brings 22), stream 0 reads 4 (OBL brings
/// 5), then stream 0 reads 21 again.
#[test]
fn split_lru_moves_the_next_prefetched_block_only_within_the_hit_blocks_stream() {
    let run = |s: u32| {
        let split = SplitLru::new(&env(6), SplitLruParams::default());
        let mut l = Level::new(6, split, Box::new(Obl::new(OblParams::default())), LevelOptions::default());
        let mut out: Vec<Fetch> = Vec::new();
        for (block, stream) in [(20, 0), (21, s), (4, 0), (21, 0)] {
            l.access(&Request { stream, ..Request::read(block, 1) }, 1, &mut out);
            l.check_invariants().unwrap();
        }
        let (up, down) = l.policy().up_down(l.table());
        (up, down)
    };
    let (up, _) = run(0);
    assert_eq!(up[..2], [21, 22], "same stream: 22 directly below the hit block");
    let (up, down) = run(2);
    assert_eq!(up[0], 21);
    assert_ne!(up.get(1), Some(&22), "another stream's 22 stays where it was (Up {up:?}, Down {down:?})");
    assert!(up.contains(&22) || down.contains(&22), "22 is still cached");
}
