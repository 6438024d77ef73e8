//! Construction of a timed run's bottom ([`Bottom`]): the links from `[link]`, the device from
//! `[device]` (seeded from the run seed) and its I/O scheduler from `[scheduler]`.

use crate::component::ConfigError;
use crate::config::HierarchyConfig;
use crate::device::{self, ms_to_ns, IoScheduler};
use crate::engine::bottom::Bottom;
use crate::link::{Link, MsgKind, RespGranularity};
use crate::metrics::DeviceReport;

/// A component seed from the run seed (splitmix64 finaliser).
fn derive_seed(seed: u64, component: u64) -> u64 {
    let mut z = seed ^ component.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The links between `n_levels` levels, the device and the scheduler of `cfg`, for blocks of
/// `block_size` bytes; `seed` is the run seed (`engine.seed`, the device's RNG is derived from it).
pub fn build_bottom(cfg: &HierarchyConfig, seed: u64, n_levels: usize, block_size: u64) -> Result<Bottom, ConfigError> {
    let lp = cfg.link.clone().unwrap_or_default();
    if lp.resp == RespGranularity::PerRun {
        return Err(ConfigError::new("link.resp", "'per_run' is not supported by the timed engine yet; use 'whole'"));
    }
    let links = (0..n_levels - 1).map(|_| Link::new(lp.clone(), "link")).collect::<Result<Vec<_>, _>>()?;
    let probe = Link::new(lp.clone(), "link")?;
    let req_delay_ns = ms_to_ns(probe.delay_ms(MsgKind::ReadReq, 0));
    let dev_spec = cfg.device_spec();
    let dev = device::build("device", &dev_spec, derive_seed(seed, 1))?;
    let sched = IoScheduler::new(cfg.scheduler.clone().unwrap_or_default(), dev.channels(), "scheduler")?;
    let spb = block_size.div_ceil(512).max(1);
    let max_sectors = sched.params().max_sectors;
    // A bio smaller than a block split every block into two device requests (7 + 1 sectors), doubling them.
    if u64::from(max_sectors) < spb {
        return Err(ConfigError::new(
            "scheduler.max_sectors",
            format!("{max_sectors} sectors is less than one cache block ({spb} sectors of 512 B); give at least {spb}"),
        ));
    }
    let bio_blocks = u32::try_from((u64::from(max_sectors) / spb).max(1)).unwrap_or(u32::MAX);
    let dev_report = DeviceReport {
        name: dev.name().to_string(),
        channels: dev.channels(),
        block_sectors: spb as u32,
        ..DeviceReport::default()
    };
    Ok(Bottom { link: lp, links, req_delay_ns, dev, dev_spec, sched, spb, bio_blocks, max_sectors, dev_report })
}
