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

impl super::NamedPrefetcher for NoPrefetch {
    const NAME: &'static str = "none";
    const SUMMARY: &'static str = "no prefetching";
    const ALIASES: &'static [&'static str] = &["off"];
    type Params = crate::policy::NoParams;

    fn build(
        _path: &str,
        params: Self::Params,
        _make: super::MakePrefetcher<'_>,
    ) -> Result<Box<dyn super::Prefetcher>, crate::component::ConfigError> {
        let crate::policy::NoParams {} = params;
        Ok(Box::new(NoPrefetch))
    }
}
