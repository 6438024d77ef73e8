//! Pairing rules: a policy and a prefetcher of one level that cannot work together are refused when the
//! level is built or its config checked. The rules live with the policies
//! ([`NamedPolicy::refuse_prefetcher`](crate::policy::NamedPolicy::refuse_prefetcher); `sarc` needs the
//! `sarc` prefetcher or none); this applies them.

use super::registry;
use crate::component::ConfigError;
use crate::policy::FirstHit;

/// Reject a policy, prefetcher (canonical names) and `first_hit` option of one level that cannot work
/// together; `level` is the level's key path (`level[1]`), the error names the key at fault.
pub fn check_pairing(level: &str, policy: &str, prefetcher: &str, first_hit: FirstHit) -> Result<(), ConfigError> {
    let refusal = registry::POLICIES.iter().find(|e| e.name == policy).and_then(|e| e.refuse_prefetcher(prefetcher));
    if let Some(message) = refusal {
        return Err(ConfigError::new(format!("{level}.prefetcher"), message));
    }
    // `stay_second` is about a stack's second prefetcher's blocks: anywhere else it did nothing, accepted
    // without a word (an outside audit, 2026-12-07).
    if first_hit == FirstHit::StaySecond && prefetcher != "stack" {
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
