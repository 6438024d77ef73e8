//! What crosses the scheduler's boundary: bios in, dispatched requests out, errors and counters.

use serde::Serialize;

use crate::device::DiskIo;

/// A contiguous run of sectors of one direction from a cache level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bio {
    /// First sector.
    pub lbn: u64,
    /// Sectors (split into `max_sectors` chunks if larger).
    pub sectors: u32,
    /// A write.
    pub write: bool,
    /// Someone waits for it now (demand); else asynchronous (prefetch).
    pub sync: bool,
    /// Caller's token, reported back with the request that carries the bio.
    pub tag: u64,
}

/// Index of a request in the scheduler.
pub type ReqId = u32;

/// Why a bio was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SchedError {
    /// `nr_requests` of this direction are allocated: wait for a completion, then submit again.
    #[error("request table full for this direction")]
    Full,
    /// Zero sectors.
    #[error("bio of zero sectors")]
    Empty,
    /// Overlaps a queued request of the same direction (the cache layer must prevent this).
    #[error("bio overlaps a queued request")]
    Overlap,
    /// Not a dispatched request.
    #[error("request {0} is not at the device")]
    NotDispatched(ReqId),
}

/// What a submission did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Submitted {
    /// Chunks appended to a queued request.
    pub back_merges: u32,
    /// Chunks prepended to a queued request.
    pub front_merges: u32,
    /// Queued requests fused with a neighbour after a merge.
    pub fused: u32,
    /// New requests.
    pub created: u32,
}

/// A request handed to the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dispatch {
    /// Its id, for [`IoScheduler::complete`](super::IoScheduler::complete) and [`IoScheduler::tags`](super::IoScheduler::tags).
    pub id: ReqId,
    /// What the device must do.
    pub io: DiskIo,
    /// Carries at least one sync bio.
    pub sync: bool,
    /// Carries at least one async bio.
    pub has_async: bool,
    /// When its first bio arrived.
    pub arrived: u64,
}

/// Scheduler counters (iosched.md §7).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SchedStats {
    /// Bios submitted (after splitting: chunks).
    pub bios: u64,
    /// Requests created.
    pub requests: u64,
    /// Back merges.
    pub back_merges: u64,
    /// Front merges.
    pub front_merges: u64,
    /// Requests fused into a neighbour.
    pub fused: u64,
    /// Requests dispatched.
    pub dispatched: u64,
    /// Dispatched with only sync bios.
    pub dispatched_sync: u64,
    /// Dispatched with only async bios.
    pub dispatched_async: u64,
    /// Dispatched with both.
    pub dispatched_mixed: u64,
    /// Sectors dispatched.
    pub sectors: u64,
    /// Dispatches of an expired FIFO head (DEADLINE).
    pub expired: u64,
    /// Sum over dispatched requests of (dispatch - first arrival), ns.
    pub queue_wait_ns: u64,
    /// Submissions refused because the table was full.
    pub full: u64,
    /// Unplugs by the delay timer / the threshold / a sync bio (Linux plugging).
    pub unplug_timer: u64,
    /// See `unplug_timer`.
    pub unplug_thresh: u64,
    /// See `unplug_timer`.
    pub unplug_sync: u64,
}
