//! The `none` prefetcher: demand fetching only.

use super::{PrefetchCtx, Prefetcher};

/// Never prefetches.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoPrefetch;

impl Prefetcher for NoPrefetch {
    #[inline]
    fn on_access(&mut self, _ctx: &mut PrefetchCtx<'_>) {}

    fn is_active(&self) -> bool {
        false
    }
}
