//! The size families of a batch: configs that are one plain LRU, FIFO or CLOCK level (no prefetcher,
//! default parameters and level options, the instant engine, no request limit) differing only in size,
//! computed together from one pass over the trace instead of one simulation each (issue 16: sixteen sizes
//! at most 3x one run): LRU from one stack pass ([`super::lru_family::LruSizes`]), FIFO from its insertion
//! counts ([`super::fifo_family::FifoSizes`]), CLOCK from rings sharing one entry per block
//! ([`super::clock_family::ClockSizes`]). The records are the ones separate runs give: the level's identity
//! comes from the config's own hierarchy, run over no request, and its counters, run totals and warm-up
//! from the pass.
//!
//! A config is left to the engine when the pass cannot reproduce it: any other policy, prefetcher, option
//! or engine; an LRU size smaller than the longest request; an event log attached by the caller; a pass
//! that outgrew its bounds; or a family of one (nothing to share).

use std::collections::BTreeMap;

use super::clock_family::{ClockSizes, MAX_CLOCK_SIZES};
use super::fifo_family::FifoSizes;
use super::lru_family::{LruSizes, MAX_SIZES};
use super::size_counts::SizePass;
use crate::config::{EngineKind, HierarchyConfig};
use crate::engine::{Hierarchy, RequestSource, SourceError, VecSource};
use crate::level::LevelOptions;
use crate::metrics::{LevelCounters, RunResult};

/// The policy of a family: which one-pass computation serves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Plain LRU ([`LruSizes`]).
    Lru,
    /// Plain FIFO ([`FifoSizes`]).
    Fifo,
    /// Plain CLOCK ([`ClockSizes`]).
    Clock,
}

/// One pass of `kind` over `sizes` (at most [`Kind::max_sizes`]).
fn pass(kind: Kind, sizes: Vec<u64>, warmup: u64) -> Box<dyn SizePass> {
    match kind {
        Kind::Lru => Box::new(LruSizes::new(sizes, warmup)),
        Kind::Fifo => Box::new(FifoSizes::new(sizes, warmup)),
        Kind::Clock => Box::new(ClockSizes::new(sizes, warmup)),
    }
}

impl Kind {
    /// Sizes one pass computes at most.
    fn max_sizes(self) -> usize {
        match self {
            Self::Lru | Self::Fifo => MAX_SIZES,
            Self::Clock => MAX_CLOCK_SIZES,
        }
    }
}

/// What the pass computed for one config.
#[derive(Clone, Debug)]
pub struct Precomputed {
    /// The capacity the pass used (blocks).
    pub capacity: u64,
    /// The level's counters.
    pub counters: LevelCounters,
    /// Requests and blocks of the whole trace.
    pub requests: u64,
    /// Blocks of those requests.
    pub blocks: u64,
}

/// Whether a pass reproduces `cfg` (what it cannot know before the pass, the longest request, is
/// checked after it).
#[must_use]
pub fn eligible(cfg: &HierarchyConfig) -> bool {
    kind(cfg).is_some()
}

/// The family `cfg` belongs to, if a pass reproduces it.
#[must_use]
pub fn kind(cfg: &HierarchyConfig) -> Option<Kind> {
    let [l] = cfg.level.as_slice() else { return None };
    let kind = if l.policy.name.eq_ignore_ascii_case("lru") {
        Kind::Lru
    } else if l.policy.name.eq_ignore_ascii_case("fifo") {
        Kind::Fifo
    } else if l.policy.name.eq_ignore_ascii_case("clock") {
        Kind::Clock
    } else {
        return None;
    };
    let plain = cfg.engine.kind == EngineKind::Instant
        && cfg.engine.limit.is_none()
        && l.policy.params.is_empty()
        && l.prefetcher.name.eq_ignore_ascii_case("none")
        && l.prefetcher.params.is_empty()
        && l.options == LevelOptions::default()
        && l.pfc.is_none()
        && !l.per_client
        && l.instances == 1;
    plain.then_some(kind)
}

/// A family: its policy and warm-up.
type FamilyKey = (Kind, u64);

