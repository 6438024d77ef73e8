//! The parameters of DU and DEMOTE (`shared/docs/algorithms/multilevel.md`, "Parameters"), level options
//! next to `exclusive`, with the reference's names and defaults, and the check that each is given only
//! with the mode it belongs to.
//!
//! - DU (Chen et al., SIGMETRICS 2005, as PFC §4.3 uses it): `du_position` (`lru_end`, or `evict_now`,
//!   the reference's own variant) and `du_on_prefetch` (false).
//! - DEMOTE (Wong & Wilkes, USENIX ATC 2002): `demote_read_pos` (`lru_end`: a block sent up, hit or
//!   miss, stays at the eviction end, the reference's "Ambiguities" §2; or `none`: a hit leaves, a miss is
//!   not cached) and `demote_insert_pos` (`mru`, or `lru_end`).
//!
//! The reference's `demote_dirty` and `link_cost` are not options: the engines model no dirty data (every
//! eviction is clean and demoted), and a demotion's transfer time is the timed engine's `[link]`.
//!
//! Each key is an `Option` so that a key given with the wrong mode (or without `exclusive`) is an error
//! naming it rather than silently ignored; `None` means the reference's default.

use serde::{Deserialize, Serialize};

use super::{Exclusive, LevelOptions};
use crate::component::ConfigError;

/// DU: what happens at this level to a block it sends up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DuPosition {
    /// It moves to the eviction end (the reference's default).
    #[default]
    LruEnd,
    /// It leaves at once: a hit is removed, a miss is not cached (the reference's variant, marked ours).
    EvictNow,
}

/// DEMOTE: where this level keeps a block it has just sent up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DemoteReadPos {
    /// At the eviction end, a hit as a miss (the reference's default and its "Ambiguities" §2).
    #[default]
    LruEnd,
    /// Nowhere: a hit leaves, a miss is not cached (strict exclusivity).
    None,
}

/// DEMOTE: where this level places a block the level above demoted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DemoteInsertPos {
    /// The insertion (MRU) end (the reference's default).
    #[default]
    Mru,
    /// The eviction end.
    LruEnd,
}

impl LevelOptions {
    /// DU `evict_now` or DEMOTE `none`: a block sent up leaves this level (a hit is removed, a missed block
    /// is not cached).
    #[inline]
    #[must_use]
    pub fn drops_sent_up(&self) -> bool {
        match self.exclusive {
            Exclusive::None => false,
            Exclusive::Du => self.du_position.unwrap_or_default() == DuPosition::EvictNow,
            Exclusive::Demote => self.demote_read_pos.unwrap_or_default() == DemoteReadPos::None,
        }
    }

    /// DU `lru_end` or DEMOTE `lru_end`: a block sent up moves to the eviction end after the access.
    #[inline]
    #[must_use]
    pub fn sent_up_to_eviction_end(&self) -> bool {
        self.exclusive != Exclusive::None && !self.drops_sent_up()
    }

    /// DU with `du_on_prefetch`: the blocks this level prefetches go to the eviction end too.
    #[inline]
    #[must_use]
    pub fn prefetched_to_eviction_end(&self) -> bool {
        self.exclusive == Exclusive::Du && self.du_on_prefetch.unwrap_or(false)
    }

    /// DEMOTE with `demote_insert_pos = "lru_end"`: demoted blocks go to the eviction end.
    #[inline]
    #[must_use]
    pub fn demoted_to_eviction_end(&self) -> bool {
        self.demote_insert_pos.unwrap_or_default() == DemoteInsertPos::LruEnd
    }

    /// Each DU or DEMOTE parameter is given only with its mode; `path` is the level's (`level[1]`).
    pub fn check_exclusive(&self, path: &str) -> Result<(), ConfigError> {
        let given = [
            ("du_position", Exclusive::Du, self.du_position.is_some()),
            ("du_on_prefetch", Exclusive::Du, self.du_on_prefetch.is_some()),
            ("demote_read_pos", Exclusive::Demote, self.demote_read_pos.is_some()),
            ("demote_insert_pos", Exclusive::Demote, self.demote_insert_pos.is_some()),
        ];
        for (key, mode, set) in given {
            if set && self.exclusive != mode {
                let (want, have) = (name(mode), name(self.exclusive));
                return Err(ConfigError::new(
                    format!("{path}.options.{key}"),
                    format!("{key} is a parameter of exclusive = \"{want}\"; this level has exclusive = \"{have}\""),
                ));
            }
        }
        Ok(())
    }

    /// The canonical form of the DU and DEMOTE parameters (what sweeps hash into a run's id): DU's and
    /// `demote_insert_pos` at their defaults are dropped, so spelling a default out makes no new run and
    /// DU runs keep the ids they had before the parameters existed; DEMOTE's `demote_read_pos` is always
    /// spelled out, because a DEMOTE run recorded before it existed was today's `none`, not today's default,
    /// and must not share an id with a run of the default.
    pub fn canonicalize_exclusive(&mut self) {
        if self.du_position == Some(DuPosition::default()) {
            self.du_position = None;
        }
        if self.du_on_prefetch == Some(false) {
            self.du_on_prefetch = None;
        }
        if self.demote_insert_pos == Some(DemoteInsertPos::default()) {
            self.demote_insert_pos = None;
        }
        if self.exclusive == Exclusive::Demote {
            self.demote_read_pos = Some(self.demote_read_pos.unwrap_or_default());
        }
    }
}

/// The config spelling of a mode.
fn name(mode: Exclusive) -> &'static str {
    match mode {
        Exclusive::None => "none",
        Exclusive::Du => "du",
        Exclusive::Demote => "demote",
    }
}
