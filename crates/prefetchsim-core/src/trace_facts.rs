//! What a trace says about its own fields that a [`Request`](crate::Request) cannot say by itself, for the
//! components built to replay it ([`crate::build`]).
//!
//! The one fact so far is whether the `stream` field carries ids. Every format without a stream field
//! writes 0 there, and formats with one (SPC ASU, DiskSim/MQSim device, SYSTOR'17 LUN, Tencent volume, MSR
//! disk, a file id) number their ids from 0, so a request with `stream == 0` cannot tell "no stream id"
//! from "stream id 0". The trace can: each reader and generator declares it
//! ([`RequestSource::facts`](crate::engine::RequestSource::facts)), merges, caches and decoded copies keep
//! it, and the hierarchy is built with it ([`Hierarchy::build_for`](crate::engine::Hierarchy::build_for)).
//! The components whose default reads stream 0 as "no stream" (Linux read-ahead's `key = "stream"`,
//! StreamLRU's `stream_zero_is_random`) decide their default from it when they are built
//! ([`NamedPrefetcher::for_trace`](crate::prefetch::NamedPrefetcher::for_trace),
//! [`NamedPolicy::for_trace`](crate::policy::NamedPolicy::for_trace)).
//!
//! A source that declares nothing (requests built in memory, a Python list, a plugin, a live NBD client)
//! has the default, [`TraceFacts::UNKNOWN`]: stream 0 is "no stream id", as before the fact existed.

use serde::{Deserialize, Serialize};

/// Facts about a trace's fields, declared by its reader or generator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceFacts {
    /// The `stream` field carries ids, 0 included (a format with a stream, ASU, LUN, volume, disk or
    /// file column; a generator whose stream 0 is a real stream). `false`: stream 0 means "no stream id"
    /// (a format without such a column, or a source that does not say).
    #[serde(default)]
    pub stream_ids: bool,
}

impl TraceFacts {
    /// Nothing declared: stream 0 means "no stream id" (the behaviour before traces declared it).
    pub const UNKNOWN: Self = Self { stream_ids: false };
    /// The `stream` field carries ids, 0 included.
    pub const STREAM_IDS: Self = Self { stream_ids: true };

    /// The facts of `stream_ids` as said by a reader or generator.
    #[must_use]
    pub const fn with_stream_ids(stream_ids: bool) -> Self {
        Self { stream_ids }
    }

    /// The facts of several traces merged into one: a fact holds for the merge when it holds for every
    /// member. A merge with one member without stream ids has requests whose stream 0 means "none", and
    /// a request cannot say which member it came from, so 0 means "none" for the whole merge (the
    /// members with ids then key their stream 0 as before the fact existed). No member: nothing declared.
    #[must_use]
    pub fn merged(members: impl IntoIterator<Item = Self>) -> Self {
        let mut any = false;
        let mut stream_ids = true;
        for m in members {
            any = true;
            stream_ids &= m.stream_ids;
        }
        Self { stream_ids: any && stream_ids }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merge_carries_stream_ids_only_when_every_member_does() {
        let (ids, none) = (TraceFacts::STREAM_IDS, TraceFacts::UNKNOWN);
        assert_eq!(TraceFacts::merged([ids, ids]), ids);
        assert_eq!(TraceFacts::merged([ids, none]), none);
        assert_eq!(TraceFacts::merged([none, none]), none);
        assert_eq!(TraceFacts::merged([]), none, "no member, nothing declared");
        assert_eq!(TraceFacts::default(), TraceFacts::UNKNOWN);
    }
}
