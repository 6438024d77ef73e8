//! STEP's view of the disk: seek time between two block addresses and the streaming bandwidth, the
//! inputs of its thrashing intensity (§4.1.2) and of its cost-benefit model (§4.2.2, §4.3).
//!
//! Follows Liang, Jiang & Zhang, "STEP" (OSU-CISRC-3/07-TR23), §4.1.2: a seek's cost comes from the seek
//! distance and the disk's parameters in Ruemmler & Wilkes' model, and logical block addresses are close
//! enough to physical ones to estimate it. We use the simulator's disk models (`device`,
//! `shared/docs/models/disk.md` §2, §4): a block address becomes a sector (LBN), the zoned layout gives
//! its cylinder, and the seek curve gives the time for the cylinder distance. The bandwidth `BW` is the
//! "disk streaming bandwidth" (§4.3): the mean media rate of the zones (`shared/docs/algorithms/step.md`,
//! parameter `BW`), or the interface's rate when that is lower (the Cheetah 9LP's bus, 4.9 MB/s against
//! ~18 MB/s off the platters) \[ours\]. The volumes of a multi-volume trace lie over one LBA range, each
//! block at its number inside its volume, as the timed engine lays them on its device
//! ([`device_block`]). Addresses past the end of the modelled disk are folded onto it (taken modulo its
//! capacity) \[ours\], so every seek costs what some seek on that disk costs; the run's notes say so.

use crate::component::{ComponentSpec, ConfigError};
use crate::device::geometry::Layout;
use crate::device::seek::SeekCurve;
use crate::device::{resolve, DeviceParams};
use crate::request::device_block;

/// Seek times and bandwidth of one disk model, for blocks of a given size.
#[derive(Clone, Debug)]
pub struct DiskView {
    name: &'static str,
    layout: Layout,
    seek: SeekCurve,
    lbns: u64,
    sectors_per_block: u64,
    /// Mean media rate over the zones, bytes per ms.
    bytes_per_ms: f64,
    block_bytes: u64,
    mean_seek_ms: f64,
}

impl DiskView {
    /// The disk preset `device` (a name of the device registry that is a disk), for `block_bytes`-byte
    /// blocks; `path` names the key in errors.
    pub fn new(path: &str, device: &str, block_bytes: u64) -> Result<Self, ConfigError> {
        Self::from_spec(path, &ComponentSpec::named(device), block_bytes)
    }

    /// The disk `spec` describes (a disk of the device registry with its overrides: a timed run's
    /// `[device]`), for `block_bytes`-byte blocks; `path` names the key in errors.
    pub fn from_spec(path: &str, spec: &ComponentSpec, block_bytes: u64) -> Result<Self, ConfigError> {
        let (name, params) = resolve(path, spec)?;
        let DeviceParams::Disk(p) = params else {
            return Err(ConfigError::new(path, format!("'{name}' is not a disk; STEP needs a seek curve")));
        };
        let layout = Layout::new(path, &p.zones, p.surfaces, p.reserve_spares)?;
        let seek = SeekCurve::new(&p.seek, layout.cylinders());
        let rev_ms = 60_000.0 / p.rpm;
        let zones = layout.zones();
        let media =
            zones.iter().map(|z| f64::from(z.spec.spt) * 512.0 / rev_ms).sum::<f64>() / zones.len().max(1) as f64;
        // Data streams off the disk no faster than its interface carries it: the Cheetah 9LP's bus (0.105
        // ms a sector, 4.9 MB/s) is a quarter of its media rate, and a prefetch costs bus time.
        let bus = if p.bus_ms_per_sector > 0.0 { 512.0 / p.bus_ms_per_sector } else { f64::INFINITY };
        let bytes_per_ms = media.min(bus);
        let mean_seek_ms = p.seek.mean_random_ms(layout.cylinders());
        let lbns = p.lbns.min(layout.slots()).max(1);
        let mut view =
            Self { name, layout, seek, lbns, sectors_per_block: 8, bytes_per_ms, block_bytes: 4096, mean_seek_ms };
        view.set_block_bytes(block_bytes);
        Ok(view)
    }

    /// The disk model's registry name.
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Blocks that start on the disk (the last may be partial); a block address at or past this is folded
    /// onto it.
    #[must_use]
    pub fn blocks(&self) -> u64 {
        self.lbns.div_ceil(self.sectors_per_block)
    }

    /// The block size in bytes.
    #[must_use]
    pub fn block_bytes(&self) -> u64 {
        self.block_bytes
    }

    /// Use `bytes`-byte blocks (at least one sector each).
    pub fn set_block_bytes(&mut self, bytes: u64) {
        self.block_bytes = bytes.max(1);
        self.sectors_per_block = bytes.div_ceil(512).max(1);
    }

