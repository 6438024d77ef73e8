//! Offline bounds: how far a policy or prefetcher is from the best possible on a trace.
//!
//! - Replacement: Belady's MIN, the policy `opt` ([`crate::policy::opt`]), at any level of a hierarchy in
//!   the instant engine. Its future is each `opt` level's own request stream, computed before the run by
//!   [`prepare`]: a pre-pass over the trace for the first level (or the trace's own next-access field),
//!   a recording run of the levels above for a lower level.
//! - Prefetching and caching together on one disk: Cao, Felten, Karlin and Li's Aggressive and
//!   Conservative ([`integrated`]).
//! - Any policy and prefetcher timed in that model ([`single_disk`]), for the time analogue of the share
//!   of the optimal gain.
//! - Brute-force optima of tiny instances, the test oracle of both ([`brute`]).
//!
//! The method and results on real traces are in `docs/optimal.md`.

pub mod brute;
pub mod integrated;
pub mod single_disk;

pub use crate::engine::future::{check_ready, finish, refuse_timed};
pub use crate::policy::next_use::{self, Future, Mismatch, NextUse, NextUseBuilder, Oracle, NEVER};

use crate::build::registry;
use crate::component::ConfigError;
use crate::config::{EngineKind, HierarchyConfig};
use crate::engine::future::{needs_plain, opt_levels, timed_error};
use crate::engine::{run_instant, Hierarchy, RequestSource, Silent, SourceError};
use crate::policy::opt::Opt;
use crate::policy::NamedPolicy;

/// The name the policy registry gives Belady's MIN.
pub const OPT: &str = Opt::NAME;

/// Indices of the levels of `cfg` whose policy is `opt` (by any accepted spelling), before building it:
/// whether a run needs [`prepare`].
#[must_use]
pub fn opt_levels_in(cfg: &HierarchyConfig) -> Vec<usize> {
    cfg.level
        .iter()
        .enumerate()
        .filter(|(i, l)| registry::policy(&format!("level[{i}].policy"), &l.policy.name).is_ok_and(|e| e.name == OPT))
        .map(|(i, _)| i)
        .collect()
}

/// Compute the future of every `opt` level of `h` (built from `cfg`) and hand it to the level, so that
/// the run can start. `open` opens the trace afresh (each call a new pass from the start);
/// `first_level`, when given, is the first level's next uses as the trace states them (oracleGeneral's
/// `next_access_vtime`), saving its pre-pass. `footprint` is what `h` was built with. Levels are prepared
/// top-down: level `k`'s stream is recorded by running levels `0..=k` with the futures of the `opt`
/// levels above it already known, so an `opt` level costs one pass over the trace (plus its share of a
/// run for a lower level). A hierarchy without `opt` costs nothing.
pub fn prepare<'a>(
    cfg: &HierarchyConfig,
    h: &mut Hierarchy,
    footprint: Option<u64>,
    open: &mut dyn FnMut() -> Result<Box<dyn RequestSource + 'a>, SourceError>,
    first_level: Option<NextUse>,
) -> Result<(), SourceError> {
    let levels = opt_levels(h);
    let Some(&lowest) = levels.last() else { return Ok(()) };
    if cfg.engine.kind == EngineKind::Timed {
        return Err(timed_error(levels[0]).into());
    }
    let mut known: Vec<Option<NextUse>> = vec![None; lowest + 1];
    for &k in &levels {
        if h.levels[k].future().is_none() {
            return Err(needs_plain(k).into());
        }
        let uses = if k == 0 {
            match first_level.clone() {
                Some(u) => u,
                None => first_level_pass(open()?.as_mut(), cfg.engine.limit)?,
            }
        } else {
            record_level(cfg, h.block_size(), footprint, k, &known, open)?
        };
        known[k] = Some(uses);
    }
    for (k, uses) in known.iter().enumerate() {
        if let (Some(u), Some(f)) = (uses, h.levels[k].future()) {
            *f = Future::Known(u.oracle());
        }
    }
    Ok(())
}

/// The first level's next uses: one pass over the trace's requests, block by block, up to `limit`
/// requests (the engine's limit).
pub fn first_level_pass(src: &mut dyn RequestSource, limit: Option<u64>) -> Result<NextUse, SourceError> {
    let mut b = NextUseBuilder::default();
    let mut buf = Vec::with_capacity(8192);
    let mut left = limit.unwrap_or(u64::MAX);
    while left > 0 {
        buf.clear();
        let want = usize::try_from(left.min(8192)).unwrap_or(8192);
        if src.fill(&mut buf, want)? == 0 {
            break;
        }
        for r in &buf {
            for block in r.blocks() {
                b.push(block);
            }
        }
        left -= buf.len() as u64;
    }
    Ok(b.finish().map_err(|m| ConfigError::new("level[0].policy", m))?)
}

/// Level `k`'s next uses: run levels `0..=k` of `cfg` (the `opt` ones above with their futures) and
/// record what level `k` is asked.
fn record_level<'a>(
    cfg: &HierarchyConfig,
    block_size: u64,
    footprint: Option<u64>,
    k: usize,
    known: &[Option<NextUse>],
    open: &mut dyn FnMut() -> Result<Box<dyn RequestSource + 'a>, SourceError>,
) -> Result<NextUse, SourceError> {
    let mut sub = cfg.clone();
    sub.level.truncate(k + 1);
    let mut src = open()?;
    let mut hk = Hierarchy::build_for(&sub, block_size, footprint, src.facts())?;
    for (j, uses) in known.iter().enumerate().take(k) {
        if let (Some(u), Some(f)) = (uses, hk.levels[j].future()) {
            *f = Future::Known(u.oracle());
        }
    }
    match hk.levels[k].future() {
        Some(f) => *f = Future::Record(NextUseBuilder::default()),
        None => return Err(needs_plain(k).into()),
    }
    run_instant(src.as_mut(), &mut hk, &sub.engine, &mut Silent)?;
    match hk.levels[k].future().map(std::mem::take) {
        Some(Future::Record(b)) => Ok(b.finish().map_err(|m| ConfigError::new(format!("level[{k}].policy"), m))?),
        _ => Err(ConfigError::new(format!("level[{k}].policy"), "internal: the recording was lost").into()),
    }
}
