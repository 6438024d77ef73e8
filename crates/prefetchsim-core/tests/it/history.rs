//! History-based prefetchers through the public API: configuration (presets, overrides, the `stack`
//! table and shorthand, errors naming the key), the stack's forwarding and per-prefetcher counts, the
//! level's metadata charge, Mithril end to end through a level, and the level invariants under random
//! workloads with Mithril, PG and stacks.

use prefetchsim_core::component::ComponentSpec;
use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{run_instant, Hierarchy, Silent, VecSource};
use prefetchsim_core::level::{AnyLevel, CacheLevel, Level, LevelOptions};
use prefetchsim_core::policy::{fifo::Fifo, lru::Lru, Entry, FirstHit, PolicyEnv};
use prefetchsim_core::prefetch::mithril::{Mithril, MithrilParams, RecordOn};
use prefetchsim_core::prefetch::obl::{Obl, OblParams, OblVariant};
use prefetchsim_core::prefetch::stack::Stack;
use prefetchsim_core::prefetch::{self, PrefetchCtx, Prefetcher};
use prefetchsim_core::request::{Fetch, Request};
use proptest::prelude::*;

fn level_toml(prefetcher: &str) -> String {
    format!("[[level]]\nsize = 64\nprefetcher = {prefetcher}\n")
}

fn build(prefetcher: &str) -> Result<Hierarchy, prefetchsim_core::ConfigError> {
    let cfg = HierarchyConfig::from_toml(&level_toml(prefetcher))?;
    Hierarchy::build(&cfg, 4096, None)
}