/// The configs of `configs` that belong to a family of at least two (same policy and warm-up), with their
/// capacity.
fn families(
    configs: &[HierarchyConfig],
    block_size: u64,
    footprint: Option<u64>,
) -> BTreeMap<FamilyKey, Vec<(usize, u64)>> {
    let mut by_warmup: BTreeMap<FamilyKey, Vec<(usize, u64)>> = BTreeMap::new();
    for (i, cfg) in configs.iter().enumerate() {
        let Some(kind) = kind(cfg) else { continue };
        // A size that does not resolve is the config's own error, reported by its run; an empty cache
        // is left to the engine.
        if let Ok(c) = cfg.level[0].size.resolve(block_size, footprint, None) {
            if c > 0 {
                by_warmup.entry((kind, cfg.engine.warmup_requests)).or_default().push((i, c));
            }
        }
    }
    by_warmup.retain(|_, v| v.len() >= 2);
    by_warmup
}

/// Whether `precompute` would read the trace for `configs` (some family has two members).
#[must_use]
pub fn worthwhile(configs: &[HierarchyConfig], block_size: u64, footprint: Option<u64>) -> bool {
    !families(configs, block_size, footprint).is_empty()
}

/// Per config of `configs`: whether it belongs to a family of two or more, its size resolved against
/// `footprint` (a share of an unknown footprint belongs to none). The pass may still leave a member to
/// the engine (an LRU size below the longest request, a pass past its memory bound).
#[must_use]
pub fn members(configs: &[HierarchyConfig], block_size: u64, footprint: Option<u64>) -> Vec<bool> {
    let mut member = vec![false; configs.len()];
    for &(i, _) in families(configs, block_size, footprint).values().flatten() {
        member[i] = true;
    }
    member
}

/// One pass over `src` for every family of `configs`; per config, its counters when it is computed.
///
/// # Errors
/// The source's errors.
pub fn precompute(
    configs: &[HierarchyConfig],
    block_size: u64,
    footprint: Option<u64>,
    src: &mut dyn RequestSource,
) -> Result<Vec<Option<Precomputed>>, SourceError> {
    let mut out = vec![None; configs.len()];
    let fams = families(configs, block_size, footprint);
    if fams.is_empty() {
        return Ok(out);
    }
    // Each family's distinct sizes, in passes of at most 64 sizes (32 for CLOCK).
    let mut passes: Vec<(FamilyKey, Box<dyn SizePass>)> = Vec::new();
    for (&key, members) in &fams {
        let mut sizes: Vec<u64> = members.iter().map(|m| m.1).collect();
        sizes.sort_unstable();
        sizes.dedup();
        for chunk in sizes.chunks(key.0.max_sizes()) {
            passes.push((key, pass(key.0, chunk.to_vec(), key.1)));
        }
    }
    let mut buf = Vec::with_capacity(8192);
    let (mut requests, mut blocks) = (0u64, 0u64);
    loop {
        buf.clear();
        if src.fill(&mut buf, 8192)? == 0 {
            break;
        }
        for r in &buf {
            requests += 1;
            blocks += u64::from(r.len);
        }
        for (_, p) in &mut passes {
            p.add_all(&buf);
        }
    }
    for (key, p) in &passes {
        for (c, counters) in p.counts().sizes().iter().zip(p.counters()) {
            let Some(counters) = counters else { continue };
            for &(i, _) in fams[key].iter().filter(|m| m.1 == *c) {
                out[i] = Some(Precomputed { capacity: *c, counters: counters.clone(), requests, blocks });
            }
        }
    }
    Ok(out)
}

/// The result of config `cfg` from what the pass computed, in the hierarchy `h` built for it (after the
/// caller's preparation); `None` when the engine must run it after all (an event log is attached, or the
/// built level is not what the pass assumed).
///
/// # Errors
/// The engine's, running over no request.
pub fn result(h: &mut Hierarchy, cfg: &HierarchyConfig, pre: &Precomputed) -> Option<Result<RunResult, SourceError>> {
    if h.logging() || h.levels.len() != 1 || h.levels[0].capacity() as u64 != pre.capacity {
        return None;
    }
    let mut none = VecSource::new(Vec::new());
    let mut r = match crate::run::run(&mut none, h, cfg, &mut |_: u64| true) {
        Ok(r) => r,
        Err(e) => return Some(Err(e)),
    };
    r.requests = pre.requests;
    r.blocks = pre.blocks;
    r.warmup_requests = cfg.engine.warmup_requests.min(pre.requests);
    r.stopped_early = false;
    r.levels[0].counters = pre.counters.clone();
    Some(Ok(r))
}
