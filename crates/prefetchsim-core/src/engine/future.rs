//! The engines' guard for levels whose policy knows the future (`opt`, Belady's MIN): such a level must
//! have been handed its next uses before an instant run (`optimal::prepare` computes them), must be
//! asked exactly the stream they were computed from, and cannot run in the timed engine.

use super::Hierarchy;
use crate::component::ConfigError;
use crate::policy::next_use::Future;
use crate::policy::opt::Opt;
use crate::policy::NamedPolicy;

/// Indices of the levels whose policy is `opt`.
pub(crate) fn opt_levels(h: &Hierarchy) -> Vec<usize> {
    h.reports().iter().filter(|r| r.policy == Opt::NAME).map(|r| r.level).collect()
}

pub(crate) fn needs_plain(k: usize) -> ConfigError {
    ConfigError::new(
        format!("level[{k}].policy"),
        "'opt' (Belady's MIN) needs a level of one cache: not several instances (per_client, instances) \
         nor a PFC-coordinated level",
    )
}

/// Refuse to start an instant run whose `opt` levels do not know their future.
pub fn check_ready(h: &mut Hierarchy) -> Result<(), ConfigError> {
    for k in opt_levels(h) {
        match h.levels[k].future() {
            None => return Err(needs_plain(k)),
            Some(Future::Unknown) => {
                return Err(ConfigError::new(
                    format!("level[{k}].policy"),
                    "'opt' (Belady's MIN) needs its level's future, computed from the trace before the run: \
                     run it through prefetchsim's simulate, or call optimal::prepare first",
                ))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Refuse `opt` in the timed engine.
pub fn refuse_timed(h: &Hierarchy) -> Result<(), ConfigError> {
    match opt_levels(h).first() {
        Some(&k) => Err(timed_error(k)),
        None => Ok(()),
    }
}

pub(crate) fn timed_error(k: usize) -> ConfigError {
    ConfigError::new(
        format!("level[{k}].policy"),
        "'opt' (Belady's MIN) runs in the instant engine only: its next uses are positions in the level's \
         request stream, whose order the timed engine changes with timing; for a bound on stall time use \
         the integrated (Cao et al.) bounds",
    )
}

/// After an instant run: every `opt` level must have been asked exactly the stream its next uses were
/// computed from (else its evictions were not MIN's and the run is refused). A run stopped early is
/// checked up to where it stopped.
pub fn finish(h: &mut Hierarchy, stopped_early: bool) -> Result<(), ConfigError> {
    for k in opt_levels(h) {
        let Some(Future::Known(o)) = h.levels[k].future() else { continue };
        if let Some(m) = o.mismatch() {
            let expected = match m.expected_pos {
                Some(p) => format!("its next access was computed at position {p}"),
                None => "no further access of it was computed".to_string(),
            };
            return Err(ConfigError::new(
                format!("level[{k}].policy"),
                format!(
                    "'opt': access {} of this level (block {}) is not the stream its next uses were computed \
                     from ({expected}); something in the run changes what the levels above ask of this one",
                    m.pos, m.block
                ),
            ));
        }
        if !stopped_early && o.position() != o.expected_len() {
            return Err(ConfigError::new(
                format!("level[{k}].policy"),
                format!(
                    "'opt': the level served {} accesses, its next uses were computed for {}",
                    o.position(),
                    o.expected_len()
                ),
            ));
        }
    }
    Ok(())
}
