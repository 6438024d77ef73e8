//! Pairing rules: a policy and a prefetcher of one level that cannot work together are refused when the
//! level is built or its config checked. The rules live with the policies
//! ([`NamedPolicy::refuse_prefetcher`](crate::policy::NamedPolicy::refuse_prefetcher); `sarc` needs the
//! `sarc` prefetcher or none); this applies them.

use super::registry;
use crate::component::ConfigError;

/// Reject a policy and prefetcher (canonical names) of one level that cannot work together; `level` is
/// the level's key path (`level[1]`), the error names its `prefetcher` key.
pub fn check_pairing(level: &str, policy: &str, prefetcher: &str) -> Result<(), ConfigError> {
    let refusal = registry::POLICIES.iter().find(|e| e.name == policy).and_then(|e| e.refuse_prefetcher(prefetcher));
    match refusal {
        Some(message) => Err(ConfigError::new(format!("{level}.prefetcher"), message)),
        None => Ok(()),
    }
}

/// Reject `first_hit = "stay_second"` on a level whose prefetcher is not a `stack`: the rule is about a
/// stack's second prefetcher's blocks, so anywhere else it did nothing, accepted without a word (an
/// outside audit, 2026-12-07). `prefetcher` is the canonical name.
pub fn check_first_hit(level: &str, first_hit: crate::policy::FirstHit, prefetcher: &str) -> Result<(), ConfigError> {
    if first_hit == crate::policy::FirstHit::StaySecond && prefetcher != "stack" {
        return Err(ConfigError::new(
            format!("{level}.options.first_hit"),
            format!(
                "'stay_second' is for the blocks of a stack's second prefetcher (e.g. prefetcher = \"mithril+amp\"); \
                 this level's prefetcher is '{prefetcher}': use 'stay' or 'promote'"
            ),
        ));
    }
    Ok(())
}
