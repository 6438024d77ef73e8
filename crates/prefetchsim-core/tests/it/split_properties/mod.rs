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

mod against_models;
mod through_hooks;
mod through_level;

// ---------------------------------------------------------------------------------------------------
// Helpers shared by the three groups

fn placement(n: u8) -> Placement {
    match n % 5 {
        0 => Placement::Default,
        1 => Placement::Mru,
        2 => Placement::Lru,
        3 => Placement::List(0),
        _ => Placement::List(1),
    }
}

fn env(capacity: usize, stay: bool) -> PolicyEnv {
    PolicyEnv { capacity, first_hit: if stay { FirstHit::Stay } else { FirstHit::Promote } }
}
