//! Volumes of one trace as separate address spaces. A multi-volume block trace (Tencent CBS volumes,
//! SYSTOR'17 LUNs, SPC ASUs, DiskSim/MQSim devices, the disks of each MSR host) addresses each volume from
//! block 0: the same LBA in two volumes is two different blocks. One shared space made a read of one volume
//! hit another volume's data (13,457 of the Tencent sample's 348,239 blocks aliased).
//!
//! Each volume gets its index in order of first appearance (over every record, before the ops filter, so a
//! filtered read numbers volumes as the whole trace does), and its blocks are `index · 2^44 + block`: the
//! first volume keeps its block numbers, and adjacency inside a volume is kept for the prefetchers. 2^44
//! blocks per volume are 8 PiB of 512-byte blocks; a block beyond, or more than 2^20 - 1 volumes, is an
//! error naming the record. `volumes = "shared"` keeps the one space of the trace's own numbers. On a
//! device (the timed engine) the volumes lie over one LBA range, each at its own numbers
//! (`prefetchsim_core::request::device_block`).

use hashbrown::HashMap;
use serde::{Deserialize, Serialize};

use crate::record::{RawRecord, VolumeKey};

/// Bits of a block number inside one volume (the core's, whose timed engine lays volumes over one device).
pub use prefetchsim_core::request::VOLUME_SHIFT;
use prefetchsim_core::request::{in_volume, volume_of};

/// The most volumes one trace may have: index `2^20 - 1` would end at the last block of 64 bits.
pub const MAX_VOLUMES: u64 = volume_of(u64::MAX);

/// How the volumes of a trace share block numbers (the spec's `volumes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Volumes {
    /// Each volume its own address space (default).
    #[default]
    Separate,
    /// One address space: the same address in two volumes is one block (before the separation).
    Shared,
}

impl Volumes {
    /// Whether this is the default (left out of a serialized spec, so cache keys of specs that do not
    /// name it are unchanged by its existence).
    #[must_use]
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// Volume indexes of a trace's records, in order of first appearance.
#[derive(Debug)]
pub struct VolumeSpace {
    key: VolumeKey,
    index: HashMap<u64, u64, foldhash::fast::FixedState>,
    /// The previous record's volume and index: most records are in the volume of the one before.
    last: Option<(u64, u64)>,
}

impl VolumeSpace {
    /// The volumes of a reader whose records name them by `key`; `None` when it has one address space.
    #[must_use]
    pub fn new(key: VolumeKey, volumes: Volumes) -> Option<Self> {
        (key != VolumeKey::None && volumes == Volumes::Separate).then(|| Self {
            key,
            index: HashMap::with_hasher(foldhash::fast::FixedState::with_seed(3)),
            last: None,
        })
    }

    /// The index of the volume of `r` (assigned on first sight; it may exceed [`MAX_VOLUMES`], which
    /// [`Self::place`] refuses).
    #[inline]
    pub fn index(&mut self, r: &RawRecord) -> u64 {
        let key = match self.key {
            VolumeKey::ClientStream => (u64::from(r.client) << 32) | u64::from(r.stream),
            _ => u64::from(r.stream),
        };
        if let Some((k, i)) = self.last {
            if k == key {
                return i;
            }
        }
        let next = self.index.len() as u64;
        let i = *self.index.entry(key).or_insert(next);
        self.last = Some((key, i));
        i
    }

    /// Block `first` (of a request of `len` blocks) of volume `index` in the trace's block numbers, or why
    /// it does not fit. `objects`: the trace is read in objects mode, where `first` is an object's start
    /// address in the trace's own unit (bytes for MSR and SYSTOR'17), so a larger block size cannot help.
    #[inline]
    pub fn place(index: u64, first: u64, len: u32, objects: bool) -> Result<u64, String> {
        if index >= MAX_VOLUMES {
            return Err(format!(
                "more than {MAX_VOLUMES} volumes, each its own address space (volumes = \"shared\" for one space)"
            ));
        }
        in_volume(index, first, len).ok_or_else(|| {
            let last = first.saturating_add(u64::from(len.max(1)) - 1);
            if objects {
                return format!(
                    "address {last} (objects mode: an object's start in the trace's own unit) is beyond the \
                     2^{VOLUME_SHIFT} addresses of one volume's space (volumes = \"shared\" for one space of \
                     every volume, or blocks mode)"
                );
            }
            format!(
                "block {last} is beyond the 2^{VOLUME_SHIFT} blocks of one volume's address space (a larger \
                 block size, or volumes = \"shared\" for one space of every volume)"
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volumes_are_numbered_in_order_of_first_appearance_and_keep_adjacency() {
        let mut v = VolumeSpace::new(VolumeKey::Stream, Volumes::Separate).unwrap();
        let rec = |stream| RawRecord { stream, ..RawRecord::default() };
        assert_eq!([7, 3, 7, 3, 9].map(|s| v.index(&rec(s))), [0, 1, 0, 1, 2]);
        assert_eq!(VolumeSpace::place(0, 5, 2, false), Ok(5));
        assert_eq!(VolumeSpace::place(2, 5, 2, false), Ok((2 << VOLUME_SHIFT) + 5));
        assert!(VolumeSpace::place(1, (1 << VOLUME_SHIFT) - 1, 2, false).is_err());
        assert!(VolumeSpace::place(MAX_VOLUMES, 0, 1, false).is_err());
        assert!(VolumeSpace::place(MAX_VOLUMES - 1, (1 << VOLUME_SHIFT) - 1, 1, false).is_ok());
        assert!(VolumeSpace::new(VolumeKey::None, Volumes::Separate).is_none());
        assert!(VolumeSpace::new(VolumeKey::Stream, Volumes::Shared).is_none());
        let mut hosts = VolumeSpace::new(VolumeKey::ClientStream, Volumes::Separate).unwrap();
        let disk = |client, stream| RawRecord { client, stream, ..RawRecord::default() };
        assert_eq!([(0, 0), (1, 0), (0, 1), (0, 0)].map(|(c, s)| hosts.index(&disk(c, s))), [0, 1, 2, 0]);
    }
}
