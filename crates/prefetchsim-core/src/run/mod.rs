//! Running a configured hierarchy: pick the engine `engine.kind` names and, for a timed run, build its
//! links, device and scheduler ([`crate::build::bottom`]) before handing everything to the engine.
//!
//! Above both the construction layer and the engines, so that neither imports the other's way.

use crate::component::ConfigError;
use crate::config::{EngineKind, HierarchyConfig};
use crate::engine::timed::{self, NoObserver, TimedObserver};
use crate::engine::{run_instant, Hierarchy, Progress, RequestSource, SourceError};
use crate::metrics::RunResult;

/// Replay `src` through `h` with the engine `cfg.engine.kind` names.
pub fn run(
    src: &mut dyn RequestSource,
    h: &mut Hierarchy,
    cfg: &HierarchyConfig,
    progress: &mut dyn Progress,
) -> Result<RunResult, SourceError> {
    match cfg.engine.kind {
        EngineKind::Instant => run_instant(src, h, &cfg.engine, progress),
        EngineKind::Timed => run_timed(src, h, cfg, progress),
    }
}

/// Replay `src` through `h` in simulated time, with the link, device and scheduler of `cfg`.
///
/// `h` must have been built from `cfg` (or an equivalent config); its levels are switched to timed
/// mode and stay in it. Errors: the source's, configuration errors (as [`ConfigError`] inside the
/// box, e.g. a level that cannot run timed, a block past the end of the device), and internal ones.
pub fn run_timed(
    src: &mut dyn RequestSource,
    h: &mut Hierarchy,
    cfg: &HierarchyConfig,
    progress: &mut dyn Progress,
) -> Result<RunResult, SourceError> {
    run_timed_observed(src, h, cfg, progress, &mut NoObserver)
}

/// [`run_timed`] with an observer (monomorphised: [`NoObserver`] costs nothing).
pub fn run_timed_observed<O: TimedObserver + ?Sized>(
    src: &mut dyn RequestSource,
    h: &mut Hierarchy,
    cfg: &HierarchyConfig,
    progress: &mut dyn Progress,
    obs: &mut O,
) -> Result<RunResult, SourceError> {
    let s = cfg
        .validate_timing()?
        .ok_or_else(|| ConfigError::new("engine.kind", "run_timed needs engine.kind = 'timed'"))?;
    crate::engine::future::refuse_timed(h)?;
    timed::switch_levels(h)?;
    let bottom = crate::build::build_bottom(cfg, s.seed, h.levels.len(), h.block_size())?;
    timed::run_on(src, h, &cfg.engine, s, bottom, progress, obs)
}