    /// The cylinder of `block`.
    #[inline]
    #[must_use]
    pub fn cylinder(&self, block: u64) -> u32 {
        let mut lbn = device_block(block).wrapping_mul(self.sectors_per_block);
        if lbn >= self.lbns {
            lbn %= self.lbns;
        }
        let zones = self.layout.zones();
        // The zones before `lbn`, counted without branches: a binary search over a disk's dozen zones
        // mispredicts at nearly every step (measured: the seek time was a sixth of STEP's time on w106).
        let before = zones.iter().map(|z| usize::from(z.first_lbn <= lbn)).sum::<usize>();
        let z = &zones[before.max(1) - 1];
        z.spec.first_cyl + ((lbn - z.first_lbn) / z.per_cyl) as u32
    }

    /// Seek time in ms from the head over `from` to `to` (0 on the same cylinder).
    #[inline]
    #[must_use]
    pub fn seek_ms(&self, from: u64, to: u64) -> f64 {
        self.seek.ms(self.cylinder(from).abs_diff(self.cylinder(to)))
    }

    /// Seek time in ms over `d` cylinders.
    #[inline]
    #[must_use]
    pub fn seek_cyl_ms(&self, d: u32) -> f64 {
        self.seek.ms(d)
    }

    /// Mean seek time over uniformly random cylinder pairs, ms (`ST_avg`; 5.47 ms for the Cheetah 9LP).
    #[must_use]
    pub fn mean_seek_ms(&self) -> f64 {
        self.mean_seek_ms
    }

    /// Streaming bandwidth in blocks per ms: the zones' mean media rate or the bus rate, whichever is lower
    /// (the bus's 1.19 for the Cheetah 9LP with 4 KiB blocks; its media rate is about 4.4).
    #[must_use]
    pub fn blocks_per_ms(&self) -> f64 {
        self.bytes_per_ms / self.block_bytes as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cheetah_seeks_and_bandwidth() {
        let d = DiskView::new("step.device", "cheetah9lp", 4096).unwrap();
        assert_eq!(d.seek_ms(100, 100), 0.0);
        // Zone 0 holds 254 x 12 sectors per cylinder: 381 blocks of 8 sectors.
        assert_eq!(d.cylinder(0), 0);
        assert_eq!(d.cylinder(381), 1);
        assert!((d.seek_ms(0, 381) - 0.831).abs() < 1e-12);
        assert!((d.mean_seek_ms() - 5.47).abs() < 0.03, "{}", d.mean_seek_ms());
        // The bus (0.105 ms a sector) is slower than the media (~4.4 blocks/ms): 4096 / (8 x 0.105 x 512).
        let bw = d.blocks_per_ms();
        assert!((bw - 1.0 / 0.84).abs() < 1e-9, "{bw}");
        // Folding: block 381 + 17,783,240 is sector 3048 + 8 x 17,783,240, i.e. sector 3048 again.
        assert_eq!(d.cylinder(381 + 17_783_240), 1);
        for b in (0..2_222_905).step_by(997) {
            assert_eq!(d.cylinder(b), d.layout.locate(b * 8).cyl, "block {b}");
        }
        // A block of another volume lies where the same number of volume 0 does (the timed engine's layout).
        assert_eq!(d.cylinder((3 << crate::request::VOLUME_SHIFT) + 381), 1);
        // The disk holds 2,222,905 blocks of 4 KiB; the next one is folded onto block 0.
        assert_eq!(d.blocks(), 2_222_905);
        assert_eq!(d.cylinder(2_222_905), d.cylinder(0));
        assert_eq!((d.cylinder(2_222_904), d.name()), (d.layout.locate(2_222_904 * 8).cyl, "cheetah9lp"));
        assert!(DiskView::new("step.device", "nvme", 4096).unwrap_err().message.contains("not a disk"));
    }

    proptest::proptest! {
        /// The zone count equals the binary search it replaced, for any block.
        #[test]
        fn the_zone_count_equals_the_binary_search(block in proptest::prelude::any::<u64>(), small in 0u64..3_000_000) {
            let d = DiskView::new("step.device", "cheetah9lp", 4096).unwrap();
            for b in [block, small] {
                let mut lbn = device_block(b).wrapping_mul(d.sectors_per_block);
                if lbn >= d.lbns {
                    lbn %= d.lbns;
                }
                let zones = d.layout.zones();
                let z = &zones[zones.partition_point(|z| z.first_lbn <= lbn).max(1) - 1];
                let want = z.spec.first_cyl + ((lbn - z.first_lbn) / z.per_cyl) as u32;
                proptest::prop_assert_eq!(d.cylinder(b), want);
            }
        }
    }
}
