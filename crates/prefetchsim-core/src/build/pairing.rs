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
