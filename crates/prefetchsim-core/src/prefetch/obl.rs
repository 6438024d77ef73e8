//! OBL: one-block lookahead (A. J. Smith, "Sequential program prefetching in memory hierarchies",
//! IEEE Computer 1978), with libCacheSim's variant (`OBL.c`); see `shared/docs/algorithms/sequential.md`.

use serde::{Deserialize, Serialize};

use super::{Outcome, PrefetchCtx, Prefetcher};

/// Which OBL rule to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OblVariant {
    /// Prefetch `e+1` after every request.
    Always,
    /// Prefetch `e+1` when some block of the request missed.
    #[serde(rename = "on_miss")]
    OnMiss,
    /// Prefetch on a miss or on the first reference of a prefetched block (default; \[ours\] in the
    /// reference).
    #[default]
    Tagged,
    /// libCacheSim: prefetch `x+1` when the last `k` requests were `x-k … x-1`.
    Libcachesim,
}

impl OblVariant {
    /// The name a config writes.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Always => "always",
            Self::OnMiss => "on_miss",
            Self::Tagged => "tagged",
            Self::Libcachesim => "libcachesim",
        }
    }
}

/// OBL parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OblParams {
    /// The rule (default `tagged`).
    pub variant: OblVariant,
    /// libCacheSim variant only (another value beside another rule is an error): consecutive previous
    /// requests needed, at least 1 (default 4, as `OBL.c`).
    pub k: u32,
}

impl Default for OblParams {
    fn default() -> Self {
        Self { variant: OblVariant::Tagged, k: 4 }
    }
}

impl OblParams {
    /// The most previous requests the libCacheSim rule may look at: the ring is allocated up front.
    pub const MAX_K: u32 = 1 << 16;

    /// Check `k` (`path` is the prefetcher's key path): only the libCacheSim rule has a history, so a
    /// `k` other than the default beside another rule would do nothing, and a history of 0 requests is
    /// none. (A `k` equal to the default cannot be told from an absent one, and changes nothing.)
    pub fn validate(&self, path: &str) -> Result<(), crate::component::ConfigError> {
        let default_k = Self::default().k;
        if self.variant != OblVariant::Libcachesim && self.k != default_k {
            return Err(crate::component::ConfigError::new(
                format!("{path}.k"),
                format!(
                    "only with variant = 'libcachesim' (the '{}' rule has no request history)",
                    self.variant.name()
                ),
            ));
        }
        if self.k == 0 {
            return Err(crate::component::ConfigError::new(
                format!("{path}.k"),
                "must be at least 1 (the previous requests the libCacheSim rule checks)",
            ));
        }
        if self.k > Self::MAX_K {
            return Err(crate::component::ConfigError::new(
                format!("{path}.k"),
                format!("{} previous requests is more than the {} the rule may look at", self.k, Self::MAX_K),
            ));
        }
        Ok(())
    }
}

/// One-block lookahead.
#[derive(Debug)]
pub struct Obl {
    params: OblParams,
    /// libCacheSim variant: the last `k` request starts, as a ring (oldest at `pos`).
    ring: Vec<Option<u64>>,
    pos: usize,
}

impl Obl {
    /// A new OBL prefetcher.
    #[must_use]
    pub fn new(params: OblParams) -> Self {
        let k = params.k.max(1) as usize;
        Self { params, ring: vec![None; k], pos: 0 }
    }

    /// libCacheSim rule: were the last k requests x-k, …, x-1 (oldest first)? Then remember x.
    fn consecutive_history(&mut self, x: u64) -> bool {
        let k = self.ring.len();
        let mut ok = true;
        for i in 0..k {
            let want = (x).checked_sub((k - i) as u64);
            if want.is_none() || self.ring[(self.pos + i) % k] != want {
                ok = false;
                break;
            }
        }
        self.ring[self.pos] = Some(x);
        self.pos = (self.pos + 1) % k;
        ok
    }
}

impl Prefetcher for Obl {
    /// The tagged and on-miss rules do nothing on a request of plain hits.
    fn attach(&mut self, _geometry: super::LevelGeometry) -> super::Capabilities {
        super::Capabilities {
            hits_are_noops: matches!(self.params.variant, OblVariant::Tagged | OblVariant::OnMiss),
            ..super::Capabilities::default()
        }
    }

    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        let next = ctx.req.last() + 1;
        let go = match self.params.variant {
            OblVariant::Always => true,
            OblVariant::OnMiss => ctx.any_miss(),
            OblVariant::Tagged => ctx.outcomes.iter().any(|o| *o != Outcome::Hit),
            OblVariant::Libcachesim => self.consecutive_history(ctx.req.first),
        };
        if go {
            ctx.prefetch(next, 1);
        }
    }
}

impl super::NamedPrefetcher for Obl {
    const NAME: &'static str = "obl";
    const SUMMARY: &'static str = "one-block lookahead (Smith 1978): variants always, on_miss, tagged, libcachesim";
    type Params = OblParams;

    fn build(
        path: &str,
        params: Self::Params,
        _make: super::MakePrefetcher<'_>,
    ) -> Result<Box<dyn super::Prefetcher>, crate::component::ConfigError> {
        params.validate(path)?;
        Ok(Box::new(Obl::new(params)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k_is_only_for_the_libcachesim_rule_and_at_least_one() {
        let p = |variant, k| OblParams { variant, k }.validate("level[0].prefetcher");
        assert!(p(OblVariant::Tagged, 4).is_ok(), "the default k beside any rule");
        assert!(p(OblVariant::Libcachesim, 5).is_ok());
        for v in [OblVariant::Tagged, OblVariant::Always, OblVariant::OnMiss] {
            let e = p(v, 5).unwrap_err();
            assert_eq!(e.path, "level[0].prefetcher.k");
            assert!(e.message.contains("only with variant = 'libcachesim'") && e.message.contains(v.name()), "{e}");
        }
        let e = p(OblVariant::Libcachesim, 0).unwrap_err();
        assert!(e.message.contains("at least 1"), "{e}");
    }
}
