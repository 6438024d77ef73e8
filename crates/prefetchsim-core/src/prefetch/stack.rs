//! `stack`: two prefetchers serving one level, as Mithril runs on top of a sequential prefetcher
//! ("Mithril-AMP", Yang et al., SoCC 2017 §1 and §5.2: Mithril "can be used on top of Amp").
//!
//! Both components decide on every request, the first before the second; their runs are executed in
//! that order (the second's blocks are therefore inserted last, nearer the MRU end of LRU-like lists).
//! Every hook is forwarded to both; each component's unused blocks get that component's second chances
//! (Mithril's one goes to Mithril's blocks only), metadata is the sum. The
//! first component's demand placement and stream take precedence when both set one. The runs of the
//! second component are marked in the plan so that the level counts its prefetches apart
//! (`second_issued`, `second_used`; metrics.md asks Mithril and sequential prefetches to be counted
//! separately).
//!
//! Configured as `prefetcher = { name = "stack", first = "mithril", second = { name = "obl", … } }`, or
//! by the shorthand `prefetcher = "mithril+obl"` (components with default parameters).

use serde::Deserialize;

use super::{Capabilities, LevelGeometry, MakePrefetcher, PrefetchCtx, Prefetcher};
use crate::component::{ComponentSpec, ConfigError};
use crate::policy::{Entry, Placement};

/// Parameters of `stack`: the two components, each a prefetcher name or table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StackParams {
    /// The first prefetcher (e.g. Mithril).
    pub first: ComponentSpec,
    /// The second prefetcher (e.g. the sequential one Mithril runs on top of); its prefetches are counted
    /// apart.
    pub second: ComponentSpec,
}

/// Two prefetchers combined.
pub struct Stack {
    first: Box<dyn Prefetcher>,
    second: Box<dyn Prefetcher>,
    /// What each part asked for when attached ([`Prefetcher::attach`]).
    first_caps: Capabilities,
    second_caps: Capabilities,
}

impl std::fmt::Debug for Stack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stack").finish_non_exhaustive()
    }
}

impl Stack {
    /// Combine two prefetchers; `first` decides first.
    #[must_use]
    pub fn new(first: Box<dyn Prefetcher>, second: Box<dyn Prefetcher>) -> Self {
        Self { first, second, first_caps: Capabilities::default(), second_caps: Capabilities::default() }
    }

    /// Build both components from their specs with `make` (errors name `path.first…` /
    /// `path.second…`).
    pub fn build(path: &str, p: StackParams, make: MakePrefetcher<'_>) -> Result<Self, ConfigError> {
        let first = make(&format!("{path}.first"), &p.first)?;
        let second = make(&format!("{path}.second"), &p.second)?;
        Ok(Self::new(first, second))
    }
}

/// The shorthand `"a+b"`: a stack of `a` over `b` with default parameters. `None` when the name has no
/// `+`.
pub fn build_shorthand(
    path: &str,
    spec: &ComponentSpec,
    make: MakePrefetcher<'_>,
) -> Result<Option<Box<dyn Prefetcher>>, ConfigError> {
    let Some((a, b)) = spec.name.split_once('+') else {
        return Ok(None);
    };
    if !spec.params.is_empty() {
        return Err(ConfigError::new(
            path,
            format!(
                "the shorthand '{}' takes no parameters; write {{ name = \"stack\", first = {{ … }}, second = {{ … }} }}",
                spec.name
            ),
        ));
    }
    let p = StackParams { first: ComponentSpec::named(a.trim()), second: ComponentSpec::named(b.trim()) };
    Ok(Some(Box::new(Stack::build(path, p, make)?)))
}

impl Prefetcher for Stack {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        if self.first_caps.active {
            self.first.on_access(ctx);
        }
        if self.second_caps.active {
            let (placement, stream) = (ctx.plan.demand_placement, ctx.plan.demand_stream);
            let from = ctx.plan.runs.len();
            self.second.on_access(ctx);
            ctx.plan.second_from = Some(from);
            if placement != Placement::Default {
                ctx.plan.demand_placement = placement;
            }
            if stream.is_some() {
                ctx.plan.demand_stream = stream;
            }
        }
    }

    fn on_second_chance(&mut self, entry: &Entry, cache: super::CacheView<'_>) {
        self.first.on_second_chance(entry, cache);
        self.second.on_second_chance(entry, cache);
    }

    fn on_evicted(&mut self, entry: &Entry) {
        if self.first_caps.wants_evictions {
            self.first.on_evicted(entry);
        }
        if self.second_caps.wants_evictions {
            self.second.on_evicted(entry);
        }
    }

    fn on_evicted_in(&mut self, entry: &Entry, cache: super::CacheView<'_>) {
        if self.first_caps.wants_evictions {
            self.first.on_evicted_in(entry, cache);
        }
        if self.second_caps.wants_evictions {
            self.second.on_evicted_in(entry, cache);
        }
    }

    fn after_access(&mut self, cache: super::CacheView<'_>) {
        if self.first_caps.wants_evictions {
            self.first.after_access(cache);
        }
        if self.second_caps.wants_evictions {
            self.second.after_access(cache);
        }
    }

    fn on_late(&mut self, block: u64) {
        self.first.on_late(block);
        self.second.on_late(block);
    }

    fn on_dropped(&mut self, block: u64) {
        if self.first_caps.wants_evictions {
            self.first.on_dropped(block);
        }
        if self.second_caps.wants_evictions {
            self.second.on_dropped(block);
        }
    }

    fn notes(&self) -> Vec<String> {
        let mut v = self.first.notes();
        v.extend(self.second.notes());
        v
    }

    fn use_device(&mut self, device: &crate::device::DeviceBelow) {
        self.first.use_device(device);
        self.second.use_device(device);
    }

    fn metadata_bytes(&self) -> u64 {
        self.first.metadata_bytes() + self.second.metadata_bytes()
    }

    /// The union of the parts' asks, except second chances, which stay each part's own (the second's
    /// blocks are flagged apart); a cache-side first-hit rule of either part applies to the level
    /// (Mithril over AMP keeps AMP's `stay`).
    fn attach(&mut self, geometry: LevelGeometry) -> Capabilities {
        let (a, b) = (self.first.attach(geometry), self.second.attach(geometry));
        (self.first_caps, self.second_caps) = (a, b);
        Capabilities {
            active: a.active || b.active,
            second_chances: a.second_chances,
            second_component_chances: Some(b.second_chances),
            wants_evictions: a.wants_evictions || b.wants_evictions,
            raises: a.raises || b.raises,
            charge_metadata: a.charge_metadata || b.charge_metadata,
            first_hit: a.first_hit.or(b.first_hit),
            hits_are_noops: a.hits_are_noops && b.hits_are_noops,
        }
    }

    /// Either part's raise applies to the level (the larger cap and passes when both raise).
    fn raise(&self) -> Option<super::Raise> {
        match (self.first.raise(), self.second.raise()) {
            (Some(a), Some(b)) => Some(super::Raise { cap: a.cap.max(b.cap), passes: a.passes.max(b.passes) }),
            (a, b) => a.or(b),
        }
    }
}

impl super::NamedPrefetcher for Stack {
    const NAME: &'static str = "stack";
    const SUMMARY: &'static str = "two prefetchers deciding on every request: { first = …, second = … } or 'a+b'";
    type Params = StackParams;

    fn build(path: &str, params: StackParams, make: MakePrefetcher<'_>) -> Result<Box<dyn Prefetcher>, ConfigError> {
        Ok(Box::new(Stack::build(path, params, make)?))
    }
}