#[test]
fn history_prefetchers_are_registered_and_configured_by_name_or_table() {
    for name in ["mithril", "pg", "stack"] {
        assert!(prefetchsim_core::build::registry::PREFETCHERS.iter().any(|e| e.name == name), "{name}");
    }
    for ok in [
        "'mithril'",
        "{ name = 'mithril', preset = 'libcachesim', lookahead = 30, record = 'miss_evict' }",
        "{ name = 'mithril', preset = 'paper', charge_metadata = false, clock = 'request' }",
        "{ name = 'pg', preset = 'griffioen', threshold = 0.1 }",
        "'mithril+obl'",
        "{ name = 'stack', first = { name = 'mithril', preset = 'libcachesim' }, second = { name = 'obl', variant = 'always' } }",
        "{ name = 'stack', first = 'pg', second = 'mithril+obl' }",
    ] {
        build(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
}

#[test]
fn configuration_errors_name_the_key() {
    let cases = [
        ("{ name = 'mithril', lookahed = 3 }", "level[0].prefetcher", "lookahed"),
        ("{ name = 'mithril', preset = 'cmimircache' }", "level[0].prefetcher.preset", "cmimircache"),
        ("{ name = 'mithril', min_support = 0 }", "level[0].prefetcher.min_support", "max_support"),
        ("{ name = 'pg', lookahead = 500 }", "level[0].prefetcher.lookahead", "1..=100"),
        ("{ name = 'stack', first = 'mithril' }", "level[0].prefetcher", "second"),
        (
            "{ name = 'stack', first = 'mithril', second = { name = 'obl', variant = 'x' } }",
            "level[0].prefetcher.second",
            "variant",
        ),
        ("{ name = 'stack', first = 'nope', second = 'obl' }", "level[0].prefetcher.first", "unknown prefetcher"),
        ("{ name = 'mithril+obl', lookahead = 3 }", "level[0].prefetcher", "shorthand"),
    ];
    for (spec, path, word) in cases {
        let e = build(spec).err().unwrap_or_else(|| panic!("{spec} should fail"));
        assert!(e.path.starts_with(path), "{spec}: {e}");
        assert!(e.to_string().contains(word), "{spec}: {e}");
    }
}

/// A prefetcher with a fixed plan, fixed metadata and two second chances (to test forwarding); it notes
/// the blocks given a second chance in `chanced` when it has one.
struct Fixed {
    offset: u64,
    meta: u64,
    chances: u8,
    chanced: Option<std::sync::Arc<std::sync::Mutex<Vec<u64>>>>,
}

impl Fixed {
    fn new(offset: u64, meta: u64, chances: u8) -> Self {
        Self { offset, meta, chances, chanced: None }
    }
}

impl Prefetcher for Fixed {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        let b = ctx.req.last() + self.offset;
        ctx.prefetch(b, 1);
    }
    fn on_second_chance(&mut self, entry: &Entry, _cache: prefetch::CacheView<'_>) {
        if let Some(c) = &self.chanced {
            c.lock().unwrap().push(entry.block);
        }
    }
    fn attach(
        &mut self,
        _geometry: prefetchsim_core::prefetch::LevelGeometry,
    ) -> prefetchsim_core::prefetch::Capabilities {
        prefetchsim_core::prefetch::Capabilities {
            second_chances: self.chances,
            ..prefetchsim_core::prefetch::Capabilities::default()
        }
    }
    fn metadata_bytes(&self) -> u64 {
        self.meta
    }
}

#[test]
fn a_stack_runs_both_prefetchers_and_counts_the_second_apart() {
    let first = Box::new(Fixed::new(100, 10, 0));
    let second = Box::new(Fixed::new(200, 5, 2));
    let mut stack = Stack::new(first, second);
    let caps = stack.attach(GEOMETRY);
    assert_eq!((caps.second_chances, caps.second_component_chances, stack.metadata_bytes()), (0, Some(2), 15));
    let env = PolicyEnv { capacity: 100, first_hit: FirstHit::Promote };
    let mut level = Level::new(100, Lru::new(&env), Box::new(stack), LevelOptions::default());
    let mut out: Vec<Fetch> = Vec::new();
    level.access(&Request::read(1, 1), 1, &mut out);
    assert_eq!(out.iter().map(|f| f.first).collect::<Vec<_>>(), vec![1, 101, 201]);
    // Use the second's block (which prefetches 301 and 401), then the first's (whose prefetches, 201 and
    // 301, are cached already: not issued again).
    for b in [201, 101] {
        out.clear();
        level.access(&Request::read(b, 1), 1, &mut out);
    }
    let c = level.counters();
    assert_eq!((c.prefetch_issued, c.second_issued), (4, 2));
    assert_eq!((c.prefetch_used, c.second_used), (2, 1));
    assert_eq!(level.metadata_bytes(), 15);
}

/// Each component's unused blocks get that component's own second chances: Mithril's one is for "an
/// unused Mithril-prefetched block" (docs/papers/mithril.md), not for OBL's under it. Before, the stack
/// gave every prefetched block the larger of the two.
#[test]
fn a_stacks_second_chances_go_to_its_own_components_blocks() {
    for (first_chances, second_chances) in [(1, 0), (0, 1)] {
        let chanced = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let first = Fixed { chanced: Some(chanced.clone()), ..Fixed::new(100, 0, first_chances) };
        let second = Box::new(Fixed::new(200, 0, second_chances));
        let env = PolicyEnv { capacity: 4, first_hit: FirstHit::Promote };
        let stack = Box::new(Stack::new(Box::new(first), second));
        let mut level = Level::new(4, Lru::new(&env), stack, LevelOptions::default());
        let mut out: Vec<Fetch> = Vec::new();
        for b in 0..30 {
            out.clear();
            level.access(&Request::read(1000 * b, 1), 1, &mut out);
            level.check_invariants().unwrap();
        }
        let chanced = chanced.lock().unwrap();
        let offset = if first_chances > 0 { 100 } else { 200 };
        assert!(!chanced.is_empty(), "({first_chances}, {second_chances}): no second chance given");
        assert!(chanced.iter().all(|b| b % 1000 == offset), "({first_chances}, {second_chances}): {chanced:?}");
    }
}

#[test]
fn mithril_over_obl_is_a_stack_with_mithrils_second_chance() {
    let h = build("'mithril+obl'").unwrap();
    assert_eq!(h.levels.len(), 1);
    // OBL 'tagged' prefetches the next block of a miss; the stack counts those as the second's.
    let cfg = HierarchyConfig::from_toml(&level_toml("'mithril+obl'")).unwrap();
    let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
    let reqs: Vec<Request> = (0..50).map(|i| Request::read(1000 * i, 1)).collect();
    let r = run_instant(&mut VecSource::new(reqs), &mut h, &cfg.engine, &mut Silent).unwrap();
    let c = &r.levels[0].counters;
    assert_eq!((c.prefetch_issued, c.second_issued), (50, 50));
}

#[test]
fn charged_metadata_takes_capacity_from_the_level() {
    let env = PolicyEnv { capacity: 10, first_hit: FirstHit::Promote };
    let opts = LevelOptions { charge_metadata: true, ..LevelOptions::default() };
    // 3 blocks' worth of metadata and a bit: 4 blocks are lost.
    let pf = Box::new(Fixed::new(1000, 3 * 4096 + 1, 0));
    let mut level = Level::new(10, Lru::new(&env), pf, opts);
    assert_eq!(level.data_capacity(), 6);
    let mut out = Vec::new();
    for b in 0..20 {
        out.clear();
        level.access(&Request::read(b, 1), 1, &mut out);
        assert!(level.len() <= 6);
        level.check_invariants().unwrap();
    }
    // With 512-byte blocks the same metadata takes 25 blocks: one block is always left.
    level.set_block_bytes(512);
    assert_eq!((level.data_capacity(), level.len()), (1, 1));
    // Without the option nothing is charged.
    let pf = Box::new(Fixed::new(1000, 1 << 20, 0));
    let level = Level::new(10, Lru::new(&env), pf, LevelOptions::default());
    assert_eq!(level.data_capacity(), 10);
}

#[test]
fn mithril_learns_an_association_and_prefetches_through_a_level() {
    // Two blocks missed 1 apart, twice: with a mining table of two rows (mining_threshold 4 /
    // min_support 2) the second miss of 2000 mines 1000 -> 2000, and the next miss of 1000 prefetches
    // 2000, whose access is then a prefetch hit.
    let p = MithrilParams { lookahead: Some(3), mining_threshold: Some(4), ..MithrilParams::default() };
    let m = Mithril::from_params("m", p).unwrap();
    let env = PolicyEnv { capacity: 2, first_hit: FirstHit::Promote };
    let opts = LevelOptions { charge_metadata: false, ..LevelOptions::default() };
    let mut level = Level::new(2, Lru::new(&env), Box::new(m), opts);
    assert!(level.data_capacity() <= 2);
    let mut out = Vec::new();
    for b in [1000, 2000, 3001, 3002, 1000, 2000, 3003, 3004, 1000, 2000] {
        out.clear();
        level.access(&Request::read(b, 1), 1, &mut out);
    }
    let c = level.counters();
    assert_eq!((c.prefetch_issued, c.prefetch_hits), (1, 1), "{c:?}");
}

#[test]
fn mithril_gives_its_prefetched_blocks_one_second_chance() {
    let mut m = Mithril::from_params("m", MithrilParams::default()).unwrap();
    assert_eq!(m.attach(GEOMETRY).second_chances, 1);
    let lcs: MithrilParams = serde_json::from_str(r#"{"preset": "libcachesim", "second_chances": 3}"#).unwrap();
    assert_eq!(Mithril::from_params("m", lcs).unwrap().attach(GEOMETRY).second_chances, 3);
    let ev: MithrilParams = serde_json::from_str(r#"{"record": "evict"}"#).unwrap();
    assert_eq!(ev.record, Some(RecordOn::Evict));
    assert!(Mithril::from_params("m", ev).unwrap().attach(GEOMETRY).wants_evictions);
}

/// The geometry prefetchers are attached with in these tests.
const GEOMETRY: prefetchsim_core::prefetch::LevelGeometry =
    prefetchsim_core::prefetch::LevelGeometry { capacity: 100, block_bytes: 4096 };

// ---------------------------------------------------------------------------------------------------
// Invariants under random workloads

fn requests() -> impl Strategy<Value = Vec<Request>> {
    // A few hot "association" pairs among noise, over a small address space, in short runs.
    prop::collection::vec((0u64..120, 1u32..4, any::<bool>()), 1..500).prop_map(|v| {
        v.into_iter()
            .flat_map(|(b, n, pair)| {
                let first = Request::read(b * 7, n);
                if pair {
                    vec![first, Request::read(b * 7 + 500, 1)]
                } else {
                    vec![first]
                }
            })
            .collect()
    })
}

fn prefetcher(which: u8, record: u8) -> Box<dyn Prefetcher> {
    let record = [RecordOn::Miss, RecordOn::Evict, RecordOn::MissEvict, RecordOn::EachReq][record as usize % 4];
    let mithril = |lcs: bool| {
        let spec = ComponentSpec {
            name: "mithril".into(),
            params: serde_json::json!({
                "preset": if lcs { "libcachesim" } else { "paper" },
                "lookahead": 5,
                "mining_threshold": 8,
                "shard_rows": 4,
                "record": record,
                "max_metadata": 1.0,
                "recording_table": 0.5,
            })
            .as_object()
            .unwrap()
            .clone(),
        };
        prefetchsim_core::build::build_prefetcher("p", &spec).unwrap().1
    };
    match which % 5 {
        0 => mithril(false),
        1 => mithril(true),
        2 => prefetchsim_core::build::build_prefetcher("p", &ComponentSpec::named("pg")).unwrap().1,
        3 => Box::new(Stack::new(mithril(false), Box::new(Obl::new(OblParams { variant: OblVariant::Tagged, k: 2 })))),
        _ => prefetchsim_core::build::build_prefetcher("p", &ComponentSpec::named("pg+mithril")).unwrap().1,
    }
}

fn check(level: &mut dyn AnyLevel, reqs: &[Request]) -> Result<(), TestCaseError> {
    let mut out: Vec<Fetch> = Vec::new();
    let mut blocks = 0u64;
    for r in reqs {
        out.clear();
        level.access(r, r.len, &mut out);
        blocks += u64::from(r.len);
        prop_assert!(level.len() <= level.data_capacity());
        level.check_invariants().map_err(TestCaseError::fail)?;
    }
    level.finish();
    let c = level.counters();
    prop_assert_eq!(c.demand_accesses, blocks);
    prop_assert_eq!(c.hits + c.misses, c.demand_accesses);
    prop_assert!(c.prefetch_conserved(), "prefetch accounting broken: {c:?}");
    prop_assert!(c.second_issued <= c.prefetch_issued && c.second_used <= c.prefetch_used);
    Ok(())
}

proptest! {
    #[test]
    fn levels_with_history_prefetchers_keep_their_invariants(
        reqs in requests(), cap in 2usize..48, which in 0u8..5, record in 0u8..4, charge in any::<bool>(),
        lru in any::<bool>(),
    ) {
        let env = PolicyEnv { capacity: cap, first_hit: FirstHit::Promote };
        let opts = LevelOptions { charge_metadata: charge, ..LevelOptions::default() };
        let pf = prefetcher(which, record);
        let mut level: Box<dyn AnyLevel> = if lru {
            Box::new(Level::new(cap, Lru::new(&env), pf, opts))
        } else {
            Box::new(Level::new(cap, Fifo::new(&env), pf, opts))
        };
        level.set_block_bytes(64);
        check(level.as_mut(), &reqs)?;
    }

    #[test]
    fn history_prefetchers_are_deterministic(reqs in requests(), cap in 2u64..48) {
        let cfg = HierarchyConfig::from_toml(&format!(
            "[[level]]\nsize = {cap}\nprefetcher = {{ name = 'mithril', lookahead = 4, mining_threshold = 6 }}\n\
             [[level]]\nsize = '2x'\nprefetcher = 'pg'\n"
        )).unwrap();
        let run = || {
            let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
            run_instant(&mut VecSource::new(reqs.clone()), &mut h, &cfg.engine, &mut Silent).unwrap()
        };
        prop_assert_eq!(run(), run());
    }
}

#[test]
fn an_eviction_is_recorded_when_recording_at_evictions() {
    let p: MithrilParams = serde_json::from_str(r#"{"record": "evict"}"#).unwrap();
    let mut m = Mithril::from_params("m", p).unwrap();
    m.attach(prefetch::LevelGeometry { capacity: 1000, block_bytes: 4096 });
    m.on_evicted(&Entry { block: 42, ..Entry::default() });
    assert!(m.tables().lookup(42).is_some());
}

/// `first_hit = "stay_second"` is for a stack's second prefetcher's blocks: on any other level it did
/// nothing, accepted without a word (an outside audit, 2026-12-07). Refused there, naming the key, both
/// when a config is checked and when the hierarchy is built.
#[test]
fn stay_second_without_a_stack_is_refused() {
    let toml =
        |pf: &str| format!("[[level]]\nsize = 64\nprefetcher = {pf}\noptions = {{ first_hit = 'stay_second' }}\n");
    for pf in ["'obl'", "'none'", "'amp'"] {
        let cfg = HierarchyConfig::from_toml(&toml(pf)).unwrap();
        let e = Hierarchy::build(&cfg, 4096, None).err().unwrap_or_else(|| panic!("{pf} should be refused"));
        assert!(e.to_string().contains("level[0].options.first_hit") && e.message.contains("stack"), "{pf}: {e}");
        let e = prefetchsim_core::build::check_components(&cfg).unwrap_err();
        assert!(e.to_string().contains("level[0].options.first_hit"), "{pf}: {e}");
    }
    for pf in ["'mithril+amp'", "{ name = 'stack', first = 'obl', second = 'amp' }"] {
        let cfg = HierarchyConfig::from_toml(&toml(pf)).unwrap();
        Hierarchy::build(&cfg, 4096, None).unwrap_or_else(|e| panic!("{pf}: {e}"));
    }
}
