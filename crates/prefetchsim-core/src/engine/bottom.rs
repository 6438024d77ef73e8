//! What a timed run drives besides the cache levels: the links between consecutive levels, the device
//! under the last level and the device's I/O scheduler, with the figures derived from them.
//!
//! A plain value: [`crate::build::bottom`] makes it from a config, the timed engine consumes it. Keeping
//! the construction out of the engine keeps the engine below the configuration layer.

use crate::component::ComponentSpec;
use crate::device::{Device, IoScheduler};
use crate::link::{Link, LinkParams};
use crate::metrics::DeviceReport;

/// The links, device and scheduler of one timed run.
pub struct Bottom {
    /// The link parameters (also the per-message costs the engine reads: L1 hit, L2 CPU, page size).
    pub link: LinkParams,
    /// One link per pair of consecutive levels (level k to level k + 1).
    pub links: Vec<Link>,
    /// Delay of a `ReadReq` without pages over these links, ns.
    pub req_delay_ns: u64,
    /// The device under the last level.
    pub dev: Box<dyn Device>,
    /// The spec `dev` was built from.
    pub dev_spec: ComponentSpec,
    /// Its I/O scheduler.
    pub sched: IoScheduler,
    /// Sectors per block.
    pub spb: u64,
    /// Blocks per bio (the scheduler's `max_sectors` in blocks, at least 1).
    pub bio_blocks: u32,
    /// The scheduler's largest request, sectors.
    pub max_sectors: u32,
    /// The device report, with the static fields (name, queue depth, block size) filled in.
    pub dev_report: DeviceReport,
}
