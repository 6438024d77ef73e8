//! The level's traits: the core trait stays small, and a level of several caches implements every role
//! (no role falls back on a default that does nothing).

use prefetchsim_core::level::fanout::{Factory, FanOut, Routing};
use prefetchsim_core::level::{AnyLevel, CacheLevel, Coordination, Level, LevelOptions};
use prefetchsim_core::policy::{lru::Lru, FirstHit, PolicyEnv};
use prefetchsim_core::prefetch::none::NoPrefetch;
use prefetchsim_core::request::{Fetch, Request};

/// The methods of a trait declared in a source file: the `fn` lines of its block.
fn trait_methods(source: &str, name: &str) -> Vec<String> {
    let start = source.find(&format!("pub trait {name}")).unwrap_or_else(|| panic!("no trait {name}"));
    let body = &source[start..];
    let end = body.find("\n}\n").expect("the trait's closing brace");
    body[..end]
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("fn ").map(|f| f.split('(').next().unwrap_or(f).to_string()))
        .collect()
}

#[test]
fn the_core_level_trait_has_at_most_15_methods() {
    let src = include_str!("../../src/level/mod.rs");
    let methods = trait_methods(src, "CacheLevel");
    assert!(methods.len() >= 10, "the parse found too few methods: {methods:?}");
    assert!(methods.len() <= 15, "CacheLevel has {} methods: {methods:?}", methods.len());
}

fn lru_level(capacity: usize) -> Box<dyn AnyLevel> {
    let env = PolicyEnv { capacity, first_hit: FirstHit::Promote };
    Box::new(Level::new(capacity, Lru::new(&env), Box::new(NoPrefetch), LevelOptions::default()))
}

#[test]
fn a_fan_out_level_caches_a_cold_block_in_the_instance_of_the_last_access() {
    let make: Factory = Box::new(|| lru_level(4));
    let mut f = FanOut::new(Routing::Client(2), make);
    let mut out: Vec<Fetch> = Vec::new();
    f.access(&Request { client: 1, ..Request::read(10, 1) }, 1, &mut out);
    f.insert_cold(99);
    let (with, without): (Vec<_>, Vec<_>) =
        prefetchsim_core::level::Instances::instances(&f).into_iter().partition(|(_, l)| l.contains(99));
    assert_eq!(with.iter().map(|(k, _)| *k).collect::<Vec<_>>(), vec![1], "only client 1's instance holds it");
    assert_eq!(without.len(), 1);
    // At the eviction end: the next miss of that instance, once it is full, evicts it first.
    for b in 20..22 {
        f.access(&Request { client: 1, ..Request::read(b, 1) }, 1, &mut out);
    }
    assert!(f.contains(99), "four blocks fit");
    f.access(&Request { client: 1, ..Request::read(30, 1) }, 1, &mut out);
    assert!(!f.contains(99), "the cold block left first");
    assert!(f.contains(10), "the blocks accessed stayed");
}
