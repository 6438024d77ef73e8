//! The `none` prefetcher: demand fetching only.

use super::{PrefetchCtx, Prefetcher};

/// Never prefetches.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoPrefetch;

impl Prefetcher for NoPrefetch {
    #[inline]
    fn on_access(&mut self, _ctx: &mut PrefetchCtx<'_>) {}

    fn attach(&mut self, _geometry: super::LevelGeometry) -> super::Capabilities {
        super::Capabilities { active: false, ..super::Capabilities::default() }
    }
}
