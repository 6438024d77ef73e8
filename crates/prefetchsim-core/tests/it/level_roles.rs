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

/// PFC's `cache_bypassed` caches a block "at L2's eviction end, like DU" under every policy: with MQ that
/// is Q0's LRU end (DU's and DEMOTE's `demote`), even for a block whose Qout history would place an
/// ordinary insertion in a higher queue. It went to the LRU end of that higher queue (an outside model's
/// case, study of 2026-12-07 F4).
#[test]
fn a_cold_block_goes_to_the_eviction_end_of_mq_whatever_its_history() {
    use prefetchsim_core::policy::mq::{Mq, MqParams};
    let env = PolicyEnv { capacity: 4, first_hit: FirstHit::Promote };
    let mut l = Level::new(4, Mq::new(&env, MqParams::default()), Box::new(NoPrefetch), LevelOptions::default());
    let mut out: Vec<Fetch> = Vec::new();
    // 7 is read three times, then new blocks come until it has left (expired down the queues, then
    // evicted): Qout remembers its frequency.
    for _ in 0..3 {
        l.access(&Request::read(7, 1), 1, &mut out);
    }
    for b in 100..200 {
        if !l.contains(7) {
            break;
        }
        l.access(&Request::read(b, 1), 1, &mut out);
    }
    assert!(!l.contains(7), "7 left");
    let remembered = l.policy().history_blocks().iter().find(|&&(b, _)| b == 7).map(|&(_, f)| f);
    assert!(remembered.is_some_and(|f| l.policy().queue_num(f + 1) > 0), "an insertion would go above Q0");
    l.insert_cold(7);
    let q0 = l.policy().queue_blocks(0, l.table());
    assert_eq!(q0.last().map(|&(b, _)| b), Some(7), "the eviction end of Q0: {q0:?}");
}
